//! What a failing test calls, seen through its helpers.
//!
//! Tests reach the code under test through helpers of their own: semver's
//! `req(">= 1.0.0")` wraps `VersionReq::parse`, `assert_match_all` calls
//! `req.matches`, a Python test class's `_check(x)` calls the API. A
//! helper's name is the test author's vocabulary (`req` would match every
//! commit that touched a `VersionReq`), so a helper is replaced by what it
//! calls, a few helpers deep, and only names no test file defines reach
//! the focus.

use crate::git::Git;
use std::collections::{BTreeSet, HashMap};
use tracelab_code_index::extract::parse_file;
use tracelab_code_index::model::ParsedFile;
use tracelab_domain::Language;
use tracelab_domain::oracle::is_test_path;

/// Other test files read for the helpers the failing test's file does not
/// define, and the largest one.
const MAX_HELPER_FILES: usize = 8;
const MAX_HELPER_FILE: usize = 256 << 10;

/// Helpers followed from the test (a helper calling a helper).
const HELPER_DEPTH: usize = 3;

/// Helpers by name, each with the names it calls.
pub type Helpers = HashMap<String, Vec<String>>;

/// The names the test `function` calls, by its definition in `parsed`:
/// the one in `class` (the id's enclosing name: many test classes have a
/// `test_default`), else any of that name.
pub fn test_calls(parsed: &ParsedFile, function: &str, class: Option<&str>) -> Vec<String> {
    let defs: Vec<_> = parsed.defs.iter().filter(|d| d.name == function).collect();
    let in_class: Vec<_> = defs
        .iter()
        .filter(|d| class.is_some_and(|c| d.local.split(['.', ':']).any(|part| part == c)))
        .collect();
    let chosen: Vec<_> = if in_class.is_empty() {
        defs.iter().collect()
    } else {
        in_class
    };
    chosen
        .into_iter()
        .flat_map(|d| d.calls.iter())
        .map(|c| c.name.clone())
        .collect()
}

/// `calls` with every helper replaced by what it calls ([`HELPER_DEPTH`]
/// helpers deep), without test-framework assertions; first mention first,
/// each with the number of helpers between the test and the call.
pub fn through_helpers(calls: Vec<String>, helpers: &Helpers) -> Vec<(String, u32)> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    let mut frontier = calls;
    for depth in 0..=HELPER_DEPTH {
        let mut next = Vec::new();
        for name in frontier {
            if !seen.insert(name.clone()) {
                continue;
            }
            match helpers.get(&name) {
                Some(callees) if depth < HELPER_DEPTH => next.extend(callees.iter().cloned()),
                Some(_) => {}
                None if !is_assertion(&name) => out.push((name, depth as u32)),
                None => {}
            }
        }
        frontier = next;
    }
    out
}

/// The helpers the test file `path` (parsed) and the test files beside it
/// define among the names reachable from `calls`: any definition of the
/// file itself but its tests (a test class's `_check`), and the free
/// functions of the other test files under the same directory that name
/// one of them (semver's `tests/util/mod.rs`), found with one `git grep`.
pub async fn test_helpers(
    git: &Git,
    rev: &str,
    path: &str,
    language: Language,
    parsed: &ParsedFile,
    calls: &[String],
) -> Helpers {
    let mut helpers = Helpers::new();
    add_helpers(&mut helpers, parsed, false);
    // What the file's own helpers leave unresolved.
    let unresolved: BTreeSet<String> = through_helpers(calls.to_vec(), &helpers)
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    if unresolved.is_empty() {
        return helpers;
    }
    for file in files_naming(git, rev, path, &unresolved).await {
        if Language::from_path(&file) != Some(language) {
            continue;
        }
        if let Ok(Some(text)) = git.show_file(rev, &file).await
            && text.len() <= MAX_HELPER_FILE
        {
            let other = parse_file(language, &file, text.as_bytes());
            add_helpers(&mut helpers, &other, true);
        }
    }
    helpers
}

/// Adds the definitions of `parsed` that are not tests (only the free
/// functions when `free_only`). A helper defined more than once (one per
/// build configuration, one per test module) calls what any of them calls;
/// one that calls nothing (test data) names nothing.
fn add_helpers(helpers: &mut Helpers, parsed: &ParsedFile, free_only: bool) {
    for def in &parsed.defs {
        if is_test_name(&def.name) || (free_only && def.parent.is_some()) {
            continue;
        }
        let calls = helpers.entry(def.name.clone()).or_default();
        for call in &def.calls {
            if !calls.contains(&call.name) {
                calls.push(call.name.clone());
            }
        }
    }
}

