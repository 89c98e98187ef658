//! Events that must follow a state change go through the store's outbox
//! ([`tracelab_store::outbox`]): the writer builds the event with
//! [`message`], stores it in the transaction of the change, then
//! [`deliver`]s it; [`relay`] publishes what a crash or an unreachable bus
//! left behind.

use crate::events;
use std::sync::Arc;
use std::time::Duration;
use tracelab_bus::Bus;
use tracelab_domain::Result;
use tracelab_service::Shutdown;
use tracelab_store::{OutboxMessage, PgStore};

/// How many waiting events one relay pass publishes at most.
const RELAY_BATCH: u32 = 100;

/// `event` as an outbox row for `subject` with message id `id`.
pub fn message<M: prost::Message>(subject: String, id: String, event: &M) -> OutboxMessage {
    OutboxMessage {
        id,
        subject,
        payload: event.encode_to_vec(),
    }
}

/// Publishes a stored outbox row and deletes it once the bus acknowledged
/// it. On an error the row stays for the relay.
pub async fn deliver(bus: &dyn Bus, store: &PgStore, message: &OutboxMessage) -> Result<()> {
    events::publish_encoded(
        bus,
        message.subject.clone(),
        message.id.clone(),
        message.payload.clone(),
    )
    .await?;
    store.outbox_sent(&message.id).await
}

/// One relay pass: publishes every row older than `grace`. Returns how
/// many were published.
pub async fn relay_once(bus: &dyn Bus, store: &PgStore, grace: Duration) -> Result<usize> {
    let due = store.outbox_due(grace, RELAY_BATCH).await?;
    for message in &due {
        deliver(bus, store, message).await?;
        metrics::counter!("tracelab_outbox_relayed_total").increment(1);
        tracing::info!(message = %message.id, subject = %message.subject, "outbox relay published an event its writer did not");
    }
    Ok(due.len())
}

/// Relay passes every `every` until `shutdown`; errors are logged and the
/// next pass tries again.
pub async fn relay(
    bus: Arc<dyn Bus>,
    store: PgStore,
    every: Duration,
    grace: Duration,
    shutdown: Shutdown,
) {
    let mut ticker = tokio::time::interval(every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = shutdown.requested() => return,
        }
        if let Err(e) = relay_once(bus.as_ref(), &store, grace).await {
            tracing::warn!(error = %e, "outbox relay pass failed; retrying on the next tick");
        }
    }
}
