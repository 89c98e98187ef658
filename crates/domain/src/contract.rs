//! The four-part verification contract (DESIGN.md):
//! 1. the failure reproduces at the bad revision;
//! 2. the regression test fails before the fix;
//! 3. it passes after the fix;
//! 4. the relevant existing tests pass after the fix.
//!
//! Each part must be backed by a stored experiment. Blocked evidence gives
//! BLOCKED, contradicting evidence REJECTED, missing or mixed evidence INCONCLUSIVE.
//!
//! Part 4 runs the whole test command, and the regression test is isolated
//! from that command, so a clean run of part 4 (exit code 0) is also a clean
//! run of the regression test: it counts as one of the clean runs after the
//! fix that a flaky failure needs (at most one such run counts).

use crate::experiment::{Experiment, Outcome, RunCounts, Step};
use crate::hypothesis::HypothesisStatus;
use crate::sequential::{RateDecision, RateTest};

/// The judgement and its one-line reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    pub status: HypothesisStatus,
    pub reason: String,
}

fn judgement(status: HypothesisStatus, reason: impl Into<String>) -> Judgement {
    Judgement {
        status,
        reason: reason.into(),
    }
}

/// Whether `e` is a run of part 4 that is also a clean run of the regression
/// test: the whole test command passed outright (exit code 0), not only with
/// failures that already happened before the fix.
pub fn is_clean_suite_run(e: &Experiment) -> bool {
    e.step == Step::ExistingTests
        && e.outcome == Outcome::Pass
        && e.exit_code == Some(0)
        && e.counts.is_none()
}

/// What a run of part 4 counts as among a flakiness regression's runs of
/// the regression test after the fix ([`judge_rate_fix`]): `Some(true)`
/// when it failed with the failure under investigation and nothing else
/// (one more failing run), `Some(false)` when it is a clean run
/// ([`is_clean_suite_run`]), `None` when it is neither.
pub fn suite_run_as_regression_run(e: &Experiment) -> Option<bool> {
    match e.outcome {
        Outcome::Fail if e.counts.is_none() => Some(true),
        _ if is_clean_suite_run(e) => Some(false),
        _ => None,
    }
}

/// Parts 1 and 2, shared by every judgement: nothing blocked, the failure
/// reproduced, the regression test failed before the fix. Their counts, or
/// the judgement that ends here.
fn before_the_fix(experiments: &[Experiment]) -> Result<(RunCounts, RunCounts), Judgement> {
    use HypothesisStatus::*;
    let find = |step: Step| experiments.iter().filter(move |e| e.step == step);
    for step in [
        Step::Reproduction,
        Step::RegressionBefore,
        Step::RegressionAfter,
        Step::ExistingTests,
    ] {
        if let Some(blocked) =
            find(step).find(|e| e.outcome == Outcome::Blocked && e.counts.is_none())
        {
            let why = blocked
                .note
                .clone()
                .unwrap_or_else(|| "could not run".into());
            return Err(judgement(
                Blocked,
                format!("{} could not run: {why}", step.as_str()),
            ));
        }
    }
    let Some(repro) = step_counts(experiments, Step::Reproduction) else {
        return Err(judgement(Inconclusive, "no reproduction experiment"));
    };
    if repro.failures == 0 {
        return Err(judgement(
            Inconclusive,
            "the failure did not reproduce at the bad revision",
        ));
    }
    let Some(before) = step_counts(experiments, Step::RegressionBefore) else {
        return Err(judgement(
            Inconclusive,
            "no run of the regression test before the fix",
        ));
    };
    if before.failures == 0 {
        return Err(judgement(
            Inconclusive,
            "the regression test did not fail before the fix",
        ));
    }
    Ok((repro, before))
}

/// The runs of `step`'s experiments added up; `None` when there are none.
pub(crate) fn step_counts(experiments: &[Experiment], step: Step) -> Option<RunCounts> {
    let mut of_step = experiments.iter().filter(|e| e.step == step).peekable();
    of_step.peek()?;
    Some(of_step.fold(RunCounts::default(), |t, e| t.plus(e.effective_counts())))
}

