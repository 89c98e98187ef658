//! The in-process bus: the conformance suite with a paused clock, plus what
//! only it can show (stored counts, the duplicate window running out).

mod common;

use std::time::Duration;
use tracelab_bus::{
    Bus, ConsumerSpec, MemoryBus, Message, Topology, conformance_tests, publish_json,
};
use tracelab_domain::ErrorKind;

async fn bus() -> Option<MemoryBus> {
    Some(MemoryBus::new(Topology::with_prefix("mem")))
}

async fn teardown(_: &MemoryBus) {}

conformance_tests!(tokio::test(start_paused = true), bus(), teardown);

#[tokio::test(start_paused = true)]
async fn acked_jobs_leave_the_work_queue_and_events_stay() {
    let bus = MemoryBus::new(Topology::fleet());
    let t = bus.topology().clone();
    bus.publish(Message::new(t.verify_jobs(), "j", ""))
        .await
        .unwrap();
    bus.publish(Message::new(t.evidence("ci"), "e", ""))
        .await
        .unwrap();
    let mut jobs = bus
        .consumer(ConsumerSpec::new(t.verify_jobs_stream(), "v"))
        .await
        .unwrap();
    let mut events = bus
        .consumer(ConsumerSpec::new(t.evidence_stream(), "i"))
        .await
        .unwrap();
    jobs.next(Duration::from_secs(1))
        .await
        .unwrap()
        .unwrap()
        .ack()
        .await
        .unwrap();
    events
        .next(Duration::from_secs(1))
        .await
        .unwrap()
        .unwrap()
        .ack()
        .await
        .unwrap();
    assert_eq!(
        bus.stored(&t.verify_jobs_stream().name),
        0,
        "work queue drops acked jobs"
    );
    assert_eq!(
        bus.stored(&t.evidence_stream().name),
        1,
        "limits retention keeps events"
    );
    // A second durable on the event stream reads from the start.
    let mut late = bus
        .consumer(ConsumerSpec::new(t.evidence_stream(), "late"))
        .await
        .unwrap();
    assert_eq!(
        late.next(Duration::from_secs(1))
            .await
            .unwrap()
            .unwrap()
            .message
            .id,
        "e"
    );
}

#[tokio::test(start_paused = true)]
async fn an_id_is_new_again_after_the_duplicate_window() {
    let bus = MemoryBus::new(Topology::fleet());
    let subject = bus.topology().evidence("ci");
    assert!(
        !bus.publish(Message::new(&subject, "x", ""))
            .await
            .unwrap()
            .duplicate
    );
    tokio::time::advance(Duration::from_secs(60)).await;
    assert!(
        bus.publish(Message::new(&subject, "x", ""))
            .await
            .unwrap()
            .duplicate
    );
    tokio::time::advance(Duration::from_secs(61)).await;
    assert!(
        !bus.publish(Message::new(&subject, "x", ""))
            .await
            .unwrap()
            .duplicate
    );
}

#[tokio::test(start_paused = true)]
async fn a_second_durable_on_a_work_queue_is_a_conflict() {
    let bus = MemoryBus::new(Topology::fleet());
    let stream = bus.topology().verify_jobs_stream().clone();
    let _first = bus.consumer(ConsumerSpec::new(&stream, "a")).await.unwrap();
    let _same = bus.consumer(ConsumerSpec::new(&stream, "a")).await.unwrap();
    let err = bus
        .consumer(ConsumerSpec::new(&stream, "b"))
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Conflict);
}

#[tokio::test(start_paused = true)]
async fn typed_messages_round_trip() {
    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Job {
        investigation: String,
        hypothesis: u32,
    }
    let bus = MemoryBus::new(Topology::fleet());
    let job = Job {
        investigation: "01J".into(),
        hypothesis: 2,
    };
    let subject = bus.topology().verify_jobs();
    publish_json(&bus, subject, "01J-h2", &job, Some("00-aa-bb-01"))
        .await
        .unwrap();
    let mut c = bus
        .consumer(ConsumerSpec::new(bus.topology().verify_jobs_stream(), "v"))
        .await
        .unwrap();
    let d = c.next(Duration::from_secs(1)).await.unwrap().unwrap();
    assert_eq!(d.json::<Job>().unwrap(), job);
    assert_eq!(d.message.traceparent.as_deref(), Some("00-aa-bb-01"));
}
