//! A test command's output read by the parsers of this crate, for the
//! readers that know which runner ran it: the investigation's failure
//! signature (is a probe's failure *the* failure?), the tests to re-run one
//! by one, and the frames the code index and the repair templates look at.
//!
//! One reader of failure text: the engine and the code index call this
//! instead of patterns of their own, so a runner or trace shape the parsers
//! learn is learnt everywhere (#17).

use crate::model::{DetectedFormat, Failure, Frame, ParseOptions};
use crate::signature::normalize_message;
use std::collections::BTreeSet;
use tracelab_domain::runner::Runner;
use tracelab_domain::signature::FailureSignature;

/// What the parsers found in one run's output.
#[derive(Debug, Clone)]
pub struct TestRun {
    runner: Runner,
    /// Failures of the runner's own report (pytest sections, unittest
    /// blocks, libtest's `---- t stdout ----`, `--- FAIL:`), in order.
    reported: Vec<Failure>,
    /// Every stack trace in the output, read as plain text: what a runner's
    /// report does not show (a panic printed with `--nocapture`, a crash
    /// before the runner started).
    traces: Vec<Failure>,
    /// The last meaningful line, masked: the comparison of last resort.
    tail: String,
}

impl TestRun {
    /// Reads `output` of a command run by `runner` (unredacted: it stays on
    /// this machine).
    pub fn read(runner: Runner, output: &str) -> Self {
        let parse = |format: Option<DetectedFormat>| {
            let options = ParseOptions {
                format,
                redact: false,
                ..ParseOptions::default()
            };
            crate::parse(output.as_bytes(), &options).failures
        };
        let reported = match report_format(runner) {
            Some(format) => parse(Some(format)),
            None => parse(None),
        };
        let traces = parse(Some(DetectedFormat::Text));
        let tail = output
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('=') && !l.starts_with('-'))
            .map(normalize_message)
            .unwrap_or_default();
        Self {
            runner,
            reported,
            traces,
            tail,
        }
    }

    /// The failures of the runner's report.
    pub fn failures(&self) -> &[Failure] {
        &self.reported
    }

    /// The failing tests, each once and in order, spelt as the runner takes
    /// them back (`tracelab_domain::runner::isolate`): pytest's node id
    /// (`ERROR path` for a file that does not collect, `ERROR id` for a
    /// test whose set-up failed), unittest's dotted id (a module that does
    /// not import is `unittest.loader._FailedTest.<module>`), libtest's
    /// path, Go's test name with its subtest (no package), jest's title.
    /// None for a command whose runner is not known.
    pub fn failing_tests(&self) -> Vec<String> {
        let mut ids: Vec<String> = Vec::new();
        for f in &self.reported {
            let Some(id) = f
                .test_id
                .as_deref()
                .and_then(|id| runner_id(self.runner, f, id))
            else {
                continue;
            };
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        ids
    }

    /// Exception and error types of every failure and of the links of its
    /// chain, without their module (`AssertionError`, `panic`,
    /// `NullPointerException`), so a type moved between modules is the same.
    pub fn error_types(&self) -> BTreeSet<String> {
        self.reported
            .iter()
            .chain(&self.traces)
            .flat_map(error_types)
            .collect()
    }

    /// Every frame the output names, innermost last within each failure,
    /// each once; the runner's report first, then traces outside it.
    pub fn frames(&self) -> Vec<Frame> {
        let mut out: Vec<Frame> = Vec::new();
        for f in self.reported.iter().chain(&self.traces) {
            push_frames(&mut out, f);
        }
        out
    }

    /// Each failure of the runner's report with the test it is about and
    /// its own lines of `output` (the text this run was read from), for a
    /// reader that keeps one problem per failing test with its own
    /// traceback. A failure whose place the report does not give (a test
    /// named only in pytest's summary) has the whole output as its text.
    pub fn reports<'a>(&'a self, output: &'a str) -> Vec<Report<'a>> {
        let starts: Vec<usize> = self.reported.iter().filter_map(|f| f.line).collect();
        let lines: Vec<&str> = output.split('\n').collect();
        // Byte offset of each line's start (and of the end).
        let offsets: Vec<usize> = std::iter::once(0)
            .chain(lines.iter().scan(0, |at, l| {
                *at += l.len() + 1;
                Some(*at)
            }))
            .collect();
        self.reported
            .iter()
            .map(|failure| Report {
                test: failure
                    .test_id
                    .as_deref()
                    .and_then(|id| runner_id(self.runner, failure, id)),
                failure,
                text: failure
                    .line
                    .and_then(|line| block(output, &lines, &offsets, &starts, line))
                    .unwrap_or(output),
            })
            .collect()
    }

    /// The run's failure signature: which tests failed and with which
    /// error types (the tail only when the parsers found neither).
    pub fn signature(&self) -> FailureSignature {
        FailureSignature {
            failing_tests: self.failing_tests().into_iter().collect(),
            error_types: self.error_types(),
            tail: self.tail.clone(),
        }
    }
}

