//! Rust in the one tree-sitter pass: which nodes are definitions,
//! calls and imports.

use super::{Found, Walker, strip_generics};
use crate::model::SymbolKind;
use tree_sitter::Node;

impl Walker<'_> {
    /// The Rust definition `node` is, if it is one.
    pub(super) fn rust_definition(&self, node: Node, scope: Option<u32>) -> Option<Found> {
        match node.kind() {
            "function_item" | "function_signature_item" => self.simple(node, SymbolKind::Function),
            "struct_item" | "union_item" => self.simple(node, SymbolKind::Struct),
            "enum_item" => self.simple(node, SymbolKind::Enum),
            "trait_item" => self.simple(node, SymbolKind::Trait),
            "mod_item" if node.child_by_field_name("body").is_some() => {
                self.simple(node, SymbolKind::Module)
            }
            "impl_item" => {
                let ty = strip_generics(self.field_text(node, "type")?);
                let prefix = match scope {
                    Some(p) => format!("{}::{ty}", self.child_prefix[p as usize]),
                    None => ty.to_string(),
                };
                let name = match self.field_text(node, "trait") {
                    Some(tr) => format!("<{ty} as {}>", strip_generics(tr)),
                    None => format!("<impl {ty}>"),
                };
                let local = match scope {
                    Some(p) => format!("{}::{name}", self.child_prefix[p as usize]),
                    None => name.clone(),
                };
                Some(Found {
                    name,
                    kind: SymbolKind::Impl,
                    local: Some(local),
                    child_prefix: Some(prefix),
                })
            }
            _ => None,
        }
    }

    /// Calls, imports and module names in Rust.
    pub(super) fn rust_other(&mut self, node: Node, scope: Option<u32>) {
        let kind = node.kind();
        match kind {
            "call_expression" => {
                let mut f = node.child_by_field_name("function");
                if let Some(g) = f.filter(|f| f.kind() == "generic_function") {
                    f = g.child_by_field_name("function");
                }
                if let Some(f) = f {
                    let call = match f.kind() {
                        "identifier" => Some((self.text(f), None)),
                        "field_expression" => self
                            .field_text(f, "field")
                            .map(|n| (n, f.child_by_field_name("value").map(|v| self.text(v)))),
                        "scoped_identifier" => self
                            .field_text(f, "name")
                            .map(|n| (n, f.child_by_field_name("path").map(|p| self.text(p)))),
                        _ => None,
                    };
                    self.add_call(scope, node, call);
                }
            }
            // Macro arguments are token trees, not expressions: recover the
            // calls in `assert_eq!(f(x), y)` from `ident (` and `a.ident (`.
            "token_tree" => {
                let mut c = node.walk();
                let kids: Vec<Node> = node.children(&mut c).collect();
                for (i, k) in kids.iter().enumerate() {
                    let next_is_args = kids.get(i + 1).is_some_and(|n| {
                        n.kind() == "token_tree" && n.child(0).is_some_and(|p| p.kind() == "(")
                    });
                    if k.kind() != "identifier" || !next_is_args {
                        continue;
                    }
                    let qualifier = (i >= 2 && matches!(kids[i - 1].kind(), "." | "::"))
                        .then(|| self.text(kids[i - 2]))
                        .filter(|q| !q.is_empty());
                    self.add_call(scope, *k, Some((self.text(*k), qualifier)));
                }
            }
            _ => {}
        }
    }
}
