//! The arbiter: listens to `…investigations.*.arbitrate.>` (a proposal was
//! stored, a hypothesis was verified) and decides an investigation once none
//! of its hypotheses is pending — or, from a periodic sweep, once its
//! verification deadline has passed (pending hypotheses then count as
//! BLOCKED). The decision is the engine's [`conclude`] (winner by evidence,
//! never by confidence), stored with both transitions in one transaction;
//! a second arbiter or a redelivery finds the state moved on and does nothing.
//! The `decided` event is stored with the decision (the outbox), so an
//! arbiter that dies between the two leaves it to the relay, not lost.
//! A verifier that stores a result while an overdue decision is being made
//! makes that decision conflict; it is made again with the result.

use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
use tracelab_bus::{Bus, ConsumerSpec, Delivery, JetStreamBus};
use tracelab_domain::hypothesis::HypothesisStatus;
use tracelab_domain::ids::{HypothesisId, InvestigationId};
use tracelab_domain::state::InvestigationState;
use tracelab_domain::{Error, ErrorKind, Result};
use tracelab_engine::agents::test_behaviour::Classification;
use tracelab_engine::phases::{Proposal, conclude};
use tracelab_fleet::events::{self, ids, steps};
use tracelab_fleet::outbox;
use tracelab_fleet::worker::{self, WorkerOptions};
use tracelab_fleet::{FleetSettings, connect};
use tracelab_proto::events::v1::{HypothesesProposed, HypothesisVerified, InvestigationDecided};
use tracelab_service::health;
use tracelab_service::{Shutdown, http};
use tracelab_store::PgStore;

pub const DURABLE: &str = "arbiter";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Settings {
    pub fleet: FleetSettings,
    pub listen: String,
    pub ack_wait_seconds: u64,
    pub max_deliveries: u32,
    /// How often overdue investigations are looked for.
    pub sweep_seconds: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            fleet: FleetSettings::default(),
            listen: "127.0.0.1:8084".into(),
            ack_wait_seconds: 30,
            max_deliveries: 5,
            sweep_seconds: 10,
        }
    }
}

pub struct Arbiter {
    bus: Arc<JetStreamBus>,
    store: PgStore,
}

impl Arbiter {
    pub fn new(bus: Arc<JetStreamBus>, store: PgStore) -> Self {
        Self { bus, store }
    }
}

pub async fn run(settings: Settings, shutdown: Shutdown) -> anyhow::Result<()> {
    let listener = http::bind(&settings.listen).await?;
    let store = connect::store(&settings.fleet, &shutdown).await?;
    let bus = connect::bus(&settings.fleet, &shutdown).await?;
    let readiness = tracelab_fleet::ready::readiness(&shutdown, &store, &bus);
    let server = tokio::spawn(http::serve(
        listener,
        health::routes(readiness),
        shutdown.clone(),
    ));
    let arbiter = Arc::new(Arbiter::new(bus.clone(), store));
    let (every, grace) = settings.fleet.outbox_relay();
    let relay = tokio::spawn(tracelab_fleet::outbox::relay(
        bus.clone(),
        arbiter.store.clone(),
        every,
        grace,
        shutdown.clone(),
    ));
    let sweeper = tokio::spawn(sweep(
        arbiter.clone(),
        Duration::from_secs(settings.sweep_seconds.max(1)),
        shutdown.clone(),
    ));
    let topology = settings.fleet.topology();
    let spec = worker::with_delivery(
        ConsumerSpec::new(topology.investigations_stream(), DURABLE)
            .filter(topology.investigation_steps(steps::ARBITRATE_ALL)),
        settings.ack_wait_seconds,
        settings.max_deliveries,
    );
    let options = WorkerOptions {
        name: "arbiter".into(),
        drain: Duration::from_secs(settings.fleet.drain_seconds),
    };
    tracing::info!("arbiter ready");
    let bus_dyn: Arc<dyn Bus> = bus.clone();
    worker::run(bus_dyn, spec, options, shutdown.clone(), move |delivery| {
        let arbiter = arbiter.clone();
        async move { arbiter.handle(delivery).await }
    })
    .await?;
    sweeper.await?;
    relay.await?;
    server.await??;
    Ok(())
}

