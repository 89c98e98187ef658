//! The investigator service: the public investigations API and the worker
//! that turns a request into hypotheses.
//!
//! - [`api`]: `POST /api/investigations` stores the investigation (CREATED)
//!   with its `…investigations.<id>.requested` event in the outbox, then
//!   publishes it (the outbox relay runs here too); reads and reviews go
//!   straight to the store. The same operations over gRPC ([`grpc`]).
//! - [`proposer`]: the durable consumer of `requested`: reproduce, run the
//!   agents, store the proposal (VERIFYING), publish one verify job per
//!   hypothesis that needs a sandbox and `…arbitrate.proposed`.
//! - [`notifications`]: signed webhooks and Jira comments through
//!   `tracelab-notify` (each stage stores its own with its write; the
//!   dispatcher sends them), the Jira intake's starter, and the consumer
//!   that hears of the arbiter's decisions.

pub mod api;
pub mod auth;
pub mod dashboard;
pub mod grpc;
pub mod notifications;
pub mod openapi;
pub mod proposer;
pub mod pull_request;
pub mod repositories;
pub mod rest;
pub mod schema;
pub mod suggestions;

use serde::{Deserialize, Serialize};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tracelab_bus::{Bus, ConsumerSpec, Delivery};
use tracelab_fleet::events::steps;
use tracelab_fleet::sandbox::SandboxSettings;
use tracelab_fleet::worker::{self, WorkerOptions};
use tracelab_fleet::{FleetSettings, connect};
use tracelab_notify::jira::JiraSettings;
use tracelab_notify::jira::webhook::JiraIntake;
use tracelab_notify::webhooks::{WebhookSettings, Webhooks};
use tracelab_service::health;
use tracelab_service::{Shutdown, http};

/// The durable consumer of investigation requests.
pub const DURABLE: &str = "investigator";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Settings {
    pub fleet: FleetSettings,
    /// REST API, health and readiness.
    pub listen: String,
    /// gRPC investigations API.
    pub grpc_listen: String,
    /// Investigations this process works on at once.
    pub concurrency: usize,
    pub ack_wait_seconds: u64,
    pub max_deliveries: u32,
    /// How long verifiers get before the arbiter decides without them.
    pub verification_deadline_seconds: u64,
    pub sandbox: SandboxSettings,
    /// API bearer tokens; without any the service refuses to start unless
    /// `allow_unauthenticated`.
    pub tokens: Vec<auth::TokenSetting>,
    /// Serve without tokens, every caller an admin: a development machine only.
    pub allow_unauthenticated: bool,
    /// Start the investigations ingest's failure-group policy suggests
    /// (`<prefix>.evidence.suggested`) when their evidence says how.
    pub auto_investigate: bool,
    /// Local checkouts of repositories that evidence names by URL
    /// (`"https://github.com/acme/shop" = "/var/lib/tracelab/repos/shop"`).
    pub repositories: std::collections::BTreeMap<String, String>,
    /// The review dashboard on `listen` (`/investigations`), signed in with
    /// an API token.
    pub dashboard: DashboardSettings,
    /// Who may review what (`review.forbid_self_approval`).
    pub review: pull_request::ReviewSettings,
    /// Code hosts for `POST /api/investigations/{id}/pull-request`.
    pub pull_requests: pull_request::PullRequestSettings,
    /// Signed outgoing webhooks per stage (`webhooks.urls`, `webhooks.secret_file`).
    pub webhooks: WebhookSettings,
    /// Jira: issues start investigations (`jira.intake`), decisions are
    /// commented on them (`jira.base_url`, `jira.token_file`).
    pub jira: JiraSettings,
    /// How often the dispatcher of webhooks and Jira comments looks for
    /// retries and for what another process (or a restart) left.
    pub notifications_poll_ms: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct DashboardSettings {
    pub enabled: bool,
    /// Mark the session cookie `Secure`: set it where browsers reach the
    /// API over HTTPS (directly or through an ingress).
    pub secure_cookie: bool,
    /// A session ends this long after sign-in.
    pub session_hours: u64,
}

impl Default for DashboardSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            secure_cookie: false,
            session_hours: 8,
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            fleet: FleetSettings::default(),
            listen: "127.0.0.1:8080".into(),
            grpc_listen: "127.0.0.1:8081".into(),
            concurrency: 2,
            ack_wait_seconds: 30,
            max_deliveries: 5,
            verification_deadline_seconds: 1800,
            sandbox: SandboxSettings::default(),
            tokens: Vec::new(),
            allow_unauthenticated: false,
            auto_investigate: true,
            repositories: Default::default(),
            dashboard: DashboardSettings::default(),
            review: Default::default(),
            pull_requests: Default::default(),
            webhooks: Default::default(),
            jira: Default::default(),
            notifications_poll_ms: 1000,
        }
    }
}

