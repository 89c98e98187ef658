//! `tracelab experience mine|list|show` on a generated history: a lint
//! failure hides an import error, which hides a failing test; an attempt at
//! the import error is reverted; unrelated work lands in between.

use serde_json::Value;
use std::process::{Command, Output};
use tracelab_testkit::FixtureRepo;

fn tracelab(db: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tracelab"))
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .expect("tracelab runs")
}

const LINT: &str = r#"import pathlib
import sys

bad = 0
for path in sorted(pathlib.Path("app").rglob("*.py")):
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if len(line) > 79:
            print(f"{path}:{n}: L001 line too long ({len(line)} > 79)")
            bad += 1
sys.exit(1 if bad else 0)
"#;

const UTIL_LONG: &str = "def label(name, unit):\n    return '{} ({})'.format(name.strip().title(), unit.strip().lower()) + ' ' * 0\n";
const UTIL_SHORT: &str = "def label(name, unit):\n    text = '{} ({})'.format(name.strip().title(), unit.strip().lower())\n    return text\n";
const CALC_BUG: &str = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n";
const CALC_FIXED: &str = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n";
const FMT: &str = "def plain(x):\n    return str(x)\n";
const FMT_FIXED: &str =
    "def plain(x):\n    return str(x)\n\n\ndef pretty(x):\n    return '<' + str(x) + '>'\n";
const REPORT: &str = "from app.fmt import pretty\n\n\ndef show(total):\n    return pretty(total)\n";
const REPORT_ATTEMPT: &str =
    "from app.calc import pretty\n\n\ndef show(total):\n    return pretty(total)\n";
const TEST: &str = "import unittest\n\nfrom app.calc import add\nfrom app.report import show\n\n\nclass CalcTests(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n    def test_show(self):\n        self.assertEqual(show(1), '<1>')\n";

struct Fixture {
    repo: FixtureRepo,
    first: String,
    /// The commits after `first`, in order.
    later: Vec<String>,
}

fn history() -> Fixture {
    let mut repo = FixtureRepo::new();
    let first = repo.commit(
        "Add reports",
        &[
            ("tools/lint.py", LINT),
            ("app/__init__.py", ""),
            ("app/util.py", UTIL_LONG),
            ("app/calc.py", CALC_BUG),
            ("app/fmt.py", FMT),
            ("app/report.py", REPORT),
            ("tests/__init__.py", ""),
            ("tests/test_calc.py", TEST),
            ("README.md", "# Calc\n"),
        ],
    );
    let later = vec![
        repo.commit("Wrap a long line", &[("app/util.py", UTIL_SHORT)]),
        repo.commit(
            "Import pretty from calc",
            &[("app/report.py", REPORT_ATTEMPT)],
        ),
        repo.commit(
            "Revert: import pretty from calc",
            &[("app/report.py", REPORT)],
        ),
        repo.commit("Add fmt.pretty", &[("app/fmt.py", FMT_FIXED)]),
        repo.commit(
            "Describe the project",
            &[("README.md", "# Calc\n\nSmall arithmetic with reports.\n")],
        ),
        repo.commit("Fix add", &[("app/calc.py", CALC_FIXED)]),
    ];
    Fixture { repo, first, later }
}

fn mine(db: &std::path::Path, f: &Fixture) -> Output {
    mine_range(db, f, &f.first, "HEAD")
}

fn mine_range(db: &std::path::Path, f: &Fixture, from: &str, to: &str) -> Output {
    tracelab(
        db,
        &[
            "experience",
            "mine",
            "--repo",
            f.repo.path().to_str().unwrap(),
            "--test",
            "python3 tools/lint.py",
            "--test",
            "python3 -m unittest tests.test_calc",
            "--from",
            from,
            "--to",
            to,
            "--format",
            "json",
        ],
    )
}

