//! The ingest service started in-process for a test, against real NATS
//! JetStream and PostgreSQL (`TRACELAB_TEST_NATS`, `TRACELAB_TEST_POSTGRES`):
//! its own subject prefix, schema and port-0 listeners, shared by this
//! package's test files (each uses a part of it).
#![allow(dead_code)]

use serde_json::Value;
use sqlx::{PgPool, Row};
use std::time::Duration;
use tracelab_bus::{Bus, ConsumerSpec, JetStreamBus, Message, Topology};
use tracelab_ingest::{Listeners, Settings, serve};
use tracelab_service::Shutdown;
use tracelab_store::{PgOptions, PgStore};
use tracelab_testkit::backends::{TEST_STREAM_BYTES, backend, unique_name};

/// A running service and what a test reads it through.
pub struct Service {
    pub http: String,
    pub grpc: String,
    pub pool: PgPool,
    pub bus: JetStreamBus,
    pub topology: Topology,
    pub client: reqwest::Client,
    pub shutdown: Shutdown,
    pub task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Service {
    /// Starts the service with `configure` applied; `None` when the backends are not set.
    pub async fn start(configure: impl FnOnce(&mut Settings)) -> Option<Self> {
        let nats = backend("TRACELAB_TEST_NATS")?;
        let postgres = backend("TRACELAB_TEST_POSTGRES")?;
        tracelab_bus::install_crypto_provider();
        let name = unique_name("ing");
        let mut settings = Settings::default();
        settings.fleet.nats_url = nats.clone();
        settings.fleet.postgres_url = postgres.clone();
        settings.fleet.postgres_schema = name.clone();
        settings.fleet.subject_prefix = name.clone();
        settings.fleet.stream_max_bytes = TEST_STREAM_BYTES;
        settings.fleet.drain_seconds = 2;
        settings.allow_unauthenticated = true;
        settings.redaction_key = "a-test-secret-redaction-key".into();
        configure(&mut settings);
        let loopback = || tokio::net::TcpListener::bind("127.0.0.1:0");
        let listeners = Listeners {
            http: loopback().await.expect("a loopback listener"),
            grpc: Some(loopback().await.expect("a loopback listener")),
        };
        let http = format!("http://{}", listeners.http.local_addr().unwrap());
        let grpc = format!(
            "http://{}",
            listeners.grpc.as_ref().unwrap().local_addr().unwrap()
        );
        let shutdown = Shutdown::new();
        let task = tokio::spawn(serve(settings, listeners, shutdown.clone()));
        let client = reqwest::Client::new();
        let mut ready = false;
        // Up to 60 s: a fresh schema's migrations and streams, beside
        // another test doing the same, on a loaded machine.
        for _ in 0..600 {
            if let Ok(r) = client.get(format!("{http}/readyz")).send().await
                && r.status().is_success()
            {
                ready = true;
                break;
            }
            assert!(!task.is_finished(), "the service stopped while starting");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(ready, "the service did not become ready within 60 s");
        let store = PgStore::connect(
            &postgres,
            PgOptions {
                schema: Some(name.clone()),
                ..PgOptions::default()
            },
        )
        .await
        .expect("connect to PostgreSQL");
        let topology = Topology::with_prefix(&name).with_stream_limit(TEST_STREAM_BYTES);
        let bus = JetStreamBus::connect(&nats, topology.clone())
            .await
            .expect("connect to NATS");
        Some(Self {
            http,
            grpc,
            pool: store.pool().clone(),
            bus,
            topology,
            client,
            shutdown,
            task,
        })
    }

    pub async fn post(
        &self,
        path: &str,
        content_type: &str,
        body: impl Into<reqwest::Body>,
        headers: &[(&str, &str)],
    ) -> (u16, reqwest::header::HeaderMap, Value) {
        let mut request = self
            .client
            .post(format!("{}{path}", self.http))
            .header("content-type", content_type)
            .body(body);
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let response = request.send().await.expect("the service answers");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap_or_default();
        let json = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, headers, json)
    }

    pub async fn evidence_count(&self) -> i64 {
        sqlx::query("SELECT count(*) AS n FROM evidence")
            .fetch_one(&self.pool)
            .await
            .expect("count evidence")
            .get("n")
    }

    /// Every stored evidence row as text (all columns).
    pub async fn evidence_text(&self) -> String {
        let rows = sqlx::query("SELECT row_to_json(e)::text AS t FROM evidence e")
            .fetch_all(&self.pool)
            .await
            .expect("read evidence");
        rows.iter()
            .map(|r| r.get::<String, _>("t"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub async fn group_count(&self, key: &str) -> i64 {
        sqlx::query("SELECT count FROM failure_groups WHERE group_key = $1")
            .bind(key)
            .fetch_one(&self.pool)
            .await
            .expect("the group is stored")
            .get("count")
    }

    /// Messages on `subject` so far (reads with a fresh durable each time).
    pub async fn events(&self, subject: &str, expect_at_least: usize) -> Vec<Message> {
        let spec = ConsumerSpec::new(self.topology.evidence_stream(), unique_name("t"))
            .filter(subject.to_string());
        let mut consumer = self.bus.consumer(spec).await.expect("open a consumer");
        let mut out = Vec::new();
        loop {
            let wait = if out.len() < expect_at_least {
                Duration::from_secs(10)
            } else {
                Duration::from_millis(500)
            };
            match consumer.next(wait).await.expect("read events") {
                Some(d) => {
                    out.push(d.message.clone());
                    d.ack().await.expect("ack");
                }
                None => return out,
            }
        }
    }

    pub async fn stop(self) {
        self.shutdown.request();
        let result = tokio::time::timeout(Duration::from_secs(20), self.task)
            .await
            .expect("the service stops within 20 s")
            .expect("the service task did not panic");
        result.expect("the service returns Ok after shutdown");
        self.bus
            .delete_streams()
            .await
            .expect("delete the test's streams");
    }
}
