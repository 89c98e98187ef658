//! The code-path agent core: frames → symbols → neighbourhood, with and
//! without a coverage spectrum.

mod common;

use common::TestRepo;
use std::collections::BTreeSet;
use tracelab_code_index::agent::code_path;
use tracelab_code_index::sbfl::{TestRun, parse_coverage_py_json, runs_from_coverage};
use tracelab_code_index::{Indexer, LocateOptions, Locator};

const MATH: &str = "def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    if x > hi:\n        return lo\n    return x\n\n\ndef scale(x, k):\n    return clamp(x * k, 0, 100)\n\n\ndef describe(x):\n    return 'value %d' % x\n";
const TESTS: &str = "from app.math import scale, describe\n\n\ndef test_scale_caps():\n    assert scale(60, 2) == 100\n\n\ndef test_scale_small():\n    assert scale(2, 3) == 6\n\n\ndef test_describe():\n    assert describe(3) == 'value 3'\n";

fn repo() -> TestRepo {
    let repo = TestRepo::new();
    repo.write("app/__init__.py", "");
    repo.write("app/math.py", MATH);
    repo.write("tests/test_math.py", TESTS);
    repo.commit("initial");
    repo
}

const FAILURE: &str = "tests/test_math.py:5: in test_scale_caps\n    assert scale(60, 2) == 100\nE   assert 0 == 100\nFAILED tests/test_math.py::test_scale_caps - assert 0 == 100\n";

fn lines(path: &str, ls: &[u32]) -> BTreeSet<(String, u32)> {
    ls.iter().map(|&l| (path.to_string(), l)).collect()
}

#[test]
fn frames_neighbourhood_and_suspects_without_coverage() {
    let repo = repo();
    let r = git2::Repository::open(repo.path()).unwrap();
    let locator = Locator::build(&r, &Indexer::in_memory(), &LocateOptions::default()).unwrap();
    let report = code_path(&locator, FAILURE, None, 5).unwrap();
    assert_eq!(report.frames.len(), 1);
    assert_eq!(
        report.frames[0].symbol.as_deref(),
        Some("py:tests.test_math.test_scale_caps")
    );
    let hood = report.neighbourhood.unwrap();
    let callees: Vec<&str> = hood.callees.iter().map(|c| c.symbol.as_str()).collect();
    assert_eq!(callees, vec!["py:app.math.scale", "py:app.math.clamp"]);
    assert_eq!(hood.callees[1].distance, 2);
    assert_eq!(report.suspects[0].symbol, "py:app.math.scale");
}

#[test]
fn the_spectrum_points_at_the_faulty_branch() {
    let repo = repo();
    let r = git2::Repository::open(repo.path()).unwrap();
    let locator = Locator::build(&r, &Indexer::in_memory(), &LocateOptions::default()).unwrap();
    // Only the failing test reaches `return lo` on line 5 (the bug).
    let runs = vec![
        TestRun {
            name: "test_scale_caps".into(),
            passed: false,
            covered: lines("app/math.py", &[2, 4, 5, 10]),
        },
        TestRun {
            name: "test_scale_small".into(),
            passed: true,
            covered: lines("app/math.py", &[2, 4, 6, 10]),
        },
        TestRun {
            name: "test_describe".into(),
            passed: true,
            covered: lines("app/math.py", &[14]),
        },
    ];
    let report = code_path(&locator, FAILURE, Some(&runs), 5).unwrap();
    let top = &report.suspects[0];
    assert_eq!(top.symbol, "py:app.math.clamp");
    assert!(
        top.reasons[0].starts_with("Ochiai 1.00 at line 5"),
        "{:?}",
        top.reasons
    );
    // Covered only by a passing test: no spectrum evidence, ranked last.
    let last = report.suspects.last().unwrap();
    assert_eq!(last.symbol, "py:app.math.describe");
    assert!(last.reasons.iter().all(|r| !r.starts_with("Ochiai")));
}

#[test]
fn coverage_py_json_feeds_the_spectrum() {
    let json = r#"{"meta": {"format": 3, "show_contexts": true}, "files": {"app/math.py": {
        "executed_lines": [2, 4, 5, 6, 10],
        "contexts": {"2": ["tests/test_math.py::test_scale_caps|run", "tests/test_math.py::test_scale_small|run"],
                     "4": ["tests/test_math.py::test_scale_caps|run", "tests/test_math.py::test_scale_small|run"],
                     "5": ["tests/test_math.py::test_scale_caps|run"],
                     "6": ["tests/test_math.py::test_scale_small|run"],
                     "10": ["tests/test_math.py::test_scale_caps|run", "tests/test_math.py::test_scale_small|run"]}}}}"#;
    let cov = parse_coverage_py_json(json).unwrap();
    let failing = BTreeSet::from(["tests/test_math.py::test_scale_caps".to_string()]);
    let runs = runs_from_coverage(cov, &failing);
    let repo = repo();
    let r = git2::Repository::open(repo.path()).unwrap();
    let locator = Locator::build(&r, &Indexer::in_memory(), &LocateOptions::default()).unwrap();
    let report = code_path(&locator, FAILURE, Some(&runs), 3).unwrap();
    assert_eq!(report.suspects[0].symbol, "py:app.math.clamp");
}
