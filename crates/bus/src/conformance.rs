//! The behaviour every [`Bus`] must have, written once and run against the
//! in-process bus (with paused time) and a real JetStream server.
//! [`crate::conformance_tests!`] expands to one test per case.
//!
//! Each case expects a bus with a fresh topology (its own prefix), so cases
//! can run in parallel against one server. Timings are short but real: the
//! in-process run pauses the clock, the JetStream run waits.

use crate::dead_letter::DeadLetter;
use crate::message::Message;
use crate::outcome::{Outcome, Settled};
use crate::port::{Bus, Consumer, ConsumerSpec, Delivery};
use crate::retry::RetryPolicy;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;
use tracelab_domain::{Error, ErrorKind};

/// Long enough for anything that should arrive.
const ARRIVES: Duration = Duration::from_secs(10);
/// How long we look for something that must not arrive.
const QUIET: Duration = Duration::from_millis(300);
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

async fn next(consumer: &mut Consumer, what: &str) -> Delivery {
    consumer
        .next(ARRIVES)
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"))
        .unwrap_or_else(|| panic!("{what}: nothing delivered within {ARRIVES:?}"))
}

async fn nothing(consumer: &mut Consumer, wait: Duration, what: &str) {
    if let Some(d) = consumer.next(wait).await.expect("next") {
        panic!(
            "{what}: unexpected delivery {} (delivery {})",
            d.message.id, d.delivered
        );
    }
}

fn jobs(bus: &dyn Bus) -> ConsumerSpec {
    ConsumerSpec::new(bus.topology().verify_jobs_stream(), "verifiers")
}

async fn publish_job(bus: &dyn Bus, id: &str) {
    let subject = bus.topology().verify_jobs();
    let p = bus
        .publish(Message::new(subject, id, id.to_string()))
        .await
        .expect("publish job");
    assert!(!p.duplicate, "{id} is new");
}

async fn dead_letters(bus: &dyn Bus) -> Consumer {
    let spec = ConsumerSpec::new(bus.topology().dead_letter_stream(), "dlq-reader");
    bus.consumer(spec).await.expect("dead-letter consumer")
}

/// Subject, id, payload, trace context and headers arrive as published.
pub async fn round_trip(bus: &dyn Bus) {
    let t = bus.topology().clone();
    let sent = Message::new(t.evidence("ci"), "ev-1", "junit xml")
        .with_traceparent(TRACEPARENT)
        .with_header("Tracelab-Source", "ci");
    let published = bus.publish(sent.clone()).await.expect("publish");
    assert!(!published.duplicate);
    assert_eq!(published.stream, t.evidence_stream().name);
    let mut consumer = bus
        .consumer(ConsumerSpec::new(t.evidence_stream(), "ingest"))
        .await
        .unwrap();
    let d = next(&mut consumer, "round trip").await;
    assert_eq!(d.message, sent, "the message arrives as published");
    assert_eq!(d.delivered, 1);
    d.ack().await.expect("ack");
    nothing(&mut consumer, QUIET, "an acked message").await;

    let err = bus
        .publish(Message::new("elsewhere.x", "m", ""))
        .await
        .unwrap_err();
    assert_eq!(
        err.kind,
        ErrorKind::InvalidArgument,
        "no stream captures it: {err}"
    );
}

/// The same message id published twice inside the window is stored once.
pub async fn duplicate_id_delivered_once(bus: &dyn Bus) {
    let subject = bus.topology().evidence("logs");
    let first = bus
        .publish(Message::new(&subject, "dup-1", "a"))
        .await
        .unwrap();
    let again = bus
        .publish(Message::new(&subject, "dup-1", "a"))
        .await
        .unwrap();
    assert!(!first.duplicate);
    assert!(
        again.duplicate,
        "the second publish is reported as a duplicate"
    );
    assert_eq!(again.sequence, first.sequence);
    bus.publish(Message::new(&subject, "dup-2", "b"))
        .await
        .unwrap();
    let spec = ConsumerSpec::new(bus.topology().evidence_stream(), "dedup");
    let mut consumer = bus.consumer(spec).await.unwrap();
    let ids = [
        next(&mut consumer, "first").await,
        next(&mut consumer, "second").await,
    ];
    let ids: Vec<String> = {
        let mut out = Vec::new();
        for d in ids {
            out.push(d.message.id.clone());
            d.ack().await.unwrap();
        }
        out
    };
    assert_eq!(ids, ["dup-1", "dup-2"]);
    nothing(&mut consumer, QUIET, "the duplicate").await;
}

