//! The suspects' call neighbourhood for the prompt, from the code index:
//! who calls each suspect function (with the calling line) and what it
//! calls (with the callee's first lines). A model that sees only the
//! suspect's body guesses at its contract; its callers show how the result
//! is used and its callees what the helpers it relies on do. Built from
//! the call graph `tracelab_code_index` resolves at the bad revision (the
//! same index the code-path agent ranks suspects with), never from text
//! search, so a name that merely occurs in a comment is not a caller.
//! Test code is left out: the failing output already shows the test, and
//! the budget is better spent on source.

use super::budget::Bounded;
use crate::context::Context;
use std::collections::BTreeMap;
use tracelab_code_index::callgraph::{Neighbour, neighbourhood};
use tracelab_code_index::indexer::{Indexer, open_repo};
use tracelab_domain::oracle::is_test_path;
use tracelab_domain::report::Suspect;

/// Bytes of the section at most.
pub(super) const BYTES: usize = 6000;
/// Callers and callees listed per suspect at most (nearest first).
const PER_SUSPECT: usize = 6;
/// Lines of a callee shown (its signature and the start of its body).
const CALLEE_LINES: usize = 12;
/// Characters of a calling line shown.
const LINE_CHARS: usize = 200;

/// One suspect's direct callers and callees outside test code.
struct Around {
    symbol: String,
    callers: Vec<Neighbour>,
    callees: Vec<Neighbour>,
}

/// The prompt section, empty when the index knows no caller or callee of
/// any suspect; `Err` with the reason when the index could not read the
/// repository (the caller then falls back to `git grep`).
pub(super) async fn section(
    ctx: &Context,
    shown: &[&Suspect],
) -> std::result::Result<String, String> {
    let repo = ctx.pool.workspace().git().path().to_path_buf();
    let bad = ctx.bad.clone();
    let symbols: Vec<String> = shown.iter().map(|s| s.symbol.clone()).collect();
    let found = tokio::task::spawn_blocking(move || {
        let repository = open_repo(&repo).map_err(|e| e.to_string())?;
        // In memory: the code-path agent's cache is private to its run, and
        // the snapshot is needed once.
        let (snapshot, _) = Indexer::in_memory()
            .index(&repository, Some(&bad))
            .map_err(|e| e.to_string())?;
        let keep = |n: &Neighbour| n.distance == 1 && !is_test_path(&n.path);
        Ok::<_, String>(
            symbols
                .iter()
                .filter_map(|name| snapshot.by_qualified_name(name))
                .map(|s| {
                    let n = neighbourhood(&snapshot, s.id, 1);
                    Around {
                        symbol: n.symbol,
                        callers: n.callers.into_iter().filter(keep).collect(),
                        callees: n.callees.into_iter().filter(keep).collect(),
                    }
                })
                .collect::<Vec<Around>>(),
        )
    })
    .await
    .map_err(|e| format!("the code index stopped: {e}"))??;
    let git = ctx.pool.workspace().git();
    let mut files: BTreeMap<String, Option<Vec<String>>> = BTreeMap::new();
    let mut section = Bounded::new(BYTES);
    for around in &found {
        if around.callers.is_empty() && around.callees.is_empty() {
            continue;
        }
        let mut text = format!("\n### Around `{}`\n", around.symbol);
        if !around.callers.is_empty() {
            text.push_str("Called by:\n");
        }
        for c in around.callers.iter().take(PER_SUSPECT) {
            let line = source_lines(git, &ctx.bad, &mut files, &c.path)
                .await
                .and_then(|lines| lines.get((c.via_line as usize).checked_sub(1)?).cloned())
                .map(|l| l.trim().chars().take(LINE_CHARS).collect::<String>())
                .unwrap_or_default();
            text.push_str(&format!(
                "- `{}` ({}:{}): `{}`\n",
                c.symbol, c.path, c.via_line, line
            ));
        }
        if !around.callees.is_empty() {
            text.push_str("Calls:\n");
        }
        let suspects: Vec<&str> = shown.iter().map(|s| s.symbol.as_str()).collect();
        for c in around.callees.iter().take(PER_SUSPECT) {
            if suspects.contains(&c.symbol.as_str()) {
                text.push_str(&format!("- `{}` ({}, shown above)\n", c.symbol, c.path));
                continue;
            }
            let body = source_lines(git, &ctx.bad, &mut files, &c.path)
                .await
                .map(|lines| {
                    let start = (c.start_line.max(1) as usize - 1).min(lines.len());
                    let end = (c.end_line as usize)
                        .clamp(start, lines.len())
                        .min(start + CALLEE_LINES);
                    lines[start..end].join("\n")
                })
                .unwrap_or_default();
            text.push_str(&format!(
                "- `{}` ({} lines {}-{}):\n```\n{}\n```\n",
                c.symbol, c.path, c.start_line, c.end_line, body
            ));
        }
        section.push(&text);
    }
    if section.is_empty() {
        return Ok(String::new());
    }
    Ok(format!(
        "\n## Their call neighbourhood (from the code index: direct callers with the calling line, callees with their first lines)\n{}",
        section.finish("call neighbourhood")
    ))
}

/// The lines of `path` at `rev`, read once per file.
async fn source_lines<'f>(
    git: &crate::git::Git,
    rev: &str,
    files: &'f mut BTreeMap<String, Option<Vec<String>>>,
    path: &str,
) -> Option<&'f Vec<String>> {
    if !files.contains_key(path) {
        let text = git.show_file(rev, path).await.ok().flatten();
        files.insert(
            path.to_string(),
            text.map(|t| t.lines().map(str::to_string).collect()),
        );
    }
    files.get(path).and_then(Option::as_ref)
}
