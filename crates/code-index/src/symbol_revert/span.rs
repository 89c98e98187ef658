//! Where a definition's text begins and ends (decorators, attributes, doc
//! comments and the declaration around it belong to it), and the
//! tree-sitter walks the restore needs.

use crate::lang::Language;
use std::ops::Range;
use tree_sitter::{Node, Tree};

/// A definition node's span, widened to what belongs to it: Python
/// decorators, the JavaScript/TypeScript declaration and `export` around it,
/// a Go `type` keyword, and the attributes and doc comments right above it.
pub(super) fn outer_span(language: Language, text: &str, node: Node<'_>) -> Range<usize> {
    let mut anchor = node;
    fn parent_of<'t>(n: Node<'t>, kinds: &[&str]) -> Option<Node<'t>> {
        n.parent().filter(|p| kinds.contains(&p.kind()))
    }
    match language {
        Language::Python => {
            if let Some(p) = parent_of(anchor, &["decorated_definition"]) {
                anchor = p;
            }
        }
        Language::Javascript | Language::Typescript => {
            if anchor.kind() == "variable_declarator"
                && let Some(p) = parent_of(anchor, &["lexical_declaration", "variable_declaration"])
                && p.named_child_count() == 1
            {
                anchor = p;
            }
            if anchor.kind() == "call_expression"
                && let Some(p) = parent_of(anchor, &["expression_statement"])
            {
                anchor = p;
            }
            if let Some(p) = parent_of(anchor, &["export_statement"]) {
                anchor = p;
            }
        }
        Language::Go => {
            if anchor.kind() == "type_spec"
                && let Some(p) = parent_of(anchor, &["type_declaration"])
                && p.named_child_count() == 1
            {
                anchor = p;
            }
        }
        Language::Rust | Language::Java | Language::C | Language::Unknown => {}
    }
    let mut start = anchor.start_byte();
    if language != Language::Python {
        let mut row = anchor.start_position().row;
        let mut sib = anchor.prev_sibling();
        while let Some(s) = sib {
            let kind = s.kind();
            let attribute = kind == "attribute_item" || kind == "decorator";
            let doc = kind.contains("comment")
                && s.end_position().row + 1 >= row
                && is_doc_comment(language, text.get(s.byte_range()).unwrap_or(""));
            if !(attribute || doc) {
                break;
            }
            start = s.start_byte();
            row = s.start_position().row;
            sib = s.prev_sibling();
        }
    }
    start..anchor.end_byte()
}

/// The comment styles `extract` reads a definition's doc from.
pub(super) fn is_doc_comment(language: Language, text: &str) -> bool {
    match language {
        Language::Rust => text.starts_with("///") || text.starts_with("/**"),
        Language::Go => text.starts_with("//"),
        _ => text.starts_with("/**"),
    }
}

/// Fallback span for a definition whose node was not found: its whole lines.
pub(super) fn line_span(text: &str, (first, last): (usize, usize)) -> Range<usize> {
    let mut starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1));
    let start = starts.nth(first).unwrap_or(text.len());
    let end = text[start..]
        .match_indices('\n')
        .nth(last.saturating_sub(first))
        .map_or(text.len(), |(i, _)| start + i);
    let end = if text[..end].ends_with('\r') {
        end - 1
    } else {
        end
    };
    start..end.max(start)
}

pub(super) fn first_line<'t>(text: &'t str, node: &Node<'_>) -> &'t str {
    let body = text.get(node.byte_range()).unwrap_or("");
    body.lines().next().unwrap_or("").trim()
}

pub(super) fn parse_tree(language: Language, path: &str, text: &str) -> Option<Tree> {
    tracelab_syntax::parse(language, path, text)
}

/// Error and missing nodes in `text`; `None` when it cannot be parsed at all.
pub(super) fn syntax_errors(language: Language, path: &str, text: &str) -> Option<usize> {
    let tree = parse_tree(language, path, text)?;
    let mut errors = 0;
    visit(&tree, |n| {
        if n.is_error() || n.is_missing() {
            errors += 1;
        }
    });
    Some(errors)
}

/// Every node in pre-order, iteratively (no recursion on deep trees).
pub(super) fn visit<'t>(tree: &'t Tree, mut f: impl FnMut(Node<'t>)) {
    let mut cursor = tree.walk();
    loop {
        f(cursor.node());
        if cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return;
            }
        }
    }
}
