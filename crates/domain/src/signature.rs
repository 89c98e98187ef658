//! Failure signatures for comparing runs: *which* failure happened, without
//! line numbers, addresses or timings, so the same failure matches across
//! revisions and a different failure (an import error, another test) does not.
//! The rule ([`FailureSignature::matches`]) is the domain's; the reading of
//! a run's output is the evidence parsers' (`tracelab_ingest::test_run`).

use crate::runner::{self, Runner};
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::LazyLock;

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FailureSignature {
    /// Failing test ids reported by the runner.
    pub failing_tests: BTreeSet<String>,
    /// Exception/error types seen (`AssertionError`, `panic`, `ModuleNotFoundError`).
    pub error_types: BTreeSet<String>,
    /// The last meaningful line, normalised; used only when nothing else is known.
    pub tail: String,
}

static ERROR_TYPE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^(?:E\s+|\s*(?:[\w.]+\.)?)?([A-Z][A-Za-z0-9_]*(?:Error|Exception|Failure|Interrupt|Exit))\b(?::|$)").unwrap()
});
static RUST_PANIC: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)panicked at|^panic: ").unwrap());
static NOISE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"0x[0-9a-fA-F]+|\b\d+(\.\d+)?(ms|s)?\b|line \d+|:\d+(:\d+)?|/[^\s:]*/").unwrap()
});

impl FailureSignature {
    /// Extracts the signature of a failed run's output with patterns.
    ///
    /// Only `tracelab-experience`'s mining still reads with this; the
    /// investigation builds its signatures from the evidence parsers
    /// (`tracelab_ingest::test_run::TestRun::signature`), the one reader of
    /// failure text (ARCHITECTURE.md).
    pub fn from_output(runner: Runner, output: &str) -> Self {
        let failing_tests = runner::failing_tests(runner, output).into_iter().collect();
        let mut error_types: BTreeSet<String> = ERROR_TYPE
            .captures_iter(output)
            .map(|c| c[1].to_string())
            .collect();
        if RUST_PANIC.is_match(output) {
            error_types.insert("panic".into());
        }
        let tail = output
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('=') && !l.starts_with('-'))
            .map(|l| NOISE.replace_all(l, "#").into_owned())
            .unwrap_or_default();
        Self {
            failing_tests,
            error_types,
            tail,
        }
    }

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

/// Files named in a traceback or panic message, repository-relative where possible.
/// Kept with [`frames_in_output`] for `tracelab-experience`'s mining; the
/// engine reads frames through `tracelab_ingest::test_run`.
pub fn files_in_output(output: &str) -> BTreeSet<String> {
    frames_in_output(output)
        .into_iter()
        .map(|(path, _)| path)
        .collect()
}

/// `(file, line)` of every frame a traceback, panic or stack trace names, in
/// the order they appear, each once; library and toolchain files left out.
/// The repair templates favour edits on these lines.
pub fn frames_in_output(output: &str) -> Vec<(String, u32)> {
    static PY_FRAME: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r#"File "([^"]+)", line (\d+)"#).unwrap());
    static GENERIC: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"([\w./-]+\.(?:py|rs|go|js|ts|java|kt|rb|c|cc|cpp|h)):(\d+)").unwrap()
    });
    let mut frames: Vec<(String, u32)> = Vec::new();
    for c in PY_FRAME
        .captures_iter(output)
        .chain(GENERIC.captures_iter(output))
    {
        let path = c[1].trim_start_matches("./").to_string();
        let Ok(line) = c[2].parse::<u32>() else {
            continue;
        };
        let library =
            path.contains("site-packages") || path.starts_with("/usr/") || path.contains("/rustc/");
        if !library && !frames.iter().any(|(p, l)| *p == path && *l == line) {
            frames.push((path, line));
        }
    }
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_in_output_keep_their_lines_in_order_once() {
        let out = "  File \"/w/probe-0/pkg/m.py\", line 12, in f\n  File \"/usr/lib/python3/x.py\", line 3\n  at src/app.js:40:2\n  File \"/w/probe-0/pkg/m.py\", line 12, in f\n";
        assert_eq!(
            frames_in_output(out),
            vec![
                ("/w/probe-0/pkg/m.py".to_string(), 12),
                ("src/app.js".to_string(), 40)
            ]
        );
    }

    const ASSERTION: &str = "Traceback (most recent call last):\n  File \"/tmp/wt/test_app.py\", line 9, in <module>\n    assert add(2, 2) == 4\nAssertionError: add(2, 2) returned 5\n";
    const IMPORT: &str = "Traceback (most recent call last):\n  File \"/tmp/wt/test_app.py\", line 1, in <module>\n    from app import add\nModuleNotFoundError: No module named 'app'\n";

    #[test]
    fn same_failure_matches_across_line_numbers() {
        let a = FailureSignature::from_output(Runner::Unknown, ASSERTION);
        let b =
            FailureSignature::from_output(Runner::Unknown, &ASSERTION.replace("line 9", "line 42"));
        assert!(a.matches(&b));
        assert_eq!(a.error_types.iter().next().unwrap(), "AssertionError");
    }

    #[test]
    fn an_import_error_is_a_different_failure() {
        let a = FailureSignature::from_output(Runner::Unknown, ASSERTION);
        let b = FailureSignature::from_output(Runner::Unknown, IMPORT);
        assert!(!a.matches(&b));
    }

    #[test]
    fn pytest_failures_must_name_the_same_test() {
        let base = FailureSignature::from_output(
            Runner::Pytest,
            "E   AssertionError\nFAILED tests/t.py::test_a - AssertionError\n",
        );
        let same = FailureSignature::from_output(
            Runner::Pytest,
            "E   AssertionError: x\nFAILED tests/t.py::test_a - AssertionError: x\n",
        );
        let other = FailureSignature::from_output(
            Runner::Pytest,
            "E   AssertionError\nFAILED tests/t.py::test_b - AssertionError\n",
        );
        let collection =
            FailureSignature::from_output(Runner::Pytest, "E   ImportError\nERROR tests/t.py\n");
        assert!(base.matches(&same));
        assert!(!base.matches(&other));
        assert!(!base.matches(&collection));
    }

    #[test]
    fn a_file_that_does_not_collect_is_the_same_failure_when_that_is_all_there_is() {
        let collection = |file: &str, error: &str| {
            FailureSignature::from_output(Runner::Pytest, &format!("E   {error}\nERROR {file}\n"))
        };
        let base = collection("tests/t.py", "ImportError");
        assert!(base.matches(&collection("tests/t.py", "ImportError")));
        assert!(!base.matches(&collection("tests/u.py", "ImportError")));
        assert!(!base.matches(&collection("tests/t.py", "SyntaxError")));
    }

    #[test]
    fn rust_panics_are_typed() {
        let sig = FailureSignature::from_output(
            Runner::CargoTest,
            "thread 'm::t' panicked at src/lib.rs:3:5:\nboom\ntest m::t ... FAILED\n",
        );
        assert!(sig.error_types.contains("panic"));
        assert!(sig.failing_tests.contains("m::t"));
    }

    #[test]
    fn finds_files_in_tracebacks() {
        let files = files_in_output(
            "  File \"app/calc.py\", line 3, in add\n  File \"/usr/lib/python3/x.py\", line 1\nsrc/lib.rs:10:5\n",
        );
        assert_eq!(
            files.into_iter().collect::<Vec<_>>(),
            vec!["app/calc.py", "src/lib.rs"]
        );
    }
}
