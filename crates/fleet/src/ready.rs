//! The readiness every fleet service reports: its PostgreSQL and NATS answer.

use std::sync::Arc;
use tracelab_bus::JetStreamBus;
use tracelab_service::Shutdown;
use tracelab_service::health::Readiness;
use tracelab_store::PgStore;

/// `/readyz` checks for a service that uses both backends; add more with `.check`.
pub fn readiness(shutdown: &Shutdown, store: &PgStore, bus: &Arc<JetStreamBus>) -> Readiness {
    Readiness::new(shutdown.clone())
        .check("postgres", {
            let store = store.clone();
            move || {
                let store = store.clone();
                async move { store.ping().await }
            }
        })
        .check("nats", {
            let bus = bus.clone();
            move || {
                let bus = bus.clone();
                async move { bus.ping().await }
            }
        })
}
