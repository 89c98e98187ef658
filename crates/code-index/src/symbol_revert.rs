//! Symbol-level revert: undo what a culprit commit did to specific
//! definitions on a later revision, where `git revert` of the whole commit
//! conflicts because later commits edited the same file.
//!
//! A textual revert replays the culprit's hunks backwards and stops at any
//! hunk that later commits touched or moved next to. The definitions the
//! culprit changed usually still exist by name, though, so this module pairs
//! the definitions of three versions of a file — before the culprit, the
//! culprit, the current revision — by qualified name ([`crate::qualify`])
//! and puts back, in the current text, the text each changed definition had
//! before the culprit. Everything else in the current file stays as it is.
//!
//! The unit is the innermost changed definition: a changed method is restored,
//! not its class. A class (impl, struct, module) is restored only in its own
//! text — the parts between its nested definitions — and only while its
//! nested definitions are still the same ones in the same order; otherwise
//! that change is reported for a person to handle. Definitions the culprit
//! added are kept (other code may call them) and deleted ones are not put
//! back; both are reported. A restore that would add syntax errors to the
//! file is dropped and reported too.
//!
//! A definition's text runs from its decorators, attributes and doc comments
//! (the ones [`crate::extract`] reads a definition's doc from) to its end, and
//! for JavaScript/TypeScript from the `export`/`const` that introduces it, so
//! that a culprit changing a decorator or an attribute is undone too. The same
//! rule applies to every version, so the spans always pair up.
//!
//! Pure: no IO and no git. The caller reads the three blobs and writes the
//! result.

use crate::extract::parse_file;
use crate::lang::Language;
use crate::model::SymbolKind;
use crate::qualify::{module_of, qualified_name};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::ops::Range;
use tree_sitter::{Node, Tree};

/// One file in three versions: at the culprit's parent (`before`), at the
/// culprit, and at the revision being repaired (`current`).
#[derive(Debug, Clone, Copy)]
pub struct FileVersions<'a> {
    /// Repository path; its extension picks the language and it names the
    /// module part of qualified names.
    pub path: &'a str,
    pub before: &'a str,
    pub culprit: &'a str,
    pub current: &'a str,
}

/// The current file with the culprit's changes to its definitions undone,
/// and what could not be undone, for the reviewer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Restored {
    pub path: String,
    /// The new text of the file (equal to `current` when nothing was restored).
    pub content: String,
    /// Qualified names of the definitions put back as they were before the
    /// culprit, in file order.
    pub symbols: Vec<String>,
    /// Restored definitions that later commits had edited as well: restoring
    /// them undid those edits too, which a reviewer should know.
    pub notes: Vec<String>,
    /// Definitions left alone, each with the reason.
    pub skipped: Vec<(String, String)>,
}

impl Restored {
    /// Whether the content differs from the current revision's.
    pub fn changes_file(&self) -> bool {
        !self.symbols.is_empty()
    }
}

/// Qualified names of the definitions whose own text the culprit changed, in
/// file order — the innermost ones: a changed method is listed, its class is
/// not (unless the class changed outside its nested definitions too). Lets a
/// caller intersect them with a failing path before restoring.
/// Definitions the culprit added or deleted are not listed. Empty for a
/// language the index does not parse.
pub fn changed_symbols(path: &str, before: &str, culprit: &str) -> Vec<String> {
    let Some(language) = Language::from_path(path) else {
        return Vec::new();
    };
    let (Some(b), Some(c)) = (
        Version::parse(language, path, before),
        Version::parse(language, path, culprit),
    ) else {
        return Vec::new();
    };
    Changes::between(&b, &c)
        .changed
        .into_iter()
        .map(|i| b.defs[i].name.clone())
        .collect()
}

/// Restores, in `file.current`, the definitions the culprit changed to their
/// text before the culprit. With `only`, just the definitions named there or
/// nested in one named there: a full qualified name (`py:pkg.mod.Class.method`)
/// or a suffix of one starting at a `.`, `::`, `#` or `:` boundary (`method`,
/// `Class.method`).
///
/// `None` when the language is not indexed or the culprit changed, added and
/// deleted no (selected) definition in this file. Otherwise `Some`, even when
/// every definition was skipped ([`Restored::changes_file`] is then false),
/// so that the reasons reach the reviewer.
pub fn restore_symbols(
    file: &FileVersions<'_>,
    only: Option<&BTreeSet<String>>,
) -> Option<Restored> {
    let language = Language::from_path(file.path)?;
    let before = Version::parse(language, file.path, file.before)?;
    let culprit = Version::parse(language, file.path, file.culprit)?;
    let current = Version::parse(language, file.path, file.current)?;
    let changes = Changes::between(&before, &culprit);

    let mut units: Vec<Unit> = Vec::new();
    let mut skipped: Vec<(String, String)> = Vec::new();
    for &i in &changes.changed {
        if !selected(&before, i, only) {
            continue;
        }
        let name = before.defs[i].name.clone();
        match plan(&before, &culprit, &current, i) {
            Plan::Edits { edits, note } => units.push(Unit { name, edits, note }),
            Plan::Skip(reason) => skipped.push((name, reason)),
        }
    }
    for &j in &changes.added {
        if selected(&culprit, j, only) {
            skipped.push((culprit.defs[j].name.clone(), ADDED.to_string()));
        }
    }
    for &i in &changes.deleted {
        if selected(&before, i, only) {
            skipped.push((before.defs[i].name.clone(), DELETED.to_string()));
        }
    }
    for (name, count) in &changes.ambiguous {
        if only.is_none_or(|set| set.iter().any(|f| name_matches(name, f))) {
            let reason =
                format!("defined {count} times; cannot tell which definition the culprit changed");
            skipped.push((name.clone(), reason));
        }
    }
    if units.is_empty() && skipped.is_empty() {
        return None;
    }

    // Everything at once when it parses as well as the current file does;
    // otherwise one definition at a time, keeping those that do.
    let errors_of = |text: &str| syntax_errors(language, file.path, text).unwrap_or(usize::MAX);
    let baseline = current.errors;
    let all: Vec<usize> = (0..units.len()).collect();
    let mut accepted = all.clone();
    let mut content = match render(file.current, &units, &all) {
        Some(text) if errors_of(&text) <= baseline => Some(text),
        _ => None,
    };
    if content.is_none() {
        accepted.clear();
        for u in all {
            let mut trial = accepted.clone();
            trial.push(u);
            let reason = match render(file.current, &units, &trial) {
                Some(text) => {
                    let errors = errors_of(&text);
                    if errors <= baseline {
                        accepted = trial;
                        content = Some(text);
                        continue;
                    }
                    format!(
                        "restoring it would raise the file's syntax errors from {baseline} to {errors}"
                    )
                }
                None => "its text overlaps another restored definition".to_string(),
            };
            skipped.push((units[u].name.clone(), reason));
        }
    }
    let content = content.unwrap_or_else(|| file.current.to_string());
    let symbols = accepted.iter().map(|&u| units[u].name.clone()).collect();
    let notes = accepted
        .iter()
        .filter_map(|&u| units[u].note.clone())
        .collect();
    Some(Restored {
        path: file.path.to_string(),
        content,
        symbols,
        notes,
        skipped,
    })
}

