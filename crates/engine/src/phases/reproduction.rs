//! Reproducing the failure at the bad revision, and the culprit search
//! started at its first failure while the re-runs go on.

use super::{HeadStart, Reproduction};
use crate::agents::code_path;
use crate::agents::git_history::{self, FlakeModel, GoodBeside, GoodState, HistoryFinding};
use crate::agents::test_behaviour::{Classification, Reproducer, SearchEnded};
use crate::context::Context;
use crate::focus::{self, RangeLogTask, SearchFocus};
use crate::oracle;
use crate::overlay::Overlay;
use crate::probe::run_judged_overlaid;
use std::collections::HashMap;
use std::sync::Arc;
use tracelab_domain::bisect::ProbeResult;
use tracelab_domain::report::Suspect;
use tracelab_domain::sequential::MAX_RUNS_CAP;
use tracelab_domain::signature::FailureSignature;
use tracelab_domain::{Error, Result};

/// Re-runs the test at the bad revision until it shows the failure (or
/// the sequential test decides without it). Unavailable when the test cannot
/// run there at all.
///
/// With a `--good` (and two slots or more), the first round runs the bad
/// revision's tests at good beside the first run at bad, and the range's
/// log is read meanwhile: the culprit search then starts a round earlier.
pub async fn reproduce(ctx: &Context, good: Option<&str>) -> Result<Reproduction> {
    if let Some(classification) = ctx.journal.as_ref().and_then(|j| j.classified()) {
        ctx.progress.report(&format!(
            "resuming: an earlier attempt classified the failure ({} of {} runs failed), not re-run",
            classification.counts.failures, classification.counts.runs
        ));
        return Ok(Reproduction::Decided(classification.clone()));
    }
    ctx.progress.report(&format!(
        "reproducing `{}` at {}",
        ctx.test.display(),
        &ctx.bad[..12.min(ctx.bad.len())]
    ));
    let mut reproducer = Reproducer::new(ctx, &ctx.bad, None, None);
    let mut head = Box::<HeadStart>::default();
    if let Some(good) = good {
        head.range = Some(RangeLogTask::start(ctx, good));
        head.good = good_beside_first_run(ctx, &mut reproducer, good).await?;
    }
    reproducer.until_first_failure(ctx).await?;
    if !reproducer.decided() {
        return Ok(Reproduction::FirstFailure(reproducer, head));
    }
    let classification = reproducer.finish(ctx, false).await?;
    if let Some(journal) = &ctx.journal {
        journal.record_classification(&classification).await;
    }
    if let Some(reason) = &classification.blocked {
        return Err(Error::unavailable(format!(
            "the test could not run at the bad revision: {reason}"
        )));
    }
    report_behaviour(ctx, &classification);
    Ok(Reproduction::Decided(classification))
}

/// The first batch at bad with one slot left to a run of the bad
/// revision's tests at `good` — the oracle's files as the test command
/// names them, before any output can name more. `None` without such files,
/// with fewer than two slots, in tests-at-revision mode, or when the run
/// at good could not be made (the good check then probes it as before).
async fn good_beside_first_run(
    ctx: &Context,
    reproducer: &mut Reproducer,
    good: &str,
) -> Result<Option<GoodBeside>> {
    if ctx.config.tests_at_revision || ctx.pool.size() < 2 {
        return Ok(None);
    }
    let files = oracle::judges_of(ctx, None, None).await.unwrap_or_default();
    if files.is_empty() {
        return Ok(None);
    }
    let overlay = Overlay {
        rev: ctx.bad.clone(),
        files,
    };
    ctx.progress.report(&format!(
        "probing the good revision {} with the bad revision's {} beside the first run at bad",
        &good[..12.min(good.len())],
        overlay.files.join(", ")
    ));
    let spec = ctx.test_spec();
    let at_good = run_judged_overlaid(
        &ctx.pool,
        good,
        &spec,
        ctx.test.runner,
        None,
        Some(&overlay),
    );
    let run = reproducer.batch_beside(ctx, at_good).await?;
    Ok(run.ok().map(|run| GoodBeside {
        revision: good.to_string(),
        overlay,
        run,
    }))
}

/// Says how the failure behaves, once the re-runs have decided it.
pub(crate) fn report_behaviour(ctx: &Context, classification: &Classification) {
    ctx.progress.report(&format!(
        "the failure is {:?} ({} of {} runs failed)",
        classification.decision.behaviour,
        classification.counts.failures,
        classification.counts.runs
    ));
}

