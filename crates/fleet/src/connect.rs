//! Connections made at start-up, retried with exponential backoff (backon)
//! until they succeed or shutdown is requested: a service started before its
//! NATS or PostgreSQL waits for them instead of crash-looping.

use crate::FleetSettings;
use backon::{ExponentialBuilder, Retryable};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tracelab_bus::JetStreamBus;
use tracelab_domain::{Error, Result};
use tracelab_service::Shutdown;
use tracelab_store::{PgOptions, PgStore};

fn backoff() -> ExponentialBuilder {
    ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(200))
        .with_max_delay(Duration::from_secs(5))
        .without_max_times()
}

async fn until_connected<T, F, Fut>(what: &str, shutdown: &Shutdown, connect: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let attempt = connect
        .retry(backoff())
        .when(|e: &Error| e.kind == tracelab_domain::ErrorKind::Unavailable)
        .notify(
            |e, delay| tracing::warn!(error = %e, ?delay, "{what} not reachable yet; retrying"),
        );
    tokio::select! {
        result = attempt => result,
        _ = shutdown.requested() => Err(Error::unavailable(format!("shut down while connecting to {what}"))),
    }
}

/// The JetStream bus with the fleet's streams in place.
pub async fn bus(settings: &FleetSettings, shutdown: &Shutdown) -> Result<Arc<JetStreamBus>> {
    let topology = settings.topology();
    let bus = until_connected("NATS", shutdown, || {
        JetStreamBus::connect(&settings.nats_url, topology.clone())
    })
    .await?;
    Ok(Arc::new(bus))
}

/// The PostgreSQL store, migrated.
pub async fn store(settings: &FleetSettings, shutdown: &Shutdown) -> Result<PgStore> {
    let options = PgOptions {
        schema: Some(settings.postgres_schema.clone()).filter(|s| !s.is_empty()),
        ..PgOptions::default()
    };
    until_connected("PostgreSQL", shutdown, || {
        PgStore::connect(&settings.postgres_url, options.clone())
    })
    .await
}