const ADDED: &str = "added by the culprit; kept, since other code may call it";
const DELETED: &str = "deleted by the culprit; not put back";
const ALREADY: &str = "already as it was before the culprit";
const GONE: &str = "not in the current revision (removed or renamed after the culprit)";
const REBUILT: &str = "changed outside its nested definitions, which are no longer the same \
                       ones in the current revision; restore it by hand";

/// Whether `qualified` is named by `filter`: equal, or ending with it right
/// after a separator (`.`, `::`, `#`, or the language prefix's `:`).
pub(crate) fn name_matches(qualified: &str, filter: &str) -> bool {
    if filter.is_empty() {
        return false;
    }
    match qualified.strip_suffix(filter) {
        Some("") => true,
        Some(head) => head.ends_with(['.', ':', '#']),
        None => false,
    }
}

/// Whether definition `i` or one enclosing it is named by the filter.
fn selected(v: &Version<'_>, i: usize, only: Option<&BTreeSet<String>>) -> bool {
    let Some(only) = only else { return true };
    let mut at = Some(i);
    while let Some(d) = at {
        let name = &v.defs[d].name;
        if only.iter().any(|f| name_matches(name, f)) {
            return true;
        }
        at = v.defs[d].parent;
    }
    false
}

/// One definition's restore: replacements in the current text.
struct Unit {
    name: String,
    edits: Vec<(Range<usize>, String)>,
    note: Option<String>,
}

enum Plan {
    Edits {
        edits: Vec<(Range<usize>, String)>,
        note: Option<String>,
    },
    Skip(String),
}

/// How to put back `before.defs[i]` (which the culprit changed) in `current`.
fn plan(before: &Version<'_>, culprit: &Version<'_>, current: &Version<'_>, i: usize) -> Plan {
    let bd = &before.defs[i];
    let k = match current.index.get(&bd.name).map(Vec::as_slice) {
        Some([k]) => *k,
        Some(ks) if ks.len() > 1 => {
            return Plan::Skip(format!(
                "defined {} times in the current revision; cannot tell which one to restore",
                ks.len()
            ));
        }
        _ => return Plan::Skip(GONE.to_string()),
    };
    let kd = &current.defs[k];
    let Some(cd) = culprit.unique(&bd.name) else {
        // `Changes` only lists definitions found once in both.
        return Plan::Skip(GONE.to_string());
    };
    let eol = current.eol;
    let later_note = || {
        format!(
            "{}: edited again after the culprit; restored to its text before the culprit, \
             which undoes those later edits too",
            bd.name
        )
    };

    let callable = bd.kind.is_callable();
    if !bd.children.is_empty() || (!kd.children.is_empty() && !callable) {
        if let Some(edits) = gap_edits(before, bd, current, kd) {
            if edits.is_empty() {
                return Plan::Skip(ALREADY.to_string());
            }
            let note = (current.residual(kd) != culprit.residual(cd)).then(later_note);
            return Plan::Edits { edits, note };
        }
        if !callable {
            return Plan::Skip(REBUILT.to_string());
        }
        // A function's nested definitions are part of its body: restore it whole.
    }
    let restored = eol.apply(before.slice(bd));
    let now = current.slice(kd);
    if restored == now {
        return Plan::Skip(ALREADY.to_string());
    }
    let note = (eol.apply(culprit.slice(cd)) != now).then(later_note);
    Plan::Edits {
        edits: vec![(kd.span.clone(), restored.into_owned())],
        note,
    }
}

