//! The oracle rule: the failing test, as it is at the bad revision, judges
//! every patch. A patch may not change a test file, a test fixture or a file
//! a runner collects as a test — a fix that edits its own judge proves
//! nothing. Such hunks are dropped before verification and named in the
//! report; the search runs the bad revision's test files on older sources
//! (the convention of public bug benchmarks) so it finds the commit that
//! broke the behaviour, not the commit that changed the test.

use crate::patch::FilePatch;
use crate::runner::Runner;
use crate::signature::FailureSignature;
use std::collections::BTreeSet;

/// Directory names whose contents are tests, fixtures or test data.
const TEST_DIRS: &[&str] = &[
    "test",
    "tests",
    "__tests__",
    "spec",
    "specs",
    "testdata",
    "test-data",
    "test_data",
    "fixtures",
    "__fixtures__",
    "__snapshots__",
    "__mocks__",
];

/// Whether a runner would collect `path` as a test, or it is test data:
/// `tests/`, `test_*.py`, `*_test.py`, `conftest.py`, `*_test.go`,
/// `*.test.js`, `*.spec.ts`, `src/test/`, `*Test.java`, `*_spec.rb`, …
/// Source helpers under `testing/` are not included: packages such as
/// `numpy.testing` are public code.
pub fn is_test_path(path: &str) -> bool {
    let path = path.trim_start_matches("./").replace('\\', "/");
    let mut components: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    let Some(file) = components.pop() else {
        return false;
    };
    if components
        .iter()
        .any(|c| TEST_DIRS.contains(&c.to_ascii_lowercase().as_str()))
    {
        return true;
    }
    let lower = file.to_ascii_lowercase();
    let (stem, ext) = lower.rsplit_once('.').unwrap_or((lower.as_str(), ""));
    let (orig_stem, _) = file.rsplit_once('.').unwrap_or((file, ""));
    match ext {
        "py" => {
            stem.starts_with("test_")
                || stem.ends_with("_test")
                || stem == "conftest"
                || stem == "tests"
                || stem == "test"
        }
        "go" => stem.ends_with("_test"),
        "js" | "jsx" | "ts" | "tsx" | "mjs" | "cjs" | "mts" | "cts" => {
            let inner = stem.rsplit_once('.').map(|(_, s)| s).unwrap_or("");
            inner == "test" || inner == "spec"
        }
        "java" | "kt" | "scala" | "groovy" => {
            orig_stem.ends_with("Test")
                || orig_stem.ends_with("Tests")
                || orig_stem.ends_with("IT")
                || orig_stem
                    .strip_prefix("Test")
                    .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()))
        }
        "rb" => stem.ends_with("_spec") || stem.ends_with("_test") || stem.starts_with("test_"),
        "rs" => stem == "tests" || stem.ends_with("_tests") && components.is_empty(),
        "c" | "cc" | "cpp" | "cxx" => stem.starts_with("test_") || stem.ends_with("_test"),
        _ => false,
    }
}

