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
//! - no state transition is recorded twice (a doubled step would be).
//!
//! `TRACELAB_CRASH_RUNS` (default 6: one per process kind) and
//! `TRACELAB_CRASH_SEED` (default 1) choose the runs; `TRACELAB_CRASH_VICTIM`
//! and `TRACELAB_CRASH_POINT` (submitted, investigating, verifying) pin one
//! to reproduce a failure. The summary line is printed at the end
//! (`cargo test --test crash -- --nocapture`).

use serde_json::json;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tracelab_bus::{Bus, ConsumerSpec, JetStreamBus};
use tracelab_domain::hypothesis::HypothesisStatus;
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::state::InvestigationState;
use tracelab_e2e::{Backends, Fleet, FleetOptions, backends, backends_script};
use tracelab_store::{InvestigationStore, PgOptions, PgStore};
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

async fn store_of(fleet: &Fleet) -> PgStore {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let connected = PgStore::connect(
            &fleet.backends.postgres,
            PgOptions {
                schema: Some(fleet.schema.clone()),
                max_connections: 2,
                ..PgOptions::default()
            },
        )
        .await;
        match connected {
            Ok(store) => return store,
            Err(e) => {
                assert!(Instant::now() < deadline, "cannot reach PostgreSQL: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
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
    longest_recovery: Duration,
}

async fn crash_run(b: &Backends, run: &Run, index: u64, summary: &mut Summary) {
    let s = scenarios::linear_regression(10, 6, 0.3);
    let mut fleet = Fleet::start(b, FleetOptions::default()).await;
    let store = store_of(&fleet).await;
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
    wait_for(&store, &id, run.point, Duration::from_secs(60)).await;
    tokio::time::sleep(run.extra_delay).await;
    let killed_at = Instant::now();
    match run.victim {
        "nats" => backends_script("crash-nats"),
        "postgres" => backends_script("crash-postgres"),
        service => {
            fleet.kill(service);
            tokio::time::sleep(Duration::from_millis(500)).await;
            fleet.restart(service).await;
        }
    }
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
    let topology = fleet.topology();
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

    // Each hypothesis decided once, its experiments stored once.
    for h in store.hypotheses(&id).await.expect("hypotheses") {
        assert_ne!(h.status, HypothesisStatus::Pending, "{label}: {}", h.id);
        assert_eq!(
            store.experiment_count(&h.id).await.unwrap(),
            h.experiments.len() as i64,
            "{label}: experiments of {} stored more than once",
            h.id
        );
    }
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
    let mut summary = Summary::default();
    for index in 0..runs {
        let run = Run::plan(seed, index);
        summary.runs += 1;
        crash_run(&b, &run, index, &mut summary).await;
    }
    eprintln!(
        "crash runs: {}, kills: {:?}, completed {}, lost 0, duplicated 0, stuck 0, longest recovery {:.1?}",
        summary.runs, summary.kills, summary.completed, summary.longest_recovery
    );
    assert_eq!(summary.completed, runs);
}
