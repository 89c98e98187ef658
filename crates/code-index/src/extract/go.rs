//! Go in the one tree-sitter pass: which nodes are definitions,
//! calls and imports.

use super::{Found, Walker, go_receiver_type};
use crate::model::{Import, SymbolKind};
use tree_sitter::Node;

impl Walker<'_> {
    /// The Go definition `node` is, if it is one.
    pub(super) fn go_definition(&self, node: Node, _scope: Option<u32>) -> Option<Found> {
        match node.kind() {
            "function_declaration" => self.simple(node, SymbolKind::Function),
            "method_declaration" => {
                let name = self.field_text(node, "name")?.to_string();
                let recv = node
                    .child_by_field_name("receiver")
                    .map(|r| go_receiver_type(self.text(r)));
                let local = recv
                    .filter(|r| !r.is_empty())
                    .map(|r| format!("{r}.{name}"));
                Some(Found {
                    name,
                    kind: SymbolKind::Method,
                    local,
                    child_prefix: None,
                })
            }
            "type_spec" => {
                let kind = match node.child_by_field_name("type")?.kind() {
                    "struct_type" => SymbolKind::Struct,
                    "interface_type" => SymbolKind::Interface,
                    _ => return None,
                };
                self.simple(node, kind)
            }
            "method_elem" | "method_spec" => self.simple(node, SymbolKind::Method),
            _ => None,
        }
    }

    /// Calls, imports and module names in Go.
    pub(super) fn go_other(&mut self, node: Node, scope: Option<u32>) {
        let kind = node.kind();
        match kind {
            "call_expression" => {
                self.member_call(node, scope, ["selector_expression", "field", "operand"])
            }
            "package_clause" => {
                let mut c = node.walk();
                let id = node.named_children(&mut c).next();
                self.module_hint = id.map(|n| self.text(n).to_string());
            }
            "import_spec" => {
                let Some(path) = self.field_text(node, "path") else {
                    return;
                };
                let path = path.trim_matches('"').to_string();
                let local = self
                    .field_text(node, "name")
                    .map(str::to_string)
                    .unwrap_or_else(|| path.rsplit('/').next().unwrap_or(&path).to_string());
                self.imports.push(Import {
                    local,
                    module: path,
                    name: None,
                });
            }
            _ => {}
        }
    }
}
