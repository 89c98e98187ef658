//! End-to-end bus throughput and latency: one producer publishes (awaiting
//! each publish acknowledgement), one consumer pulls, acks (confirmed) and
//! records publish→ack latency. In-process always; JetStream on loopback when
//! `TRACELAB_TEST_NATS` is set.
//!
//! `cargo bench -p tracelab-bus --bench throughput` (results: docs/benchmarks/bus.md)

use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tracelab_bus::{Bus, ConsumerSpec, JetStreamBus, MemoryBus, Message, Topology};

async fn run(label: &str, bus: Arc<dyn Bus>, n: usize, batch: usize) {
    let t = bus.topology().clone();
    let spec = ConsumerSpec::new(t.verify_jobs_stream(), "bench")
        .batch(batch)
        .ack_wait(Duration::from_secs(60));
    let mut consumer = bus.consumer(spec).await.expect("consumer");
    let origin = Instant::now();
    let producer = tokio::spawn({
        let bus = bus.clone();
        let subject = t.verify_jobs();
        async move {
            for i in 0..n {
                let sent = origin.elapsed().as_nanos() as u64;
                let mut payload = sent.to_le_bytes().to_vec();
                payload.resize(256, b'x');
                bus.publish(Message::new(&subject, format!("m{i}"), payload))
                    .await
                    .expect("publish");
            }
        }
    });
    let mut latencies = Vec::with_capacity(n);
    while latencies.len() < n {
        let d = consumer
            .next(Duration::from_secs(10))
            .await
            .expect("next")
            .expect("a message within 10 s");
        let sent = u64::from_le_bytes(d.message.payload[..8].try_into().expect("8 bytes"));
        d.ack().await.expect("ack");
        latencies.push(origin.elapsed().as_nanos() as u64 - sent);
    }
    let elapsed = origin.elapsed();
    producer.await.expect("producer");
    latencies.sort_unstable();
    let pct = |p: f64| {
        latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)] as f64 / 1000.0
    };
    println!(
        "{label:<34} {n:>6} msgs  {:>9.0} msgs/s  p50 {:>8.1} µs  p99 {:>8.1} µs",
        n as f64 / elapsed.as_secs_f64(),
        pct(0.50),
        pct(0.99),
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        println!("publish + consume + ack, 256-byte payloads, one producer, one consumer");
        for round in 0..2 {
            let bus = MemoryBus::new(Topology::with_prefix(&format!("bench{round}")));
            run("in-process", Arc::new(bus), 50_000, 1).await;
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
                5_000,
                batch,
            )
            .await;
            bus.delete_streams().await.expect("clean up");
        }
    });
}
