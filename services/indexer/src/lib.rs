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
//! Beside it, `listen` serves `/healthz` and `/readyz` (PostgreSQL answers).
//! The service does not use NATS.

pub mod grpc;
pub mod past;
pub mod repos;
pub mod wire;
pub mod work;

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::net::TcpListener;
use tracelab_fleet::{FleetSettings, connect};
use tracelab_service::health::{self, Readiness};
use tracelab_service::tokens::{NamedToken, TokenTable};
use tracelab_service::{Shutdown, http};
use tracelab_store::PgGroupStore;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Settings {
    /// `postgres_url` / `postgres_schema` for past failures; NATS is unused.
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
    let service = grpc::Service {
        sources: tracelab_fleet::repositories::Repositories::new(&settings.fleet.repositories)?,
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
    Ok(())
}

/// The binary's whole `main` (the end-to-end harness builds the same binary).
pub fn main() -> std::process::ExitCode {
    tracelab_service::launch("tracelab-indexer", |s: &Settings| s.fleet.otlp(), run)
}
