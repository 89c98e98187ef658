//! Crash-consistency by real crashes. Each seeded run starts a fleet,
//! submits an investigation, waits until it reaches a point chosen by the
//! seed (just submitted, INVESTIGATING, VERIFYING — observed in the store,
//! not slept on), then crashes one process chosen by the seed: a service
//! with SIGKILL, nats-server with SIGKILL, PostgreSQL with an immediate
//! shutdown. The process is started again and the run checks, from the
//! outside:
//!
//! - the investigation reaches WAITING_FOR_REVIEW with the right culprit
//!   within the deadline (not stuck, not FAILED by the crash);
//! - exactly one `requested` and one `decided` event are on the stream
//!   (none lost, none doubled), and the outbox is empty;
//! - no hypothesis is left PENDING, and each one's experiments are stored
//!   once (rows = the stored hypothesis' experiments);
//! - no state transition is recorded twice (a doubled step would be);
//! - **each verification job ran as often as recorded**, counted through a
//!   side channel the product does not write: the fixture's test appends
//!   `<folder> <pid>` to a file outside the sandbox on every run, and each
//!   hypothesis' runs happen in its own `h<N>-…` worktree, one per attempt.
//!   One attempt ran exactly the stored experiments' runs; a second attempt
//!   is allowed only when the crash could interrupt a job (a verifier,
//!   NATS or PostgreSQL killed), and is counted in the summary;
//! - **evidence rows = accepted reports**: CI failure reports posted to
//!   ingest before, during and after the crash (retried until accepted) and
//!   one published on the JetStream intake queue are each stored once.
//!
//! `TRACELAB_CRASH_RUNS` (default 6: one per process kind),
//! `TRACELAB_CRASH_SEED` (default 1) and `TRACELAB_CRASH_FIRST` (the plan's
//! first index, default 0) choose the runs; `TRACELAB_CRASH_VICTIM`
//! and `TRACELAB_CRASH_POINT` (submitted, investigating, verifying) pin one
//! to reproduce a failure. The summary line is printed at the end
//! (`cargo test --test crash -- --nocapture`).

use serde_json::{Value, json};
use sqlx::Connection;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};
use tracelab_bus::{Bus, ConsumerSpec, JetStreamBus, Message};
use tracelab_domain::experiment::Step;
use tracelab_domain::hypothesis::{Hypothesis, HypothesisStatus};
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::state::InvestigationState;
use tracelab_e2e::{Backends, Fleet, FleetOptions, backends, backends_script};
use tracelab_store::{InvestigationStore, PgStore};
use tracelab_testkit::scenarios;

const VICTIMS: [&str; 6] = [
    "investigator",
    "arbiter",
    "verifier-1",
    "ingest",
    "nats",
    "postgres",
];

/// Where in the investigation the crash comes.
#[derive(Debug, Clone, Copy)]
enum Point {
    Submitted,
    Investigating,
    Verifying,
}

struct Run {
    seed: u64,
    victim: &'static str,
    point: Point,
    extra_delay: Duration,
}

