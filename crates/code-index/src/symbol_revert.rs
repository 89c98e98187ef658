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

mod span;
#[cfg(test)]
mod tests;
mod version;

use crate::lang::Language;
use serde::{Deserialize, Serialize};
use span::syntax_errors;
use std::collections::{BTreeSet, HashSet};
use std::ops::Range;
use version::{Def, Version};

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
