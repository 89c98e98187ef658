//! The hypotheses a verifier proves: the revert's verification, and the
//! revert, repair and experience hypotheses as the fleet's investigator
//! proposes them (PENDING).

use super::{Proposal, RepairCandidate, RevertCandidate};
use crate::agents::test_behaviour::Classification;
use crate::context::Context;
use crate::verify::{RevertPlan, verify_revert};
use tracelab_domain::Result;
use tracelab_domain::hypothesis::{AgentKind, Hypothesis, HypothesisKind};
use tracelab_domain::ids::{HypothesisId, hypothesis_branch};

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
            rates: candidate.rates,
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
