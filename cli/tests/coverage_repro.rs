//! `tracelab locate --test` (per-test coverage → the spectrum component, a
//! Repro Pack) and `tracelab repro` (materialise the pack, run it once) on
//! a small generated Python repository.
//!
//! Needs coverage.py for some `python3`. CI installs Debian's
//! python3-coverage (.ci/run); elsewhere, without it, the test checks the
//! clear error and says it skipped the rest.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};
use tracelab_testkit::FixtureRepo;

const CART: &str = "PRICES = {\"book\": 10, \"pen\": 2}\n\n\ndef price(item):\n    return PRICES[item]\n\n\ndef total(items):\n    s = 0\n    for i in items:\n        s += price(i)\n    if len(items) >= 3:\n        s -= 1\n    return s\n\n\ndef describe(items):\n    return \", \".join(items)\n";
const CART_FIXED: &str = "PRICES = {\"book\": 10, \"pen\": 2}\n\n\ndef price(item):\n    return PRICES[item]\n\n\ndef total(items):\n    s = 0\n    for i in items:\n        s += price(i)\n    return s\n\n\ndef describe(items):\n    return \", \".join(items)\n";
const TESTS: &str = "import unittest\n\nfrom shop import cart\n\n\nclass CartTest(unittest.TestCase):\n    def test_single(self):\n        self.assertEqual(cart.total([\"book\"]), 10)\n\n    def test_two(self):\n        self.assertEqual(cart.total([\"book\", \"pen\"]), 12)\n\n    def test_three(self):\n        self.assertEqual(cart.total([\"pen\", \"pen\", \"pen\"]), 6)\n\n    def test_describe(self):\n        self.assertEqual(cart.describe([\"a\", \"b\"]), \"a, b\")\n";

fn tracelab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tracelab"))
        .args(args)
        .output()
        .expect("tracelab runs")
}