/// One failure of a runner's report, as [`TestRun::reports`] gives it.
#[derive(Debug, Clone)]
pub struct Report<'a> {
    /// The failing test as the runner takes it back (the spelling of
    /// [`TestRun::failing_tests`]); `None` when the report names no test
    /// the runner knows.
    pub test: Option<String>,
    pub failure: &'a Failure,
    /// The failure's own lines: from its header to the next failure or the
    /// runner's closing summary.
    pub text: &'a str,
}

impl Report<'_> {
    /// The error types of the failure and its chain, without their module.
    pub fn error_types(&self) -> BTreeSet<String> {
        error_types(self.failure).collect()
    }

    /// The failure's frames and its chain's, innermost last, each once.
    pub fn frames(&self) -> Vec<Frame> {
        let mut out = Vec::new();
        push_frames(&mut out, self.failure);
        out
    }
}

/// Exception types of `f` and of the links of its chain, without their module.
fn error_types(f: &Failure) -> impl Iterator<Item = String> + '_ {
    std::iter::once(f.exception_type.as_deref())
        .chain(f.causes.iter().map(|c| c.exception_type.as_deref()))
        .flatten()
        .map(|t| t.rsplit('.').next().unwrap_or(t).trim().to_string())
        .filter(|t| !t.is_empty())
}

/// Adds the frames of `f`'s chain (the cause first: innermost last
/// throughout) and of `f` that `out` does not have yet.
fn push_frames(out: &mut Vec<Frame>, f: &Failure) {
    let frames = f
        .causes
        .iter()
        .rev()
        .flat_map(|c| &c.frames)
        .chain(&f.frames);
    for frame in frames {
        if !out.contains(frame) {
            out.push(frame.clone());
        }
    }
}

/// The text of the failure whose header is at 1-based `line`: up to the
/// next failure's header (`starts`), a `====` banner or rule (pytest's
/// sections, unittest's blocks) or unittest's closing `----` / `Ran N
/// tests`. `None` when `line` is not in `output`.
fn block<'a>(
    output: &'a str,
    lines: &[&str],
    offsets: &[usize],
    starts: &[usize],
    line: usize,
) -> Option<&'a str> {
    let first = line.checked_sub(1).filter(|i| *i < lines.len())?;
    let next = starts
        .iter()
        .filter(|s| **s > line)
        .min()
        .map_or(lines.len(), |s| s - 1);
    let end = (first + 1..next)
        .find_map(|k| {
            if lines[k].starts_with("====") {
                Some(k)
            } else if lines[k].starts_with("Ran ") && lines[k - 1].starts_with("----") {
                Some(k - 1)
            } else {
                None
            }
        })
        .unwrap_or(next);
    Some(&output[offsets[first]..offsets[end].min(output.len())])
}

