//! What the engine needs to know about test runners: which runner a command
//! uses and how to run one test alone.
//!
//! This is deliberately small; reading which tests failed is the evidence
//! parsers' (`tracelab_evidence::test_run` reads a run's failing tests in the
//! spelling [`isolate`] takes back).

mod unittest;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    Pytest,
    Unittest,
    CargoTest,
    GoTest,
    Jest,
    Unknown,
}

impl Runner {
    /// Build directories (repository-relative) whose content the runner's
    /// build tool keeps correct across checkouts by itself, so probes in one
    /// worktree may keep them: cargo fingerprints every source it compiled.
    pub fn incremental_build_dirs(self) -> &'static [&'static str] {
        match self {
            Runner::CargoTest => &["target"],
            _ => &[],
        }
    }
}

/// Detects the runner from a command's argv.
pub fn detect(argv: &[String]) -> Runner {
    let base = |s: &str| s.rsplit('/').next().unwrap_or(s).to_string();
    let words: Vec<String> = argv.iter().map(|a| base(a)).collect();
    let first = words.first().map(String::as_str).unwrap_or("");
    match first {
        "pytest" | "py.test" => return Runner::Pytest,
        "cargo" if words.get(1).is_some_and(|w| w == "test" || w == "nextest") => {
            return Runner::CargoTest;
        }
        "go" if words.get(1).is_some_and(|w| w == "test") => return Runner::GoTest,
        "jest" => return Runner::Jest,
        _ => {}
    }
    if first.starts_with("python")
        && words.get(1).is_some_and(|w| w == "-m")
        && words.get(2).is_some_and(|w| w == "pytest")
    {
        return Runner::Pytest;
    }
    if first.starts_with("python")
        && words.get(1).is_some_and(|w| w == "-m")
        && words.get(2).is_some_and(|w| w == "unittest")
    {
        return Runner::Unittest;
    }
    if first == "npx" && words.get(1).is_some_and(|w| w == "jest") {
        return Runner::Jest;
    }
    Runner::Unknown
}

/// The prefix of the pseudo-test unittest reports for a module it could
/// not import (`unittest.loader._FailedTest.test_more`).
const UNITTEST_FAILED_IMPORT: &str = "unittest.loader._FailedTest.";

/// The module a unittest failure id says could not be imported (`test_more`,
/// or `tests.test_more` under discovery), if it is such a failure.
pub fn unittest_failed_import(test_id: &str) -> Option<&str> {
    test_id
        .strip_prefix(UNITTEST_FAILED_IMPORT)
        .filter(|m| !m.is_empty())
}

/// The argv that runs only `test_id`, when the runner allows it.
///
/// A failure that is not a test but a module that does not import or
/// collect (pytest's `ERROR path`, unittest's `_FailedTest`) is isolated to
/// that module: the isolated run fails while it does not import, and passes
/// once it imports and the tests the command selects in it pass.
pub fn isolate(runner: Runner, argv: &[String], test_id: &str) -> Option<Vec<String>> {
    match runner {
        Runner::Pytest => {
            // Keep the program and options (with their values), drop what
            // selects tests, and name the one test (or the file that did
            // not collect) instead of the paths.
            let module_form = argv.get(1).is_some_and(|a| a == "-m");
            let program = if module_form { 3 } else { 1 };
            let target = test_id.strip_prefix("ERROR ").unwrap_or(test_id);
            if target.is_empty() {
                return None;
            }
            let mut out: Vec<String> = argv.get(..program)?.to_vec();
            out.extend(keep_options(&argv[program..], &PYTEST_OPTIONS));
            out.push(target.to_string());
            Some(out)
        }
        Runner::Unittest => unittest::isolate(argv, test_id),
        Runner::CargoTest => {
            let mut out: Vec<String> = argv
                .iter()
                .take_while(|a| a.as_str() != "--")
                .cloned()
                .collect();
            out.push(test_id.to_string());
            out.extend(["--".to_string(), "--exact".to_string()]);
            Some(out)
        }
        Runner::GoTest => {
            // `-run X` / `-run=X` (or `--run`) selects tests: dropped with
            // its value, which would otherwise be read as a package.
            let mut out = without_options(argv, &[], &["-run", "--run"]);
            out.insert(
                2.min(out.len()),
                format!("-run=^{}$", regex::escape(test_id)),
            );
            Some(out)
        }
        Runner::Jest | Runner::Unknown => None,
    }
}

