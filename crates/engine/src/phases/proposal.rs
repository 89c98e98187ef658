//! What the agents propose once the failure is classified: the culprit
//! search (from a checked `--good`), the order and environment checks and
//! the code-path agent's suspects.

use super::reproduction::{Early, classify_with_early_search};
use super::{Proposal, Reproduction, RevertCandidate};
use crate::agents::code_path;
use crate::agents::git_history::{self, FlakeModel, HistoryFinding};
use crate::agents::test_behaviour::{self, Classification, Reproducer};
use crate::context::Context;
use crate::focus::{self, SearchFocus};
use crate::oracle;
use crate::overlay::Overlay;
use std::collections::HashMap;
use std::sync::Arc;
use tracelab_domain::Result;
use tracelab_domain::bisect::ProbeResult;
use tracelab_domain::contract::RateOracle;
use tracelab_domain::experiment::RunCounts;
use tracelab_domain::hypothesis::{FlakyStats, Hypothesis};
use tracelab_domain::ids::HypothesisId;
use tracelab_domain::report::{BisectSummary, Suspect};
use tracelab_domain::sequential::{Behaviour, MAX_RUNS_CAP, background_rate, rate_higher};

/// What checking a given `--good` established.
enum GoodCheck {
    /// It passes: search from it.
    Good,
    /// It fails too, at a rate not significantly below bad's: the flakiness
    /// predates it and there is nothing to search. With the rate at bad
    /// over every run made there, the ones added to compare them included.
    FlakyAlready(FlakyStats, FlakyStats),
    /// It fails, but significantly less often: search for the commit that
    /// raised the rate, with the rate measured at good as the background
    /// (and the rate at bad, with any runs added to compare them).
    FlakinessRaised(FlakyStats, FlakyStats),
    /// It never failed in the runs made there, which bounds its rate (the
    /// upper end of the interval) without proving it zero: a flake-aware
    /// search against that bound, for a flaky failure a commit introduced.
    CleanWithin(FlakyStats, f64),
}

/// Checks `--good`. A deterministic failure there is the user's error; a
/// flaky failure there is evidence: its rate is measured with the same
/// sequential procedure as at bad and compared.
async fn check_good(
    ctx: &Context,
    classification: &Classification,
    good: &str,
    model: &mut FlakeModel,
) -> Result<GoodCheck> {
    let report = git_history::probe_good(ctx, good, model).await?;
    // A flaky failure's good revision is measured whatever its first runs
    // showed: passing the few runs a probe needs proves little against a
    // background rate of a few percent (0.95^13 = 0.51), and a search that
    // takes such a revision as clean blames the first background failure.
    if classification.decision.behaviour != Behaviour::Flaky
        || report.result == ProbeResult::Untestable
    {
        git_history::good_or_error(good, report)?;
        return Ok(GoodCheck::Good);
    }
    ctx.progress.report(&format!(
        "the failure is flaky: measuring the failure rate at the good revision {} too",
        &good[..good.len().min(12)]
    ));
    let at_good = test_behaviour::classify_at(
        ctx,
        good,
        classification.baseline.as_ref(),
        model.overlay.as_ref(),
    )
    .await?;
    let Some(baseline) = classification.baseline.as_ref() else {
        return Ok(GoodCheck::FlakyAlready(
            at_good.flaky_stats(),
            classification.flaky_stats(),
        ));
    };
    if at_good.counts.failures == 0 {
        // No failure in the sequential test's runs still allows a few
        // percent: the search judges revisions between that bound and bad.
        let stats = at_good.flaky_stats();
        return Ok(GoodCheck::CleanWithin(
            stats,
            classification.counts.failure_rate(),
        ));
    }
    let (mut at_good, mut at_bad) = (at_good.counts, classification.counts);
    // The sequential test stops once a rate is known to ±0.15, which is not
    // enough to tell 0.05 from 0.3 every time: while the difference is
    // neither significant (z ≥ 2.33) nor clearly absent (z < 1 after 50
    // runs each), both revisions get 10 more runs, up to the run cap.
    let judged = |c: RunCounts| c.failures + c.passes();
    let higher = |g: RunCounts, b: RunCounts, z: f64| {
        rate_higher(g.failures, judged(g), b.failures, judged(b), z)
    };
    let raised = loop {
        if higher(at_good, at_bad, 2.33) {
            break true;
        }
        let (ng, nb) = (judged(at_good), judged(at_bad));
        let settled = !higher(at_good, at_bad, 1.0) && ng >= 50 && nb >= 50;
        if settled || (ng >= MAX_RUNS_CAP && nb >= MAX_RUNS_CAP) {
            break false;
        }
        ctx.progress.report(&format!(
            "comparing failure rates: {}/{ng} at good, {}/{nb} at bad; 10 more runs each",
            at_good.failures, at_bad.failures
        ));
        let overlay = model.overlay.clone();
        let (g, b) = futures::future::try_join(
            test_behaviour::more_runs(ctx, good, baseline, overlay.as_ref(), 10),
            test_behaviour::more_runs(ctx, &ctx.bad, baseline, None, 10),
        )
        .await?;
        at_good = at_good.plus(g);
        at_bad = at_bad.plus(b);
    };
    let stats = FlakyStats::from_counts(at_good, true);
    let at_bad = FlakyStats::from_counts(at_bad, classification.decision.confident);
    Ok(if raised {
        GoodCheck::FlakinessRaised(stats, at_bad)
    } else {
        GoodCheck::FlakyAlready(stats, at_bad)
    })
}

