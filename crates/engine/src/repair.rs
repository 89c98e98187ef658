//! Fixes beyond revert: the code-path agent's offline repair templates.
//!
//! When no fix for a culprit was verified, the suspect functions (never a
//! test file, never the oracle's files) get candidate edits from
//! `tracelab_repair`. Candidates are *screened* first: each is applied in a
//! scratch worktree and only the failing test runs, k at a time, within a
//! wall-clock budget. Screening runs are recorded on the hypothesis but are
//! not patch attempts. The passing candidates, smallest edit first, then go
//! through the whole four-part contract on the hypothesis branch (at most
//! `max_patch_attempts`), plus the failing test's own files and the test
//! files that name the patched function, so an edit that only makes the one
//! test pass and breaks its neighbours is rejected.

use crate::agents::test_behaviour::Classification;
use crate::context::Context;
use crate::git::Worktree;
use crate::oracle;
use crate::probe::{Judged, experiment};
use crate::verify::{
    Judging, exec_judged, hypothesis_slot, regression_before, regression_command, run_contract,
    worktree_reset,
};
use serde::Serialize;
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tracelab_domain::contract::judge_fix;
use tracelab_domain::experiment::{Experiment, Outcome, Step};
use tracelab_domain::hypothesis::{AgentKind, Hypothesis, HypothesisKind, HypothesisStatus};
use tracelab_domain::ids::{HypothesisId, hypothesis_branch};
use tracelab_domain::oracle::is_test_path;
use tracelab_domain::ports::{CommandSpec, Sandbox};
use tracelab_domain::report::Suspect;
use tracelab_domain::runner::{self, Runner};
use tracelab_domain::signature::frames_in_output;
use tracelab_domain::{Error, Result};
use tracelab_repair::{Candidate, Target};

/// Where fixes beyond revert come from (`--repair`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RepairMode {
    /// Only reverts of a culprit carry fixes.
    Off,
    /// Offline repair templates (no network, no model).
    #[default]
    Templates,
}

/// Test files that name the patched function, run beside the failing
/// test's own files (more make the check slower, not much safer).
const NEIGHBOUR_FILES: usize = 8;

/// One screened candidate, as the report shows it.
#[derive(Debug, Clone, Serialize)]
struct Screened {
    #[serde(flatten)]
    candidate: Candidate,
    outcome: Outcome,
    duration_ms: u64,
}

/// What screening did, stored on the hypothesis (`detail.screening`).
#[derive(Debug, Clone, Serialize)]
struct Screening {
    budget_ms: u64,
    used_ms: u64,
    generated: usize,
    /// Suspects left alone because they are test code or the oracle's files
    /// (a fix may never change what judges it).
    skipped_test_suspects: Vec<String>,
    screened: Vec<Screened>,
}

/// Repair templates run for a deterministic failure that nothing explained:
/// no hypothesis verified (a verified revert, order or environment
/// dependence already says what to do) and a hypothesis slot left.
pub fn wanted(
    config: &crate::EngineConfig,
    classification: &Classification,
    hypotheses: &[Hypothesis],
) -> bool {
    config.repair != RepairMode::Off
        && classification.decision.behaviour
            == tracelab_domain::sequential::Behaviour::Deterministic
        && hypotheses.len() < config.max_hypotheses
        && !hypotheses
            .iter()
            .any(|h| h.status == HypothesisStatus::Verified)
}

