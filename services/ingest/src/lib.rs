//! The ingest service: failure evidence in, redacted evidence rows, failure
//! groups and events out. The parsing, redaction and grouping logic is the
//! `tracelab-evidence` library; admission control ([`admission`]: a rate per
//! source, a bound on work in flight) and the wiring are this crate.
//!
//! An input travels like this:
//!
//! ```text
//! POST /v1/ci-failures, POST /v1/logs   (http: body limit, gzip, source, content type)
//! OTLP LogsService/Export               (grpc)
//! <prefix>.intake.{ci-failures,logs}    (intake_queue: the JetStream work queue)
//!     └─► submission::Ingest::submit: limits → rate per source → admission (Permit)
//!           → decode + parse (blocking pool) → Batch
//!     └─► submission::Ingest::record, per failure:
//!           INSERT evidence … ON CONFLICT DO NOTHING  (id = digest of source, content, index)
//!           → triage (PgGroupStore + Policy) only when the row is new
//!           → EvidenceRecorded on <prefix>.evidence.<kind>
//!           → InvestigationSuggested on <prefix>.evidence.suggested when the policy says so
//!     └─► a CI report, once, passing or not: CiReportRecorded on <prefix>.evidence.ci-report
//!           (ci_report_event; the indexer mines completed failing → passing sequences from it)
//!     └─► the Permit is dropped: the admission bound covers queued and in-flight work
//! ```
//!
//! `GET /v1/groups` ([`groups`]) lists the failure groups for viewer tokens.
//!
//! Rejections ([`rejection::Rejection`]: the library's size and validity
//! [`Refusal`](tracelab_evidence::Refusal)s, [`admission`]'s rate limit and
//! in-flight bound) are answered, never dropped silently: 413 / 400 / 429 +
//! `Retry-After` over HTTP, RESOURCE_EXHAUSTED / INVALID_ARGUMENT over gRPC,
//! a wait, a nak (retry) or a dead letter on the intake queue.

pub mod admission;
pub mod auth;
pub mod body;
pub mod ci_report_event;
pub mod evidence;
pub mod groups;
pub mod grpc;
pub mod http;
pub mod intake_queue;
pub mod rejection;
pub mod submission;

use admission::{Admission, AdmissionConfig, RateQuota, SourceLimiter};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tracelab_bus::ConsumerSpec;
use tracelab_evidence::RequestLimits;
use tracelab_evidence::{DEV_REDACTION_KEY, ParseOptions, Policy, Redactor};
use tracelab_fleet::worker::{self, WorkerOptions};
use tracelab_fleet::{FleetSettings, connect};
use tracelab_service::Shutdown;
use tracelab_service::health;

/// The durable consumer of the intake work queue.
pub const DURABLE: &str = "ingest";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Settings {
    pub fleet: FleetSettings,
    /// HTTP intake (`/v1/ci-failures`, `/v1/logs`), `/healthz`, `/readyz`.
    pub listen: String,
    /// OTLP logs gRPC receiver; empty = off.
    pub grpc_listen: String,
    /// HMAC key for redaction pseudonyms; empty = the library's public
    /// development key (a warning is logged). Set a secret in production.
    pub redaction_key: String,
    /// Bearer tokens; each names its source. Without any the service refuses
    /// to start unless `allow_unauthenticated` (then the source is
    /// `X-TraceLab-Source` or the peer address).
    pub tokens: Vec<auth::TokenSetting>,
    /// Bearer tokens that may read failure groups (`GET /v1/groups`), each
    /// named for its reader; intake tokens cannot read. Without any,
    /// reading is open only when `allow_unauthenticated` is.
    pub viewer_tokens: Vec<auth::TokenSetting>,
    /// Accept evidence without tokens: a development machine only (without
    /// tokens the service refuses to start otherwise).
    pub allow_unauthenticated: bool,
    pub limits: LimitSettings,
    /// When a failure group deserves an investigation (protected branches, thresholds).
    pub policy: Policy,
    /// Merge a failure whose exact key is new into the most similar known
    /// group (docs/ingest.md, "Similar-issue merging"); false: exact keys only.
    pub similar_merge: bool,
    /// The similarity's weights and threshold.
    pub similarity: tracelab_evidence::SimilarityConfig,
    /// Intake messages processed at once.
    pub intake_concurrency: usize,
    pub ack_wait_seconds: u64,
    pub max_deliveries: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            fleet: FleetSettings::default(),
            listen: "127.0.0.1:8082".into(),
            grpc_listen: "127.0.0.1:4317".into(),
            redaction_key: String::new(),
            tokens: Vec::new(),
            viewer_tokens: Vec::new(),
            allow_unauthenticated: false,
            limits: LimitSettings::default(),
            policy: Policy::default(),
            similar_merge: true,
            similarity: tracelab_evidence::SimilarityConfig::default(),
            intake_concurrency: 2,
            ack_wait_seconds: 30,
            max_deliveries: 5,
        }
    }
}

/// Admission limits (docs/ingest.md "Admission control").
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct LimitSettings {
    /// Largest request body, after gzip decompression (413 beyond).
    pub body_bytes: usize,
    /// Events (failures reports, log lines, OTLP records) per second per source.
    pub rate_per_second: u32,
    /// Events a source may send at once before the rate applies.
    pub rate_burst: u32,
    /// Busy sources tracked at once; beyond it the intake answers 429.
    pub max_sources: usize,
    /// Requests queued or in flight at once.
    pub admission_items: usize,
    /// Bytes queued or in flight at once.
    pub admission_bytes: usize,
    /// `Retry-After` when the admission bound is full.
    pub busy_retry_after_seconds: u64,
}

