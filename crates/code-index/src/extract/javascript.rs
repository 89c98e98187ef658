//! JavaScript and TypeScript in the one tree-sitter pass: which nodes are definitions,
//! calls and imports.

use super::{Found, Walker};
use crate::lang::Language;
use crate::model::{Import, SymbolKind};
use tree_sitter::Node;

impl Walker<'_> {
    /// The JavaScript and TypeScript definition `node` is, if it is one.
    pub(super) fn javascript_definition(&self, node: Node, _scope: Option<u32>) -> Option<Found> {
        match node.kind() {
            "function_declaration" | "generator_function_declaration" => {
                self.simple(node, SymbolKind::Function)
            }
            "class_declaration" | "abstract_class_declaration" => {
                self.simple(node, SymbolKind::Class)
            }
            "method_definition" => self.simple(node, SymbolKind::Method),
            "interface_declaration" if self.language == Language::Typescript => {
                self.simple(node, SymbolKind::Interface)
            }
            "enum_declaration" if self.language == Language::Typescript => {
                self.simple(node, SymbolKind::Enum)
            }
            "variable_declarator" => {
                let value = node.child_by_field_name("value")?;
                if !matches!(
                    value.kind(),
                    "arrow_function" | "function_expression" | "function"
                ) {
                    return None;
                }
                let name = node.child_by_field_name("name")?;
                (name.kind() == "identifier").then(|| Found {
                    name: self.text(name).to_string(),
                    kind: SymbolKind::Function,
                    local: None,
                    child_prefix: None,
                })
            }
            "field_definition" | "public_field_definition" => {
                let value = node.child_by_field_name("value")?;
                if !matches!(value.kind(), "arrow_function" | "function_expression") {
                    return None;
                }
                let name = node
                    .child_by_field_name("property")
                    .or_else(|| node.child_by_field_name("name"))?;
                Some(Found {
                    name: self.text(name).to_string(),
                    kind: SymbolKind::Method,
                    local: None,
                    child_prefix: None,
                })
            }
            // Test callbacks (`test('adds', () => ...)`, `it`, `describe`) are
            // the tests' functions: naming them lets a failing test's frame
            // seed the call graph like any other function.
            "call_expression" => {
                let f = node.child_by_field_name("function")?;
                if !matches!(self.text(f), "test" | "it" | "describe") {
                    return None;
                }
                let args = node.child_by_field_name("arguments")?;
                let title = args
                    .named_child(0)
                    .filter(|a| matches!(a.kind(), "string" | "template_string"))?;
                let callback = args.named_child(1)?;
                if !matches!(
                    callback.kind(),
                    "arrow_function" | "function_expression" | "function"
                ) {
                    return None;
                }
                let name = self
                    .text(title)
                    .trim_matches(|c| c == '"' || c == '\'' || c == '`')
                    .to_string();
                Some(Found {
                    name,
                    kind: SymbolKind::Function,
                    local: None,
                    child_prefix: None,
                })
            }
            _ => None,
        }
    }

    /// Calls, imports and module names in JavaScript and TypeScript.
    pub(super) fn javascript_other(&mut self, node: Node, scope: Option<u32>) {
        let kind = node.kind();
        match kind {
            "call_expression" => {
                self.member_call(node, scope, ["member_expression", "property", "object"])
            }
            "new_expression" => {
                let call = node
                    .child_by_field_name("constructor")
                    .filter(|c| c.kind() == "identifier");
                let call = call.map(|c| (self.text(c), None));
                self.add_call(scope, node, call);
            }
            "import_statement" => {
                let Some(source) = self.field_text(node, "source") else {
                    return;
                };
                let module = source
                    .trim_matches(|c| c == '"' || c == '\'' || c == '`')
                    .to_string();
                let mut stack = vec![node];
                while let Some(n) = stack.pop() {
                    match n.kind() {
                        "import_specifier" => {
                            let name = self.field_text(n, "name").unwrap_or("");
                            let local = self.field_text(n, "alias").unwrap_or(name);
                            self.imports.push(Import {
                                local: local.into(),
                                module: module.clone(),
                                name: Some(name.into()),
                            });
                        }
                        "namespace_import" => {
                            let mut c = n.walk();
                            let id = n.named_children(&mut c).find(|c| c.kind() == "identifier");
                            if let Some(id) = id {
                                let local = self.text(id).to_string();
                                self.imports.push(Import {
                                    local,
                                    module: module.clone(),
                                    name: None,
                                });
                            }
                        }
                        "identifier" if n.parent().is_some_and(|p| p.kind() == "import_clause") => {
                            self.imports.push(Import {
                                local: self.text(n).into(),
                                module: module.clone(),
                                name: Some("default".into()),
                            });
                        }
                        _ => {
                            let mut c = n.walk();
                            stack.extend(n.named_children(&mut c));
                        }
                    }
                }
            }
            _ => {}
        }
    }
}
