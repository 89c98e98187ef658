//! Verification of fix hypotheses under the four-part contract, each in its
//! own worktree on branch `ai-debug/{ISSUE_ID}-h{N}`.

pub use crate::classification::REUSED_REPRODUCTION;

use crate::classification::Classification;
use crate::context::Context;
use crate::git::Worktree;
use crate::oracle;
use crate::pool::PoolRun;
use crate::probe::{Judged, batch_experiment, judge, run_judged};
use std::collections::BTreeSet;
use tracelab_code_index::symbol_revert::{FileVersions, changed_symbols, restore_symbols};
use tracelab_domain::contract::{self, RateOracle, judge_fix};
use tracelab_domain::experiment::{Experiment, Outcome, Step};
use tracelab_domain::hypothesis::{AgentKind, Hypothesis, HypothesisKind, HypothesisStatus};
use tracelab_domain::ids::{HypothesisId, hypothesis_branch};
use tracelab_domain::line_revert;
use tracelab_domain::oracle::split_patch;
use tracelab_domain::patch::{self, FilePatch};
use tracelab_domain::ports::{CommandSpec, Sandbox};
use tracelab_domain::runner;
use tracelab_domain::signature::FailureSignature;
use tracelab_domain::suspicion::test_names_symbol;
use tracelab_domain::{Error, Result};
use tracelab_evidence::test_run::TestRun;

