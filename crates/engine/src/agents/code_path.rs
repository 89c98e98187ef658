//! The code-path agent: where to look in the code at the bad revision. It
//! feeds the first failing run's output to the code index (stack frames →
//! symbols → call-graph neighbourhood, BM25 and history, see
//! `tracelab_code_index::locate`) and reports the best functions with the
//! score components that put them there. Without an LLM it proposes no
//! patch, so its suspects guide the reviewer and never compete with
//! verified hypotheses. A repository the index cannot read is a note, not a
//! failed investigation.

use crate::agents::test_behaviour::Classification;
use crate::context::Context;
use tracelab_code_index::{LocateOptions, locate};
use tracelab_domain::report::Suspect;

/// Suspects reported per investigation.
pub const TOP: usize = 5;

/// The suspects for the classified failure, or a note saying why there are none.
pub async fn suspects(
    ctx: &Context,
    classification: &Classification,
) -> Result<Vec<Suspect>, String> {
    let Some(output) = classification.baseline_output.clone() else {
        return Ok(Vec::new());
    };
    let workspace = ctx.pool.workspace();
    let output = relative_to_worktrees(&output, &workspace.root().to_string_lossy());
    let repo = workspace.git().path().to_path_buf();
    let bad = ctx.bad.clone();
    ctx.progress
        .report("code-path: locating the failure in the code");
    let located = tokio::task::spawn_blocking(move || {
        // A private cache: investigations of one repository may run at once,
        // and the index's cache expects one writer per process.
        let cache = tempfile::tempdir().map_err(|e| e.to_string())?;
        let options = LocateOptions {
            rev: Some(bad),
            top: TOP,
            cache_dir: Some(cache.path().to_path_buf()),
            ..LocateOptions::default()
        };
        locate(&repo, &output, &options).map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| format!("code-path agent stopped: {e}"))?
    .map_err(|e| format!("code-path agent could not read the repository: {e}"))?;
    Ok(located
        .symbols
        .into_iter()
        .map(|s| Suspect {
            symbol: s.symbol,
            path: s.path,
            start_line: s.start_line,
            end_line: s.end_line,
            score: s.score,
            reasons: s
                .reasons
                .iter()
                .filter(|r| r.contribution > 0.0)
                .map(|r| {
                    let component = serde_json::to_value(r.component)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default();
                    format!("{component} {:.2}: {}", r.value, r.detail)
                })
                .collect(),
        })
        .collect())
}

/// The run happened in a probe worktree (`<root>/<probe>/…`); its paths are
/// made repository-relative so they name the repository's files.
fn relative_to_worktrees(output: &str, root: &str) -> String {
    let prefix = format!("{}/", root.trim_end_matches('/'));
    let mut out = String::with_capacity(output.len());
    let mut rest = output;
    while let Some(at) = rest.find(&prefix) {
        out.push_str(&rest[..at]);
        let after = &rest[at + prefix.len()..];
        // Skip the worktree's own folder name.
        rest = after.find('/').map_or(after, |slash| &after[slash + 1..]);
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::relative_to_worktrees;

    #[test]
    fn worktree_paths_become_repository_relative() {
        let output = "  File \"/tmp/tl-x/probe-0/pkg/a.py\", line 3\n  File \"/usr/lib/python3/x.py\"\n/tmp/tl-x/probe-12/b.py:4";
        assert_eq!(
            relative_to_worktrees(output, "/tmp/tl-x"),
            "  File \"pkg/a.py\", line 3\n  File \"/usr/lib/python3/x.py\"\nb.py:4"
        );
    }
}
