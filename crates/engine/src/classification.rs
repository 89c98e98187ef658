//! What re-running the failing test at the bad revision established (the
//! test-behaviour agent decides it; the journal keeps it, the oracle and
//! the verification read it). A module of its own, below the agents.

use crate::probe::TestCommand;
use tracelab_domain::experiment::{Experiment, RunCounts, Step};
use tracelab_domain::hypothesis::FlakyStats;
use tracelab_domain::runner;
use tracelab_domain::sequential::{Behaviour, Decision};
use tracelab_domain::signature::FailureSignature;

/// The note of a regression-before step that is the reproduction's runs
/// (not run again by the verification).
pub const REUSED_REPRODUCTION: &str = "the reproduction's runs: same command, same revision";

/// What re-running at the bad revision established.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Classification {
    pub decision: Decision,
    pub counts: RunCounts,
    /// The failure under investigation: the first failure seen.
    pub baseline: Option<FailureSignature>,
    /// Output of the first failing run (for failing-path analysis).
    pub baseline_output: Option<String>,
    /// The re-runs as one stored experiment.
    pub experiment: Experiment,
    /// Set when no run could be judged (every run blocked).
    pub blocked: Option<String>,
    /// Set when the re-runs stopped early because a culprit was found: the
    /// failure failed every run so far, and a fix verified with enough clean
    /// runs confirms it is deterministic (the embedded pipeline finishes the
    /// re-runs when no fix does).
    #[serde(default)]
    pub fix_confirmation: Option<FixConfirmation>,
}

/// What a fix's verification must show to confirm a classification that
/// stopped after a few failures (`tracelab_domain::sequential::passes_to_confirm`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FixConfirmation {
    /// Failures in a row, no pass among them: at the bad revision, and
    /// `probe_failures` of them at revisions the search probed after the
    /// culprit.
    pub failures: u32,
    /// The search's failing probes after the culprit among `failures`.
    #[serde(default)]
    pub probe_failures: u32,
    /// Failures among `failures` that the fix's verification must still
    /// supply: the regression test alone at the bad revision, before the
    /// fix (it runs there whenever it is narrower than the test command,
    /// and the contract wants it to fail anyway). The confirmation holds
    /// only if those runs all fail ([`FixConfirmation::holds_for`]).
    #[serde(default)]
    pub before_failures: u32,
    /// Clean runs of the regression test the fix needs.
    pub passes: u32,
    /// The most likely this evidence is under "the test is flaky and the fix
    /// did nothing".
    pub likelihood: f64,
}

impl FixConfirmation {
    /// "4 failures in a row" or "4 failures in a row (2 at bad, 1 at
    /// revisions the search probed after the culprit, 1 of the regression
    /// test alone at bad before the fix)".
    pub fn failures_in_a_row(&self) -> String {
        if self.probe_failures == 0 && self.before_failures == 0 {
            return format!("{} failures in a row", self.failures);
        }
        let mut parts = vec![format!(
            "{} at the bad revision",
            self.failures - self.probe_failures - self.before_failures
        )];
        if self.probe_failures > 0 {
            parts.push(format!(
                "{} at revisions the search probed after the culprit",
                self.probe_failures
            ));
        }
        if self.before_failures > 0 {
            parts.push(format!(
                "{} of the regression test alone at the bad revision before the fix",
                self.before_failures
            ));
        }
        format!("{} failures in a row ({})", self.failures, parts.join(", "))
    }

    /// Failures of the regression test alone at bad, before the fix, that
    /// a confirmation may count on when `known` failures in a row are in
    /// and `wanted` are needed: that test runs in the pool during the
    /// verification (when it is narrower than the test command:
    /// `isolated`), one run at least and up to one per slot side by side,
    /// so the runs a confirmation is short of go there instead of into a
    /// round of re-runs before it.
    pub fn before_failures(wanted: u32, known: u32, slots: usize, isolated: bool) -> u32 {
        if !isolated {
            return 0;
        }
        wanted.saturating_sub(known).clamp(1, slots.max(1) as u32)
    }

    /// Whether a verified fix's experiments supply the failures this
    /// confirmation counted on: its regression test before the fix ran at
    /// least `before_failures` times at the bad revision (not the
    /// reproduction's runs reused) and never passed there.
    pub fn holds_for(&self, experiments: &[Experiment]) -> bool {
        if self.before_failures == 0 {
            return true;
        }
        let counts = experiments
            .iter()
            .filter(|e| {
                e.step == Step::RegressionBefore && e.note.as_deref() != Some(REUSED_REPRODUCTION)
            })
            .fold(RunCounts::default(), |t, e| t.plus(e.effective_counts()));
        counts.failures >= self.before_failures && counts.failures == counts.runs
    }