impl Default for LimitSettings {
    fn default() -> Self {
        let quota = RateQuota::default();
        let admission = AdmissionConfig::default();
        Self {
            body_bytes: RequestLimits::default().max_body_bytes,
            rate_per_second: quota.per_second,
            rate_burst: quota.burst,
            max_sources: 10_000,
            admission_items: admission.max_items,
            admission_bytes: admission.max_bytes,
            busy_retry_after_seconds: admission.retry_after.as_secs(),
        }
    }
}

/// The parse options, limiter and admission the settings describe.
fn intake_parts(settings: &Settings) -> anyhow::Result<submission::Parts> {
    let key = if settings.redaction_key.is_empty() {
        tracing::warn!(
            "redaction_key is not set: using the public development key; pseudonyms can be confirmed by anyone who guesses a value"
        );
        DEV_REDACTION_KEY.to_vec()
    } else {
        settings.redaction_key.as_bytes().to_vec()
    };
    let redactor = Redactor::new(&key).map_err(|e| anyhow::anyhow!("redaction_key: {e}"))?;
    let l = &settings.limits;
    let limits = RequestLimits {
        max_body_bytes: l.body_bytes,
        ..RequestLimits::default()
    };
    let limiter = SourceLimiter::new(
        RateQuota {
            per_second: l.rate_per_second,
            burst: l.rate_burst,
        },
        l.max_sources,
    )
    .map_err(|e| anyhow::anyhow!("limits: {e}"))?;
    let admission = Admission::new(AdmissionConfig {
        max_items: l.admission_items.max(1),
        max_bytes: l.admission_bytes.max(1),
        retry_after: Duration::from_secs(l.busy_retry_after_seconds.max(1)),
    });
    let options = ParseOptions {
        redaction_key: key,
        ..ParseOptions::default()
    };
    Ok(submission::Parts {
        options,
        redactor,
        limits,
        limiter,
        admission,
        policy: settings.policy.clone(),
        similarity: settings.similar_merge.then(|| settings.similarity.clone()),
    })
}

/// The sockets the service answers on: bound from the settings by [`run`],
/// or on port 0 by a test, which then reads their addresses.
#[derive(Debug)]
pub struct Listeners {
    /// HTTP intake, `/healthz`, `/readyz` (`listen`).
    pub http: TcpListener,
    /// The OTLP logs gRPC receiver (`grpc_listen`); `None` = off.
    pub grpc: Option<TcpListener>,
}

impl Listeners {
    /// Binds `listen` and, unless it is empty, `grpc_listen`.
    pub async fn bind(settings: &Settings) -> anyhow::Result<Self> {
        let http = tracelab_service::http::bind(&settings.listen).await?;
        let grpc = if settings.grpc_listen.is_empty() {
            None
        } else {
            Some(tracelab_service::http::bind(&settings.grpc_listen).await?)
        };
        Ok(Self { http, grpc })
    }
}

/// Binds the configured addresses, then [`serve`]s until `shutdown`.
pub async fn run(settings: Settings, shutdown: Shutdown) -> anyhow::Result<()> {
    let listeners = Listeners::bind(&settings).await?;
    serve(settings, listeners, shutdown).await
}

/// Runs the HTTP and gRPC receivers on `listeners` and the intake consumer
/// until `shutdown`.
pub async fn serve(
    settings: Settings,
    listeners: Listeners,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let http_addr = listeners.http.local_addr()?;
    let grpc_addr = listeners
        .grpc
        .as_ref()
        .map(TcpListener::local_addr)
        .transpose()?;
    let parts = intake_parts(&settings)?;
    let auth = auth::Auth::new(&settings.tokens)?;
    tracelab_service::tokens::require_tokens(
        auth.is_open(),
        settings.allow_unauthenticated,
        "intake tokens",
        "any caller may send evidence (source = X-TraceLab-Source or peer address)",
    )?;
    let store = connect::store(&settings.fleet, &shutdown).await?;
    let bus = connect::bus(&settings.fleet, &shutdown).await?;
    let ingest = Arc::new(submission::Ingest::new(store.clone(), bus.clone(), parts));

    let readiness = tracelab_fleet::ready::readiness(&shutdown, &store, &bus);
    let readers = groups::Readers::new(&settings.viewer_tokens, auth.is_open())?;
    let router = http::routes(ingest.clone(), auth.clone())
        .merge(groups::routes(ingest.clone(), readers))
        .merge(health::routes(readiness));
    let http_server = tokio::spawn(http::serve(listeners.http, router, shutdown.clone()));
    let grpc_server = listeners.grpc.map(|l| {
        tokio::spawn(grpc::serve(
            l,
            ingest.clone(),
            auth.clone(),
            settings.limits.body_bytes,
            shutdown.clone(),
        ))
    });

    let topology = settings.fleet.topology();
    let spec = worker::with_delivery(
        ConsumerSpec::new(topology.intake_stream(), DURABLE),
        settings.ack_wait_seconds,
        settings.max_deliveries,
    );
    let options = WorkerOptions {
        name: "ingest".into(),
        drain: Duration::from_secs(settings.fleet.drain_seconds),
    };
    tracing::info!(http = %http_addr, grpc = ?grpc_addr, "ingest ready");
    worker::run_pool(
        settings.intake_concurrency,
        bus.clone(),
        spec,
        options,
        shutdown.clone(),
        move |delivery| {
            let ingest = ingest.clone();
            async move { intake_queue::handle(&ingest, &delivery).await }
        },
    )
    .await?;
    http_server.await??;
    if let Some(g) = grpc_server {
        g.await??;
    }
    Ok(())
}

/// The binary's whole `main` (the end-to-end harness builds the same binary).
pub fn main() -> std::process::ExitCode {
    tracelab_service::launch("tracelab-ingest", |s: &Settings| s.fleet.otlp(), run)
}