/// The test files other than `path` under its directory whose text names
/// one of `names` as a word, at most [`MAX_HELPER_FILES`].
async fn files_naming(git: &Git, rev: &str, path: &str, names: &BTreeSet<String>) -> Vec<String> {
    let dir = path.rsplit_once('/').map_or(".", |(dir, _)| dir);
    let mut args = vec!["grep", "-l", "-w", "-F", "-I"];
    for name in names {
        args.extend(["-e", name.as_str()]);
    }
    args.extend([rev, "--", dir]);
    let Ok(out) = git.read_limited(&args, 64 << 10).await else {
        return Vec::new();
    };
    let prefix = format!("{rev}:");
    let mut files: Vec<String> = out
        .lines()
        .map(|l| l.strip_prefix(&prefix).unwrap_or(l).to_string())
        .filter(|f| f != path && is_test_path(f))
        .collect();
    // Helper modules by their conventional names first: a large test tree
    // has many files that merely use a helper.
    files.sort_by_key(|f| !is_helper_module(f));
    files.truncate(MAX_HELPER_FILES);
    files
}

/// `tests/util/mod.rs`, `tests/helpers.py`, `conftest.py`, `testutil.go`, …
fn is_helper_module(path: &str) -> bool {
    const NAMES: &[&str] = &[
        "util", "utils", "helper", "helpers", "common", "support", "conftest", "fixtures",
    ];
    let mut parts = path.rsplit('/');
    let file = parts.next().unwrap_or(path);
    let stem = file.split('.').next().unwrap_or(file).to_ascii_lowercase();
    let stem = if stem == "mod" || stem == "__init__" {
        parts.next().unwrap_or("").to_ascii_lowercase()
    } else {
        stem
    };
    NAMES
        .iter()
        .any(|n| stem == *n || (stem.starts_with("test") && stem.ends_with(n)))
}

/// A test function's name (`test_x`, `TestX`): a test is never a helper.
fn is_test_name(name: &str) -> bool {
    name.starts_with("test") || name.starts_with("Test")
}