    /// What the report says once a fix was verified with these runs.
    pub fn confirmed_note(&self) -> String {
        format!(
            "deterministic, confirmed by the fix: {f} of the failure, then {n} clean runs of the fix's regression test (a clean run of the whole test command counts as one); \
             were the failure flaky and the fix ineffective, that would happen with probability at most {l:.4}, so the re-runs stopped there \
             (not proven: that a failure the culprit made flaky at a high rate is not deterministic)",
            f = self.failures_in_a_row(),
            n = self.passes,
            l = self.likelihood
        )
    }
}

impl Classification {
    pub fn flaky_stats(&self) -> FlakyStats {
        FlakyStats::from_counts(self.counts, self.decision.confident)
    }

    /// The isolated command for the first failing test, when the runner allows it
    /// and it differs from the test command.
    pub fn isolated_command(&self, test: &TestCommand) -> Option<Vec<String>> {
        isolated_command(self.baseline.as_ref(), test)
    }

    /// Failure rate where the bug is present, for deciding how many passes make a revision good.
    pub fn failure_rate(&self) -> f64 {
        match self.decision.behaviour {
            Behaviour::Deterministic => 1.0,
            _ => self.counts.failure_rate(),
        }
    }
}

/// [`Classification::isolated_command`] for the failure `baseline`.
pub fn isolated_command(
    baseline: Option<&FailureSignature>,
    test: &TestCommand,
) -> Option<Vec<String>> {
    let baseline = baseline?;
    // A failing test first; else an error (pytest's `ERROR path` of a file
    // that does not collect), which `runner::isolate` narrows to its file.
    let test_id = baseline
        .failing_tests
        .iter()
        .find(|t| !t.starts_with("ERROR "))
        .or_else(|| baseline.failing_tests.first())?;
    let argv = runner::isolate(test.runner, &test.argv, test_id)?;
    (argv != test.argv).then_some(argv)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracelab_domain::experiment::Outcome;

    fn confirmation(before_failures: u32) -> FixConfirmation {
        FixConfirmation {
            failures: 4,
            probe_failures: 1,
            before_failures,
            passes: 3,
            likelihood: 0.008,
        }
    }

    fn before(failures: u32, runs: u32, note: Option<&str>) -> Experiment {
        Experiment {
            step: Step::RegressionBefore,
            command: "pytest t.py::test_a".into(),
            revision: "bad".into(),
            exit_code: Some(1),
            duration_ms: 10,
            outcome: if failures > 0 {
                Outcome::Fail
            } else {
                Outcome::Pass
            },
            output: String::new(),
            sandbox: "local".into(),
            note: note.map(str::to_string),
            counts: Some(RunCounts {
                runs,
                failures,
                other: 0,
            }),
        }
    }

    #[test]
    fn a_confirmation_counting_on_the_verifications_failure_needs_it_to_happen() {
        let c = confirmation(1);
        assert!(c.holds_for(&[before(1, 1, None)]));
        // A pass at bad breaks the row, even if a later run failed.
        assert!(!c.holds_for(&[before(1, 2, None)]));
        assert!(!c.holds_for(&[before(0, 3, None)]));
        // The reproduction's runs reused are not the verification's own.
        assert!(!c.holds_for(&[before(4, 4, Some(REUSED_REPRODUCTION))]));
        assert!(!c.holds_for(&[]));
        // Nothing counted on: nothing to check.
        assert!(confirmation(0).holds_for(&[]));
    }

    #[test]
    fn the_verification_supplies_what_the_row_is_short_of_up_to_a_run_per_slot() {
        let before = FixConfirmation::before_failures;
        // Not narrower than the test command: the reproduction's runs are
        // the evidence, nothing more runs before the fix.
        assert_eq!(before(4, 1, 2, false), 0);
        // Enough already: the one run the contract makes anyway.
        assert_eq!(before(4, 5, 2, true), 1);
        assert_eq!(before(4, 3, 2, true), 1);
        // Two short: both slots.
        assert_eq!(before(4, 2, 2, true), 2);
        // Three short on two slots: still two (the row stays short, so the
        // re-runs at bad go on).
        assert_eq!(before(4, 1, 2, true), 2);
        assert_eq!(before(4, 1, 1, true), 1);
        assert_eq!(before(4, 1, 4, true), 3);
    }

    #[test]
    fn the_failures_in_a_row_say_where_each_happened() {
        assert_eq!(
            confirmation(1).failures_in_a_row(),
            "4 failures in a row (2 at the bad revision, 1 at revisions the search probed after the culprit, 1 of the regression test alone at the bad revision before the fix)"
        );
        let plain = FixConfirmation {
            probe_failures: 0,
            ..confirmation(0)
        };
        assert_eq!(plain.failures_in_a_row(), "4 failures in a row");
    }
}
