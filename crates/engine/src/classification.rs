//! What re-running the failing test at the bad revision established (the
//! test-behaviour agent decides it; the journal keeps it, the oracle and
//! the verification read it). A module of its own, below the agents.

use crate::probe::TestCommand;
use tracelab_domain::experiment::{Experiment, RunCounts};
use tracelab_domain::hypothesis::FlakyStats;
use tracelab_domain::runner;
use tracelab_domain::sequential::{Behaviour, Decision};
use tracelab_domain::signature::FailureSignature;

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
    /// Clean runs of the regression test the fix needs.
    pub passes: u32,
    /// The most likely this evidence is under "the test is flaky and the fix
    /// did nothing".
    pub likelihood: f64,
}

impl FixConfirmation {
    /// "4 failures in a row" or "4 failures in a row (2 at bad, 2 at
    /// revisions the search probed after the culprit)".
    pub fn failures_in_a_row(&self) -> String {
        if self.probe_failures == 0 {
            return format!("{} failures in a row", self.failures);
        }
        format!(
            "{} failures in a row ({} at the bad revision, {} at revisions the search probed after the culprit)",
            self.failures,
            self.failures - self.probe_failures,
            self.probe_failures
        )
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
        let baseline = self.baseline.as_ref()?;
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

    /// Failure rate where the bug is present, for deciding how many passes make a revision good.
    pub fn failure_rate(&self) -> f64 {
        match self.decision.behaviour {
            Behaviour::Deterministic => 1.0,
            _ => self.counts.failure_rate(),
        }
    }
}