/// The report format a runner writes; `None` lets detection choose (cargo
/// test or nextest, go test or its JSON).
fn report_format(runner: Runner) -> Option<DetectedFormat> {
    match runner {
        Runner::Pytest => Some(DetectedFormat::Pytest),
        Runner::Unittest => Some(DetectedFormat::Unittest),
        Runner::Jest => Some(DetectedFormat::Jest),
        Runner::CargoTest | Runner::GoTest | Runner::Unknown => None,
    }
}

/// A report's test id as its runner takes it back, or `None` when it names
/// no test the runner knows (an unknown runner, a Go package's own failure).
fn runner_id(runner: Runner, failure: &Failure, id: &str) -> Option<String> {
    match runner {
        Runner::Pytest => {
            let error = !id.contains("::")
                || failure.context.contains_key("phase")
                || failure.context.get("outcome").is_some_and(|o| o == "error");
            Some(if error {
                format!("ERROR {id}")
            } else {
                id.to_string()
            })
        }
        // `m.T.test_x (i=1)`, `m.T.test_x [msg]`: a subtest's message and
        // parameters are not part of the id unittest takes back.
        Runner::Unittest => Some(id.split_once(' ').map_or(id, |(id, _)| id).to_string()),
        Runner::GoTest => {
            let package = failure.context.get("package");
            if id == "(package)" || package.is_some_and(|p| p == id) {
                return None;
            }
            let name = package
                .and_then(|p| id.strip_prefix(p.as_str()))
                .and_then(|rest| rest.strip_prefix('.'))
                .unwrap_or(id);
            Some(name.to_string())
        }
        Runner::CargoTest | Runner::Jest => Some(id.to_string()),
        Runner::Unknown => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signature(runner: Runner, output: &str) -> FailureSignature {
        TestRun::read(runner, output).signature()
    }

    const ASSERTION: &str = "Traceback (most recent call last):\n  File \"/tmp/wt/test_app.py\", line 9, in <module>\n    assert add(2, 2) == 4\nAssertionError: add(2, 2) returned 5\n";
    const IMPORT: &str = "Traceback (most recent call last):\n  File \"/tmp/wt/test_app.py\", line 1, in <module>\n    from app import add\nModuleNotFoundError: No module named 'app'\n";

    #[test]
    fn same_failure_matches_across_line_numbers() {
        let a = signature(Runner::Unknown, ASSERTION);
        let b = signature(Runner::Unknown, &ASSERTION.replace("line 9", "line 42"));
        assert!(a.matches(&b));
        assert_eq!(
            a.error_types.iter().collect::<Vec<_>>(),
            vec!["AssertionError"]
        );
        assert!(a.failing_tests.is_empty(), "no runner, no test ids");
    }

    #[test]
    fn an_import_error_is_a_different_failure() {
        let a = signature(Runner::Unknown, ASSERTION);
        let b = signature(Runner::Unknown, IMPORT);
        assert!(!a.matches(&b));
        assert!(b.error_types.contains("ModuleNotFoundError"));
    }

    const PYTEST_A: &str = "============================= test session starts ==============================\ncollected 2 items\n\ntests/t.py F.                                                            [100%]\n\n=================================== FAILURES ===================================\n____________________________________ test_a ____________________________________\n\n    def test_a():\n>       assert f() == 4\nE       AssertionError: assert 5 == 4\n\ntests/t.py:9: AssertionError\n=========================== short test summary info ============================\nFAILED tests/t.py::test_a - AssertionError: assert 5 == 4\n========================= 1 failed, 1 passed in 0.02s ==========================\n";

    const PYTEST_COLLECTION: &str = "============================= test session starts ==============================\ncollected 0 items / 1 error\n\n==================================== ERRORS ====================================\n_________________________ ERROR collecting tests/t.py __________________________\nImportError while importing test module '/w/tests/t.py'.\nTraceback:\ntests/t.py:1: in <module>\n    from app import f\nE   ImportError: cannot import name 'f' from 'app'\n=========================== short test summary info ============================\nERROR tests/t.py\n!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!\n=============================== 1 error in 0.05s ===============================\n";

    #[test]
    fn pytest_failures_must_name_the_same_test() {
        let base = signature(Runner::Pytest, PYTEST_A);
        assert_eq!(
            base.failing_tests.iter().collect::<Vec<_>>(),
            vec!["tests/t.py::test_a"]
        );
        assert!(base.error_types.contains("AssertionError"));
        let moved = signature(
            Runner::Pytest,
            &PYTEST_A
                .replace("t.py:9", "t.py:31")
                .replace("5 == 4", "6 == 4"),
        );
        let other = signature(Runner::Pytest, &PYTEST_A.replace("test_a", "test_b"));
        let collection = signature(Runner::Pytest, PYTEST_COLLECTION);
        assert!(base.matches(&moved));
        assert!(!base.matches(&other));
        assert!(!base.matches(&collection));
    }

    #[test]
    fn a_file_that_does_not_collect_is_the_same_failure_when_that_is_all_there_is() {
        let base = signature(Runner::Pytest, PYTEST_COLLECTION);
        assert_eq!(
            base.failing_tests.iter().collect::<Vec<_>>(),
            vec!["ERROR tests/t.py"]
        );
        assert!(base.error_types.contains("ImportError"), "{base:?}");
        assert!(base.matches(&signature(Runner::Pytest, PYTEST_COLLECTION)));
        assert!(!base.matches(&signature(
            Runner::Pytest,
            &PYTEST_COLLECTION.replace("tests/t.py", "tests/u.py")
        )));
        assert!(!base.matches(&signature(
            Runner::Pytest,
            &PYTEST_COLLECTION.replace("ImportError:", "SyntaxError:")
        )));
    }

    #[test]
    fn pytest_ids_from_the_summary_alone() {
        let run = TestRun::read(
            Runner::Pytest,
            "=== short test summary info ===\nFAILED tests/test_a.py::test_x - AssertionError: 1 != 2\nERROR tests/test_b.py\nERROR tests/test_c.py::test_y - RuntimeError: setup\n",
        );
        assert_eq!(
            run.failing_tests(),
            vec![
                "tests/test_a.py::test_x",
                "ERROR tests/test_b.py",
                "ERROR tests/test_c.py::test_y"
            ]
        );
    }

    const UNITTEST: &str = "F.E\n======================================================================\nFAIL: test_b (test_shop.ShopTest.test_b)\n----------------------------------------------------------------------\nTraceback (most recent call last):\n  File \"/w/test_shop.py\", line 9, in test_b\n    self.assertEqual(1, 2)\nAssertionError: 1 != 2\n\n======================================================================\nERROR: test_c (test_shop.ShopTest)\n----------------------------------------------------------------------\nTraceback (most recent call last):\n  File \"/w/test_shop.py\", line 12, in test_c\n    raise KeyError('x')\nKeyError: 'x'\n\n======================================================================\nFAIL: test_d (test_shop.ShopTest.test_d) (i=1)\n----------------------------------------------------------------------\nTraceback (most recent call last):\n  File \"/w/test_shop.py\", line 15, in test_d\n    self.assertTrue(False)\nAssertionError: False is not true\n\n----------------------------------------------------------------------\nRan 4 tests in 0.001s\n\nFAILED (failures=2, errors=1)\n";

    #[test]
    fn unittest_ids_are_what_unittest_takes() {
        let run = TestRun::read(Runner::Unittest, UNITTEST);
        assert_eq!(
            run.failing_tests(),
            vec![
                "test_shop.ShopTest.test_b",
                "test_shop.ShopTest.test_c",
                "test_shop.ShopTest.test_d"
            ]
        );
        assert_eq!(
            run.error_types().into_iter().collect::<Vec<_>>(),
            vec!["AssertionError", "KeyError"]
        );
    }

    #[test]
    fn unittest_subtests_with_a_message() {
        let rule = "=".repeat(70);
        let dashes = "-".repeat(70);
        let block = |header: &str| {
            format!(
                "{rule}\n{header}\n{dashes}\nTraceback (most recent call last):\n  File \"/w/test_sub.py\", line 5, in test_a\n    self.assertEqual(1, 2)\nAssertionError: 1 != 2\n\n"
            )
        };
        // Python 3.11's spellings of `subTest("msg")`, `subTest("m", i=1)`,
        // `subTest(i=2)` and a message passed as a parameter.
        let out = [
            "FAIL: test_a (test_sub.T.test_a) [positional msg]",
            "FAIL: test_c (test_sub.T.test_c) [m] (i=1)",
            "FAIL: test_d (test_sub.T.test_d) (i=2)",
            "FAIL: test_e (test_sub.T.test_e) (msg='kw msg')",
        ]
        .map(block)
        .concat()
            + &format!("{dashes}\nRan 4 tests in 0.001s\n\nFAILED (failures=4)\n");
        let run = TestRun::read(Runner::Unittest, &out);
        assert_eq!(
            run.failing_tests(),
            vec![
                "test_sub.T.test_a",
                "test_sub.T.test_c",
                "test_sub.T.test_d",
                "test_sub.T.test_e"
            ]
        );
        assert_eq!(run.failures()[0].frames[0].line, Some(5));
    }

    #[test]
    fn pytest_sections_without_banners_name_their_tests() {
        // A CI log's excerpt: the sections of `--tb=short`, no banner, no summary.
        let out = "___________________________ test_a ___________________________\ntests/t.py:9: in test_a\n    assert f() == 4\nE   AssertionError: assert 5 == 4\n___________________________ Cart.test_b ___________________________\ntests/t.py:20: in test_b\n    c.total()\nshop/cart.py:3: in total\n    return x[0]\nE   IndexError: list index out of range\n";
        let run = TestRun::read(Runner::Pytest, out);
        assert_eq!(
            run.failing_tests(),
            vec!["tests/t.py::test_a", "tests/t.py::Cart::test_b"]
        );
        assert_eq!(
            run.error_types().into_iter().collect::<Vec<_>>(),
            vec!["AssertionError", "IndexError"]
        );
        // Summary lines alone, without their banner.
        let run = TestRun::read(
            Runner::Pytest,
            "tests/t.py F.\nFAILED tests/t.py::test_a - AssertionError: 1 != 2\nERROR tests/u.py\nERROR root:t.py:5 boom\n1 failed, 1 passed, 1 error in 0.02s\n",
        );
        assert_eq!(
            run.failing_tests(),
            vec!["tests/t.py::test_a", "ERROR tests/u.py"]
        );
    }

    #[test]
    fn each_report_keeps_its_own_lines() {
        let run = TestRun::read(Runner::Unittest, UNITTEST);
        let reports = run.reports(UNITTEST);
        let tests: Vec<_> = reports.iter().map(|r| r.test.as_deref()).collect();
        assert_eq!(
            tests,
            vec![
                Some("test_shop.ShopTest.test_b"),
                Some("test_shop.ShopTest.test_c"),
                Some("test_shop.ShopTest.test_d")
            ]
        );
        assert!(reports[0].text.starts_with("FAIL: test_b"));
        assert!(reports[0].text.contains("line 9") && !reports[0].text.contains("KeyError"));
        assert!(reports[1].text.contains("KeyError: 'x'") && !reports[1].text.contains("test_d"));
        assert!(
            reports[2].text.contains("False is not true") && !reports[2].text.contains("Ran 4"),
            "{}",
            reports[2].text
        );
        assert_eq!(
            reports[1].error_types().into_iter().collect::<Vec<_>>(),
            vec!["KeyError"]
        );
        assert_eq!(reports[1].frames()[0].line, Some(12));
        // pytest: a section up to the summary's banner; a test named only in
        // the summary has the whole output.
        let run = TestRun::read(Runner::Pytest, PYTEST_A);
        let reports = run.reports(PYTEST_A);
        assert_eq!(reports.len(), 1);
        assert!(reports[0].text.starts_with("____"));
        assert!(reports[0].text.contains("tests/t.py:9: AssertionError"));
        assert!(!reports[0].text.contains("short test summary"));
        let summary =
            "=== short test summary info ===\nFAILED tests/t.py::test_x - AssertionError\n";
        let run = TestRun::read(Runner::Pytest, summary);
        assert_eq!(run.reports(summary)[0].text, summary);
    }

    #[test]
    fn unittest_modules_that_did_not_import() {
        let rule = "=".repeat(70);
        let dashes = "-".repeat(70);
        for (header, id) in [
            (
                "ERROR: tests.test_more (unittest.loader._FailedTest.tests.test_more)",
                "unittest.loader._FailedTest.tests.test_more",
            ),
            (
                "ERROR: test_more (unittest.loader._FailedTest)",
                "unittest.loader._FailedTest.test_more",
            ),
        ] {
            let out = format!(
                "E\n{rule}\n{header}\n{dashes}\nImportError: Failed to import test module: test_more\nTraceback (most recent call last):\n  File \"/usr/lib/python3.11/unittest/loader.py\", line 407, in _find_test_path\nModuleNotFoundError: No module named 'app'\n\n{dashes}\nRan 1 test in 0.000s\n\nFAILED (errors=1)\n"
            );
            let run = TestRun::read(Runner::Unittest, &out);
            assert_eq!(run.failing_tests(), vec![id]);
            assert!(run.error_types().contains("ModuleNotFoundError"));
        }
    }

    #[test]
    fn rust_panics_are_typed() {
        let captured = "running 2 tests\ntest m::t ... FAILED\ntest m::u ... ok\n\nfailures:\n\n---- m::t stdout ----\n\nthread 'm::t' panicked at src/lib.rs:3:5:\nboom\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\n\nfailures:\n    m::t\n\ntest result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n";
        let nocapture = "running 1 test\nthread 'm::t' panicked at src/lib.rs:3:5:\nboom\ntest m::t ... FAILED\n";
        for out in [captured, nocapture] {
            let sig = signature(Runner::CargoTest, out);
            assert!(sig.error_types.contains("panic"), "{out}");
            assert_eq!(sig.failing_tests.iter().collect::<Vec<_>>(), vec!["m::t"]);
        }
    }

    #[test]
    fn go_tests_without_their_package() {
        let out = "=== RUN   TestAdd\n=== RUN   TestAdd/neg\n    calc_test.go:12: got 1, want 2\n--- FAIL: TestAdd (0.00s)\n    --- FAIL: TestAdd/neg (0.00s)\nFAIL\nFAIL\texample.com/calc\t0.002s\n";
        let run = TestRun::read(Runner::GoTest, out);
        assert_eq!(run.failing_tests(), vec!["TestAdd/neg"]);
    }

    #[test]
    fn only_a_known_runner_names_tests() {
        assert!(
            TestRun::read(Runner::Unknown, PYTEST_A)
                .failing_tests()
                .is_empty()
        );
    }

    #[test]
    fn nothing_recognised_compares_the_last_line() {
        let a = signature(
            Runner::Unknown,
            "checking totals\nexpected 4 in /w/probe-0/a.txt, got 5\n",
        );
        let b = signature(
            Runner::Unknown,
            "checking totals\nexpected 4 in /w/probe-1/a.txt, got 6\n",
        );
        let c = signature(Runner::Unknown, "checking totals\nno totals file\n");
        assert!(a.error_types.is_empty() && a.failing_tests.is_empty());
        assert!(a.matches(&b));
        assert!(!a.matches(&c));
    }

    #[test]
    fn frames_innermost_last_with_their_lines() {
        let frames = TestRun::read(Runner::Unknown, ASSERTION).frames();
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0].line, Some(9));
        assert!(frames[0].file.as_deref().unwrap().ends_with("test_app.py"));
    }
}