/// The files that judge a failure: the failing tests' files and the test
/// files named in the failing output (`output_files`, repository-relative)
/// or the test command, as candidate repository paths (the engine keeps
/// those that exist at the bad revision).
pub fn failing_test_files(
    runner: Runner,
    argv: &[String],
    signature: Option<&FailureSignature>,
    output_files: &BTreeSet<String>,
) -> BTreeSet<String> {
    let mut files = BTreeSet::new();
    if let Some(sig) = signature {
        for id in &sig.failing_tests {
            let id = id.strip_prefix("ERROR ").unwrap_or(id);
            match runner {
                Runner::Pytest => {
                    let path = id.split("::").next().unwrap_or(id);
                    if path.ends_with(".py") {
                        files.insert(clean(path));
                    }
                }
                Runner::Unittest => {
                    // `pkg.module.Class.test`: the module is one of the prefixes.
                    let parts: Vec<&str> = id.split('.').collect();
                    for end in 1..parts.len() {
                        let candidate = format!("{}.py", parts[..end].join("/"));
                        if is_test_path(&candidate) {
                            files.insert(candidate);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    for arg in argv.iter().skip(1) {
        let path = arg.split("::").next().unwrap_or(arg);
        if !arg.starts_with('-') && path.contains('.') && is_test_path(path) {
            files.insert(clean(path));
        }
    }
    files.extend(cargo_test_targets(argv));
    files.extend(
        output_files
            .iter()
            .filter(|f| !f.starts_with('/') && is_test_path(f))
            .map(|f| clean(f)),
    );
    files
}

/// The files of the integration-test targets `cargo test --test NAME`
/// names (`--test=NAME` too): `tests/NAME.rs` or `tests/NAME/main.rs`, the
/// two layouts cargo discovers (a target renamed in Cargo.toml is missed).
fn cargo_test_targets(argv: &[String]) -> Vec<String> {
    let is_cargo = argv
        .first()
        .is_some_and(|a| a == "cargo" || a.ends_with("/cargo"));
    if !is_cargo || !argv.iter().any(|a| a == "test") {
        return Vec::new();
    }
    let mut names: Vec<&str> = Vec::new();
    let mut args = argv.iter().skip(1).take_while(|a| *a != "--");
    while let Some(arg) = args.next() {
        if arg == "--test" {
            names.extend(args.next().map(String::as_str));
        } else if let Some(name) = arg.strip_prefix("--test=") {
            names.push(name);
        }
    }
    names
        .into_iter()
        .filter(|n| !n.is_empty() && !n.contains(['/', '*']))
        .flat_map(|n| [format!("tests/{n}.rs"), format!("tests/{n}/main.rs")])
        .collect()
}

fn clean(path: &str) -> String {
    path.trim_start_matches("./").to_string()
}

/// A patch split by the oracle rule.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OracleSplit {
    /// What may be verified: changes to source files only.
    pub kept: Vec<FilePatch>,
    /// Files whose hunks were dropped, because they are tests or judge the failure.
    pub dropped: Vec<String>,
}

/// Drops every file patch that touches a test path or one of `judges`.
pub fn split_patch(files: Vec<FilePatch>, judges: &BTreeSet<String>) -> OracleSplit {
    let mut split = OracleSplit::default();
    for f in files {
        let touches_oracle = [&f.old_path, &f.new_path]
            .into_iter()
            .filter(|p| p.as_str() != "/dev/null")
            .any(|p| is_test_path(p) || judges.contains(p));
        if touches_oracle {
            let name = if f.new_path == "/dev/null" {
                f.old_path.clone()
            } else {
                f.new_path.clone()
            };
            if !split.dropped.contains(&name) {
                split.dropped.push(name);
            }
        } else {
            split.kept.push(f);
        }
    }
    split
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch;

    fn check(path: &str, expected: bool) {
        assert_eq!(is_test_path(path), expected, "{path}");
    }

    #[test]
    fn test_paths_of_each_ecosystem() {
        for p in [
            "tests/test_app.py",
            "test_app.py",
            "pkg/app_test.py",
            "pkg/conftest.py",
            "src/test/java/org/x/AppTest.java",
            "src/main/java/org/x/AppTest.java",
            "src/main/java/org/x/TestApp.java",
            "pkg/server_test.go",
            "lib/app.test.js",
            "lib/app.spec.ts",
            "src/__tests__/app.js",
            "tests/fixtures/input.json",
            "pkg/testdata/case.txt",
            "spec/app_spec.rb",
            "crate/tests/cli.rs",
            "./tests.py",
            "TESTS/x.py",
        ] {
            check(p, true);
        }
        for p in [
            "app.py",
            "src/app.rs",
            "numpy/testing/utils.py",
            "lib/testament.js",
            "pkg/server.go",
            "src/main/java/org/x/Tester.java",
            "contest.py",
            "latest.py",
            "lib/app.js",
            "README.md",
            "",
        ] {
            check(p, false);
        }
    }

    #[test]
    fn failing_test_files_come_from_ids_argv_and_frames() {
        let sig = FailureSignature {
            failing_tests: ["tests/test_calc.py::test_add".to_string()].into(),
            ..Default::default()
        };
        let argv: Vec<String> = ["pytest", "-q", "tests/test_other.py::test_x", "src"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let seen: BTreeSet<String> = [
            "tests/helpers_test.py".to_string(),
            "app/calc.py".to_string(),
        ]
        .into();
        let files = failing_test_files(Runner::Pytest, &argv, Some(&sig), &seen);
        assert_eq!(
            files.into_iter().collect::<Vec<_>>(),
            vec![
                "tests/helpers_test.py",
                "tests/test_calc.py",
                "tests/test_other.py"
            ]
        );
    }

    #[test]
    fn cargo_test_targets_name_their_files() {
        let argv = |line: &str| -> Vec<String> { line.split(' ').map(String::from).collect() };
        let files = failing_test_files(
            Runner::CargoTest,
            &argv("cargo test --offline -q --test test --test=api -- --exact x --test y"),
            None,
            &BTreeSet::new(),
        );
        assert_eq!(
            files.into_iter().collect::<Vec<_>>(),
            vec![
                "tests/api.rs",
                "tests/api/main.rs",
                "tests/test.rs",
                "tests/test/main.rs"
            ]
        );
        // Not cargo, or not its test command: no target files.
        assert!(
            failing_test_files(
                Runner::Unknown,
                &argv("make test --test x"),
                None,
                &BTreeSet::new()
            )
            .is_empty()
        );
        assert!(
            failing_test_files(
                Runner::CargoTest,
                &argv("cargo build --test x"),
                None,
                &BTreeSet::new()
            )
            .is_empty()
        );
    }

    #[test]
    fn unittest_ids_name_candidate_modules() {
        let sig = FailureSignature {
            failing_tests: ["tests.test_calc.CalcTest.test_add".to_string()].into(),
            ..Default::default()
        };
        let files = failing_test_files(Runner::Unittest, &[], Some(&sig), &BTreeSet::new());
        assert!(files.contains("tests/test_calc.py"), "{files:?}");
    }

    #[test]
    fn split_drops_test_files_and_judges() {
        let diff = "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-a\n+b\ndiff --git a/test_app.py b/test_app.py\n--- a/test_app.py\n+++ b/test_app.py\n@@ -1 +1 @@\n-c\n+d\ndiff --git a/check.py b/check.py\n--- a/check.py\n+++ b/check.py\n@@ -1 +1 @@\n-e\n+f\n";
        let judges: BTreeSet<String> = ["check.py".to_string()].into();
        let split = split_patch(patch::parse(diff).unwrap(), &judges);
        assert_eq!(split.kept.len(), 1);
        assert_eq!(split.kept[0].new_path, "app.py");
        assert_eq!(split.dropped, vec!["test_app.py", "check.py"]);
    }

    #[test]
    fn a_deleted_test_file_is_named_by_its_old_path() {
        let diff = "diff --git a/tests/test_x.py b/tests/test_x.py\ndeleted file mode 100644\n--- a/tests/test_x.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n";
        let split = split_patch(patch::parse(diff).unwrap(), &BTreeSet::new());
        assert!(split.kept.is_empty());
        assert_eq!(split.dropped, vec!["tests/test_x.py"]);
    }
}
