//! The investigation's verdict: what kind of failure this is.

use crate::hypothesis::{Hypothesis, HypothesisKind, HypothesisStatus};
use crate::sequential::Behaviour;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// A commit introduced the failure: the search found it with confidence
    /// (the report's `culprit.verified` says whether a fix was proven).
    Regression,
    /// A commit made a flaky failure significantly more frequent.
    FlakinessRegression,
    Flaky,
    OrderDependent,
    EnvironmentDependent,
    /// Fails every time and no commit is known to have introduced it; the
    /// report's winner carries a proven fix when one was verified (a repair).
    Deterministic,
    /// The failure did not happen at the bad revision.
    NotReproduced,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Regression => "regression",
            Verdict::FlakinessRegression => "flakiness_regression",
            Verdict::Flaky => "flaky",
            Verdict::OrderDependent => "order_dependent",
            Verdict::EnvironmentDependent => "environment_dependent",
            Verdict::Deterministic => "deterministic",
            Verdict::NotReproduced => "not_reproduced",
        }
    }
}

/// What the culprit search established, for the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchFinding {
    /// No culprit (none searched, none found, or below the confidence bar).
    None,
    /// A commit introduced the failure.
    Culprit,
    /// A commit raised the rate of a failure that was already flaky before it.
    FlakinessRaised,
}

/// Derives the verdict from the winner, the culprit search and the measured
/// behaviour at the bad revision. A verified fix or a confident culprit names
/// a regression — a culprit that was found is never hidden because its fix
/// was not proven; otherwise the strongest verified classification wins;
/// otherwise the behaviour measured by re-runs.
pub fn decide(
    winner: Option<&Hypothesis>,
    hypotheses: &[Hypothesis],
    behaviour: Behaviour,
    search: SearchFinding,
) -> Verdict {
    match search {
        SearchFinding::FlakinessRaised => return Verdict::FlakinessRegression,
        // Also a flaky failure that a commit introduced (it never failed before).
        SearchFinding::Culprit => return Verdict::Regression,
        _ => {}
    }
    if let Some(w) = winner.filter(|w| w.status == HypothesisStatus::Verified) {
        match w.kind {
            HypothesisKind::Revert => return Verdict::Regression,
            // A repaired bug that no commit is known to have introduced: the
            // behaviour says what kind of failure it was; the winner carries the fix.
            HypothesisKind::Patch => {}
            HypothesisKind::OrderDependent => return Verdict::OrderDependent,
            HypothesisKind::EnvironmentDependent => return Verdict::EnvironmentDependent,
            HypothesisKind::Flaky => return Verdict::Flaky,
        }
    }
    let verified = |kind| {
        hypotheses
            .iter()
            .any(|h| h.kind == kind && h.status == HypothesisStatus::Verified)
    };
    if verified(HypothesisKind::EnvironmentDependent) {
        return Verdict::EnvironmentDependent;
    }
    match behaviour {
        Behaviour::NeverFails => Verdict::NotReproduced,
        Behaviour::Flaky => Verdict::Flaky,
        Behaviour::Deterministic if verified(HypothesisKind::OrderDependent) => {
            Verdict::OrderDependent
        }
        Behaviour::Deterministic => Verdict::Deterministic,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hypothesis::AgentKind;
    use crate::ids::{HypothesisId, InvestigationId};

    fn verified(kind: HypothesisKind) -> Hypothesis {
        let id = InvestigationId::generate();
        let mut h = Hypothesis::new(HypothesisId::new(&id, 1), 1, AgentKind::CodePath, kind, "x");
        h.status = HypothesisStatus::Verified;
        h
    }

    #[test]
    fn a_verified_repair_is_not_called_a_regression() {
        let patch = verified(HypothesisKind::Patch);
        let all = [patch.clone()];
        let v = decide(
            Some(&patch),
            &all,
            Behaviour::Deterministic,
            SearchFinding::None,
        );
        assert_eq!(v, Verdict::Deterministic);
        let revert = verified(HypothesisKind::Revert);
        let all = [revert.clone()];
        let v = decide(
            Some(&revert),
            &all,
            Behaviour::Deterministic,
            SearchFinding::None,
        );
        assert_eq!(v, Verdict::Regression);
        // A culprit found by the search still names a regression.
        let v = decide(
            Some(&patch),
            &[],
            Behaviour::Deterministic,
            SearchFinding::Culprit,
        );
        assert_eq!(v, Verdict::Regression);
    }
}
