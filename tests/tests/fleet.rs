//! The fleet end to end: the investigator, arbiter and verifier processes
//! over a real NATS JetStream and PostgreSQL, driven through the REST API, with
//! faults injected: a verifier killed mid-job, a poison message, NATS and
//! PostgreSQL restarts, several verifiers sharing one work queue.
//!
//! Tests that restart a shared server hold the write half of [`SERVERS`];
//! the others hold the read half, so a restart never hits a bystander.

use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::RwLock;
use tracelab_bus::{Bus, ConsumerSpec, DeadLetter, JetStreamBus, Message};
use tracelab_domain::ids::HypothesisId;
use tracelab_e2e::{Backends, Fleet, FleetOptions, backends, pytest_junit};
use tracelab_engine::{Engine, EngineConfig, InvestigateRequest, Silent};
use tracelab_llm::fake::{Answer, FakeChat};
use tracelab_sandbox::{LocalConfig, LocalSandboxProvider};
use tracelab_store::{PgStore, SqliteStore};
use tracelab_testkit::scenarios::{self, Scenario};

static SERVERS: RwLock<()> = RwLock::const_new(());

fn request(s: &Scenario, issue: &str) -> Value {
    json!({
        "repository": s.repo.path().display().to_string(),
        "test_command": s.test_command,
        "issue_id": issue,
        "parallelism": 2,
        "command_timeout_ms": 30000,
    })
}

/// The revert hypothesis of a decided investigation, with a check that its
/// experiments were stored exactly once.
async fn revert_stored_once(fleet: &Fleet, report: &Value) -> HypothesisId {
    let revert = report["hypotheses"]
        .as_array()
        .expect("hypotheses")
        .iter()
        .find(|h| h["kind"] == "revert")
        .unwrap_or_else(|| panic!("no revert hypothesis in {report}"));
    let id = HypothesisId(revert["id"].as_str().unwrap().to_string());
    let store = fleet.store().await;
    let stored = store
        .hypothesis(&id)
        .await
        .unwrap()
        .expect("stored hypothesis");
    assert_eq!(
        store.experiment_count(&id).await.unwrap(),
        stored.experiments.len() as i64,
        "experiments of {id} stored more than once"
    );
    assert!(!stored.experiments.is_empty());
    id
}

async fn embedded(s: &Scenario) -> tracelab_domain::report::Report {
    embedded_on(s, std::env::var("PATH").unwrap()).await
}

/// [`embedded`] with the services' PATH (Debian's python3, with pytest).
async fn embedded_on(s: &Scenario, path: String) -> tracelab_domain::report::Report {
    let config = EngineConfig {
        parallelism: 2,
        command_timeout: Duration::from_secs(30),
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
            repo: s.repo.path().to_path_buf(),
            test_command: s.test_command.clone(),
            good: None,
            bad: None,
            issue_id: Some("EMB-1".into()),
        })
        .await
        .map_err(|a| a.error)
        .expect("embedded investigation")
}

