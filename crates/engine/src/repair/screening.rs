//! Screening: each template candidate applied in a scratch worktree with only
//! the failing test run, k at a time, within a wall-clock budget.

use crate::classification::Classification;
use crate::context::Context;
use crate::git::Worktree;
use crate::probe::Judged;
use crate::verify::{exec_judged, regression_command, worktree_reset};
use serde::Serialize;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tracelab_domain::experiment::Outcome;
use tracelab_domain::hypothesis::Hypothesis;
use tracelab_domain::ports::{CommandSpec, Sandbox};
use tracelab_domain::{Error, Result};
use tracelab_repair::Candidate;

/// One screened candidate, as the report shows it.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Screened {
    #[serde(flatten)]
    pub(super) candidate: Candidate,
    pub(super) outcome: Outcome,
    duration_ms: u64,
}

/// What screening did, stored on the hypothesis (`detail.screening`).
#[derive(Debug, Clone, Serialize)]
pub(super) struct Screening {
    budget_ms: u64,
    pub(super) used_ms: u64,
    pub(super) generated: usize,
    /// Suspects left alone because they are test code or the oracle's files
    /// (a fix may never change what judges it).
    pub(super) skipped_test_suspects: Vec<String>,
    pub(super) screened: Vec<Screened>,
}

pub(super) fn with_detail(mut h: Hypothesis, screening: &Screening) -> Hypothesis {
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
pub(super) async fn screen(
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
