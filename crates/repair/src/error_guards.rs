//! Guards the error asks for (Python), after the null guard's model: the
//! runtime's words say what went wrong and the traceback says where, and the
//! edit is the check a developer adds there.
//!
//! - `IndexError: … index out of range` on a line the traceback names, for a
//!   subscript `xs[k]` with a constant index there: a return before the
//!   statement when `xs` is too short (`if not xs: return`), or the length
//!   check added to each enclosing condition (`if c and len(xs) > k:`) —
//!   TBar's range checker. An assignment's index (`xs[0] = v`, "list
//!   assignment index out of range") gets none: the fix there is to append,
//!   never to skip the write.
//! - `UnboundLocalError` naming a local that is bound only on some paths: the
//!   local initialised at the top of the function, to the empty value its
//!   uses ask for (`[]` for `.append`/`.extend`, `{}` for `.update`, …, else
//!   `None`).

use crate::guard::guardable;
use crate::operator::{Edit, Operator};
use tree_sitter::Node;

/// What the guards of one Python function need to know.
pub struct ErrorGuards<'a> {
    pub source: &'a str,
    pub failure: &'a str,
    /// Lines of this file the failure's frames name.
    pub hot_lines: &'a [u32],
    /// The function's parameters and the names it binds.
    pub locals: &'a [String],
}

/// Conditions whose body the range check can guard: `(kind, condition
/// field, body field)`.
const CONDITIONALS: &[(&str, &str)] = &[
    ("if_statement", "consequence"),
    ("elif_clause", "consequence"),
    ("while_statement", "body"),
];