/// How a runner treats the argument after each of its options.
struct RunnerOptions {
    /// Options whose value is the next argument (kept together).
    with_value: &'static [&'static str],
    /// Options that select tests, dropped with their value: the isolated run
    /// names its one test instead.
    selecting: &'static [&'static str],
}

/// `argv` without the runner's options that stop at the first failure
/// (pytest `-x`, `--exitfirst`, `--maxfail N`, `--stepwise`; unittest
/// `-f`, `--failfast`; go `-failfast`; jest `--bail`). A run that must see
/// every selected test — a whole suite under coverage, the neighbour tests
/// a fix must keep passing — would otherwise stop at a test that already
/// failed before the fix and never run the ones after it.
pub fn without_early_stop(runner: Runner, argv: &[String]) -> Vec<String> {
    let (flags, valued): (&[&str], &[&str]) = match runner {
        Runner::Pytest => (
            &[
                "-x",
                "--exitfirst",
                "--sw",
                "--stepwise",
                "--sw-skip",
                "--stepwise-skip",
            ],
            &["--maxfail"],
        ),
        Runner::Unittest => (&["-f", "--failfast"], &[]),
        Runner::GoTest => (&["-failfast", "--failfast"], &[]),
        Runner::Jest => (&["--bail", "-b"], &[]),
        Runner::CargoTest | Runner::Unknown => return argv.to_vec(),
    };
    // pytest's short flags bundle: `-xv` is `-x -v`.
    let unbundled: Vec<String> = argv
        .iter()
        .filter_map(|arg| {
            let bundle = runner == Runner::Pytest
                && arg.len() > 2
                && !arg.starts_with("--")
                && arg.starts_with('-')
                && arg[1..].bytes().all(|b| b"xvsqlS".contains(&b))
                && arg.contains('x');
            if !bundle {
                return Some(arg.clone());
            }
            let rest = arg.replace('x', "");
            (rest.len() > 1).then_some(rest)
        })
        .collect();
    without_options(&unbundled, flags, valued)
}

/// `argv` without the options named in `flags`, and without those named in
/// `valued` together with their value (`--maxfail 2`, `--maxfail=2`).
fn without_options(argv: &[String], flags: &[&str], valued: &[&str]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut args = argv.iter();
    while let Some(arg) = args.next() {
        let name = arg.split('=').next().unwrap_or(arg);
        if flags.contains(&name) {
            continue;
        }
        if valued.contains(&name) {
            if !arg.contains('=') {
                args.next();
            }
            continue;
        }
        out.push(arg.clone());
    }
    out
}

const PYTEST_OPTIONS: RunnerOptions = RunnerOptions {
    with_value: &[
        "-p",
        "-c",
        "-o",
        "-W",
        "-n",
        "-r",
        "--rootdir",
        "--confcutdir",
        "--basetemp",
        "--tb",
        "--maxfail",
        "--ignore",
        "--ignore-glob",
        "--junitxml",
        "--junit-xml",
        "--durations",
        "--timeout",
        "--import-mode",
        "--log-level",
        "--log-cli-level",
        "--log-file",
        "--capture",
        "--override-ini",
        "--config-file",
        "--color",
        "--cov-report",
        "--dist",
        "--numprocesses",
        "--pythonwarnings",
    ],
    selecting: &["-k", "-m", "--deselect"],
};

const UNITTEST_OPTIONS: RunnerOptions = RunnerOptions {
    with_value: &["--durations"],
    selecting: &["-k"],
};