fn short(sha: &str) -> &str {
    &sha[..12]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_investigation_through_the_rest_api_matches_the_embedded_mode() {
    let Some(b) = backends() else { return };
    let _servers = SERVERS.read().await;
    let s = scenarios::regression_behind_broken_range();
    let fleet = Fleet::start(&b, FleetOptions::default()).await;
    let id = fleet.submit(request(&s, "E2E-1")).await;
    let view = fleet.wait_decided(&id, Duration::from_secs(300)).await;
    assert_eq!(
        view["state"],
        "WAITING_FOR_REVIEW",
        "{view}\n{}",
        fleet.logs()
    );
    let report = &view["report"];
    let culprit = s.culprit.as_deref().unwrap();
    assert_eq!(report["culprit"]["commit"], culprit, "{report}");
    assert_eq!(report["winner"]["status"], "VERIFIED", "{report}");
    assert_eq!(report["state"], "WAITING_FOR_REVIEW");
    assert_eq!(report["suspects"][0]["symbol"], "py:app.add", "{report}");
    revert_stored_once(&fleet, report).await;

    // The review dashboard, served by the investigator beside the API,
    // shows the same diagnosis as HTML.
    let (status, list) = fleet.page("/investigations", "any-token").await;
    assert_eq!(status, 200, "{list}");
    assert!(list.contains(&id), "the list names the investigation");
    let (status, page) = fleet
        .page(&format!("/investigations/{id}"), "any-token")
        .await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains(short(culprit)), "the page names the culprit");
    assert!(page.contains("VERIFIED"), "the page shows the verified fix");

    // What each service counted, as Prometheus scrapes it.
    let metric = |text: &str, name: &str, labels: &[&str]| -> Option<f64> {
        text.lines()
            .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
            .find(|l| labels.iter().all(|label| l.contains(label)))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
    };
    let arbiter = fleet.metrics_of("arbiter").await;
    assert_eq!(
        metric(
            &arbiter,
            "tracelab_investigations_decided_total",
            &["verdict=\"regression\""]
        ),
        Some(1.0),
        "{arbiter}"
    );
    // The fleet's investigations by state, counted from the store by the
    // arbiter's sweep (every second here); this one waits for review.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let arbiter = fleet.metrics_of("arbiter").await;
        let waiting = metric(
            &arbiter,
            "tracelab_investigations",
            &["state=\"WAITING_FOR_REVIEW\""],
        );
        if waiting == Some(1.0) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{arbiter}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let investigator = fleet.metrics_of("investigator").await;
    assert_eq!(
        metric(&investigator, "tracelab_investigations_created_total", &[]),
        Some(1.0),
        "{investigator}"
    );
    for phase in ["reproduce", "propose"] {
        assert!(
            investigator.contains(&format!("tracelab_phase_seconds{{phase=\"{phase}\"")),
            "{investigator}"
        );
    }
    assert!(
        metric(
            &investigator,
            "tracelab_messages_total",
            &["consumer=\"investigator\"", "outcome=\"ack\""]
        )
        .is_some_and(|n| n >= 1.0),
        "{investigator}"
    );
    let verifier = fleet.metrics_of("verifier-1").await;
    assert_eq!(
        metric(
            &verifier,
            "tracelab_verifications_total",
            &["status=\"VERIFIED\"", "recorded=\"stored\""]
        ),
        Some(1.0),
        "{verifier}"
    );
    assert!(
        verifier.contains("tracelab_verification_seconds"),
        "{verifier}"
    );
    // The verifier's commands, counted by sandbox kind and outcome (the
    // regression test after the fix and the existing tests pass; the
    // failing run before it is the reproduction's, not run again), and its
    // queue's backlog sampled from JetStream.
    assert!(
        metric(
            &verifier,
            "tracelab_sandbox_runs_total",
            &["sandbox=\"local\"", "outcome=\"passed\""]
        )
        .is_some_and(|n| n >= 2.0),
        "{verifier}"
    );
    assert!(
        verifier.contains("tracelab_sandbox_run_seconds"),
        "{verifier}"
    );
    assert!(
        metric(
            &verifier,
            "tracelab_queue_pending",
            &["consumer=\"verifier-1\""]
        )
        .is_some(),
        "{verifier}"
    );

    // The same question answered by the one-process pipeline.
    let local = embedded(&s).await;
    assert_eq!(report["verdict"], local.verdict.as_str());
    // The same suspects in the same order. Their scores may differ: once a
    // culprit is named, the one-machine pipeline reads the history from
    // the culprit on, where the fleet's code-path agent, started at the
    // first failure, reads the newest 100 commits.
    let symbols = |suspects: &serde_json::Value| -> Vec<String> {
        suspects
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["symbol"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        symbols(&report["suspects"]),
        symbols(&serde_json::to_value(&local.suspects).unwrap()),
        "fleet and embedded suspects differ"
    );
    assert_eq!(
        report["suspects"][0],
        serde_json::to_value(&local.suspects[0]).unwrap(),
        "the first suspect is scored alike"
    );
    assert_eq!(
        report["culprit"]["commit"],
        local.culprit.as_ref().unwrap().commit.commit
    );
    assert_eq!(report["culprit"]["verified"], true, "{report}");
    let kinds = |hs: &[Value]| -> Vec<(String, String)> {
        hs.iter()
            .map(|h| (h["kind"].to_string(), h["status"].to_string()))
            .collect()
    };
    let local_json = serde_json::to_value(&local).unwrap();
    assert_eq!(
        kinds(report["hypotheses"].as_array().unwrap()),
        kinds(local_json["hypotheses"].as_array().unwrap()),
        "fleet and embedded hypotheses differ"
    );

    // Reading and reviewing through the API.
    let (status, list) = fleet
        .get(&format!("/api/investigations/{id}/hypotheses"))
        .await;
    assert_eq!(status, 200);
    let hid = list["hypotheses"][0]["id"].as_str().unwrap().to_string();
    let (status, evidence) = fleet.get(&format!("/api/hypotheses/{hid}/evidence")).await;
    assert_eq!(status, 200, "{evidence}");
    assert!(
        evidence["experiments"]
            .as_array()
            .is_some_and(|e| !e.is_empty())
    );
    let approved: Value = fleet
        .http()
        .post(format!("{}/api/investigations/{id}/approve", fleet.api))
        .json(&json!({"reason": "the revert is right"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(approved["state"], "APPROVED", "{approved}");
    let again = fleet
        .http()
        .post(format!("{}/api/investigations/{id}/reject", fleet.api))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 409, "a decided review cannot be changed");
    let (status, _) = fleet.get("/api/investigations/not-an-id!").await;
    assert_eq!(status, 400);
    let (status, _) = fleet.get("/api/investigations/0000").await;
    assert_eq!(status, 404);
    eprintln!("culprit {} found by the fleet", short(culprit));
}

/// Files a decided report's winning patch changes.
fn winner_patch_files(report: &Value) -> Vec<String> {
    let patch = report["winner"]["patch"].as_str().unwrap_or_default();
    tracelab_domain::patch::parse(patch)
        .unwrap()
        .into_iter()
        .map(|f| f.new_path)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_fleet_keeps_the_oracle_fixed_and_fixes_a_conflicting_revert_at_symbol_level() {
    let Some(b) = backends() else { return };
    let _servers = SERVERS.read().await;
    let fleet = Fleet::start(&b, FleetOptions::default()).await;

    // Later commits edit the culprit's function: the verifier's textual
    // revert conflicts and the symbol-level restore is VERIFIED.
    let carried = scenarios::carried_regression(16, 5);
    let id = fleet.submit(request(&carried, "E2E-SYM")).await;
    let view = fleet.wait_decided(&id, Duration::from_secs(300)).await;
    let report = &view["report"];
    assert_eq!(
        report["verdict"],
        "regression",
        "{report}\n{}",
        fleet.logs()
    );
    assert_eq!(
        report["culprit"]["commit"],
        carried.culprit.as_deref().unwrap()
    );
    assert_eq!(report["culprit"]["verified"], true, "{report}");
    assert_eq!(report["bisect"]["oracle"], "tests_at_bad", "{report}");
    assert_eq!(winner_patch_files(report), vec!["app.py".to_string()]);

    // Each probe's own tests, as the request asks: the search ends at the
    // commit that only added the check. It stays visible in bisect.culprit,
    // is not the report's culprit, and no "fix" deletes the test.
    let old_bug = scenarios::old_bug_new_test(10, 3);
    let mut body = request(&old_bug, "E2E-TAR");
    body["tests_at_revision"] = json!(true);
    body["max_patch_attempts"] = json!(1);
    let id = fleet.submit(body).await;
    let view = fleet.wait_decided(&id, Duration::from_secs(300)).await;
    let report = &view["report"];
    assert_eq!(report["bisect"]["oracle"], "tests_at_revision", "{report}");
    assert_eq!(
        report["bisect"]["culprit"]["commit"],
        old_bug.head.as_str(),
        "{report}"
    );
    assert_eq!(
        report["bisect"]["culprit_changes_only_tests"], true,
        "{report}"
    );
    assert!(report["culprit"].is_null(), "{report}");
    assert_ne!(report["verdict"], "regression", "{report}");
    let hypotheses = report["hypotheses"].as_array().unwrap();
    assert!(
        hypotheses.iter().all(|h| h["kind"] != "revert"),
        "no revert of a test-only commit: {report}"
    );
    assert!(
        report["notes"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap_or_default()
            .contains("changes test files only")),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_fleet_finds_the_commit_that_raised_a_failure_rate_and_judges_its_revert_between_the_rates()
 {
    let Some(b) = backends() else { return };
    let _servers = SERVERS.read().await;
    let fleet = Fleet::start(&b, FleetOptions::default()).await;
    // Half the runs fail before the culprit, 19 in 20 after it: a flaky
    // `--good`, and a revert that brings the rate back to one in two.
    let s = scenarios::flakiness_regression(12, 6, "PF", "PFFFFFFFFFFFFFFFFFFF");
    let mut body = request(&s, "E2E-FLR");
    body["good"] = json!(s.root);
    let id = fleet.submit(body).await;
    let view = fleet.wait_decided(&id, Duration::from_secs(600)).await;
    let report = &view["report"];
    assert_eq!(
        report["verdict"],
        "flakiness_regression",
        "{report}\n{}",
        fleet.logs()
    );
    assert_eq!(
        report["culprit"]["commit"],
        s.culprit.as_deref().unwrap(),
        "{report}"
    );
    let (good_rate, bad_rate) = (
        report["bisect"]["good_flaky"]["failure_rate"]
            .as_f64()
            .unwrap(),
        report["flaky"]["failure_rate"].as_f64().unwrap(),
    );
    assert!(good_rate < bad_rate, "{report}");
    // The rate at bad counts every run made there, the comparison's too.
    assert_eq!(report["bisect"]["bad_flaky"], report["flaky"], "{report}");
    // The verifier got both rates with the job (`VerifyJob.rates_json`):
    // judged by the plain contract, the revert's runs that fail at the
    // background rate would reject it.
    assert_eq!(report["culprit"]["verified"], true, "{report}");
    let verification = report["culprit"]["verification"].as_str().unwrap();
    assert!(
        verification.contains("back to the rate before the culprit"),
        "{verification}"
    );
    revert_stored_once(&fleet, report).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_bug_with_no_culprit_is_repaired_by_a_verifier_as_in_the_embedded_mode() {
    let Some(b) = backends() else { return };
    let _servers = SERVERS.read().await;
    let s = scenarios::bug_since_the_first_commit(5);
    let fleet = Fleet::start(&b, FleetOptions::default()).await;
    let id = fleet.submit(request(&s, "E2E-REP")).await;
    let view = fleet.wait_decided(&id, Duration::from_secs(300)).await;
    let report = &view["report"];
    assert_eq!(
        report["verdict"],
        "deterministic",
        "{report}\n{}",
        fleet.logs()
    );
    let winner = &report["winner"];
    assert_eq!(winner["kind"], "patch", "{report}\n{}", fleet.logs());
    assert_eq!(winner["agent"], "code_path", "{winner}");
    assert_eq!(winner["status"], "VERIFIED", "{winner}");
    assert_eq!(winner_patch_files(report), vec!["app.py".to_string()]);
    assert!(
        winner["detail"]["screening"]["screened"]
            .as_array()
            .is_some_and(|c| !c.is_empty()),
        "{winner}"
    );
    // The same code decides in both modes: the same edit wins.
    let local = embedded_on(&s, "/usr/local/bin:/usr/bin:/bin".into()).await;
    let local_winner = local.winner.expect("an embedded repair");
    assert_eq!(
        winner["detail"]["edit"],
        local_winner.detail.unwrap()["edit"],
        "{winner}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_revert_that_is_not_verified_is_followed_by_a_repair_as_in_the_embedded_mode() {
    let Some(b) = backends() else { return };
    let _servers = SERVERS.read().await;
    let s = scenarios::regression_entangled_with_later_work(8, 2);
    let fleet = Fleet::start(&b, FleetOptions::default()).await;
    let id = fleet.submit(request(&s, "E2E-FUP")).await;
    let view = fleet.wait_decided(&id, Duration::from_secs(300)).await;
    let report = &view["report"];
    assert_eq!(
        report["verdict"],
        "regression",
        "{report}\n{}",
        fleet.logs()
    );
    assert_eq!(report["culprit"]["commit"], s.culprit.clone().unwrap());
    assert_eq!(report["culprit"]["verified"], false, "{report}");
    let hypotheses = report["hypotheses"].as_array().unwrap();
    let revert = hypotheses.iter().find(|h| h["kind"] == "revert").unwrap();
    assert_eq!(revert["number"], 1);
    assert_ne!(revert["status"], "VERIFIED", "{revert}");
    // The revert's verifier proposed the repair; another job proved it.
    let winner = &report["winner"];
    assert_eq!(winner["kind"], "patch", "{report}\n{}", fleet.logs());
    assert_eq!(winner["number"], 2, "{winner}");
    assert_eq!(winner["status"], "VERIFIED", "{winner}");
    assert_eq!(winner_patch_files(report), vec!["app.py".to_string()]);
    // The same code decides in both modes: the same edit wins.
    let local = embedded_on(&s, "/usr/local/bin:/usr/bin:/bin".into()).await;
    let local_winner = local.winner.expect("an embedded repair");
    assert_eq!(local_winner.number, 2);
    assert_eq!(
        winner["detail"]["edit"],
        local_winner.detail.unwrap()["edit"],
        "{winner}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_verifier_with_a_model_server_proves_the_llm_agents_fix() {
    let Some(b) = backends() else { return };
    let _servers = SERVERS.read().await;
    const KEY: &str = "sk-fleet-test-5d1e9b7a3c2f8e0d4b6a";
    let fake = FakeChat::start(vec![Answer::Reply(
        "app.py\n<<<<<<< SEARCH\n    end = size\n=======\n    end = start + size\n>>>>>>> REPLACE\n"
            .into(),
    )])
    .await;
    let secrets = tempfile::tempdir().unwrap();
    let key_file = secrets.path().join("llm-key");
    std::fs::write(&key_file, format!("{KEY}\n")).unwrap();
    // No culprit to revert and no template that passes the trap's hidden
    // tests: only the model's edit can be VERIFIED.
    let s = scenarios::overfitting_trap(3);
    let fleet = Fleet::start(
        &b,
        FleetOptions {
            verifier_settings: vec![
                "repair.mode=llm".into(),
                format!("repair.llm.base_url={}", fake.base_url),
                "repair.llm.model=fake-coder".into(),
            ],
            verifier_env: vec![(
                "TRACELAB__REPAIR__LLM__API_KEY_FILE".into(),
                key_file.display().to_string(),
            )],
            ..FleetOptions::default()
        },
    )
    .await;
    let id = fleet.submit(request(&s, "E2E-LLM")).await;
    let view = fleet.wait_decided(&id, Duration::from_secs(300)).await;
    let report = &view["report"];
    let winner = &report["winner"];
    assert_eq!(winner["status"], "VERIFIED", "{report}\n{}", fleet.logs());
    assert_eq!(winner["kind"], "patch", "{winner}");
    assert_eq!(winner["detail"]["source"], "model", "{winner}");
    assert_eq!(winner["detail"]["model"], "fake-coder", "{winner}");
    assert_eq!(winner_patch_files(report), vec!["app.py".to_string()]);
    let seen = fake.seen();
    assert_eq!(seen.len(), 1, "one call to the model server");
    // The key from the mounted file goes in the header, and nowhere else.
    assert_eq!(
        seen[0].authorization.as_deref(),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert!(!seen[0].body.contains(KEY));
    assert!(!fleet.logs().contains(KEY), "the key is in a service log");
    assert!(!view.to_string().contains(KEY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_verifier_told_to_use_a_model_without_one_refuses_to_start() {
    // Refused before it connects to anything.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_e2e-verifier"))
        .args(["--set", "repair.mode=llm"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("repair.llm.base_url"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_verifier_killed_mid_job_is_replaced_and_results_are_stored_once() {
    let Some(b) = backends() else { return };
    let _servers = SERVERS.read().await;
    // A slow test (0.4 s a run) so the verification takes several seconds.
    let s = scenarios::linear_regression(12, 7, 0.4);
    let mut fleet = Fleet::start(
        &b,
        FleetOptions {
            verifiers: 1,
            ack_wait_seconds: 3,
            ..FleetOptions::default()
        },
    )
    .await;
    let id = fleet.submit(request(&s, "KILL-1")).await;
    fleet.wait_until_verifying("verifier-1").await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    fleet.kill("verifier-1");
    fleet.add_verifier("verifier-2");
    let view = fleet.wait_decided(&id, Duration::from_secs(300)).await;
    assert_eq!(
        view["state"],
        "WAITING_FOR_REVIEW",
        "{view}\n{}",
        fleet.logs()
    );
    let report = &view["report"];
    assert_eq!(report["culprit"]["commit"], s.culprit.as_deref().unwrap());
    assert_eq!(report["winner"]["status"], "VERIFIED");
    let hid = revert_stored_once(&fleet, report).await;
    assert!(
        fleet.log_of("verifier-2").contains("verifying"),
        "the job was not redelivered to the second verifier\n{}",
        fleet.logs()
    );
    let store = fleet.store().await;
    assert_eq!(store.processed_count("verifier").await.unwrap(), 1);
    assert_eq!(
        store.verified_by(&hid).await.unwrap().as_deref(),
        Some("verifier-2")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_poison_message_on_every_subject_is_dead_lettered_and_the_fleet_keeps_going() {
    let Some(b) = backends() else { return };
    let _servers = SERVERS.read().await;
    let fleet = Fleet::start(&b, FleetOptions::default()).await;
    let topology = fleet.topology();
    let bus = JetStreamBus::connect(&b.nats, topology.clone())
        .await
        .unwrap();
    // Every subject a service consumes gets garbage: the verifiers' work
    // queue, the investigator's requests, the arbiter's two steps, the
    // policy's suggestions and ingest's raw intake.
    let subjects = [
        topology.verify_jobs(),
        topology.investigation_step("poison", "requested"),
        topology.investigation_step("poison", "arbitrate.proposed"),
        topology.investigation_step("poison", "arbitrate.verified.1"),
        topology.evidence("suggested"),
        topology.intake("ci-failures"),
    ];
    for (i, subject) in subjects.iter().enumerate() {
        bus.publish(Message::new(
            subject.clone(),
            format!("poison-{i}"),
            &b"\xff\x00 not a protobuf job"[..],
        ))
        .await
        .unwrap();
    }
    let mut dlq = bus
        .consumer(
            ConsumerSpec::new(topology.dead_letter_stream(), "e2e-dlq")
                .filter(topology.dead_letters()),
        )
        .await
        .unwrap();
    let mut letters = std::collections::BTreeMap::new();
    while letters.len() < subjects.len() {
        let letter = dlq
            .next(Duration::from_secs(60))
            .await
            .unwrap()
            .unwrap_or_else(|| {
                panic!(
                    "dead letters for {:?} only\n{}",
                    letters.keys().collect::<Vec<_>>(),
                    fleet.logs()
                )
            });
        let meta = DeadLetter::read(&letter.message).expect("dead-letter headers");
        assert!(meta.original_id.starts_with("poison-"), "{meta:?}");
        letters.insert(
            meta.original_subject.clone(),
            (meta, letter.message.payload.clone()),
        );
        letter.ack().await.unwrap();
    }
    for subject in &subjects {
        let (meta, payload) = &letters[subject];
        assert_eq!(meta.delivered, 1, "poison is not retried: {meta:?}");
        assert!(!meta.error.is_empty(), "{meta:?}");
        // Raw intake is dead-lettered by reference, the rest with the payload.
        assert_eq!(
            payload.is_empty(),
            *subject == topology.intake("ci-failures")
        );
    }

    // The same services still do real work.
    let s = scenarios::linear_regression(6, 3, 0.0);
    let id = fleet.submit(request(&s, "AFTER-POISON")).await;
    let view = fleet.wait_decided(&id, Duration::from_secs(300)).await;
    assert_eq!(view["report"]["winner"]["status"], "VERIFIED", "{view}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_verifiers_share_twelve_hypotheses_and_each_is_processed_once() {
    let Some(b) = backends() else { return };
    let _servers = SERVERS.read().await;
    let fleet = Fleet::start(
        &b,
        FleetOptions {
            verifiers: 3,
            ..FleetOptions::default()
        },
    )
    .await;
    let scenarios: Vec<Scenario> = (0..12)
        .map(|i| scenarios::linear_regression(6, 1 + i % 5, 0.05))
        .collect();
    let mut ids = Vec::new();
    for (i, s) in scenarios.iter().enumerate() {
        ids.push(fleet.submit(request(s, &format!("SHARE-{i}"))).await);
    }
    let store = fleet.store().await;
    let mut verified = Vec::new();
    for (id, s) in ids.iter().zip(&scenarios) {
        let view = fleet.wait_decided(id, Duration::from_secs(600)).await;
        let report = &view["report"];
        assert_eq!(
            report["culprit"]["commit"],
            s.culprit.as_deref().unwrap(),
            "{view}"
        );
        assert_eq!(report["winner"]["status"], "VERIFIED");
        verified.push(revert_stored_once(&fleet, report).await);
    }
    assert_eq!(
        store.processed_count("verifier").await.unwrap(),
        12,
        "each of the twelve jobs recorded exactly once"
    );
    let mut by = std::collections::BTreeMap::<String, u32>::new();
    for hid in &verified {
        let who = store.verified_by(hid).await.unwrap().expect("verified_by");
        *by.entry(who).or_default() += 1;
    }
    eprintln!("twelve hypotheses verified by: {by:?}");
    assert_eq!(by.values().sum::<u32>(), 12);
}

/// Restarts one shared server while an investigation is in flight; the
/// investigation still ends with the right, verified culprit.
async fn survives_restart(b: &Backends, what: &str) {
    let _servers = SERVERS.write().await;
    let s = scenarios::linear_regression(16, 9, 0.3);
    let fleet = Fleet::start(b, FleetOptions::default()).await;
    let id = fleet.submit(request(&s, "RESTART-1")).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    tracelab_e2e::backends_script(what);
    let view = fleet.wait_decided(&id, Duration::from_secs(600)).await;
    assert_eq!(
        view["state"],
        "WAITING_FOR_REVIEW",
        "{view}\n{}",
        fleet.logs()
    );
    assert_eq!(
        view["report"]["culprit"]["commit"],
        s.culprit.as_deref().unwrap()
    );
    assert_eq!(view["report"]["winner"]["status"], "VERIFIED");
    revert_stored_once(&fleet, &view["report"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_nats_restart_mid_investigation_loses_nothing() {
    let Some(b) = backends() else { return };
    survives_restart(&b, "restart-nats").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_postgres_restart_mid_investigation_loses_nothing() {
    let Some(b) = backends() else { return };
    survives_restart(&b, "restart-postgres").await;
}

/// `tracelab report`'s payload for the scenario's failing pytest run, naming `repository`.
fn ci_failure_report(s: &Scenario, repository: &str, job: &str) -> Value {
    json!({
        "schema": 1,
        "repository": repository,
        "commit": s.head,
        "branch": "main",
        "job": {"provider": "local", "id": job, "name": "test"},
        "reports": [{"path": "junit.xml", "content": pytest_junit(s.repo.path())}],
        "environment": {"os": "linux", "arch": "x86_64"},
        "created_at": 1_780_000_000u64,
    })
}

/// Posts a CI failure report to ingest; returns the first evidence id.
async fn post_ci_failure(fleet: &Fleet, report: &Value) -> String {
    let answer = fleet
        .http()
        .post(format!("{}/v1/ci-failures", fleet.ingest))
        .json(report)
        .send()
        .await
        .expect("POST /v1/ci-failures");
    let status = answer.status();
    let answer: Value = answer.json().await.expect("JSON");
    assert_eq!(status, 202, "{answer}\n{}", fleet.logs());
    answer["evidence_ids"][0]
        .as_str()
        .unwrap_or_else(|| panic!("no evidence id in {answer}"))
        .to_string()
}

/// The investigation the failure-group policy started from `evidence_id`.
async fn started_by_policy(fleet: &Fleet, store: &PgStore, evidence_id: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let started = store.investigations_of_evidence(evidence_id).await.unwrap();
        if let Some(id) = started.first() {
            return id.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no investigation started from the suggestion\n{}",
            fleet.logs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ci_evidence_through_ingest_is_investigated_by_policy_and_on_request() {
    let Some(b) = backends() else { return };
    let _servers = SERVERS.read().await;
    let s = scenarios::regression_behind_broken_range();
    let fleet = Fleet::start(&b, FleetOptions::default()).await;
    let repository = s.repo.path().display().to_string();

    // The CI step (`tracelab report`) posts the test report to ingest.
    let evidence_id = post_ci_failure(&fleet, &ci_failure_report(&s, &repository, "1")).await;

    // The group is new on a protected branch (main), so ingest's policy
    // suggests an investigation and the investigator starts it by itself,
    // from the evidence alone: the test command, the failing commit and the
    // repository come from what ingest stored.
    let store = fleet.store().await;
    let automatic = started_by_policy(&fleet, &store, &evidence_id).await;
    // A person can start one from the same evidence through the API, too.
    let manual = fleet
        .submit(json!({"evidence_id": evidence_id, "issue_id": "E2E-EV", "parallelism": 2}))
        .await;
    for id in [&automatic, &manual] {
        let view = fleet.wait_decided(id, Duration::from_secs(300)).await;
        assert_eq!(
            view["state"],
            "WAITING_FOR_REVIEW",
            "{view}\n{}",
            fleet.logs()
        );
        assert_eq!(
            view["test_command"],
            "python3 -m pytest -q test_app.py::test_add"
        );
        assert_eq!(view["repository"], repository);
        assert_eq!(
            view["report"]["culprit"]["commit"],
            s.culprit.as_deref().unwrap(),
            "{view}"
        );
        assert_eq!(view["report"]["winner"]["status"], "VERIFIED");
        let linked = store
            .investigation_evidence(&tracelab_domain::ids::InvestigationId(id.to_string()))
            .await
            .unwrap();
        assert_eq!(linked, vec![evidence_id.clone()]);
    }
    assert_eq!(
        store
            .investigations_of_evidence(&evidence_id)
            .await
            .unwrap(),
        vec![automatic, manual],
        "the suggestion started exactly one investigation"
    );

    // The indexer answers where to look for the same failure.
    use tracelab_proto::index::v1::{LocateRequest, retrieval_client::RetrievalClient};
    let mut indexer = RetrievalClient::connect(fleet.indexer.clone())
        .await
        .expect("indexer gRPC");
    let located = indexer
        .locate(LocateRequest {
            repository: repository.clone(),
            evidence: pytest_junit(s.repo.path()),
            rev: String::new(),
            top: 5,
            ..Default::default()
        })
        .await
        .expect("Locate")
        .into_inner();
    let files: Vec<&str> = located.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(files.first(), Some(&"app.py"), "{files:?}");

    // The error signature leads back to this failure and how it was fixed.
    let stored = store
        .evidence(&evidence_id)
        .await
        .unwrap()
        .expect("evidence");
    let signature = stored.body["error_signature"]
        .as_str()
        .expect("error signature");
    let past = indexer
        .past_failures(tracelab_proto::index::v1::PastFailuresRequest {
            error_signature: signature.to_string(),
            stack_signature: String::new(),
            repository: repository.clone(),
            limit: 5,
        })
        .await
        .expect("PastFailures")
        .into_inner();
    assert_eq!(past.failures.len(), 1, "{past:?}");
    let failure = &past.failures[0];
    assert_eq!(failure.count, 1);
    let mut fixes: Vec<(&str, &str, &str)> = failure
        .investigations
        .iter()
        .map(|i| (i.verdict.as_str(), i.culprit.as_str(), i.fix_kind.as_str()))
        .collect();
    fixes.dedup();
    assert_eq!(
        fixes,
        vec![("regression", s.culprit.as_deref().unwrap(), "revert")],
        "{failure:?}"
    );
    assert_eq!(failure.investigations.len(), 2);
    assert!(
        failure
            .investigations
            .iter()
            .all(|i| i.fix_branch.starts_with("ai-debug/")),
        "{failure:?}"
    );

    // Evidence that names no runnable test is refused with the reason.
    let refused = fleet
        .http()
        .post(format!("{}/api/investigations", fleet.api))
        .json(&json!({"evidence_id": "no-such-evidence"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 400);
}

/// A CI report names its repository by URL, as real ones do; the
/// investigator finds the fleet's checkout of it through its `repositories`
/// setting and investigates by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn evidence_naming_a_repository_url_is_investigated_in_its_mapped_checkout() {
    let Some(b) = backends() else { return };
    let _servers = SERVERS.read().await;
    let s = scenarios::regression_behind_broken_range();
    let checkout = s.repo.path().display().to_string();
    let options = FleetOptions {
        investigator_config: Some(format!(
            "[repositories]\n\"https://git.example.com/acme/calculator\" = {checkout:?}\n"
        )),
        ..FleetOptions::default()
    };
    let fleet = Fleet::start(&b, options).await;
    let url = "https://ci-bot:hunter2@git.example.com/acme/calculator.git";
    let evidence_id = post_ci_failure(&fleet, &ci_failure_report(&s, url, "2")).await;
    let store = fleet.store().await;
    let stored = store
        .evidence(&evidence_id)
        .await
        .unwrap()
        .expect("evidence");
    assert_eq!(
        stored.repository.as_deref(),
        Some("https://git.example.com/acme/calculator.git"),
        "credentials are not stored"
    );
    let id = started_by_policy(&fleet, &store, &evidence_id).await;
    let view = fleet.wait_decided(&id, Duration::from_secs(300)).await;
    assert_eq!(
        view["state"],
        "WAITING_FOR_REVIEW",
        "{view}\n{}",
        fleet.logs()
    );
    assert_eq!(view["repository"], checkout);
    assert_eq!(
        view["report"]["culprit"]["commit"],
        s.culprit.as_deref().unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_investigation_whose_api_died_before_publishing_is_still_investigated() {
    use tracelab_fleet::events::ids;
    use tracelab_proto::events::v1::{InvestigationRequested, Limits};
    use tracelab_store::{Created, NewInvestigation};
    let Some(b) = backends() else { return };
    let _servers = SERVERS.read().await;
    let s = scenarios::linear_regression(8, 4, 0.0);
    let fleet = Fleet::start(&b, FleetOptions::default()).await;
    let store = fleet.store().await;
    // What the API commits (the investigation with its `requested` event in
    // the outbox) — and then it dies: nothing is published.
    let id = tracelab_domain::ids::InvestigationId::generate();
    let repository = s.repo.path().display().to_string();
    let event = InvestigationRequested {
        investigation_id: id.0.clone(),
        repository: repository.clone(),
        test_command: s.test_command.clone(),
        issue_id: "E2E-OUTBOX".into(),
        limits: Some(Limits {
            parallelism: 2,
            command_timeout_ms: 30_000,
            verification_deadline_ms: 600_000,
            ..Limits::default()
        }),
        requested_by: "a crashed API".into(),
        ..InvestigationRequested::default()
    };
    let topology = fleet.topology();
    let announce = tracelab_fleet::outbox::message(
        topology.investigation_step(&id.0, "requested"),
        ids::requested(&id.0),
        &event,
    );
    let request = json!({"repository": repository, "test_command": s.test_command});
    let created = store
        .create_requested(&NewInvestigation {
            id: &id,
            repository: &repository,
            test_command: &s.test_command,
            request: &request,
            evidence: &[],
            dedupe_key: None,
            announce: &announce,
            started_by: "e2e",
            role: "admin",
        })
        .await
        .unwrap();
    assert_eq!(created, Created::New);

    // The relay of the surviving services publishes it after the grace.
    let view = fleet.wait_decided(&id.0, Duration::from_secs(300)).await;
    assert_eq!(view["state"], "WAITING_FOR_REVIEW", "{}", fleet.logs());
    assert_eq!(
        view["report"]["culprit"]["commit"],
        s.culprit.as_deref().unwrap(),
        "{view}"
    );
    assert!(
        fleet
            .logs()
            .contains("outbox relay published an event its writer did not"),
        "{}",
        fleet.logs()
    );
    // The decided event went out with the decision: nothing is left waiting.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while store.outbox_len().await.unwrap() > 0 {
        assert!(std::time::Instant::now() < deadline, "outbox not drained");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Requests the fleet must not run are refused at submission with the
/// reason (400), before anything is stored: code on the command line, a
/// program inside the repository, a command timeout beyond the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_api_refuses_inline_code_repository_programs_and_unbounded_timeouts() {
    let Some(b) = backends() else { return };
    let _servers = SERVERS.read().await;
    let s = scenarios::linear_regression(3, 1, 0.0);
    let fleet = Fleet::start(&b, FleetOptions::default()).await;
    let cases = [
        (
            json!({"test_command": "python3 -c 'import os; print(open(\"/proc/1/environ\").read())'"}),
            "code given on the command line",
        ),
        (
            json!({"test_command": "./python3 test_app.py"}),
            "inside the repository",
        ),
        (
            json!({"command_timeout_ms": 10 * 3600 * 1000u64}),
            "longer than the limit",
        ),
    ];
    for (change, reason) in cases {
        let mut body = request(&s, "E2E-REFUSE");
        for (k, v) in change.as_object().unwrap() {
            body[k] = v.clone();
        }
        let refused = fleet
            .http()
            .post(format!("{}/api/investigations", fleet.api))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 400, "{body}");
        let answer: Value = refused.json().await.unwrap();
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains(reason),
            "{answer}"
        );
    }
    let (status, list) = fleet.get("/api/investigations").await;
    assert_eq!(status, 200);
    assert_eq!(list["investigations"], json!([]), "nothing was stored");
}

/// Secure by default: without tokens and without the explicit development
/// flag, the services that serve callers refuse to start and say why.
#[test]
fn services_without_tokens_refuse_to_start() {
    for (service, what) in [
        ("investigator", "no API tokens configured"),
        ("ingest", "no intake tokens configured"),
        ("indexer", "no indexer tokens configured"),
    ] {
        let ports = [
            tracelab_testkit::ports::free_port(),
            tracelab_testkit::ports::free_port(),
        ];
        let out = std::process::Command::new(tracelab_e2e::binary(service))
            .args(["--set", &format!("listen=127.0.0.1:{}", ports[0])])
            .args(["--set", &format!("grpc_listen=127.0.0.1:{}", ports[1])])
            .output()
            .expect("start the service");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{service} started: {stderr}");
        assert!(stderr.contains(what), "{service}: {stderr}");
        assert!(
            stderr.contains("allow_unauthenticated"),
            "{service}: {stderr}"
        );
    }
}

/// With tokens configured, every route of the REST API answers 401 without
/// a token (or with an unknown one) and 403 below its role, and every method
/// of the gRPC API UNAUTHENTICATED and PERMISSION_DENIED.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_api_route_answers_401_without_a_token_and_403_below_its_role() {
    let Some(b) = backends() else { return };
    let _servers = SERVERS.read().await;
    let (viewer, reviewer) = ("viewer-token-0123456789", "reviewer-token-0123456789");
    let options = FleetOptions {
        investigator_config: Some(format!(
            "[[tokens]]\nname = \"v\"\ntoken = \"{viewer}\"\nrole = \"viewer\"\n\
             [[tokens]]\nname = \"r\"\ntoken = \"{reviewer}\"\nrole = \"reviewer\"\n"
        )),
        ..FleetOptions::default()
    };
    let fleet = Fleet::start(&b, options).await;
    let s = scenarios::linear_regression(3, 1, 0.0);
    let id = "0192f0c4-0000-7000-8000-000000000000";
    // (method, path, body, least role: 0 viewer, 1 reviewer)
    let routes: [(&str, String, Option<Value>, u8); 8] = [
        ("GET", "/api/investigations".into(), None, 0),
        (
            "POST",
            "/api/investigations".into(),
            Some(request(&s, "AUTH")),
            1,
        ),
        ("GET", format!("/api/investigations/{id}"), None, 0),
        (
            "GET",
            format!("/api/investigations/{id}/hypotheses"),
            None,
            0,
        ),
        (
            "POST",
            format!("/api/investigations/{id}/approve"),
            Some(json!({})),
            1,
        ),
        (
            "POST",
            format!("/api/investigations/{id}/reject"),
            Some(json!({})),
            1,
        ),
        (
            "POST",
            format!("/api/investigations/{id}/pull-request"),
            None,
            1,
        ),
        ("GET", format!("/api/hypotheses/{id}-h1/evidence"), None, 0),
    ];
    let call = |method: &str, path: &str, body: &Option<Value>, token: Option<&str>| {
        let mut r = fleet
            .http()
            .request(method.parse().unwrap(), format!("{}{path}", fleet.api));
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        if let Some(body) = body {
            r = r.json(body);
        }
        r.send()
    };
    for (method, path, body, least) in &routes {
        for token in [None, Some("not-a-known-token-at-all")] {
            let status = call(method, path, body, token).await.unwrap().status();
            assert_eq!(status, 401, "{method} {path} with {token:?}");
        }
        let as_viewer = call(method, path, body, Some(viewer))
            .await
            .unwrap()
            .status();
        if *least == 1 {
            assert_eq!(as_viewer, 403, "{method} {path} as viewer");
        } else {
            assert!(
                ![401, 403].contains(&as_viewer.as_u16()),
                "{method} {path} as viewer: {as_viewer}"
            );
        }
        let as_reviewer = call(method, path, body, Some(reviewer))
            .await
            .unwrap()
            .status();
        assert!(
            ![401, 403].contains(&as_reviewer.as_u16()),
            "{method} {path} as reviewer: {as_reviewer}"
        );
    }

    // The same for every method of the gRPC API: UNAUTHENTICATED and
    // PERMISSION_DENIED, with the token in the `authorization` metadata.
    use tonic::Code;
    use tracelab_proto::api::v1 as api;
    let channel = tonic::transport::Endpoint::from_shared(fleet.grpc.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let create = api::CreateInvestigationRequest {
        repository: s.repo.path().display().to_string(),
        test_command: s.test_command.clone(),
        ..Default::default()
    };
    let get = api::GetInvestigationRequest { id: id.into() };
    let decide = api::DecisionRequest {
        id: id.into(),
        reason: String::new(),
    };
    // (method, least role: 0 viewer, 1 reviewer)
    let methods = [
        ("Create", 1),
        ("Get", 0),
        ("ListHypotheses", 0),
        ("GetEvidence", 0),
        ("Approve", 1),
        ("Reject", 1),
        ("OpenPullRequest", 1),
    ];
    for (method, least) in methods {
        let grpc_call = |token: Option<&str>| {
            let mut client = api::investigations_client::InvestigationsClient::new(channel.clone());
            let token = token.map(|t| format!("Bearer {t}"));
            let (create, get, decide) = (create.clone(), get.clone(), decide.clone());
            async move {
                fn with<T>(message: T, token: &Option<String>) -> tonic::Request<T> {
                    let mut r = tonic::Request::new(message);
                    if let Some(t) = token {
                        r.metadata_mut().insert("authorization", t.parse().unwrap());
                    }
                    r
                }
                let code = |r: Result<(), tonic::Status>| r.err().map(|e| e.code());
                match method {
                    "Create" => code(client.create(with(create, &token)).await.map(drop)),
                    "Get" => code(client.get(with(get, &token)).await.map(drop)),
                    "ListHypotheses" => {
                        code(client.list_hypotheses(with(get, &token)).await.map(drop))
                    }
                    "GetEvidence" => code(
                        client
                            .get_evidence(with(
                                api::GetHypothesisRequest {
                                    id: format!("{}-h1", get.id),
                                },
                                &token,
                            ))
                            .await
                            .map(drop),
                    ),
                    "Approve" => code(client.approve(with(decide, &token)).await.map(drop)),
                    "OpenPullRequest" => {
                        code(client.open_pull_request(with(get, &token)).await.map(drop))
                    }
                    _ => code(client.reject(with(decide, &token)).await.map(drop)),
                }
            }
        };
        for token in [None, Some("not-a-known-token-at-all")] {
            assert_eq!(
                grpc_call(token).await,
                Some(Code::Unauthenticated),
                "{method} with {token:?}"
            );
        }
        let as_viewer = grpc_call(Some(viewer)).await;
        if least == 1 {
            assert_eq!(
                as_viewer,
                Some(Code::PermissionDenied),
                "{method} as viewer"
            );
        } else {
            assert!(
                !matches!(
                    as_viewer,
                    Some(Code::Unauthenticated | Code::PermissionDenied)
                ),
                "{method} as viewer: {as_viewer:?}"
            );
        }
        let as_reviewer = grpc_call(Some(reviewer)).await;
        assert!(
            !matches!(
                as_reviewer,
                Some(Code::Unauthenticated | Code::PermissionDenied)
            ),
            "{method} as reviewer: {as_reviewer:?}"
        );
    }
}

/// The fleet with the Docker sandbox (the investigator's reproduction and
/// search, the verifier's contract): the same diagnosis, and every stored
/// experiment says it ran in a container of the sandbox image.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_fleet_in_docker_sandboxes_verifies_the_culprit() {
    let Some(b) = backends() else { return };
    if tracelab_testkit::backends::backend("TRACELAB_TEST_DOCKER").is_none() {
        return;
    }
    let _servers = SERVERS.read().await;
    let s = scenarios::linear_regression(6, 3, 0.0);
    let options = FleetOptions {
        sandbox: "docker",
        ..FleetOptions::default()
    };
    let fleet = Fleet::start(&b, options).await;
    let id = fleet.submit(request(&s, "E2E-DOCKER")).await;
    let view = fleet.wait_decided(&id, Duration::from_secs(600)).await;
    let report = &view["report"];
    assert_eq!(
        report["verdict"],
        "regression",
        "{report}\n{}",
        fleet.logs()
    );
    assert_eq!(report["culprit"]["commit"], s.culprit.as_deref().unwrap());
    assert_eq!(report["winner"]["status"], "VERIFIED", "{report}");
    let winner = revert_stored_once(&fleet, report).await;
    let stored = fleet
        .store()
        .await
        .hypothesis(&winner)
        .await
        .unwrap()
        .unwrap();
    for e in &stored.experiments {
        assert!(
            e.sandbox.starts_with("docker@"),
            "{} ran in {}",
            e.command,
            e.sandbox
        );
    }
    assert!(
        report["reproduction"]["sandbox"]
            .as_str()
            .unwrap_or_default()
            .starts_with("docker@"),
        "{report}"
    );
}

/// SIGTERM drains: a verifier told to stop while it verifies finishes the
/// job in flight (within `fleet.drain_seconds`), stores the result, acks it
/// and exits cleanly; a verifier started afterwards never runs that job.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_verifier_stopped_mid_job_drains_it_and_exits_cleanly() {
    let Some(b) = backends() else { return };
    let _servers = SERVERS.read().await;
    // A slow test (0.4 s a run) so the verification takes several seconds.
    let s = scenarios::linear_regression(12, 7, 0.4);
    let mut fleet = Fleet::start(&b, FleetOptions::default()).await;
    let id = fleet.submit(request(&s, "DRAIN-1")).await;
    fleet.wait_until_verifying("verifier-1").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let status = fleet.terminate("verifier-1");
    assert!(status.success(), "{status}\n{}", fleet.logs());
    let log = fleet.log_of("verifier-1");
    assert!(log.contains("draining the job in flight"), "{log}");
    assert!(!log.contains("drain time over"), "{log}");
    fleet.add_verifier("verifier-2");
    let view = fleet.wait_decided(&id, Duration::from_secs(300)).await;
    let report = &view["report"];
    assert_eq!(report["winner"]["status"], "VERIFIED", "{report}");
    let hid = revert_stored_once(&fleet, report).await;
    let store = fleet.store().await;
    assert_eq!(
        store.verified_by(&hid).await.unwrap().as_deref(),
        Some("verifier-1"),
        "the drained verifier stored its result"
    );
    assert_eq!(store.processed_count("verifier").await.unwrap(), 1);
    assert!(
        !fleet.log_of("verifier-2").contains("verifying"),
        "the drained job ran again\n{}",
        fleet.logs()
    );
}
