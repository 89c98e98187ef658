//! Where each language writes the bounds of a range, for the bound shift:
//! slice syntax (`xs[a:b]` in Python and Go, `xs[a..b]` and `a..=b` in
//! Rust) and the calls that take a range (`range(n)`, `s.slice(a, b)`,
//! `s.substring(a, b)`, `list.subList(a, b)`). A loop bound written as a
//! comparison (`i < n`) is the comparison swap's, not repeated here.

use tracelab_domain::Language;
use tree_sitter::Node;

/// The bound expressions of a slice or range node (empty for other nodes).
pub fn slice_bounds(language: Language, node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    match (language, node.kind()) {
        (Language::Python, "slice") | (Language::Rust, "range_expression") => {
            node.named_children(&mut cursor).collect()
        }
        (Language::Go, "slice_expression") => ["start", "end", "capacity"]
            .iter()
            .filter_map(|f| node.child_by_field_name(f))
            .collect(),
        _ => Vec::new(),
    }
}

/// The node naming what a call calls: `range` in `range(n)`, `slice` in
/// `s.slice(a, b)`, `substring` in `s.substring(a, b)`.
pub fn callee_name<'t>(language: Language, call: Node<'t>) -> Option<Node<'t>> {
    match language {
        Language::Python => call.child_by_field_name("function"),
        Language::Javascript | Language::Typescript => {
            let function = call.child_by_field_name("function")?;
            (function.kind() == "member_expression")
                .then(|| function.child_by_field_name("property"))
                .flatten()
        }
        Language::Java => call.child_by_field_name("name"),
        _ => None,
    }
}

/// Which positional arguments of a call to `callee` (with `count`
/// arguments) are range bounds: `range`'s end, both bounds of `slice`,
/// `substring` and `subList`.
pub fn bound_arguments(language: Language, callee: &str, count: usize) -> &'static [usize] {
    match (language, callee) {
        (Language::Python, "range") if count == 1 => &[0],
        (Language::Python, "range") => &[1],
        (Language::Javascript | Language::Typescript, "slice" | "substring")
        | (Language::Java, "substring" | "subList") => &[0, 1],
        _ => &[],
    }
}
