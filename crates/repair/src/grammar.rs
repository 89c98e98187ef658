//! What each language's tree-sitter grammar calls the nodes the operators
//! edit. The operators work on these node kinds, never on text patterns.

use tracelab_domain::Language;
use tree_sitter::Node;

/// Node kinds per language.
pub struct Kinds {
    /// Nodes whose anonymous child is a binary operator token.
    pub binary: &'static [&'static str],
    /// Integer literal nodes.
    pub integer: &'static [&'static str],
    /// Statements with a `condition` field.
    pub conditional: &'static [&'static str],
    /// A negation node (`not x`, `!x`) and the field of its operand.
    pub negation: &'static str,
    pub negation_operand: &'static str,
    /// Call nodes and the field holding their argument list.
    pub call: &'static str,
    pub call_arguments: &'static str,
    /// How a condition is negated: prefix, and whether it needs parentheses
    /// added (Python) or already has them (C-like `if (x)`).
    pub negate_prefix: &'static str,
}

/// The node kinds of `language`'s grammar; `None` for a language without
/// one (C, Unknown).
pub fn kinds(language: Language) -> Option<&'static Kinds> {
    Some(match language {
        Language::Python => &PYTHON,
        Language::Javascript | Language::Typescript => &JAVASCRIPT,
        Language::Go => &GO,
        Language::Rust => &RUST,
        Language::Java => &JAVA,
        Language::C | Language::Unknown => return None,
    })
}

const PYTHON: Kinds = Kinds {
    binary: &[
        "comparison_operator",
        "binary_operator",
        "boolean_operator",
        "augmented_assignment",
    ],
    integer: &["integer"],
    conditional: &["if_statement", "elif_clause", "while_statement"],
    negation: "not_operator",
    negation_operand: "argument",
    call: "call",
    call_arguments: "arguments",
    negate_prefix: "not ",
};

const JAVASCRIPT: Kinds = Kinds {
    binary: &["binary_expression", "augmented_assignment_expression"],
    integer: &["number"],
    conditional: &["if_statement", "while_statement"],
    negation: "unary_expression",
    negation_operand: "argument",
    call: "call_expression",
    call_arguments: "arguments",
    negate_prefix: "!",
};

const GO: Kinds = Kinds {
    binary: &["binary_expression", "assignment_statement"],
    integer: &["int_literal"],
    conditional: &["if_statement"],
    negation: "unary_expression",
    negation_operand: "operand",
    call: "call_expression",
    call_arguments: "arguments",
    negate_prefix: "!",
};

const RUST: Kinds = Kinds {
    binary: &["binary_expression", "compound_assignment_expr"],
    integer: &["integer_literal"],
    conditional: &["if_expression", "while_expression"],
    negation: "unary_expression",
    negation_operand: "",
    call: "call_expression",
    call_arguments: "arguments",
    negate_prefix: "!",
};

const JAVA: Kinds = Kinds {
    binary: &["binary_expression", "assignment_expression"],
    integer: &["decimal_integer_literal"],
    conditional: &["if_statement", "while_statement"],
    negation: "unary_expression",
    negation_operand: "operand",
    call: "method_invocation",
    call_arguments: "arguments",
    negate_prefix: "!",
};

/// An identifier, attribute, literal or call: safe to move or extend without
/// parentheses.
pub(crate) fn simple(node: Node) -> bool {
    matches!(
        node.kind(),
        "identifier"
            | "attribute"
            | "integer"
            | "float"
            | "string"
            | "call"
            | "subscript"
            | "number"
            | "member_expression"
            | "selector_expression"
            | "field_expression"
            | "field_access"
            | "int_literal"
            | "integer_literal"
            | "decimal_integer_literal"
            | "call_expression"
            | "method_invocation"
            | "true"
            | "false"
            | "none"
            | "null"
    )
}
