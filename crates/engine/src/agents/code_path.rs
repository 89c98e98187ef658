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
    suspects_for(ctx, classification.baseline_output.clone(), None).await
}

/// [`suspects`] once a search has named `culprit`: the index reads the
/// history from the culprit's parent on (the last revision known good),
/// not the newest 100 commits — the commits before it cannot have brought
/// the failure, and reading their history is most of the index's time.
pub async fn suspects_after_culprit(
    ctx: &Context,
    classification: &Classification,
    culprit: &str,
) -> Result<Vec<Suspect>, String> {
    let parent = ctx
        .pool
        .workspace()
        .git()
        .run(&["rev-parse", "--verify", "--quiet", &format!("{culprit}^")])
        .await
        .ok()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty());
    suspects_for(ctx, classification.baseline_output.clone(), parent).await
}

/// The suspects for the first failing run's output (the fleet starts this
/// at the first failure, beside the culprit search); `since`, a revision
/// whose history is left out.
pub async fn suspects_for(
    ctx: &Context,
    output: Option<String>,
    since: Option<String>,
) -> Result<Vec<Suspect>, String> {
    let Some(output) = output else {
        return Ok(Vec::new());
    };
    // Frames name files in a probe worktree (`<root>/probe-0/app.py`); the
    // index maps them to repository files by their longest matching suffix.
    let repo = ctx.pool.workspace().git().path().to_path_buf();
    let bad = ctx.bad.clone();
    ctx.progress
        .report("code-path: locating the failure in the code");
    let started = std::time::Instant::now();
    // At a lower priority: beside the verification's (or the search's) test
    // runs it takes the cores they leave idle (`crate::background`).
    let located = crate::background::run("code-index", move || {
        // A private cache: investigations of one repository may run at once,
        // and the index's cache expects one writer per process.
        let cache = tempfile::tempdir().map_err(|e| e.to_string())?;
        let options = LocateOptions {
            rev: Some(bad),
            top: TOP,
            cache_dir: Some(cache.path().to_path_buf()),
            since_rev: since,
            // Only the suspects are read, and tests are not among them.
            test_history: false,
            ..LocateOptions::default()
        };
        locate(&repo, &output, &options).map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| format!("code-path agent stopped: {e}"))?
    .map_err(|e| format!("code-path agent could not read the repository: {e}"))?;
    tracing::debug!(
        ms = started.elapsed().as_millis() as u64,
        symbols = located.symbols.len(),
        "code-path suspects located"
    );
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
