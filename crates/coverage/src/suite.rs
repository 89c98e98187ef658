//! Per-test coverage of a Python suite, run in a sandbox: the spectrum that
//! `tracelab_code_index::sbfl` turns into Ochiai scores.
//!
//! A test command (`python3 -m pytest …`, `pytest …`, `python3 -m unittest …`)
//! is planned into three sandbox commands: a probe that coverage.py is
//! importable, the suite under `coverage run` with `dynamic_context =
//! test_function` (each line records the test functions that ran it, named
//! `package.module.Class.test`), and `coverage json --show-contexts`. Failing
//! tests are read from the runner's own summary lines (pytest `FAILED id`
//! with `-rfE`; unittest `FAIL: name (id)`) by the domain's runner reader,
//! so no plugin is needed.
//! Outputs go to `.tracelab-coverage/` inside the worktree, which every
//! sandbox kind can write.

use crate::contexts::{parse_coverage_py_json, runs_from_coverage};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;
use tracelab_code_index::sbfl::TestRun;
use tracelab_domain::ports::{CommandResult, CommandSpec, Sandbox};
use tracelab_domain::runner as domain_runner;
use tracelab_evidence::test_run;

/// Directory (in the worktree) for the rc file, data and JSON report.
pub const WORK_DIR: &str = ".tracelab-coverage";
const RC: &str = ".tracelab-coverage/coveragerc";
const JSON: &str = ".tracelab-coverage/coverage.json";
/// Only the worktree's own code is measured; paths are kept relative so
/// they match the index's repository paths.
const RC_TEXT: &str = "[run]\ndynamic_context = test_function\nsource = .\nrelative_files = True\ndata_file = .tracelab-coverage/data\n\n[json]\nshow_contexts = True\n";
/// Bytes of output kept per command.
const OUTPUT_LIMIT: usize = 4 << 20;

/// Which runner a Python test command uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Runner {
    Pytest,
    Unittest,
}

/// A Python test command taken apart: interpreter, runner, options and the
/// tests it selects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PythonCommand {
    /// `python3`, `python`, or a path to an interpreter.
    pub python: String,
    pub runner: Runner,
    /// Runner options, kept in the suite and in reproductions (`-x`,
    /// `-p no:randomly`, `-v`, ...).
    pub options: Vec<String>,
    /// Positional selections (files, node ids, dotted names) and `-k`/`-m`
    /// expressions (as `-k EXPR`).
    pub selection: Vec<String>,
}

/// pytest options that take a value as the next argument.
const PYTEST_VALUED: &[&str] = &[
    "-p",
    "-c",
    "-o",
    "--rootdir",
    "--confcutdir",
    "--basetemp",
    "-W",
    "--junitxml",
    "--junit-xml",
    "--maxfail",
    "--tb",
    "-r",
    "--deselect",
    "--ignore",
    "--ignore-glob",
    "--import-mode",
    "--durations",
    "--log-level",
    "--capture",
];

impl PythonCommand {
    /// Recognises pytest and unittest commands; anything else is an
    /// `InvalidArgument` saying what is supported.
    pub fn parse(argv: &[String]) -> Result<Self> {
        let unsupported = || {
            Error::InvalidArgument(format!(
                "coverage-based localisation supports Python test commands (`python3 -m pytest …`, `pytest …`, `python3 -m unittest …`); got {:?}",
                argv.join(" ")
            ))
        };
        let program = argv.first().ok_or_else(unsupported)?;
        let base = program.rsplit('/').next().unwrap_or(program);
        let (python, runner, rest) = if base == "pytest" || base == "py.test" {
            ("python3".to_string(), Runner::Pytest, &argv[1..])
        } else if base.starts_with("python") && argv.get(1).map(String::as_str) == Some("-m") {
            let runner = match argv.get(2).map(String::as_str) {
                Some("pytest") | Some("py.test") => Runner::Pytest,
                Some("unittest") => Runner::Unittest,
                _ => return Err(unsupported()),
            };
            (program.clone(), runner, &argv[3..])
        } else {
            return Err(unsupported());
        };
        let mut options = Vec::new();
        let mut selection = Vec::new();
        let mut i = 0;
        while i < rest.len() {
            let a = &rest[i];
            let next = rest.get(i + 1);
            match runner {
                Runner::Pytest if (a == "-k" || a == "-m") && next.is_some() => {
                    selection.extend([a.clone(), next.cloned().unwrap_or_default()]);
                    i += 1;
                }
                Runner::Pytest if PYTEST_VALUED.contains(&a.as_str()) && next.is_some() => {
                    options.extend([a.clone(), next.cloned().unwrap_or_default()]);
                    i += 1;
                }
                Runner::Unittest if a == "-k" || a == "-p" || a == "-s" || a == "-t" => {
                    // `discover -s DIR -p PATTERN` and `-k` shape the suite.
                    selection.push(a.clone());
                    if let Some(n) = next {
                        selection.push(n.clone());
                        i += 1;
                    }
                }
                _ if a.starts_with('-') => options.push(a.clone()),
                _ => selection.push(a.clone()),
            }
            i += 1;
        }
        Ok(Self {
            python,
            runner,
            options,
            selection,
        })
    }