/// Judges a hypothesis that carries a fix from its experiments.
/// `required_passes_after` is how many clean runs after the fix a flaky failure needs.
pub fn judge_fix(experiments: &[Experiment], required_passes_after: u32) -> Judgement {
    use HypothesisStatus::*;
    let (repro, before) = match before_the_fix(experiments) {
        Ok(counts) => counts,
        Err(j) => return j,
    };
    let counts = |step: Step| step_counts(experiments, step);
    let Some(after) = counts(Step::RegressionAfter) else {
        return judgement(Inconclusive, "no run of the regression test after the fix");
    };
    if after.failures > 0 {
        let before_rate = before.failure_rate().max(repro.failure_rate());
        return if after.failure_rate() < before_rate && before_rate < 1.0 {
            judgement(
                Inconclusive,
                format!(
                    "the regression test still failed {} of {} runs after the fix (before: {:.0}%)",
                    after.failures,
                    after.failures + after.passes(),
                    before_rate * 100.0
                ),
            )
        } else {
            judgement(
                Rejected,
                format!(
                    "the regression test still fails after the fix ({} of {} runs)",
                    after.failures, after.runs
                ),
            )
        };
    }
    if after.other > 0 {
        return judgement(
            Rejected,
            "after the fix the regression test fails for another reason",
        );
    }
    let within_existing = u32::from(experiments.iter().any(is_clean_suite_run));
    if after.passes() + within_existing < required_passes_after {
        return judgement(
            Inconclusive,
            format!(
                "only {} clean runs after the fix; {required_passes_after} needed for a flaky failure",
                after.passes() + within_existing
            ),
        );
    }
    let Some(existing) = counts(Step::ExistingTests) else {
        return judgement(Inconclusive, "no run of the existing tests after the fix");
    };
    if existing.failures > 0 || existing.other > 0 {
        return judgement(Rejected, "existing tests fail after the fix");
    }
    let counted = if within_existing > 0 && after.runs < required_passes_after {
        " and once within the existing tests"
    } else {
        ""
    };
    judgement(
        Verified,
        format!(
            "reproduced ({}/{} runs failed), failed before the fix, passed after it ({} runs{counted}), existing tests pass",
            repro.failures, repro.runs, after.runs
        ),
    )
}

/// What a fix of a **flakiness regression** is judged against: the
/// failure rate at the bad revision (`high`) and the background rate before
/// the culprit (`low`), as the flake-aware search measured them, with the
/// error probability of calling one for the other (`miss`). Such a fix
/// brings the rate back to `low`, not to zero: a test that failed 5 % of
/// the time before the culprit still fails now and then after its revert.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RateOracle {
    pub low: f64,
    pub high: f64,
    pub miss: f64,
}

impl RateOracle {
    /// The sequential test between the two rates a fix's runs feed.
    pub fn test(&self) -> RateTest {
        RateTest::new(self.low, self.high, self.miss, self.miss, u32::MAX)
    }
}

