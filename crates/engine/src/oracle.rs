//! The oracle of one investigation (DESIGN.md, "The oracle is fixed"): the
//! files that judge the failure — the failing test's files as they are at
//! the bad revision. The search lays them over every probe's source, and no
//! fix may change them or any other test file
//! ([`tracelab_domain::oracle`] has the rules).

use crate::agents::test_behaviour::Classification;
use crate::context::Context;
use std::collections::BTreeSet;
use std::path::Path;
use tracelab_domain::Result;
use tracelab_domain::oracle::failing_test_files;
use tracelab_domain::signature::{FailureSignature, files_in_output};

/// Test files to lay over a probe's checkout: their content at `rev`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Overlay {
    pub rev: String,
    pub files: Vec<String>,
}

/// Repository-relative files named in a failing output, whatever worktree
/// produced it (`<workspace>/probe-N/path` → `path`).
pub fn output_files(output: &str, workspace_root: &Path) -> BTreeSet<String> {
    let root = workspace_root.to_string_lossy().to_string();
    files_in_output(output)
        .into_iter()
        .map(|f| match f.strip_prefix(&root) {
            Some(rest) => rest
                .trim_start_matches('/')
                .split_once('/')
                .map(|(_, p)| p.to_string())
                .unwrap_or_default(),
            None => f,
        })
        .filter(|f| !f.is_empty() && !f.starts_with('/'))
        .collect()
}

/// The failing test's files that exist at the bad revision.
pub async fn judges(ctx: &Context, classification: &Classification) -> Result<Vec<String>> {
    judges_of(
        ctx,
        classification.baseline.as_ref(),
        classification.baseline_output.as_deref(),
    )
    .await
}

/// [`judges`] from the first failure and its output.
pub async fn judges_of(
    ctx: &Context,
    baseline: Option<&FailureSignature>,
    output: Option<&str>,
) -> Result<Vec<String>> {
    let seen = output
        .map(|o| output_files(o, ctx.pool.workspace().root()))
        .unwrap_or_default();
    let candidates: Vec<String> =
        failing_test_files(ctx.test.runner, &ctx.test.argv, baseline, &seen)
            .into_iter()
            .collect();
    ctx.pool
        .workspace()
        .git()
        .existing_files(&ctx.bad, &candidates)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_files_are_made_relative_to_the_worktree() {
        let root = std::path::Path::new("/tmp/tracelab-x-abc");
        let out = "  File \"/tmp/tracelab-x-abc/probe-3/app/calc.py\", line 3, in add\n  File \"test_app.py\", line 1\n";
        let files = output_files(out, root);
        assert_eq!(
            files.into_iter().collect::<Vec<_>>(),
            vec!["app/calc.py", "test_app.py"]
        );
    }
}
