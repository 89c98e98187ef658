//! Bus throughput and latency, end to end.
//!
//! - throughput: one producer publishes N messages (awaiting each publish
//!   acknowledgement) while one consumer pulls and acks them (confirmed ack
//!   on JetStream); msgs/s over the whole run;
//! - latency: one message at a time, publish → pull → ack, p50/p99 of that
//!   round trip without queueing.
//!
//! In-process always; JetStream on loopback when `TRACELAB_TEST_NATS` is set.
//! `cargo bench -p tracelab-bus --bench throughput` (results: docs/benchmarks/bus.md)

use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tracelab_bus::{Bus, ConsumerSpec, JetStreamBus, MemoryBus, Message, Topology};

const PAYLOAD: usize = 256;

async fn throughput(bus: Arc<dyn Bus>, consumer: &mut tracelab_bus::Consumer, n: usize) -> f64 {
    let subject = bus.topology().verify_jobs();
    let started = Instant::now();
    let producer = tokio::spawn({
        let bus = bus.clone();
        async move {
            for i in 0..n {
                let m = Message::new(&subject, format!("t{i}"), vec![b'x'; PAYLOAD]);
                bus.publish(m).await.expect("publish");
            }
        }
    });
    for _ in 0..n {
        let d = consumer
            .next(Duration::from_secs(10))
            .await
            .expect("next")
            .expect("a message within 10 s");
        d.ack().await.expect("ack");
    }
    producer.await.expect("producer");
    n as f64 / started.elapsed().as_secs_f64()
}

async fn latency(bus: &dyn Bus, consumer: &mut tracelab_bus::Consumer, n: usize) -> (f64, f64) {
    let subject = bus.topology().verify_jobs();
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        let started = Instant::now();
        bus.publish(Message::new(&subject, format!("l{i}"), vec![b'x'; PAYLOAD]))
            .await
            .expect("publish");
        let d = consumer
            .next(Duration::from_secs(10))
            .await
            .expect("next")
            .expect("a message within 10 s");
        d.ack().await.expect("ack");
        samples.push(started.elapsed().as_nanos() as f64 / 1000.0);
    }
    samples.sort_by(f64::total_cmp);
    let pct = |p: f64| samples[((samples.len() as f64 * p) as usize).min(samples.len() - 1)];
    (pct(0.50), pct(0.99))
}

async fn run(label: &str, bus: Arc<dyn Bus>, n: usize, batch: usize) {
    let spec = ConsumerSpec::new(bus.topology().verify_jobs_stream(), "bench")
        .batch(batch)
        .ack_wait(Duration::from_secs(60));
    let mut consumer = bus.consumer(spec).await.expect("consumer");
    let rate = throughput(bus.clone(), &mut consumer, n).await;
    let (p50, p99) = latency(bus.as_ref(), &mut consumer, 2_000).await;
    println!(
        "{label:<34} {n:>6} msgs  {rate:>9.0} msgs/s   round trip p50 {p50:>8.1} µs  p99 {p99:>8.1} µs"
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        println!("publish + consume + ack, {PAYLOAD}-byte payloads, one producer, one consumer");
        for round in 0..2 {
            let bus = MemoryBus::new(Topology::with_prefix(&format!("bench{round}")));
            run("in-process", Arc::new(bus), 100_000, 1).await;
        }
        let Ok(url) = std::env::var("TRACELAB_TEST_NATS") else {
            println!("JetStream: skipped (TRACELAB_TEST_NATS is not set)");
            return;
        };
        for batch in [1, 64] {
            let prefix = format!("bench_{}_{batch}", std::process::id());
            let bus = JetStreamBus::connect(&url, Topology::with_prefix(&prefix))
                .await
                .expect("connect");
            run(
                &format!("JetStream loopback, pull batch {batch}"),
                Arc::new(bus.clone()),
                10_000,
                batch,
            )
            .await;
            bus.delete_streams().await.expect("clean up");
        }
    });
}
