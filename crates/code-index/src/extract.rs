//! One tree-sitter pass over a file: definitions, calls, imports and parse
//! diagnostics. A cursor-driven iterative walk (no queries, no recursion, so a
//! deeply nested expression cannot overflow a worker's stack).

mod go;
mod java;
mod javascript;
mod python;
mod rust;

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

    /// The definition `node` is, if it is one (the language's module says which).
    fn definition(&self, node: Node, scope: Option<u32>) -> Option<Found> {
        match self.language {
            Language::Python => self.python_definition(node, scope),
            Language::Rust => self.rust_definition(node, scope),
            Language::Javascript | Language::Typescript => self.javascript_definition(node, scope),
            Language::Go => self.go_definition(node, scope),
            Language::Java => self.java_definition(node, scope),
            // No grammar, so `parse_file` never walks such a file.
            Language::C | Language::Unknown => None,
        }
    }

    /// A definition named by the node's `name` field.
    fn simple(&self, node: Node, kind: SymbolKind) -> Option<Found> {
        let name = self.field_text(node, "name")?.to_string();
        Some(Found {
            name,
            kind,
            local: None,
            child_prefix: None,
        })
    }

    /// Calls, imports and module names: everything that is not a definition.
    fn other(&mut self, node: Node, scope: Option<u32>) {
        match self.language {
            Language::Python => self.python_other(node, scope),
            Language::Rust => self.rust_other(node, scope),
            Language::Javascript | Language::Typescript => self.javascript_other(node, scope),
            Language::Go => self.go_other(node, scope),
            Language::Java => self.java_other(node, scope),
            Language::C | Language::Unknown => {}
        }
    }

    /// Records a call whose callee is a plain identifier (`f(x)`) or a
    /// member access (`o.f(x)`): `member` names the access's node kind, the
    /// field holding the called name and the field holding the object, which
    /// becomes the call's qualifier.
    fn member_call(&mut self, node: Node, scope: Option<u32>, member: [&str; 3]) {
        let [kind, name_field, object_field] = member;
        let Some(f) = node.child_by_field_name("function") else {
            return;
        };
        let call = match f.kind() {
            "identifier" => Some((self.text(f), None)),
            k if k == kind => self
                .field_text(f, name_field)
                .map(|n| (n, f.child_by_field_name(object_field).map(|o| self.text(o)))),
            _ => None,
        };
        self.add_call(scope, node, call);
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
