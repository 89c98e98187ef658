//! Wrapping an expression in a call, or unwrapping one (Python): TBar's
//! "mutate data type / add a cast" and "remove a method call" patterns in
//! their Python shapes, each where the code or the error says why.
//!
//! - **unwrap**: a conversion builtin around one argument (`str(x)`,
//!   `list(x)`, `int(x)`, ...) replaced by its argument: a value converted
//!   one step too early.
//! - **materialise**: a value that may be a one-shot iterator (a call, a
//!   subscript, a name, a generator expression) bound to a name that is
//!   iterated more than once, or iterated inside a nested function or
//!   lambda (each call iterates it again), wrapped in `list(...)`; a
//!   parameter read that way gets `param = list(param)` first. The second
//!   pass over an exhausted iterator sees nothing: the classic Python bug.
//! - **operand like its sibling**, when the error is a `TypeError` and the
//!   traceback names the line of a `+`: the bare operand wrapped in the
//!   one-argument call its sibling already gets (`value + want_bytes(sep)`
//!   → `want_bytes(value) + want_bytes(sep)`), or in `str()` beside a
//!   string literal (`path + '.part'`).
//! - **one-tuple**: `fmt % x` → `fmt % (x,)` when the error is Python's
//!   `not enough arguments for format string` / `not all arguments
//!   converted` on that line (`x` itself a tuple).

use crate::error_guards::{first_statement, parameters};
use crate::grammar::simple;
use crate::operator::{Edit, Operator};
use crate::scope::Scope;
use std::collections::HashMap;
use tree_sitter::Node;

/// Builtins that convert one value to another type: unwrapping them is the
/// one-token "converted too early" fix.
const CONVERSIONS: &[&str] = &[
    "str",
    "repr",
    "int",
    "float",
    "bool",
    "list",
    "tuple",
    "set",
    "frozenset",
    "dict",
    "bytes",
];

/// Calls whose result is already a container (or not an iterator): a value
/// made by one needs no `list()`.
const MATERIAL: &[&str] = &[
    "list",
    "tuple",
    "set",
    "frozenset",
    "dict",
    "sorted",
    "str",
    "repr",
    "bytes",
    "len",
    "int",
    "float",
    "bool",
    "range",
    "type",
    "isinstance",
];

/// Builtins that iterate their (first) argument to the end.
const CONSUMERS: &[&str] = &[
    "list",
    "tuple",
    "set",
    "frozenset",
    "dict",
    "sorted",
    "sum",
    "min",
    "max",
    "any",
    "all",
    "enumerate",
    "zip",
];

/// Methods that iterate their argument to the end.
const CONSUMING_METHODS: &[&str] = &["join", "extend", "update"];

pub struct Wraps<'a> {
    pub source: &'a str,
    pub failure: &'a str,
    /// Lines of this file the failure's frames name.
    pub hot_lines: &'a [u32],
    /// The function's parameters and the names it binds.
    pub locals: &'a [String],
    pub scope: &'a Scope,
}