/// A nak'ed job comes back after its delay, not before.
pub async fn nak_redelivers_after_delay(bus: &dyn Bus) {
    publish_job(bus, "job-nak").await;
    let mut consumer = bus
        .consumer(jobs(bus).ack_wait(Duration::from_secs(20)))
        .await
        .unwrap();
    let d = next(&mut consumer, "first delivery").await;
    let delay = Duration::from_millis(1500);
    let naked = Instant::now();
    d.nak(delay).await.unwrap();
    nothing(
        &mut consumer,
        Duration::from_millis(500),
        "before the nak delay",
    )
    .await;
    let again = next(&mut consumer, "after the nak delay").await;
    assert!(
        naked.elapsed() >= delay - Duration::from_millis(50),
        "redelivered after {:?}",
        naked.elapsed()
    );
    assert_eq!(again.message.id, "job-nak");
    assert_eq!(again.delivered, 2);
    again.ack().await.unwrap();
    nothing(&mut consumer, QUIET, "after ack").await;
}

/// A job that keeps failing goes to the dead-letter subject with its reason
/// after max deliveries; the consumer goes on with the next job.
pub async fn failing_job_is_dead_lettered(bus: &dyn Bus) {
    publish_job(bus, "poison").await;
    publish_job(bus, "fine").await;
    let retry = RetryPolicy {
        max_deliveries: 3,
        min_delay: Duration::from_millis(100),
        max_delay: Duration::from_millis(200),
    };
    let mut consumer = bus.consumer(jobs(bus).retry(retry)).await.unwrap();
    let mut poison_deliveries = 0;
    let mut fine_done = false;
    let mut dead = None;
    while !(fine_done && dead.is_some()) {
        let d = next(&mut consumer, "jobs").await;
        match d.message.id.as_str() {
            "poison" => {
                poison_deliveries += 1;
                assert_eq!(d.delivered, poison_deliveries);
                let outcome = Outcome::from_error(&Error::internal("worker exploded"));
                match d.settle(outcome).await.unwrap() {
                    Settled::Retrying { .. } => {}
                    Settled::DeadLettered { reason } => dead = Some(reason),
                    Settled::Acked => panic!("a failure is not acked"),
                }
            }
            "fine" => {
                assert_eq!(d.settle(Outcome::Ack).await.unwrap(), Settled::Acked);
                fine_done = true;
            }
            other => panic!("unexpected job {other}"),
        }
    }
    assert_eq!(
        poison_deliveries, 3,
        "delivered exactly max_deliveries times"
    );
    nothing(&mut consumer, QUIET, "a dead-lettered job").await;

    let mut dlq = dead_letters(bus).await;
    let letter = next(&mut dlq, "dead letter").await;
    let meta = DeadLetter::read(&letter.message).expect("dead-letter headers");
    assert_eq!(meta.original_subject, bus.topology().verify_jobs());
    assert_eq!(meta.original_id, "poison");
    assert_eq!(meta.delivered, 3);
    assert!(meta.error.contains("worker exploded"), "{}", meta.error);
    assert_eq!(letter.message.payload, "poison".as_bytes());
    letter.ack().await.unwrap();
}

/// A poison message (InvalidArgument) is dead-lettered on its first delivery.
pub async fn poison_message_is_dead_lettered_at_once(bus: &dyn Bus) {
    publish_job(bus, "garbage").await;
    let mut consumer = bus.consumer(jobs(bus)).await.unwrap();
    let d = next(&mut consumer, "poison").await;
    let err = d.json::<BTreeMap<String, u32>>().unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    let settled = d.settle(Outcome::from_error(&err)).await.unwrap();
    assert!(
        matches!(settled, Settled::DeadLettered { .. }),
        "{settled:?}"
    );
    nothing(&mut consumer, QUIET, "a terminated message").await;
    let mut dlq = dead_letters(bus).await;
    let letter = next(&mut dlq, "dead letter").await;
    let meta = DeadLetter::read(&letter.message).unwrap();
    assert_eq!((meta.original_id.as_str(), meta.delivered), ("garbage", 1));
    assert!(meta.error.starts_with("InvalidArgument"), "{}", meta.error);
}

