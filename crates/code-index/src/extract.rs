//! One tree-sitter pass over a file: definitions, calls, imports and parse
//! diagnostics. A cursor-driven iterative walk (no queries, no recursion, so a
//! deeply nested expression cannot overflow a worker's stack).

use crate::lang::Language;
use crate::model::{CallSite, Def, Diagnostic, Import, ParsedFile, SymbolKind};
use std::cell::RefCell;
use tree_sitter::{Node, Parser};

const MAX_DIAGNOSTICS: usize = 20;
const MAX_SIGNATURE: usize = 200;
const MAX_DOC: usize = 600;

thread_local! {
    static PARSERS: RefCell<Vec<(Language, bool, Parser)>> = const { RefCell::new(Vec::new()) };
}

/// Parses `source` as `language` (the path only picks TSX over TS).
/// Never fails: what could not be understood becomes a diagnostic.
pub fn parse_file(language: Language, path: &str, source: &[u8]) -> ParsedFile {
    let tsx = path.ends_with(".tsx");
    let tree = PARSERS.with(|cell| {
        let mut parsers = cell.borrow_mut();
        let idx = match parsers
            .iter()
            .position(|(l, t, _)| *l == language && *t == tsx)
        {
            Some(i) => i,
            None => {
                // A grammar/ABI mismatch would be a build error in practice; we
                // still turn it into a diagnostic below instead of panicking.
                let p = tracelab_syntax::parser(language, path)?;
                parsers.push((language, tsx, p));
                parsers.len() - 1
            }
        };
        parsers[idx].2.parse(source, None)
    });
    let lines = count_lines(source);
    let Some(tree) = tree else {
        return ParsedFile {
            language,
            module_hint: None,
            defs: Vec::new(),
            imports: Vec::new(),
            diagnostics: vec![Diagnostic {
                line: 1,
                message: "parser gave no tree".into(),
            }],
            lines,
        };
    };
    let mut walker = Walker {
        language,
        src: source,
        defs: Vec::new(),
        child_prefix: Vec::new(),
        imports: Vec::new(),
        diagnostics: Vec::new(),
        module_hint: None,
    };
    walker.walk(tree.root_node());
    ParsedFile {
        language,
        module_hint: walker.module_hint,
        defs: walker.defs,
        imports: walker.imports,
        diagnostics: walker.diagnostics,
        lines,
    }
}

fn count_lines(source: &[u8]) -> u32 {
    let n = source.iter().filter(|&&b| b == b'\n').count();
    (n + usize::from(!source.ends_with(b"\n") && !source.is_empty())) as u32
}

fn sep(language: Language) -> &'static str {
    if language == Language::Rust {
        "::"
    } else {
        "."
    }
}

struct Walker<'s> {
    language: Language,
    src: &'s [u8],
    defs: Vec<Def>,
    /// What children of each def are prefixed with (an impl's is its type).
    child_prefix: Vec<String>,
    imports: Vec<Import>,
    diagnostics: Vec<Diagnostic>,
    module_hint: Option<String>,
}

struct Found {
    name: String,
    kind: SymbolKind,
    /// Overrides `parent.local + sep + name` (Go methods, Rust impls).
    local: Option<String>,
    /// Overrides the prefix children get (Rust impls: the implementing type).
    child_prefix: Option<String>,
}