/// [`judge_fix`] for a fix of a flakiness regression: parts 1 and 2 as
/// there; part 3 is a sequential test between the two rates over the runs
/// of the regression test after the fix (a run of part 4 that fails with
/// the failure under investigation and nothing else is one more failing
/// run, a clean one one more pass); part 4 may not fail in any other way.
pub fn judge_rate_fix(experiments: &[Experiment], rates: RateOracle) -> Judgement {
    use HypothesisStatus::*;
    let (repro, _) = match before_the_fix(experiments) {
        Ok(counts) => counts,
        Err(j) => return j,
    };
    let Some(after) = step_counts(experiments, Step::RegressionAfter) else {
        return judgement(Inconclusive, "no run of the regression test after the fix");
    };
    if after.other > 0 {
        return judgement(
            Rejected,
            "after the fix the regression test fails for another reason",
        );
    }
    let Some(existing) = experiments.iter().find(|e| e.step == Step::ExistingTests) else {
        return judgement(Inconclusive, "no run of the existing tests after the fix");
    };
    let (mut failures, mut runs) = (after.failures, after.runs);
    match suite_run_as_regression_run(existing) {
        Some(failed) => {
            failures += u32::from(failed);
            runs += 1;
        }
        None if existing.outcome == Outcome::Pass => {}
        None => return judgement(Rejected, "existing tests fail after the fix"),
    }
    let mut test = rates.test();
    (0..failures).for_each(|_| test.record(true));
    (failures..runs).for_each(|_| test.record(false));
    let rate = |r: f64| format!("{:.0} %", r * 100.0);
    let seen = format!(
        "{failures} of {runs} runs failed after the fix ({}), against {} at the bad revision and {} before the culprit",
        rate(f64::from(failures) / f64::from(runs.max(1))),
        rate(rates.high),
        rate(rates.low)
    );
    match test.decision() {
        Some((RateDecision::Low, _)) => judgement(
            Verified,
            format!(
                "reproduced ({}/{} runs failed), failed before the fix; after it the failure rate is back to the rate before the culprit: {seen}; existing tests pass",
                repro.failures, repro.runs
            ),
        ),
        Some((RateDecision::High, _)) => judgement(
            Rejected,
            format!("the regression test still fails at the raised rate: {seen}"),
        ),
        None => judgement(
            Inconclusive,
            format!("too few runs to tell the two rates apart: {seen}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::RunCounts;
    use HypothesisStatus::*;

    fn exp(step: Step, outcome: Outcome) -> Experiment {
        Experiment {
            step,
            command: "python3 test.py".into(),
            revision: "abc".into(),
            exit_code: Some(if outcome == Outcome::Pass { 0 } else { 1 }),
            duration_ms: 10,
            outcome,
            output: String::new(),
            sandbox: "local".into(),
            note: None,
            counts: None,
        }
    }

    fn batch(step: Step, runs: u32, failures: u32) -> Experiment {
        let outcome = if failures > 0 {
            Outcome::Fail
        } else {
            Outcome::Pass
        };
        Experiment {
            counts: Some(RunCounts {
                runs,
                failures,
                other: 0,
            }),
            ..exp(step, outcome)
        }
    }

    fn full(after: Outcome, existing: Outcome) -> Vec<Experiment> {
        vec![
            exp(Step::Reproduction, Outcome::Fail),
            exp(Step::RegressionBefore, Outcome::Fail),
            exp(Step::RegressionAfter, after),
            exp(Step::ExistingTests, existing),
        ]
    }

    #[test]
    fn all_four_parts_verify() {
        assert_eq!(
            judge_fix(&full(Outcome::Pass, Outcome::Pass), 1).status,
            Verified
        );
    }

    #[test]
    fn still_failing_after_the_fix_rejects() {
        assert_eq!(
            judge_fix(&full(Outcome::Fail, Outcome::Pass), 1).status,
            Rejected
        );
    }

    #[test]
    fn broken_existing_tests_reject() {
        assert_eq!(
            judge_fix(&full(Outcome::Pass, Outcome::Fail), 1).status,
            Rejected
        );
    }

    #[test]
    fn a_timeout_blocks() {
        let mut experiments = full(Outcome::Pass, Outcome::Pass);
        experiments[2] = Experiment {
            note: Some("timed out after 120 s".into()),
            ..exp(Step::RegressionAfter, Outcome::Blocked)
        };
        let j = judge_fix(&experiments, 1);
        assert_eq!(j.status, Blocked);
        assert!(j.reason.contains("timed out"));
    }

    #[test]
    fn missing_evidence_is_inconclusive() {
        let experiments = vec![
            exp(Step::Reproduction, Outcome::Fail),
            exp(Step::RegressionBefore, Outcome::Fail),
        ];
        assert_eq!(judge_fix(&experiments, 1).status, Inconclusive);
        assert_eq!(judge_fix(&[], 1).status, Inconclusive);
    }

    #[test]
    fn not_failing_before_is_inconclusive() {
        let mut experiments = full(Outcome::Pass, Outcome::Pass);
        experiments[1] = exp(Step::RegressionBefore, Outcome::Pass);
        assert_eq!(judge_fix(&experiments, 1).status, Inconclusive);
    }

    #[test]
    fn flaky_failures_need_enough_clean_runs_after() {
        let experiments = vec![
            batch(Step::Reproduction, 20, 6),
            batch(Step::RegressionBefore, 20, 6),
            batch(Step::RegressionAfter, 5, 0),
            exp(Step::ExistingTests, Outcome::Pass),
        ];
        assert_eq!(judge_fix(&experiments, 13).status, Inconclusive);
        let mut enough = experiments.clone();
        enough[2] = batch(Step::RegressionAfter, 13, 0);
        assert_eq!(judge_fix(&enough, 13).status, Verified);
    }

    #[test]
    fn a_clean_run_of_the_existing_tests_is_one_clean_run_of_the_regression_test() {
        let experiments = vec![
            batch(Step::Reproduction, 4, 4),
            batch(Step::RegressionBefore, 4, 4),
            batch(Step::RegressionAfter, 2, 0),
            exp(Step::ExistingTests, Outcome::Pass),
        ];
        let j = judge_fix(&experiments, 3);
        assert_eq!(j.status, Verified, "{}", j.reason);
        assert!(
            j.reason
                .contains("passed after it (2 runs and once within the existing tests)"),
            "{}",
            j.reason
        );
        // Only one such run counts, however many runs of part 4 there are.
        let mut two_suites = experiments.clone();
        two_suites.push(exp(Step::ExistingTests, Outcome::Pass));
        assert_eq!(judge_fix(&two_suites, 4).status, Inconclusive);
        // A part 4 that passes only because its failures already happened
        // before the fix (exit code not 0) says nothing of the regression test.
        let mut tolerated = experiments.clone();
        tolerated[3].exit_code = Some(1);
        let j = judge_fix(&tolerated, 3);
        assert_eq!(j.status, Inconclusive);
        assert!(j.reason.contains("only 2 clean runs"), "{}", j.reason);
    }

    #[test]
    fn fewer_but_remaining_flaky_failures_are_mixed_evidence() {
        let experiments = vec![
            batch(Step::Reproduction, 20, 10),
            batch(Step::RegressionBefore, 20, 10),
            batch(Step::RegressionAfter, 20, 2),
            exp(Step::ExistingTests, Outcome::Pass),
        ];
        assert_eq!(judge_fix(&experiments, 13).status, Inconclusive);
    }

    const RATES: RateOracle = RateOracle {
        low: 0.05,
        high: 0.3,
        miss: 0.01,
    };

    fn rate_fix(after_runs: u32, after_failures: u32, existing: Outcome) -> Vec<Experiment> {
        vec![
            batch(Step::Reproduction, 24, 7),
            batch(Step::RegressionBefore, 1, 1),
            batch(Step::RegressionAfter, after_runs, after_failures),
            exp(Step::ExistingTests, existing),
        ]
    }

    #[test]
    fn a_flakiness_regressions_fix_may_fail_at_the_rate_before_the_culprit() {
        // 1 of 25 after the fix: the background rate, not the raised one.
        let j = judge_rate_fix(&rate_fix(24, 1, Outcome::Pass), RATES);
        assert_eq!(j.status, Verified, "{}", j.reason);
        assert!(
            j.reason.contains("1 of 25 runs failed after the fix"),
            "{}",
            j.reason
        );
        // The suite failing with the failure itself is one more failing run.
        let j = judge_rate_fix(&rate_fix(24, 0, Outcome::Fail), RATES);
        assert_eq!(j.status, Verified, "{}", j.reason);
        // The same runs under the deterministic contract: rejected.
        assert_eq!(
            judge_fix(&rate_fix(24, 1, Outcome::Pass), 15).status,
            Rejected
        );
    }

    #[test]
    fn a_fix_that_leaves_the_raised_rate_or_says_too_little_is_not_verified() {
        let j = judge_rate_fix(&rate_fix(10, 4, Outcome::Pass), RATES);
        assert_eq!(j.status, Rejected, "{}", j.reason);
        assert!(j.reason.contains("raised rate"), "{}", j.reason);
        let j = judge_rate_fix(&rate_fix(3, 0, Outcome::Pass), RATES);
        assert_eq!(j.status, Inconclusive, "{}", j.reason);
        let j = judge_rate_fix(&rate_fix(24, 0, Outcome::FailedDifferently), RATES);
        assert_eq!(j.status, Rejected, "{}", j.reason);
        // Parts 1 and 2 still hold first.
        let mut no_before = rate_fix(24, 0, Outcome::Pass);
        no_before[1] = batch(Step::RegressionBefore, 3, 0);
        assert_eq!(judge_rate_fix(&no_before, RATES).status, Inconclusive);
    }
}