    /// The command as the user would type it.
    pub fn argv(&self) -> Vec<String> {
        let mut v = self.prefix();
        v.extend(self.options.iter().cloned());
        v.extend(self.selection.iter().cloned());
        v
    }

    /// `python3 -m pytest` / `python3 -m unittest`.
    pub fn prefix(&self) -> Vec<String> {
        vec![
            self.python.clone(),
            "-m".into(),
            match self.runner {
                Runner::Pytest => "pytest",
                Runner::Unittest => "unittest",
            }
            .into(),
        ]
    }

    /// The same runner and options over the whole suite (no selection):
    /// Ochiai needs the passing tests too, and the tests that cover a
    /// function are all of them, so the options that stop at the first
    /// failure (`-x`, `--maxfail`, `--failfast`) are dropped.
    pub fn whole_suite(&self) -> Self {
        let runner = match self.runner {
            Runner::Pytest => domain_runner::Runner::Pytest,
            Runner::Unittest => domain_runner::Runner::Unittest,
        };
        Self {
            options: domain_runner::without_early_stop(runner, &self.options),
            selection: Vec::new(),
            ..self.clone()
        }
    }

    /// The same runner and options, running only `tests` (runner ids).
    pub fn only(&self, tests: &[String]) -> Self {
        Self {
            selection: tests.to_vec(),
            ..self.clone()
        }
    }

    /// Runner arguments that make failures parseable: pytest's summary of
    /// failures and errors, no cache directory written into the worktree.
    fn report_args(&self) -> Vec<String> {
        match self.runner {
            Runner::Pytest => vec!["-rfE".into(), "-p".into(), "no:cacheprovider".into()],
            Runner::Unittest => Vec::new(),
        }
    }

    /// The command with the runner's failure summary switched on.
    pub fn reporting_argv(&self) -> Vec<String> {
        let mut v = self.prefix();
        v.extend(self.report_args());
        v.extend(self.options.iter().cloned());
        v.extend(self.selection.iter().cloned());
        v
    }
}

/// A test that failed: the runner's id (what reruns it) and the dotted
/// name coverage.py's `test_function` context gives it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FailingTest {
    /// `tests/test_cart.py::CartTest::test_three` (pytest) or
    /// `tests.test_cart.CartTest.test_three` (unittest).
    pub id: String,
    /// `tests.test_cart.CartTest.test_three`.
    pub name: String,
}

/// `tests/test_cart.py::CartTest::test_three[2-3]` → `tests.test_cart.CartTest.test_three`.
pub fn dotted_from_pytest_id(id: &str) -> String {
    let id = id.split_once('[').map_or(id, |(head, _)| head);
    let (file, rest) = id.split_once("::").unwrap_or((id, ""));
    let module = file
        .trim_start_matches("./")
        .trim_end_matches(".py")
        .replace(['/', '\\'], ".");
    if rest.is_empty() {
        module
    } else {
        format!("{module}.{}", rest.replace("::", "."))
    }
}

/// The failing tests a runner printed, sorted and without duplicates, read
/// by the evidence parsers (`tracelab_evidence::test_run`), with
/// pytest ids kept only when they name a test (`path::test`, not a
/// collection error's bare path).
pub fn failing_tests(runner: Runner, output: &str) -> Vec<FailingTest> {
    let reader = match runner {
        Runner::Pytest => domain_runner::Runner::Pytest,
        Runner::Unittest => domain_runner::Runner::Unittest,
    };
    let mut out = BTreeSet::new();
    for id in test_run::TestRun::read(reader, output).failing_tests() {
        match runner {
            Runner::Pytest => {
                let id = id.strip_prefix("ERROR ").unwrap_or(&id);
                if id.contains("::") {
                    out.insert(FailingTest {
                        id: id.to_string(),
                        name: dotted_from_pytest_id(id),
                    });
                }
            }
            Runner::Unittest => {
                out.insert(FailingTest {
                    id: id.clone(),
                    name: id,
                });
            }
        }
    }
    out.into_iter().collect()
}