/// The current container's own text (between its nested definitions) set
/// back to `before`'s, gap by gap; `None` when the nested definitions are not
/// the same ones in the same order, so that gaps do not pair up.
fn gap_edits(
    before: &Version<'_>,
    bd: &Def,
    current: &Version<'_>,
    kd: &Def,
) -> Option<Vec<(Range<usize>, String)>> {
    let names = |v: &Version<'_>, d: &Def| -> Vec<String> {
        d.children.iter().map(|&c| v.defs[c].name.clone()).collect()
    };
    if names(before, bd) != names(current, kd) {
        return None;
    }
    let old = before.gaps(bd)?;
    let now = current.gaps(kd)?;
    let mut edits = Vec::new();
    for (o, n) in old.into_iter().zip(now) {
        let restored = current.eol.apply(before.text.get(o)?);
        if restored != current.text.get(n.clone())? {
            edits.push((n, restored.into_owned()));
        }
    }
    Some(edits)
}

/// `current` with the edits of the chosen units, applied from the end of the
/// file backwards so that earlier offsets stay valid. An edit inside another
/// (a nested definition inside a function restored whole) is already covered
/// by it; `None` when two edits overlap partially.
fn render(current: &str, units: &[Unit], chosen: &[usize]) -> Option<String> {
    let mut edits: Vec<&(Range<usize>, String)> =
        chosen.iter().flat_map(|&u| &units[u].edits).collect();
    edits.sort_by_key(|(r, _)| (r.start, std::cmp::Reverse(r.end)));
    let mut kept: Vec<&(Range<usize>, String)> = Vec::with_capacity(edits.len());
    for e in edits {
        match kept.last() {
            Some(last) if e.0.start >= last.0.start && e.0.end <= last.0.end => continue,
            Some(last) if e.0.start < last.0.end => return None,
            _ => kept.push(e),
        }
    }
    let mut out = current.to_string();
    for (range, text) in kept.into_iter().rev() {
        out.replace_range(range.clone(), text);
    }
    Some(out)
}

/// What the culprit did to a file's definitions.
struct Changes {
    /// Definitions whose own text changed (indices into `before`), in file
    /// order: leaves by their whole text, containers by the text between
    /// their nested definitions.
    changed: Vec<usize>,
    /// Outermost added definitions (indices into `culprit`).
    added: Vec<usize>,
    /// Outermost deleted definitions (indices into `before`).
    deleted: Vec<usize>,
    /// Names defined more than once whose definitions changed, with the
    /// largest count (overloads, redefinitions).
    ambiguous: Vec<(String, usize)>,
}

impl Changes {
    fn between(before: &Version<'_>, culprit: &Version<'_>) -> Changes {
        let mut changes = Changes {
            changed: Vec::new(),
            added: Vec::new(),
            deleted: Vec::new(),
            ambiguous: Vec::new(),
        };
        let mut seen: HashSet<&str> = HashSet::new();
        for (i, bd) in before.defs.iter().enumerate() {
            let olds = &before.index[&bd.name];
            let Some(news) = culprit.index.get(&bd.name) else {
                let parent_kept = bd
                    .parent
                    .is_none_or(|p| culprit.index.contains_key(&before.defs[p].name));
                if parent_kept && seen.insert(&bd.name) {
                    changes.deleted.push(i);
                }
                continue;
            };
            match (olds.as_slice(), news.as_slice()) {
                ([_], [j]) => {
                    if own_change(before, bd, culprit, &culprit.defs[*j]) {
                        changes.changed.push(i);
                    }
                }
                _ => {
                    if !seen.insert(&bd.name) {
                        continue;
                    }
                    if before.sorted_texts(olds) != culprit.sorted_texts(news) {
                        let count = olds.len().max(news.len());
                        changes.ambiguous.push((bd.name.clone(), count));
                    }
                }
            }
        }
        let mut seen: HashSet<&str> = HashSet::new();
        for (j, cd) in culprit.defs.iter().enumerate() {
            if before.index.contains_key(&cd.name) {
                continue;
            }
            let parent_existed = cd
                .parent
                .is_none_or(|p| before.index.contains_key(&culprit.defs[p].name));
            if parent_existed && seen.insert(&cd.name) {
                changes.added.push(j);
            }
        }
        changes
    }
}

/// Whether a definition's own text differs: a leaf's whole text; a
/// container's text outside its nested definitions, whitespace-insensitive,
/// because adding or removing a nested definition also moves blank lines.
fn own_change(before: &Version<'_>, bd: &Def, culprit: &Version<'_>, cd: &Def) -> bool {
    if bd.children.is_empty() && cd.children.is_empty() {
        before.slice(bd) != culprit.slice(cd)
    } else {
        before.residual(bd) != culprit.residual(cd)
    }
}

/// A definition placed in one version of the file.
struct Def {
    name: String,
    kind: SymbolKind,
    /// Bytes from its first decorator/attribute/doc comment to its end.
    span: Range<usize>,
    parent: Option<usize>,
    children: Vec<usize>,
}

/// One version of the file, parsed.
struct Version<'a> {
    text: &'a str,
    defs: Vec<Def>,
    /// Qualified name → definitions with it.
    index: HashMap<String, Vec<usize>>,
    /// Error and missing nodes in the tree (uncapped, unlike diagnostics).
    errors: usize,
    eol: Eol,
}

