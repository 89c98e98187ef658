//! The oracle of one investigation (DESIGN.md, "The oracle is fixed"): the
//! files that judge the failure — the failing test's files as they are at
//! the bad revision. The search lays them over every probe's source, and no
//! fix may change them or any other test file
//! ([`tracelab_domain::oracle`] has the rules).

use crate::classification::Classification;
use crate::context::Context;
use std::collections::BTreeSet;
use std::path::Path;
use tracelab_domain::Result;
use tracelab_domain::oracle::failing_test_files;
use tracelab_domain::runner::Runner;
use tracelab_domain::signature::FailureSignature;
use tracelab_evidence::test_run::TestRun;

/// `output` with the workspace's worktree folders (`<root>/<slot>/`) taken
/// out of its paths, so what it names are repository files whatever
/// worktree ran the command.
pub fn relative_to_worktrees(output: &str, workspace_root: &Path) -> String {
    let root = format!(
        "{}/",
        workspace_root.to_string_lossy().trim_end_matches('/')
    );
    let mut out = String::with_capacity(output.len());
    let mut rest = output;
    while let Some(i) = rest.find(&root) {
        out.push_str(&rest[..i]);
        let after = &rest[i + root.len()..];
        match after.find('/') {
            Some(slot) if !after[..slot].contains(char::is_whitespace) => {
                rest = &after[slot + 1..];
            }
            _ => {
                out.push_str(&root);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Repository-relative files the frames of a failing output name, whatever
/// worktree produced it (`<workspace>/probe-N/path` → `path`), read by the
/// evidence parsers; library and toolchain files left out.
pub fn output_files(output: &str, workspace_root: &Path) -> BTreeSet<String> {
    let relative = relative_to_worktrees(output, workspace_root);
    TestRun::read(Runner::Unknown, &relative)
        .frames()
        .into_iter()
        .filter(|f| f.in_app)
        .filter_map(|f| f.file)
        .map(|f| f.trim_start_matches("./").to_string())
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
        let out = "Traceback (most recent call last):\n  File \"/tmp/tracelab-x-abc/probe-3/test_app.py\", line 9, in <module>\n    assert add(2, 2) == 4\n  File \"/tmp/tracelab-x-abc/probe-3/app/calc.py\", line 3, in add\n    return a - b\n  File \"/usr/lib/python3.11/functools.py\", line 1, in wrapper\nAssertionError\n";
        let files = output_files(out, root);
        assert_eq!(
            files.into_iter().collect::<Vec<_>>(),
            vec!["app/calc.py", "test_app.py"]
        );
    }

    #[test]
    fn only_worktree_folders_are_taken_out() {
        let root = std::path::Path::new("/tmp/w");
        assert_eq!(
            relative_to_worktrees(
                "at /tmp/w/probe-0/src/a.rs:3 and /tmp/w/ x and /tmp/wx/a",
                root
            ),
            "at src/a.rs:3 and /tmp/w/ x and /tmp/wx/a"
        );
    }
}