fn ok(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "stderr: {}\nstdout: {}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

fn has_coverage(python: &str) -> bool {
    Command::new(python)
        .args(["-c", "import coverage"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn shop() -> FixtureRepo {
    let mut repo = FixtureRepo::new();
    repo.commit(
        "shop with a cart",
        &[
            ("shop/__init__.py", ""),
            ("shop/cart.py", CART),
            ("tests/__init__.py", ""),
            ("tests/test_cart.py", TESTS),
        ],
    );
    repo
}

#[test]
fn coverage_ranks_the_faulty_function_and_the_pack_reproduces_it() {
    let mut repo = shop();
    let path = repo.path().to_str().unwrap().to_string();
    let bad = repo.head();

    // A `python3` without coverage.py must be told about, not misread.
    if !has_coverage("python3") {
        let out = tracelab(&["locate", "--repo", &path, "--test", "python3 -m unittest"]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("coverage.py is not importable"), "{err}");
    }
    let Some(python) = ["python3", "/usr/bin/python3"]
        .into_iter()
        .find(|p| has_coverage(p))
    else {
        if std::env::var("TRACELAB_REQUIRE_BACKENDS").as_deref() == Ok("1") {
            panic!("no python3 with coverage.py (apt-get install python3-coverage)");
        }
        eprintln!("skipped: no python3 with coverage.py (apt-get install python3-coverage)");
        return;
    };

    let dir = tempfile::tempdir().unwrap();
    let pack = dir.path().join("pack.json");
    let test = format!("{python} -m unittest");
    let found = ok(&tracelab(&[
        "locate",
        "--repo",
        &path,
        "--test",
        &test,
        "--repro-pack",
        pack.to_str().unwrap(),
        "--format",
        "json",
        "--top",
        "5",
    ]));
    let top = &found["symbols"][0];
    assert_eq!(top["symbol"], "py:shop.cart.total", "{found:#}");
    let spectrum = top["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["component"] == "spectrum")
        .expect("a spectrum reason");
    // `s -= 1` runs only in the failing test: Ochiai 1.
    assert_eq!(spectrum["value"], 1.0, "{spectrum}");
    assert!(
        spectrum["detail"].as_str().unwrap().contains("at line 13"),
        "{spectrum}"
    );
    assert_eq!(found["files"][0]["path"], "shop/cart.py");

    let written: Value = serde_json::from_str(&std::fs::read_to_string(&pack).unwrap()).unwrap();
    assert_eq!(written["revision"], bad.as_str());
    assert_eq!(
        written["failing_tests"][0]["id"],
        "tests.test_cart.CartTest.test_three"
    );
    assert_eq!(written["env"]["PYTHONHASHSEED"], "0");
    assert_eq!(written["interest"][0]["path"], "shop/cart.py");

    // The fix lands on HEAD; the pack still names the bad revision.
    repo.commit("fix the bulk discount", &[("shop/cart.py", CART_FIXED)]);
    let out_dir = dir.path().join("repro");
    let again = ok(&tracelab(&[
        "repro",
        "--pack",
        pack.to_str().unwrap(),
        "--repo",
        &path,
        "--out",
        out_dir.to_str().unwrap(),
        "--format",
        "json",
    ]));
    assert_eq!(again["reproduced"], true, "{again:#}");
    assert_eq!(
        again["failed_again"][0]["name"],
        "tests.test_cart.CartTest.test_three"
    );
    let script = std::fs::read_to_string(out_dir.join("repro.sh")).unwrap();
    assert!(
        script.contains("tests.test_cart.CartTest.test_three"),
        "{script}"
    );
    assert!(out_dir.join("worktree/shop/cart.py").is_file());
    let rerun = Command::new("bash")
        .arg(out_dir.join("repro.sh"))
        .output()
        .unwrap();
    assert!(
        !rerun.status.success(),
        "the script fails like the test did"
    );

    // The same pack pointed at the fixed revision does not reproduce.
    let mut fixed = written.clone();
    fixed["revision"] = Value::from(repo.head());
    let fixed_pack = dir.path().join("fixed.json");
    std::fs::write(&fixed_pack, fixed.to_string()).unwrap();
    let not_again = ok(&tracelab(&[
        "repro",
        "--pack",
        fixed_pack.to_str().unwrap(),
        "--repo",
        &path,
        "--format",
        "json",
    ]));
    assert_eq!(not_again["reproduced"], false, "{not_again:#}");
    assert_eq!(not_again["kept"], Value::Null);
    assert_no_leftover_worktrees(repo.path(), &out_dir);
}

/// Only the `--out` worktree is still registered; temporary ones are gone.
fn assert_no_leftover_worktrees(repo: &Path, kept: &Path) {
    let out = Command::new("git")
        .args(["worktree", "list", "--porcelain"])
        .current_dir(repo)
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&out.stdout);
    let worktrees: Vec<std::path::PathBuf> = list
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .map(|w| std::fs::canonicalize(w).unwrap())
        .collect();
    assert_eq!(worktrees.len(), 2, "{list}");
    let kept = std::fs::canonicalize(kept.join("worktree")).unwrap();
    assert!(worktrees.contains(&kept), "{list}");
}

#[test]
fn locate_and_repro_refuse_bad_input_clearly() {
    let repo = shop();
    let path = repo.path().to_str().unwrap();
    let out = tracelab(&["locate", "--repo", path, "--test", "cargo test"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("supports Python test commands"), "{err}");
    let out = tracelab(&["locate", "--repo", path, "--test", "rm -rf /"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("not allowlisted"));
    let out = tracelab(&["locate", "--repo", path]);
    assert!(!out.status.success(), "--evidence or --test is required");
    let out = tracelab(&[
        "locate",
        "--repo",
        path,
        "--evidence",
        "x",
        "--repro-pack",
        "p",
    ]);
    assert!(!out.status.success(), "--repro-pack needs --test");

    let dir = tempfile::tempdir().unwrap();
    let pack = dir.path().join("p.json");
    std::fs::write(&pack, "{\"format\": 7}").unwrap();
    let out = tracelab(&["repro", "--pack", pack.to_str().unwrap(), "--repo", path]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a Repro Pack"));
}
