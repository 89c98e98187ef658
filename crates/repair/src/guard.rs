//! None guards: when the error says an attribute was read from None
//! (`'NoneType' object has no attribute 'name'`), a guard before the
//! statement that reads it returns early when its object is None.

use crate::operator::{Edit, Operator};
use tree_sitter::Node;

/// The attribute names the failure says were read from None.
pub fn none_attributes(failure: &str) -> Vec<String> {
    const MARK: &str = "'NoneType' object has no attribute '";
    let mut names = Vec::new();
    for (i, _) in failure.match_indices(MARK) {
        let rest = &failure[i + MARK.len()..];
        if let Some(end) = rest.find('\'') {
            let name = &rest[..end];
            if !name.is_empty() && !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
    }
    names
}

/// Guards before each statement of `function` that reads a named attribute.
pub fn python_none_guards(function: Node, source: &str, failure: &str) -> Vec<Edit> {
    let names = none_attributes(failure);
    if names.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<Edit> = Vec::new();
    let mut stack = vec![function];
    let mut cursor = function.walk();
    while let Some(node) = stack.pop() {
        stack.extend(node.children(&mut cursor));
        if node.kind() != "attribute" {
            continue;
        }
        let (Some(object), Some(attribute)) = (
            node.child_by_field_name("object"),
            node.child_by_field_name("attribute"),
        ) else {
            continue;
        };
        if !names.iter().any(|n| *n == source[attribute.byte_range()]) {
            continue;
        }
        let Some(statement) = enclosing_statement(node) else {
            continue;
        };
        let object = &source[object.byte_range()];
        let line_start = source[..statement.start_byte()]
            .rfind('\n')
            .map_or(0, |i| i + 1);
        let indent = &source[line_start..statement.start_byte()];
        if !indent.chars().all(|c| c == ' ' || c == '\t') {
            continue;
        }
        let edit = Edit {
            operator: Operator::NoneGuard,
            start: line_start,
            end: line_start,
            replacement: format!("{indent}if {object} is None:\n{indent}    return None\n"),
            line: statement.start_position().row as u32 + 1,
            description: format!("return None early when `{object}` is None"),
        };
        if !out
            .iter()
            .any(|e| e.start == edit.start && e.replacement == edit.replacement)
        {
            out.push(edit);
        }
    }
    out
}

/// The statement inside a block that holds `node` (not the function itself).
fn enclosing_statement(node: Node) -> Option<Node> {
    let mut current = node;
    while let Some(parent) = current.parent() {
        if parent.kind() == "block" {
            return Some(current);
        }
        current = parent;
    }
    None
}