/// The repair hypothesis numbered `number`, or a note saying why there is none.
pub async fn repair(
    ctx: &Context,
    classification: &Classification,
    suspects: &[Suspect],
    number: u32,
) -> Result<std::result::Result<Hypothesis, String>> {
    let Some(output) = classification.baseline_output.as_deref() else {
        return Ok(Err("repair templates: no failing output to repair".into()));
    };
    let judges: BTreeSet<String> = oracle::judges(ctx, classification)
        .await?
        .into_iter()
        .collect();
    let git = ctx.pool.workspace().git().clone();
    let frames = frames_in_output(output);
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    for s in suspects {
        if is_test_path(&s.path) || judges.contains(&s.path) {
            skipped.push(s.symbol.clone());
            continue;
        }
        let Some(source) = git.show_file(&ctx.bad, &s.path).await? else {
            continue;
        };
        let hot: Vec<u32> = frames
            .iter()
            .filter(|(f, _)| f == &s.path || f.ends_with(&format!("/{}", s.path)))
            .map(|(_, line)| *line)
            .collect();
        files.push((s, source, hot));
    }
    let targets: Vec<Target<'_>> = files
        .iter()
        .map(|(s, source, hot)| Target {
            path: &s.path,
            source,
            symbol: &s.symbol,
            start_line: s.start_line,
            end_line: s.end_line,
            score: s.score,
            hot_lines: hot,
        })
        .collect();
    let candidates = tracelab_repair::propose(&targets, output, ctx.config.repair_candidates);
    if candidates.is_empty() {
        return Ok(Err(format!(
            "repair templates: no candidate edit for the {} suspect function(s) outside test files",
            targets.len()
        )));
    }
    ctx.progress.report(&format!(
        "repair templates: screening {} candidate edits of {} suspect function(s) with the failing test ({} s budget)",
        candidates.len(),
        targets.len(),
        ctx.config.repair_screening_budget.as_secs()
    ));
    let mut screening = screen(ctx, classification, candidates).await?;
    screening.skipped_test_suspects = skipped;
    let mut passing: Vec<&Screened> = screening
        .screened
        .iter()
        .filter(|s| s.outcome == Outcome::Pass)
        .collect();
    // Smallest edit first; among equals, the better-ranked (screened first).
    passing.sort_by_key(|s| s.candidate.edit_size);
    if passing.is_empty() {
        return Ok(Err(format!(
            "repair templates: {} of {} candidate edits screened in {:.1} s; none made the failing test pass",
            screening.screened.len(),
            screening.generated,
            screening.used_ms as f64 / 1000.0
        )));
    }
    let chosen: Vec<Screened> = passing
        .into_iter()
        .take(ctx.config.max_patch_attempts)
        .cloned()
        .collect();
    let h = prove(ctx, classification, number, &chosen, &judges).await?;
    Ok(Ok(with_detail(h, &screening)))
}

fn with_detail(mut h: Hypothesis, screening: &Screening) -> Hypothesis {
    let mut detail = h.detail.take().unwrap_or_else(|| serde_json::json!({}));
    if let Some(map) = detail.as_object_mut() {
        map.insert("source".into(), "repair_template".into());
        map.insert(
            "screening".into(),
            serde_json::to_value(screening).unwrap_or_default(),
        );
    }
    h.detail = Some(detail);
    h
}

/// Runs the failing test on each candidate, k at a time, best-ranked first,
/// until the budget is spent or enough candidates passed.
async fn screen(
    ctx: &Context,
    classification: &Classification,
    candidates: Vec<Candidate>,
) -> Result<Screening> {
    let budget = ctx.config.repair_screening_budget;
    let started = Instant::now();
    let deadline = started + budget;
    let generated = candidates.len();
    let (_, spec) = regression_command(ctx, classification);
    let enough = ctx.config.max_patch_attempts + 1;
    let next = AtomicUsize::new(0);
    let passed = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Screened)>> = Mutex::new(Vec::new());
    let worker = |slot: usize| {
        let (candidates, spec, next, passed, results) =
            (&candidates, &spec, &next, &passed, &results);
        async move {
            let worktree = ctx
                .pool
                .workspace()
                .detached(&format!("repair-{slot}"), &ctx.bad)
                .await?;
            let sandbox = ctx
                .pool
                .provider()
                .open(&worktree.path, &format!("{}-repair-{slot}", ctx.id))
                .await?;
            let outcome = async {
                loop {
                    let remaining = deadline.saturating_duration_since(Instant::now());
                    if remaining < Duration::from_millis(500)
                        || passed.load(Ordering::Acquire) >= enough
                    {
                        return Ok::<(), Error>(());
                    }
                    let i = next.fetch_add(1, Ordering::AcqRel);
                    let Some(candidate) = candidates.get(i) else {
                        return Ok(());
                    };
                    let spec = CommandSpec {
                        timeout: spec.timeout.min(remaining),
                        ..spec.clone()
                    };
                    let judged = screen_one(
                        ctx,
                        &worktree,
                        sandbox.as_ref(),
                        candidate,
                        &spec,
                        classification,
                    )
                    .await?;
                    if judged.outcome == Outcome::Pass {
                        passed.fetch_add(1, Ordering::AcqRel);
                    }
                    let screened = Screened {
                        candidate: candidate.clone(),
                        outcome: judged.outcome,
                        duration_ms: judged.run.result.duration.as_millis() as u64,
                    };
                    results
                        .lock()
                        .expect("screening results")
                        .push((i, screened));
                }
            }
            .await;
            let _ = sandbox.close().await;
            outcome
        }
    };
    let workers = (0..ctx.pool.size()).map(worker);
    for r in futures::future::join_all(workers).await {
        r?;
    }
    let mut screened = results.into_inner().expect("screening results");
    screened.sort_by_key(|(i, _)| *i);
    Ok(Screening {
        budget_ms: budget.as_millis() as u64,
        used_ms: started.elapsed().as_millis() as u64,
        generated,
        skipped_test_suspects: Vec::new(),
        screened: screened.into_iter().map(|(_, s)| s).collect(),
    })
}