/// One candidate fix for a culprit, in the order they are tried.
#[derive(Debug, Clone, PartialEq)]
enum Fix {
    /// Reverse hunks of the culprit, applied with a 3-way merge.
    Diff { scope: &'static str, text: String },
    /// Definitions the culprit changed, put back as they were before it.
    Symbols {
        files: Vec<(String, String)>,
        symbols: Vec<String>,
        notes: Vec<String>,
    },
    /// A `Diff` that did not apply, placed by the text the culprit wrote
    /// instead of the lines around it ([`line_revert`]).
    Lines {
        of: &'static str,
        files: Vec<(String, String)>,
        notes: Vec<String>,
    },
}

impl Fix {
    fn scope(&self) -> String {
        match self {
            Fix::Diff { scope, .. } => (*scope).to_string(),
            Fix::Symbols { symbols, .. } => {
                format!("symbol-level restore of {}", symbols.join(", "))
            }
            Fix::Lines { of, .. } => format!("{of}, placed by the changed lines"),
        }
    }
}

/// The culprit's reverse hunks restricted to files on the failing path, if
/// that is a proper, non-empty subset of the whole revert.
fn failing_path_patch(reverse: &[FilePatch], files: &BTreeSet<String>) -> Option<String> {
    let kept: Vec<_> = reverse
        .iter()
        .filter(|f| files.contains(&f.new_path) || files.contains(&f.old_path))
        .cloned()
        .collect();
    (!kept.is_empty() && kept.len() < reverse.len()).then(|| patch::render(&kept))
}

/// Whether `name`'s last component (`add` of `py:app.Calc.add`) appears as a
/// word in the failing output: the definition is on the failing path.
fn named_in(output: &str, name: &str) -> bool {
    let last = name
        .rsplit(['.', ':', '#', '/'])
        .find(|p| !p.is_empty())
        .unwrap_or(name);
    if last.len() < 2 {
        return false;
    }
    output.match_indices(last).any(|(i, _)| {
        let word = |c: char| c.is_alphanumeric() || c == '_';
        let before = output[..i].chars().next_back().is_none_or(|c| !word(c));
        let after = output[i + last.len()..]
            .chars()
            .next()
            .is_none_or(|c| !word(c));
        before && after
    })
}

/// A file the culprit changed in place, at the culprit's parent, the
/// culprit and the bad revision (the reverse diff's "new" side is the
/// parent); `None` for a file it created, deleted or renamed, or one missing
/// at any of them.
async fn three_versions(
    git: &crate::git::Git,
    culprit: &str,
    bad: &str,
    f: &FilePatch,
) -> Result<Option<(String, String, String)>> {
    if f.old_path == "/dev/null" || f.new_path == "/dev/null" || f.old_path != f.new_path {
        return Ok(None);
    }
    let path = &f.new_path;
    Ok(
        match (
            git.show_file(&format!("{culprit}^"), path).await?,
            git.show_file(culprit, path).await?,
            git.show_file(bad, path).await?,
        ) {
            (Some(before), Some(at_culprit), Some(current)) => Some((before, at_culprit, current)),
            _ => None,
        },
    )
}

/// Restores, at the bad revision, the definitions the culprit changed in
/// source files — those on the failing path when the output names any,
/// else those the failing tests' names name (`TestCount` names
/// `countValue.Set`: a Go test that fails with `t.Errorf` prints no
/// frames, and restoring every definition the culprit changed would also
/// undo its unrelated work), else all of them.
async fn symbol_fix(
    git: &crate::git::Git,
    culprit: &str,
    bad: &str,
    source: &[FilePatch],
    output: Option<&str>,
    failing_tests: &BTreeSet<String>,
) -> Result<Option<Fix>> {
    let mut versions = Vec::new();
    for f in source {
        if let Some((before, at_culprit, current)) = three_versions(git, culprit, bad, f).await? {
            versions.push((f.new_path.clone(), before, at_culprit, current));
        }
    }
    let changed: Vec<String> = versions
        .iter()
        .flat_map(|(path, before, at_culprit, _)| changed_symbols(path, before, at_culprit))
        .collect();
    let mut on_path: BTreeSet<String> = changed
        .iter()
        .filter(|name| output.is_some_and(|o| named_in(o, name)))
        .cloned()
        .collect();
    if on_path.is_empty() {
        on_path = changed
            .iter()
            .filter(|name| failing_tests.iter().any(|t| test_names_symbol(t, name)))
            .cloned()
            .collect();
    }
    let only = (!on_path.is_empty()).then_some(&on_path);
    let mut files = Vec::new();
    let mut symbols = Vec::new();
    let mut notes = Vec::new();
    for (path, before, at_culprit, current) in &versions {
        let restored = restore_symbols(
            &FileVersions {
                path,
                before,
                culprit: at_culprit,
                current,
            },
            only,
        );
        if let Some(r) = restored.filter(|r| r.changes_file()) {
            symbols.extend(r.symbols);
            notes.extend(r.notes);
            files.push((r.path, r.content));
        }
    }
    Ok((!files.is_empty()).then_some(Fix::Symbols {
        files,
        symbols,
        notes,
    }))
}

/// The culprit's changes to the files of `text` (a reverse diff that did
/// not apply), undone at the bad revision where the text the culprit wrote
/// is found. A file where it is not found is left as it is at the bad
/// revision and named in the notes (a CI file rewritten since cannot matter
/// to a test run, and the contract judges what is reverted); `Err` says why
/// no file could be placed.
async fn line_fix(
    git: &crate::git::Git,
    culprit: &str,
    bad: &str,
    of: &'static str,
    text: &str,
) -> Result<std::result::Result<Fix, String>> {
    let mut files = Vec::new();
    let mut notes = Vec::new();
    let mut left = Vec::new();
    for f in patch::parse(text)? {
        let path = &f.new_path;
        let Some((before, at_culprit, current)) = three_versions(git, culprit, bad, &f).await?
        else {
            left.push(format!(
                "{path} (created, deleted or renamed, or missing at a revision)"
            ));
            continue;
        };
        match line_revert::revert_lines(&before, &at_culprit, &current) {
            Ok(r) => {
                for p in &r.placements {
                    notes.push(match &p.how {
                        line_revert::PlacedBy::Lines => {
                            format!("{path}:{} the culprit's lines", p.line)
                        }
                        line_revert::PlacedBy::Words { from, to } => {
                            format!("{path}:{} `{from}` back to `{to}`", p.line)
                        }
                    });
                }
                files.push((path.clone(), r.content));
            }
            Err(why) => left.push(format!("{path} ({why})")),
        }
    }
    if files.is_empty() {
        return Ok(Err(left.join("; ")));
    }
    if !left.is_empty() {
        notes.push(format!(
            "not reverted, left as at the bad revision: {}",
            left.join("; ")
        ));
    }
    Ok(Ok(Fix::Lines { of, files, notes }))
}

/// The candidate fixes for a culprit, smallest first: its reverse hunks on
/// the failing path, a symbol-level restore, then all its source hunks.
/// Test files and the oracle's files are never part of any (returned as
/// `dropped`).
async fn candidates(ctx: &Context, plan: &RevertPlan<'_>) -> Result<(Vec<Fix>, Vec<String>)> {
    let git = ctx.pool.workspace().git().clone();
    let reverse = patch::parse(&git.reverse_diff(plan.culprit).await?)?;
    let judges: BTreeSet<String> = oracle::judges(ctx, plan.classification)
        .await?
        .into_iter()
        .collect();
    let split = split_patch(reverse, &judges);
    if split.kept.is_empty() {
        return Ok((Vec::new(), split.dropped));
    }
    let output = plan.classification.baseline_output.as_deref();
    let on_path = output
        .map(|o| oracle::output_files(o, ctx.pool.workspace().root()))
        .unwrap_or_default();
    let mut fixes = Vec::new();
    if let Some(text) = failing_path_patch(&split.kept, &on_path) {
        fixes.push(Fix::Diff {
            scope: "failing-path hunks",
            text,
        });
    }
    let no_tests = BTreeSet::new();
    let failing_tests = plan
        .classification
        .baseline
        .as_ref()
        .map_or(&no_tests, |b| &b.failing_tests);
    if let Some(fix) = symbol_fix(
        &git,
        plan.culprit,
        &ctx.bad,
        &split.kept,
        output,
        failing_tests,
    )
    .await?
    {
        fixes.push(fix);
    }
    let all = Fix::Diff {
        scope: if split.dropped.is_empty() {
            "whole commit"
        } else {
            "whole commit, source files only"
        },
        text: patch::render(&split.kept),
    };
    if !fixes.contains(&all) {
        fixes.push(all);
    }
    Ok((fixes, split.dropped))
}

pub(crate) async fn exec_judged(
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
    runs_until_with(max, stop_at, || {
        exec_judged(sandbox, spec, runner, baseline)
    })
    .await
}

/// Makes `run` up to `max` times, stopping at the first run with outcome
/// `stop_at` (or blocked), wherever `run` runs.
async fn runs_until_with<F: Future<Output = Result<Judged>>>(
    max: u32,
    stop_at: Outcome,
    mut run: impl FnMut() -> F,
) -> Result<Vec<Judged>> {
    let mut runs = Vec::new();
    for _ in 0..max.max(1) {
        let judged = run().await?;
        let stop = judged.outcome == stop_at || judged.outcome == Outcome::Blocked;
        runs.push(judged);
        if stop {
            break;
        }
    }
    Ok(runs)
}

/// Runs `spec` until the sequential test between `rates` decides (a run
/// that fails for another reason or is blocked ends it: the judgement
/// rejects or blocks), at most [`MAX_RATE_RUNS`] runs in all. The test
/// starts from the runs already `seen` (`true` for a failure).
async fn runs_until_rate_decided(
    sandbox: &dyn Sandbox,
    spec: &CommandSpec,
    rates: RateOracle,
    runner: runner::Runner,
    baseline: Option<&FailureSignature>,
    seen: &[bool],
) -> Result<Vec<Judged>> {
    let mut test = rates.test();
    seen.iter().for_each(|failed| test.record(*failed));
    let mut runs = Vec::new();
    while test.decision().is_none() && seen.len() + runs.len() < MAX_RATE_RUNS {
        let judged = exec_judged(sandbox, spec, runner, baseline).await?;
        match judged.outcome {
            Outcome::Fail => test.record(true),
            Outcome::Pass => test.record(false),
            Outcome::FailedDifferently | Outcome::Blocked => {
                runs.push(judged);
                break;
            }
        }
        runs.push(judged);
    }
    Ok(runs)
}

/// The most runs of a flakiness regression's fix: the sequential test
/// between 5 % and 30 % at 1 % errors decides within about 20 when the
/// rate is either.
const MAX_RATE_RUNS: usize = 60;

/// What judges a fix: the classified failure, and the clean runs after
/// the fix that make it trustworthy.
#[derive(Clone, Copy)]
pub(crate) struct Judging<'a> {
    pub classification: &'a Classification,
    pub passes_needed: u32,
    /// A flakiness regression's rates: the fix's runs are judged between
    /// them ([`contract::judge_rate_fix`]).
    pub rates: Option<RateOracle>,
}

