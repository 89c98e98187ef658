//! Null guards: when the error says a member was read from nothing — Python's
//! None, JavaScript's `undefined`/`null`, Java's `null`, Go's `nil` — a guard
//! before the statement that reads it returns early when its object is
//! missing. What each language's error names is read by [`crate::nulls`];
//! the accesses are found on the tree. Rust has no null: a missing value is
//! an `Option` the compiler makes the code handle, so it gets no guard.

use crate::nulls::{self, Access, Member};
use crate::operator::{Edit, Operator};
use tracelab_domain::Language;
use tree_sitter::Node;

pub use nulls::none_attributes;

/// What the guards of one function need to know.
pub struct Guards<'a> {
    pub source: &'a str,
    pub language: Language,
    pub failure: &'a str,
    /// Lines of this file the failure's frames name.
    pub hot_lines: &'a [u32],
    /// The function's locals: a Go guard tests only a local for nil.
    pub locals: &'a [String],
}

/// One member access the error may be about: the access node, its object
/// and the member's name.
struct Read<'t> {
    access: Node<'t>,
    object: Node<'t>,
    member: Node<'t>,
}

impl Guards<'_> {
    /// Guards (and, in JavaScript, optional chaining) before each access of
    /// `function` the error names.
    pub fn function(&self, function: Node) -> Vec<Edit> {
        let accesses = nulls::accesses(self.language, self.failure);
        let go_nil = self.language == Language::Go && nulls::go_nil_dereference(self.failure);
        if accesses.is_empty() && !go_nil {
            return Vec::new();
        }
        let mut out: Vec<Edit> = Vec::new();
        let mut stack = vec![function];
        let mut cursor = function.walk();
        while let Some(node) = stack.pop() {
            stack.extend(node.children(&mut cursor));
            let Some(read) = self.read(node) else {
                continue;
            };
            let named = accesses.iter().any(|a| self.names(a, &read));
            let on_hot_line = go_nil
                && self.locals.iter().any(|l| *l == self.text(read.object))
                && self
                    .hot_lines
                    .contains(&(read.access.start_position().row as u32 + 1));
            if !named && !on_hot_line {
                continue;
            }
            for edit in self.edits(&read) {
                if !out
                    .iter()
                    .any(|e| e.start == edit.start && e.replacement == edit.replacement)
                {
                    out.push(edit);
                }
            }
        }
        out
    }

    fn text(&self, node: Node) -> &str {
        &self.source[node.byte_range()]
    }

    /// The member access `node` is, in this language's grammar.
    fn read<'t>(&self, node: Node<'t>) -> Option<Read<'t>> {
        let (object, member) = match (self.language, node.kind()) {
            (Language::Python, "attribute") => ("object", "attribute"),
            (Language::Javascript | Language::Typescript, "member_expression") => {
                ("object", "property")
            }
            (Language::Java, "method_invocation") => ("object", "name"),
            (Language::Java, "field_access") => ("object", "field"),
            (Language::Go, "selector_expression") => ("operand", "field"),
            _ => return None,
        };
        Some(Read {
            access: node,
            object: node.child_by_field_name(object)?,
            member: node.child_by_field_name(member)?,
        })
    }

    /// Whether the error's access is this one: the member's name, its kind
    /// (a Java method or field) and, when the error names it, the object.
    fn names(&self, access: &Access, read: &Read) -> bool {
        if access.member.name() != self.text(read.member) {
            return false;
        }
        let kind_fits = match (&access.member, read.access.kind()) {
            (Member::Method(_), kind) => kind == "method_invocation",
            (Member::Field(_), kind) => kind != "method_invocation",
            (Member::Any(_), _) => true,
        };
        let object = self.text(read.object);
        kind_fits
            && access
                .object
                .as_deref()
                .is_none_or(|named| named == object || named.strip_prefix("this.") == Some(object))
    }

    /// The guard before the statement holding the access, and in
    /// JavaScript the access made optional (`a?.b`).
    fn edits(&self, read: &Read) -> Vec<Edit> {
        let mut out = Vec::new();
        let object = self.text(read.object);
        if matches!(self.language, Language::Javascript | Language::Typescript)
            && let Some(dot) = dot_before(read.member)
        {
            out.push(Edit {
                operator: Operator::NoneGuard,
                start: dot.start_byte(),
                end: dot.end_byte(),
                replacement: "?.".into(),
                line: dot.start_position().row as u32 + 1,
                description: format!("`{object}.` → `{object}?.` (optional chaining)"),
            });
        }
        if !guardable(read.object) {
            return out;
        }
        let Some(statement) = self.enclosing_statement(read.access) else {
            return out;
        };
        let line_start = self.source[..statement.start_byte()]
            .rfind('\n')
            .map_or(0, |i| i + 1);
        let indent = &self.source[line_start..statement.start_byte()];
        if !indent.chars().all(|c| c == ' ' || c == '\t') {
            return out;
        }
        let (guard, missing) = match self.language {
            Language::Python => (
                format!("{indent}if {object} is None:\n{indent}    return None\n"),
                "None",
            ),
            Language::Javascript | Language::Typescript => (
                format!("{indent}if ({object} == null) {{ return null; }}\n"),
                "null",
            ),
            Language::Java => {
                let Some(value) = java_default_return(statement) else {
                    return out;
                };
                (
                    format!("{indent}if ({object} == null) {{ {value} }}\n"),
                    "null",
                )
            }
            Language::Go => {
                let Some(value) = go_zero_return(statement, self.source) else {
                    return out;
                };
                (format!("{indent}if {object} == nil {{ {value} }}\n"), "nil")
            }
            _ => return out,
        };
        out.push(Edit {
            operator: Operator::NoneGuard,
            start: line_start,
            end: line_start,
            replacement: guard,
            line: statement.start_position().row as u32 + 1,
            description: format!("return early when `{object}` is {missing}"),
        });
        out
    }

    /// The statement inside a block that holds `node` (not the function).
    fn enclosing_statement<'t>(&self, node: Node<'t>) -> Option<Node<'t>> {
        let blocks: &[&str] = match self.language {
            Language::Python | Language::Java => &["block"],
            Language::Javascript | Language::Typescript => &["statement_block"],
            Language::Go => &["block", "statement_list"],
            _ => return None,
        };
        let mut current = node;
        while let Some(parent) = current.parent() {
            if blocks.contains(&parent.kind()) && current.is_named() {
                return Some(current);
            }
            current = parent;
        }
        None
    }
}

