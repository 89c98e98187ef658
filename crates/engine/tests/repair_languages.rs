//! Repair templates beyond Python (#12), end to end on generated
//! repositories with the local sandbox: a JavaScript bug (Node's own test
//! runner) fixed by the bound shift and VERIFIED under the whole contract,
//! and a Rust candidate (`cargo test`, whose failing test runs alone) that
//! passes screening and is REJECTED by the test beside it.

use std::sync::Arc;
use std::time::Duration;
use tracelab_domain::experiment::{Outcome, Step};
use tracelab_domain::hypothesis::{Hypothesis, HypothesisKind, HypothesisStatus};
use tracelab_domain::report::Report;
use tracelab_domain::verdict::Verdict;
use tracelab_engine::{Engine, EngineConfig, InvestigateRequest, Silent};
use tracelab_sandbox::{LocalConfig, LocalSandboxProvider};
use tracelab_store::SqliteStore;
use tracelab_testkit::FixtureRepo;

async fn investigate(repo: &FixtureRepo, test_command: &str, path: String) -> Report {
    let config = EngineConfig {
        parallelism: 2,
        command_timeout: Duration::from_secs(60),
        ..Default::default()
    };
    let local = LocalConfig {
        path,
        allowlist: config.allowlist.clone(),
    };
    let engine = Engine {
        config,
        store: Arc::new(SqliteStore::in_memory().await.unwrap()),
        sandboxes: Arc::new(LocalSandboxProvider::new(local)),
        progress: Arc::new(Silent),
    };
    engine
        .investigate(InvestigateRequest {
            repo: repo.path().to_path_buf(),
            test_command: test_command.into(),
            good: None,
            bad: None,
            issue_id: Some("T-1".into()),
        })
        .await
        .expect("the investigation completes")
}

fn repair_hypothesis(report: &Report) -> &Hypothesis {
    report
        .hypotheses
        .iter()
        .find(|h| h.kind == HypothesisKind::Patch)
        .expect("a repair hypothesis")
}

/// `between` should include `hi`; the fix is `xs.slice(lo, hi + 1)`, which
/// only the bound shift proposes (no literal to move by one).
const RANGE_JS: &str = "// Inclusive ranges of a list.\nfunction between(xs, lo, hi) {\n  if (lo > hi) {\n    return [];\n  }\n  return xs.slice(lo, hi);\n}\n\nmodule.exports = { between };\n";
const RANGE_TEST_JS: &str = "const test = require('node:test');\nconst assert = require('node:assert');\nconst { between } = require('../lib/range');\n\ntest('between includes both ends', () => {\n  assert.deepStrictEqual(between([1, 2, 3, 4, 5], 1, 3), [2, 3, 4]);\n});\n\ntest('an empty range', () => {\n  assert.deepStrictEqual(between([1, 2, 3], 2, 1), []);\n});\n\ntest('a range of one', () => {\n  assert.deepStrictEqual(between([7, 8, 9], 0, 0), [7]);\n});\n";

#[tokio::test]
async fn a_javascript_bug_is_fixed_by_the_bound_shift_and_verified() {
    if std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_err()
    {
        panic!("node is needed for this test (Node's own test runner)");
    }
    let mut repo = FixtureRepo::new();
    repo.commit(
        "Ranges",
        &[
            ("lib/range.js", RANGE_JS),
            ("test/range.test.js", RANGE_TEST_JS),
        ],
    );
    repo.commit("Notes", &[("NOTES.md", "ranges are inclusive\n")]);
    let report = investigate(
        &repo,
        "node --test test/range.test.js",
        "/usr/local/bin:/usr/bin:/bin".into(),
    )
    .await;
    assert_eq!(report.verdict, Verdict::Deterministic, "{:?}", report.notes);
    let winner = report.winner.clone().unwrap_or_else(|| {
        panic!(
            "no verified repair: {:?}",
            report
                .hypotheses
                .iter()
                .map(|h| (&h.summary, &h.status, &h.status_reason))
                .collect::<Vec<_>>()
        )
    });
    assert_eq!(
        winner.status,
        HypothesisStatus::Verified,
        "{}",
        winner.status_reason
    );
    let detail = winner.detail.clone().unwrap();
    assert_eq!(detail["source"], "repair_template", "{detail}");
    assert_eq!(detail["operator"], "bound_shift", "{detail}");
    let patch = winner.patch.clone().unwrap();
    assert!(patch.contains("+  return xs.slice(lo, hi + 1);"), "{patch}");
    assert!(!patch.contains("test/range.test.js"), "{patch}");
    let screened = detail["screening"]["screened"].as_array().unwrap();
    assert!(screened.iter().any(|c| c["outcome"] == "pass"), "{detail}");
    let md = report.to_markdown();
    assert!(md.contains("Source: repair template `bound_shift`"), "{md}");
}

