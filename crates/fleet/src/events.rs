//! Protobuf events on the bus: encode on publish, decode on delivery (a
//! payload that does not decode is poison: InvalidArgument, dead-lettered),
//! and the id conventions that make every publish idempotent.

use tracelab_bus::{Bus, Delivery, Message, Published};
use tracelab_domain::{Error, Result};

/// Publishes `event` on `subject` with message id `id` and the current trace context.
pub async fn publish<M: prost::Message>(
    bus: &dyn Bus,
    subject: String,
    id: String,
    event: &M,
) -> Result<Published> {
    publish_encoded(bus, subject, id, event.encode_to_vec()).await
}

/// Publishes an already encoded event (one the outbox kept).
pub async fn publish_encoded(
    bus: &dyn Bus,
    subject: String,
    id: String,
    payload: Vec<u8>,
) -> Result<Published> {
    let mut message = Message::new(subject, id, payload);
    if let Some(tp) = tracelab_service::telemetry::traceparent(&tracing::Span::current()) {
        message = message.with_traceparent(tp);
    }
    message = message.with_header("content-type", "application/protobuf");
    bus.publish(message).await
}

/// Decodes the delivery's payload as `M`.
pub fn decode<M: prost::Message + Default>(delivery: &Delivery) -> Result<M> {
    M::decode(delivery.message.payload.as_ref()).map_err(|e| {
        Error::invalid(format!(
            "message {} on {} is not a valid {}: {e}",
            delivery.message.id,
            delivery.message.subject,
            std::any::type_name::<M>()
        ))
    })
}

/// Message ids: derived from what the message is about, so a retried
/// publish is de-duplicated by the server (`Nats-Msg-Id`).
pub mod ids {
    pub fn requested(investigation: &str) -> String {
        format!("{investigation}.requested")
    }
    pub fn verify_job(hypothesis: &str) -> String {
        format!("{hypothesis}.verify")
    }
    pub fn proposed(investigation: &str) -> String {
        format!("{investigation}.proposed")
    }
    pub fn verified(hypothesis: &str) -> String {
        format!("{hypothesis}.verified")
    }
    pub fn decided(investigation: &str) -> String {
        format!("{investigation}.decided")
    }
}

/// Subject steps under `<prefix>.investigations.<id>.` (see proto/tracelab/events/v1/pipeline.proto).
pub mod steps {
    pub const REQUESTED: &str = "requested";
    pub const PROPOSED: &str = "arbitrate.proposed";
    pub const ARBITRATE_ALL: &str = "arbitrate.>";
    pub const DECIDED: &str = "decided";
    pub fn verified(number: u32) -> String {
        format!("arbitrate.verified.{number}")
    }
}
