//! The indexer service: the code index and the failure history behind one
//! gRPC API (`tracelab.index.v1.Retrieval`, proto/tracelab/index/v1).
//!
//! - `Index`, `Locate`, `Neighbourhood`: `tracelab-code-index` on local
//!   repositories named by a URL the deployment allows (fetched into this
//!   indexer's mirror cache) or a path under `fleet.repositories.local_roots`
//!   — the one repository policy every service shares — with each
//!   repository's blob cache and last locators kept warm ([`repos`]) and the
//!   blocking work bounded by `concurrency` ([`work`]).
//! - `PastFailures`: failure groups from PostgreSQL by error or stack
//!   signature ([`past`]).
//!
//! - Mining ([`mining`], setting `mine_ci_reports`): the durable consumer
//!   `indexer-ci-reports` of ingest's `CiReportRecorded` events keeps each
//!   branch's CI reports and turns a completed failing → passing sequence
//!   into experience records (#16). It connects to NATS on its own task, so
//!   the Retrieval API serves while NATS is away.
//!
//! Beside it, `listen` serves `/healthz` and `/readyz` (PostgreSQL answers).

pub mod grpc;
pub mod history_git;
pub mod mining;
pub mod past;
pub mod repos;
pub mod wire;
pub mod work;

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tracelab_bus::{Bus, ConsumerSpec};
use tracelab_fleet::worker::{self, WorkerOptions};
use tracelab_fleet::{FleetSettings, connect};
use tracelab_service::health::{self, Readiness};
use tracelab_service::tokens::{NamedToken, TokenTable};
use tracelab_service::{Shutdown, http};
use tracelab_store::PgGroupStore;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Settings {
    /// `postgres_url` / `postgres_schema` for past failures and mining;
    /// `nats_url` for mining.
    pub fleet: FleetSettings,
    /// Health and readiness.
    pub listen: String,
    /// The Retrieval API.
    pub grpc_listen: String,
    /// Blob caches go to `<cache_dir>/<name>-<hash>`; empty = `<git dir>/tracelab/index`.
    pub cache_dir: String,
    /// Index / locate jobs running at once (each may use several cores).
    pub concurrency: usize,
    /// Bearer tokens callers must send (`authorization` metadata); without
    /// any the service refuses to start unless `allow_unauthenticated`.
    pub tokens: Vec<NamedToken>,
    /// Serve the index without tokens: a development machine only (the
    /// index holds the repositories' code).
    pub allow_unauthenticated: bool,
    /// Keep the CI reports ingest announces and mine completed failing →
    /// passing sequences into experience records.
    pub mine_ci_reports: bool,
    /// A sequence longer than this (commits) is not mined (a note).
    pub mine_max_commits: usize,
    /// How long a CI report event may go without an ack before redelivery.
    pub ack_wait_seconds: u64,
    /// Deliveries before a CI report event is dead-lettered.
    pub max_deliveries: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            fleet: FleetSettings::default(),
            listen: "127.0.0.1:8086".into(),
            grpc_listen: "127.0.0.1:8087".into(),
            cache_dir: String::new(),
            concurrency: 2,
            tokens: Vec::new(),
            allow_unauthenticated: false,
            mine_ci_reports: true,
            mine_max_commits: 100,
            ack_wait_seconds: 60,
            max_deliveries: 5,
        }
    }
}

/// The sockets the service answers on: bound from the settings by [`run`],
/// or on port 0 by a test, which then reads their addresses.
#[derive(Debug)]
pub struct Listeners {
    /// `/healthz` and `/readyz` (`listen`).
    pub health: TcpListener,
    /// The Retrieval API (`grpc_listen`).
    pub grpc: TcpListener,
}

impl Listeners {
    /// Binds `listen` and `grpc_listen`.
    pub async fn bind(settings: &Settings) -> anyhow::Result<Self> {
        Ok(Self {
            health: http::bind(&settings.listen).await?,
            grpc: http::bind(&settings.grpc_listen).await?,
        })
    }
}

/// Binds the configured addresses, then [`serve`]s until `shutdown`.
pub async fn run(settings: Settings, shutdown: Shutdown) -> anyhow::Result<()> {
    let listeners = Listeners::bind(&settings).await?;
    serve(settings, listeners, shutdown).await
}

/// Serves health and the Retrieval API on `listeners` until `shutdown`.
pub async fn serve(
    settings: Settings,
    listeners: Listeners,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let health_addr = listeners.health.local_addr()?;
    let grpc_addr = listeners.grpc.local_addr()?;
    let tokens = TokenTable::named("indexer token", &settings.tokens)?;
    tracelab_service::tokens::require_tokens(
        tokens.is_open(),
        settings.allow_unauthenticated,
        "indexer tokens",
        "any caller may read the indexed code",
    )?;
    let store = connect::store(&settings.fleet, &shutdown).await?;
    let readiness = Readiness::new(shutdown.clone()).check("postgres", {
        let store = store.clone();
        move || {
            let store = store.clone();
            async move { store.ping().await }
        }
    });
    let sources = tracelab_fleet::repositories::Repositories::new(&settings.fleet.repositories)?;
    let miner = settings.mine_ci_reports.then(|| {
        tokio::spawn(mine_ci_reports(
            settings.clone(),
            mining::Miner {
                store: store.clone(),
                sources: sources.clone(),
                max_commits: settings.mine_max_commits,
            },
            shutdown.clone(),
        ))
    });
    let service = grpc::Service {
        sources,
        repos: Arc::new(repos::Repositories::new(
            Some(PathBuf::from(&settings.cache_dir)).filter(|d| !d.as_os_str().is_empty()),
        )),
        workers: work::Workers::new(settings.concurrency),
        groups: PgGroupStore::new(store.pool().clone()),
        investigations: store.clone(),
    };
    let http_server = tokio::spawn(http::serve(
        listeners.health,
        health::routes(readiness),
        shutdown.clone(),
    ));
    let grpc_server = tokio::spawn(grpc::serve(
        listeners.grpc,
        service,
        tokens,
        shutdown.clone(),
    ));
    tracing::info!(health = %health_addr, grpc = %grpc_addr, "indexer ready");
    http_server.await??;
    grpc_server.await??;
    if let Some(miner) = miner {
        miner.await??;
    }
    Ok(())
}

/// The mining consumer until `shutdown`: connects to NATS (retrying), then
/// runs the consumer loop (settle by error kind: poison dead-lettered,
/// store or git failures retried).
async fn mine_ci_reports(
    settings: Settings,
    miner: mining::Miner,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let bus = match connect::bus(&settings.fleet, &shutdown).await {
        Ok(bus) => bus,
        // Shutdown before NATS answered.
        Err(_) if shutdown.is_requested() => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let topology = settings.fleet.topology();
    let spec = worker::with_delivery(
        ConsumerSpec::new(topology.evidence_stream(), mining::DURABLE)
            .filter(topology.ci_reports()),
        settings.ack_wait_seconds,
        settings.max_deliveries,
    );
    let options = WorkerOptions {
        name: mining::DURABLE.into(),
        drain: Duration::from_secs(settings.fleet.drain_seconds),
    };
    let miner = Arc::new(miner);
    let bus: Arc<dyn Bus> = bus;
    worker::run(bus, spec, options, shutdown, move |d| {
        let miner = miner.clone();
        async move { mining::handle(&miner, &d).await }
    })
    .await?;
    Ok(())
}

/// The binary's whole `main` (the end-to-end harness builds the same binary).
pub fn main() -> std::process::ExitCode {
    tracelab_service::launch("tracelab-indexer", |s: &Settings| s.fleet.otlp(), run)
}
