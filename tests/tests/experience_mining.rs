//! Mining in the fleet (#16), on real NATS JetStream and PostgreSQL: CI
//! reports of a failing and then a passing commit of a generated
//! repository are posted to ingest, which announces each
//! (`CiReportRecorded`); the indexer keeps them, sees the branch's
//! sequence complete, mines it from its mirror with the workflow file and
//! stores the experience record — which the investigator then reuses, and
//! a verifier proves. A poison event is dead-lettered; the same report
//! delivered again adds no second record.

use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tracelab_bus::{Bus, ConsumerSpec, DeadLetter, JetStreamBus, Message};
use tracelab_e2e::{Fleet, FleetOptions, backends};
use tracelab_store::ExperienceStore;
use tracelab_testkit::git;
use tracelab_testkit::scenarios::{self, Scenario};

const FIXED: &str =
    "def window(xs, start, size):\n    end = start + size\n    return xs[start:end]\n";
const BRANCH: &str = "fix-window";

/// The GitHub Actions workflow whose `test` job runs the scenario's test
/// command (so the mined record's validation is that command).
fn workflow(test_command: &str) -> String {
    format!(
        "name: ci\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - name: Tests\n        run: {test_command}\n"
    )
}

/// The overfitting trap repaired on a branch: the workflow added (still
/// failing), then the fix; the main line moved on so the repair no longer
/// applies at its recorded lines. Returns the scenario and the two commits.
fn repaired_on_a_branch() -> (Scenario, String, String) {
    let mut s = scenarios::overfitting_trap(3);
    let main = git(s.repo.path(), &["rev-parse", "--abbrev-ref", "HEAD"]);
    let root = s.root.clone();
    git(s.repo.path(), &["checkout", "-q", "-b", BRANCH, &root]);
    let ci = workflow(&s.test_command);
    let failing = s
        .repo
        .commit("Run the tests in CI", &[(".github/workflows/ci.yml", &ci)]);
    let passing = s.repo.commit("Fix window's end", &[("app.py", FIXED)]);
    s.repo.checkout(&main);
    let moved = format!(
        "def first(xs):\n    return xs[0]\n\n\n{}",
        std::fs::read_to_string(s.repo.path().join("app.py")).unwrap()
    );
    s.head = s.repo.commit("Add first()", &[("app.py", &moved)]);
    (s, failing, passing)
}

/// The JUnit report of the scenario's test at `commit` (pytest with
/// `--junitxml`, Debian's python3 as the services use).
fn junit_at(s: &Scenario, commit: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let worktree = dir.path().join("w");
    let worktree_arg = worktree.to_str().unwrap();
    git(
        s.repo.path(),
        &["worktree", "add", "-q", "--detach", worktree_arg, commit],
    );
    let xml = dir.path().join("junit.xml");
    let out = std::process::Command::new("/usr/bin/python3")
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml"])
        .arg(&xml)
        .arg("test_app.py::test_window")
        .current_dir(&worktree)
        .output()
        .expect("python3 -m pytest");
    git(
        s.repo.path(),
        &["worktree", "remove", "--force", worktree_arg],
    );
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "pytest ran: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(xml).expect("the JUnit report")
}

/// What `tracelab report` sends for the `test` job at `commit`.
fn report(repository: &str, commit: &str, junit: &str) -> Value {
    json!({
        "schema": 1,
        "repository": repository,
        "commit": commit,
        "branch": BRANCH,
        "job": {"provider": "github_actions", "name": "test", "id": format!("run-{commit}")},
        "reports": [{"path": "junit.xml", "content": junit}],
    })
}

async fn post(fleet: &Fleet, body: &Value) {
    let response = fleet
        .http()
        .post(format!("{}/v1/ci-failures", fleet.ingest))
        .json(body)
        .send()
        .await
        .expect("POST /v1/ci-failures");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    assert_eq!(status, 202, "{text}");
}