impl<'a> Version<'a> {
    /// `None` only when the grammar cannot be loaded.
    fn parse(language: Language, path: &str, text: &'a str) -> Option<Version<'a>> {
        let tree = parse_tree(language, path, text)?;
        let parsed = parse_file(language, path, text.as_bytes());
        let module = module_of(language, path, &parsed);

        // Definition nodes by (start row, end row): how `extract` placed them.
        let mut candidates: HashMap<(usize, usize), Vec<Node<'_>>> = HashMap::new();
        let mut errors = 0;
        visit(&tree, |node| {
            if node.is_error() || node.is_missing() {
                errors += 1;
            }
            if DEF_KINDS.contains(&node.kind()) {
                let key = (node.start_position().row, node.end_position().row);
                candidates.entry(key).or_default().push(node);
            }
        });

        let mut used: HashSet<usize> = HashSet::new();
        let mut defs: Vec<Def> = Vec::with_capacity(parsed.defs.len());
        for d in &parsed.defs {
            let key = (
                d.start_line.saturating_sub(1) as usize,
                d.end_line.saturating_sub(1) as usize,
            );
            let found = candidates.get(&key).and_then(|nodes| {
                let free = || nodes.iter().filter(|n| !used.contains(&n.id()));
                free()
                    .find(|n| first_line(text, n).starts_with(d.signature.as_str()))
                    .or_else(|| free().next())
                    .copied()
            });
            let span = match found {
                Some(node) => {
                    used.insert(node.id());
                    outer_span(language, text, node)
                }
                None => line_span(text, key),
            };
            defs.push(Def {
                name: qualified_name(language, &module, &d.local),
                kind: d.kind,
                span,
                parent: d.parent.map(|p| p as usize),
                children: Vec::new(),
            });
        }
        for i in 0..defs.len() {
            if let Some(p) = defs[i].parent {
                defs[p].children.push(i);
            }
        }
        let mut index: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, d) in defs.iter().enumerate() {
            index.entry(d.name.clone()).or_default().push(i);
        }
        Some(Version {
            text,
            defs,
            index,
            errors,
            eol: Eol::of(text),
        })
    }

    fn unique(&self, name: &str) -> Option<&Def> {
        match self.index.get(name)?.as_slice() {
            [i] => Some(&self.defs[*i]),
            _ => None,
        }
    }

    fn slice(&self, d: &Def) -> &'a str {
        self.text.get(d.span.clone()).unwrap_or("")
    }

    /// The texts of some definitions, sorted: same-named definitions compare
    /// as a multiset.
    fn sorted_texts(&self, ix: &[usize]) -> Vec<&'a str> {
        let mut t: Vec<&str> = ix.iter().map(|&d| self.slice(&self.defs[d])).collect();
        t.sort_unstable();
        t
    }

    /// The byte ranges of a definition between its nested definitions
    /// (children + 1 of them); `None` if the children do not nest in order.
    fn gaps(&self, d: &Def) -> Option<Vec<Range<usize>>> {
        let mut out = Vec::with_capacity(d.children.len() + 1);
        let mut at = d.span.start;
        for &c in &d.children {
            let s = &self.defs[c].span;
            if s.start < at || s.end > d.span.end {
                return None;
            }
            out.push(at..s.start);
            at = s.end;
        }
        out.push(at..d.span.end);
        Some(out)
    }

    /// A definition's own text with whitespace runs collapsed (the whole
    /// text when its children do not nest).
    fn residual(&self, d: &Def) -> String {
        let parts: Vec<&str> = match self.gaps(d) {
            Some(gaps) => gaps.into_iter().filter_map(|g| self.text.get(g)).collect(),
            None => vec![self.slice(d)],
        };
        let words: Vec<&str> = parts.iter().flat_map(|p| p.split_whitespace()).collect();
        words.join(" ")
    }
}

/// The node kinds `extract` turns into definitions (any language; the walk
/// keys them by rows, and `extract`'s signature picks among them).
const DEF_KINDS: &[&str] = &[
    "function_definition",
    "class_definition",
    "function_item",
    "function_signature_item",
    "struct_item",
    "union_item",
    "enum_item",
    "trait_item",
    "mod_item",
    "impl_item",
    "function_declaration",
    "generator_function_declaration",
    "class_declaration",
    "abstract_class_declaration",
    "method_definition",
    "interface_declaration",
    "enum_declaration",
    "variable_declarator",
    "field_definition",
    "public_field_definition",
    "call_expression",
    "method_declaration",
    "type_spec",
    "method_elem",
    "method_spec",
    "record_declaration",
    "constructor_declaration",
];

/// A definition node's span, widened to what belongs to it: Python
/// decorators, the JavaScript/TypeScript declaration and `export` around it,
/// a Go `type` keyword, and the attributes and doc comments right above it.
fn outer_span(language: Language, text: &str, node: Node<'_>) -> Range<usize> {
    let mut anchor = node;
    fn parent_of<'t>(n: Node<'t>, kinds: &[&str]) -> Option<Node<'t>> {
        n.parent().filter(|p| kinds.contains(&p.kind()))
    }
    match language {
        Language::Python => {
            if let Some(p) = parent_of(anchor, &["decorated_definition"]) {
                anchor = p;
            }
        }
        Language::JavaScript | Language::TypeScript => {
            if anchor.kind() == "variable_declarator"
                && let Some(p) = parent_of(anchor, &["lexical_declaration", "variable_declaration"])
                && p.named_child_count() == 1
            {
                anchor = p;
            }
            if anchor.kind() == "call_expression"
                && let Some(p) = parent_of(anchor, &["expression_statement"])
            {
                anchor = p;
            }
            if let Some(p) = parent_of(anchor, &["export_statement"]) {
                anchor = p;
            }
        }
        Language::Go => {
            if anchor.kind() == "type_spec"
                && let Some(p) = parent_of(anchor, &["type_declaration"])
                && p.named_child_count() == 1
            {
                anchor = p;
            }
        }
        Language::Rust | Language::Java => {}
    }
    let mut start = anchor.start_byte();
    if language != Language::Python {
        let mut row = anchor.start_position().row;
        let mut sib = anchor.prev_sibling();
        while let Some(s) = sib {
            let kind = s.kind();
            let attribute = kind == "attribute_item" || kind == "decorator";
            let doc = kind.contains("comment")
                && s.end_position().row + 1 >= row
                && is_doc_comment(language, text.get(s.byte_range()).unwrap_or(""));
            if !(attribute || doc) {
                break;
            }
            start = s.start_byte();
            row = s.start_position().row;
            sib = s.prev_sibling();
        }
    }
    start..anchor.end_byte()
}

