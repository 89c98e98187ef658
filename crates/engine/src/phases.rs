//! The pipeline as four phases with plain inputs and outputs, so the embedded
//! engine runs them in one process and the fleet runs them in different
//! services (investigator: [`reproduce`] and [`propose`]; verifier:
//! [`verify_candidate`]; arbiter: [`conclude`]) with the same code.

use crate::agents::code_path;
use crate::agents::git_history::{self, FlakeModel};
use crate::agents::test_behaviour::{self, Classification};
use crate::context::Context;
use crate::verify::{RevertPlan, verify_revert};
use serde::{Deserialize, Serialize};
use tracelab_domain::arbiter::select_winner;
use tracelab_domain::hypothesis::{AgentKind, Hypothesis, HypothesisKind};
use tracelab_domain::ids::{HypothesisId, InvestigationId, hypothesis_branch};
use tracelab_domain::report::{BisectSummary, Report, Suspect};
use tracelab_domain::sequential::{Behaviour, MAX_RUNS_CAP};
use tracelab_domain::state::InvestigationState;
use tracelab_domain::verdict::decide;
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
}

/// Re-runs the test at the bad revision until its behaviour is classified.
/// Unavailable when the test cannot run there at all.
pub async fn reproduce(ctx: &Context) -> Result<Classification> {
    ctx.progress.report(&format!(
        "reproducing `{}` at {}",
        ctx.test.display(),
        &ctx.bad[..12.min(ctx.bad.len())]
    ));
    let classification = test_behaviour::classify(ctx).await?;
    if let Some(reason) = &classification.blocked {
        return Err(Error::unavailable(format!(
            "the test could not run at the bad revision: {reason}"
        )));
    }
    ctx.progress.report(&format!(
        "the failure is {:?} ({} of {} runs failed)",
        classification.decision.behaviour,
        classification.counts.failures,
        classification.counts.runs
    ));
    Ok(classification)
}

/// Runs the git-history and test-behaviour agents concurrently.
pub async fn propose(
    ctx: &Context,
    classification: &Classification,
    good: Option<String>,
) -> Result<Proposal> {
    let history = async {
        let Some(baseline) = classification.baseline.clone() else {
            return Ok(None);
        };
        let model = FlakeModel::new(
            classification.failure_rate(),
            ctx.config.good_miss_probability,
            MAX_RUNS_CAP,
            baseline,
        );
        if let Some(g) = &good {
            git_history::check_good(ctx, g, &model).await?;
        }
        git_history::find_culprit(ctx, good.clone(), &model)
            .await
            .map(|f| Some((f, model)))
    };
    let behaviour_agent = async {
        let order = test_behaviour::order_dependence(ctx, 0, classification).await?;
        let env = test_behaviour::environment_dependence(ctx, 0, classification).await?;
        Ok::<_, Error>((order, env))
    };
    let agents = futures::future::try_join(history, behaviour_agent);
    let (agents, suspects) =
        futures::future::join(agents, code_path::suspects(ctx, classification)).await;
    let (history, (order, env)) = agents?;
    // Numbers follow a fixed agent order, whatever finished first.
    let mut hypotheses: Vec<Hypothesis> = Vec::new();
    hypotheses.extend(test_behaviour::flaky_hypothesis(ctx, 0, classification));
    hypotheses.extend(order);
    hypotheses.extend(env);
    for (i, h) in hypotheses.iter_mut().enumerate() {
        h.number = i as u32 + 1;
        h.id = HypothesisId::new(&ctx.id, h.number);
    }
    let mut proposal = Proposal {
        behaviour: classification.decision.behaviour,
        revert: None,
        bisect: None,
        notes: Vec::new(),
        hypotheses,
        suspects: Vec::new(),
    };
    match suspects {
        Ok(s) => proposal.suspects = s,
        Err(note) => proposal.notes.push(note),
    }
    if let Some((finding, model)) = history {
        if let Some(note) = &finding.summary.note {
            proposal.notes.push(note.clone());
        }
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
    Ok(proposal)
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
    let verdict = decide(winner.as_ref(), &hypotheses, behaviour);
    let culprit = winner
        .as_ref()
        .filter(|w| w.kind == HypothesisKind::Revert)
        .and_then(|w| w.culprit.clone());
    if culprit.is_none()
        && let Some(h) = hypotheses.iter().find(|h| h.kind == HypothesisKind::Revert)
    {
        notes.push(format!(
            "the culprit candidate was not verified: {}",
            h.status_reason
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
