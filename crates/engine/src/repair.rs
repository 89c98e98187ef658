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

use crate::classification::Classification;
use crate::context::Context;
use crate::oracle;
use std::collections::BTreeSet;
use tracelab_domain::Result;
use tracelab_domain::experiment::Outcome;
use tracelab_domain::hypothesis::{Hypothesis, HypothesisStatus};
use tracelab_domain::oracle::{is_test_path, split_patch};
use tracelab_domain::report::Suspect;
use tracelab_evidence::test_run::TestRun;
use tracelab_repair::{CulpritHunk, Target};

mod coverage;
mod llm;
mod neighbours;
mod prove;
mod screening;

pub use crate::config::RepairMode;
pub(crate) use prove::{Attempt, Prover, tail};
use screening::{Screened, Screening, screen, with_detail};

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

/// The repair hypothesis numbered `number`, or a note saying why there is
/// none. `culprit`, the commit a search named (its fix was not verified),
/// gives the templates its changed lines to undo one by one and the model
/// its diff.
pub async fn repair(
    ctx: &Context,
    classification: &Classification,
    suspects: &[Suspect],
    number: u32,
    culprit: Option<&str>,
) -> Result<std::result::Result<Hypothesis, String>> {
    let Some(output) = classification.baseline_output.as_deref() else {
        return Ok(Err("repair: no failing output to repair".into()));
    };
    let judges: BTreeSet<String> = oracle::judges(ctx, classification)
        .await?
        .into_iter()
        .collect();
    let culprit = match culprit {
        Some(commit) => culprit_diff(ctx, commit, &judges).await?,
        None => None,
    };
    let mode = ctx.config.repair;
    let mut notes: Vec<String> = Vec::new();
    let mut screening = None;
    let mut prover: Option<Prover<'_>> = None;
    if mode.templates() {
        let hunks = culprit
            .as_ref()
            .map(|c| CulpritHunk::from_diff(&c.diff))
            .unwrap_or_default();
        match templates(ctx, classification, suspects, output, &judges, &hunks).await? {
            Ok((found, chosen)) => {
                // With the model after them, the templates leave it one attempt.
                let limit = if mode.model() {
                    (ctx.config.max_patch_attempts - 1).max(1)
                } else {
                    ctx.config.max_patch_attempts
                };
                let symbols: Vec<&str> =
                    chosen.iter().map(|c| c.candidate.symbol.as_str()).collect();
                let mut p = Prover::open(ctx, classification, number, &symbols, &judges).await?;
                for c in chosen.iter().take(limit) {
                    if p.attempt(&Attempt::template(&c.candidate)).await?
                        == HypothesisStatus::Verified
                    {
                        break;
                    }
                }
                screening = Some(found);
                prover = Some(p);
            }
            Err(note) => notes.push(note),
        }
    }
    let verified = prover.as_ref().is_some_and(|p| p.verified());
    let mut model_run = None;
    if mode.model() && !verified {
        match ctx.config.chat_model.clone() {
            Some(model) => {
                let run = llm::repair(
                    ctx,
                    classification,
                    suspects,
                    output,
                    &judges,
                    number,
                    model,
                    &mut prover,
                    notes.first().map(String::as_str),
                    culprit.as_ref(),
                )
                .await?;
                model_run = Some(run);
            }
            None => notes.push("the LLM patch agent: no model endpoint is configured".into()),
        }
    }
    let h = match (prover, &model_run) {
        (Some(p), _) => p.close().await,
        (None, Some(run)) => run.unproven(ctx, number),
        (None, None) => return Ok(Err(notes.join("; "))),
    };
    let mut h = match &screening {
        Some(s) => with_detail(h, s),
        None => h,
    };
    if let Some(run) = &model_run {
        run.annotate(&mut h);
    }
    Ok(Ok(h))
}

/// The template candidates that passed screening (smallest edit first), or
/// a note saying why there are none.
async fn templates(
    ctx: &Context,
    classification: &Classification,
    suspects: &[Suspect],
    output: &str,
    judges: &BTreeSet<String>,
    culprit: &[CulpritHunk],
) -> Result<std::result::Result<(Screening, Vec<Screened>), String>> {
    let git = ctx.pool.workspace().git().clone();
    let relative = crate::oracle::relative_to_worktrees(output, ctx.pool.workspace().root());
    let frames: Vec<(String, u32)> = TestRun::read(ctx.test.runner, &relative)
        .frames()
        .into_iter()
        .filter(|f| f.in_app)
        .filter_map(|f| Some((f.file?, f.line?)))
        .collect();
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
    let candidates = tracelab_repair::propose_with_culprit(
        &targets,
        output,
        culprit,
        ctx.config.repair_candidates,
    );
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
    // The culprit's own lines undone first (the code passed before it),
    // then the smallest edit; among equals, the better-ranked (screened first).
    passing.sort_by_key(|s| (!s.candidate.operator.from_culprit(), s.candidate.edit_size));
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
    Ok(Ok((screening, chosen)))
}

/// The culprit commit as the repair sees it: its one-line summary and its
/// diff against its parent, source files only (tests and the failing test's
/// files are the oracle), without context lines.
pub(crate) struct CulpritDiff {
    pub commit: String,
    pub summary: String,
    pub diff: String,
}

async fn culprit_diff(
    ctx: &Context,
    commit: &str,
    judges: &BTreeSet<String>,
) -> Result<Option<CulpritDiff>> {
    let git = ctx.pool.workspace().git();
    let info = git.commit_info(commit).await?;
    let parent = format!("{commit}^");
    let Ok(diff) = git
        .run(&[
            "diff",
            "-U0",
            "--no-color",
            "--no-ext-diff",
            &parent,
            commit,
        ])
        .await
    else {
        // A root commit has no parent to go back to.
        return Ok(None);
    };
    // The oracle is never taken from the culprit: its test files and the
    // failing test's files are left out, as for the revert.
    let kept = split_patch(tracelab_domain::patch::parse(&diff)?, judges).kept;
    let diff = tracelab_domain::patch::render(&kept);
    Ok((!diff.trim().is_empty()).then_some(CulpritDiff {
        commit: info.commit,
        summary: info.summary,
        diff,
    }))
}
