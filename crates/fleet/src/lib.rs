//! What the five services share besides the domain: their common settings
//! ([`settings`]), connections that retry with backoff ([`connect`]),
//! protobuf events on the bus ([`events`]) and the consumer loop that turns a
//! handler's result into ack / nak / dead letter while keeping long jobs
//! alive with progress acks ([`worker`]), and events that must follow a
//! state change, published through the store's outbox ([`outbox`]), and
//! the draft pull request of an approved investigation, its branch rebuilt
//! from the stored patch ([`pull_request`]).

pub mod connect;
pub mod events;
mod metered;
pub mod outbox;
pub mod pull_request;
pub mod ready;
pub mod repositories;
pub mod sandbox;
pub mod settings;
pub mod worker;

pub use settings::FleetSettings;
