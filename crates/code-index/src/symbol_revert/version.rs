//! One version of a file, parsed for a restore: its definitions placed by
//! qualified name with the span of text each owns, nested in their
//! containers, and the file's line endings.

use super::span::{first_line, line_span, outer_span, parse_tree, visit};
use crate::extract::parse_file;
use crate::lang::Language;
use crate::model::SymbolKind;
use crate::qualify::{module_of, qualified_name};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::ops::Range;
use tree_sitter::Node;

/// A definition placed in one version of the file.
pub(super) struct Def {
    pub(super) name: String,
    pub(super) kind: SymbolKind,
    /// Bytes from its first decorator/attribute/doc comment to its end.
    pub(super) span: Range<usize>,
    pub(super) parent: Option<usize>,
    pub(super) children: Vec<usize>,
}

/// One version of the file, parsed.
pub(super) struct Version<'a> {
    pub(super) text: &'a str,
    pub(super) defs: Vec<Def>,
    /// Qualified name → definitions with it.
    pub(super) index: HashMap<String, Vec<usize>>,
    /// Error and missing nodes in the tree (uncapped, unlike diagnostics).
    pub(super) errors: usize,
    pub(super) eol: Eol,
}

impl<'a> Version<'a> {
    /// `None` only when the grammar cannot be loaded.
    pub(super) fn parse(language: Language, path: &str, text: &'a str) -> Option<Version<'a>> {
        let tree = parse_tree(language, path, text)?;
        let parsed = parse_file(language, path, text.as_bytes());
        let module = module_of(language, path, &parsed);

        // Definition nodes by (start row, end row): how `extract` placed them.
        let mut candidates: HashMap<(usize, usize), Vec<Node<'_>>> = HashMap::new();
        let mut errors = 0;
        visit(&tree, |node| {
            if node.is_error() || node.is_missing() {
                errors += 1;
            }
            if DEF_KINDS.contains(&node.kind()) {
                let key = (node.start_position().row, node.end_position().row);
                candidates.entry(key).or_default().push(node);
            }
        });

        let mut used: HashSet<usize> = HashSet::new();
        let mut defs: Vec<Def> = Vec::with_capacity(parsed.defs.len());
        for d in &parsed.defs {
            let key = (
                d.start_line.saturating_sub(1) as usize,
                d.end_line.saturating_sub(1) as usize,
            );
            let found = candidates.get(&key).and_then(|nodes| {
                let free = || nodes.iter().filter(|n| !used.contains(&n.id()));
                free()
                    .find(|n| first_line(text, n).starts_with(d.signature.as_str()))
                    .or_else(|| free().next())
                    .copied()
            });
            let span = match found {
                Some(node) => {
                    used.insert(node.id());
                    outer_span(language, text, node)
                }
                None => line_span(text, key),
            };
            defs.push(Def {
                name: qualified_name(language, &module, &d.local),
                kind: d.kind,
                span,
                parent: d.parent.map(|p| p as usize),
                children: Vec::new(),
            });
        }
        for i in 0..defs.len() {
            if let Some(p) = defs[i].parent {
                defs[p].children.push(i);
            }
        }
        let mut index: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, d) in defs.iter().enumerate() {
            index.entry(d.name.clone()).or_default().push(i);
        }
        Some(Version {
            text,
            defs,
            index,
            errors,
            eol: Eol::of(text),
        })
    }

    pub(super) fn unique(&self, name: &str) -> Option<&Def> {
        match self.index.get(name)?.as_slice() {
            [i] => Some(&self.defs[*i]),
            _ => None,
        }
    }

    pub(super) fn slice(&self, d: &Def) -> &'a str {
        self.text.get(d.span.clone()).unwrap_or("")
    }

    /// The texts of some definitions, sorted: same-named definitions compare
    /// as a multiset.
    pub(super) fn sorted_texts(&self, ix: &[usize]) -> Vec<&'a str> {
        let mut t: Vec<&str> = ix.iter().map(|&d| self.slice(&self.defs[d])).collect();
        t.sort_unstable();
        t
    }

    /// The byte ranges of a definition between its nested definitions
    /// (children + 1 of them); `None` if the children do not nest in order.
    pub(super) fn gaps(&self, d: &Def) -> Option<Vec<Range<usize>>> {
        let mut out = Vec::with_capacity(d.children.len() + 1);
        let mut at = d.span.start;
        for &c in &d.children {
            let s = &self.defs[c].span;
            if s.start < at || s.end > d.span.end {
                return None;
            }
            out.push(at..s.start);
            at = s.end;
        }
        out.push(at..d.span.end);
        Some(out)
    }

    /// A definition's own text with whitespace runs collapsed (the whole
    /// text when its children do not nest).
    pub(super) fn residual(&self, d: &Def) -> String {
        let parts: Vec<&str> = match self.gaps(d) {
            Some(gaps) => gaps.into_iter().filter_map(|g| self.text.get(g)).collect(),
            None => vec![self.slice(d)],
        };
        let words: Vec<&str> = parts.iter().flat_map(|p| p.split_whitespace()).collect();
        words.join(" ")
    }
}

/// The node kinds `extract` turns into definitions (any language; the walk
/// keys them by rows, and `extract`'s signature picks among them).
pub(super) const DEF_KINDS: &[&str] = &[
    "function_definition",
    "class_definition",
    "function_item",
    "function_signature_item",
    "struct_item",
    "union_item",
    "enum_item",
    "trait_item",
    "mod_item",
    "impl_item",
    "function_declaration",
    "generator_function_declaration",
    "class_declaration",
    "abstract_class_declaration",
    "method_definition",
    "interface_declaration",
    "enum_declaration",
    "variable_declarator",
    "field_definition",
    "public_field_definition",
    "call_expression",
    "method_declaration",
    "type_spec",
    "method_elem",
    "method_spec",
    "record_declaration",
    "constructor_declaration",
];

/// The current file's line endings, which restored text is converted to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Eol {
    Lf,
    Crlf,
    /// Mixed or no line breaks: restored text is left as it was.
    Keep,
}

impl Eol {
    pub(super) fn of(text: &str) -> Eol {
        let lf = text.matches('\n').count();
        let crlf = text.matches("\r\n").count();
        match (lf, crlf) {
            (0, _) => Eol::Keep,
            (_, 0) => Eol::Lf,
            (n, m) if n == m => Eol::Crlf,
            _ => Eol::Keep,
        }
    }

    pub(super) fn apply(self, s: &str) -> Cow<'_, str> {
        match self {
            Eol::Lf if s.contains("\r\n") => Cow::Owned(s.replace("\r\n", "\n")),
            Eol::Crlf if s.matches('\n').count() != s.matches("\r\n").count() => {
                Cow::Owned(s.replace("\r\n", "\n").replace('\n', "\r\n"))
            }
            _ => Cow::Borrowed(s),
        }
    }
}
