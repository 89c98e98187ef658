//! `tracelab experience mine --ci-reports DIR --workflow PATH`: the CI
//! observations of a history from the reports its jobs sent, placed on
//! their job and step by the workflow file, with notes (and no
//! attribution) for what cannot be placed.

use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Output};
use tracelab_testkit::FixtureRepo;

const WORKFLOW: &str = r#"name: CI
on: [push, pull_request]
jobs:
  lint:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: python3 tools/lint.py
  test:
    needs: lint
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - name: Unit
        run: python3 -m unittest tests.test_calc
      - if: always()
        run: tracelab report --report unit.txt
"#;

const CALC_BUG: &str = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n";
const CALC_FIXED: &str = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n";
const TEST: &str = "import unittest\n\nfrom app.calc import add\n\n\nclass CalcTests(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n";

const FAILING: &str = "F\n======================================================================\nFAIL: test_add (tests.test_calc.CalcTests.test_add)\n----------------------------------------------------------------------\nTraceback (most recent call last):\n  File \"/home/runner/work/calc/calc/tests/test_calc.py\", line 8, in test_add\n    self.assertEqual(add(2, 3), 5)\nAssertionError: -1 != 5\n\n----------------------------------------------------------------------\nRan 1 test in 0.000s\n\nFAILED (failures=1)\n";
const PASSING: &str = ".\n----------------------------------------------------------------------\nRan 1 test in 0.000s\n\nOK\n";

struct Fixture {
    repo: FixtureRepo,
    commits: Vec<String>,
}

/// The bug, a commit that breaks the workflow file (and one that mends
/// it), then the repair.
fn history() -> Fixture {
    let mut repo = FixtureRepo::new();
    let commits = vec![
        repo.commit(
            "Add calc",
            &[
                (".github/workflows/ci.yml", WORKFLOW),
                ("tools/lint.py", "print('ok')\n"),
                ("app/__init__.py", ""),
                ("app/calc.py", CALC_BUG),
                ("tests/__init__.py", ""),
                ("tests/test_calc.py", TEST),
                ("README.md", "# Calc\n"),
            ],
        ),
        repo.commit(
            "Describe the project",
            &[
                ("README.md", "# Calc\n\nSmall arithmetic.\n"),
                (".github/workflows/ci.yml", "jobs: [lint\n"),
            ],
        ),
        repo.commit(
            "Mend the workflow",
            &[(".github/workflows/ci.yml", WORKFLOW)],
        ),
        repo.commit("Fix add", &[("app/calc.py", CALC_FIXED)]),
    ];
    Fixture { repo, commits }
}

fn report(dir: &Path, file: &str, commit: &str, job: &str, output: &str) {
    let payload = json!({
        "schema": 1,
        "commit": commit,
        "job": { "provider": "github_actions", "name": job },
        "reports": [{ "path": "unit.txt", "content": output }],
    });
    std::fs::write(dir.join(file), payload.to_string()).unwrap();
}

fn mine(f: &Fixture, reports: &Path, workflow: &str) -> Value {
    let db = reports.join("t.db");
    let out: Output = Command::new(env!("CARGO_BIN_EXE_tracelab"))
        .arg("--db")
        .arg(&db)
        .args([
            "experience",
            "mine",
            "--repo",
            f.repo.path().to_str().unwrap(),
            "--from",
            &f.commits[0],
            "--to",
            "HEAD",
            "--ci-reports",
            reports.to_str().unwrap(),
            "--workflow",
            workflow,
            "--format",
            "json",
            "--dry-run",
        ])
        .output()
        .expect("tracelab runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn notes(r: &Value) -> Vec<String> {
    r["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["message"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn reports_placed_by_the_workflow_attribute_the_repair_to_its_step() {
    let f = history();
    let dir = tempfile::tempdir().unwrap();
    let c = &f.commits;
    report(dir.path(), "1.json", &c[0], "test", FAILING);
    // The workflow does not parse at c[1]: its report is left out.
    report(dir.path(), "2.json", &c[1], "test", PASSING);
    // A commit that is not on the line (a force-pushed attempt).
    report(
        dir.path(),
        "3.json",
        "0123456789abcdef0123456789abcdef01234567",
        "test",
        PASSING,
    );
    report(dir.path(), "4.json", &c[3][..12], "test", PASSING);

    let r = mine(&f, dir.path(), ".github/workflows/ci.yml");
    let problems = r["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{problems:#?}");
    let key = problems[0]["key"].as_str().unwrap();
    assert!(
        key.starts_with("test/Unit:") && key.ends_with("CalcTests.test_add"),
        "{key}"
    );
    // Gone at the repair, not at c[1], where its report could not be placed.
    assert_eq!(problems[0]["disappeared_at"], 3, "{:#?}", problems[0]);
    let records = r["records"].as_array().unwrap();
    assert_eq!(records.len(), 1, "{records:#?}");
    let l1 = &records[0]["concrete"];
    assert_eq!(
        l1["files"],
        json!(["app/calc.py"]),
        "only the repair: {l1:#}"
    );
    assert_eq!(l1["validation"], "python3 -m unittest tests.test_calc");
    let notes = notes(&r);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("ci.yml at") && n.contains("not YAML")),
        "{notes:#?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("3.json") && n.contains("first-parent")),
        "{notes:#?}"
    );
}

#[test]
fn without_a_usable_workflow_nothing_is_attributed() {
    let f = history();
    let dir = tempfile::tempdir().unwrap();
    report(dir.path(), "1.json", &f.commits[0], "test", FAILING);
    report(dir.path(), "2.json", &f.commits[3], "test", PASSING);
    let r = mine(&f, dir.path(), ".github/workflows/missing.yml");
    assert!(r["records"].as_array().unwrap().is_empty(), "{r:#}");
    let notes = notes(&r);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("missing.yml does not exist")),
        "{notes:#?}"
    );
}
