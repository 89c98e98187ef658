//! The arbiter's conclusion: the winner, the culprit and the report.

use super::Proposal;
use crate::agents::test_behaviour::Classification;
use tracelab_domain::arbiter::select_winner;
use tracelab_domain::hypothesis::{Hypothesis, HypothesisStatus};
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::report::{BisectSummary, CULPRIT_CONFIDENCE, Culprit, Report};
use tracelab_domain::sequential::Behaviour;
use tracelab_domain::state::InvestigationState;
use tracelab_domain::verdict::{SearchFinding, decide};

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
    // Every run at bad: the comparison with a flaky good added some.
    let flaky = matches!(behaviour, Behaviour::Flaky).then(|| {
        bisect
            .as_ref()
            .and_then(|b| b.bad_flaky)
            .unwrap_or_else(|| classification.flaky_stats())
    });
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
