//! A JetStream server restarted mid-stream: the test owns its nats-server
//! (free port, temporary store), stops it gracefully while messages are in
//! flight, publishes during the outage and restarts it. No message whose
//! publish was acknowledged is lost, and no message whose ack the server
//! confirmed is delivered again. Runs where `TRACELAB_TEST_NATS` says a
//! NATS installation is available.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tokio::time::Instant;
use tracelab_bus::{Bus, ConsumerSpec, JetStreamBus, Message, Topology};
use tracelab_testkit::ports::free_port;

struct NatsServer {
    child: Child,
}

impl NatsServer {
    async fn start(port: u16, store: &Path) -> Self {
        let child = Command::new("nats-server")
            .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
            .arg(store)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server on PATH (deploy/local/backends.sh installs it)");
        let server = Self { child };
        let started = Instant::now();
        while !jetstream_answers(port).await {
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "nats-server did not start on {port}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        server
    }

    /// Graceful stop (SIGTERM), as an orchestrator restarts a server.
    fn stop(&mut self) {
        let status = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        assert!(
            status.is_ok_and(|s| s.success()),
            "could not signal nats-server"
        );
        self.child.wait().expect("nats-server exits");
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn jetstream_answers(port: u16) -> bool {
    use tokio::io::AsyncBufReadExt;
    let Ok(stream) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return false;
    };
    let mut line = String::new();
    let mut reader = tokio::io::BufReader::new(stream);
    let read = reader.read_line(&mut line);
    matches!(
        tokio::time::timeout(Duration::from_secs(1), read).await,
        Ok(Ok(_))
    ) && line.contains("\"jetstream\":true")
}

fn id(i: usize) -> String {
    format!("job-{i:03}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_mid_stream_loses_and_duplicates_nothing_acked() {
    if common::backend("TRACELAB_TEST_NATS").is_none() {
        return;
    }
    let store = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut server = NatsServer::start(port, store.path()).await;
    let url = format!("nats://127.0.0.1:{port}");
    let bus = JetStreamBus::connect(&url, Topology::with_prefix("restart"))
        .await
        .unwrap();
    let subject = bus.topology().verify_jobs();
    for i in 0..50 {
        bus.publish(Message::new(&subject, id(i), "work"))
            .await
            .unwrap();
    }
    let spec = ConsumerSpec::new(bus.topology().verify_jobs_stream(), "workers")
        .ack_wait(Duration::from_secs(2));
    let mut consumer = bus.consumer(spec).await.unwrap();
    let mut acked = BTreeSet::new();
    while acked.len() < 20 {
        let d = consumer
            .next(Duration::from_secs(5))
            .await
            .unwrap()
            .expect("a job");
        assert!(
            !acked.contains(&d.message.id),
            "{} delivered again after its ack",
            d.message.id
        );
        let id = d.message.id.clone();
        d.ack().await.unwrap();
        acked.insert(id);
    }
    // One delivery is in flight when the server goes away; its worker dies.
    let in_flight = consumer
        .next(Duration::from_secs(5))
        .await
        .unwrap()
        .expect("a job");
    drop(in_flight);

    server.stop();
    let publisher = tokio::spawn({
        let bus = bus.clone();
        let subject = subject.clone();
        async move {
            for i in 50..100 {
                bus.publish(Message::new(&subject, id(i), "work"))
                    .await
                    .unwrap_or_else(|e| panic!("publish {} across the restart: {e}", id(i)));
            }
        }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    let _server = NatsServer::start(port, store.path()).await;
    publisher.await.expect("publisher");

    let deadline = Instant::now() + Duration::from_secs(90);
    let mut redelivered = 0;
    while acked.len() < 100 {
        assert!(
            Instant::now() < deadline,
            "only {} of 100 jobs acked",
            acked.len()
        );
        match consumer.next(Duration::from_secs(2)).await {
            Ok(Some(d)) => {
                assert!(
                    !acked.contains(&d.message.id),
                    "{} delivered again after its ack",
                    d.message.id
                );
                if d.delivered > 1 {
                    redelivered += 1;
                }
                let id = d.message.id.clone();
                match d.ack().await {
                    Ok(()) => {
                        acked.insert(id);
                    }
                    Err(e) => eprintln!("ack of {id} not confirmed ({e}); it will come back"),
                }
            }
            Ok(None) => {}
            Err(e) => {
                eprintln!("pull failed while reconnecting: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
    let expected: BTreeSet<String> = (0..100).map(id).collect();
    assert_eq!(acked, expected, "every published job acked exactly once");
    assert!(
        redelivered >= 1,
        "the job in flight at the restart came back"
    );
    assert!(
        consumer
            .next(Duration::from_secs(3))
            .await
            .unwrap()
            .is_none(),
        "nothing left"
    );
}