const WINDOW_RS: &str = "/// The `size` items of `xs` from `start` on.\npub fn window(xs: &[i32], start: usize, size: usize) -> Vec<i32> {\n    let end = size;\n    xs[start..end].to_vec()\n}\n";
const WINDOW_TESTS_RS: &str = "use window::window;\n\n#[test]\nfn window_in_the_middle() {\n    assert_eq!(window(&[1, 2, 3, 4], 1, 2), vec![2, 3]);\n}\n\n#[test]\nfn window_from_the_start() {\n    assert_eq!(window(&[1, 2, 3, 4, 5], 0, 3), vec![1, 2, 3]);\n}\n";
const CARGO_TOML: &str =
    "[package]\nname = \"window\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n";
const CARGO_LOCK: &str = "# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = 4\n\n[[package]]\nname = \"window\"\nversion = \"0.1.0\"\n";

/// The toolchain's own `bin` (cargo and rustc without rustup's proxies,
/// which need the developer's HOME), then the system's.
fn toolchain_path() -> String {
    let sysroot = std::process::Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .expect("rustc is needed for this test");
    let sysroot = String::from_utf8(sysroot.stdout).unwrap();
    format!("{}/bin:/usr/bin:/bin", sysroot.trim())
}

#[tokio::test]
async fn a_rust_candidate_that_passes_the_failing_test_but_breaks_its_neighbour_is_rejected() {
    // `end = size` should be `end = start + size`: no template has that.
    // The bound shift `xs[start..end + 1]` makes the failing test pass
    // (screened alone, `cargo test NAME -- --exact`) and breaks
    // `window_from_the_start`, which passes before: the whole test command
    // (contract step 4) rejects it.
    let mut repo = FixtureRepo::new();
    repo.commit(
        "Windows",
        &[
            ("Cargo.toml", CARGO_TOML),
            ("Cargo.lock", CARGO_LOCK),
            (".gitignore", "/target\n"),
            ("src/lib.rs", WINDOW_RS),
            ("tests/window.rs", WINDOW_TESTS_RS),
        ],
    );
    repo.commit("Notes", &[("NOTES.md", "windows\n")]);
    let report = investigate(&repo, "cargo test --offline", toolchain_path()).await;
    assert_eq!(report.verdict, Verdict::Deterministic, "{:?}", report.notes);
    assert!(report.winner.is_none(), "{:?}", report.winner);
    let repair = repair_hypothesis(&report);
    assert_eq!(
        repair.status,
        HypothesisStatus::Rejected,
        "{}",
        repair.status_reason
    );
    let detail = repair.detail.clone().unwrap();
    assert_eq!(detail["operator"], "bound_shift", "{detail}");
    let screened = detail["screening"]["screened"].as_array().unwrap();
    let passed: Vec<&serde_json::Value> =
        screened.iter().filter(|c| c["outcome"] == "pass").collect();
    assert!(!passed.is_empty(), "{detail}");
    // The failing test alone passed with the edit; the whole command did not,
    // because of the neighbour.
    let step = |step: Step| {
        repair
            .experiments
            .iter()
            .find(|e| e.step == step)
            .unwrap_or_else(|| panic!("no {step:?} in {:#?}", repair.experiments))
    };
    let alone = step(Step::RegressionAfter);
    assert_eq!(alone.outcome, Outcome::Pass, "{}", alone.output);
    assert!(
        alone.command.contains("window_in_the_middle"),
        "{}",
        alone.command
    );
    let existing = step(Step::ExistingTests);
    // A different failure from the reported one: the neighbour's.
    assert_ne!(existing.outcome, Outcome::Pass, "{}", existing.output);
    assert!(
        existing.output.contains("window_from_the_start ... FAILED"),
        "{}",
        existing.output
    );
}
