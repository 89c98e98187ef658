//! Offline repair templates: candidate fixes for the suspect functions of a
//! failure, made by program-repair operators on the tree-sitter tree (never
//! on text), ranked by the suspect's score, the operator's prior and how
//! close the edit is to a line the failure names. No IO: the engine reads
//! the files, screens the candidates with the failing test and proves the
//! best under the verification contract.
//!
//! Operators (see [`Operator`]): comparison, arithmetic and boolean operator
//! swaps, off-by-one on integer literals, slice bounds and range ends,
//! condition negation, argument swaps, same-scope identifier swaps and null
//! guards before an access the error names — in every language the index
//! parses (Python, JavaScript/TypeScript, Go, Rust, Java), except the null
//! guard in Rust, which has no null. Python also gets the guards its errors
//! ask for (a range check for an `IndexError`, an initialised local for an
//! `UnboundLocalError`) and calls wrapped or unwrapped (`list()` around an
//! iterator read twice, an operand converted like its sibling, a conversion
//! builtin removed).

mod bounds;
mod culprit;
mod edits;
mod error_guards;
mod grammar;
mod guard;
mod nulls;
mod operator;
mod scope;
mod wrap;

pub use culprit::CulpritHunk;
pub use edits::edit_distance;
pub use guard::none_attributes;
pub use operator::Operator;

use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use tracelab_domain::Language;

/// A suspect function to repair: a file's content at the bad revision and
/// the function's lines in it.
#[derive(Debug, Clone)]
pub struct Target<'a> {
    pub path: &'a str,
    pub source: &'a str,
    pub symbol: &'a str,
    /// 1-based, inclusive.
    pub start_line: u32,
    pub end_line: u32,
    /// The suspect's score (any positive scale; normalised over targets).
    pub score: f64,
    /// Lines of this file that the failure's frames name.
    pub hot_lines: &'a [u32],
}

/// A candidate fix: one edit of one file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub operator: Operator,
    pub path: String,
    pub symbol: String,
    /// 1-based line of the edit.
    pub line: u32,
    pub description: String,
    /// Bytes removed plus bytes inserted: the size the arbiter prefers small.
    pub edit_size: usize,
    /// Suspect score × operator prior × locality; higher is tried first.
    pub rank: f64,
    /// The whole file after the edit.
    #[serde(skip)]
    pub content: String,
}

/// Candidates for `targets`, best first, at most `limit`, each parsing
/// without errors and each a different file content. `failure` is the
/// failing output (its error names attributes for the None guards).
pub fn propose(targets: &[Target<'_>], failure: &str, limit: usize) -> Vec<Candidate> {
    propose_with_culprit(targets, failure, &[], limit)
}

/// [`propose`] with the culprit commit's hunks, when a search named one:
/// its changed lines undone one at a time inside the targets
/// ([`Operator::RestoreCulpritLine`], [`Operator::DeleteCulpritLine`]) join
/// the operators' edits, ranked by the same rule.
pub fn propose_with_culprit(
    targets: &[Target<'_>],
    failure: &str,
    culprit: &[CulpritHunk],
    limit: usize,
) -> Vec<Candidate> {
    let top = targets.iter().map(|t| t.score).fold(0.0_f64, f64::max);
    let mut ranked: Vec<(Candidate, usize, usize)> = Vec::new();
    for (index, target) in targets.iter().enumerate() {
        let Some(language) = Language::from_path(target.path) else {
            continue;
        };
        let weight = if top > 0.0 { target.score / top } else { 1.0 };
        let mut edits = culprit::edits(target, culprit);
        edits.extend(target_edits(target, language, failure));
        for edit in edits {
            let rank = weight * edit.operator.prior() * locality(target, edit.line);
            let removed = edit.end - edit.start;
            let mut content = String::with_capacity(target.source.len() + edit.replacement.len());
            content.push_str(&target.source[..edit.start]);
            content.push_str(&edit.replacement);
            content.push_str(&target.source[edit.end..]);
            ranked.push((
                Candidate {
                    operator: edit.operator,
                    path: target.path.to_string(),
                    symbol: target.symbol.to_string(),
                    line: edit.line,
                    description: edit.description,
                    edit_size: removed + edit.replacement.len(),
                    rank,
                    content,
                },
                index,
                edit.start,
            ));
        }
    }
    ranked.sort_by(|(a, ai, astart), (b, bi, bstart)| {
        b.rank
            .total_cmp(&a.rank)
            .then(a.edit_size.cmp(&b.edit_size))
            .then(ai.cmp(bi))
            .then(astart.cmp(bstart))
            .then(a.description.cmp(&b.description))
    });
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (candidate, _, _) in ranked {
        if out.len() >= limit {
            break;
        }
        if !seen.insert((candidate.path.clone(), candidate.content.clone())) {
            continue;
        }
        if parses_cleanly(&candidate.path, &candidate.content) {
            out.push(candidate);
        }
    }
    out
}

/// Edits inside the target's function, or none when it cannot be found.
fn target_edits(target: &Target<'_>, language: Language, failure: &str) -> Vec<edits::Edit> {
    let Some(kinds) = grammar::kinds(language) else {
        return Vec::new();
    };
    let Some(tree) = tracelab_syntax::parse(language, target.path, target.source) else {
        return Vec::new();
    };
    let Some((start, end)) = line_bytes(target.source, target.start_line, target.end_line) else {
        return Vec::new();
    };
    let root = tree.root_node();
    let Some(mut function) = root.named_descendant_for_byte_range(start, end) else {
        return Vec::new();
    };
    if function.id() == root.id() && root.byte_range() != (0..target.source.len()) {
        return Vec::new();
    }
    if function.kind() == "decorated_definition"
        && let Some(definition) = function.child_by_field_name("definition")
    {
        function = definition;
    }
    let walk = edits::Walk {
        source: target.source,
        language,
        kinds,
        failure,
        hot_lines: target.hot_lines,
    };
    walk.function(function)
}

/// Byte range of lines `first..=last` (1-based), trimmed of surrounding
/// whitespace so the smallest enclosing node is the definition itself.
fn line_bytes(source: &str, first: u32, last: u32) -> Option<(usize, usize)> {
    let first = first.max(1) as usize;
    let last = (last as usize).max(first);
    let mut starts = vec![0];
    starts.extend(source.match_indices('\n').map(|(i, _)| i + 1));
    let start = *starts.get(first - 1)?;
    let end = starts.get(last).map_or(source.len(), |e| *e);
    let slice = &source[start..end];
    let lead = slice.len() - slice.trim_start().len();
    let trail = slice.len() - slice.trim_end().len();
    (start + lead < end - trail).then_some((start + lead, end - trail))
}

/// 3 on a line the failure names, more the closer to one inside the
/// function, 1 when the failure names no line in it.
fn locality(target: &Target<'_>, line: u32) -> f64 {
    let inside = target
        .hot_lines
        .iter()
        .filter(|l| (target.start_line..=target.end_line).contains(l));
    match inside.map(|l| l.abs_diff(line)).min() {
        Some(0) => 3.0,
        Some(d) => 1.0 + 1.0 / (1.0 + f64::from(d)),
        None => 1.0,
    }
}

fn parses_cleanly(path: &str, content: &str) -> bool {
    let Some(language) = Language::from_path(path) else {
        return false;
    };
    tracelab_syntax::parse(language, path, content).is_some_and(|t| !t.root_node().has_error())
}

#[cfg(test)]
mod tests;
