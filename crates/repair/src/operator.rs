//! The repair operators and how likely each is to be the fix.
//!
//! Priors follow what mutation- and template-based repair found in real bug
//! fixes (TBar's fix patterns, PraPR's mutators, the ManySStuBs4J counts of
//! one-statement bugs): a changed operator, a wrong literal and a wrong
//! variable are the common single-token fixes; a missing null check is common
//! when the error names it; swapped arguments and negations are rarer.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operator {
    /// `<` ↔ `<=`, `==` ↔ `!=`, `is` ↔ `is not`, `in` ↔ `not in`, ...
    ComparisonSwap,
    /// `+` ↔ `-`, `*` ↔ `/`, `/` ↔ `//`, `+=` ↔ `-=`.
    ArithmeticSwap,
    /// `and` ↔ `or`, `&&` ↔ `||`.
    BooleanSwap,
    /// An integer literal one more or one less.
    OffByOne,
    /// A slice bound or a `range` end one more or one less.
    BoundShift,
    /// A condition negated, or its negation removed.
    NegateCondition,
    /// An identifier replaced by another of the same scope (closest name first).
    IdentifierSwap,
    /// A guard returning early when the object of an attribute access named
    /// in the error is None.
    NoneGuard,
    /// Two positional arguments of a call swapped.
    ArgumentSwap,
    /// A range check for a constant subscript the `IndexError` names: a
    /// return before it when the object is too short, or the length check
    /// added to the condition around it.
    IndexGuard,
    /// A local that the `UnboundLocalError` names, initialised to an empty
    /// value at the top of the function.
    InitLocal,
    /// An expression wrapped in a call: `list()` around an iterator read
    /// twice, a `+` operand in its sibling's conversion, a `%` operand in a
    /// one-tuple.
    WrapCall,
    /// A conversion builtin (`str(x)`, `list(x)`, ...) replaced by its argument.
    UnwrapCall,
    /// A line the culprit commit changed, back to its text before the culprit.
    RestoreCulpritLine,
    /// A line the culprit commit added, deleted.
    DeleteCulpritLine,
}

impl Operator {
    /// Prior probability weight that this operator is the fix (relative).
    pub fn prior(self) -> f64 {
        match self {
            Operator::ComparisonSwap => 1.0,
            Operator::OffByOne => 0.9,
            Operator::BoundShift => 0.8,
            Operator::ArithmeticSwap => 0.7,
            Operator::NoneGuard => 0.7,
            Operator::BooleanSwap => 0.6,
            Operator::NegateCondition => 0.5,
            Operator::IdentifierSwap => 0.45,
            Operator::ArgumentSwap => 0.35,
            // The error names the local and the fix has one shape.
            Operator::InitLocal => 1.0,
            // Like the null guard: the error and its line say where.
            Operator::IndexGuard => 0.7,
            // Only where an iterator is read twice or the error's line
            // mixes types: rarer than a wrong operator.
            Operator::WrapCall => 0.5,
            Operator::UnwrapCall => 0.4,
            // What the culprit itself changed, undone line by line, is the
            // most likely fix once a search has named it.
            Operator::RestoreCulpritLine => 1.5,
            Operator::DeleteCulpritLine => 1.1,
        }
    }

    /// Whether the edit undoes part of the culprit commit: code known to
    /// have passed before it, preferred among candidates that pass.
    pub fn from_culprit(self) -> bool {
        matches!(
            self,
            Operator::RestoreCulpritLine | Operator::DeleteCulpritLine
        )
    }

    pub fn name(self) -> &'static str {
        match self {
            Operator::ComparisonSwap => "comparison_swap",
            Operator::ArithmeticSwap => "arithmetic_swap",
            Operator::BooleanSwap => "boolean_swap",
            Operator::OffByOne => "off_by_one",
            Operator::BoundShift => "bound_shift",
            Operator::NegateCondition => "negate_condition",
            Operator::IdentifierSwap => "identifier_swap",
            Operator::NoneGuard => "none_guard",
            Operator::ArgumentSwap => "argument_swap",
            Operator::IndexGuard => "index_guard",
            Operator::InitLocal => "init_local",
            Operator::WrapCall => "wrap_call",
            Operator::UnwrapCall => "unwrap_call",
            Operator::RestoreCulpritLine => "restore_culprit_line",
            Operator::DeleteCulpritLine => "delete_culprit_line",
        }
    }
}

/// The replacements tried for an operator token, by what the token is.
pub fn token_swaps(token: &str) -> Option<(Operator, &'static [&'static str])> {
    use Operator::*;
    Some(match token {
        "<" => (ComparisonSwap, &["<=", ">"]),
        "<=" => (ComparisonSwap, &["<", ">="]),
        ">" => (ComparisonSwap, &[">=", "<"]),
        ">=" => (ComparisonSwap, &[">", "<="]),
        "==" => (ComparisonSwap, &["!="]),
        "!=" => (ComparisonSwap, &["=="]),
        "===" => (ComparisonSwap, &["!=="]),
        "!==" => (ComparisonSwap, &["==="]),
        "is" => (ComparisonSwap, &["is not"]),
        "is not" => (ComparisonSwap, &["is"]),
        "in" => (ComparisonSwap, &["not in"]),
        "not in" => (ComparisonSwap, &["in"]),
        "+" => (ArithmeticSwap, &["-"]),
        "-" => (ArithmeticSwap, &["+"]),
        "*" => (ArithmeticSwap, &["/"]),
        "/" => (ArithmeticSwap, &["*"]),
        "//" => (ArithmeticSwap, &["/"]),
        "+=" => (ArithmeticSwap, &["-="]),
        "-=" => (ArithmeticSwap, &["+="]),
        "and" => (BooleanSwap, &["or"]),
        "or" => (BooleanSwap, &["and"]),
        "&&" => (BooleanSwap, &["||"]),
        "||" => (BooleanSwap, &["&&"]),
        _ => return None,
    })
}

/// One edit of the source made by an operator: replace `start..end` with
/// `replacement`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub operator: Operator,
    pub start: usize,
    pub end: usize,
    pub replacement: String,
    /// 1-based line of the edit.
    pub line: u32,
    /// What changed, e.g. "`<` → `<=`".
    pub description: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_swap_has_an_inverse_among_the_swaps() {
        for token in ["<", "<=", "==", "is", "in", "+", "+=", "and", "&&", "==="] {
            let (_, to) = token_swaps(token).unwrap();
            assert!(
                to.iter()
                    .any(|t| token_swaps(t).unwrap().1.contains(&token)),
                "{token}"
            );
        }
        assert!(token_swaps("%").is_none());
    }
}