async fn sweep(arbiter: Arc<Arbiter>, every: Duration, shutdown: Shutdown) {
    let mut ticker = tokio::time::interval(every);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = shutdown.requested() => return,
        }
        match arbiter
            .store
            .overdue(time::OffsetDateTime::now_utc(), 100)
            .await
        {
            Ok(ids) => {
                for id in ids {
                    if let Err(e) = arbiter.decide(&id, true).await {
                        tracing::warn!(investigation = %id, error = %e, "overdue decision failed");
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot look for overdue investigations"),
        }
        record_states(&arbiter.store).await;
    }
}

/// Sets `tracelab_investigations{state}` for every state, from the store
/// (the fleet's count, whichever arbiter replica reports it).
async fn record_states(store: &PgStore) {
    match store.counts_by_state().await {
        Ok(counts) => {
            for state in InvestigationState::ALL {
                let n = counts
                    .iter()
                    .find(|(s, _)| s == state.as_str())
                    .map_or(0, |(_, n)| *n);
                metrics::gauge!("tracelab_investigations", "state" => state.as_str()).set(n as f64);
            }
        }
        Err(e) => tracing::debug!(error = %e, "cannot count investigations by state"),
    }
}

impl Arbiter {
    async fn handle(&self, delivery: Arc<Delivery>) -> Result<()> {
        let subject = &delivery.message.subject;
        let investigation = if subject.ends_with(".arbitrate.proposed") {
            events::decode::<HypothesesProposed>(&delivery)?.investigation_id
        } else if subject.contains(".arbitrate.verified.") {
            events::decode::<HypothesisVerified>(&delivery)?.investigation_id
        } else {
            return Err(Error::invalid(format!(
                "the arbiter does not handle {subject}"
            )));
        };
        self.decide(&InvestigationId(investigation), false).await
    }

    /// Decides `id` when nothing is pending (or `overdue`). Idempotent.
    pub async fn decide(&self, id: &InvestigationId, overdue: bool) -> Result<()> {
        const ATTEMPTS: usize = 3;
        let mut attempt = 1;
        loop {
            match self.decide_once(id, overdue).await {
                Err(e) if e.kind == ErrorKind::Conflict && attempt < ATTEMPTS => {
                    tracing::info!(investigation = %id, error = %e, "deciding again");
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    async fn decide_once(&self, id: &InvestigationId, overdue: bool) -> Result<()> {
        let input = self
            .store
            .arbitration_input(id)
            .await?
            .ok_or_else(|| Error::not_found(format!("no proposal stored for {id}")))?;
        if input.state != InvestigationState::Verifying {
            return Ok(());
        }
        let mut hypotheses = input.hypotheses;
        let expired: Vec<HypothesisId> = hypotheses
            .iter()
            .filter(|h| h.status == HypothesisStatus::Pending)
            .map(|h| h.id.clone())
            .collect();
        let pending = expired.len();
        if pending > 0 && !overdue {
            tracing::debug!(investigation = %id, pending, "waiting for verifiers");
            return Ok(());
        }
        for h in hypotheses
            .iter_mut()
            .filter(|h| h.status == HypothesisStatus::Pending)
        {
            h.status = HypothesisStatus::Blocked;
            h.status_reason = "no verifier finished it before the verification deadline".into();
        }
        let classification: Classification =
            serde_json::from_value(input.proposal.classification.clone())
                .map_err(|e| Error::internal(format!("stored classification of {id}: {e}")))?;
        let proposal: Proposal = serde_json::from_value(input.proposal.proposal.clone())
            .map_err(|e| Error::internal(format!("stored proposal of {id}: {e}")))?;
        let mut report = conclude(
            id,
            input.proposal.test_command.clone(),
            input.proposal.bad.clone(),
            &classification,
            proposal,
            hypotheses,
        );
        report.repository = input.repository;
        report.created_at = input.created_at;
        report.duration_ms = (time::OffsetDateTime::now_utc() - input.created_at)
            .whole_milliseconds()
            .max(0) as u64;
        if overdue {
            report.notes.push(format!(
                "decided at the verification deadline with {pending} hypothesis(es) unverified"
            ));
        }
        let topology = self.bus.topology().clone();
        let announce = outbox::message(
            topology.investigation_step(&id.0, steps::DECIDED),
            ids::decided(&id.0),
            &InvestigationDecided {
                investigation_id: id.0.clone(),
                state: InvestigationState::WaitingForReview.as_str().to_string(),
                verdict: report.verdict.as_str().to_string(),
                winner_hypothesis_id: report
                    .winner
                    .as_ref()
                    .map(|w| w.id.0.clone())
                    .unwrap_or_default(),
            },
        );
        if !self
            .store
            .save_decision(&report, &expired, &announce)
            .await?
        {
            return Ok(());
        }
        tracing::info!(investigation = %id, verdict = report.verdict.as_str(), "decided");
        metrics::counter!(
            "tracelab_investigations_decided_total",
            "verdict" => report.verdict.as_str(),
            "at_deadline" => if overdue { "true" } else { "false" }
        )
        .increment(1);
        // Stored with the decision: the relay publishes it if this does not.
        if let Err(e) = outbox::deliver(self.bus.as_ref() as &dyn Bus, &self.store, &announce).await
        {
            tracing::warn!(investigation = %id, error = %e, "decided event left to the outbox relay");
        }
        Ok(())
    }
}

/// The binary's whole `main` (the end-to-end harness builds the same binary).
pub fn main() -> std::process::ExitCode {
    tracelab_service::launch("tracelab-arbiter", |s: &Settings| s.fleet.otlp(), run)
}