/// The options in `args`, each with its value when it takes one; paths, test
/// names and the options that select tests are dropped.
fn keep_options(args: &[String], options: &RunnerOptions) -> Vec<String> {
    let mut kept = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if !arg.starts_with('-') {
            continue;
        }
        let name = arg.split('=').next().unwrap_or(arg);
        // `-kEXPR` carries its value like `--deselect=ID` does.
        let attached_short = |opt: &&str| {
            opt.len() == 2 && !arg.starts_with("--") && arg.starts_with(*opt) && arg.len() > 2
        };
        let selects =
            options.selecting.contains(&name) || options.selecting.iter().any(attached_short);
        let takes_next =
            options.with_value.contains(&arg.as_str()) || options.selecting.contains(&arg.as_str());
        let value = if takes_next { iter.next() } else { None };
        if !selects {
            kept.push(arg.clone());
            kept.extend(value.cloned());
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        shell_words::split(s).unwrap()
    }

    #[test]
    fn detects_runners() {
        assert_eq!(detect(&argv("pytest -q tests")), Runner::Pytest);
        assert_eq!(detect(&argv("/usr/bin/python3 -m pytest")), Runner::Pytest);
        assert_eq!(detect(&argv("cargo test -p x")), Runner::CargoTest);
        assert_eq!(detect(&argv("go test ./...")), Runner::GoTest);
        assert_eq!(detect(&argv("npx jest")), Runner::Jest);
        assert_eq!(detect(&argv("python3 test_app.py")), Runner::Unknown);
        assert_eq!(
            detect(&argv("python3 -m unittest test_shop")),
            Runner::Unittest
        );
    }

    #[test]
    fn early_stop_options_are_dropped_and_nothing_else() {
        let w = |r, cmd: &str| without_early_stop(r, &argv(cmd));
        assert_eq!(
            w(
                Runner::Pytest,
                "python3 -m pytest -x -q --maxfail 2 --tb=short t.py"
            ),
            argv("python3 -m pytest -q --tb=short t.py")
        );
        assert_eq!(
            w(
                Runner::Pytest,
                "pytest -xvs --maxfail=1 --exitfirst -rx t.py::a"
            ),
            argv("pytest -vs -rx t.py::a")
        );
        assert_eq!(w(Runner::Pytest, "pytest -x"), argv("pytest"));
        assert_eq!(
            w(Runner::Unittest, "python3 -m unittest -f -v test_shop"),
            argv("python3 -m unittest -v test_shop")
        );
        assert_eq!(
            w(Runner::GoTest, "go test -failfast ./..."),
            argv("go test ./...")
        );
        assert_eq!(w(Runner::Jest, "npx jest --bail=1 a"), argv("npx jest a"));
        assert_eq!(w(Runner::CargoTest, "cargo test -x"), argv("cargo test -x"));
    }

    #[test]
    fn isolates_one_test() {
        assert_eq!(
            isolate(
                Runner::Pytest,
                &argv("python3 -m pytest -q tests"),
                "tests/t.py::test_x"
            )
            .unwrap(),
            argv("python3 -m pytest -q tests/t.py::test_x")
        );
        assert_eq!(
            isolate(Runner::CargoTest, &argv("cargo test -p a"), "m::t").unwrap(),
            argv("cargo test -p a m::t -- --exact")
        );
        assert_eq!(
            isolate(
                Runner::Unittest,
                &argv("python3 -m unittest -v test_shop"),
                "test_shop.T.test_b"
            )
            .unwrap(),
            argv("python3 -m unittest -v test_shop.T.test_b")
        );
        assert!(isolate(Runner::Unknown, &argv("python3 t.py"), "x").is_none());
        // go test: the selection's value goes with it in either form (a
        // value left behind would be read as a package).
        for command in [
            "go test -count=1 -run TestCount .",
            "go test -count=1 -run=TestC .",
            "go test -count=1 --run TestCount .",
        ] {
            assert_eq!(
                isolate(Runner::GoTest, &argv(command), "TestCount").unwrap(),
                argv("go test -run=^TestCount$ -count=1 ."),
                "{command}"
            );
        }
        // Option values stay with their options; selection is replaced.
        assert_eq!(
            isolate(
                Runner::Pytest,
                &argv(
                    "python3 -m pytest -p no:cacheprovider -k 'slow and not net' --tb short -x tests -m db --rootdir=. src"
                ),
                "tests/t.py::test_x"
            )
            .unwrap(),
            argv("python3 -m pytest -p no:cacheprovider --tb short -x --rootdir=. tests/t.py::test_x")
        );
        assert_eq!(
            isolate(Runner::Pytest, &argv("pytest -kfoo -q"), "t.py::a").unwrap(),
            argv("pytest -q t.py::a")
        );
        assert_eq!(
            isolate(
                Runner::Unittest,
                &argv("python3 -m unittest -k pattern -v discover"),
                "test_shop.T.test_b"
            )
            .unwrap(),
            argv("python3 -m unittest -v test_shop.T.test_b")
        );
    }

    /// One failure that is a module that does not import, through `isolate`.
    fn check_import(command: &str, id: &str, expected: &str) {
        assert_eq!(
            isolate(detect(&argv(command)), &argv(command), id),
            Some(argv(expected)),
            "{command} / {id}"
        );
    }

    #[test]
    fn a_module_that_does_not_import_is_isolated_to_what_loads_it() {
        // pytest: the file that did not collect (or the test whose set-up failed).
        check_import(
            "pytest -q -k slow tests",
            "ERROR tests/t.py",
            "pytest -q tests/t.py",
        );
        check_import(
            "python3 -m pytest tests",
            "ERROR tests/t.py::test_x",
            "python3 -m pytest tests/t.py::test_x",
        );
        // unittest by names: the command's names under the module, in order.
        let names = "python3 -m unittest -v tests.test_recipes.TakeTests tests.test_more.FirstTests tests.test_more.LastTests";
        check_import(
            names,
            "unittest.loader._FailedTest.test_more",
            "python3 -m unittest -v tests.test_more.FirstTests tests.test_more.LastTests",
        );
        check_import(
            names,
            "unittest.loader._FailedTest.tests.test_recipes",
            "python3 -m unittest -v tests.test_recipes.TakeTests",
        );
        // `test_more` is a whole part, not a prefix of `test_more_x`.
        check_import(
            "python3 -m unittest tests.test_more_x tests/test_more.py",
            "unittest.loader._FailedTest.test_more",
            "python3 -m unittest tests/test_more.py",
        );
        // No name loads it (implicit discovery): the module itself.
        check_import(
            "python3 -m unittest -b",
            "unittest.loader._FailedTest.tests.test_more",
            "python3 -m unittest -b tests.test_more",
        );
        // discover: where it looks stays, the pattern becomes the module's file.
        check_import(
            "python3 -m unittest discover -s tests -p 'check_*.py' -v",
            "unittest.loader._FailedTest.test_more",
            "python3 -m unittest discover -v -s tests -p test_more.py",
        );
        check_import(
            "python3 -m unittest discover tests 'test*.py' .",
            "unittest.loader._FailedTest.tests.sub.test_more",
            "python3 -m unittest discover -s tests -t . -p test_more.py",
        );
    }

    #[test]
    fn a_test_under_discover_is_chosen_by_its_module_and_id() {
        check_import(
            "python3 -m unittest discover -s tests -k fast --top-level-directory=.",
            "tests.test_shop.T.test_b",
            "python3 -m unittest discover -s tests -t . -p test_shop.py -k '*tests.test_shop.T.test_b'",
        );
    }

    #[test]
    fn names_modules_that_did_not_import() {
        assert_eq!(
            unittest_failed_import("unittest.loader._FailedTest.tests.test_more"),
            Some("tests.test_more")
        );
        assert_eq!(unittest_failed_import("tests.test_more.T.test_a"), None);
    }
}