/// The comment styles `extract` reads a definition's doc from.
fn is_doc_comment(language: Language, text: &str) -> bool {
    match language {
        Language::Rust => text.starts_with("///") || text.starts_with("/**"),
        Language::Go => text.starts_with("//"),
        _ => text.starts_with("/**"),
    }
}

/// Fallback span for a definition whose node was not found: its whole lines.
fn line_span(text: &str, (first, last): (usize, usize)) -> Range<usize> {
    let mut starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1));
    let start = starts.nth(first).unwrap_or(text.len());
    let end = text[start..]
        .match_indices('\n')
        .nth(last.saturating_sub(first))
        .map_or(text.len(), |(i, _)| start + i);
    let end = if text[..end].ends_with('\r') {
        end - 1
    } else {
        end
    };
    start..end.max(start)
}

fn first_line<'t>(text: &'t str, node: &Node<'_>) -> &'t str {
    let body = text.get(node.byte_range()).unwrap_or("");
    body.lines().next().unwrap_or("").trim()
}

fn parse_tree(language: Language, path: &str, text: &str) -> Option<Tree> {
    tracelab_syntax::parse(language, path, text)
}

/// Error and missing nodes in `text`; `None` when it cannot be parsed at all.
fn syntax_errors(language: Language, path: &str, text: &str) -> Option<usize> {
    let tree = parse_tree(language, path, text)?;
    let mut errors = 0;
    visit(&tree, |n| {
        if n.is_error() || n.is_missing() {
            errors += 1;
        }
    });
    Some(errors)
}

/// Every node in pre-order, iteratively (no recursion on deep trees).
fn visit<'t>(tree: &'t Tree, mut f: impl FnMut(Node<'t>)) {
    let mut cursor = tree.walk();
    loop {
        f(cursor.node());
        if cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return;
            }
        }
    }
}

/// The current file's line endings, which restored text is converted to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Eol {
    Lf,
    Crlf,
    /// Mixed or no line breaks: restored text is left as it was.
    Keep,
}

impl Eol {
    fn of(text: &str) -> Eol {
        let lf = text.matches('\n').count();
        let crlf = text.matches("\r\n").count();
        match (lf, crlf) {
            (0, _) => Eol::Keep,
            (_, 0) => Eol::Lf,
            (n, m) if n == m => Eol::Crlf,
            _ => Eol::Keep,
        }
    }

