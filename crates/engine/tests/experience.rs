//! The experience agent (#16) end to end: a repair mined from one history
//! of a repository is re-applied, by a 3-way merge, when the same problem
//! fails again after the code around it moved, and the contract verifies
//! it where no repair template can (`scenarios::overfitting_trap`). Scope
//! and applicability keep other repositories' and stale records out; no
//! records, no agent.

mod support;

use std::sync::Arc;
use std::time::Duration;
use tracelab_domain::hypothesis::{AgentKind, HypothesisStatus};
use tracelab_domain::report::Report;
use tracelab_engine::EngineConfig;
use tracelab_engine::agents::experience::Experience;
use tracelab_engine::git::Git;
use tracelab_experience::evidence::failures_from_output;
use tracelab_experience::{
    CiRun, ExperienceRecord, History, JobRun, PathRelations, Revision, StepRun, StepStatus,
};
use tracelab_testkit::git;
use tracelab_testkit::scenarios::{self, Scenario};

const SYSTEM_PATH: &str = "/usr/bin:/bin";
const FIXED: &str =
    "def window(xs, start, size):\n    end = start + size\n    return xs[start:end]\n";

/// The trap's repository with a repair of `window` made on a branch of
/// its first commit (the history a miner learns from), and the main line
/// moved on: a helper now sits above `window`, so the repair no longer
/// applies at its recorded lines. Returns the scenario and the repair's
/// commit.
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

/// What `tracelab experience mine` records for `from..to` with the
/// scenario's test command as the one step of job `local`.
async fn mine(s: &Scenario, from: &str, to: &str) -> Vec<ExperienceRecord> {
    let repo = Git::open(s.repo.path()).await.unwrap();
    let argv = shell_words::split(&s.test_command).unwrap();
    let dir = tempfile::tempdir().unwrap();
    git(
        s.repo.path(),
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            dir.path().to_str().unwrap(),
            from,
        ],
    );
    let out = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .current_dir(dir.path())
        .env("PATH", SYSTEM_PATH)
        .output()
        .unwrap();
    assert!(!out.status.success(), "the history starts failing");
    let output = String::from_utf8_lossy(&out.stdout).into_owned();
    let (failures, exhaustive) =
        failures_from_output(&argv, &output, &dir.path().display().to_string());
    git(
        s.repo.path(),
        &[
            "worktree",
            "remove",
            "--force",
            dir.path().to_str().unwrap(),
        ],
    );
    let step = |status, failures| JobRun {
        name: "local".into(),
        needs: vec![],
        steps: vec![StepRun {
            name: s.test_command.clone(),
            command: s.test_command.clone(),
            status,
            failures,
            exhaustive,
        }],
    };
    let diff = git(s.repo.path(), &["diff", from, to]) + "\n";
    let history = History {
        repository: repo.path().display().to_string(),
        workflow: format!("local: {}", s.test_command),
        revisions: vec![
            Revision {
                id: from.into(),
                ci: Some(CiRun {
                    jobs: vec![step(StepStatus::Failed, failures)],
                }),
                ..Default::default()
            },
            Revision {
                id: to.into(),
                parent: Some(from.into()),
                diff: diff.clone(),
                ci: Some(CiRun {
                    jobs: vec![step(StepStatus::Passed, vec![])],
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

async fn investigate(s: &Scenario, experience: Option<Experience>) -> Report {
    let config = EngineConfig {
        parallelism: 2,
        command_timeout: Duration::from_secs(30),
        experience: experience.map(Arc::new),
        ..Default::default()
    };
    support::investigate_locally(config, SYSTEM_PATH, s.repo.path(), &s.test_command, "E-1")
        .await
        .expect("the investigation completes")
}

#[tokio::test]
async fn a_past_repair_is_merged_into_moved_code_and_verified() {
    let (s, fix) = repaired_elsewhere();
    let records = mine(&s, &s.root, &fix).await;
    let report = investigate(
        &s,
        Some(Experience {
            records: records.clone(),
            workflow: None,
            repository: None,
        }),
    )
    .await;
    let h = report
        .hypotheses
        .iter()
        .find(|h| h.agent == AgentKind::Experience)
        .expect("an experience hypothesis");
    assert_eq!(h.status, HypothesisStatus::Verified, "{}", h.status_reason);
    assert_eq!(report.winner.as_ref().map(|w| &w.id), Some(&h.id));
    let detail = h.detail.as_ref().unwrap();
    assert_eq!(detail["experience"]["record"], records[0].id.as_str());
    assert_eq!(detail["experience"]["merge"][0], "app.py three-way");
    let patch = h.patch.as_deref().unwrap();
    assert!(patch.contains("+    end = start + size"), "{patch}");
    let json = serde_json::to_value(&report).unwrap();
    assert!(
        json["hypotheses"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["agent"] == "experience")
    );
    let md = report.to_markdown();
    assert!(
        md.contains(&format!("Source: past repair `{}`", records[0].id)),
        "{md}"
    );
    assert!(report.hypotheses.len() <= 3);
}

#[tokio::test]
async fn without_records_or_in_scope_records_the_agent_adds_nothing() {
    let (s, fix) = repaired_elsewhere();
    let records = mine(&s, &s.root, &fix).await;
    let without = investigate(&s, None).await;
    assert!(
        without
            .hypotheses
            .iter()
            .all(|h| h.agent != AgentKind::Experience)
    );
    assert!(without.notes.iter().all(|n| !n.contains("experience")));
    // The same records, mined in another repository: no L1 reuse, only guidance.
    let elsewhere: Vec<ExperienceRecord> = records
        .iter()
        .cloned()
        .map(|mut r| {
            r.repository = "/elsewhere/shop".into();
            r
        })
        .collect();
    let report = investigate(
        &s,
        Some(Experience {
            records: elsewhere,
            workflow: None,
            repository: None,
        }),
    )
    .await;
    assert!(
        report
            .hypotheses
            .iter()
            .all(|h| h.agent != AgentKind::Experience)
    );
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.starts_with("experience guidance (L3")),
        "{:?}",
        report.notes
    );
}

#[tokio::test]
async fn a_record_whose_code_is_gone_is_not_applied() {
    let (s, fix) = repaired_elsewhere();
    let mut records = mine(&s, &s.root, &fix).await;
    // The recorded repair's function was renamed since.
    records[0].concrete.symbols = vec!["slice_of".into()];
    let report = investigate(
        &s,
        Some(Experience {
            records,
            workflow: None,
            repository: None,
        }),
    )
    .await;
    assert!(
        report
            .hypotheses
            .iter()
            .all(|h| h.agent != AgentKind::Experience)
    );
    assert!(
        report.notes.iter().any(
            |n| n.contains("no past repair of this failure applies here") && n.contains("slice_of")
        ),
        "{:?}",
        report.notes
    );
}