/// Finishes the classification (the culprit search starts at the first
/// failure) and runs the git-history, test-behaviour and code-path agents.
/// Returns the classification with what the agents established.
pub async fn propose(
    ctx: &Context,
    reproduction: Reproduction,
    good: Option<String>,
) -> Result<(Classification, Proposal)> {
    let (classification, early, _) =
        classify_with_early_search(ctx, reproduction, good.clone(), false).await?;
    let proposal = propose_classified(ctx, &classification, good, early, false).await?;
    Ok((classification, proposal))
}

/// What [`propose_awaiting_fix`] established.
pub struct Proposed {
    pub classification: Classification,
    pub proposal: Proposal,
    /// The re-runs at bad, stopped early: set when
    /// `classification.fix_confirmation` is, to finish if no fix confirms it.
    pub pending: Option<Reproducer>,
}

/// [`propose`] for a pipeline that verifies the revert itself, right after:
/// the re-runs at bad may stop after a few failures once a culprit is named,
/// and the revert candidate then needs the clean runs that confirm the
/// classification ([`test_behaviour::FixConfirmation`]). The order and
/// environment checks ([`behaviour_checks`]) and the code-path agent's
/// suspects (`code_path::suspects`) are left to the caller, to run beside
/// the revert's verification.
pub async fn propose_awaiting_fix(
    ctx: &Context,
    reproduction: Reproduction,
    good: Option<String>,
) -> Result<Proposed> {
    let (classification, early, pending) =
        classify_with_early_search(ctx, reproduction, good.clone(), true).await?;
    let mut proposal = propose_classified(ctx, &classification, good, early, true).await?;
    if let (Some(confirm), Some(candidate)) =
        (&classification.fix_confirmation, proposal.revert.as_mut())
    {
        candidate.passes_needed = candidate.passes_needed.max(confirm.passes);
    }
    Ok(Proposed {
        classification,
        proposal,
        pending,
    })
}

/// The agents again, once the re-runs that stopped early have finished the
/// classification (no fix confirmed it): what the first proposal found
/// under the deterministic model is set aside, except the suspects.
pub async fn propose_again(
    ctx: &Context,
    classification: &Classification,
    good: Option<String>,
    suspects: Vec<Suspect>,
) -> Result<Proposal> {
    let early = Early {
        search: None,
        suspects: Some(Ok(suspects)),
    };
    propose_classified(ctx, classification, good, early, false).await
}

