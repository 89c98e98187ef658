//! Python in the one tree-sitter pass: which nodes are definitions,
//! calls and imports.

use super::{Found, Walker};
use crate::model::{Import, SymbolKind};
use tree_sitter::Node;

impl Walker<'_> {
    /// The Python definition `node` is, if it is one.
    pub(super) fn python_definition(&self, node: Node, _scope: Option<u32>) -> Option<Found> {
        match node.kind() {
            "function_definition" => self.simple(node, SymbolKind::Function),
            "class_definition" => self.simple(node, SymbolKind::Class),
            _ => None,
        }
    }

    /// Calls, imports and module names in Python.
    pub(super) fn python_other(&mut self, node: Node, scope: Option<u32>) {
        let kind = node.kind();
        match kind {
            "call" => self.member_call(node, scope, ["attribute", "attribute", "object"]),
            "import_from_statement" => {
                let module = node
                    .child_by_field_name("module_name")
                    .map(|m| self.text(m))
                    .unwrap_or("");
                let mut c = node.walk();
                for n in node.children_by_field_name("name", &mut c) {
                    let (name, alias) = match n.kind() {
                        "aliased_import" => (
                            self.field_text(n, "name").unwrap_or(""),
                            self.field_text(n, "alias"),
                        ),
                        _ => (self.text(n), None),
                    };
                    if !name.is_empty() {
                        self.imports.push(Import {
                            local: alias.unwrap_or(name).to_string(),
                            module: module.to_string(),
                            name: Some(name.to_string()),
                        });
                    }
                }
            }
            "import_statement" => {
                let mut c = node.walk();
                for n in node.children_by_field_name("name", &mut c) {
                    let (module, alias) = match n.kind() {
                        "aliased_import" => (
                            self.field_text(n, "name").unwrap_or(""),
                            self.field_text(n, "alias"),
                        ),
                        _ => (self.text(n), None),
                    };
                    let local = alias.unwrap_or(module);
                    self.imports.push(Import {
                        local: local.to_string(),
                        module: module.to_string(),
                        name: None,
                    });
                }
            }
            _ => {}
        }
    }
}
