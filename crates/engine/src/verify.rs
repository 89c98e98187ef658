//! Verification of fix hypotheses under the four-part contract, each in its
//! own worktree on branch `ai-debug/{ISSUE_ID}-h{N}`.

use crate::agents::test_behaviour::{Classification, isolated_command};
use crate::context::Context;
use crate::git::Worktree;
use crate::pool::PoolRun;
use crate::probe::{Judged, batch_experiment, judge};
use std::collections::BTreeSet;
use tracelab_domain::contract::judge_fix;
use tracelab_domain::experiment::{Experiment, Outcome, Step};
use tracelab_domain::hypothesis::{AgentKind, Hypothesis, HypothesisKind, HypothesisStatus};
use tracelab_domain::ids::{HypothesisId, hypothesis_branch};
use tracelab_domain::patch;
use tracelab_domain::ports::{CommandSpec, Sandbox};
use tracelab_domain::runner;
use tracelab_domain::signature::{FailureSignature, files_in_output};
use tracelab_domain::{Error, Result};

/// Repository-relative files named in the failing output, whatever worktree produced it.
fn failing_files(output: &str, workspace_root: &std::path::Path) -> BTreeSet<String> {
    let root = workspace_root.to_string_lossy().to_string();
    files_in_output(output)
        .into_iter()
        .map(|f| match f.strip_prefix(&root) {
            // `<root>/probe-N/path` → `path`
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

/// The culprit's reverse hunks restricted to files on the failing path, if
/// that is a proper, non-empty subset of the whole revert.
fn failing_path_patch(reverse: &str, files: &BTreeSet<String>) -> Option<String> {
    let parsed = patch::parse(reverse).ok()?;
    let kept: Vec<_> = parsed
        .iter()
        .filter(|f| files.contains(&f.new_path) || files.contains(&f.old_path))
        .cloned()
        .collect();
    (!kept.is_empty() && kept.len() < parsed.len()).then(|| patch::render(&kept))
}

async fn exec_judged(
    sandbox: &dyn Sandbox,
    spec: &CommandSpec,
    runner: runner::Runner,
    baseline: Option<&FailureSignature>,
) -> Result<Judged> {
    let result = sandbox.exec(spec).await?;
    let (outcome, signature) = judge(&result, runner, baseline);
    Ok(Judged {
        outcome,
        run: PoolRun {
            result,
            sandbox: sandbox.describe(),
        },
        signature,
    })
}

/// Runs `spec` up to `max` times, stopping at the first run with outcome `stop_at`.
async fn runs_until(
    sandbox: &dyn Sandbox,
    spec: &CommandSpec,
    max: u32,
    stop_at: Outcome,
    runner: runner::Runner,
    baseline: Option<&FailureSignature>,
) -> Result<Vec<Judged>> {
    let mut runs = Vec::new();
    for _ in 0..max.max(1) {
        let judged = exec_judged(sandbox, spec, runner, baseline).await?;
        let stop = judged.outcome == stop_at || judged.outcome == Outcome::Blocked;
        runs.push(judged);
        if stop {
            break;
        }
    }
    Ok(runs)
}

/// Everything a revert verification needs to know.
pub struct RevertPlan<'a> {
    pub number: u32,
    pub culprit: &'a str,
    pub classification: &'a Classification,
    /// Clean runs after the fix needed to trust it (1 for a deterministic failure).
    pub passes_needed: u32,
}

/// Builds, applies and verifies the revert hypothesis for `plan.culprit`.
/// Attempt 1 reverts only the hunks on the failing path; if that is not
/// verified, attempt 2 reverts the whole commit.
pub async fn verify_revert(ctx: &Context, plan: RevertPlan<'_>) -> Result<Hypothesis> {
    let git = ctx.pool.workspace().git().clone();
    let info = git.commit_info(plan.culprit).await?;
    let number = plan.number;
    let branch = hypothesis_branch(&ctx.issue_id, number);
    let mut h = Hypothesis::new(
        HypothesisId::new(&ctx.id, number),
        number,
        AgentKind::GitHistory,
        HypothesisKind::Revert,
        format!(
            "commit {} \"{}\" introduced the failure; reverting it fixes it",
            &info.commit[..12.min(info.commit.len())],
            info.summary
        ),
    );
    h.culprit = Some(info.clone());
    h.branch = Some(branch.clone());

    let reverse = git.reverse_diff(plan.culprit).await?;
    let files = plan
        .classification
        .baseline_output
        .as_deref()
        .map(|o| failing_files(o, ctx.pool.workspace().root()))
        .unwrap_or_default();
    let mut attempts: Vec<Option<String>> = Vec::new();
    if let Some(partial) = failing_path_patch(&reverse, &files) {
        attempts.push(Some(partial));
    }
    attempts.push(None); // the whole commit, via `git revert`

    let worktree = ctx
        .pool
        .workspace()
        .on_branch(&format!("h{number}"), &ctx.bad, &branch)
        .await?;
    let sandbox = ctx
        .pool
        .provider()
        .open(&worktree.path, &format!("{}-h{number}", ctx.id))
        .await?;
    let mut earlier = Vec::new();
    let result = async {
        for (attempt, partial) in attempts.iter().enumerate() {
            if attempt > 0 {
                worktree_reset(&worktree, &ctx.bad).await?;
            }
            let (experiments, patch_text) =
                run_contract(ctx, &plan, &worktree, sandbox.as_ref(), partial.as_deref()).await?;
            let judgement = judge_fix(&experiments, plan.passes_needed);
            let scope = if partial.is_some() {
                "failing-path hunks"
            } else {
                "whole commit"
            };
            h.experiments = experiments;
            h.patch = patch_text;
            h.status = judgement.status;
            h.status_reason = if earlier.is_empty() {
                format!("{} ({scope})", judgement.reason)
            } else {
                format!(
                    "{} ({scope}; earlier attempt: {})",
                    judgement.reason,
                    earlier.join("; ")
                )
            };
            if judgement.status == HypothesisStatus::Verified || attempt + 1 == attempts.len() {
                break;
            }
            earlier.push(format!(
                "{scope} {}: {}",
                judgement.status.as_str(),
                judgement.reason
            ));
        }
        Ok::<(), Error>(())
    }
    .await;
    let _ = sandbox.close().await;
    if let Err(e) = result {
        h.status = HypothesisStatus::Blocked;
        h.status_reason = e.message;
    }
    Ok(h)
}

async fn worktree_reset(worktree: &Worktree, rev: &str) -> Result<()> {
    crate::git::run_git(&worktree.path, &["reset", "-q", "--hard", rev]).await?;
    crate::git::run_git(&worktree.path, &["clean", "-q", "-ffdx"]).await?;
    Ok(())
}

/// Runs the four steps in the hypothesis worktree; returns the experiments and the patch.
async fn run_contract(
    ctx: &Context,
    plan: &RevertPlan<'_>,
    worktree: &Worktree,
    sandbox: &dyn Sandbox,
    partial: Option<&str>,
) -> Result<(Vec<Experiment>, Option<String>)> {
    let keep = ctx.config.stored_output_limit;
    let baseline = plan.classification.baseline.as_ref();
    let runner = ctx.test.runner;
    let regression_argv =
        isolated_command(ctx, plan.classification).unwrap_or_else(|| ctx.test.argv.clone());
    let regression_cmd = shell_words::join(&regression_argv);
    let regression = ctx.spec(&regression_argv, &[]);
    let mut experiments = vec![plan.classification.experiment.clone()];

    // 2. The regression test fails before the fix.
    let before = runs_until(
        sandbox,
        &regression,
        plan.passes_needed,
        Outcome::Fail,
        runner,
        baseline,
    )
    .await?;
    experiments.extend(batch_experiment(
        Step::RegressionBefore,
        &regression_cmd,
        &ctx.bad,
        &before,
        keep,
        None,
    ));

    // The fix, checked against the patch rules, committed on the hypothesis branch.
    let applied = match partial {
        Some(p) => {
            patch::validate(&patch::parse(p)?)?;
            worktree.apply(p).await
        }
        None => {
            let is_merge = ctx
                .pool
                .workspace()
                .git()
                .parents(plan.culprit)
                .await?
                .len()
                > 1;
            worktree.revert_no_commit(plan.culprit, is_merge).await
        }
    };
    if let Err(e) = applied {
        experiments.push(blocked(
            Step::RegressionAfter,
            &regression_cmd,
            &ctx.bad,
            sandbox,
            &e.message,
        ));
        return Ok((experiments, None));
    }
    let diff = crate::git::run_git(
        &worktree.path,
        &["diff", "--cached", "--binary", "--no-color", "HEAD"],
    )
    .await?;
    if let Err(e) = patch::parse(&diff).and_then(|files| patch::validate(&files)) {
        experiments.push(blocked(
            Step::RegressionAfter,
            &regression_cmd,
            &ctx.bad,
            sandbox,
            &e.message,
        ));
        return Ok((experiments, None));
    }
    let short = &plan.culprit[..plan.culprit.len().min(12)];
    let fixed = worktree
        .commit_all(&format!(
            "Revert {short} (TraceLab hypothesis {})\n\nProposed by TraceLab; not merged.",
            plan.number
        ))
        .await?;
    let patch_text = worktree.diff_from(&ctx.bad).await?;

    // 3. The regression test passes after the fix (enough times for a flaky failure).
    let after = runs_until(
        sandbox,
        &regression,
        plan.passes_needed,
        Outcome::Fail,
        runner,
        baseline,
    )
    .await?;
    experiments.extend(batch_experiment(
        Step::RegressionAfter,
        &regression_cmd,
        &fixed,
        &after,
        keep,
        None,
    ));

    // 4. The relevant existing tests pass after the fix: the whole test command,
    // allowing failures that already happened at the bad revision.
    let suite = exec_judged(sandbox, &ctx.test_spec(), runner, baseline).await?;
    let mut existing = crate::probe::experiment(
        Step::ExistingTests,
        &ctx.test.display(),
        &fixed,
        &suite,
        keep,
    );
    if suite.outcome == Outcome::FailedDifferently {
        let before: BTreeSet<String> = baseline
            .map(|b| b.failing_tests.clone())
            .unwrap_or_default();
        let after: BTreeSet<String> = runner::failing_tests(runner, &suite.run.result.output)
            .into_iter()
            .collect();
        if !after.is_empty() && after.is_subset(&before) {
            existing.outcome = Outcome::Pass;
            existing.note = Some(format!(
                "only failures that already happened before the fix remain: {}",
                after.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    experiments.push(existing);
    Ok((experiments, Some(patch_text)))
}

fn blocked(
    step: Step,
    command: &str,
    revision: &str,
    sandbox: &dyn Sandbox,
    reason: &str,
) -> Experiment {
    Experiment {
        step,
        command: command.to_string(),
        revision: revision.to_string(),
        exit_code: None,
        duration_ms: 0,
        outcome: Outcome::Blocked,
        output: String::new(),
        sandbox: sandbox.describe(),
        note: Some(reason.to_string()),
        counts: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failing_files_are_made_relative_to_the_worktree() {
        let root = std::path::Path::new("/tmp/tracelab-x-abc");
        let out = "  File \"/tmp/tracelab-x-abc/probe-3/app/calc.py\", line 3, in add\n  File \"test_app.py\", line 1\n";
        let files = failing_files(out, root);
        assert_eq!(
            files.into_iter().collect::<Vec<_>>(),
            vec!["app/calc.py", "test_app.py"]
        );
    }

    #[test]
    fn failing_path_patch_keeps_only_touched_files() {
        let reverse = "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-a\n+b\ndiff --git a/NOTES b/NOTES\n--- a/NOTES\n+++ b/NOTES\n@@ -1 +1 @@\n-c\n+d\n";
        let files: BTreeSet<String> = ["app.py".to_string()].into();
        let partial = failing_path_patch(reverse, &files).unwrap();
        assert!(partial.contains("app.py") && !partial.contains("NOTES"));
        let all: BTreeSet<String> = ["app.py".to_string(), "NOTES".to_string()].into();
        assert!(failing_path_patch(reverse, &all).is_none());
    }
}
