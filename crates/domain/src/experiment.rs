//! Experiments: one command run in a sandbox, or a batch of identical re-runs,
//! with everything needed to judge it later.

use serde::{Deserialize, Serialize};

/// What an experiment was meant to establish.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// The reported failure happens at the bad revision.
    Reproduction,
    /// The regression test fails before the fix.
    RegressionBefore,
    /// The regression test passes after the fix.
    RegressionAfter,
    /// The relevant existing tests pass after the fix.
    ExistingTests,
    /// Re-runs used to classify flakiness.
    Rerun,
    /// The failing test run alone, outside its suite.
    Isolation,
    /// The failing test run with one environment variable changed.
    EnvironmentVariant,
}

impl Step {
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Reproduction => "reproduction",
            Step::RegressionBefore => "regression_before",
            Step::RegressionAfter => "regression_after",
            Step::ExistingTests => "existing_tests",
            Step::Rerun => "rerun",
            Step::Isolation => "isolation",
            Step::EnvironmentVariant => "environment_variant",
        }
    }
}

/// How a run ended, judged against the failure under investigation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Exit status 0.
    Pass,
    /// Failed with the failure under investigation (same signature).
    Fail,
    /// Failed for another reason (another test, an import or build error).
    FailedDifferently,
    /// Could not run: missing program, timeout, resources, sandbox error.
    Blocked,
}

/// Pass/fail counts over re-runs of one command at one revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RunCounts {
    pub runs: u32,
    pub failures: u32,
    /// Runs that failed differently or were blocked; not counted as failures.
    pub other: u32,
}

impl RunCounts {
    pub fn record(&mut self, outcome: Outcome) {
        self.runs += 1;
        match outcome {
            Outcome::Fail => self.failures += 1,
            Outcome::Pass => {}
            Outcome::FailedDifferently | Outcome::Blocked => self.other += 1,
        }
    }
    /// Both tallies together.
    pub fn plus(self, other: RunCounts) -> RunCounts {
        RunCounts {
            runs: self.runs + other.runs,
            failures: self.failures + other.failures,
            other: self.other + other.other,
        }
    }

    pub fn passes(&self) -> u32 {
        self.runs - self.failures - self.other
    }
    pub fn failure_rate(&self) -> f64 {
        let judged = self.failures + self.passes();
        if judged == 0 {
            0.0
        } else {
            f64::from(self.failures) / f64::from(judged)
        }
    }
}

/// One stored experiment. For a batch of re-runs, `counts` holds the tally and
/// `output`, `exit_code` and `duration_ms` describe a representative run (the
/// first failing one, else the last).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Experiment {
    pub step: Step,
    pub command: String,
    pub revision: String,
    /// `None` when the process did not exit on its own (timeout, spawn failure).
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    pub outcome: Outcome,
    /// Head and tail of the combined output, capped.
    pub output: String,
    /// Where it ran: `local` or `docker@sha256:...`.
    pub sandbox: String,
    /// Why it was blocked, which environment delta applied, and similar context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<RunCounts>,
}

impl Experiment {
    /// Counts for this experiment, treating a single run as a batch of one.
    pub fn effective_counts(&self) -> RunCounts {
        self.counts.unwrap_or_else(|| {
            let mut counts = RunCounts::default();
            counts.record(self.outcome);
            counts
        })
    }
}

/// Keeps the head and tail of a long output, marking what was cut.
pub fn trim_output(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_string();
    }
    let half = max_bytes / 2;
    let mut head_end = half;
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = text.len() - half;
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let cut = tail_start - head_end;
    format!(
        "{}\n[... {cut} bytes trimmed ...]\n{}",
        &text[..head_end],
        &text[tail_start..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_separate_other_failures() {
        let mut counts = RunCounts::default();
        for outcome in [
            Outcome::Fail,
            Outcome::Pass,
            Outcome::Pass,
            Outcome::FailedDifferently,
        ] {
            counts.record(outcome);
        }
        assert_eq!(
            (counts.runs, counts.failures, counts.passes(), counts.other),
            (4, 1, 2, 1)
        );
        assert!((counts.failure_rate() - 1.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn trimming_keeps_both_ends_on_char_boundaries() {
        let text = format!("{}é{}", "a".repeat(100), "b".repeat(100));
        let trimmed = trim_output(&text, 50);
        assert!(trimmed.starts_with("aaaa"));
        assert!(trimmed.ends_with("bbbb"));
        assert!(trimmed.contains("bytes trimmed"));
        assert_eq!(trim_output("short", 50), "short");
    }
}