impl<'s> Walker<'s> {
    fn text(&self, node: Node) -> &'s str {
        node.utf8_text(self.src).unwrap_or("")
    }

    fn field_text(&self, node: Node, field: &str) -> Option<&'s str> {
        node.child_by_field_name(field).map(|n| self.text(n))
    }

    fn walk(&mut self, root: Node) {
        let mut stack: Vec<(Node, Option<u32>)> = vec![(root, None)];
        let mut cursor = root.walk();
        while let Some((node, scope)) = stack.pop() {
            if node.is_error() || node.is_missing() {
                if self.diagnostics.len() < MAX_DIAGNOSTICS {
                    let message = if node.is_missing() {
                        format!("missing {}", node.kind())
                    } else {
                        "syntax error".to_string()
                    };
                    let line = node.start_position().row as u32 + 1;
                    self.diagnostics.push(Diagnostic { line, message });
                }
                if node.is_missing() {
                    continue;
                }
            }
            let mut scope_for_children = scope;
            if let Some(found) = self.definition(node, scope) {
                let idx = self.push_def(node, scope, found);
                scope_for_children = Some(idx);
            } else {
                self.other(node, scope);
            }
            if !node.has_error() && node.child_count() == 0 {
                continue;
            }
            let start = stack.len();
            for child in node.children(&mut cursor) {
                if child.is_named() || child.is_missing() {
                    stack.push((child, scope_for_children));
                }
            }
            stack[start..].reverse();
        }
        // The walk is pre-order in source order, so `defs` is already sorted
        // by start line and every parent precedes its children.
    }

    fn push_def(&mut self, node: Node, scope: Option<u32>, found: Found) -> u32 {
        let (prefix, parent_kind) = match scope {
            Some(p) => (
                Some(self.child_prefix[p as usize].clone()),
                Some(self.defs[p as usize].kind),
            ),
            None => (None, None),
        };
        let local = found.local.unwrap_or_else(|| match &prefix {
            Some(p) => format!("{p}{}{}", sep(self.language), found.name),
            None => found.name.clone(),
        });
        let kind = match (found.kind, parent_kind) {
            (
                SymbolKind::Function,
                Some(
                    SymbolKind::Class
                    | SymbolKind::Struct
                    | SymbolKind::Impl
                    | SymbolKind::Trait
                    | SymbolKind::Interface
                    | SymbolKind::Enum,
                ),
            ) => SymbolKind::Method,
            (k, _) => k,
        };
        let child_prefix = found.child_prefix.unwrap_or_else(|| local.clone());
        let signature = first_line(self.text(node));
        let doc = self.doc(node);
        let idx = self.defs.len() as u32;
        self.defs.push(Def {
            name: found.name,
            local,
            kind,
            parent: scope,
            start_line: node.start_position().row as u32 + 1,
            end_line: node.end_position().row as u32 + 1,
            signature,
            doc,
            calls: Vec::new(),
        });
        self.child_prefix.push(child_prefix);
        idx
    }

    fn definition(&self, node: Node, scope: Option<u32>) -> Option<Found> {
        let simple = |kind| {
            let name = self.field_text(node, "name")?.to_string();
            Some(Found {
                name,
                kind,
                local: None,
                child_prefix: None,
            })
        };
        match (self.language, node.kind()) {
            (Language::Python, "function_definition") => simple(SymbolKind::Function),
            (Language::Python, "class_definition") => simple(SymbolKind::Class),
            (Language::Rust, "function_item" | "function_signature_item") => {
                simple(SymbolKind::Function)
            }
            (Language::Rust, "struct_item" | "union_item") => simple(SymbolKind::Struct),
            (Language::Rust, "enum_item") => simple(SymbolKind::Enum),
            (Language::Rust, "trait_item") => simple(SymbolKind::Trait),
            (Language::Rust, "mod_item") if node.child_by_field_name("body").is_some() => {
                simple(SymbolKind::Module)
            }
            (Language::Rust, "impl_item") => {
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
            (
                Language::JavaScript | Language::TypeScript,
                "function_declaration" | "generator_function_declaration",
            ) => simple(SymbolKind::Function),
            (
                Language::JavaScript | Language::TypeScript,
                "class_declaration" | "abstract_class_declaration",
            ) => simple(SymbolKind::Class),
            (Language::JavaScript | Language::TypeScript, "method_definition") => {
                simple(SymbolKind::Method)
            }
            (Language::TypeScript, "interface_declaration") => simple(SymbolKind::Interface),
            (Language::TypeScript, "enum_declaration") => simple(SymbolKind::Enum),
            (Language::JavaScript | Language::TypeScript, "variable_declarator") => {
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
            (
                Language::JavaScript | Language::TypeScript,
                "field_definition" | "public_field_definition",
            ) => {
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
            (Language::JavaScript | Language::TypeScript, "call_expression") => {
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
            (Language::Go, "function_declaration") => simple(SymbolKind::Function),
            (Language::Go, "method_declaration") => {
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
            (Language::Go, "type_spec") => {
                let kind = match node.child_by_field_name("type")?.kind() {
                    "struct_type" => SymbolKind::Struct,
                    "interface_type" => SymbolKind::Interface,
                    _ => return None,
                };
                simple(kind)
            }
            (Language::Go, "method_elem" | "method_spec") => simple(SymbolKind::Method),
            (Language::Java, "class_declaration" | "record_declaration") => {
                simple(SymbolKind::Class)
            }
            (Language::Java, "interface_declaration") => simple(SymbolKind::Interface),
            (Language::Java, "enum_declaration") => simple(SymbolKind::Enum),
            (Language::Java, "method_declaration" | "constructor_declaration") => {
                simple(SymbolKind::Method)
            }
            _ => None,
        }
    }

    /// Calls, imports and module names: everything that is not a definition.
    fn other(&mut self, node: Node, scope: Option<u32>) {
        let kind = node.kind();
        match (self.language, kind) {
            (Language::Python, "call") => {
                if let Some(f) = node.child_by_field_name("function") {
                    let call = match f.kind() {
                        "identifier" => Some((self.text(f), None)),
                        "attribute" => self.field_text(f, "attribute").map(|a| {
                            let q = f.child_by_field_name("object").map(|o| self.text(o));
                            (a, q)
                        }),
                        _ => None,
                    };
                    self.add_call(scope, node, call);
                }
            }
            (Language::Python, "import_from_statement") => {
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
            (Language::Python, "import_statement") => {
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
            (Language::Rust, "call_expression") => {
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
            (Language::Rust, "token_tree") => {
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
            (Language::JavaScript | Language::TypeScript, "call_expression") => {
                if let Some(f) = node.child_by_field_name("function") {
                    let call = match f.kind() {
                        "identifier" => Some((self.text(f), None)),
                        "member_expression" => self
                            .field_text(f, "property")
                            .map(|n| (n, f.child_by_field_name("object").map(|o| self.text(o)))),
                        _ => None,
                    };
                    self.add_call(scope, node, call);
                }
            }
            (Language::JavaScript | Language::TypeScript, "new_expression") => {
                let call = node
                    .child_by_field_name("constructor")
                    .filter(|c| c.kind() == "identifier");
                let call = call.map(|c| (self.text(c), None));
                self.add_call(scope, node, call);
            }
            (Language::JavaScript | Language::TypeScript, "import_statement") => {
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
            (Language::Go, "call_expression") => {
                if let Some(f) = node.child_by_field_name("function") {
                    let call = match f.kind() {
                        "identifier" => Some((self.text(f), None)),
                        "selector_expression" => self
                            .field_text(f, "field")
                            .map(|n| (n, f.child_by_field_name("operand").map(|o| self.text(o)))),
                        _ => None,
                    };
                    self.add_call(scope, node, call);
                }
            }
            (Language::Go, "package_clause") => {
                let mut c = node.walk();
                let id = node.named_children(&mut c).next();
                self.module_hint = id.map(|n| self.text(n).to_string());
            }
            (Language::Go, "import_spec") => {
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
            (Language::Java, "method_invocation") => {
                let call = self
                    .field_text(node, "name")
                    .map(|n| (n, node.child_by_field_name("object").map(|o| self.text(o))));
                self.add_call(scope, node, call);
            }
            (Language::Java, "object_creation_expression") => {
                let call = self
                    .field_text(node, "type")
                    .map(|t| (strip_generics(t), None));
                self.add_call(scope, node, call);
            }
            (Language::Java, "package_declaration") => {
                let mut c = node.walk();
                let id = node
                    .named_children(&mut c)
                    .find(|n| matches!(n.kind(), "scoped_identifier" | "identifier"));
                self.module_hint = id.map(|n| self.text(n).to_string());
            }
            (Language::Java, "import_declaration") => {
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

    fn add_call(&mut self, scope: Option<u32>, node: Node, call: Option<(&str, Option<&str>)>) {
        let (Some(scope), Some((name, qualifier))) = (scope, call) else {
            return;
        };
        if name.is_empty() {
            return;
        }
        // Attribute the call to the innermost callable around it.
        let mut owner = Some(scope);
        while let Some(o) = owner {
            if self.defs[o as usize].kind.is_callable() {
                break;
            }
            owner = self.defs[o as usize].parent;
        }
        let Some(owner) = owner else { return };
        let qualifier = qualifier
            .filter(|q| {
                q.len() <= 80
                    && q.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"_.:$".contains(&b))
            })
            .map(str::to_string);
        let line = node.start_position().row as u32 + 1;
        self.defs[owner as usize].calls.push(CallSite {
            name: name.to_string(),
            qualifier,
            line,
        });
    }

    /// Doc comment: a Python docstring, else the comment block right above
    /// the definition (or above its `export`/decorator/`type` wrapper).
    fn doc(&self, node: Node) -> Option<String> {
        if self.language == Language::Python {
            let body = node.child_by_field_name("body")?;
            let first = body.named_child(0)?;
            if first.kind() != "expression_statement" {
                return None;
            }
            let s = first.named_child(0).filter(|s| s.kind() == "string")?;
            let text = self
                .text(s)
                .trim_matches(|c| c == '"' || c == '\'' || c == 'r')
                .trim();
            return Some(clip(text, MAX_DOC));
        }
        let mut anchor = node;
        while let Some(p) = anchor.parent() {
            if matches!(
                p.kind(),
                "export_statement"
                    | "type_declaration"
                    | "lexical_declaration"
                    | "variable_declaration"
            ) {
                anchor = p;
            } else {
                break;
            }
        }
        let mut parts: Vec<&str> = Vec::new();
        let mut expected_row = anchor.start_position().row;
        let mut sib = anchor.prev_sibling();
        while let Some(s) = sib {
            let kind = s.kind();
            if kind == "attribute_item" || kind == "decorator" {
                expected_row = s.start_position().row;
                sib = s.prev_sibling();
                continue;
            }
            if !(kind.contains("comment")) || s.end_position().row + 1 < expected_row {
                break;
            }
            let text = self.text(s);
            let is_doc = match self.language {
                Language::Rust => text.starts_with("///") || text.starts_with("/**"),
                Language::Go => text.starts_with("//"),
                _ => text.starts_with("/**"),
            };
            if !is_doc {
                break;
            }
            parts.push(text);
            expected_row = s.start_position().row;
            sib = s.prev_sibling();
        }
        if parts.is_empty() {
            return None;
        }
        parts.reverse();
        let cleaned: Vec<String> = parts
            .iter()
            .flat_map(|p| p.lines())
            .map(|l| {
                l.trim()
                    .trim_start_matches("/**")
                    .trim_start_matches("///")
                    .trim_start_matches("//")
                    .trim_end_matches("*/")
                    .trim_start_matches('*')
                    .trim()
                    .to_string()
            })
            .filter(|l| !l.is_empty())
            .collect();
        Some(clip(&cleaned.join("\n"), MAX_DOC))
    }
}

fn first_line(text: &str) -> String {
    clip(text.lines().next().unwrap_or("").trim(), MAX_SIGNATURE)
}

fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

fn strip_generics(ty: &str) -> &str {
    let ty = ty.split('<').next().unwrap_or(ty).trim();
    ty.trim_start_matches('&').trim()
}

/// `(s *Store)` → `Store`; `(Store[T])` → `Store`.
fn go_receiver_type(recv: &str) -> String {
    let inner = recv.trim_matches(|c| c == '(' || c == ')').trim();
    let ty = inner.split_whitespace().last().unwrap_or("");
    ty.trim_start_matches('*')
        .split('[')
        .next()
        .unwrap_or("")
        .to_string()
}
