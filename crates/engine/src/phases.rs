//! The pipeline as four phases with plain inputs and outputs, so the embedded
//! engine runs them in one process and the fleet runs them in different
//! services (investigator: [`reproduce`] and [`propose`]; verifier:
//! [`verify_candidate`]; arbiter: [`conclude`]) with the same code.

use crate::agents::code_path;
use crate::agents::git_history::{self, FlakeModel, HistoryFinding};
use crate::agents::test_behaviour::{self, Classification, Reproducer, SearchEnded};
use crate::context::Context;
use crate::oracle;
use crate::overlay::Overlay;
use crate::verify::{RevertPlan, verify_revert};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use tracelab_domain::arbiter::select_winner;
use tracelab_domain::bisect::ProbeResult;
use tracelab_domain::experiment::RunCounts;
use tracelab_domain::hypothesis::{AgentKind, Hypothesis, HypothesisKind};
use tracelab_domain::hypothesis::{FlakyStats, HypothesisStatus};
use tracelab_domain::ids::{HypothesisId, InvestigationId, hypothesis_branch};
use tracelab_domain::report::{BisectSummary, CULPRIT_CONFIDENCE, Culprit, Report, Suspect};
use tracelab_domain::sequential::{Behaviour, MAX_RUNS_CAP, rate_higher};
use tracelab_domain::signature::FailureSignature;
use tracelab_domain::state::InvestigationState;
use tracelab_domain::verdict::{SearchFinding, decide};
use tracelab_domain::{Error, Result};

/// The culprit commit found by the git-history agent, waiting for its revert
/// to be verified.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RevertCandidate {
    /// The hypothesis number its verification will carry.
    pub number: u32,
    /// Full sha.
    pub culprit: String,
    /// Consecutive passes that make the fixed test trustworthy (flake model).
    pub passes_needed: u32,
}

/// What the agents established before verification.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Proposal {
    pub behaviour: Behaviour,
    /// Hypotheses the agents already settled with their own experiments
    /// (flaky, order- and environment-dependent), numbered from 1.
    pub hypotheses: Vec<Hypothesis>,
    /// The hypothesis that still needs a sandbox to be proved.
    pub revert: Option<RevertCandidate>,
    pub bisect: Option<BisectSummary>,
    pub notes: Vec<String>,
    /// Where to look in the code (the code-path agent), best first.
    #[serde(default)]
    pub suspects: Vec<Suspect>,
    /// The repair hypothesis a verifier proves, when the fleet proposes one
    /// (the embedded pipeline decides after the revert is verified).
    #[serde(default)]
    pub repair: Option<RepairCandidate>,
    /// The repair to prove if the revert is not verified: in the fleet the
    /// revert's verifier proposes it then, as the embedded pipeline does.
    #[serde(default)]
    pub repair_after_revert: Option<RepairCandidate>,
    /// The experience agent's hypothesis a verifier proves, when the fleet
    /// proposes one ([`propose_experience`]).
    #[serde(default)]
    pub experience: Option<RepairCandidate>,
}

/// Repair templates to screen and prove on the proposal's suspects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepairCandidate {
    /// The hypothesis number its verification will carry.
    pub number: u32,
}

/// The reproduction as far as the pipeline waits for it: the first run that
/// shows the failure, after which the culprit search can start while the
/// sequential test goes on ([`propose`] finishes it).
pub enum Reproduction {
    /// The sequential test decided without ever showing the failure.
    Decided(Classification),
    /// The failure was seen; the re-runs go on in the background.
    FirstFailure(Reproducer),
}

