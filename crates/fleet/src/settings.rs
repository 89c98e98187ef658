//! Settings every service has. Each service embeds them as `[fleet]` in its
//! own settings, so `TRACELAB__FLEET__NATS_URL=…` or `--set fleet.nats_url=…`
//! reach every service the same way.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct FleetSettings {
    pub nats_url: String,
    pub postgres_url: String,
    /// Tables live in this schema (created if missing); empty = `public`.
    pub postgres_schema: String,
    /// Subject prefix and stream-name prefix (`tracelab` → `tracelab.jobs.verify`, `TRACELAB_JOBS_VERIFY`).
    pub subject_prefix: String,
    /// OTLP/gRPC endpoint for spans; empty = `OTEL_EXPORTER_OTLP_ENDPOINT` or no export.
    pub otlp_endpoint: String,
    /// Seconds in-flight work may take to finish after a shutdown request.
    pub drain_seconds: u64,
    /// How often the outbox relay looks for events a crash left unpublished.
    pub outbox_relay_seconds: u64,
    /// An outbox row older than this was not published by its writer (which
    /// publishes right after its commit): the relay publishes it.
    pub outbox_grace_seconds: u64,
    /// Size limit of the evidence, investigations and intake streams (a
    /// quarter of it for verify jobs and dead letters); applies when a
    /// stream is created.
    pub stream_max_bytes: i64,
    /// Which repositories requests may name (URL patterns, local roots),
    /// the credentials to fetch them with, and this process's mirror cache.
    pub repositories: tracelab_repos::RepositorySettings,
}

impl Default for FleetSettings {
    fn default() -> Self {
        Self {
            nats_url: "nats://127.0.0.1:4222".into(),
            postgres_url: "postgres://tracelab@127.0.0.1:5432/tracelab".into(),
            postgres_schema: String::new(),
            subject_prefix: "tracelab".into(),
            otlp_endpoint: String::new(),
            drain_seconds: 60,
            outbox_relay_seconds: 5,
            outbox_grace_seconds: 10,
            stream_max_bytes: 512 << 20,
            repositories: Default::default(),
        }
    }
}

impl FleetSettings {
    pub fn topology(&self) -> tracelab_bus::Topology {
        tracelab_bus::Topology::with_prefix(&self.subject_prefix)
            .with_stream_limit(self.stream_max_bytes)
    }

    /// The outbox relay's pace: (how often, how old a row must be).
    pub fn outbox_relay(&self) -> (std::time::Duration, std::time::Duration) {
        (
            std::time::Duration::from_secs(self.outbox_relay_seconds.max(1)),
            std::time::Duration::from_secs(self.outbox_grace_seconds),
        )
    }

    pub fn otlp(&self) -> Option<&str> {
        Some(self.otlp_endpoint.as_str()).filter(|e| !e.is_empty())
    }
}
