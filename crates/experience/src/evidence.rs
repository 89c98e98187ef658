//! A step's output turned into failures: one per failing test (with its own
//! traceback, so each problem keeps its own frames and error types), or one
//! for the whole step when the runner names no test (a lint script, a
//! build). Paths under the checkout are made repository-relative.
//!
//! The output is read by the evidence parsers (`tracelab_evidence::test_run`,
//! the one reader of failure text the engine and the code index use too);
//! the locations a lint or compiler line names (`path:line: E501 …`), which
//! attribution links to hunks, come from `tracelab_evidence::locations`.

use crate::model::Failure;
use std::collections::BTreeSet;
use tracelab_domain::runner::{self, Runner};
use tracelab_evidence::Frame;
use tracelab_evidence::locations::with_locations;
use tracelab_evidence::test_run::TestRun;

/// Characters of a failure's text kept (its tail: where the error is).
const MESSAGE_LIMIT: usize = 4000;

/// The failures in one step's output, and whether the step reported every
/// check it ran (see [`crate::model::StepRun::exhaustive`]).
///
/// `root` is the checkout the command ran in; its prefix is removed from
/// paths so frames name repository files.
pub fn failures_from_output(argv: &[String], output: &str, root: &str) -> (Vec<Failure>, bool) {
    let output = relative(output, root);
    let runner = runner::detect(argv);
    let stops_early = argv.iter().any(|a| {
        matches!(a.as_str(), "-x" | "--exitfirst" | "-f" | "--failfast")
            || a.starts_with("--maxfail")
    });
    let run = TestRun::read(runner, &output);
    let mut failures: Vec<Failure> = Vec::new();
    // A report the runner names no test for (an unknown runner, a Go
    // package's own failure) is part of the step's failure below.
    for report in run
        .reports(&output)
        .into_iter()
        .filter(|r| r.test.is_some())
    {
        let test = report.test.clone().filter(|id| !is_collection_error(id));
        let frames = with_locations(report.frames(), report.text);
        push(
            &mut failures,
            failure(test, report.error_types(), frames, report.text),
        );
    }
    if failures.is_empty() {
        let frames = with_locations(run.frames(), &output);
        failures.push(failure(None, run.error_types(), frames, &output));
    }
    let exhaustive = matches!(runner, Runner::Unittest | Runner::Pytest)
        && !stops_early
        && failures.iter().all(|f| f.test.is_some());
    (failures, exhaustive)
}

fn relative(output: &str, root: &str) -> String {
    let root = root.trim_end_matches('/');
    if root.is_empty() {
        return output.to_string();
    }
    output.replace(&format!("{root}/"), "")
}

/// A test id that stands for a module the runner could not import.
pub(crate) fn is_collection_error(id: &str) -> bool {
    id.starts_with("ERROR ") || id.contains("_FailedTest") || id.starts_with("unittest.loader")
}

/// A failure with `text`'s tail as its message and the application's
/// frames (library and toolchain files left out) as `(file, line)`, each once.
fn failure(
    test: Option<String>,
    error_types: BTreeSet<String>,
    frames: Vec<Frame>,
    text: &str,
) -> Failure {
    let start = text
        .char_indices()
        .rev()
        .nth(MESSAGE_LIMIT)
        .map(|(i, _)| i)
        .unwrap_or(0);
    let mut places: Vec<(String, u32)> = Vec::new();
    for frame in frames.into_iter().filter(|f| f.in_app) {
        if let (Some(file), Some(line)) = (frame.file, frame.line)
            && !places.iter().any(|(f, l)| *f == file && *l == line)
        {
            places.push((file, line));
        }
    }
    Failure {
        test,
        error_types,
        message: text[start..].trim().to_string(),
        frames: places,
    }
}

