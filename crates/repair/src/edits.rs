//! The operators applied to one function's subtree: each yields byte-range
//! edits of the source, found by walking the tree-sitter nodes.

use crate::grammar::{Kinds, simple};
pub use crate::operator::Edit;
use crate::operator::{Operator, token_swaps};
use crate::scope::Scope;
use crate::{bounds, error_guards, guard, scope, wrap};
use std::collections::HashMap;
use tracelab_domain::Language;
use tree_sitter::Node;

/// Identifiers tried per use by the identifier swap (closest names first).
const NAMES_PER_USE: usize = 2;

pub struct Walk<'a> {
    pub source: &'a str,
    pub language: Language,
    pub kinds: &'static Kinds,
    /// The error text, for guards on the attributes it names.
    pub failure: &'a str,
    /// Lines of this file the failure's frames name (Go's nil dereference
    /// names no field, only the line).
    pub hot_lines: &'a [u32],
}

impl Walk<'_> {
    fn text(&self, node: Node) -> &str {
        &self.source[node.byte_range()]
    }

    fn edit(&self, operator: Operator, node: Node, replacement: String) -> Edit {
        Edit {
            operator,
            start: node.start_byte(),
            end: node.end_byte(),
            description: format!("`{}` → `{}`", self.text(node).trim(), replacement.trim()),
            replacement,
            line: node.start_position().row as u32 + 1,
        }
    }

    /// Every edit inside `function` (its whole subtree).
    pub fn function(&self, function: Node) -> Vec<Edit> {
        let mut out = Vec::new();
        let scope = scope::scope(self.language);
        let locals = scope.map_or_else(Vec::new, |s| s.locals(function, self.source));
        let reads = scope.map_or_else(HashMap::new, |s| self.reads(function, s));
        let mut cursor = function.walk();
        let mut stack = vec![function];
        while let Some(node) = stack.pop() {
            self.node(node, scope, &locals, &reads, &mut out);
            stack.extend(node.children(&mut cursor));
        }
        let guards = guard::Guards {
            source: self.source,
            language: self.language,
            failure: self.failure,
            hot_lines: self.hot_lines,
            locals: &locals,
        };
        out.extend(guards.function(function));
        if self.language == Language::Python
            && let Some(scope) = scope
        {
            let errors = error_guards::ErrorGuards {
                source: self.source,
                failure: self.failure,
                hot_lines: self.hot_lines,
                locals: &locals,
            };
            out.extend(errors.function(function));
            let wraps = wrap::Wraps {
                source: self.source,
                failure: self.failure,
                hot_lines: self.hot_lines,
                locals: &locals,
                scope,
            };
            out.extend(wraps.function(function));
        }
        out
    }

    /// How many times each name is read as a value inside `function`.
    fn reads(&self, function: Node, scope: &Scope) -> HashMap<String, usize> {
        let mut reads = HashMap::new();
        let mut cursor = function.walk();
        let mut stack = vec![function];
        while let Some(node) = stack.pop() {
            if node.kind() == "identifier" && scope.is_value_use(node) {
                *reads.entry(self.text(node).to_string()).or_insert(0) += 1;
            }
            stack.extend(node.children(&mut cursor));
        }
        reads
    }

    fn node(
        &self,
        node: Node,
        scope: Option<&Scope>,
        locals: &[String],
        reads: &HashMap<String, usize>,
        out: &mut Vec<Edit>,
    ) {
        let kind = node.kind();
        if self.kinds.binary.contains(&kind) {
            self.operator_tokens(node, out);
        }
        if self.kinds.integer.contains(&kind) {
            self.off_by_one(node, Operator::OffByOne, out);
        }
        if self.kinds.conditional.contains(&kind)
            && let Some(condition) = node.child_by_field_name("condition")
        {
            self.negate(condition, out);
        }
        if kind == self.kinds.call {
            self.call(node, out);
        }
        for bound in bounds::slice_bounds(self.language, node) {
            self.shift(bound, out);
        }
        if let Some(scope) = scope
            && kind == "identifier"
            && !locals.is_empty()
            && scope.is_value_use(node)
        {
            self.identifier(node, locals, reads, out);
        }
    }

    /// Operator swaps on the anonymous operator tokens of a binary node.
    fn operator_tokens(&self, node: Node, out: &mut Vec<Edit>) {
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            if child.is_named() {
                continue;
            }
            // Go's `x = y` is an assignment_statement too: only `+=`-like
            // tokens have swaps, so plain `=` is never touched.
            let Some((operator, swaps)) = token_swaps(child.kind()) else {
                continue;
            };
            for swap in swaps.iter() {
                if *swap == "//" && self.language != Language::Python {
                    continue;
                }
                out.push(self.edit(operator, child, (*swap).to_string()));
            }
        }
    }

    /// `n` → `n + 1` and `n - 1` for a plain decimal literal.
    fn off_by_one(&self, node: Node, operator: Operator, out: &mut Vec<Edit>) {
        let text = self.text(node);
        let digits: String = text.chars().filter(|c| *c != '_').collect();
        let Ok(n) = digits.parse::<i64>() else {
            return;
        };
        for m in [n.checked_add(1), n.checked_sub(1)].into_iter().flatten() {
            if m < 0 {
                // `-1` as a bare literal is a different expression (a unary
                // minus): only the enclosing expression knows if it means it.
                continue;
            }
            out.push(self.edit(operator, node, m.to_string()));
        }
    }

    /// The condition negated, or its own negation removed.
    fn negate(&self, condition: Node, out: &mut Vec<Edit>) {
        let inner = unwrap_parentheses(condition);
        let negated = inner.kind() == self.kinds.negation
            && inner
                .child(0)
                .is_some_and(|c| matches!(c.kind(), "!" | "not"));
        if negated && let Some(operand) = operand(inner, self.kinds.negation_operand) {
            let replacement = self.text(unwrap_parentheses(operand)).to_string();
            out.push(self.edit(Operator::NegateCondition, inner, replacement));
            return;
        }
        let replacement = format!("{}({})", self.kinds.negate_prefix, self.text(inner));
        out.push(self.edit(Operator::NegateCondition, inner, replacement));
        // One operand of an `and`/`or` chain negated (or its negation
        // removed): a missing or extra `not` on one clause is a common
        // condition bug (PraPR's and TBar's condition mutators) that
        // negating the whole condition cannot fix.
        let mut leaves = Vec::new();
        self.boolean_leaves(inner, &mut leaves);
        if leaves.len() < 2 {
            return;
        }
        for leaf in leaves {
            let negated = leaf.kind() == self.kinds.negation
                && leaf
                    .child(0)
                    .is_some_and(|c| matches!(c.kind(), "!" | "not"));
            let replacement = match operand(leaf, self.kinds.negation_operand) {
                Some(operand) if negated => self.text(operand).to_string(),
                _ if simple(leaf) => format!("{}{}", self.kinds.negate_prefix, self.text(leaf)),
                _ => format!("{}({})", self.kinds.negate_prefix, self.text(leaf)),
            };
            out.push(self.edit(Operator::NegateCondition, leaf, replacement));
        }
    }

    /// The operands of the `and`/`or` chain at `node`, through nested
    /// chains and parentheses, left to right; `node` itself when it is not
    /// a chain.
    fn boolean_leaves<'t>(&self, node: Node<'t>, out: &mut Vec<Node<'t>>) {
        let node = unwrap_parentheses(node);
        let mut cursor = node.walk();
        let chain = self.kinds.binary.contains(&node.kind())
            && node
                .children(&mut cursor)
                .any(|c| !c.is_named() && matches!(c.kind(), "and" | "or" | "&&" | "||"));
        match (
            chain,
            node.child_by_field_name("left"),
            node.child_by_field_name("right"),
        ) {
            (true, Some(left), Some(right)) => {
                self.boolean_leaves(left, out);
                self.boolean_leaves(right, out);
            }
            _ => out.push(node),
        }
    }

    /// Swaps of adjacent positional arguments, and the bounds of the calls
    /// that take a range (`range`, `slice`, `substring`, `subList`) shifted.
    fn call(&self, node: Node, out: &mut Vec<Edit>) {
        let Some(arguments) = node.child_by_field_name(self.kinds.call_arguments) else {
            return;
        };
        let mut cursor = arguments.walk();
        let positional: Vec<Node> = arguments
            .named_children(&mut cursor)
            .filter(|a| !a.kind().contains("keyword") && a.kind() != "comment")
            .collect();
        for pair in positional.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            if self.text(a) == self.text(b) || !simple(a) || !simple(b) {
                continue;
            }
            out.push(Edit {
                operator: Operator::ArgumentSwap,
                start: a.start_byte(),
                end: b.end_byte(),
                replacement: format!(
                    "{}{}{}",
                    self.text(b),
                    &self.source[a.end_byte()..b.start_byte()],
                    self.text(a)
                ),
                line: a.start_position().row as u32 + 1,
                description: format!(
                    "arguments `{}` and `{}` swapped",
                    self.text(a),
                    self.text(b)
                ),
            });
        }
        let callee = bounds::callee_name(self.language, node).map(|n| self.text(n));
        for at in callee.map_or(&[][..], |c| {
            bounds::bound_arguments(self.language, c, positional.len())
        }) {
            if let Some(bound) = positional.get(*at) {
                self.shift(*bound, out);
            }
        }
    }

    /// `x` → `x + 1` and `x - 1` for a non-literal bound.
    fn shift(&self, bound: Node, out: &mut Vec<Edit>) {
        if self.kinds.integer.contains(&bound.kind()) || bound.kind() == "comment" {
            return;
        }
        let text = self.text(bound);
        let operand = if simple(bound) {
            text.to_string()
        } else {
            format!("({text})")
        };
        for delta in ["+ 1", "- 1"] {
            out.push(self.edit(Operator::BoundShift, bound, format!("{operand} {delta}")));
        }
    }

    /// A use of a local replaced by the nearest other locals by name. Two
    /// swaps are never made, as a reviewer would reject them on sight: one
    /// that leaves the replaced name unread in the function (its value
    /// computed for nothing, or a parameter ignored), and one that makes an
    /// operand, argument or subscript the same name as its sibling (`x == x`,
    /// `isinstance(t, t)`, `check(sig, sig)`, `n[n]`).
    fn identifier(
        &self,
        node: Node,
        locals: &[String],
        reads: &HashMap<String, usize>,
        out: &mut Vec<Edit>,
    ) {
        let name = self.text(node);
        if !locals.iter().any(|l| l == name) || reads.get(name).is_some_and(|n| *n <= 1) {
            return;
        }
        let siblings = self.operand_siblings(node);
        let mut others: Vec<&String> = locals
            .iter()
            .filter(|l| *l != name && !siblings.contains(&l.as_str()))
            .collect();
        others.sort_by_key(|l| (edit_distance(name, l), l.len()));
        for other in others.into_iter().take(NAMES_PER_USE) {
            out.push(self.edit(Operator::IdentifierSwap, node, other.clone()));
        }
    }

    /// The texts of the other operands of `node`'s binary expression, or
    /// the other arguments of its call; empty elsewhere.
    fn operand_siblings(&self, node: Node) -> Vec<&str> {
        let Some(parent) = node.parent() else {
            return Vec::new();
        };
        let is_arguments = parent.parent().is_some_and(|call| {
            call.kind() == self.kinds.call
                && call.child_by_field_name(self.kinds.call_arguments) == Some(parent)
        });
        // A subscript's object and its index are siblings too: `n[n]`
        // indexes a value by itself.
        let is_subscript = SUBSCRIPTS.contains(&parent.kind());
        if !is_arguments && !is_subscript && !self.kinds.binary.contains(&parent.kind()) {
            return Vec::new();
        }
        let mut cursor = parent.walk();
        parent
            .named_children(&mut cursor)
            .filter(|n| n.id() != node.id())
            .map(|n| self.text(n))
            .collect()
    }
}

/// Subscript nodes by grammar: Python, JavaScript, Go and Rust, Java.
const SUBSCRIPTS: &[&str] = &[
    "subscript",
    "subscript_expression",
    "index_expression",
    "array_access",
];

fn unwrap_parentheses(mut node: Node) -> Node {
    while matches!(node.kind(), "parenthesized_expression")
        && node.named_child_count() == 1
        && let Some(inner) = node.named_child(0)
    {
        node = inner;
    }
    node
}

/// The operand of a negation, by field when the grammar names one.
fn operand<'t>(negation: Node<'t>, field: &str) -> Option<Node<'t>> {
    if !field.is_empty()
        && let Some(n) = negation.child_by_field_name(field)
    {
        return Some(n);
    }
    let last = u32::try_from(negation.named_child_count().checked_sub(1)?).ok()?;
    negation.named_child(last)
}

/// Levenshtein distance, case-insensitive (names are short).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current.push(substitution.min(previous[j + 1] + 1).min(current[j] + 1));
        }
        previous = current;
    }
    previous[b.len()]
}