/// The culprit search started at the first failure, before the re-runs have
/// classified it, under the model of a deterministic failure (one pass makes
/// a revision good). `None` when a given `--good` does not pass (the
/// classification decides what that means) or the search could not run.
async fn early_search(
    ctx: &Context,
    baseline: FailureSignature,
    output: &str,
    good: Option<String>,
    head: HeadStart,
) -> Option<HistoryFinding> {
    // Held from the start through the good check and the search, so no
    // re-run slips in between.
    let _precedence = ctx.pool.precedence();
    let started = std::time::Instant::now();
    let overlay = if ctx.config.tests_at_revision {
        None
    } else {
        let files = oracle::judges_of(ctx, Some(&baseline), Some(output))
            .await
            .ok()?;
        (!files.is_empty()).then(|| Overlay {
            rev: ctx.bad.clone(),
            files,
        })
    };
    let oracle_read = started.elapsed();
    let focus = focus::failure_focus(ctx, output).await;
    tracing::debug!(
        oracle_ms = oracle_read.as_millis() as u64,
        focus_ms = (started.elapsed() - oracle_read).as_millis() as u64,
        "oracle files and failure focus read"
    );
    let focus = Arc::new(SearchFocus::new(focus).with_prefetched(head.range));
    let mut model = FlakeModel::new(
        1.0,
        ctx.config.good_miss_probability,
        MAX_RUNS_CAP,
        baseline,
    )
    .with_overlay(overlay)
    .with_focus(Some(focus.clone()));
    model.provisional = true;
    let mut own_tests_unchecked = false;
    if let Some(g) = &good {
        // The range's changes are read while the good revision runs (or
        // were read during the first round).
        let check = check_good_early(ctx, g, head.good.as_ref(), &mut model);
        let (state, _) = futures::future::join(check, focus.read_range(ctx, g)).await;
        match state.ok()? {
            GoodState::Good => {}
            GoodState::NotGood => return None,
            GoodState::OwnTestsUnchecked => own_tests_unchecked = true,
        }
    }
    let mut finding = git_history::find_culprit(ctx, good.clone(), &model, HashMap::new())
        .await
        .ok()?;
    if own_tests_unchecked {
        let g = good.as_deref()?;
        let stands = git_history::check_deferred_good(ctx, g, &model, &mut finding).await;
        if !stands.ok()? {
            return None;
        }
    }
    Some(finding)
}

/// Whether the search may start from `good`: from the run made beside the
/// first run at bad where it can stand for the overlaid probe, else by
/// probing it now.
async fn check_good_early(
    ctx: &Context,
    good: &str,
    beside: Option<&GoodBeside>,
    model: &mut FlakeModel,
) -> Result<GoodState> {
    if let Some(beside) = beside
        && let Some(state) = git_history::good_from_beside(ctx, beside, model).await?
    {
        return Ok(state);
    }
    let report = git_history::probe_good(ctx, good, model).await?;
    Ok(match report.result {
        ProbeResult::Good => GoodState::Good,
        _ => GoodState::NotGood,
    })
}

/// What the pipeline started at the first failure, before the re-runs
/// had classified it.
pub(super) struct Early {
    pub(super) search: Option<HistoryFinding>,
    pub(super) suspects: Option<std::result::Result<Vec<Suspect>, String>>,
}

/// Finishes the reproduction while the culprit search runs from its first
/// failure; the search has the pool first, the re-runs take what it leaves.
/// The code index reads the first failure's output meanwhile (it needs no
/// pool slot). With `await_fix`, the re-runs may stop after a few failures
/// once the search has named a culprit
/// ([`Reproducer::finish_or_await_fix`]); the reproducer is then returned to
/// finish them if no fix confirms the classification.
pub(super) async fn classify_with_early_search(
    ctx: &Context,
    reproduction: Reproduction,
    good: Option<String>,
    await_fix: bool,
) -> Result<(Classification, Early, Option<Reproducer>)> {
    let (reproducer, head) = match reproduction {
        Reproduction::Decided(c) => {
            let none = Early {
                search: None,
                suspects: None,
            };
            return Ok((c, none, None));
        }
        Reproduction::FirstFailure(r, head) => (r, *head),
    };
    let (baseline, output) = reproducer
        .first_failure()
        .map(|(b, o)| (b.clone(), o.to_string()))
        .ok_or_else(|| Error::internal("a started reproduction has seen its failure"))?;
    let search_ended = std::sync::OnceLock::new();
    // The search is polled first, so it holds precedence before the re-runs
    // ask for a slot. Whether it named a culprit is known before its
    // precedence ends, so the re-runs see it at their next turn.
    let early = async {
        let finding = early_search(ctx, baseline, &output, good, head).await;
        let _ = search_ended.set(search_ended_with(ctx, finding.as_ref()));
        finding
    };
    // The code index is CPU work: beside the search it slows the probes on
    // a small machine. A pipeline that verifies the revert itself reads it
    // later, beside the verification.
    let suspects = async {
        if await_fix {
            None
        } else {
            Some(code_path::suspects_for(ctx, Some(output.clone()), None).await)
        }
    };
    // The classification is journaled as soon as it is decided, while the
    // search may still run: a redelivery then skips the re-runs. One that
    // awaits a fix is not decided, so it is not journaled.
    let rest = async {
        let (classification, pending) = if await_fix {
            reproducer.finish_or_await_fix(ctx, &search_ended).await?
        } else {
            (reproducer.finish(ctx, true).await?, None)
        };
        if let (Some(journal), None) = (&ctx.journal, &pending) {
            journal.record_classification(&classification).await;
        }
        Ok::<_, Error>((classification, pending))
    };
    let (search, suspects, classification) = futures::future::join3(early, suspects, rest).await;
    let (classification, pending) = classification?;
    report_behaviour(ctx, &classification);
    Ok((classification, Early { search, suspects }, pending))
}

/// What the early search tells the re-runs at bad: whether it named a
/// culprit (one that changed more than tests), and how many of its probes
/// failed with the failure — each a single run with no pass at a revision
/// after the culprit, since the search's deterministic model puts the
/// culprit at or before every revision it judged bad.
fn search_ended_with(ctx: &Context, finding: Option<&HistoryFinding>) -> SearchEnded {
    let Some(f) = finding.filter(|f| f.culprit.is_some() && !f.summary.culprit_changes_only_tests)
    else {
        return SearchEnded::default();
    };
    let failing_probes = f
        .probes
        .iter()
        .filter(|(rev, p)| {
            **rev != ctx.bad && p.result == ProbeResult::Bad && p.runs == 1 && p.passes == 0
        })
        .count() as u32;
    SearchEnded {
        culprit_named: true,
        failing_probes,
    }
}