/// What one coverage run of a suite produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spectrum {
    /// The suite command that ran (before coverage wrapped it).
    pub command: Vec<String>,
    pub runner: Runner,
    /// Per-test outcome and covered lines.
    pub runs: Vec<TestRun>,
    pub failing: Vec<FailingTest>,
    /// Environment set on top of the sandbox's own.
    pub env: Vec<(String, String)>,
    /// The runner's output (failure tracebacks included).
    pub output: String,
    pub exit_code: Option<i32>,
}

/// Variables set for every run: stable hashing, no bytecode files in the
/// worktree. They are the environment delta a reproduction repeats.
pub fn default_env() -> Vec<(String, String)> {
    vec![
        ("PYTHONHASHSEED".into(), "0".into()),
        ("PYTHONDONTWRITEBYTECODE".into(), "1".into()),
    ]
}

fn spec(argv: Vec<String>, env: &[(String, String)], timeout: Duration) -> CommandSpec {
    CommandSpec {
        argv,
        env: env.to_vec(),
        timeout,
        output_limit: OUTPUT_LIMIT,
    }
}

fn blocked(what: &str, r: &CommandResult) -> Option<Error> {
    r.blocked
        .as_ref()
        .map(|why| Error::Coverage(format!("{what} did not complete: {why}")))
}

