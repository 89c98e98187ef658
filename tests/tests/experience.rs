//! Experience in the fleet (#16), on real NATS JetStream and PostgreSQL:
//! records of a past repair stored in the fleet's PostgreSQL are retrieved
//! by the investigator, which proposes the experience agent's hypothesis,
//! and a verifier re-applies and proves it (`agents::experience::reuse`,
//! the embedded pipeline's code); the arbiter picks it by evidence.

use serde_json::{Value, json};
use std::time::Duration;
use tracelab_e2e::{Fleet, FleetOptions, backends};
use tracelab_experience::evidence::failures_from_output;
use tracelab_experience::{
    CiRun, ExperienceRecord, History, JobRun, PathRelations, Revision, StepRun, StepStatus,
};
use tracelab_store::ExperienceStore;
use tracelab_testkit::git;
use tracelab_testkit::scenarios::{self, Scenario};

/// The services' PATH (Debian's python3, with pytest).
const SYSTEM_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
const FIXED: &str =
    "def window(xs, start, size):\n    end = start + size\n    return xs[start:end]\n";

/// The overfitting trap (no repair template fixes it) repaired on a branch
/// of its first commit, and the main line moved on so that the repair no
/// longer applies at its recorded lines. Returns the scenario and the
/// repair's commit.
fn repaired_elsewhere() -> (Scenario, String) {
    let mut s = scenarios::overfitting_trap(3);
    let main = git(s.repo.path(), &["rev-parse", "--abbrev-ref", "HEAD"]);
    let root = s.root.clone();
    git(
        s.repo.path(),
        &["checkout", "-q", "-b", "fix-window", &root],
    );
    let fix = s.repo.commit("Fix window's end", &[("app.py", FIXED)]);
    s.repo.checkout(&main);
    let moved = format!(
        "def first(xs):\n    return xs[0]\n\n\n{}",
        std::fs::read_to_string(s.repo.path().join("app.py")).unwrap()
    );
    s.head = s.repo.commit("Add first()", &[("app.py", &moved)]);
    (s, fix)
}

/// The records of the red → green history `from..to` whose CI ran the
/// scenario's test command, keyed by `repository` as the fleet admits it.
fn mined(s: &Scenario, repository: &str, from: &str, to: &str) -> Vec<ExperienceRecord> {
    let argv: Vec<String> = s
        .test_command
        .split_whitespace()
        .map(String::from)
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let worktree = dir.path().join("w");
    let worktree_arg = worktree.to_str().unwrap();
    git(
        s.repo.path(),
        &["worktree", "add", "-q", "--detach", worktree_arg, from],
    );
    let out = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .current_dir(&worktree)
        .env("PATH", SYSTEM_PATH)
        .output()
        .unwrap();
    git(
        s.repo.path(),
        &["worktree", "remove", "--force", worktree_arg],
    );
    assert!(!out.status.success(), "the history starts failing");
    let output = String::from_utf8_lossy(&out.stdout).into_owned();
    let (failures, exhaustive) = failures_from_output(&argv, &output, worktree_arg);
    let job = |status, failures| JobRun {
        name: "test".into(),
        needs: vec![],
        steps: vec![StepRun {
            name: "tests".into(),
            command: s.test_command.clone(),
            status,
            failures,
            exhaustive,
        }],
    };
    let diff = git(s.repo.path(), &["diff", from, to]) + "\n";
    let history = History {
        repository: repository.into(),
        workflow: format!("test: {}", s.test_command),
        revisions: vec![
            Revision {
                id: from.into(),
                ci: Some(CiRun {
                    jobs: vec![job(StepStatus::Failed, failures)],
                }),
                ..Default::default()
            },
            Revision {
                id: to.into(),
                parent: Some(from.into()),
                diff: diff.clone(),
                ci: Some(CiRun {
                    jobs: vec![job(StepStatus::Passed, vec![])],
                }),
                ..Default::default()
            },
        ],
        net_diff: diff,
    };
    let r = tracelab_experience::reconstruct(&history, &PathRelations);
    assert_eq!(r.records.len(), 1, "{:?}", r.notes);
    r.records
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_past_repair_in_the_fleets_store_is_reapplied_and_verified_by_a_verifier() {
    let Some(b) = backends() else { return };
    let (s, fix) = repaired_elsewhere();
    // The fleet keys a local repository by its canonical path, as
    // one-machine mining does (`git rev-parse --show-toplevel`).
    let repository = std::fs::canonicalize(s.repo.path())
        .unwrap()
        .display()
        .to_string();
    let records = mined(&s, &repository, &s.root, &fix);
    let fleet = Fleet::start(&b, FleetOptions::default()).await;
    let store = fleet.store().await;
    assert_eq!(store.put_experience(&records).await.unwrap(), 1);
    let id = fleet
        .submit(json!({
            "repository": s.repo.path().display().to_string(),
            "test_command": s.test_command,
            "issue_id": "E2E-EXP",
            "parallelism": 2,
            "command_timeout_ms": 30000,
        }))
        .await;
    let view = fleet.wait_decided(&id, Duration::from_secs(300)).await;
    let report = &view["report"];
    let experience: Vec<&Value> = report["hypotheses"]
        .as_array()
        .unwrap_or_else(|| panic!("no hypotheses: {view}\n{}", fleet.logs()))
        .iter()
        .filter(|h| h["agent"] == "experience")
        .collect();
    assert_eq!(experience.len(), 1, "{report}\n{}", fleet.logs());
    let h = experience[0];
    assert_eq!(h["status"], "VERIFIED", "{h}\n{}", fleet.logs());
    assert_eq!(report["winner"]["id"], h["id"], "{report}");
    assert_eq!(report["winner"]["agent"], "experience", "{report}");
    let reused = &h["detail"]["experience"];
    assert_eq!(reused["record"], records[0].id.as_str(), "{h}");
    assert_eq!(reused["repository"], repository.as_str(), "{h}");
    assert_eq!(reused["merge"][0], "app.py three-way", "{h}");
    assert!(
        h["patch"]
            .as_str()
            .is_some_and(|p| p.contains("+    end = start + size")),
        "{h}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn another_repositorys_repair_is_not_proposed_in_the_fleet() {
    let Some(b) = backends() else { return };
    let (s, fix) = repaired_elsewhere();
    // Mined elsewhere: the scope rule keeps its L1 record out.
    let records = mined(&s, "https://example.invalid/other.git", &s.root, &fix);
    let fleet = Fleet::start(&b, FleetOptions::default()).await;
    let store = fleet.store().await;
    store.put_experience(&records).await.unwrap();
    let id = fleet
        .submit(json!({
            "repository": s.repo.path().display().to_string(),
            "test_command": s.test_command,
            "issue_id": "E2E-EXP-OTHER",
            "parallelism": 2,
            "command_timeout_ms": 30000,
        }))
        .await;
    let view = fleet.wait_decided(&id, Duration::from_secs(300)).await;
    let report = &view["report"];
    assert!(
        report["hypotheses"]
            .as_array()
            .unwrap_or_else(|| panic!("no hypotheses: {view}\n{}", fleet.logs()))
            .iter()
            .all(|h| h["agent"] != "experience"),
        "{report}"
    );
    // Its L3 pattern is still guidance in the report.
    assert!(
        report["notes"]
            .as_array()
            .is_some_and(|n| n.iter().any(|n| n
                .as_str()
                .is_some_and(|n| n.starts_with("experience guidance (L3")))),
        "{report}"
    );
}
