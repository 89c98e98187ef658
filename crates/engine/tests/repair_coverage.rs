//! Neighbour tests by coverage (#12): a template edit that passes the
//! failing test and its whole file, but breaks a test in another file that
//! reaches the patched function only through a caller (no `git grep` of the
//! function's name finds it), is REJECTED because coverage.py says that
//! test runs the function; the report names the tests that were run. Runs
//! Debian's python3, which has pytest and coverage.py (CI installs
//! python3-coverage; `.ci/run`), on the local sandbox and in the Docker
//! base image (`deploy/sandbox/build-base-image.sh`, which carries
//! coverage.py), the fleet's sandbox.

use std::sync::Arc;
use std::time::Duration;
use tracelab_domain::experiment::{Outcome, Step};
use tracelab_domain::hypothesis::{HypothesisKind, HypothesisStatus};
use tracelab_domain::ports::SandboxProvider;
use tracelab_engine::{Engine, EngineConfig, InvestigateRequest, Silent};
use tracelab_sandbox::{LocalConfig, LocalSandboxProvider};
use tracelab_sandbox_docker::{DockerConfig, DockerSandboxProvider};
use tracelab_store::SqliteStore;
use tracelab_testkit::FixtureRepo;

const SYSTEM_PATH: &str = "/usr/bin:/bin";

/// The failing test wants `offset(5) == 7`; the off-by-one edit `n + 2`
/// gives it that and breaks `label`, which `test_label.py` checks without
/// ever naming `offset`.
const APP: &str =
    "def offset(n):\n    return n + 1\n\n\ndef label(n):\n    return \"item-%d\" % offset(n)\n";
const TEST_OFFSET: &str =
    "from app import offset\n\n\ndef test_offset():\n    assert offset(5) == 7\n";
const TEST_LABEL: &str =
    "from app import label\n\n\ndef test_label():\n    assert label(1) == \"item-2\"\n";

fn coverage_py() -> bool {
    std::process::Command::new("/usr/bin/python3")
        .args(["-c", "import coverage, pytest"])
        .status()
        .is_ok_and(|s| s.success())
}

fn backends_required() -> bool {
    std::env::var("TRACELAB_REQUIRE_BACKENDS").is_ok_and(|v| v == "1")
}

/// The local sandbox on Debian's python3, or `None` (skipped, unless
/// backends are required) when it has no coverage.py or pytest.
fn local_sandboxes() -> Option<Arc<dyn SandboxProvider>> {
    if !coverage_py() {
        assert!(
            !backends_required(),
            "coverage.py and pytest are required for /usr/bin/python3"
        );
        eprintln!("skipped: /usr/bin/python3 has no coverage.py or pytest");
        return None;
    }
    let local = LocalConfig {
        path: SYSTEM_PATH.into(),
        allowlist: EngineConfig::default().allowlist,
    };
    Some(Arc::new(LocalSandboxProvider::new(local)))
}

#[tokio::test]
async fn an_edit_that_breaks_a_test_covering_the_patched_function_elsewhere_is_rejected() {
    let Some(sandboxes) = local_sandboxes() else {
        return;
    };
    rejects_the_edit_by_coverage(sandboxes, &[]).await;
}

/// A test file of the project that does not import (seen on real projects:
/// an optional dependency missing, a module gone from newer Pythons) does
/// not hide the covering test: the rest of the suite still runs under
/// coverage.
#[tokio::test]
async fn a_test_file_that_does_not_import_does_not_hide_the_covering_test() {
    let Some(sandboxes) = local_sandboxes() else {
        return;
    };
    rejects_the_edit_by_coverage(
        sandboxes,
        &[(
            "test_optional.py",
            "import a_module_nobody_installed\n\n\ndef test_optional():\n    assert a_module_nobody_installed\n",
        )],
    )
    .await;
}

/// A test command that stops at its first failure (`-x`, as many projects'
/// CI use) does not hide the covering test behind a test that already
/// fails: the coverage run and the neighbour run drop `-x` (seen on real
/// bugs: pytest -x stopped every coverage run of a project at a test file
/// that does not import).
#[tokio::test]
async fn a_suite_that_stops_at_its_first_failure_does_not_hide_the_covering_test() {
    let Some(sandboxes) = local_sandboxes() else {
        return;
    };
    rejects_the_edit_by_coverage_of(
        sandboxes,
        &[(
            "test_aaa_broken.py",
            "def test_broken_before_any_fix():\n    assert False\n",
        )],
        "python3 -m pytest -x -q -p no:cacheprovider test_offset.py::test_offset",
    )
    .await;
}

