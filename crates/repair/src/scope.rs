//! Python names local to a function: its parameters and the names it
//! binds, the candidates of the identifier swap.

use tree_sitter::Node;

/// Parameters first, then names bound in the body, in source order, without
/// `self`/`cls` (swapping the receiver is never a fix).
pub fn python_locals(function: Node, source: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut add = |node: Node| {
        let name = &source[node.byte_range()];
        if name != "self" && name != "cls" && !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    };
    if let Some(parameters) = function.child_by_field_name("parameters") {
        let mut cursor = parameters.walk();
        for p in parameters.named_children(&mut cursor) {
            if let Some(id) = parameter_name(p) {
                add(id);
            }
        }
    }
    let mut stack = vec![function];
    let mut cursor = function.walk();
    while let Some(node) = stack.pop() {
        let target = match node.kind() {
            "assignment" | "augmented_assignment" | "for_statement" | "for_in_clause" => {
                node.child_by_field_name("left")
            }
            "as_pattern_target" => Some(node),
            _ => None,
        };
        if let Some(t) = target {
            for id in identifiers(t) {
                add(id);
            }
        }
        let mut children: Vec<Node> = node.children(&mut cursor).collect();
        children.reverse();
        stack.extend(children);
    }
    names
}

fn parameter_name(p: Node) -> Option<Node> {
    match p.kind() {
        "identifier" => Some(p),
        "default_parameter" | "typed_default_parameter" => p.child_by_field_name("name"),
        "typed_parameter" => p.named_child(0).filter(|n| n.kind() == "identifier"),
        _ => None,
    }
}

/// The identifiers a binding target binds (`a`, `a, b`, `(a, [b, c])`).
fn identifiers(target: Node) -> Vec<Node> {
    match target.kind() {
        "identifier" => vec![target],
        "pattern_list" | "tuple_pattern" | "list_pattern" | "as_pattern_target" => {
            let mut cursor = target.walk();
            target
                .named_children(&mut cursor)
                .flat_map(identifiers)
                .collect()
        }
        _ => Vec::new(),
    }
}

/// Whether an identifier is read as a value (not a name being bound, an
/// attribute's name, a keyword argument's name or the callee).
pub fn is_value_use(node: Node) -> bool {
    let Some(parent) = node.parent() else {
        return false;
    };
    let is_field = |field: &str| {
        parent
            .child_by_field_name(field)
            .is_some_and(|n| n.id() == node.id())
    };
    match parent.kind() {
        "attribute" => !is_field("attribute"),
        "keyword_argument" => !is_field("name"),
        "call" => !is_field("function"),
        "assignment" | "augmented_assignment" | "for_statement" | "for_in_clause" => {
            !is_field("left")
        }
        "function_definition"
        | "class_definition"
        | "parameters"
        | "default_parameter"
        | "typed_parameter"
        | "typed_default_parameter"
        | "lambda_parameters"
        | "global_statement"
        | "nonlocal_statement"
        | "dotted_name"
        | "aliased_import"
        | "pattern_list"
        | "tuple_pattern"
        | "as_pattern_target" => false,
        _ => true,
    }
}