/// Runs `suite` under coverage.py in `sandbox` (opened on `worktree`) and
/// returns the spectrum. Errors say clearly when coverage.py is missing,
/// when the runner could not run, and when no per-test data came out.
pub async fn collect(
    sandbox: &dyn Sandbox,
    worktree: &Path,
    suite: &PythonCommand,
    timeout: Duration,
) -> Result<Spectrum> {
    let dir = worktree.join(WORK_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let rc = worktree.join(RC);
    std::fs::write(&rc, RC_TEXT).map_err(|e| Error::io(&rc, e))?;
    let env = default_env();
    let py = suite.python.clone();

    let probe = sandbox
        .exec(&spec(
            vec![py.clone(), "-c".into(), "import coverage".into()],
            &env,
            timeout.min(Duration::from_secs(60)),
        ))
        .await?;
    if let Some(e) = blocked(&format!("`{py} -c 'import coverage'`"), &probe) {
        return Err(e);
    }
    if !probe.passed() {
        return Err(Error::Coverage(format!(
            "coverage.py is not importable by `{py}` in the sandbox (install it there: `{py} -m pip install coverage` or the python3-coverage package): {}",
            probe.output.trim()
        )));
    }

    let mut run = vec![
        py.clone(),
        "-m".into(),
        "coverage".into(),
        "run".into(),
        format!("--rcfile={RC}"),
        "-m".into(),
    ];
    run.extend(suite.reporting_argv().into_iter().skip(2));
    if suite.runner == Runner::Pytest {
        // One test file that does not import (a missing optional
        // dependency, an old module under a new Python) would otherwise
        // stop pytest before any test runs, and leave no coverage at all.
        run.push("--continue-on-collection-errors".into());
    }
    let ran = sandbox.exec(&spec(run, &env, timeout)).await?;
    if let Some(e) = blocked("the suite under coverage", &ran) {
        return Err(e);
    }
    let report = sandbox
        .exec(&spec(
            vec![
                py.clone(),
                "-m".into(),
                "coverage".into(),
                "json".into(),
                format!("--rcfile={RC}"),
                "-o".into(),
                JSON.into(),
            ],
            &env,
            timeout.min(Duration::from_secs(300)),
        ))
        .await?;
    if !report.passed() {
        return Err(Error::Coverage(format!(
            "`coverage json` failed (did the suite run at all?): {}\n--- suite output ---\n{}",
            report.output.trim(),
            tail(&ran.output, 2000)
        )));
    }
    let json_path = worktree.join(JSON);
    let json = std::fs::read_to_string(&json_path).map_err(|e| Error::io(&json_path, e))?;
    let per_test = parse_coverage_py_json(&json)?;
    if per_test.is_empty() {
        return Err(Error::Coverage(format!(
            "coverage.py recorded no test functions; did `{}` collect any tests?\n{}",
            suite.argv().join(" "),
            tail(&ran.output, 2000)
        )));
    }
    let failing = failing_tests(suite.runner, &ran.output);
    let names: BTreeSet<String> = failing.iter().map(|f| f.name.clone()).collect();
    Ok(Spectrum {
        command: suite.argv(),
        runner: suite.runner,
        runs: runs_from_coverage(per_test, &names),
        failing,
        env,
        output: ran.output,
        exit_code: ran.exit_code,
    })
}

fn tail(s: &str, max: usize) -> &str {
    let mut start = s.len().saturating_sub(max);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn parses_python_test_commands() {
        let c = PythonCommand::parse(&argv(
            "python3 -m pytest -x -p no:randomly tests/test_a.py::test_x -k fast",
        ))
        .unwrap();
        assert_eq!(c.runner, Runner::Pytest);
        assert_eq!(c.python, "python3");
        assert_eq!(c.options, argv("-x -p no:randomly"));
        assert_eq!(c.selection, argv("tests/test_a.py::test_x -k fast"));
        // The whole suite runs to the end: `-x` would stop it at the
        // first failure and hide the tests after it.
        assert_eq!(
            c.whole_suite().argv(),
            argv("python3 -m pytest -p no:randomly")
        );
        assert_eq!(
            c.only(&["t.py::a".into()]).argv(),
            argv("python3 -m pytest -x -p no:randomly t.py::a")
        );
        let c = PythonCommand::parse(&argv("pytest -q tests")).unwrap();
        assert_eq!(c.prefix(), argv("python3 -m pytest"));
        assert_eq!(c.selection, argv("tests"));
        let c = PythonCommand::parse(&argv("/usr/bin/python3 -m unittest -v test_shop")).unwrap();
        assert_eq!(
            (c.runner, c.python.as_str()),
            (Runner::Unittest, "/usr/bin/python3")
        );
        assert_eq!(c.options, argv("-v"));
        assert_eq!(c.selection, argv("test_shop"));
        assert_eq!(
            c.reporting_argv(),
            argv("/usr/bin/python3 -m unittest -v test_shop")
        );
        for bad in ["cargo test", "python3 script.py", "python3 -m tox", ""] {
            let e = PythonCommand::parse(&argv(bad)).unwrap_err();
            assert!(
                e.to_string().contains("supports Python test commands"),
                "{e}"
            );
        }
    }

    #[test]
    fn pytest_ids_become_coverage_context_names() {
        for (id, dotted) in [
            (
                "tests/test_cart.py::test_total",
                "tests.test_cart.test_total",
            ),
            (
                "tests/test_cart.py::CartTest::test_three",
                "tests.test_cart.CartTest.test_three",
            ),
            ("test_a.py::test_p[1-2]", "test_a.test_p"),
            ("./pkg/t.py::T::test_x[a::b]", "pkg.t.T.test_x"),
        ] {
            assert_eq!(dotted_from_pytest_id(id), dotted, "{id}");
        }
    }

    #[test]
    fn reads_failing_tests_from_runner_output() {
        let pytest = "=== short test summary info ===\nFAILED tests/test_cart.py::CartTest::test_three - AssertionError: 5 != 6\nERROR tests/test_db.py::test_conn - OSError\nFAILED tests/test_cart.py::CartTest::test_three - again\n1 failed, 2 passed in 0.1s\n";
        let f = failing_tests(Runner::Pytest, pytest);
        assert_eq!(
            f.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
            [
                "tests/test_cart.py::CartTest::test_three",
                "tests/test_db.py::test_conn"
            ]
        );
        assert_eq!(f[0].name, "tests.test_cart.CartTest.test_three");
        let rule = "=".repeat(70);
        let dashes = "-".repeat(70);
        let unittest = [
            "FAIL: test_three (tests.test_cart.CartTest.test_three)",
            "ERROR: test_b (test_shop.ShopTest)",
            "FAIL: test_c (m.C.test_c) (i=1)",
        ]
        .map(|h| format!("{rule}\n{h}\n{dashes}\nTraceback (most recent call last):\n  File \"m.py\", line 1, in t\nAssertionError\n\n"))
        .concat();
        let f = failing_tests(Runner::Unittest, &unittest);
        assert_eq!(
            f.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
            [
                "m.C.test_c",
                "test_shop.ShopTest.test_b",
                "tests.test_cart.CartTest.test_three"
            ]
        );
        assert!(failing_tests(Runner::Pytest, "3 passed").is_empty());
    }
}