/// Publishes garbage on the CI report subject and waits for its dead
/// letter: the indexer's one consumer loop handles messages in order, so
/// everything published before it has been handled by then.
async fn poison_and_wait(fleet: &Fleet, bus: &JetStreamBus, id: &str) -> DeadLetter {
    let topology = fleet.topology();
    bus.publish(Message::new(
        topology.ci_reports(),
        id.to_string(),
        &b"\xff\x00 not a CI report event"[..],
    ))
    .await
    .unwrap();
    let mut dlq = bus
        .consumer(
            ConsumerSpec::new(topology.dead_letter_stream(), format!("dlq-{id}"))
                .filter(topology.dead_letter(&topology.ci_reports())),
        )
        .await
        .unwrap();
    loop {
        let letter = dlq
            .next(Duration::from_secs(60))
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("no dead letter for {id}\n{}", fleet.logs()));
        let meta = DeadLetter::read(&letter.message).expect("dead-letter headers");
        letter.ack().await.unwrap();
        if meta.original_id == id {
            return meta;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ci_reports_posted_to_ingest_are_mined_by_the_indexer_and_reused_by_the_investigator() {
    let Some(b) = backends() else { return };
    let (s, failing, passing) = repaired_on_a_branch();
    let repository = std::fs::canonicalize(s.repo.path())
        .unwrap()
        .display()
        .to_string();
    let red = junit_at(&s, &failing);
    assert!(red.contains("<failure"), "{red}");
    let green = junit_at(&s, &passing);
    assert!(!green.contains("<failure"), "{green}");

    let fleet = Fleet::start(&b, FleetOptions::default()).await;
    let store = fleet.store().await;
    post(&fleet, &report(&repository, &failing, &red)).await;
    post(&fleet, &report(&repository, &passing, &green)).await;

    let deadline = Instant::now() + Duration::from_secs(120);
    let records = loop {
        let records = store.experience(Some(&repository)).await.unwrap();
        if !records.is_empty() {
            break records;
        }
        assert!(
            Instant::now() < deadline,
            "no experience record mined: {:?}\n{}",
            store.minings(&repository, BRANCH).await,
            fleet.logs()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert_eq!(records.len(), 1, "{records:?}");
    let record = &records[0];
    assert_eq!(record.workflow, ".github/workflows/ci.yml");
    assert_eq!(record.concrete.validation, s.test_command);
    let minings = store.minings(&repository, BRANCH).await.unwrap();
    assert_eq!(minings.len(), 1, "{minings:?}");
    assert_eq!(minings[0].failing, failing);
    assert_eq!(minings[0].passing, passing);
    assert_eq!(minings[0].records, 1);

    // A poison event is dead-lettered, not retried.
    let bus = JetStreamBus::connect(&b.nats, fleet.topology())
        .await
        .unwrap();
    let meta = poison_and_wait(&fleet, &bus, "poison-1").await;
    assert_eq!(meta.delivered, 1, "{meta:?}");
    assert!(meta.error.contains("InvalidArgument"), "{meta:?}");

    // The passing report's event delivered again (under another message
    // id, so JetStream does not drop it) is handled again: no second record.
    let mut events = bus
        .consumer(
            ConsumerSpec::new(fleet.topology().evidence_stream(), "e2e-ci-reports")
                .filter(fleet.topology().ci_reports()),
        )
        .await
        .unwrap();
    let mut payloads = Vec::new();
    while let Some(d) = events.next(Duration::from_secs(2)).await.unwrap() {
        if d.message.id.ends_with(".ci-report") {
            payloads.push(d.message.payload.clone());
        }
        d.ack().await.unwrap();
    }
    assert_eq!(
        payloads.len(),
        2,
        "one event per report, the passing one too"
    );
    bus.publish(Message::new(
        fleet.topology().ci_reports(),
        "again-1".to_string(),
        payloads[1].clone(),
    ))
    .await
    .unwrap();
    poison_and_wait(&fleet, &bus, "poison-2").await;
    assert_eq!(store.experience(Some(&repository)).await.unwrap().len(), 1);

    // The investigator reuses the mined repair on the moved main line.
    let id = fleet
        .submit(json!({
            "repository": s.repo.path().display().to_string(),
            "test_command": s.test_command,
            "issue_id": "E2E-MINED",
            "parallelism": 2,
            "command_timeout_ms": 30000,
        }))
        .await;
    let view = fleet.wait_decided(&id, Duration::from_secs(300)).await;
    let report = &view["report"];
    let reused: Vec<&Value> = report["hypotheses"]
        .as_array()
        .unwrap_or_else(|| panic!("no hypotheses: {view}\n{}", fleet.logs()))
        .iter()
        .filter(|h| h["agent"] == "experience")
        .collect();
    assert_eq!(reused.len(), 1, "{report}\n{}", fleet.logs());
    assert_eq!(reused[0]["status"], "VERIFIED", "{}", reused[0]);
    assert_eq!(
        reused[0]["detail"]["experience"]["record"],
        record.id.as_str()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_force_pushed_branch_is_a_note_and_no_record() {
    let Some(b) = backends() else { return };
    let (mut s, failing, _) = repaired_on_a_branch();
    let repository = std::fs::canonicalize(s.repo.path())
        .unwrap()
        .display()
        .to_string();
    // The branch rewritten from the root: the fix no longer descends from
    // the failing commit that CI reported.
    let red = junit_at(&s, &failing);
    git(
        s.repo.path(),
        &["checkout", "-q", "-b", "rewritten", &s.root],
    );
    let rewritten = s
        .repo
        .commit("Fix window's end, again", &[("app.py", FIXED)]);
    let green = junit_at(&s, &rewritten);

    let fleet = Fleet::start(&b, FleetOptions::default()).await;
    let store = fleet.store().await;
    post(&fleet, &report(&repository, &failing, &red)).await;
    post(&fleet, &report(&repository, &rewritten, &green)).await;
    let deadline = Instant::now() + Duration::from_secs(120);
    let minings = loop {
        let minings = store.minings(&repository, BRANCH).await.unwrap();
        if !minings.is_empty() {
            break minings;
        }
        assert!(Instant::now() < deadline, "not mined\n{}", fleet.logs());
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert_eq!(minings[0].records, 0);
    assert!(
        minings[0].notes[0].message.contains("force-pushed"),
        "{minings:?}"
    );
    assert!(
        store
            .experience(Some(&repository))
            .await
            .unwrap()
            .is_empty()
    );
}