/// Re-runs the test at the bad revision until it shows the failure (or
/// the sequential test decides without it). Unavailable when the test cannot
/// run there at all.
pub async fn reproduce(ctx: &Context) -> Result<Reproduction> {
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
    reproducer.until_first_failure(ctx).await?;
    if !reproducer.decided() {
        return Ok(Reproduction::FirstFailure(reproducer));
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
) -> Option<HistoryFinding> {
    // Held from the start through the good check and the search, so no
    // re-run slips in between.
    let _precedence = ctx.pool.precedence();
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
    let mut model = FlakeModel::new(
        1.0,
        ctx.config.good_miss_probability,
        MAX_RUNS_CAP,
        baseline,
    )
    .with_overlay(overlay);
    model.provisional = true;
    if let Some(g) = &good {
        let report = git_history::probe_good(ctx, g, &mut model).await.ok()?;
        if report.result != ProbeResult::Good {
            return None;
        }
    }
    git_history::find_culprit(ctx, good, &model, HashMap::new())
        .await
        .ok()
}

/// What the pipeline started at the first failure, before the re-runs
/// had classified it.
struct Early {
    search: Option<HistoryFinding>,
    suspects: Option<std::result::Result<Vec<Suspect>, String>>,
}

/// Finishes the reproduction while the culprit search runs from its first
/// failure; the search has the pool first, the re-runs take what it leaves.
/// The code index reads the first failure's output meanwhile (it needs no
/// pool slot). With `await_fix`, the re-runs may stop after a few failures
/// once the search has named a culprit
/// ([`Reproducer::finish_or_await_fix`]); the reproducer is then returned to
/// finish them if no fix confirms the classification.
async fn classify_with_early_search(
    ctx: &Context,
    reproduction: Reproduction,
    good: Option<String>,
    await_fix: bool,
) -> Result<(Classification, Early, Option<Reproducer>)> {
    let reproducer = match reproduction {
        Reproduction::Decided(c) => {
            let none = Early {
                search: None,
                suspects: None,
            };
            return Ok((c, none, None));
        }
        Reproduction::FirstFailure(r) => r,
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
        let finding = early_search(ctx, baseline, &output, good).await;
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

/// What checking a given `--good` established.
enum GoodCheck {
    /// It passes: search from it.
    Good,
    /// It fails too, at a rate not significantly below bad's: the flakiness
    /// predates it and there is nothing to search.
    FlakyAlready(FlakyStats),
    /// It fails, but significantly less often: search for the commit that
    /// raised the rate, with the rate measured at good as the background
    /// (and the rate at bad, with any runs added to compare them).
    FlakinessRaised(FlakyStats, f64),
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
        return Ok(GoodCheck::FlakyAlready(at_good.flaky_stats()));
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
    let bad_rate = at_bad.failure_rate();
    Ok(if raised {
        GoodCheck::FlakinessRaised(stats, bad_rate)
    } else {
        GoodCheck::FlakyAlready(stats)
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
        let mut good_flaky = None;
        if let Some(g) = &good {
            match check_good(ctx, classification, g, &mut model).await? {
                GoodCheck::Good => {}
                GoodCheck::FlakyAlready(stats) => {
                    let summary = BisectSummary {
                        good: Some(g.clone()),
                        bad: ctx.bad.clone(),
                        parallelism: ctx.pool.size(),
                        confidence: 0.0,
                        good_flaky: Some(stats),
                        oracle_files: model
                            .overlay
                            .as_ref()
                            .map(|o| o.files.clone())
                            .unwrap_or_default(),
                        note: Some(format!(
                            "the flakiness predates the good revision: it fails {:.0}% of runs there and {:.0}% at bad, not significantly different, so no commit introduced it",
                            stats.failure_rate * 100.0,
                            classification.counts.failure_rate() * 100.0
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
                    let midpoint = bad_rate / 2.0;
                    model.background_rate = Some(stats.interval.1.min(midpoint));
                }
                GoodCheck::FlakinessRaised(stats, bad_rate) => {
                    // The background is the upper end of good's 95% interval
                    // (never above the midpoint), so a revision before the
                    // culprit that fails now and then is not called bad: a
                    // good measured 0/50 may still fail 1 run in 15.
                    model.failure_rate = bad_rate;
                    let midpoint = (stats.failure_rate + bad_rate) / 2.0;
                    model.background_rate = Some(stats.interval.1.min(midpoint));
                    good_flaky = Some(stats);
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
        let mut finding = git_history::find_culprit(ctx, good.clone(), &model, seed).await?;
        finding.summary.good_flaky = good_flaky;
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

impl Proposal {
    /// The number the next hypothesis gets: after the settled ones and the
    /// revert, when there is one.
    pub fn next_number(&self) -> u32 {
        let settled = self.hypotheses.iter().map(|h| h.number).max().unwrap_or(0);
        let revert = self.revert.as_ref().map_or(0, |r| r.number);
        settled.max(revert) + 1
    }
}

/// Proves or refutes the revert of the culprit under the verification
/// contract, on its own branch and sandbox.
pub async fn verify_candidate(
    ctx: &Context,
    classification: &Classification,
    candidate: &RevertCandidate,
) -> Result<Hypothesis> {
    ctx.progress.report(&format!(
        "verifying the revert of {}",
        &candidate.culprit[..12.min(candidate.culprit.len())]
    ));
    verify_revert(
        ctx,
        RevertPlan {
            number: candidate.number,
            culprit: &candidate.culprit,
            classification,
            passes_needed: candidate.passes_needed,
        },
    )
    .await
}

/// Proposes a repair when [`crate::repair::wanted`] says so (the fleet's
/// investigator; verifiers run [`crate::repair::repair`] on it). With a
/// revert to prove first, the repair waits for it: it is only noted in
/// `proposal.repair_after_revert`, and the revert's verifier proposes it
/// ([`pending_repair`]) if the revert is not verified.
pub fn propose_repair(
    ctx: &Context,
    classification: &Classification,
    proposal: &mut Proposal,
    hypotheses: &[Hypothesis],
) -> Option<Hypothesis> {
    if proposal.suspects.is_empty()
        || !crate::repair::wanted(&ctx.config, classification, hypotheses)
    {
        return None;
    }
    let number = hypotheses.len() as u32 + 1;
    if proposal.revert.is_some() {
        proposal.repair_after_revert = Some(RepairCandidate { number });
        return None;
    }
    proposal.repair = Some(RepairCandidate { number });
    Some(pending_repair(ctx, number))
}

/// The repair hypothesis `number` as proposed, before a verifier has run it
/// (PENDING).
pub fn pending_repair(ctx: &Context, number: u32) -> Hypothesis {
    let mut h = Hypothesis::new(
        HypothesisId::new(&ctx.id, number),
        number,
        AgentKind::CodePath,
        HypothesisKind::Patch,
        "an edit of a suspect function fixes the failure (repair templates)",
    );
    h.branch = Some(hypothesis_branch(&ctx.issue_id, number));
    h.status_reason = "waiting for a verifier".into();
    h
}

/// Proposes the experience agent's hypothesis for a verifier (the fleet's
/// investigator; the verifier runs [`crate::agents::experience::reuse`]),
/// when the agent is wanted and a past repair of this repository (L1) was
/// retrieved for the failure; the L2/L3 guidance goes to the notes as in the
/// embedded pipeline. With a revert to prove it is not proposed: the
/// embedded pipeline reuses experience only when the revert is not
/// verified, and the fleet does not chain it after the revert yet.
pub fn propose_experience(
    ctx: &Context,
    classification: &Classification,
    proposal: &mut Proposal,
    hypotheses: &[Hypothesis],
) -> Option<Hypothesis> {
    if proposal.revert.is_some()
        || !crate::agents::experience::wanted(&ctx.config, classification, hypotheses)
    {
        return None;
    }
    let preview = crate::agents::experience::preview(ctx, classification);
    proposal.notes.extend(preview.notes);
    if preview.concrete == 0 {
        return None;
    }
    let number = hypotheses.len() as u32 + 1;
    proposal.experience = Some(RepairCandidate { number });
    let mut h = Hypothesis::new(
        HypothesisId::new(&ctx.id, number),
        number,
        AgentKind::Experience,
        HypothesisKind::Patch,
        "a past repair of this failure, re-applied, fixes it (experience)",
    );
    h.branch = Some(hypothesis_branch(&ctx.issue_id, number));
    h.status_reason = "waiting for a verifier".into();
    Some(h)
}

/// The revert hypothesis as proposed, before a verifier has run it (PENDING).
pub async fn proposed_revert(ctx: &Context, candidate: &RevertCandidate) -> Result<Hypothesis> {
    let info = ctx
        .pool
        .workspace()
        .git()
        .commit_info(&candidate.culprit)
        .await?;
    let mut h = Hypothesis::new(
        HypothesisId::new(&ctx.id, candidate.number),
        candidate.number,
        AgentKind::GitHistory,
        HypothesisKind::Revert,
        format!(
            "commit {} \"{}\" introduced the failure; reverting it fixes it",
            &info.commit[..12.min(info.commit.len())],
            info.summary
        ),
    );
    h.culprit = Some(info);
    h.branch = Some(hypothesis_branch(&ctx.issue_id, candidate.number));
    h.status_reason = "waiting for a verifier".into();
    Ok(h)
}

/// The arbiter: picks the winner by evidence and writes the diagnosis. No IO.
pub fn conclude(
    id: &InvestigationId,
    test_command: String,
    bad: String,
    classification: &Classification,
    proposal: Proposal,
    hypotheses: Vec<Hypothesis>,
) -> Report {
    let Proposal {
        behaviour,
        bisect,
        mut notes,
        suspects,
        ..
    } = proposal;
    let winner = select_winner(&hypotheses).cloned();
    let culprit = found_culprit(bisect.as_ref(), &hypotheses);
    let search = match (&culprit, bisect.as_ref().and_then(|b| b.good_flaky)) {
        (None, _) => SearchFinding::None,
        (Some(_), Some(_)) => SearchFinding::FlakinessRaised,
        (Some(_), None) => SearchFinding::Culprit,
    };
    let verdict = decide(winner.as_ref(), &hypotheses, behaviour, search);
    if let Some(note) = bisect.as_ref().and_then(test_only_commit_note) {
        notes.push(note);
    }
    if let Some(c) = culprit.as_ref().filter(|c| !c.verified) {
        notes.push(format!(
            "the culprit {} was found by the search but no fix for it was verified: {}",
            &c.commit.commit[..c.commit.commit.len().min(12)],
            c.verification
        ));
    }
    let flaky = matches!(behaviour, Behaviour::Flaky).then(|| classification.flaky_stats());
    Report {
        id: id.clone(),
        state: InvestigationState::WaitingForReview,
        verdict,
        culprit,
        flaky,
        hypotheses,
        winner,
        repository: String::new(),
        test_command,
        good: bisect.as_ref().and_then(|b| b.good.clone()),
        bad,
        failure: classification.baseline.as_ref().map(|b| b.describe()),
        reproduction: Some(classification.experiment.clone()),
        bisect,
        suspects,
        notes,
        created_at: time::OffsetDateTime::now_utc(),
        duration_ms: 0,
        transitions: Vec::new(),
    }
}

/// What the search's answer means when it is a commit that changes tests
/// only, under each revision's own tests: the failing test appeared there.
fn test_only_commit_note(b: &BisectSummary) -> Option<String> {
    let c = b
        .culprit
        .as_ref()
        .filter(|_| b.culprit_changes_only_tests)?;
    Some(format!(
        "the search ended at {} \"{}\", which changes test files only: running each revision's own \
         tests, that is where the failing test appeared or changed, so the defect it exposes is older; \
         it is not reported as the culprit",
        &c.commit[..c.commit.len().min(12)],
        c.summary
    ))
}

/// The culprit the search found with confidence, with what verification
/// established about it. Never dropped because its fix failed. A commit
/// that only changed the tests the probes ran is not a culprit
/// ([`test_only_commit_note`] says where it went).
fn found_culprit(bisect: Option<&BisectSummary>, hypotheses: &[Hypothesis]) -> Option<Culprit> {
    let b = bisect?;
    if b.culprit_changes_only_tests {
        return None;
    }
    let info = b.culprit.clone()?;
    if b.confidence < CULPRIT_CONFIDENCE {
        return None;
    }
    let fix = hypotheses
        .iter()
        .find(|h| h.kind.has_fix() && h.culprit.as_ref().is_some_and(|c| c.commit == info.commit));
    let (verified, verification) = match fix {
        Some(h) => (
            h.status == HypothesisStatus::Verified,
            format!(
                "hypothesis {} {}: {}",
                h.number,
                h.status.as_str(),
                h.status_reason
            ),
        ),
        None => (
            false,
            "no fix was attempted (the hypothesis limit was reached)".to_string(),
        ),
    };
    Some(Culprit {
        commit: info,
        confidence: b.confidence,
        verified,
        verification,
    })
}