impl Judging<'_> {
    /// The contract's judgement of a fix's experiments.
    pub(crate) fn judge(&self, experiments: &[Experiment]) -> contract::Judgement {
        match self.rates {
            Some(rates) => contract::judge_rate_fix(experiments, rates),
            None => judge_fix(experiments, self.passes_needed),
        }
    }
}

/// Everything a revert verification needs to know.
pub struct RevertPlan<'a> {
    pub number: u32,
    pub culprit: &'a str,
    pub classification: &'a Classification,
    /// Clean runs after the fix needed to trust it (1 for a deterministic failure).
    pub passes_needed: u32,
    /// Set for a flakiness regression ([`Judging::rates`]).
    pub rates: Option<RateOracle>,
}

impl RevertPlan<'_> {
    fn judging(&self) -> Judging<'_> {
        Judging {
            classification: self.classification,
            passes_needed: self.passes_needed,
            rates: self.rates,
        }
    }
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

    let started = std::time::Instant::now();
    let (fixes, dropped) = candidates(ctx, &plan).await?;
    let candidates_built = started.elapsed();
    let dropped_note = (!dropped.is_empty()).then(|| {
        format!(
            "hunks in test files were dropped (the oracle is fixed): {}",
            dropped.join(", ")
        )
    });
    if fixes.is_empty() {
        h.status = HypothesisStatus::Inconclusive;
        h.status_reason = format!(
            "the culprit changed only test files ({}); reverting them would change the test that judges the fix, so there is no fix to verify",
            dropped.join(", ")
        );
        return Ok(h);
    }

    let (worktree, sandbox) = hypothesis_slot(ctx, number, &branch).await?;
    let slot_opened = started.elapsed();
    let mut earlier: Vec<String> = Vec::new();
    let result = async {
        // 1-2. Reproduction and the regression test before the fix, once for
        // every attempt: they run at the bad revision, in a pool slot beside
        // the first attempt's runs (on a small machine the code index beside
        // them leaves a core idle otherwise).
        let mut before: Option<Vec<Experiment>> = None;
        let mut attempts = 0;
        let mut queue: std::collections::VecDeque<Fix> = fixes.into();
        while let Some(fix) = queue.pop_front() {
            if attempts >= ctx.config.max_patch_attempts {
                break;
            }
            worktree_reset(&worktree, &ctx.bad).await?;
            let scope = fix.scope();
            if let Err(e) = apply_fix(&worktree, &fix).await {
                earlier.push(format!("{scope} does not apply: {}", e.message));
                // Later commits edited around the culprit's change: look
                // for the text it wrote instead.
                if let Fix::Diff { scope, text } = &fix {
                    match line_fix(&git, plan.culprit, &ctx.bad, scope, text).await? {
                        Ok(lines) => queue.push_front(lines),
                        Err(why) => {
                            earlier.push(format!("{scope}, placed by the changed lines: {why}"))
                        }
                    }
                }
                continue;
            }
            attempts += 1;
            let short = &plan.culprit[..plan.culprit.len().min(12)];
            let message = format!(
                "Revert {short} ({scope}; TraceLab hypothesis {number})\n\nProposed by TraceLab; not merged."
            );
            let contract = run_contract(
                ctx,
                plan.judging(),
                &worktree,
                sandbox.as_ref(),
                &[],
                &message,
            );
            let (after, patch_text) = match &before {
                Some(_) => contract.await?,
                None => {
                    let (ran, after) = futures::future::join(
                        regression_before(ctx, plan.judging(), BeforeIn::Pool),
                        contract,
                    )
                    .await;
                    before = Some(ran?);
                    after?
                }
            };
            let mut experiments = before.clone().unwrap_or_default();
            experiments.extend(after);
            tracing::debug!(
                hypothesis = number,
                candidates_ms = candidates_built.as_millis() as u64,
                slot_ms = (slot_opened - candidates_built).as_millis() as u64,
                total_ms = started.elapsed().as_millis() as u64,
                scope = scope.as_str(),
                "revert verification attempt"
            );
            let judgement = plan.judging().judge(&experiments);
            h.experiments = experiments;
            h.patch = patch_text;
            h.status = judgement.status;
            let mut reason = format!("{} ({scope}", judgement.reason);
            if !earlier.is_empty() {
                reason.push_str(&format!("; earlier: {}", earlier.join("; ")));
            }
            if let Some(note) = &dropped_note {
                reason.push_str(&format!("; {note}"));
            }
            if let Fix::Symbols { notes, .. } | Fix::Lines { notes, .. } = &fix
                && !notes.is_empty()
            {
                reason.push_str(&format!("; {}", notes.join("; ")));
            }
            reason.push(')');
            h.status_reason = reason;
            if judgement.status == HypothesisStatus::Verified {
                break;
            }
            earlier.push(format!(
                "{scope} {}: {}",
                judgement.status.as_str(),
                judgement.reason
            ));
        }
        if attempts == 0 {
            h.experiments = match before {
                Some(ran) => ran,
                None => regression_before(ctx, plan.judging(), BeforeIn::Pool).await?,
            };
            h.status = HypothesisStatus::Blocked;
            h.status_reason = format!("no fix applies at the bad revision: {}", earlier.join("; "));
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

/// The worktree on hypothesis `number`'s branch at the bad revision, with
/// its own sandbox.
pub(crate) async fn hypothesis_slot(
    ctx: &Context,
    number: u32,
    branch: &str,
) -> Result<(Worktree, Box<dyn Sandbox>)> {
    let worktree = ctx
        .pool
        .workspace()
        .on_branch(&format!("h{number}"), &ctx.bad, branch)
        .await?;
    let sandbox = ctx
        .pool
        .provider()
        .open(&worktree.path, &format!("{}-h{number}", ctx.id))
        .await?;
    Ok((worktree, sandbox))
}

/// Applies a fix to the worktree's index and files.
async fn apply_fix(worktree: &Worktree, fix: &Fix) -> Result<()> {
    match fix {
        Fix::Diff { text, .. } => {
            patch::validate(&patch::parse(text)?)?;
            worktree.apply_3way(text).await
        }
        Fix::Symbols { files, .. } | Fix::Lines { files, .. } => {
            for (path, content) in files {
                worktree.write_file(path, content).await?;
            }
            Ok(())
        }
    }
}

pub(crate) async fn worktree_reset(worktree: &Worktree, rev: &str) -> Result<()> {
    crate::git::run_git(&worktree.path, &["reset", "-q", "--hard", rev]).await?;
    crate::git::run_git(&worktree.path, &["clean", "-q", "-ffdx"]).await?;
    Ok(())
}

/// The regression test as the contract runs it: the failing test alone when
/// the runner allows it, else the whole test command.
pub(crate) fn regression_command(
    ctx: &Context,
    classification: &Classification,
) -> (String, CommandSpec) {
    let argv = classification
        .isolated_command(&ctx.test)
        .unwrap_or_else(|| ctx.test.argv.clone());
    (shell_words::join(&argv), ctx.spec(&argv, &[]))
}

/// Where the regression test runs at the bad revision before a fix.
pub(crate) enum BeforeIn<'a> {
    /// The hypothesis's own sandbox, before the fix is applied.
    Sandbox(&'a dyn Sandbox),
    /// One of the pool's slots, checked out at the bad revision: free
    /// while a fix is verified, so these runs go beside the fix's own.
    Pool,
}

/// Steps 1 and 2: the reproduction (from the classification) and the
/// regression test failing at the bad revision.
pub(crate) async fn regression_before(
    ctx: &Context,
    plan: Judging<'_>,
    place: BeforeIn<'_>,
) -> Result<Vec<Experiment>> {
    let (regression_cmd, regression) = regression_command(ctx, plan.classification);
    let mut experiments = vec![plan.classification.experiment.clone()];
    if regression_cmd == ctx.test.display() && plan.classification.counts.failures > 0 {
        // The regression test is the test command: the reproduction already
        // ran it at this revision, and its failures are the evidence.
        let mut reused = plan.classification.experiment.clone();
        reused.step = Step::RegressionBefore;
        reused.note = Some(REUSED_REPRODUCTION.into());
        experiments.push(reused);
        return Ok(experiments);
    }
    let baseline = plan.classification.baseline.as_ref();
    let before = match place {
        BeforeIn::Sandbox(sandbox) => {
            runs_until(
                sandbox,
                &regression,
                plan.passes_needed,
                Outcome::Fail,
                ctx.test.runner,
                baseline,
            )
            .await?
        }
        BeforeIn::Pool => {
            // The failures a fix confirmation counted on run side by side
            // (one per slot), then one at a time until one fails.
            let at_once = plan
                .classification
                .fix_confirmation
                .map_or(1, |c| c.before_failures.max(1));
            let run = || run_judged(&ctx.pool, &ctx.bad, &regression, ctx.test.runner, baseline);
            let mut runs = futures::future::try_join_all((0..at_once).map(|_| run())).await?;
            let stopped = runs
                .iter()
                .any(|r| matches!(r.outcome, Outcome::Fail | Outcome::Blocked));
            let rest = plan.passes_needed.saturating_sub(at_once);
            if !stopped && rest > 0 {
                runs.extend(runs_until_with(rest, Outcome::Fail, run).await?);
            }
            runs
        }
    };
    experiments.extend(batch_experiment(
        Step::RegressionBefore,
        &regression_cmd,
        &ctx.bad,
        &before,
        ctx.config.stored_output_limit,
        None,
    ));
    Ok(experiments)
}

/// Steps 3 and 4 on the applied fix, committed with `message`; returns all
/// experiments and the patch.
pub(crate) async fn run_contract(
    ctx: &Context,
    plan: Judging<'_>,
    worktree: &Worktree,
    sandbox: &dyn Sandbox,
    before: &[Experiment],
    message: &str,
) -> Result<(Vec<Experiment>, Option<String>)> {
    let keep = ctx.config.stored_output_limit;
    let baseline = plan.classification.baseline.as_ref();
    let runner = ctx.test.runner;
    let (regression_cmd, regression) = regression_command(ctx, plan.classification);
    let mut experiments = before.to_vec();

    // The fix, checked against the patch rules and the oracle, committed on
    // the hypothesis branch.
    let diff = crate::git::run_git(
        &worktree.path,
        &["diff", "--cached", "--binary", "--no-color", "HEAD"],
    )
    .await?;
    let checked = patch::parse(&diff).and_then(|files| {
        patch::validate(&files)?;
        let split = split_patch(files, &BTreeSet::new());
        if split.dropped.is_empty() {
            Ok(())
        } else {
            Err(Error::invalid(format!(
                "patch refused: it changes test files ({})",
                split.dropped.join(", ")
            )))
        }
    });
    if let Err(e) = checked {
        experiments.push(blocked(
            Step::RegressionAfter,
            &regression_cmd,
            &ctx.bad,
            sandbox,
            &e.message,
        ));
        return Ok((experiments, None));
    }
    let fixed = worktree.commit_all(message).await?;
    let patch_text = worktree.diff_from(&ctx.bad).await?;

    // 3. The regression test passes after the fix (enough times for a flaky
    // failure). A clean run of step 4 is also a clean run of the regression
    // test (`contract::judge_fix`), so the last isolated run is made only
    // when step 4 is not clean.
    let isolated = plan.passes_needed.saturating_sub(1).max(1);
    let mut after = match plan.rates {
        // A flakiness regression's fix may fail at the background rate:
        // its runs go on until the test between the two rates decides.
        Some(rates) => {
            runs_until_rate_decided(sandbox, &regression, rates, runner, baseline, &[]).await?
        }
        None => {
            runs_until(
                sandbox,
                &regression,
                isolated,
                Outcome::Fail,
                runner,
                baseline,
            )
            .await?
        }
    };

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
        let remaining: BTreeSet<String> = TestRun::read(runner, &suite.run.result.output)
            .failing_tests()
            .into_iter()
            .collect();
        if !remaining.is_empty() && remaining.is_subset(&before) {
            existing.outcome = Outcome::Pass;
            existing.note = Some(format!(
                "only failures that already happened before the fix remain: {}",
                remaining.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
    }

    let suite_clean = contract::is_clean_suite_run(&existing);
    if let Some(rates) = plan.rates {
        // The judgement's sequential test counts the suite's run too
        // (`contract::judge_rate_fix`), which can undo the decision the
        // isolated runs reached: more of them until the whole decides.
        let suite_run = contract::suite_run_as_regression_run(&existing);
        let judged = |r: &Judged| matches!(r.outcome, Outcome::Pass | Outcome::Fail);
        if let Some(suite_run) = suite_run
            && after.iter().all(judged)
        {
            let seen: Vec<bool> = after
                .iter()
                .map(|r| r.outcome == Outcome::Fail)
                .chain(std::iter::once(suite_run))
                .collect();
            let more =
                runs_until_rate_decided(sandbox, &regression, rates, runner, baseline, &seen);
            after.extend(more.await?);
        }
    }
    let passes = after.iter().filter(|r| r.outcome == Outcome::Pass).count() as u32;
    let short = plan
        .passes_needed
        .saturating_sub(passes + u32::from(suite_clean));
    if plan.rates.is_none() && short > 0 && passes == after.len() as u32 {
        after.extend(
            runs_until(sandbox, &regression, short, Outcome::Fail, runner, baseline).await?,
        );
    }
    experiments.extend(batch_experiment(
        Step::RegressionAfter,
        &regression_cmd,
        &fixed,
        &after,
        keep,
        None,
    ));
    experiments.push(existing);
    Ok((experiments, Some(patch_text)))
}

pub(crate) fn blocked(
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
    fn failing_path_patch_keeps_only_touched_files() {
        let reverse = "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-a\n+b\ndiff --git a/NOTES b/NOTES\n--- a/NOTES\n+++ b/NOTES\n@@ -1 +1 @@\n-c\n+d\n";
        let files: BTreeSet<String> = ["app.py".to_string()].into();
        let reverse = patch::parse(reverse).unwrap();
        let partial = failing_path_patch(&reverse, &files).unwrap();
        assert!(partial.contains("app.py") && !partial.contains("NOTES"));
        let all: BTreeSet<String> = ["app.py".to_string(), "NOTES".to_string()].into();
        assert!(failing_path_patch(&reverse, &all).is_none());
    }

    #[test]
    fn a_definition_is_on_the_failing_path_when_the_output_names_it() {
        let out = "  File \"app.py\", line 4, in add\n    return a + b + 1\nAssertionError";
        assert!(named_in(out, "py:app.add"));
        assert!(named_in(out, "Calc::add"));
        assert!(!named_in(out, "py:app.ad"));
        assert!(!named_in(out, "py:app.scale"));
        assert!(!named_in("address", "py:app.add"));
    }
}