/// A rejected message of a raw-input stream (intake) is dead-lettered by
/// reference: the unredacted payload and the publisher's headers stay out.
pub async fn raw_input_is_dead_lettered_by_reference(bus: &dyn Bus) {
    let topology = bus.topology();
    let secret = "password=hunter2 token=ghp_0123456789abcdefghijklmnopqrstuvwxyz";
    let message = Message::new(topology.intake("ci-failures"), "raw-1", secret.to_string())
        .with_header("Authorization", "Bearer sk-live-secret");
    bus.publish(message).await.expect("publish raw input");
    let spec = ConsumerSpec::new(topology.intake_stream(), "intake-reader");
    let mut consumer = bus.consumer(spec).await.unwrap();
    let d = next(&mut consumer, "raw input").await;
    let settled = d
        .settle(Outcome::Reject {
            reason: "InvalidArgument: not a CI report".into(),
        })
        .await
        .unwrap();
    assert!(
        matches!(settled, Settled::DeadLettered { .. }),
        "{settled:?}"
    );
    let mut dlq = dead_letters(bus).await;
    let letter = next(&mut dlq, "dead letter").await;
    let meta = DeadLetter::read(&letter.message).expect("dead-letter headers");
    assert_eq!(meta.original_id, "raw-1");
    assert_eq!(meta.original_subject, topology.intake("ci-failures"));
    assert!(letter.message.payload.is_empty(), "raw payload kept");
    assert_eq!(
        letter
            .message
            .headers
            .get(crate::dead_letter::PAYLOAD_DROPPED),
        Some(&secret.len().to_string())
    );
    assert!(
        !letter.message.headers.contains_key("Authorization"),
        "{:?}",
        letter.message.headers
    );
    letter.ack().await.unwrap();
}

/// Three consumers sharing the work queue process twelve jobs exactly once.
pub async fn work_queue_is_shared(bus: &dyn Bus) {
    let ids: Vec<String> = (0..12).map(|i| format!("job-{i:02}")).collect();
    for id in &ids {
        publish_job(bus, id).await;
    }
    let done = Arc::new(Mutex::new(Vec::new()));
    let mut workers = Vec::new();
    for w in 0..3 {
        let mut consumer = bus
            .consumer(jobs(bus).ack_wait(Duration::from_secs(30)))
            .await
            .unwrap();
        let done = done.clone();
        workers.push(tokio::spawn(async move {
            let started = Instant::now();
            while done.lock().unwrap().len() < 12 {
                assert!(
                    started.elapsed() < Duration::from_secs(60),
                    "worker {w} gave up"
                );
                if let Some(d) = consumer.next(Duration::from_millis(200)).await.unwrap() {
                    done.lock().unwrap().push((d.message.id.clone(), w));
                    d.ack().await.unwrap();
                }
            }
            consumer
        }));
    }
    let mut consumers = Vec::new();
    for w in workers {
        consumers.push(w.await.expect("worker"));
    }
    let mut processed: Vec<String> = done
        .lock()
        .unwrap()
        .iter()
        .map(|(id, _)| id.clone())
        .collect();
    processed.sort();
    assert_eq!(processed, ids, "every job exactly once");
    for c in &mut consumers {
        nothing(c, QUIET, "after the queue drained").await;
    }
}

