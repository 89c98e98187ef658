//! Names local to a function — its parameters and the names it binds — the
//! candidates of the identifier swap, and whether an identifier is read as
//! a value there. Each language's grammar says where names are bound in a
//! table ([`Scope`]); the walk is the same for all.

use tracelab_domain::Language;
use tree_sitter::Node;

/// Where a grammar binds names and where an identifier is not a read.
pub struct Scope {
    /// `(node kind, field)`: the node binds the names in that field (`""`:
    /// in all its named children). Every child with that field counts (Go's
    /// `a, b int` has two `name`s).
    binders: &'static [(&'static str, &'static str)],
    /// Pattern nodes a binding goes through (`a, b`, `[a, ...rest]`,
    /// `Some(x)`); a name nested in them is bound too.
    patterns: &'static [&'static str],
    /// `(pattern kind, field)` holding no bound name (a default value, a
    /// type, a tuple struct's name).
    not_names: &'static [(&'static str, &'static str)],
    /// Node kinds that are bound names.
    names: &'static [&'static str],
    /// `(parent kind, field)` where an identifier (or a pattern holding it)
    /// is not read as a value (`""`: any child): binding sites, callees,
    /// assignment targets, attribute names.
    not_uses: &'static [(&'static str, &'static str)],
}

/// The receiver is never swapped: changing it is never the fix.
const RECEIVERS: &[&str] = &["self", "cls", "this"];

pub fn scope(language: Language) -> Option<&'static Scope> {
    Some(match language {
        Language::Python => &PYTHON,
        Language::Javascript | Language::Typescript => &JAVASCRIPT,
        Language::Go => &GO,
        Language::Rust => &RUST,
        Language::Java => &JAVA,
        Language::C | Language::Unknown => return None,
    })
}

const PYTHON: Scope = Scope {
    binders: &[
        ("parameters", ""),
        ("lambda_parameters", ""),
        ("assignment", "left"),
        ("augmented_assignment", "left"),
        ("for_statement", "left"),
        ("for_in_clause", "left"),
        ("as_pattern_target", ""),
    ],
    patterns: &[
        "pattern_list",
        "tuple_pattern",
        "list_pattern",
        "default_parameter",
        "typed_parameter",
        "typed_default_parameter",
        "list_splat_pattern",
        "dictionary_splat_pattern",
    ],
    not_names: &[
        ("default_parameter", "value"),
        ("typed_parameter", "type"),
        ("typed_default_parameter", "type"),
        ("typed_default_parameter", "value"),
    ],
    names: &["identifier"],
    not_uses: &[
        ("attribute", "attribute"),
        ("keyword_argument", "name"),
        ("call", "function"),
        ("assignment", "left"),
        ("augmented_assignment", "left"),
        ("for_statement", "left"),
        ("for_in_clause", "left"),
        ("function_definition", ""),
        ("class_definition", ""),
        ("parameters", ""),
        ("lambda_parameters", ""),
        ("global_statement", ""),
        ("nonlocal_statement", ""),
        ("dotted_name", ""),
        ("aliased_import", ""),
        ("as_pattern_target", ""),
    ],
};

const JAVASCRIPT: Scope = Scope {
    binders: &[
        ("formal_parameters", ""),
        ("variable_declarator", "name"),
        ("for_in_statement", "left"),
        ("arrow_function", "parameter"),
        ("catch_clause", "parameter"),
    ],
    patterns: &[
        "object_pattern",
        "array_pattern",
        "assignment_pattern",
        "rest_pattern",
        "pair_pattern",
        "required_parameter",
        "optional_parameter",
    ],
    not_names: &[
        ("assignment_pattern", "right"),
        ("pair_pattern", "key"),
        ("required_parameter", "type"),
        ("required_parameter", "value"),
        ("optional_parameter", "type"),
        ("optional_parameter", "value"),
    ],
    names: &["identifier", "shorthand_property_identifier_pattern"],
    not_uses: &[
        ("variable_declarator", "name"),
        ("call_expression", "function"),
        ("new_expression", "constructor"),
        ("assignment_expression", "left"),
        ("augmented_assignment_expression", "left"),
        ("update_expression", ""),
        ("for_in_statement", "left"),
        ("formal_parameters", ""),
        ("arrow_function", "parameter"),
        ("catch_clause", "parameter"),
        ("function_declaration", "name"),
        ("function_expression", "name"),
        ("class_declaration", "name"),
        ("labeled_statement", "label"),
        ("break_statement", ""),
        ("continue_statement", ""),
        ("import_specifier", ""),
        ("export_specifier", ""),
        ("namespace_import", ""),
        ("import_clause", ""),
    ],
};

const GO: Scope = Scope {
    binders: &[
        ("parameter_declaration", "name"),
        ("variadic_parameter_declaration", "name"),
        ("short_var_declaration", "left"),
        ("var_spec", "name"),
        ("const_spec", "name"),
        ("range_clause", "left"),
    ],
    patterns: &["expression_list"],
    not_names: &[],
    names: &["identifier"],
    not_uses: &[
        ("parameter_declaration", ""),
        ("variadic_parameter_declaration", ""),
        ("short_var_declaration", "left"),
        ("assignment_statement", "left"),
        ("range_clause", "left"),
        ("var_spec", "name"),
        ("const_spec", "name"),
        ("call_expression", "function"),
        ("inc_statement", ""),
        ("dec_statement", ""),
        ("function_declaration", "name"),
        ("method_declaration", "name"),
        ("labeled_statement", "label"),
        ("break_statement", ""),
        ("continue_statement", ""),
        ("goto_statement", ""),
    ],
};

