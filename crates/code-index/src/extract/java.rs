//! Java in the one tree-sitter pass: which nodes are definitions,
//! calls and imports.

use super::{Found, Walker, strip_generics};
use crate::model::{Import, SymbolKind};
use tree_sitter::Node;

impl Walker<'_> {
    /// The Java definition `node` is, if it is one.
    pub(super) fn java_definition(&self, node: Node, _scope: Option<u32>) -> Option<Found> {
        match node.kind() {
            "class_declaration" | "record_declaration" => self.simple(node, SymbolKind::Class),
            "interface_declaration" => self.simple(node, SymbolKind::Interface),
            "enum_declaration" => self.simple(node, SymbolKind::Enum),
            "method_declaration" | "constructor_declaration" => {
                self.simple(node, SymbolKind::Method)
            }
            _ => None,
        }
    }

    /// Calls, imports and module names in Java.
    pub(super) fn java_other(&mut self, node: Node, scope: Option<u32>) {
        let kind = node.kind();
        match kind {
            "method_invocation" => {
                let call = self
                    .field_text(node, "name")
                    .map(|n| (n, node.child_by_field_name("object").map(|o| self.text(o))));
                self.add_call(scope, node, call);
            }
            "object_creation_expression" => {
                let call = self
                    .field_text(node, "type")
                    .map(|t| (strip_generics(t), None));
                self.add_call(scope, node, call);
            }
            "package_declaration" => {
                let mut c = node.walk();
                let id = node
                    .named_children(&mut c)
                    .find(|n| matches!(n.kind(), "scoped_identifier" | "identifier"));
                self.module_hint = id.map(|n| self.text(n).to_string());
            }
            "import_declaration" => {
                let text = self
                    .text(node)
                    .trim_start_matches("import")
                    .trim_end_matches(';')
                    .trim();
                let text = text.trim_start_matches("static ").trim();
                if let Some((module, name)) = text.rsplit_once('.') {
                    self.imports.push(Import {
                        local: name.into(),
                        module: module.into(),
                        name: Some(name.into()),
                    });
                }
            }
            _ => {}
        }
    }
}