/// A consumer that dies holding a job: another gets it after the ack wait.
pub async fn crashed_consumer_job_is_redelivered(bus: &dyn Bus) {
    publish_job(bus, "job-crash").await;
    let ack_wait = Duration::from_secs(1);
    let mut a = bus.consumer(jobs(bus).ack_wait(ack_wait)).await.unwrap();
    // Taken before the first delivery: the server's ack wait starts when it
    // sends, and a slow client may see the delivery later than that.
    let at = Instant::now();
    let taken = next(&mut a, "first worker").await;
    drop(taken);
    drop(a);
    let mut b = bus.consumer(jobs(bus).ack_wait(ack_wait)).await.unwrap();
    let d = next(&mut b, "second worker").await;
    assert!(
        at.elapsed() >= ack_wait - Duration::from_millis(100),
        "after the ack wait, not {:?}",
        at.elapsed()
    );
    assert_eq!((d.message.id.as_str(), d.delivered), ("job-crash", 2));
    d.ack().await.unwrap();
    nothing(&mut b, QUIET, "after ack").await;
}

/// Progress acks keep a job that outlives the ack wait from being redelivered.
pub async fn progress_keeps_a_long_job(bus: &dyn Bus) {
    publish_job(bus, "job-long").await;
    // Progress every ~500 ms against a 5 s ack wait: a stall of 4.5 s on a
    // loaded machine is still tolerated, and the job outlives the ack wait.
    let ack_wait = Duration::from_secs(5);
    let spec = jobs(bus).ack_wait(ack_wait);
    let mut worker = bus.consumer(spec.clone()).await.unwrap();
    let mut idle = bus.consumer(spec).await.unwrap();
    let d = next(&mut worker, "long job").await;
    let started = Instant::now();
    for _ in 0..12 {
        nothing(&mut idle, Duration::from_millis(500), "a job in progress").await;
        d.progress().await.unwrap();
    }
    assert!(
        started.elapsed() > ack_wait + Duration::from_millis(500),
        "the job outlived its ack wait"
    );
    d.ack().await.unwrap();
    nothing(
        &mut idle,
        ack_wait + Duration::from_millis(500),
        "a finished long job",
    )
    .await;
}

/// A job whose consumers crash on every delivery is dead-lettered (with a
/// reason) when it comes back once more than the policy allows.
pub async fn crash_looping_job_is_dead_lettered(bus: &dyn Bus) {
    publish_job(bus, "job-loop").await;
    let retry = RetryPolicy {
        max_deliveries: 2,
        ..RetryPolicy::default()
    };
    let spec = jobs(bus).ack_wait(Duration::from_secs(1)).retry(retry);
    let mut consumer = bus.consumer(spec).await.unwrap();
    for attempt in 1..=2 {
        let d = next(&mut consumer, "crashing delivery").await;
        assert_eq!(d.delivered, attempt);
        drop(d);
    }
    // The third delivery is dead-lettered inside `next`, within this window
    // (one ack wait of 1 s plus a loaded machine's latency).
    nothing(&mut consumer, Duration::from_secs(5), "a crash-looping job").await;
    let mut dlq = dead_letters(bus).await;
    let letter = next(&mut dlq, "dead letter").await;
    let meta = DeadLetter::read(&letter.message).unwrap();
    assert_eq!((meta.original_id.as_str(), meta.delivered), ("job-loop", 3));
    assert!(
        meta.error.contains("without being settled"),
        "{}",
        meta.error
    );
}

/// Expands to one `#[tokio::test]` per conformance case.
///
/// `make` is an async expression yielding `Option<B>` (`None` skips the
/// test); `teardown` an async function taking `&B`.
#[macro_export]
macro_rules! conformance_tests {
    ($attr:meta, $make:expr, $teardown:expr) => {
        $crate::conformance_tests!(@cases $attr, $make, $teardown;
            round_trip,
            duplicate_id_delivered_once,
            nak_redelivers_after_delay,
            failing_job_is_dead_lettered,
            poison_message_is_dead_lettered_at_once,
            raw_input_is_dead_lettered_by_reference,
            work_queue_is_shared,
            crashed_consumer_job_is_redelivered,
            progress_keeps_a_long_job,
            crash_looping_job_is_dead_lettered
        );
    };
    (@cases $attr:meta, $make:expr, $teardown:expr; $($case:ident),*) => {
        $(
            #[$attr]
            async fn $case() {
                let Some(bus) = $make.await else { return };
                $crate::conformance::$case(&bus).await;
                $teardown(&bus).await;
            }
        )*
    };
}