    fn apply(self, s: &str) -> Cow<'_, str> {
        match self {
            Eol::Lf if s.contains("\r\n") => Cow::Owned(s.replace("\r\n", "\n")),
            Eol::Crlf if s.matches('\n').count() != s.matches("\r\n").count() => {
                Cow::Owned(s.replace("\r\n", "\n").replace('\n', "\r\n"))
            }
            _ => Cow::Borrowed(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Restores `file` (optionally only `only`), checks the content and that
    /// it parses no worse than `current`, and returns the result for the
    /// test's own checks.
    fn check(
        path: &str,
        [before, culprit, current]: [&str; 3],
        only: &[&str],
        want: &str,
    ) -> Restored {
        let filter: Option<BTreeSet<String>> =
            (!only.is_empty()).then(|| only.iter().map(|s| s.to_string()).collect());
        let file = FileVersions {
            path,
            before,
            culprit,
            current,
        };
        let got = restore_symbols(&file, filter.as_ref()).expect("the culprit changed something");
        assert_eq!(got.path, path);
        assert_eq!(got.content, want, "restored {path}: {got:#?}");
        let language = Language::from_path(path).expect("indexed language");
        assert!(
            syntax_errors(language, path, &got.content) <= syntax_errors(language, path, current),
            "restoring added syntax errors"
        );
        assert_eq!(got.changes_file(), got.content != current);
        got
    }

    /// What `git revert <culprit>` does to one file: a three-way merge with
    /// the culprit as base, the current file as ours and its parent as
    /// theirs. `None` when it conflicts.
    fn textual_revert(before: &str, culprit: &str, current: &str) -> Option<String> {
        // `merge_file` does not initialise libgit2 itself; `Buf::new` does.
        drop(git2::Buf::new());
        let mut base = git2::MergeFileInput::new();
        base.content(culprit.as_bytes());
        let mut ours = git2::MergeFileInput::new();
        ours.content(current.as_bytes());
        let mut theirs = git2::MergeFileInput::new();
        theirs.content(before.as_bytes());
        let merged = git2::merge_file(&base, &ours, &theirs, None).expect("merge runs");
        merged
            .is_automergeable()
            .then(|| String::from_utf8_lossy(merged.content()).into_owned())
    }

    fn reasons(r: &Restored) -> Vec<(&str, &str)> {
        r.skipped
            .iter()
            .map(|(n, why)| (n.as_str(), why.as_str()))
            .collect()
    }

    const PY_BEFORE: &str = "\
RATE = 0.2


def discount(price):
    return price * RATE
def total(items):
    return sum(items)
";
    const PY_CULPRIT: &str = "\
RATE = 0.2


def discount(price):
    return price * RATE * 2
def total(items):
    return sum(items)
";

    #[test]
    fn python_function_restored_while_its_neighbour_was_edited_later() {
        // Later: an import above (every line moves down) and `total`, whose
        // first line is right under the culprit's line, rewritten.
        let current = "\
import math

RATE = 0.2


def discount(price):
    return price * RATE * 2
def total(items, start=0.0):
    return math.fsum(items) + start
";
        assert_eq!(textual_revert(PY_BEFORE, PY_CULPRIT, current), None);
        let got = check(
            "src/shop/prices.py",
            [PY_BEFORE, PY_CULPRIT, current],
            &[],
            "\
import math

RATE = 0.2


def discount(price):
    return price * RATE
def total(items, start=0.0):
    return math.fsum(items) + start
",
        );
        assert_eq!(got.symbols, ["py:shop.prices.discount"]);
        assert!(got.notes.is_empty() && got.skipped.is_empty(), "{got:#?}");
    }

    #[test]
    fn python_method_not_its_class() {
        let before = "\
class Cart:
    def __init__(self):
        self.items = []

    def total(self):
        return sum(self.items)
";
        let culprit = before.replace("sum(self.items)", "sum(self.items[1:])");
        let current = "\
class Cart:
    def __init__(self, items=None):
        self.items = list(items or [])

    def total(self):
        return sum(self.items[1:])
";
        let got = check(
            "shop/cart.py",
            [before, &culprit, current],
            &[],
            "\
class Cart:
    def __init__(self, items=None):
        self.items = list(items or [])

    def total(self):
        return sum(self.items)
",
        );
        assert_eq!(got.symbols, ["py:shop.cart.Cart.total"]);
        assert_eq!(
            changed_symbols("shop/cart.py", before, &culprit),
            ["py:shop.cart.Cart.total"]
        );
    }

    #[test]
    fn python_decorator_is_part_of_the_definition() {
        let before = "\
import functools


@functools.lru_cache(maxsize=128)
def rate(region):
    return lookup(region)


def lookup(region):
    return 0.2
";
        let culprit = before.replace("maxsize=128", "maxsize=None");
        let current = culprit.replace("return 0.2", "return 0.25");
        let got = check(
            "rates.py",
            [before, &culprit, &current],
            &[],
            &before.replace("return 0.2", "return 0.25"),
        );
        assert_eq!(got.symbols, ["py:rates.rate"]);
    }

    #[test]
    fn python_class_attribute_and_method_restored_between_its_methods() {
        let before = "\
class Config:
    timeout = 30

    def retries(self):
        return 3

    def backoff(self):
        return 1.5
";
        let culprit = before
            .replace("timeout = 30", "timeout = 3")
            .replace("return 3\n", "return 0\n");
        // Later: `backoff` edited; it must survive the class's restore.
        let current = culprit.replace("return 1.5", "return 2.0");
        let got = check(
            "config.py",
            [before, &culprit, &current],
            &[],
            &before.replace("return 1.5", "return 2.0"),
        );
        assert_eq!(
            got.symbols,
            ["py:config.Config", "py:config.Config.retries"]
        );
        // The class's own text was not edited after the culprit.
        assert!(got.notes.is_empty(), "{got:#?}");
    }

    #[test]
    fn class_whose_methods_changed_since_is_left_to_a_person() {
        let before = "\
class Config:
    timeout = 30

    def retries(self):
        return 3
";
        let culprit = before.replace("timeout = 30", "timeout = 3");
        let current = format!("{culprit}\n    def backoff(self):\n        return 1.5\n");
        let file = FileVersions {
            path: "config.py",
            before,
            culprit: &culprit,
            current: &current,
        };
        let got = restore_symbols(&file, None).expect("reported");
        assert!(!got.changes_file());
        assert_eq!(got.content, current);
        assert_eq!(reasons(&got), [("py:config.Config", REBUILT)]);
    }

    #[test]
    fn rust_fn_with_attribute_and_impl_method() {
        let before = "\
/// Adds two numbers.
#[inline]
pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

pub struct Cart {
    items: Vec<i64>,
}

impl Cart {
    pub fn new() -> Self {
        Cart { items: Vec::new() }
    }

    /// The sum of the items.
    pub fn total(&self) -> i64 {
        self.items.iter().sum()
    }
}
";
        let culprit = before
            .replace("#[inline]\n", "#[inline(never)]\n")
            .replace("a + b", "a + b + 1")
            .replace("self.items.iter().sum()", "self.items.iter().skip(1).sum()");
        let current = culprit
            .replace("Cart { items: Vec::new() }", "Cart { items: vec![] }")
            .replace("pub struct Cart", "#[derive(Default)]\npub struct Cart");
        let want = before
            .replace("Cart { items: Vec::new() }", "Cart { items: vec![] }")
            .replace("pub struct Cart", "#[derive(Default)]\npub struct Cart");
        let got = check("src/lib.rs", [before, &culprit, &current], &[], &want);
        assert_eq!(got.symbols, ["rs:crate::add", "rs:crate::Cart::total"]);
    }

    #[test]
    fn javascript_function_and_exported_arrow() {
        let before = "\
/** Adds. */
function add(a, b) {
  return a + b;
}

export const mul = (a, b) => a * b;

export function sub(a, b) {
  return a - b;
}
";
        let culprit = before
            .replace("return a + b;", "return a + b + 0.1;")
            .replace("a * b;", "a * b * 1;");
        let current = culprit.replace("return a - b;", "return b - a;");
        let got = check(
            "src/math.js",
            [before, &culprit, &current],
            &[],
            &before.replace("return a - b;", "return b - a;"),
        );
        assert_eq!(got.symbols, ["js:src/math#add", "js:src/math#mul"]);
    }

    #[test]
    fn go_func_and_method() {
        let before = "\
package store

// Store keeps values.
type Store struct {
	m map[string]int
}

// Get returns a value.
func (s *Store) Get(k string) int {
	return s.m[k]
}

func Size(s *Store) int {
	return len(s.m)
}
";
        let culprit = before
            .replace("return s.m[k]", "return s.m[k] + 1")
            .replace("return len(s.m)", "return len(s.m) - 1");
        let current = culprit.replace("m map[string]int", "m map[string]int\n\tn int");
        let got = check(
            "internal/store/store.go",
            [before, &culprit, &current],
            &[],
            &before.replace("m map[string]int", "m map[string]int\n\tn int"),
        );
        assert_eq!(
            got.symbols,
            ["go:internal/store.Store.Get", "go:internal/store.Size"]
        );
    }

    #[test]
    fn java_method_and_ambiguous_overloads() {
        let before = "\
package com.shop;

public class Cart {
    private int count;

    /** The total. */
    public int total() {
        return count * 2;
    }

    public int add(int n) {
        count += n;
        return count;
    }

    public int add(int n, int m) {
        return add(n + m);
    }
}
";
        let culprit = before
            .replace("return count * 2;", "return count * 3;")
            .replace("return add(n + m);", "return add(n - m);");
        let current = culprit.replace("private int count;", "private int count = 0;");
        let got = check(
            "src/main/java/com/shop/Cart.java",
            [before, &culprit, &current],
            &[],
            &before
                .replace("private int count;", "private int count = 0;")
                .replace("return add(n + m);", "return add(n - m);"),
        );
        assert_eq!(got.symbols, ["java:com.shop.Cart.total"]);
        assert_eq!(got.skipped.len(), 1);
        assert_eq!(got.skipped[0].0, "java:com.shop.Cart.add");
        assert!(got.skipped[0].1.contains("defined 2 times"), "{got:#?}");
    }

    #[test]
    fn helper_added_by_the_culprit_is_kept() {
        let before = "\
def parse(text):
    return text.split(',')
";
        let culprit = "\
def clean(text):
    return text.strip()


def parse(text):
    return clean(text).split(';')
";
        let got = check(
            "io/csv.py",
            [before, culprit, culprit],
            &[],
            "\
def clean(text):
    return text.strip()


def parse(text):
    return text.split(',')
",
        );
        assert_eq!(got.symbols, ["py:io.csv.parse"]);
        assert_eq!(reasons(&got), [("py:io.csv.clean", ADDED)]);
        assert_eq!(
            changed_symbols("io/csv.py", before, culprit),
            ["py:io.csv.parse"]
        );
    }

    #[test]
    fn deleted_definition_is_not_put_back() {
        let before = "\
def a():
    return 1


def b():
    return 2
";
        let culprit = "\
def a():
    return 10
";
        let got = check(
            "m.py",
            [before, culprit, culprit],
            &[],
            "\
def a():
    return 1
",
        );
        assert_eq!(reasons(&got), [("py:m.b", DELETED)]);
    }

    #[test]
    fn filter_limits_the_restore() {
        let before = "\
class Cart:
    def total(self):
        return 1

    def count(self):
        return 2


def helper():
    return 3
";
        let culprit = before
            .replace("return 1", "return 10")
            .replace("return 2", "return 20")
            .replace("return 3", "return 30");
        let files = [before, culprit.as_str(), culprit.as_str()];
        let only_total = check(
            "cart.py",
            files,
            &["Cart.total"],
            &culprit.replace("return 10", "return 1"),
        );
        assert_eq!(only_total.symbols, ["py:cart.Cart.total"]);
        let by_full_name = check(
            "cart.py",
            files,
            &["py:cart.helper"],
            &culprit.replace("return 30", "return 3"),
        );
        assert_eq!(by_full_name.symbols, ["py:cart.helper"]);
        // A class names its methods.
        let by_class = check(
            "cart.py",
            files,
            &["Cart"],
            &before.replace("return 3", "return 30"),
        );
        assert_eq!(
            by_class.symbols,
            ["py:cart.Cart.total", "py:cart.Cart.count"]
        );
        // Only at a boundary: `otal` is not `total`.
        let file = FileVersions {
            path: "cart.py",
            before,
            culprit: &culprit,
            current: &culprit,
        };
        let only: BTreeSet<String> = ["otal".to_string()].into();
        assert_eq!(restore_symbols(&file, Some(&only)), None);
    }

    #[test]
    fn names_match_whole_or_at_a_boundary() {
        assert!(name_matches(
            "py:pkg.mod.Class.method",
            "py:pkg.mod.Class.method"
        ));
        assert!(name_matches("py:pkg.mod.Class.method", "Class.method"));
        assert!(name_matches("py:pkg.mod.Class.method", "method"));
        assert!(name_matches("rs:crate::Cart::total", "Cart::total"));
        assert!(name_matches("js:src/math#add", "add"));
        assert!(name_matches("py:add", "add"));
        assert!(!name_matches("py:pkg.madd", "add"));
        assert!(!name_matches("py:pkg.add", ""));
    }

    #[test]
    fn already_restored_definition_is_skipped() {
        let before = "\
def a():
    return 1


def b():
    return 2
";
        let culprit = before
            .replace("return 1", "return 10")
            .replace("return 2", "return 20");
        // Someone fixed `a` by hand already.
        let current = culprit.replace("return 10", "return 1");
        let got = check("m.py", [before, &culprit, &current], &[], before);
        assert_eq!(got.symbols, ["py:m.b"]);
        assert_eq!(reasons(&got), [("py:m.a", ALREADY)]);

        let file = FileVersions {
            path: "m.py",
            before,
            culprit: &culprit,
            current: before,
        };
        let nothing = restore_symbols(&file, None).expect("reported");
        assert!(!nothing.changes_file());
        assert_eq!(nothing.skipped.len(), 2);
    }

    #[test]
    fn later_edit_to_the_same_function_is_undone_with_a_note() {
        let before = "\
def total(items):
    subtotal = sum(items)
    return subtotal
";
        let culprit = before.replace("sum(items)", "sum(items[1:])");
        let current = culprit.replace("return subtotal", "return round(subtotal, 2)");
        assert_eq!(textual_revert(before, &culprit, &current), None);
        let got = check("calc.py", [before, &culprit, &current], &[], before);
        assert_eq!(got.symbols, ["py:calc.total"]);
        assert_eq!(got.notes.len(), 1);
        assert!(
            got.notes[0].starts_with("py:calc.total: edited again"),
            "{got:#?}"
        );
    }

    #[test]
    fn crlf_line_endings_are_kept() {
        let crlf = |s: &str| s.replace('\n', "\r\n");
        let before = "\
def a(x):
    y = x + 1
    return y


def b():
    return 2
";
        let culprit = before.replace("x + 1", "x - 1");
        let current = culprit.replace("return 2", "return 3");
        let want = before.replace("return 2", "return 3");
        let got = check(
            "w.py",
            [&crlf(before), &crlf(&culprit), &crlf(&current)],
            &[],
            &crlf(&want),
        );
        assert_eq!(got.symbols, ["py:w.a"]);
        assert!(got.notes.is_empty(), "{got:#?}");
        // The file was converted to CRLF after the culprit: restored text follows it.
        let got = check(
            "w.py",
            [before, &culprit, &crlf(&current)],
            &[],
            &crlf(&want),
        );
        assert_eq!(got.symbols, ["py:w.a"]);
        assert!(got.notes.is_empty(), "{got:#?}");
    }

    #[test]
    fn textual_conflict_on_adjacent_lines_is_solved() {
        // `git revert` of the culprit fails here: `Tax`, edited later, sits on
        // the line right under the culprit's change to `Fee`.
        let before = "\
package fees

func Fee(x int) int { return x / 10 }
func Tax(x int) int { return x / 5 }
";
        let culprit = before.replace("x / 10", "x / 100");
        let current = format!(
            "{}\n// Total is fee plus tax.\nfunc Total(x int) int {{ return Fee(x) + Tax(x) }}\n",
            culprit.replace("x / 5", "x * 2 / 10")
        );
        assert_eq!(textual_revert(before, &culprit, &current), None);
        let want = current.replace("x / 100", "x / 10");
        let got = check("fees.go", [before, &culprit, &current], &[], &want);
        assert_eq!(got.symbols, ["go:fees.Fee"]);
        assert!(got.notes.is_empty() && got.skipped.is_empty(), "{got:#?}");
    }

    #[test]
    fn restore_that_breaks_the_syntax_is_dropped() {
        // `a` had a syntax error before the culprit; putting it back would
        // break the current file, which parses.
        let before = "\
def a():
    return (1 +


def b():
    return 2
";
        let culprit = "\
def a():
    return 1


def b():
    return 20
";
        let got = check(
            "s.py",
            [before, culprit, culprit],
            &[],
            "\
def a():
    return 1


def b():
    return 2
",
        );
        assert_eq!(got.symbols, ["py:s.b"]);
        assert_eq!(got.skipped.len(), 1, "{got:#?}");
        assert_eq!(got.skipped[0].0, "py:s.a");
        assert!(got.skipped[0].1.contains("syntax errors"), "{got:#?}");
    }

    #[test]
    fn nested_function_is_the_unit() {
        let before = "\
def outer(xs):
    def key(x):
        return x.price

    return sorted(xs, key=key)
";
        let culprit = before.replace("x.price", "-x.price");
        assert_eq!(
            changed_symbols("n.py", before, &culprit),
            ["py:n.outer.key"]
        );
        let current = culprit.replace("sorted(xs, key=key)", "sorted(list(xs), key=key)");
        let got = check(
            "n.py",
            [before, &culprit, &current],
            &[],
            &before.replace("sorted(xs, key=key)", "sorted(list(xs), key=key)"),
        );
        assert_eq!(got.symbols, ["py:n.outer.key"]);

        // The culprit changed `outer` itself too, and later a second nested
        // function was added, so `outer`'s nested definitions no longer pair
        // up: it is restored whole, `key` with it, and the reviewer is told.
        let culprit = culprit.replace("sorted(xs, key=key)", "sorted(xs, key=key)[1:]");
        let current = culprit.replace(
            "    return sorted",
            "    def unused(x):\n        return x\n\n    return sorted",
        );
        let got = check("n.py", [before, &culprit, &current], &[], before);
        assert_eq!(got.symbols, ["py:n.outer", "py:n.outer.key"]);
        assert_eq!(got.notes.len(), 1, "{got:#?}");
    }

    #[test]
    fn nothing_to_restore() {
        let same = FileVersions {
            path: "m.py",
            before: "def a():\n    return 1\n",
            culprit: "def a():\n    return 1\n\nX = 2\n",
            current: "def a():\n    return 1\n",
        };
        assert_eq!(restore_symbols(&same, None), None);
        let unknown = FileVersions {
            path: "notes.txt",
            before: "a",
            culprit: "b",
            current: "b",
        };
        assert_eq!(restore_symbols(&unknown, None), None);
        assert!(changed_symbols("notes.txt", "a", "b").is_empty());
    }
}