/// Runs the API servers and the worker until `shutdown`.
pub async fn run(settings: Settings, shutdown: Shutdown) -> anyhow::Result<()> {
    let auth = auth::Auth::new(&settings.tokens)?;
    tracelab_service::tokens::require_tokens(
        auth.is_open(),
        settings.allow_unauthenticated,
        "API tokens",
        "the API accepts every caller as admin",
    )?;
    let rest_listener = http::bind(&settings.listen).await?;
    let grpc_listener = http::bind(&settings.grpc_listen).await?;
    let repositories =
        tracelab_fleet::repositories::Repositories::new(&settings.fleet.repositories)?;
    let store = connect::store(&settings.fleet, &shutdown).await?;
    let bus = connect::bus(&settings.fleet, &shutdown).await?;
    let outgoing = tracelab_notify::Outgoing::new(
        Arc::new(store.clone()),
        Arc::new(notifications::StoredViews(store.clone())),
        Webhooks::new(&settings.webhooks)?,
        tracelab_notify::jira::client::Client::new(&settings.jira)?,
        &settings.jira,
    )
    .map(Arc::new);
    let api = Arc::new(api::Api {
        store: store.clone(),
        bus: bus.clone(),
        verification_deadline: Duration::from_secs(settings.verification_deadline_seconds),
        sandbox: settings.sandbox.clone(),
        checkouts: repositories::RepositoryMap::new(&settings.repositories),
        repositories: repositories.clone(),
        forbid_self_approval: settings.review.forbid_self_approval && !auth.is_open(),
        pull_requests: pull_request::PullRequests::new(
            &settings.pull_requests,
            &settings.fleet.repositories,
        )?,
        outgoing: outgoing.clone(),
    });
    let dispatcher = outgoing.map(|out| {
        let shutdown = shutdown.clone();
        tokio::spawn(out.run(
            Duration::from_millis(settings.notifications_poll_ms.max(10)),
            async move { shutdown.requested().await },
        ))
    });
    let readiness = tracelab_fleet::ready::readiness(&shutdown, &store, &bus);
    let (every, grace) = settings.fleet.outbox_relay();
    let relay = tokio::spawn(tracelab_fleet::outbox::relay(
        bus.clone(),
        store.clone(),
        every,
        grace,
        shutdown.clone(),
    ));
    let jira = JiraIntake::new(api.clone(), api.outgoing.clone(), &settings.jira.intake)?;
    let mut router = rest::routes(api.clone(), auth.clone(), jira.map(Arc::new))
        .merge(health::routes(readiness));
    if settings.dashboard.enabled {
        router = router.merge(dashboard::router(
            api.clone(),
            auth.clone(),
            &settings.dashboard,
        ));
    }
    let rest_server = tokio::spawn(http::serve(rest_listener, router, shutdown.clone()));
    let grpc_server = tokio::spawn(grpc::serve(
        grpc_listener,
        api.clone(),
        auth,
        shutdown.clone(),
    ));

    let investigator = Arc::new(proposer::Investigator {
        bus: bus.clone(),
        store,
        sandboxes: tracelab_fleet::sandbox::provider(&settings.sandbox).await?,
        sandbox: settings.sandbox.clone(),
        verification_deadline: Duration::from_secs(settings.verification_deadline_seconds),
        repositories,
    });
    let topology = settings.fleet.topology();
    let spec = worker::with_delivery(
        ConsumerSpec::new(topology.investigations_stream(), DURABLE)
            .filter(topology.investigation_steps(steps::REQUESTED)),
        settings.ack_wait_seconds,
        settings.max_deliveries,
    );
    let options = WorkerOptions {
        name: "investigator".into(),
        drain: Duration::from_secs(settings.fleet.drain_seconds),
    };
    let consumers = Consumers {
        settings: &settings,
        bus: bus.clone(),
        api: api.clone(),
        drain: options.drain,
        shutdown: &shutdown,
    };
    let suggested = settings.auto_investigate.then(|| {
        consumers.spawn(
            "suggestions",
            ConsumerSpec::new(topology.evidence_stream(), suggestions::DURABLE)
                .filter(topology.evidence("suggested")),
            |api, d| async move { suggestions::handle(&api, &d).await },
        )
    });
    // The arbiter decides; webhooks and Jira hear of it from its event.
    let decided = api.outgoing.is_some().then(|| {
        consumers.spawn(
            "notifications",
            ConsumerSpec::new(
                topology.investigations_stream(),
                notifications::DECIDED_DURABLE,
            )
            .filter(topology.investigation_steps(steps::DECIDED)),
            |api, d| async move { notifications::on_decided(&api, &d).await },
        )
    });
    tracing::info!(rest = %settings.listen, grpc = %settings.grpc_listen, auto_investigate = settings.auto_investigate, "investigator ready");
    worker::run_pool(
        settings.concurrency,
        bus,
        spec,
        options,
        shutdown.clone(),
        move |delivery| {
            let investigator = investigator.clone();
            async move { investigator.handle(delivery).await }
        },
    )
    .await?;
    if let Some(s) = suggested {
        s.await??;
    }
    if let Some(d) = decided {
        d.await??;
    }
    if let Some(d) = dispatcher {
        d.await?;
    }
    rest_server.await??;
    grpc_server.await??;
    relay.await?;
    Ok(())
}