async fn screen_one(
    ctx: &Context,
    worktree: &Worktree,
    sandbox: &dyn Sandbox,
    candidate: &Candidate,
    spec: &CommandSpec,
    classification: &Classification,
) -> Result<Judged> {
    worktree_reset(worktree, &ctx.bad).await?;
    worktree
        .write_file(&candidate.path, &candidate.content)
        .await?;
    exec_judged(
        sandbox,
        spec,
        ctx.test.runner,
        classification.baseline.as_ref(),
    )
    .await
}

/// The whole contract for each chosen candidate in turn, on the hypothesis
/// branch, until one is verified.
async fn prove(
    ctx: &Context,
    classification: &Classification,
    number: u32,
    chosen: &[Screened],
    judges: &BTreeSet<String>,
) -> Result<Hypothesis> {
    let first = &chosen[0].candidate;
    let branch = hypothesis_branch(&ctx.issue_id, number);
    let mut h = Hypothesis::new(
        HypothesisId::new(&ctx.id, number),
        number,
        AgentKind::CodePath,
        HypothesisKind::Patch,
        summary(first),
    );
    h.branch = Some(branch.clone());
    let judging = Judging {
        classification,
        passes_needed: 1,
    };
    let (worktree, sandbox) = hypothesis_slot(ctx, number, &branch).await?;
    let result = async {
        let before = regression_before(ctx, judging, sandbox.as_ref()).await?;
        let neighbours = neighbour_command(ctx, classification, chosen, judges).await?;
        let neighbours_before = match &neighbours {
            Some((_, spec)) => {
                worktree_reset(&worktree, &ctx.bad).await?;
                Some(sandbox.exec(spec).await?)
            }
            None => None,
        };
        let mut earlier: Vec<String> = Vec::new();
        for (attempt, screened) in chosen.iter().enumerate() {
            let candidate = &screened.candidate;
            worktree_reset(&worktree, &ctx.bad).await?;
            worktree.write_file(&candidate.path, &candidate.content).await?;
            let message = format!(
                "Fix {}: {} ({}:{}; TraceLab hypothesis {number}, repair template {})\n\nProposed by TraceLab; not merged.",
                candidate.symbol,
                candidate.description,
                candidate.path,
                candidate.line,
                candidate.operator.name()
            );
            let (mut experiments, patch) =
                run_contract(ctx, judging, &worktree, sandbox.as_ref(), &before, &message).await?;
            if let (Some((display, spec)), Some(before_run)) = (&neighbours, &neighbours_before)
                && patch.is_some()
            {
                experiments.push(neighbour_experiment(
                    ctx, classification, display, spec, &worktree, sandbox.as_ref(), before_run,
                ).await?);
            }
            let judgement = judge_fix(&experiments, 1);
            h.summary = summary(candidate);
            h.experiments = experiments;
            h.patch = patch;
            h.status = judgement.status;
            h.detail = Some(serde_json::json!({
                "operator": candidate.operator.name(),
                "symbol": candidate.symbol,
                "path": candidate.path,
                "line": candidate.line,
                "edit": candidate.description,
                "attempt": attempt + 1,
                "tests_run": tests_run(ctx, classification, neighbours.as_ref().map(|(d, _)| d.as_str())),
            }));
            let mut reason = format!("{} (repair template {}: {}", judgement.reason, candidate.operator.name(), candidate.description);
            if !earlier.is_empty() {
                reason.push_str(&format!("; earlier: {}", earlier.join("; ")));
            }
            reason.push(')');
            h.status_reason = reason;
            if judgement.status == HypothesisStatus::Verified {
                break;
            }
            earlier.push(format!("{} {}: {}", candidate.description, judgement.status.as_str(), judgement.reason));
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

fn summary(c: &Candidate) -> String {
    format!(
        "the edit {} in {} ({}:{}) fixes the failure (repair template {})",
        c.description,
        c.symbol,
        c.path,
        c.line,
        c.operator.name()
    )
}

/// The commands that judged the fix, for the report.
fn tests_run(
    ctx: &Context,
    classification: &Classification,
    neighbours: Option<&str>,
) -> Vec<String> {
    let mut run = vec![
        regression_command(ctx, classification).0,
        ctx.test.display(),
    ];
    run.extend(neighbours.map(str::to_string));
    run.dedup();
    run
}

/// pytest on the failing test's files and on the test files that name a
/// patched function, when that is more than the test command already runs.
async fn neighbour_command(
    ctx: &Context,
    classification: &Classification,
    chosen: &[Screened],
    judges: &BTreeSet<String>,
) -> Result<Option<(String, CommandSpec)>> {
    if ctx.test.runner != Runner::Pytest {
        return Ok(None);
    }
    let mut files: BTreeSet<String> = judges.iter().filter(|f| is_test_path(f)).cloned().collect();
    let git = ctx.pool.workspace().git();
    for s in chosen {
        let name = s
            .candidate
            .symbol
            .rsplit(['.', ':'])
            .next()
            .unwrap_or_default()
            .to_string();
        if name.len() < 3 || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        // `git grep` exits 1 when nothing matches.
        let found = git
            .run(&[
                "grep", "-l", "-w", "-F", "-e", &name, &ctx.bad, "--", "*.py",
            ])
            .await
            .unwrap_or_default();
        let prefix = format!("{}:", ctx.bad);
        files.extend(
            found
                .lines()
                .filter_map(|l| l.strip_prefix(&prefix))
                .filter(|p| is_test_path(p) && !p.ends_with("conftest.py"))
                .take(NEIGHBOUR_FILES)
                .map(str::to_string),
        );
    }
    let Some(first) = files.iter().next() else {
        return Ok(None);
    };
    let Some(mut argv) = runner::isolate(ctx.test.runner, &ctx.test.argv, first) else {
        return Ok(None);
    };
    argv.extend(files.iter().skip(1).cloned());
    if argv == ctx.test.argv
        || Some(argv.clone())
            == crate::agents::test_behaviour::isolated_command(ctx, classification)
    {
        return Ok(None);
    }
    let display = shell_words::join(&argv);
    Ok(Some((display, ctx.spec(&argv, &[]))))
}

/// The neighbour tests after the fix: passing, or failing only where they
/// already failed at the bad revision.
async fn neighbour_experiment(
    ctx: &Context,
    classification: &Classification,
    display: &str,
    spec: &CommandSpec,
    worktree: &Worktree,
    sandbox: &dyn Sandbox,
    before: &tracelab_domain::ports::CommandResult,
) -> Result<Experiment> {
    let revision = crate::git::run_git(&worktree.path, &["rev-parse", "HEAD"]).await?;
    let judged = exec_judged(sandbox, spec, ctx.test.runner, None).await?;
    let mut e = experiment(
        Step::ExistingTests,
        display,
        revision.trim(),
        &judged,
        ctx.config.stored_output_limit,
    );
    e.note = Some("the failing test's files and the test files naming the patched function".into());
    if judged.outcome != Outcome::Pass && judged.outcome != Outcome::Blocked {
        let already: BTreeSet<String> = runner::failing_tests(ctx.test.runner, &before.output)
            .into_iter()
            .chain(
                classification
                    .baseline
                    .iter()
                    .flat_map(|b| b.failing_tests.iter().cloned()),
            )
            .collect();
        let now: BTreeSet<String> =
            runner::failing_tests(ctx.test.runner, &judged.run.result.output)
                .into_iter()
                .collect();
        if !now.is_empty() && now.is_subset(&already) && before.exit_code != Some(0) {
            e.outcome = Outcome::Pass;
            e.note = Some(format!(
                "the failing test's files and the test files naming the patched function; only failures that already happened before the fix remain: {}",
                now.into_iter().collect::<Vec<_>>().join(", ")
            ));
        } else {
            e.outcome = Outcome::Fail;
            let new: Vec<String> = now.difference(&already).cloned().collect();
            e.note = Some(format!(
                "the fix breaks tests beside the failing one: {}",
                if new.is_empty() {
                    "see the output".to_string()
                } else {
                    new.join(", ")
                }
            ));
        }
    }
    Ok(e)
}