/// An object a guard can test twice without a side effect: a name or a
/// chain of member reads (`user`, `user.profile`, `this.name`).
pub(crate) fn guardable(object: Node) -> bool {
    match object.kind() {
        "identifier" | "this" | "self" => true,
        "attribute" | "member_expression" | "field_access" | "selector_expression" => {
            let mut cursor = object.walk();
            object
                .named_children(&mut cursor)
                .filter(|c| {
                    !matches!(
                        c.kind(),
                        "identifier" | "property_identifier" | "field_identifier"
                    ) || c.start_byte() == object.start_byte()
                })
                .all(guardable)
        }
        _ => false,
    }
}

/// The `.` token before a JavaScript member's name.
fn dot_before(member: Node) -> Option<Node> {
    let dot = member.prev_sibling()?;
    (dot.kind() == ".").then_some(dot)
}

/// `return;`, `return 0;`, `return false;` or `return null;` by the
/// enclosing method's return type; none inside a lambda.
fn java_default_return(node: Node) -> Option<&'static str> {
    let mut current = node;
    while let Some(parent) = current.parent() {
        match parent.kind() {
            "lambda_expression" => return None,
            "constructor_declaration" => return Some("return;"),
            "method_declaration" => {
                let kind = parent.child_by_field_name("type")?.kind();
                return Some(match kind {
                    "void_type" => "return;",
                    "integral_type" | "floating_point_type" => "return 0;",
                    "boolean_type" => "return false;",
                    _ => "return null;",
                });
            }
            _ => current = parent,
        }
    }
    None
}

/// `return` with the zero value of each of the enclosing function's
/// results (`*new(T)` for a type without a literal zero).
fn go_zero_return(node: Node, source: &str) -> Option<String> {
    let mut current = node;
    let function = loop {
        let parent = current.parent()?;
        if matches!(
            parent.kind(),
            "function_declaration" | "method_declaration" | "func_literal"
        ) {
            break parent;
        }
        current = parent;
    };
    let Some(result) = function.child_by_field_name("result") else {
        return Some("return".into());
    };
    let mut types = Vec::new();
    if result.kind() == "parameter_list" {
        let mut cursor = result.walk();
        for declaration in result.named_children(&mut cursor) {
            let ty = declaration.child_by_field_name("type")?;
            let mut names = declaration.walk();
            let count = declaration
                .children_by_field_name("name", &mut names)
                .count()
                .max(1);
            types.extend(std::iter::repeat_n(&source[ty.byte_range()], count));
        }
    } else {
        types.push(&source[result.byte_range()]);
    }
    let zeros: Vec<String> = types.iter().map(|t| go_zero(t)).collect();
    Some(format!("return {}", zeros.join(", ")))
}

fn go_zero(ty: &str) -> String {
    const NUMBERS: &[&str] = &[
        "int",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "uintptr",
        "byte",
        "rune",
        "float32",
        "float64",
        "complex64",
        "complex128",
    ];
    match ty {
        "bool" => "false".into(),
        "string" => "\"\"".into(),
        "error" | "any" => "nil".into(),
        t if NUMBERS.contains(&t) => "0".into(),
        t if ["*", "[]", "map[", "chan", "func", "interface"]
            .iter()
            .any(|p| t.starts_with(p)) =>
        {
            "nil".into()
        }
        t => format!("*new({t})"),
    }
}
