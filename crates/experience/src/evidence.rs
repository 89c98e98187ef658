//! A step's output turned into failures: one per failing test (with its own
//! traceback, so each problem keeps its own frames and error types), or one
//! for the whole step when the runner names no test (a lint script, a
//! build). Paths under the checkout are made repository-relative.

use crate::model::Failure;
use regex::Regex;
use std::sync::LazyLock;
use tracelab_domain::runner::{self, Runner};
use tracelab_domain::signature::{FailureSignature, frames_in_output};

/// Characters of a failure's text kept (its tail: where the error is).
const MESSAGE_LIMIT: usize = 4000;

// Dotted names are modules discovery could not import
// (`ERROR: tests.test_more (unittest.loader._FailedTest.tests.test_more)`).
static UNITTEST_HEADER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:FAIL|ERROR): ([\w.]+) \(([\w.]+)\)").expect("regex"));
static PYTEST_HEADER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^_{3,} (.+?) _{3,}$").expect("regex"));

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
    let blocks = match runner {
        Runner::Unittest => unittest_blocks(&output),
        Runner::Pytest => pytest_blocks(&output),
        _ => runner::failing_tests(runner, &output)
            .into_iter()
            .map(|id| (Some(id), output.clone()))
            .collect(),
    };
    let mut failures: Vec<Failure> = Vec::new();
    for (test, text) in blocks {
        let test = test.filter(|id| !is_collection_error(id));
        push(&mut failures, failure(test, &text));
    }
    if failures.is_empty() {
        failures.push(failure(None, &output));
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

fn failure(test: Option<String>, text: &str) -> Failure {
    let error_types = FailureSignature::from_output(Runner::Unknown, text).error_types;
    let start = text
        .char_indices()
        .rev()
        .nth(MESSAGE_LIMIT)
        .map(|(i, _)| i)
        .unwrap_or(0);
    Failure {
        test,
        error_types,
        message: text[start..].trim().to_string(),
        frames: frames_in_output(text),
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

/// `FAIL: name (id)` blocks up to the next `=====` separator or the summary.
fn unittest_blocks(output: &str) -> Vec<(Option<String>, String)> {
    let mut blocks: Vec<(Option<String>, String)> = Vec::new();
    let mut open = false;
    for line in output.lines() {
        if let Some(c) = UNITTEST_HEADER.captures(line) {
            let (name, scope) = (&c[1], &c[2]);
            let id = if scope.ends_with(&format!(".{name}")) {
                scope.to_string()
            } else {
                format!("{scope}.{name}")
            };
            blocks.push((Some(id), String::new()));
            open = true;
            continue;
        }
        let separator = line.len() >= 20 && line.chars().all(|c| c == '=');
        if separator || line.starts_with("Ran ") {
            open = false;
            continue;
        }
        if open && let Some((_, text)) = blocks.last_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    blocks
}

/// `____ Class.test ____` sections matched to the `FAILED id` summary lines;
/// collection errors (`ERROR path`) keep the whole output.
fn pytest_blocks(output: &str) -> Vec<(Option<String>, String)> {
    let ids = runner::failing_tests(Runner::Pytest, output);
    let mut sections: Vec<(String, String)> = Vec::new();
    for line in output.lines() {
        if let Some(c) = PYTEST_HEADER.captures(line) {
            sections.push((c[1].replace('.', "::"), String::new()));
        } else if line.starts_with("====") {
            sections.push((String::new(), String::new()));
        } else if let Some((_, text)) = sections.last_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    ids.into_iter()
        .map(|id| {
            let bare = id.split(" - ").next().unwrap_or(&id).to_string();
            let text = sections
                .iter()
                .find(|(name, _)| !name.is_empty() && bare.ends_with(&format!("::{name}")))
                .map(|(_, text)| text.clone())
                .unwrap_or_else(|| output.to_string());
            (Some(bare), text)
        })
        .collect()
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