/// Adds `f`, merging it into an earlier failure of the same test (or, for
/// failures without a test, the same error types).
fn push(failures: &mut Vec<Failure>, f: Failure) {
    if let Some(same) = failures
        .iter_mut()
        .find(|g| g.test == f.test && (f.test.is_some() || g.error_types == f.error_types))
    {
        same.message.push('\n');
        same.message.push_str(&f.message);
        for frame in f.frames {
            if !same.frames.contains(&frame) {
                same.frames.push(frame);
            }
        }
        return;
    }
    failures.push(f);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    const UNITTEST: &str = "..F.E\n\
======================================================================\n\
ERROR: test_pairs (tests.test_more.PairTests.test_pairs)\n\
----------------------------------------------------------------------\n\
Traceback (most recent call last):\n  File \"/w/probe/pkg/more.py\", line 40, in pairs\n    return helper(x)\nNameError: name 'helper' is not defined\n\n\
======================================================================\n\
FAIL: test_first (tests.test_more.FirstTests.test_first)\n\
----------------------------------------------------------------------\n\
Traceback (most recent call last):\n  File \"/w/probe/tests/test_more.py\", line 9, in test_first\n    self.assertEqual(first([]), 1)\nAssertionError: 0 != 1\n\n\
----------------------------------------------------------------------\nRan 5 tests in 0.01s\n\nFAILED (failures=1, errors=1)\n";

    #[test]
    fn unittest_failures_keep_their_own_traceback() {
        let (failures, exhaustive) = failures_from_output(
            &argv("python3 -m unittest tests.test_more"),
            UNITTEST,
            "/w/probe",
        );
        assert!(exhaustive);
        assert_eq!(failures.len(), 2);
        assert_eq!(
            failures[0].test.as_deref(),
            Some("tests.test_more.PairTests.test_pairs")
        );
        assert!(failures[0].error_types.contains("NameError"));
        assert_eq!(failures[0].frames, vec![("pkg/more.py".to_string(), 40)]);
        assert!(failures[1].error_types.contains("AssertionError"));
        assert!(!failures[1].error_types.contains("NameError"));
        assert_eq!(
            failures[1].frames,
            vec![("tests/test_more.py".to_string(), 9)]
        );
    }

    #[test]
    fn an_import_error_is_one_failure_and_hides_the_rest() {
        let out = "E\n======================================================================\nERROR: test_more (unittest.loader._FailedTest.test_more)\n----------------------------------------------------------------------\nImportError: Failed to import test module: test_more\nTraceback (most recent call last):\n  File \"/w/p/pkg/compat.py\", line 1, in <module>\n    from .recipes import fast_pairs\nImportError: cannot import name 'fast_pairs' from 'pkg.recipes'\n\n----------------------------------------------------------------------\nRan 1 test in 0.000s\n";
        let (failures, exhaustive) =
            failures_from_output(&argv("python3 -m unittest tests.test_more"), out, "/w/p");
        assert!(!exhaustive, "the suite did not run, nothing else is known");
        assert_eq!(failures.len(), 1);
        assert_eq!(failures[0].test, None);
        assert!(failures[0].error_types.contains("ImportError"));
        assert_eq!(failures[0].frames[0].0, "pkg/compat.py");
        // Under discovery the module's name is dotted; it is the same failure.
        let discovered = out.replace(
            "ERROR: test_more (unittest.loader._FailedTest.test_more)",
            "ERROR: tests.test_more (unittest.loader._FailedTest.tests.test_more)",
        );
        let (same, _) = failures_from_output(&argv("python3 -m unittest"), &discovered, "/w/p");
        assert_eq!(same.len(), 1);
        assert!(
            same[0].message.contains("Failed to import test module")
                && !same[0].message.contains("Ran 1 test"),
            "its own block, not the whole output: {}",
            same[0].message
        );
    }

    #[test]
    fn a_tool_without_tests_is_one_failure_for_the_step() {
        let out = "pkg/more.py:12: L001 line too long (120 > 100)\npkg/more.py:30: L001 line too long (101 > 100)\n";
        let (failures, exhaustive) = failures_from_output(&argv("python3 tools/lint.py"), out, "");
        assert!(!exhaustive);
        assert_eq!(failures.len(), 1);
        assert_eq!(failures[0].test, None);
        assert_eq!(failures[0].frames.len(), 2);
    }

    #[test]
    fn pytest_sections_are_matched_to_their_ids_and_x_is_not_exhaustive() {
        let out = "_____ Tests.test_a _____\n\n    def test_a():\n>       assert f() == 1\nE       AssertionError\n\npkg/t.py:3: AssertionError\n===== short test summary info =====\nFAILED tests/t.py::Tests::test_a - AssertionError\n";
        let (failures, exhaustive) = failures_from_output(&argv("pytest -x tests"), out, "");
        assert!(!exhaustive);
        assert_eq!(
            failures[0].test.as_deref(),
            Some("tests/t.py::Tests::test_a")
        );
        assert_eq!(failures[0].frames, vec![("pkg/t.py".to_string(), 3)]);
    }
}