/// Test-framework assertions and reporting: they never point at the code
/// under test (Go's `t.Errorf`, `t.Fatal`, `t.Helper` among them).
pub fn is_assertion(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.starts_with("assert")
        || lower.starts_with("expect")
        || matches!(
            lower.as_str(),
            "raises"
                | "fail"
                | "skip"
                | "fixture"
                | "parametrize"
                | "mark"
                | "equal"
                | "tobe"
                | "errorf"
                | "fatal"
                | "fatalf"
                | "failnow"
                | "logf"
                | "skipf"
                | "skipnow"
                | "helper"
                | "cleanup"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(path: &str, text: &str) -> ParsedFile {
        parse_file(Language::from_path(path).unwrap(), path, text.as_bytes())
    }

    #[test]
    fn a_test_calls_what_its_body_names() {
        let text = "import more_itertools as mi\n\nclass FirstTests(TestCase):\n    def test_default(self):\n        self.assertEqual(mi.first([], 'boo'), 'boo')\n\n    def test_other(self):\n        mi.last([1])\n";
        let file = parsed("tests/test_more.py", text);
        let calls = test_calls(&file, "test_default", Some("FirstTests"));
        assert_eq!(
            through_helpers(calls, &Helpers::new()),
            vec![("first".to_string(), 0)],
            "assertions say nothing"
        );
        let two = parsed(
            "t.py",
            "class FirstTests:\n    def test_default(self):\n        first([])\n\nclass LastTests:\n    def test_default(self):\n        last([])\n",
        );
        assert_eq!(
            test_calls(&two, "test_default", Some("LastTests")),
            ["last"]
        );
        assert_eq!(test_calls(&two, "test_default", None), ["first", "last"]);
    }

    #[test]
    fn helpers_are_replaced_by_what_they_call() {
        // semver's shape: the test calls `req` and `assert_match_all`
        // (defined in the test file), `req` lives in tests/util.
        let test = parsed(
            "tests/test_version_req.rs",
            "fn assert_match_all(req: &VersionReq, versions: &[&str]) {\n    for s in versions {\n        let parsed = version(s);\n        assert!(req.matches(&parsed));\n    }\n}\n\n#[test]\nfn test_greater_than() {\n    let r = req(\">= 1.0.0\");\n    assert_match_all(&r, &[\"1.0.0\"]);\n    check_bounds(&r);\n}\n",
        );
        let util = parsed(
            "tests/util/mod.rs",
            "pub(super) fn req(text: &str) -> VersionReq {\n    VersionReq::parse(text).unwrap()\n}\npub(super) fn version(text: &str) -> Version {\n    Version::parse(text).unwrap()\n}\n",
        );
        let calls = test_calls(&test, "test_greater_than", None);
        assert_eq!(calls, ["req", "assert_match_all", "check_bounds"]);
        let mut helpers = Helpers::new();
        add_helpers(&mut helpers, &test, false);
        assert!(
            !helpers.contains_key("test_greater_than"),
            "a test is not a helper"
        );
        let unresolved: Vec<String> = through_helpers(calls.clone(), &helpers)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert!(unresolved.contains(&"req".into()) && unresolved.contains(&"version".into()));
        add_helpers(&mut helpers, &util, true);
        let mut focus = through_helpers(calls, &helpers);
        focus.sort();
        let focus: Vec<(&str, u32)> = focus.iter().map(|(n, d)| (n.as_str(), *d)).collect();
        assert_eq!(
            focus,
            [
                ("check_bounds", 0),
                ("matches", 1),
                ("parse", 1),
                ("unwrap", 1)
            ],
            "`version`'s own `parse` is two helpers deep, found first through `req`"
        );
    }

    /// The whole lookup on a real repository: the test file's own helper,
    /// the helpers of another test file found by `git grep`, and a source
    /// file defining a name that is not a test helper.
    #[tokio::test]
    async fn helpers_are_found_beside_the_test_file_in_the_repository() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let files = [
            (
                "tests/test_version_req.rs",
                "mod util;\nuse util::*;\n\nfn assert_match_all(r: &VersionReq, vs: &[&str]) {\n    for v in vs {\n        assert!(r.matches(&version(v)));\n    }\n}\n\n#[test]\nfn test_greater_than() {\n    let r = req(\">= 1.0.0\");\n    assert_match_all(&r, &[\"2.0.0\"]);\n}\n",
            ),
            (
                "tests/util/mod.rs",
                "pub fn req(text: &str) -> VersionReq {\n    VersionReq::parse(text).unwrap()\n}\npub fn version(text: &str) -> Version {\n    Version::parse(text).unwrap()\n}\n",
            ),
            (
                "src/lib.rs",
                "pub fn req(text: &str) -> VersionReq {\n    internal_parse(text)\n}\n",
            ),
        ];
        for (path, text) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        for args in [
            &["init", "-q"][..],
            &["add", "-A"],
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-qm",
                "x",
            ],
        ] {
            let status = std::process::Command::new("git")
                .args(args)
                .current_dir(root)
                .status()
                .unwrap();
            assert!(status.success());
        }
        let git = Git::open(root).await.unwrap();
        let path = "tests/test_version_req.rs";
        let text = std::fs::read_to_string(root.join(path)).unwrap();
        let parsed = parse_file(Language::Rust, path, text.as_bytes());
        let calls = test_calls(&parsed, "test_greater_than", None);
        let helpers = test_helpers(&git, "HEAD", path, Language::Rust, &parsed, &calls).await;
        let req: BTreeSet<&str> = helpers["req"].iter().map(String::as_str).collect();
        assert_eq!(req, BTreeSet::from(["parse", "unwrap"]), "{helpers:?}");
        assert!(helpers.contains_key("version") && helpers.contains_key("assert_match_all"));
        let names: BTreeSet<String> = through_helpers(calls, &helpers)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(
            names,
            ["matches", "parse", "unwrap"]
                .map(String::from)
                .into_iter()
                .collect(),
            "the source's own `req` is not a test helper: `internal_parse` stays out"
        );
    }

    #[test]
    fn helper_modules_are_known_by_their_names() {
        for helper in [
            "tests/util/mod.rs",
            "tests/helpers.py",
            "tests/conftest.py",
            "pkg/testutil.go",
        ] {
            assert!(is_helper_module(helper), "{helper}");
        }
        for other in [
            "tests/test_version_req.rs",
            "tests/node/mod.rs",
            "tests/test_codec.py",
        ] {
            assert!(!is_helper_module(other), "{other}");
        }
    }

    #[test]
    fn go_tests_report_through_t_and_that_names_nothing() {
        let test = parsed(
            "count_test.go",
            "package flags\n\nimport \"testing\"\n\nfunc TestCount(t *testing.T) {\n\tt.Helper()\n\tgot, err := Count(\"+1\")\n\tif err != nil {\n\t\tt.Fatalf(\"%v\", err)\n\t}\n\tif got != 1 {\n\t\tt.Errorf(\"got %d\", got)\n\t}\n}\n",
        );
        let calls = test_calls(&test, "TestCount", None);
        assert_eq!(
            through_helpers(calls, &Helpers::new()),
            [("Count".to_string(), 0)]
        );
    }

    #[test]
    fn a_helper_that_calls_nothing_names_nothing() {
        let test = parsed(
            "tests/test_t.py",
            "def _ranges():\n    return [(1, 3), (5, 9)]\n\ndef test_parse():\n    for r in _ranges():\n        parse_range(r)\n",
        );
        let mut helpers = Helpers::new();
        add_helpers(&mut helpers, &test, false);
        let calls = test_calls(&test, "test_parse", None);
        assert_eq!(
            through_helpers(calls, &helpers),
            [("parse_range".to_string(), 0)]
        );
    }

    #[test]
    fn helpers_calling_each_other_in_a_cycle_end() {
        let mut helpers = Helpers::new();
        helpers.insert("a".into(), vec!["b".into(), "api".into()]);
        helpers.insert("b".into(), vec!["a".into()]);
        assert_eq!(
            through_helpers(vec!["a".into()], &helpers),
            [("api".to_string(), 1)]
        );
    }
}