fn kept_paths(r: &Value, key_suffix: &str) -> Vec<String> {
    let problems = r["problems"].as_array().unwrap();
    let index = problems
        .iter()
        .position(|p| p["key"].as_str().unwrap().ends_with(key_suffix))
        .unwrap_or_else(|| panic!("no problem {key_suffix} in {problems:#?}"));
    let a = r["attributions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["problem"] == index)
        .unwrap();
    a["kept"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            r["hunks"][h.as_u64().unwrap() as usize]["path"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn mining_attributes_each_problem_to_its_repair_and_stores_records() {
    let f = history();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let out = mine(&db, &f);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(r["organised"], true, "{:#?}", r["notes"]);
    let keys: Vec<&str> = r["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        vec![
            "local/python3 tools/lint.py",
            "local/python3 -m unittest tests.test_calc: ImportError",
            "local/python3 -m unittest tests.test_calc: tests.test_calc.CalcTests.test_add",
        ]
    );
    // The unit step was not run behind the failing lint step.
    assert_eq!(r["problems"][1]["statuses"][0], "unreached");
    assert_eq!(kept_paths(&r, "lint.py"), vec!["app/util.py"]);
    assert_eq!(kept_paths(&r, "ImportError"), vec!["app/fmt.py"]);
    assert_eq!(kept_paths(&r, "test_add"), vec!["app/calc.py"]);
    let attempts = r["development"]["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{attempts:#?}");
    assert_eq!(attempts[0]["path"], "app/report.py");
    assert_eq!(attempts[0]["reverted"], 3);
    assert_eq!(r["records"].as_array().unwrap().len(), 3);

    let listed = tracelab(&db, &["experience", "list", "--format", "json"]);
    assert!(listed.status.success());
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 3);
    let test_record = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["problem"].as_str().unwrap().ends_with("test_add"))
        .unwrap();
    let id = test_record["id"].as_str().unwrap();
    let shown = tracelab(&db, &["experience", "show", &id[..8]]);
    assert!(shown.status.success());
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(text.contains("+    return a + b"), "{text}");
    assert!(text.contains("L3 pattern"));
    // The L1 patch applies to the failing revision as it stands.
    let patch = test_record["concrete"]["patch"].as_str().unwrap();
    let clone = tempfile::tempdir().unwrap();
    let git = |args: &[&str], dir: &std::path::Path| {
        Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .expect("git runs")
    };
    let origin = f.repo.path().to_str().unwrap();
    assert!(
        git(&["clone", "-q", origin, "."], clone.path())
            .status
            .success()
    );
    assert!(
        git(&["checkout", "-q", &f.first], clone.path())
            .status
            .success()
    );
    std::fs::write(clone.path().join("l1.patch"), patch).unwrap();
    let check = git(&["apply", "--check", "l1.patch"], clone.path());
    assert!(
        check.status.success(),
        "{}\n{patch}",
        String::from_utf8_lossy(&check.stderr)
    );

    // Mining the same range again stores nothing new.
    let again = mine(&db, &f);
    assert!(again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("0 new record(s)"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
}

#[test]
fn a_problem_in_half_of_the_histories_is_listed_as_recurring() {
    let f = history();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    // Three histories: the whole range (lint, import, test), the lint
    // repair alone, and the import repair alone.
    for (from, to) in [
        (f.first.as_str(), "HEAD"),
        (f.first.as_str(), f.later[0].as_str()),
        (f.later[2].as_str(), f.later[3].as_str()),
    ] {
        let out = mine_range(&db, &f, from, to);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let listed = tracelab(&db, &["experience", "list", "--format", "json"]);
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let mut flags: Vec<(String, bool)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let problem = r["problem"].as_str().unwrap();
            let short = problem.rsplit(' ').next().unwrap().to_string();
            (short, r["recurring"].as_bool().unwrap())
        })
        .collect();
    flags.sort();
    flags.dedup();
    assert_eq!(
        flags,
        vec![
            ("ImportError".to_string(), true),
            ("tests.test_calc.CalcTests.test_add".to_string(), false),
            ("tools/lint.py".to_string(), true),
        ]
    );
    let table = tracelab(&db, &["experience", "list"]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert_eq!(table.matches(" * |").count(), 4, "{table}");
}

#[test]
fn a_range_off_the_first_parent_line_is_refused() {
    let mut f = history();
    let side = f.repo.git(&["rev-parse", "HEAD~2"]);
    f.repo.git(&["checkout", "-q", "-b", "side", &side]);
    let off = f.repo.commit("Side work", &[("NOTES.md", "side\n")]);
    f.repo.git(&["checkout", "-q", "main"]);
    f.repo
        .git(&["merge", "-q", "--no-ff", "-m", "Merge side", "side"]);
    let dir = tempfile::tempdir().unwrap();
    let out = mine_range(&dir.path().join("t.db"), &f, &off, "HEAD");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not a linear history"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_range_longer_than_the_bound_is_refused() {
    let f = history();
    let dir = tempfile::tempdir().unwrap();
    let out = tracelab(
        &dir.path().join("t.db"),
        &[
            "experience",
            "mine",
            "--repo",
            f.repo.path().to_str().unwrap(),
            "--test",
            "python3 -m unittest tests.test_calc",
            "--from",
            &f.first,
            "--max-commits",
            "3",
        ],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--max-commits 3"));
}

const WINDOW_BUG: &str = "def window(xs, start, size):\n    end = size\n    return xs[start:end]\n";
const WINDOW_FIX: &str =
    "def window(xs, start, size):\n    end = start + size\n    return xs[start:end]\n";
const WINDOW_TESTS: &str = "from app import window\n\n\ndef test_window():\n    assert window([1, 2, 3, 4], 1, 2) == [2, 3]\n\n\ndef test_window_from_the_start():\n    assert window([1, 2, 3, 4, 5], 0, 3) == [1, 2, 3]\n";
const WINDOW_TEST: &str = "python3 -m pytest -q -p no:cacheprovider test_app.py::test_window";

/// `tracelab` with Debian's python3 first (pytest is installed for it).
fn tracelab_pytest(db: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tracelab"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env("PATH", "/usr/bin:/bin")
        .output()
        .expect("tracelab runs")
}

/// Mined once, reused later: a repair of `window` made on a branch is
/// mined into the store, the main line moves the code, and `tracelab
/// investigate` of the same failure there verifies the reused repair
/// (3-way merged) as the experience agent's hypothesis; `--no-experience`
/// leaves it out.
#[test]
fn investigate_reuses_a_mined_repair_through_the_store() {
    let mut repo = FixtureRepo::new();
    let root = repo.commit(
        "Windows",
        &[("app.py", WINDOW_BUG), ("test_app.py", WINDOW_TESTS)],
    );
    let main = repo.git(&["rev-parse", "--abbrev-ref", "HEAD"]);
    repo.git(&["checkout", "-q", "-b", "fix", &root]);
    let fix = repo.commit("Fix the end", &[("app.py", WINDOW_FIX)]);
    repo.checkout(&main);
    let moved = format!("def first(xs):\n    return xs[0]\n\n\n{WINDOW_BUG}");
    repo.commit("Add first()", &[("app.py", &moved)]);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let path = repo.path().to_str().unwrap();
    let mined = tracelab_pytest(
        &db,
        &[
            "experience",
            "mine",
            "--repo",
            path,
            "--test",
            WINDOW_TEST,
            "--from",
            &root,
            "--to",
            &fix,
        ],
    );
    assert!(
        mined.status.success(),
        "{}",
        String::from_utf8_lossy(&mined.stderr)
    );
    let listed = tracelab(&db, &["experience", "list", "--format", "json"]);
    let records: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let id = records[0]["id"].as_str().unwrap().to_string();
    assert_eq!(records.as_array().unwrap().len(), 1);

    let investigate = |extra: &[&str]| {
        let mut args = vec![
            "investigate",
            "--repo",
            path,
            "--test",
            WINDOW_TEST,
            "--format",
            "json",
            "--timeout",
            "30",
        ];
        args.extend_from_slice(extra);
        let out = tracelab_pytest(&db, &args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let report = investigate(&[]);
    let h = report["hypotheses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["agent"] == "experience")
        .unwrap_or_else(|| panic!("no experience hypothesis: {report:#}"));
    assert_eq!(h["status"], "VERIFIED", "{h:#}");
    assert_eq!(h["detail"]["experience"]["record"], id.as_str());
    assert_eq!(report["winner"]["id"], h["id"]);

    let without = investigate(&["--no-experience"]);
    assert!(
        without["hypotheses"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["agent"] != "experience")
    );
}

const SPAN_MISSING: &str =
    "def window(xs, start, size):\n    end = start + size\n    return xs[start:end]\n";
const SPAN_ADDED: &str = "def window(xs, start, size):\n    end = start + size\n    return xs[start:end]\n\n\ndef span(xs):\n    return max(xs) - min(xs)\n";
const SPAN_TESTS: &str = "from app import span, window\n\n\ndef test_window():\n    assert window([1, 2, 3, 4], 1, 2) == [2, 3]\n\n\ndef test_span():\n    assert span([3, 9, 4]) == 6\n";
const SPAN_TEST: &str = "python3 -m pytest -q -p no:cacheprovider test_app.py";

/// A test module that does not import (pytest: `ERROR test_app.py`, no
/// test ran) is a problem like any other: its repair is mined, and met
/// again in moved code it is reproduced, re-applied and VERIFIED — the
/// module collects and its tests pass.
#[test]
fn a_mined_repair_of_a_module_that_does_not_import_is_verified_again() {
    let mut repo = FixtureRepo::new();
    let root = repo.commit(
        "Windows and spans",
        &[("app.py", SPAN_MISSING), ("test_app.py", SPAN_TESTS)],
    );
    let main = repo.git(&["rev-parse", "--abbrev-ref", "HEAD"]);
    repo.git(&["checkout", "-q", "-b", "fix", &root]);
    let fix = repo.commit("Add span", &[("app.py", SPAN_ADDED)]);
    repo.checkout(&main);
    let moved = format!("def first(xs):\n    return xs[0]\n\n\n{SPAN_MISSING}");
    repo.commit("Add first()", &[("app.py", &moved)]);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let path = repo.path().to_str().unwrap();
    let mined = tracelab_pytest(
        &db,
        &[
            "experience",
            "mine",
            "--repo",
            path,
            "--test",
            SPAN_TEST,
            "--from",
            &root,
            "--to",
            &fix,
        ],
    );
    assert!(
        mined.status.success(),
        "{}",
        String::from_utf8_lossy(&mined.stderr)
    );
    let out = tracelab_pytest(
        &db,
        &[
            "investigate",
            "--repo",
            path,
            "--test",
            SPAN_TEST,
            "--format",
            "json",
            "--timeout",
            "30",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["reproduction"]["counts"]["other"], 0,
        "every run fails the same way: {:#}",
        report["reproduction"]
    );
    let h = report["hypotheses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["agent"] == "experience")
        .unwrap_or_else(|| panic!("no experience hypothesis: {report:#}"));
    assert_eq!(h["status"], "VERIFIED", "{h:#}");
    assert_eq!(report["winner"]["id"], h["id"]);
}

/// Records of the earlier record file are moved into the store once.
#[test]
fn an_earlier_record_file_is_imported_into_the_store() {
    let f = history();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let out = mine(&db, &f);
    assert!(out.status.success());
    let listed = tracelab(&db, &["experience", "list", "--format", "json"]);
    let records: Vec<Value> = serde_json::from_slice(&listed.stdout).unwrap();
    assert!(!records.is_empty());
    // The same records, as an earlier version kept them, beside a fresh store.
    let other = tempfile::tempdir().unwrap();
    let jsonl: String = records
        .iter()
        .map(|r| format!("{}\n", serde_json::to_string(r).unwrap()))
        .collect();
    std::fs::write(other.path().join("experience.jsonl"), jsonl).unwrap();
    let db2 = other.path().join("t.db");
    let imported = tracelab(&db2, &["experience", "list", "--format", "json"]);
    assert!(
        imported.status.success(),
        "{}",
        String::from_utf8_lossy(&imported.stderr)
    );
    let again: Vec<Value> = serde_json::from_slice(&imported.stdout).unwrap();
    assert_eq!(again, records);
    assert!(!other.path().join("experience.jsonl").exists());
    assert!(other.path().join("experience.jsonl.imported").exists());
    // A record file that does not parse is an error, and stays where it is.
    std::fs::write(other.path().join("experience.jsonl"), "{not json\n").unwrap();
    let bad = tracelab(&db2, &["experience", "list"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("experience.jsonl line 1"));
    assert!(other.path().join("experience.jsonl").exists());
}
