//! Failure signatures for comparing runs: *which* failure happened, without
//! line numbers, addresses or timings, so the same failure matches across
//! revisions and a different failure (an import error, another test) does not.
//! The rule ([`FailureSignature::matches`]) is the domain's; the reading of
//! a run's output is the evidence parsers' (`tracelab_evidence::test_run`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FailureSignature {
    /// Failing test ids reported by the runner.
    pub failing_tests: BTreeSet<String>,
    /// Exception/error types seen (`AssertionError`, `panic`, `ModuleNotFoundError`).
    pub error_types: BTreeSet<String>,
    /// The last meaningful line, normalised; used only when nothing else is known.
    pub tail: String,
}

impl FailureSignature {
    /// Whether `other` (a probe's failure) is the same failure as `self` (the baseline).
    ///
    /// With test ids, the probe must fail at least one baseline test (a
    /// collection error, `ERROR path`, counts only when the baseline is made
    /// of collection errors alone: a file that does not collect is then the
    /// failure); with error types, they must share one; otherwise the
    /// normalised last lines must agree.
    pub fn matches(&self, other: &FailureSignature) -> bool {
        if !self.failing_tests.is_empty() {
            let only_collection = self.failing_tests.iter().all(|t| t.starts_with("ERROR "));
            let shares_test = self.failing_tests.iter().any(|t| {
                (only_collection || !t.starts_with("ERROR ")) && other.failing_tests.contains(t)
            });
            if !shares_test {
                return false;
            }
        }
        if !self.error_types.is_empty() {
            return self
                .error_types
                .intersection(&other.error_types)
                .next()
                .is_some();
        }
        if !self.failing_tests.is_empty() {
            return true;
        }
        self.tail == other.tail
    }

    /// A short human description.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.failing_tests.is_empty() {
            parts.push(
                self.failing_tests
                    .iter()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", "),
            );
        }
        if !self.error_types.is_empty() {
            parts.push(
                self.error_types
                    .iter()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", "),
            );
        }
        if parts.is_empty() {
            parts.push(self.tail.clone());
        }
        parts.join(" / ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signature(tests: &[&str], types: &[&str], tail: &str) -> FailureSignature {
        FailureSignature {
            failing_tests: tests.iter().map(|t| t.to_string()).collect(),
            error_types: types.iter().map(|t| t.to_string()).collect(),
            tail: tail.to_string(),
        }
    }

    #[test]
    fn the_same_error_type_matches_and_another_does_not() {
        let base = signature(&[], &["AssertionError"], "AssertionError: # != #");
        assert!(base.matches(&signature(&[], &["AssertionError", "KeyError"], "x")));
        assert!(!base.matches(&signature(&[], &["ModuleNotFoundError"], "")));
    }

    #[test]
    fn failures_must_name_a_baseline_test() {
        let base = signature(&["t.py::test_a"], &["AssertionError"], "");
        assert!(base.matches(&signature(&["t.py::test_a"], &["AssertionError"], "")));
        assert!(!base.matches(&signature(&["t.py::test_b"], &["AssertionError"], "")));
        // A file that does not collect is not the baseline's failing test.
        assert!(!base.matches(&signature(&["ERROR t.py"], &["AssertionError"], "")));
        // Tests without error types: the test alone decides.
        assert!(signature(&["m::t"], &[], "").matches(&signature(&["m::t"], &[], "other")));
    }

    #[test]
    fn a_file_that_does_not_collect_is_the_failure_when_that_is_all_there_is() {
        let base = signature(&["ERROR t.py"], &["ImportError"], "");
        assert!(base.matches(&signature(&["ERROR t.py"], &["ImportError"], "")));
        assert!(!base.matches(&signature(&["ERROR u.py"], &["ImportError"], "")));
        assert!(!base.matches(&signature(&["ERROR t.py"], &["SyntaxError"], "")));
    }

    #[test]
    fn nothing_known_compares_the_tails() {
        let base = signature(&[], &[], "expected # in a.txt, got #");
        assert!(base.matches(&signature(&[], &[], "expected # in a.txt, got #")));
        assert!(!base.matches(&signature(&[], &[], "no totals file")));
        assert_eq!(base.describe(), "expected # in a.txt, got #");
    }
}