impl Run {
    fn plan(seed: u64, index: u64) -> Run {
        let mut rng = fastrand::Rng::with_seed(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ index);
        // The first runs cover every process kind once; later ones draw.
        let victim = if let Ok(v) = std::env::var("TRACELAB_CRASH_VICTIM") {
            VICTIMS
                .into_iter()
                .find(|x| *x == v)
                .expect("a known victim")
        } else if (index as usize) < VICTIMS.len() {
            VICTIMS[index as usize]
        } else {
            VICTIMS[rng.usize(..VICTIMS.len())]
        };
        let point = match std::env::var("TRACELAB_CRASH_POINT")
            .map(|p| p.to_ascii_lowercase())
            .as_deref()
        {
            Ok("submitted") => Point::Submitted,
            Ok("investigating") => Point::Investigating,
            Ok("verifying") => Point::Verifying,
            _ => match rng.u8(..3) {
                0 => Point::Submitted,
                1 => Point::Investigating,
                _ => Point::Verifying,
            },
        };
        Run {
            seed,
            victim,
            point,
            extra_delay: Duration::from_millis(rng.u64(..800)),
        }
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The stored state, riding out a PostgreSQL that is down.
async fn state(store: &PgStore, id: &InvestigationId) -> Option<InvestigationState> {
    store
        .investigation(id)
        .await
        .ok()
        .flatten()
        .map(|r| r.state)
}

async fn wait_for(store: &PgStore, id: &InvestigationId, point: Point, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let reached = match (point, state(store, id).await) {
            (Point::Submitted, _) => true,
            (Point::Investigating, Some(s)) => s != InvestigationState::Created,
            (Point::Verifying, Some(s)) => !matches!(
                s,
                InvestigationState::Created
                    | InvestigationState::ContextLoading
                    | InvestigationState::Investigating
            ),
            _ => false,
        };
        if reached || Instant::now() > deadline {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Messages on `subject` in the investigations stream, read from the start.
async fn events_on(bus: &JetStreamBus, subject: String, durable: &str) -> usize {
    let spec = ConsumerSpec::new(bus.topology().investigations_stream(), durable).filter(subject);
    let mut consumer = bus.consumer(spec).await.expect("audit consumer");
    let mut count = 0;
    while let Some(d) = consumer
        .next(Duration::from_secs(2))
        .await
        .expect("read the stream")
    {
        count += 1;
        d.ack().await.expect("ack");
    }
    count
}

#[derive(Default)]
struct Summary {
    runs: u64,
    kills: BTreeMap<&'static str, u64>,
    completed: u64,
    /// Verification jobs that ran more than once (allowed after a crash
    /// that can interrupt one), and the crashes that caused them.
    re_executed: BTreeMap<&'static str, u64>,
    evidence: u64,
    longest_recovery: Duration,
}

/// Victims whose crash can interrupt a running verification job (its
/// result or its ack lost), so the job may legitimately run again.
fn may_interrupt_a_job(victim: &str) -> bool {
    victim.starts_with("verifier") || victim == "nats" || victim == "postgres"
}

/// Test runs the verification itself made for `h` (not the reproduction's
/// runs it carries as its first steps).
fn runs_of_the_job(h: &Hypothesis) -> u32 {
    h.experiments
        .iter()
        .filter(|e| {
            e.step != Step::Reproduction
                && e.note.as_deref() != Some(tracelab_engine::verify::REUSED_REPRODUCTION)
        })
        .map(|e| e.effective_counts().runs)
        .sum()
}

/// The side channel: each hypothesis number's attempts (worktree folders in
/// the order they first ran) with the number of test runs in each.
fn attempts_by_hypothesis(run_log: &Path) -> BTreeMap<u32, Vec<(String, u32)>> {
    let text = std::fs::read_to_string(run_log).unwrap_or_default();
    let mut attempts: BTreeMap<u32, Vec<(String, u32)>> = BTreeMap::new();
    for line in text.lines() {
        let folder = line.split(' ').next().unwrap_or_default();
        // `h<N>-<unique>`: a hypothesis worktree; probes are `probe-…`.
        let Some(number) = folder
            .strip_prefix('h')
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(n, _)| n.parse::<u32>().ok())
        else {
            continue;
        };
        let list = attempts.entry(number).or_default();
        match list.iter_mut().find(|(f, _)| f == folder) {
            Some((_, runs)) => *runs += 1,
            None => list.push((folder.to_string(), 1)),
        }
    }
    attempts
}

/// A CI failure report (a JUnit file with one failure) for job `job`:
/// distinct jobs are distinct content, hence distinct evidence.
fn ci_report(head: &str, job: &str) -> Value {
    let junit = format!(
        "<testsuite name=\"crash\" tests=\"1\" failures=\"1\"><testcase classname=\"test_app\" name=\"test_add\" time=\"0.01\"><failure message=\"AssertionError: add(2, 2) returned 5\">Traceback (most recent call last):\n  File \"test_app.py\", line 6, in test_add\n    assert add(2, 2) == 4\nAssertionError: add(2, 2) returned 5 (job {job})</failure></testcase></testsuite>"
    );
    json!({
        "schema": 1,
        "repository": "crash-test",
        "commit": head,
        // Not a protected branch: the failure-group policy stays quiet, so
        // the run's only investigation is the submitted one.
        "branch": "crash/evidence",
        "job": {"provider": "local", "id": job, "name": "test"},
        "reports": [{"path": "junit.xml", "content": junit}],
        "environment": {"os": "linux", "arch": "x86_64"},
        "created_at": 1_780_000_000u64,
    })
}

/// Posts a report to ingest until it is accepted (riding out an ingest
/// that is down or restarting, as a CI step's client does); its evidence ids.
async fn post_until_accepted(
    http: reqwest::Client,
    ingest: String,
    report: Value,
    label: String,
) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let answer = http
            .post(format!("{ingest}/v1/ci-failures"))
            .timeout(Duration::from_secs(10))
            .json(&report)
            .send()
            .await;
        if let Ok(answer) = answer
            && answer.status().as_u16() == 202
            && let Ok(body) = answer.json::<Value>().await
        {
            return body["evidence_ids"]
                .as_array()
                .map(|ids| {
                    ids.iter()
                        .filter_map(|i| i.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
        }
        assert!(
            Instant::now() < deadline,
            "{label}: ingest never accepted the report {}",
            report["job"]["id"]
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Rows in the fleet's evidence table.
async fn evidence_rows(fleet: &Fleet) -> Option<i64> {
    let mut db = sqlx::PgConnection::connect(&fleet.backends.postgres)
        .await
        .ok()?;
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT count(*) FROM \"{}\".evidence",
        fleet.schema
    )))
    .fetch_one(&mut db)
    .await
    .ok()
}

async fn crash_run(b: &Backends, run: &Run, index: u64, summary: &mut Summary) {
    let side_channel = tempfile::tempdir().expect("side-channel folder");
    let run_log = side_channel.path().join("runs.log");
    let s = scenarios::linear_regression_logged(10, 6, 0.3, &run_log);
    let mut fleet = Fleet::start(b, FleetOptions::default()).await;
    let store = fleet.store().await;
    let label = format!(
        "run {index} (seed {}): {} at {:?} + {:?}",
        run.seed, run.victim, run.point, run.extra_delay
    );
    let id = InvestigationId(
        fleet
            .submit(json!({
                "repository": s.repo.path().display().to_string(),
                "test_command": s.test_command,
                "issue_id": format!("CRASH-{index}"),
                "parallelism": 2,
                "command_timeout_ms": 30000,
            }))
            .await,
    );
    // Evidence in flight through both intake paths: a report over HTTP,
    // and one on the JetStream intake queue.
    let (http, ingest) = (fleet.http().clone(), fleet.ingest.clone());
    let post = |job: &str| {
        post_until_accepted(
            http.clone(),
            ingest.clone(),
            ci_report(&s.head, job),
            label.clone(),
        )
    };
    let mut accepted: BTreeSet<String> = BTreeSet::new();
    accepted.extend(post("before").await);
    let per_report = accepted.len() as i64;
    let topology = fleet.topology();
    {
        let bus = JetStreamBus::connect(&b.nats, topology.clone())
            .await
            .expect("connect to JetStream");
        let queued = serde_json::to_vec(&ci_report(&s.head, "queued")).expect("JSON");
        bus.publish(Message::new(
            topology.intake("ci-failures"),
            format!("crash-{index}-queued"),
            queued,
        ))
        .await
        .expect("publish on the intake queue");
    }
    wait_for(&store, &id, run.point, Duration::from_secs(60)).await;
    tokio::time::sleep(run.extra_delay).await;
    let killed_at = Instant::now();
    match run.victim {
        "nats" => backends_script("crash-nats"),
        "postgres" => backends_script("crash-postgres"),
        service => {
            fleet.kill(service);
            // A report arrives while the victim is down.
            let during = tokio::spawn(post("during"));
            tokio::time::sleep(Duration::from_millis(500)).await;
            fleet.restart(service).await;
            accepted.extend(during.await.expect("the report posted during the crash"));
        }
    }
    accepted.extend(post("after").await);
    *summary.kills.entry(run.victim).or_default() += 1;

    // Not stuck: a final state within the deadline.
    let deadline = Instant::now() + Duration::from_secs(180);
    let row = loop {
        match store.investigation(&id).await {
            Ok(Some(row))
                if matches!(
                    row.state,
                    InvestigationState::WaitingForReview
                        | InvestigationState::Failed
                        | InvestigationState::Blocked
                ) =>
            {
                break row;
            }
            _ => {}
        }
        assert!(
            Instant::now() < deadline,
            "{label}: stuck in {:?}\n{}",
            state(&store, &id).await,
            fleet.logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let recovery = killed_at.elapsed();
    assert_eq!(
        row.state,
        InvestigationState::WaitingForReview,
        "{label}: {:?}\n{}",
        store.transitions(&id).await,
        fleet.logs()
    );
    assert_eq!(
        row.culprit.as_deref(),
        s.culprit.as_deref(),
        "{label}: wrong culprit"
    );

    // Nothing lost, nothing doubled on the bus.
    let bus = JetStreamBus::connect(&b.nats, topology.clone())
        .await
        .expect("connect to JetStream");
    let requested = events_on(
        &bus,
        topology.investigation_step(&id.0, "requested"),
        "audit-requested",
    )
    .await;
    let decided = events_on(
        &bus,
        topology.investigation_step(&id.0, "decided"),
        "audit-decided",
    )
    .await;
    assert_eq!((requested, decided), (1, 1), "{label}: requested, decided");
    let outbox_deadline = Instant::now() + Duration::from_secs(30);
    while store.outbox_len().await.unwrap_or(1) > 0 {
        assert!(
            Instant::now() < outbox_deadline,
            "{label}: outbox not drained"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Each hypothesis decided once, its experiments stored once, and its
    // job run as often as recorded (the side channel, not the database).
    let attempts = attempts_by_hypothesis(&run_log);
    for h in store.hypotheses(&id).await.expect("hypotheses") {
        assert_ne!(h.status, HypothesisStatus::Pending, "{label}: {}", h.id);
        assert_eq!(
            store.experiment_count(&h.id).await.unwrap(),
            h.experiments.len() as i64,
            "{label}: experiments of {} stored more than once",
            h.id
        );
        let recorded = runs_of_the_job(&h);
        let ran = attempts.get(&h.number).cloned().unwrap_or_default();
        if recorded == 0 {
            assert!(
                ran.is_empty(),
                "{label}: {} ran {ran:?} but recorded no run",
                h.id
            );
            continue;
        }
        assert!(
            ran.iter().any(|(_, runs)| *runs == recorded),
            "{label}: no attempt of {} ran the {recorded} recorded runs: {ran:?}",
            h.id
        );
        assert!(
            ran.iter().all(|(_, runs)| *runs <= recorded),
            "{label}: an attempt of {} ran more than the {recorded} recorded runs: {ran:?}",
            h.id
        );
        if ran.len() > 1 {
            assert!(
                may_interrupt_a_job(run.victim),
                "{label}: the job of {} ran {} times though the crash could not interrupt it: {ran:?}",
                h.id,
                ran.len()
            );
            *summary.re_executed.entry(run.victim).or_default() += 1;
        }
    }

    // Evidence: every accepted report stored, once (the queued one too).
    let expected = accepted.len() as i64 + per_report;
    let evidence_deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let rows = evidence_rows(&fleet).await;
        if rows == Some(expected) {
            break;
        }
        assert!(
            rows < Some(expected) && Instant::now() < evidence_deadline,
            "{label}: {rows:?} evidence rows for {expected} accepted (ids {accepted:?})\n{}",
            fleet.logs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for evidence in &accepted {
        assert!(
            store.evidence(evidence).await.expect("evidence").is_some(),
            "{label}: accepted evidence {evidence} is not stored"
        );
    }
    summary.evidence += expected as u64;
    let transitions = store.transitions(&id).await.expect("transitions");
    let mut seen = std::collections::BTreeSet::new();
    for t in &transitions {
        assert!(
            seen.insert((t.from.as_str(), t.to.as_str())),
            "{label}: transition {:?} → {:?} recorded twice: {transitions:?}",
            t.from,
            t.to
        );
    }
    summary.completed += 1;
    summary.longest_recovery = summary.longest_recovery.max(recovery);
    eprintln!("crash {label}: decided {recovery:.1?} after the crash");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn seeded_crashes_of_every_process_lose_double_and_strand_nothing() {
    let Some(b) = backends() else { return };
    let runs = env_u64("TRACELAB_CRASH_RUNS", VICTIMS.len() as u64);
    let seed = env_u64("TRACELAB_CRASH_SEED", 1);
    // Run `first` of a seed's plan is reproduced alone with RUNS=1.
    let first = env_u64("TRACELAB_CRASH_FIRST", 0);
    let mut summary = Summary::default();
    for index in first..first + runs {
        let run = Run::plan(seed, index);
        summary.runs += 1;
        crash_run(&b, &run, index, &mut summary).await;
    }
    eprintln!(
        "crash runs: {}, kills: {:?}, completed {}, lost 0, duplicated 0, stuck 0, evidence stored once {}, jobs re-run after a crash that interrupted them {:?}, longest recovery {:.1?}",
        summary.runs,
        summary.kills,
        summary.completed,
        summary.evidence,
        summary.re_executed,
        summary.longest_recovery
    );
    assert_eq!(summary.completed, runs);
}

/// Revisions journaled bad for `id` so far.
async fn journaled_bad(fleet: &Fleet, id: &str) -> Vec<String> {
    let Ok(mut db) = sqlx::PgConnection::connect(&fleet.backends.postgres).await else {
        return Vec::new();
    };
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT revision FROM \"{}\".probe_journal WHERE investigation_id = $1 AND result = 'bad'",
        fleet.schema
    )))
    .bind(id)
    .fetch_all(&mut db)
    .await
    .unwrap_or_default()
}

/// An investigator killed in the middle of a culprit search: the redelivered
/// investigation resumes from the probe journal, and no revision judged bad
/// before the crash is probed again (counted through the test's own side
/// channel, which names each run's folder and revision).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_investigator_killed_mid_search_resumes_from_the_probe_journal() {
    let Some(b) = backends() else { return };
    let side_channel = tempfile::tempdir().expect("side-channel folder");
    let run_log = side_channel.path().join("runs.log");
    let s = scenarios::linear_regression_logged(48, 30, 0.4, &run_log);
    let mut fleet = Fleet::start(&b, FleetOptions::default()).await;
    let id = fleet
        .submit(json!({
            "repository": s.repo.path().display().to_string(),
            "test_command": s.test_command,
            "issue_id": "RESUME-1",
            "parallelism": 2,
            "command_timeout_ms": 30000,
        }))
        .await;
    let deadline = Instant::now() + Duration::from_secs(120);
    let journaled = loop {
        let bad = journaled_bad(&fleet, &id).await;
        if !bad.is_empty() {
            break bad;
        }
        assert!(
            Instant::now() < deadline,
            "nothing journaled bad\n{}",
            fleet.logs()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    fleet.kill("investigator");
    // Runs already started wrote their line when they began.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = std::fs::read_to_string(&run_log).unwrap_or_default().len();
    fleet.restart("investigator").await;
    let view = fleet.wait_decided(&id, Duration::from_secs(300)).await;
    assert_eq!(
        view["report"]["culprit"]["commit"].as_str(),
        s.culprit.as_deref(),
        "{view}"
    );
    assert!(
        fleet
            .log_of("investigator")
            .contains("resuming the culprit search from journaled probes"),
        "{}",
        fleet.log_of("investigator")
    );
    let after = std::fs::read_to_string(&run_log).expect("the run log");
    let again: Vec<&str> = after[before..]
        .lines()
        .filter_map(|line| {
            let mut parts = line.split(' ');
            let folder = parts.next()?;
            let revision = parts.nth(1)?;
            (folder.starts_with("probe-")
                && revision != s.head
                && journaled.iter().any(|j| j == revision))
            .then_some(revision)
        })
        .collect();
    assert!(
        again.is_empty(),
        "revisions journaled bad before the crash were probed again: {again:?} (journaled {journaled:?})"
    );
}

/// SIGTERM to a verifier running two jobs at once: it drains both (each
/// stored by it, each acked once), exits 0, and the verifier that replaces
/// it runs neither again — counted through each fixture's side channel.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_verifier_stopped_with_two_jobs_in_flight_drains_both() {
    let Some(b) = backends() else { return };
    let side_channel = tempfile::tempdir().expect("side-channel folder");
    let logs: Vec<_> = (0..2)
        .map(|i| side_channel.path().join(format!("runs-{i}.log")))
        .collect();
    // 0.5 s a run: a verification takes several seconds.
    let cases: Vec<_> = logs
        .iter()
        .map(|log| scenarios::linear_regression_logged(8, 5, 0.5, log))
        .collect();
    // No verifier yet: both jobs wait on the queue, so the verifier started
    // below takes both at once.
    let mut fleet = Fleet::start(
        &b,
        FleetOptions {
            verifiers: 0,
            verifier_concurrency: 2,
            ..FleetOptions::default()
        },
    )
    .await;
    let store = fleet.store().await;
    let mut ids = Vec::new();
    for (i, s) in cases.iter().enumerate() {
        ids.push(InvestigationId(
            fleet
                .submit(json!({
                    "repository": s.repo.path().display().to_string(),
                    "test_command": s.test_command,
                    "issue_id": format!("DRAIN-{i}"),
                    "parallelism": 2,
                    "command_timeout_ms": 30000,
                }))
                .await,
        ));
    }
    for id in &ids {
        wait_for(&store, id, Point::Verifying, Duration::from_secs(180)).await;
        assert_eq!(
            state(&store, id).await,
            Some(InvestigationState::Verifying),
            "{}",
            fleet.logs()
        );
    }
    fleet.add_verifier("verifier-1");
    let deadline = Instant::now() + Duration::from_secs(60);
    while fleet.log_of("verifier-1").matches("verifying").count() < 2 {
        assert!(
            Instant::now() < deadline,
            "verifier-1 never ran two jobs at once\n{}",
            fleet.logs()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let status = fleet.terminate("verifier-1");
    assert!(status.success(), "{status}\n{}", fleet.logs());
    let log = fleet.log_of("verifier-1");
    assert_eq!(
        log.matches("draining the job in flight").count(),
        2,
        "{log}"
    );
    assert!(!log.contains("drain time over"), "{log}");
    fleet.add_verifier("verifier-2");
    for (id, (s, run_log)) in ids.iter().zip(cases.iter().zip(&logs)) {
        let view = fleet.wait_decided(&id.0, Duration::from_secs(300)).await;
        assert_eq!(view["report"]["winner"]["status"], "VERIFIED", "{view}");
        assert_eq!(
            view["report"]["culprit"]["commit"].as_str(),
            s.culprit.as_deref()
        );
        let hypotheses = store.hypotheses(id).await.expect("hypotheses");
        let revert = hypotheses
            .iter()
            .find(|h| h.status == HypothesisStatus::Verified)
            .expect("the verified revert");
        assert_eq!(
            store.verified_by(&revert.id).await.unwrap().as_deref(),
            Some("verifier-1"),
            "the drained verifier stored {}",
            revert.id
        );
        let recorded = runs_of_the_job(revert);
        let attempts = attempts_by_hypothesis(run_log);
        let ran = attempts.get(&revert.number).cloned().unwrap_or_default();
        assert_eq!(ran.len(), 1, "the job of {} ran again: {ran:?}", revert.id);
        assert_eq!(ran[0].1, recorded, "{}: runs against recorded", revert.id);
    }
    assert_eq!(store.processed_count("verifier").await.unwrap(), 2);
    assert!(
        !fleet.log_of("verifier-2").contains("verifying"),
        "a drained job ran again\n{}",
        fleet.logs()
    );
}