const RUST: Scope = Scope {
    binders: &[
        ("parameter", "pattern"),
        ("let_declaration", "pattern"),
        ("let_condition", "pattern"),
        ("for_expression", "pattern"),
        ("closure_parameters", ""),
        ("match_arm", "pattern"),
    ],
    patterns: &[
        "tuple_pattern",
        "tuple_struct_pattern",
        "struct_pattern",
        "field_pattern",
        "ref_pattern",
        "mut_pattern",
        "reference_pattern",
        "slice_pattern",
        "captured_pattern",
        "or_pattern",
        "match_pattern",
    ],
    not_names: &[
        ("tuple_struct_pattern", "type"),
        ("struct_pattern", "type"),
        ("field_pattern", "name"),
    ],
    names: &["identifier", "shorthand_field_identifier"],
    not_uses: &[
        ("parameter", "pattern"),
        ("let_declaration", "pattern"),
        ("let_condition", "pattern"),
        ("for_expression", "pattern"),
        ("closure_parameters", ""),
        ("match_arm", "pattern"),
        ("call_expression", "function"),
        ("assignment_expression", "left"),
        ("compound_assignment_expr", "left"),
        ("macro_invocation", "macro"),
        ("scoped_identifier", ""),
        ("scoped_type_identifier", ""),
        ("function_item", "name"),
        ("shorthand_field_initializer", ""),
        ("label", ""),
    ],
};

const JAVA: Scope = Scope {
    binders: &[
        ("formal_parameter", "name"),
        ("variable_declarator", "name"),
        ("enhanced_for_statement", "name"),
        ("catch_formal_parameter", "name"),
        ("lambda_expression", "parameters"),
        ("inferred_parameters", ""),
    ],
    patterns: &[],
    not_names: &[],
    names: &["identifier"],
    not_uses: &[
        ("formal_parameter", "name"),
        ("variable_declarator", "name"),
        ("enhanced_for_statement", "name"),
        ("catch_formal_parameter", "name"),
        ("lambda_expression", "parameters"),
        ("inferred_parameters", ""),
        ("method_invocation", "name"),
        ("field_access", "field"),
        ("method_declaration", "name"),
        ("constructor_declaration", "name"),
        ("class_declaration", "name"),
        ("assignment_expression", "left"),
        ("update_expression", ""),
        ("scoped_identifier", ""),
        ("labeled_statement", ""),
        ("break_statement", ""),
        ("continue_statement", ""),
        ("method_reference", ""),
    ],
};

impl Scope {
    /// Parameters and names bound in `function`, in source order (so the
    /// parameters first), each once, never a receiver.
    pub fn locals(&self, function: Node, source: &str) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        let mut stack = vec![function];
        while let Some(node) = stack.pop() {
            for (kind, field) in self.binders {
                if node.kind() != *kind {
                    continue;
                }
                for bound in fields(node, field) {
                    for name in self.bound_names(bound) {
                        let name = &source[name.byte_range()];
                        if !RECEIVERS.contains(&name) && !names.iter().any(|n| n == name) {
                            names.push(name.to_string());
                        }
                    }
                }
            }
            let mut cursor = node.walk();
            let mut children: Vec<Node> = node.children(&mut cursor).collect();
            children.reverse();
            stack.extend(children);
        }
        names
    }

    /// The name nodes a binding target binds, through its patterns.
    fn bound_names<'t>(&self, target: Node<'t>) -> Vec<Node<'t>> {
        if self.names.contains(&target.kind()) {
            return vec![target];
        }
        if !self.patterns.contains(&target.kind()) {
            return Vec::new();
        }
        let mut cursor = target.walk();
        let children: Vec<(Node, Option<&str>)> = target
            .children(&mut cursor)
            .enumerate()
            .map(|(i, c)| (c, target.field_name_for_child(i as u32)))
            .collect();
        children
            .into_iter()
            .filter(|(c, field)| {
                c.is_named() && !field.is_some_and(|f| self.not_names.contains(&(target.kind(), f)))
            })
            .flat_map(|(c, _)| self.bound_names(c))
            .collect()
    }

    /// Whether an identifier is read as a value: not a name being bound, a
    /// callee, an assignment target or an attribute's name. A pattern
    /// holding it counts as the identifier (`a` in `a, b = ...`).
    pub fn is_value_use(&self, node: Node) -> bool {
        let mut current = node;
        while let Some(parent) = current.parent() {
            if self.patterns.contains(&parent.kind()) {
                current = parent;
                continue;
            }
            let field = field_of(parent, current);
            return !self
                .not_uses
                .iter()
                .any(|(kind, f)| *kind == parent.kind() && (f.is_empty() || Some(*f) == field));
        }
        false
    }
}

/// The children of `node` under `field` (all named children for `""`).
fn fields<'t>(node: Node<'t>, field: &str) -> Vec<Node<'t>> {
    let mut cursor = node.walk();
    if field.is_empty() {
        node.named_children(&mut cursor).collect()
    } else {
        node.children_by_field_name(field, &mut cursor).collect()
    }
}

/// The field under which `parent` holds `child`.
fn field_of<'t>(parent: Node<'t>, child: Node<'_>) -> Option<&'t str> {
    let mut cursor = parent.walk();
    let index = parent
        .children(&mut cursor)
        .position(|c| c.id() == child.id())?;
    parent.field_name_for_child(index as u32)
}