impl ErrorGuards<'_> {
    pub fn function(&self, function: Node) -> Vec<Edit> {
        let mut out: Vec<Edit> = Vec::new();
        let mut edits = Vec::new();
        if index_out_of_range(self.failure) {
            edits.extend(self.index_guards(function));
        }
        for name in unbound_locals(self.failure) {
            edits.extend(self.initialise(function, &name));
        }
        for edit in edits {
            if !out.iter().any(|e| {
                e.start == edit.start && e.end == edit.end && e.replacement == edit.replacement
            }) {
                out.push(edit);
            }
        }
        out
    }

    fn text(&self, node: Node) -> &str {
        &self.source[node.byte_range()]
    }

    /// The range checks for each constant subscript on a line the failure
    /// names.
    fn index_guards(&self, function: Node) -> Vec<Edit> {
        let mut out = Vec::new();
        let generator = is_generator(function);
        let mut stack = vec![function];
        let mut cursor = function.walk();
        while let Some(node) = stack.pop() {
            stack.extend(node.children(&mut cursor));
            if node.kind() != "subscript"
                || !self
                    .hot_lines
                    .contains(&(node.start_position().row as u32 + 1))
                || assigned(node)
            {
                continue;
            }
            let Some(value) = node.child_by_field_name("value") else {
                continue;
            };
            let Some(needed) = self.needed_length(node) else {
                continue;
            };
            if !guardable(value) {
                continue;
            }
            let object = self.text(value);
            let (short, long) = if needed == 1 {
                (format!("not {object}"), object.to_string())
            } else {
                (
                    format!("len({object}) <= {}", needed - 1),
                    format!("len({object}) > {}", needed - 1),
                )
            };
            if let Some(edit) = self.early_return(node, &short, generator, object) {
                out.push(edit);
            }
            self.conjuncts(node, function, &long, &mut out);
        }
        out
    }

    /// How long the subscripted object must be for the one constant index
    /// (`xs[2]` → 3, `xs[-1]` → 1); none for a slice or a computed index.
    fn needed_length(&self, subscript: Node) -> Option<usize> {
        let mut cursor = subscript.walk();
        let indices: Vec<Node> = subscript
            .children_by_field_name("subscript", &mut cursor)
            .collect();
        let [index] = indices[..] else {
            return None;
        };
        match index.kind() {
            "integer" => self.text(index).parse::<usize>().ok()?.checked_add(1),
            "unary_operator" => {
                let operator = index.child_by_field_name("operator")?;
                let argument = index.child_by_field_name("argument")?;
                (operator.kind() == "-" && argument.kind() == "integer")
                    .then(|| self.text(argument).parse::<usize>().ok())
                    .flatten()
                    .filter(|n| *n > 0)
            }
            _ => None,
        }
    }

    /// `if not xs: return` before the statement holding the subscript.
    fn early_return(&self, node: Node, short: &str, generator: bool, object: &str) -> Option<Edit> {
        let statement = enclosing_statement(node)?;
        let (line_start, indent) = self.indent_of(statement)?;
        let value = if generator { "return" } else { "return None" };
        Some(Edit {
            operator: Operator::IndexGuard,
            start: line_start,
            end: line_start,
            replacement: format!("{indent}if {short}:\n{indent}    {value}\n"),
            line: statement.start_position().row as u32 + 1,
            description: format!("return early when `{object}` is too short (`{short}`)"),
        })
    }

    /// The length check added to each condition whose body (or which
    /// itself) holds the subscript: `c` → `c and len(xs) > k`, or before
    /// the subscript when the condition reads it.
    fn conjuncts(&self, node: Node, function: Node, long: &str, out: &mut Vec<Edit>) {
        let mut current = node;
        while let Some(parent) = current.parent() {
            if parent.id() == function.id() {
                break;
            }
            let body = CONDITIONALS
                .iter()
                .find(|(kind, _)| *kind == parent.kind())
                .map(|(_, body)| *body);
            if let (Some(body), Some(condition)) = (body, parent.child_by_field_name("condition")) {
                let in_condition = condition.byte_range().contains(&node.start_byte());
                let in_body = parent
                    .child_by_field_name(body)
                    .is_some_and(|b| b.byte_range().contains(&node.start_byte()));
                let text = self.text(condition);
                let operand = if needs_parentheses(condition) {
                    format!("({text})")
                } else {
                    text.to_string()
                };
                let replacement = if in_condition {
                    Some(format!("{long} and {operand}"))
                } else if in_body {
                    Some(format!("{operand} and {long}"))
                } else {
                    None
                };
                if let Some(replacement) = replacement {
                    out.push(Edit {
                        operator: Operator::IndexGuard,
                        start: condition.start_byte(),
                        end: condition.end_byte(),
                        description: format!("`{long}` added to the condition `{}`", text.trim()),
                        replacement,
                        line: condition.start_position().row as u32 + 1,
                    });
                }
            }
            current = parent;
        }
    }

    /// `name = []` (or the empty value its uses ask for) as the function's
    /// first statement, for a local the error says was read unbound.
    fn initialise(&self, function: Node, name: &str) -> Option<Edit> {
        if !self.locals.iter().any(|l| l == name)
            || parameters(function, self.source).contains(&name)
        {
            return None;
        }
        let first = first_statement(function)?;
        let (line_start, indent) = self.indent_of(first)?;
        let value = self.empty_value(function, name);
        Some(Edit {
            operator: Operator::InitLocal,
            start: line_start,
            end: line_start,
            replacement: format!("{indent}{name} = {value}\n"),
            line: first.start_position().row as u32 + 1,
            description: format!("`{name} = {value}` before its first use"),
        })
    }

    /// The empty value of the kind `name`'s uses in `function` ask for.
    fn empty_value(&self, function: Node, name: &str) -> &'static str {
        let mut stack = vec![function];
        let mut cursor = function.walk();
        while let Some(node) = stack.pop() {
            stack.extend(node.children(&mut cursor));
            match node.kind() {
                "attribute" => {
                    let (Some(object), Some(member)) = (
                        node.child_by_field_name("object"),
                        node.child_by_field_name("attribute"),
                    ) else {
                        continue;
                    };
                    if self.text(object) != name {
                        continue;
                    }
                    let value = match self.text(member) {
                        "append" | "extend" | "insert" | "sort" | "reverse" => "[]",
                        "update" | "setdefault" | "items" | "keys" | "values" => "{}",
                        "add" | "discard" | "difference_update" | "intersection_update" => "set()",
                        _ => continue,
                    };
                    return value;
                }
                "augmented_assignment" => {
                    let (Some(left), Some(right)) = (
                        node.child_by_field_name("left"),
                        node.child_by_field_name("right"),
                    ) else {
                        continue;
                    };
                    if self.text(left) != name {
                        continue;
                    }
                    match right.kind() {
                        "integer" | "float" => return "0",
                        "string" | "concatenated_string" => return "''",
                        "list" | "list_comprehension" => return "[]",
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        "None"
    }

    /// The start of `statement`'s line and its indentation, when only
    /// whitespace precedes it there.
    fn indent_of(&self, statement: Node) -> Option<(usize, &str)> {
        let line_start = self.source[..statement.start_byte()]
            .rfind('\n')
            .map_or(0, |i| i + 1);
        let indent = &self.source[line_start..statement.start_byte()];
        indent
            .chars()
            .all(|c| c == ' ' || c == '\t')
            .then_some((line_start, indent))
    }
}

/// Whether the failure is Python's `IndexError` for a read
/// (`list index out of range`, `string index out of range`, ...), not for a
/// write (`list assignment index out of range`).
pub fn index_out_of_range(failure: &str) -> bool {
    failure.lines().any(|line| {
        line.contains("IndexError")
            && line.contains("index out of range")
            && !line.contains("assignment index")
    })
}

/// The locals Python says were read before being bound:
/// `cannot access local variable 'x' where it is not associated with a
/// value` (3.11+) and `local variable 'x' referenced before assignment`.
pub fn unbound_locals(failure: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let marks = ["cannot access local variable '", "local variable '"];
    for line in failure.lines().filter(|l| l.contains("UnboundLocalError")) {
        for mark in marks {
            let Some(at) = line.find(mark) else {
                continue;
            };
            let rest = &line[at + mark.len()..];
            let Some(end) = rest.find('\'') else {
                continue;
            };
            let name = &rest[..end];
            let identifier = !name.is_empty()
                && name.chars().all(|c| c.is_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit());
            if identifier && !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
            break;
        }
    }
    names
}

/// Whether the subscript is written to (`xs[0] = v`, `del xs[0]`).
fn assigned(subscript: Node) -> bool {
    let mut current = subscript;
    while let Some(parent) = current.parent() {
        match parent.kind() {
            "assignment" | "augmented_assignment" => {
                return parent
                    .child_by_field_name("left")
                    .is_some_and(|l| l.byte_range().contains(&subscript.start_byte()));
            }
            "delete_statement" => return true,
            "pattern_list" | "tuple_pattern" | "list_pattern" => current = parent,
            _ => return false,
        }
    }
    false
}

/// A `yield` in the function itself (not in a nested function or lambda).
pub(crate) fn is_generator(function: Node) -> bool {
    let mut stack: Vec<Node> = function.child_by_field_name("body").into_iter().collect();
    while let Some(node) = stack.pop() {
        match node.kind() {
            "yield" => return true,
            "function_definition" | "lambda" | "class_definition" => continue,
            _ => {}
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    false
}

/// The statement inside a block that holds `node`.
fn enclosing_statement(node: Node) -> Option<Node> {
    let mut current = node;
    while let Some(parent) = current.parent() {
        if parent.kind() == "block" && current.is_named() {
            return Some(current);
        }
        current = parent;
    }
    None
}

/// The first statement of the function's body after its docstring.
pub(crate) fn first_statement(function: Node) -> Option<Node> {
    let body = function.child_by_field_name("body")?;
    let mut cursor = body.walk();
    let mut statements = body
        .named_children(&mut cursor)
        .filter(|s| s.kind() != "comment");
    let first = statements.next()?;
    let docstring = first.kind() == "expression_statement"
        && first.named_child_count() == 1
        && first.named_child(0).is_some_and(|s| s.kind() == "string");
    if docstring {
        statements.next()
    } else {
        Some(first)
    }
}

/// The names of the function's parameters.
pub(crate) fn parameters<'s>(function: Node, source: &'s str) -> Vec<&'s str> {
    let Some(parameters) = function.child_by_field_name("parameters") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut cursor = parameters.walk();
    for parameter in parameters.named_children(&mut cursor) {
        let name = match parameter.kind() {
            "identifier" => Some(parameter),
            "default_parameter" | "typed_default_parameter" => {
                parameter.child_by_field_name("name")
            }
            _ => {
                let mut inner = parameter.walk();
                parameter
                    .named_children(&mut inner)
                    .find(|c| c.kind() == "identifier")
            }
        };
        if let Some(name) = name {
            out.push(&source[name.byte_range()]);
        }
    }
    out
}

/// Whether `condition and x` would bind differently from `(condition) and x`.
fn needs_parentheses(condition: Node) -> bool {
    match condition.kind() {
        "conditional_expression" | "lambda" | "named_expression" => true,
        "boolean_operator" => {
            let mut cursor = condition.walk();
            condition
                .children(&mut cursor)
                .any(|c| !c.is_named() && c.kind() == "or")
        }
        _ => false,
    }
}