/// The same in the Docker sandbox: the base image carries coverage.py, so
/// the fleet's verifiers find covering tests too.
#[tokio::test]
async fn in_the_docker_sandbox_too() {
    let setting = match std::env::var("TRACELAB_TEST_DOCKER") {
        Ok(value) if !value.is_empty() && value != "0" => value,
        _ => {
            assert!(
                !backends_required(),
                "TRACELAB_TEST_DOCKER is unset but TRACELAB_REQUIRE_BACKENDS=1"
            );
            eprintln!("skipped: set TRACELAB_TEST_DOCKER=1 to run Docker tests");
            return;
        }
    };
    let mut config = DockerConfig::default();
    if let Some(socket) = setting.strip_prefix("unix://") {
        config.socket = socket.into();
    } else if setting.starts_with('/') {
        config.socket = setting.into();
    }
    let provider = DockerSandboxProvider::connect(config)
        .await
        .expect("TRACELAB_TEST_DOCKER is set, so Docker and the base image are usable");
    rejects_the_edit_by_coverage(Arc::new(provider), &[]).await;
}

/// `extra` files are committed beside the app and its two tests.
async fn rejects_the_edit_by_coverage(sandboxes: Arc<dyn SandboxProvider>, extra: &[(&str, &str)]) {
    rejects_the_edit_by_coverage_of(
        sandboxes,
        extra,
        "python3 -m pytest -q -p no:cacheprovider test_offset.py::test_offset",
    )
    .await;
}

/// The same with the user's `test_command`.
async fn rejects_the_edit_by_coverage_of(
    sandboxes: Arc<dyn SandboxProvider>,
    extra: &[(&str, &str)],
    test_command: &str,
) {
    let mut repo = FixtureRepo::new();
    let mut files = vec![
        ("app.py", APP),
        ("test_offset.py", TEST_OFFSET),
        ("test_label.py", TEST_LABEL),
    ];
    files.extend_from_slice(extra);
    repo.commit("Offsets and labels", &files);
    repo.commit("Notes", &[("NOTES.md", "notes\n")]);
    let config = EngineConfig {
        parallelism: 2,
        command_timeout: Duration::from_secs(60),
        ..Default::default()
    };
    let engine = Engine {
        config,
        store: Arc::new(SqliteStore::in_memory().await.unwrap()),
        sandboxes,
        progress: Arc::new(Silent),
    };
    let report = engine
        .investigate(InvestigateRequest {
            repo: repo.path().to_path_buf(),
            test_command: test_command.into(),
            good: None,
            bad: None,
            issue_id: Some("T-1".into()),
        })
        .await
        .expect("the investigation completes");
    assert!(report.winner.is_none(), "{:?}", report.winner);
    let h = report
        .hypotheses
        .iter()
        .find(|h| h.kind == HypothesisKind::Patch)
        .expect("a repair hypothesis");
    assert_eq!(h.status, HypothesisStatus::Rejected, "{}", h.status_reason);
    let detail = h.detail.as_ref().unwrap();
    assert_eq!(detail["operator"], "off_by_one", "{detail}");
    assert_eq!(
        detail["covering_tests"],
        serde_json::json!(["test_label.py::test_label"]),
        "{detail}"
    );
    let run: Vec<&str> = detail["tests_run"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(
        run.iter()
            .any(|c| c.contains("test_offset.py") && c.contains("test_label.py::test_label")),
        "{run:?}"
    );
    let neighbours = h
        .experiments
        .iter()
        .find(|e| e.step == Step::ExistingTests && e.command.contains("test_label.py::test_label"))
        .expect("the neighbour tests ran");
    assert_eq!(neighbours.outcome, Outcome::Fail);
    let note = neighbours.note.as_deref().unwrap();
    assert!(
        note.contains("breaks tests beside the failing one: test_label.py::test_label"),
        "{note}"
    );
    assert!(
        note.contains("1 test(s) covering it (coverage.py)"),
        "{note}"
    );
}