/// The agents once the failure is classified. An early search stands when
/// the failure proved deterministic (its model was right); otherwise its
/// "bad" and "untestable" judgements seed the search under the measured model
/// and only its "good" ones are probed again.
async fn propose_classified(
    ctx: &Context,
    classification: &Classification,
    good: Option<String>,
    early: Early,
    defer_behaviour: bool,
) -> Result<Proposal> {
    let Early {
        search: early,
        suspects: early_suspects,
    } = early;
    let history = async {
        let Some(baseline) = classification.baseline.clone() else {
            return Ok(None);
        };
        let overlay = if ctx.config.tests_at_revision {
            None
        } else {
            let files = oracle::judges(ctx, classification).await?;
            (!files.is_empty()).then(|| Overlay {
                rev: ctx.bad.clone(),
                files,
            })
        };
        let mut model = FlakeModel::new(
            classification.failure_rate(),
            ctx.config.good_miss_probability,
            MAX_RUNS_CAP,
            baseline,
        )
        .with_overlay(overlay);
        if classification.decision.behaviour == Behaviour::Deterministic
            && let Some(finding) = early
        {
            if let Some(c) = finding
                .summary
                .culprit
                .as_ref()
                .filter(|_| !finding.summary.culprit_changes_only_tests)
            {
                ctx.progress.report(&format!(
                    "culprit found: {} \"{}\" (confidence {:.3}; the failure is deterministic, so the search's judgements stand)",
                    &c.commit[..c.commit.len().min(12)],
                    c.summary,
                    finding.summary.confidence
                ));
            }
            return Ok(Some((finding, model)));
        }
        let early_oracle = early.as_ref().map(|f| f.summary.oracle);
        let seed: HashMap<_, _> = match (&early, model.background_rate) {
            (Some(f), None) => f
                .probes
                .iter()
                .filter(|(_, r)| r.result != ProbeResult::Good)
                .map(|(rev, r)| (rev.clone(), *r))
                .collect(),
            _ => HashMap::new(),
        };
        let (mut good_flaky, mut bad_flaky) = (None, None);
        if let Some(g) = &good {
            match check_good(ctx, classification, g, &mut model).await? {
                GoodCheck::Good => {}
                GoodCheck::FlakyAlready(stats, at_bad) => {
                    let summary = BisectSummary {
                        good: Some(g.clone()),
                        bad: ctx.bad.clone(),
                        parallelism: ctx.pool.size(),
                        confidence: 0.0,
                        good_flaky: Some(stats),
                        bad_flaky: Some(at_bad),
                        oracle_files: model
                            .overlay
                            .as_ref()
                            .map(|o| o.files.clone())
                            .unwrap_or_default(),
                        note: Some(format!(
                            "the flakiness predates the good revision: it fails {:.0}% of runs there and {:.0}% at bad, not significantly different, so no commit introduced it",
                            stats.failure_rate * 100.0,
                            at_bad.failure_rate * 100.0
                        )),
                        ..Default::default()
                    };
                    return Ok(Some((
                        HistoryFinding {
                            culprit: None,
                            summary,
                            probes: HashMap::new(),
                        },
                        model,
                    )));
                }
                GoodCheck::CleanWithin(stats, bad_rate) => {
                    model.failure_rate = bad_rate;
                    model.background_rate = Some(background_rate(
                        stats.failure_rate,
                        stats.interval.1,
                        bad_rate,
                    ));
                }
                GoodCheck::FlakinessRaised(stats, at_bad) => {
                    // The background is the upper end of good's 95% interval,
                    // so a revision before the culprit that fails now and
                    // then is not called bad (a good measured 0/50 may still
                    // fail 1 run in 15), but never so high that the rate test
                    // decides above the midpoint of the measured rates.
                    let bad_rate = at_bad.failure_rate;
                    model.failure_rate = bad_rate;
                    model.background_rate = Some(background_rate(
                        stats.failure_rate,
                        stats.interval.1,
                        bad_rate,
                    ));
                    good_flaky = Some(stats);
                    bad_flaky = Some(at_bad);
                }
            }
        }
        // Judgements stay valid only under the same rate model and oracle.
        let oracle = model.oracle();
        let seed = if model.background_rate.is_some() || early_oracle != Some(oracle) {
            HashMap::new()
        } else {
            seed
        };
        if let Some(output) = classification.baseline_output.as_deref() {
            let focus = focus::failure_focus(ctx, output).await;
            model.focus = Some(Arc::new(SearchFocus::new(focus)));
        }
        let mut finding = git_history::find_culprit(ctx, good.clone(), &model, seed).await?;
        finding.summary.good_flaky = good_flaky;
        finding.summary.bad_flaky = bad_flaky;
        Ok(Some((finding, model)))
    };
    // The order and environment checks share the pool's slots with the
    // search (which has precedence), side by side — or, deferred, with the
    // revert's verification ([`behaviour_checks`]).
    let behaviour_agent = async {
        if defer_behaviour {
            return Ok(Vec::new());
        }
        behaviour_checks(ctx, classification).await
    };
    let agents = futures::future::try_join(history, behaviour_agent);
    let suspects = async {
        match early_suspects {
            Some(known) => known,
            // Left to the caller, beside the verification.
            None if defer_behaviour => Ok(Vec::new()),
            None => code_path::suspects(ctx, classification).await,
        }
    };
    let (agents, suspects) = futures::future::join(agents, suspects).await;
    let (history, behaviour) = agents?;
    // Numbers follow a fixed agent order, whatever finished first: the
    // flaky hypothesis, the culprit's revert, the order and environment
    // checks (so a deferred check never renumbers the revert).
    let hypotheses: Vec<Hypothesis> = test_behaviour::flaky_hypothesis(ctx, 1, classification)
        .into_iter()
        .collect();
    let mut proposal = Proposal {
        behaviour: classification.decision.behaviour,
        revert: None,
        bisect: None,
        notes: Vec::new(),
        hypotheses,
        suspects: Vec::new(),
        repair: None,
        repair_after_revert: None,
        experience: None,
    };
    match suspects {
        Ok(s) => proposal.suspects = s,
        Err(note) => proposal.notes.push(note),
    }
    if let Some((finding, model)) = history {
        proposal.notes.extend(
            [&finding.summary.oracle_note, &finding.summary.note]
                .into_iter()
                .flatten()
                .cloned(),
        );
        proposal.bisect = Some(finding.summary);
        if let Some(culprit) = finding.culprit
            && proposal.hypotheses.len() < ctx.config.max_hypotheses
        {
            proposal.revert = Some(RevertCandidate {
                number: proposal.hypotheses.len() as u32 + 1,
                culprit,
                passes_needed: model.passes_needed,
                rates: model.background_rate.map(|low| RateOracle {
                    low,
                    high: model.failure_rate,
                    miss: model.miss,
                }),
            });
        }
    }
    let next = proposal.next_number();
    proposal.hypotheses.extend(numbered(ctx, behaviour, next));
    Ok(proposal)
}

/// The order and environment checks at the bad revision, in that order,
/// not yet numbered ([`numbered`]).
pub async fn behaviour_checks(
    ctx: &Context,
    classification: &Classification,
) -> Result<Vec<Hypothesis>> {
    // The failing test alone first: its run starts the order check, and
    // when it fails alone the environment variants run it alone too.
    let alone = test_behaviour::Alone::run(ctx, classification).await?;
    let (order, env) = futures::future::try_join(
        test_behaviour::order_dependence(ctx, 0, classification, alone.as_ref()),
        test_behaviour::environment_dependence(ctx, 0, classification, alone.as_ref()),
    )
    .await?;
    Ok(order.into_iter().chain(env).collect())
}

/// `hypotheses` numbered from `first`, with their ids.
pub fn numbered(ctx: &Context, mut hypotheses: Vec<Hypothesis>, first: u32) -> Vec<Hypothesis> {
    for (i, h) in hypotheses.iter_mut().enumerate() {
        h.number = first + i as u32;
        h.id = HypothesisId::new(&ctx.id, h.number);
    }
    hypotheses
}
