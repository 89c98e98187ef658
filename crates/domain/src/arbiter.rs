//! Picks the winning hypothesis by evidence, never by a model's confidence.
//!
//! Order: verified before anything else; then the strength of the fix
//! (failure rate before times pass rate after, over re-runs); then existing
//! tests passing; then kind (a fix explains more than a classification);
//! then the smaller patch; then the lower hypothesis number, so ties are stable.

use crate::contract::step_counts;
use crate::experiment::{Outcome, Step};
use crate::hypothesis::{Hypothesis, HypothesisStatus};
use std::cmp::Ordering;

fn rate(h: &Hypothesis, step: Step, failures: bool) -> f64 {
    let total = step_counts(&h.experiments, step).unwrap_or_default();
    let judged = total.failures + total.passes();
    if judged == 0 {
        return 0.0;
    }
    if failures {
        total.failure_rate()
    } else {
        f64::from(total.passes()) / f64::from(judged)
    }
}

/// Evidence strength of a fix in [0, 1]: how reliably it failed before and passed after.
pub fn fix_strength(h: &Hypothesis) -> f64 {
    if !h.kind.has_fix() {
        return 0.0;
    }
    rate(h, Step::RegressionBefore, true) * rate(h, Step::RegressionAfter, false)
}

fn existing_tests_pass(h: &Hypothesis) -> bool {
    let mut runs = h
        .experiments
        .iter()
        .filter(|e| e.step == Step::ExistingTests)
        .peekable();
    runs.peek().is_some() && runs.all(|e| e.outcome == Outcome::Pass)
}

/// Orders two hypotheses, best first.
pub fn compare(a: &Hypothesis, b: &Hypothesis) -> Ordering {
    let verified = |h: &Hypothesis| h.status == HypothesisStatus::Verified;
    verified(b)
        .cmp(&verified(a))
        .then_with(|| fix_strength(b).total_cmp(&fix_strength(a)))
        .then_with(|| existing_tests_pass(b).cmp(&existing_tests_pass(a)))
        .then_with(|| b.kind.has_fix().cmp(&a.kind.has_fix()))
        .then_with(|| a.patch_size().cmp(&b.patch_size()))
        .then_with(|| a.number.cmp(&b.number))
}

/// The winner: the best verified hypothesis, or none when nothing was verified.
pub fn select_winner(hypotheses: &[Hypothesis]) -> Option<&Hypothesis> {
    hypotheses
        .iter()
        .filter(|h| h.status == HypothesisStatus::Verified)
        .min_by(|a, b| compare(a, b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Experiment, RunCounts};
    use crate::hypothesis::{AgentKind, HypothesisKind};
    use crate::ids::{HypothesisId, InvestigationId};

    fn hyp(
        number: u32,
        kind: HypothesisKind,
        status: HypothesisStatus,
        patch: Option<&str>,
    ) -> Hypothesis {
        let mut h = Hypothesis::new(
            HypothesisId::new(&InvestigationId("i".into()), number),
            number,
            AgentKind::GitHistory,
            kind,
            "test",
        );
        h.status = status;
        h.patch = patch.map(str::to_string);
        h
    }

    fn batch(step: Step, runs: u32, failures: u32) -> Experiment {
        Experiment {
            step,
            command: "t".into(),
            revision: "r".into(),
            exit_code: Some(0),
            duration_ms: 1,
            outcome: if failures > 0 {
                Outcome::Fail
            } else {
                Outcome::Pass
            },
            output: String::new(),
            sandbox: "local".into(),
            note: None,
            counts: Some(RunCounts {
                runs,
                failures,
                other: 0,
            }),
        }
    }

    #[test]
    fn nothing_verified_means_no_winner() {
        let hs = vec![hyp(
            1,
            HypothesisKind::Revert,
            HypothesisStatus::Rejected,
            Some("+a\n"),
        )];
        assert!(select_winner(&hs).is_none());
    }

    #[test]
    fn stronger_evidence_beats_smaller_patch() {
        let mut weak = hyp(
            1,
            HypothesisKind::Revert,
            HypothesisStatus::Verified,
            Some("+a\n"),
        );
        weak.experiments = vec![
            batch(Step::RegressionBefore, 10, 3),
            batch(Step::RegressionAfter, 10, 0),
        ];
        let mut strong = hyp(
            2,
            HypothesisKind::Revert,
            HypothesisStatus::Verified,
            Some("+a\n+b\n-c\n"),
        );
        strong.experiments = vec![
            batch(Step::RegressionBefore, 10, 10),
            batch(Step::RegressionAfter, 10, 0),
        ];
        assert_eq!(select_winner(&[weak, strong]).unwrap().number, 2);
    }

    #[test]
    fn equal_evidence_prefers_the_smaller_patch() {
        let evidence = vec![
            batch(Step::RegressionBefore, 5, 5),
            batch(Step::RegressionAfter, 5, 0),
        ];
        let mut big = hyp(
            1,
            HypothesisKind::Revert,
            HypothesisStatus::Verified,
            Some("+a\n+b\n"),
        );
        big.experiments = evidence.clone();
        let mut small = hyp(
            2,
            HypothesisKind::Revert,
            HypothesisStatus::Verified,
            Some("+a\n"),
        );
        small.experiments = evidence;
        assert_eq!(select_winner(&[big, small]).unwrap().number, 2);
    }

    #[test]
    fn a_verified_fix_beats_a_verified_classification() {
        let flaky = hyp(1, HypothesisKind::Flaky, HypothesisStatus::Verified, None);
        let mut fix = hyp(
            2,
            HypothesisKind::Revert,
            HypothesisStatus::Verified,
            Some("+a\n"),
        );
        fix.experiments = vec![
            batch(Step::RegressionBefore, 5, 5),
            batch(Step::RegressionAfter, 5, 0),
        ];
        assert_eq!(select_winner(&[flaky, fix]).unwrap().number, 2);
    }
}