impl Wraps<'_> {
    pub fn function(&self, function: Node) -> Vec<Edit> {
        let mut out = Vec::new();
        let type_error = self.failure.contains("TypeError");
        let format_error = self
            .failure
            .contains("not enough arguments for format string")
            || self
                .failure
                .contains("not all arguments converted during string formatting");
        let mut stack = vec![function];
        let mut cursor = function.walk();
        while let Some(node) = stack.pop() {
            stack.extend(node.children(&mut cursor));
            match node.kind() {
                "call" => self.unwrap(node, &mut out),
                "binary_operator" if self.on_hot_line(node) => {
                    let operator = node.child_by_field_name("operator").map(|o| o.kind());
                    if type_error && operator == Some("+") {
                        self.operands(node, &mut out);
                    }
                    if format_error && operator == Some("%") {
                        self.one_tuple(node, &mut out);
                    }
                }
                _ => {}
            }
        }
        self.materialise(function, &mut out);
        out
    }

    fn text(&self, node: Node) -> &str {
        &self.source[node.byte_range()]
    }

    fn on_hot_line(&self, node: Node) -> bool {
        let (first, last) = (
            node.start_position().row as u32 + 1,
            node.end_position().row as u32 + 1,
        );
        self.hot_lines.iter().any(|l| (first..=last).contains(l))
    }

    /// The name a call calls, when it is a plain name no local shadows.
    fn builtin(&self, call: Node) -> Option<&str> {
        let function = call.child_by_field_name("function")?;
        let name = self.text(function);
        (function.kind() == "identifier" && !self.locals.iter().any(|l| l == name)).then_some(name)
    }

    /// The one positional argument of a call (no keyword, no splat).
    fn only_argument<'n>(&self, call: Node<'n>) -> Option<Node<'n>> {
        let arguments = call.child_by_field_name("arguments")?;
        if arguments.kind() != "argument_list" {
            return None;
        }
        let mut cursor = arguments.walk();
        let arguments: Vec<Node> = arguments
            .named_children(&mut cursor)
            .filter(|a| a.kind() != "comment")
            .collect();
        match arguments[..] {
            [only]
                if !matches!(
                    only.kind(),
                    "keyword_argument" | "list_splat" | "dictionary_splat"
                ) =>
            {
                Some(only)
            }
            _ => None,
        }
    }

    /// `str(x)` → `x`.
    fn unwrap(&self, call: Node, out: &mut Vec<Edit>) {
        let Some(name) = self.builtin(call) else {
            return;
        };
        if !CONVERSIONS.contains(&name) {
            return;
        }
        let Some(argument) = self.only_argument(call) else {
            return;
        };
        let text = self.text(argument);
        let whole = call.parent().is_some_and(|p| {
            matches!(
                p.kind(),
                "argument_list"
                    | "assignment"
                    | "return_statement"
                    | "expression_statement"
                    | "parenthesized_expression"
                    | "keyword_argument"
                    | "list"
                    | "tuple"
                    | "pair"
            )
        });
        let replacement = if simple(argument) || whole {
            text.to_string()
        } else {
            format!("({text})")
        };
        out.push(Edit {
            operator: Operator::UnwrapCall,
            start: call.start_byte(),
            end: call.end_byte(),
            description: format!("`{}` → `{replacement}` (no `{name}()`)", self.text(call)),
            replacement,
            line: call.start_position().row as u32 + 1,
        });
    }

    /// The bare operand of a `+` wrapped in its sibling's one-argument call,
    /// or in `str()` beside a string literal.
    fn operands(&self, node: Node, out: &mut Vec<Edit>) {
        let (Some(left), Some(right)) = (
            node.child_by_field_name("left"),
            node.child_by_field_name("right"),
        ) else {
            return;
        };
        for (bare, sibling) in [(left, right), (right, left)] {
            if !matches!(
                bare.kind(),
                "identifier" | "attribute" | "subscript" | "call"
            ) {
                continue;
            }
            let wrapper = match sibling.kind() {
                "call" if bare.kind() != "call" => {
                    let Some(argument) = self.only_argument(sibling) else {
                        continue;
                    };
                    let Some(function) = sibling.child_by_field_name("function") else {
                        continue;
                    };
                    if self.text(argument) == self.text(bare)
                        || !matches!(function.kind(), "identifier" | "attribute")
                    {
                        continue;
                    }
                    self.text(function)
                }
                "string" if !is_bytes_literal(self.text(sibling)) => {
                    if bare.kind() == "call" && self.builtin(bare) == Some("str") {
                        continue;
                    }
                    "str"
                }
                _ => continue,
            };
            let replacement = format!("{wrapper}({})", self.text(bare));
            out.push(Edit {
                operator: Operator::WrapCall,
                start: bare.start_byte(),
                end: bare.end_byte(),
                description: format!("`{}` → `{replacement}` (like its operand)", self.text(bare)),
                replacement,
                line: bare.start_position().row as u32 + 1,
            });
        }
    }

    /// `fmt % x` → `fmt % (x,)`.
    fn one_tuple(&self, node: Node, out: &mut Vec<Edit>) {
        let (Some(left), Some(right)) = (
            node.child_by_field_name("left"),
            node.child_by_field_name("right"),
        ) else {
            return;
        };
        if !matches!(left.kind(), "string" | "concatenated_string" | "identifier")
            || !matches!(
                right.kind(),
                "identifier" | "attribute" | "subscript" | "call"
            )
        {
            return;
        }
        let replacement = format!("({},)", self.text(right));
        out.push(Edit {
            operator: Operator::WrapCall,
            start: right.start_byte(),
            end: right.end_byte(),
            description: format!("`% {}` → `% {replacement}` (a one-tuple)", self.text(right)),
            replacement,
            line: right.start_position().row as u32 + 1,
        });
    }

    /// `name = value` → `name = list(value)`, and `param = list(param)`
    /// first, for a name iterated more than once.
    fn materialise(&self, function: Node, out: &mut Vec<Edit>) {
        let iterated = self.iterations(function);
        let many = |name: &str| iterated.get(name).is_some_and(|n| *n >= 2);
        let mut stack = vec![function];
        let mut cursor = function.walk();
        while let Some(node) = stack.pop() {
            stack.extend(node.children(&mut cursor));
            if node.kind() != "assignment"
                || node
                    .parent()
                    .is_none_or(|p| p.kind() != "expression_statement")
            {
                continue;
            }
            let (Some(left), Some(right)) = (
                node.child_by_field_name("left"),
                node.child_by_field_name("right"),
            ) else {
                continue;
            };
            if left.kind() != "identifier" || !many(self.text(left)) || !self.may_be_iterator(right)
            {
                continue;
            }
            let replacement = format!("list({})", self.text(right));
            out.push(Edit {
                operator: Operator::WrapCall,
                start: right.start_byte(),
                end: right.end_byte(),
                description: format!(
                    "`{}` → `{replacement}` (`{}` is iterated more than once)",
                    self.text(right),
                    self.text(left)
                ),
                replacement,
                line: right.start_position().row as u32 + 1,
            });
        }
        let Some(first) = first_statement(function) else {
            return;
        };
        let line_start = self.source[..first.start_byte()]
            .rfind('\n')
            .map_or(0, |i| i + 1);
        let indent = &self.source[line_start..first.start_byte()];
        if !indent.chars().all(|c| c == ' ' || c == '\t') {
            return;
        }
        for name in plain_parameters(function, self.source) {
            if RECEIVERS.contains(&name) || !many(name) {
                continue;
            }
            out.push(Edit {
                operator: Operator::WrapCall,
                start: line_start,
                end: line_start,
                replacement: format!("{indent}{name} = list({name})\n"),
                line: first.start_position().row as u32 + 1,
                description: format!(
                    "`{name} = list({name})` first (`{name}` is iterated more than once)"
                ),
            });
        }
    }

    /// A value that may be a one-shot iterator.
    fn may_be_iterator(&self, value: Node) -> bool {
        match value.kind() {
            "identifier" | "attribute" | "subscript" | "generator_expression" => true,
            "call" => value
                .child_by_field_name("function")
                .is_some_and(|f| f.kind() != "identifier" || !MATERIAL.contains(&self.text(f))),
            _ => false,
        }
    }

    /// How many times each name is iterated in `function`: a `for` or a
    /// comprehension over it, `*name`, a builtin or method that consumes it;
    /// a use inside a nested function or lambda counts twice (each call
    /// iterates again).
    fn iterations(&self, function: Node) -> HashMap<String, usize> {
        let mut counts: HashMap<String, usize> = HashMap::new();
        let mut stack = vec![(function, false)];
        while let Some((node, nested)) = stack.pop() {
            let inner = nested
                || (node.id() != function.id()
                    && matches!(node.kind(), "function_definition" | "lambda"));
            let mut cursor = node.walk();
            for child in node.children(&mut cursor) {
                stack.push((child, inner));
            }
            if node.kind() != "identifier" || !self.scope.is_value_use(node) || !self.iterated(node)
            {
                continue;
            }
            *counts.entry(self.text(node).to_string()).or_insert(0) += if nested { 2 } else { 1 };
        }
        counts
    }

    /// Whether this read of a name iterates it.
    fn iterated(&self, node: Node) -> bool {
        let Some(parent) = node.parent() else {
            return false;
        };
        match parent.kind() {
            "for_statement" | "for_in_clause" => parent
                .child_by_field_name("right")
                .is_some_and(|r| r.id() == node.id()),
            "list_splat" => true,
            "argument_list" => {
                let Some(call) = parent.parent().filter(|c| c.kind() == "call") else {
                    return false;
                };
                let Some(function) = call.child_by_field_name("function") else {
                    return false;
                };
                match function.kind() {
                    "identifier" => {
                        let name = self.text(function);
                        let first = parent.named_child(0).is_some_and(|a| a.id() == node.id());
                        (CONSUMERS.contains(&name) && (first || matches!(name, "zip")))
                            || (matches!(name, "map" | "filter") && !first)
                    }
                    "attribute" => function
                        .child_by_field_name("attribute")
                        .is_some_and(|a| CONSUMING_METHODS.contains(&self.text(a))),
                    _ => false,
                }
            }
            _ => false,
        }
    }
}

const RECEIVERS: &[&str] = &["self", "cls"];

/// Parameters that hold one value (not `*args`, `**kw`).
fn plain_parameters<'s>(function: Node, source: &'s str) -> Vec<&'s str> {
    let Some(list) = function.child_by_field_name("parameters") else {
        return Vec::new();
    };
    let mut cursor = list.walk();
    let splats: Vec<&str> = list
        .named_children(&mut cursor)
        .filter(|p| matches!(p.kind(), "list_splat_pattern" | "dictionary_splat_pattern"))
        .map(|p| &source[p.byte_range()])
        .collect();
    parameters(function, source)
        .into_iter()
        .filter(|name| !splats.iter().any(|s| s.trim_start_matches('*') == *name))
        .collect()
}

/// `b'..'`, `rb".."`: a bytes literal, which `str()` would not match.
fn is_bytes_literal(text: &str) -> bool {
    let prefix: String = text
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect();
    prefix.to_ascii_lowercase().contains('b')
}