/// What the investigator's side consumers share: the delivery settings,
/// the bus, the API they call and the shutdown they drain on.
struct Consumers<'a> {
    settings: &'a Settings,
    bus: Arc<tracelab_bus::JetStreamBus>,
    api: Arc<api::Api>,
    drain: Duration,
    shutdown: &'a Shutdown,
}

impl Consumers<'_> {
    /// A durable consumer named `name` of `spec` (with the service's ack
    /// wait and delivery limit), each delivery handed to `handle` with
    /// the API, until shutdown.
    fn spawn<F, Fut>(
        &self,
        name: &str,
        spec: ConsumerSpec,
        handle: F,
    ) -> JoinHandle<tracelab_domain::Result<()>>
    where
        F: Fn(Arc<api::Api>, Arc<Delivery>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = tracelab_domain::Result<()>> + Send + 'static,
    {
        let spec = worker::with_delivery(
            spec,
            self.settings.ack_wait_seconds,
            self.settings.max_deliveries,
        );
        let options = WorkerOptions {
            name: name.into(),
            drain: self.drain,
        };
        let api = self.api.clone();
        let bus: Arc<dyn Bus> = self.bus.clone();
        tokio::spawn(worker::run(
            bus,
            spec,
            options,
            self.shutdown.clone(),
            move |d| handle(api.clone(), d),
        ))
    }
}

/// The binary's whole `main` (the end-to-end harness builds the same binary).
pub fn main() -> std::process::ExitCode {
    tracelab_service::launch("tracelab-investigator", |s: &Settings| s.fleet.otlp(), run)
}
