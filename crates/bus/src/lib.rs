//! The fleet's message bus: typed publish and consume over durable streams,
//! with one ack policy for every consumer.
//!
//! Two implementations sit behind one port ([`Bus`]): [`JetStreamBus`] for
//! the fleet (NATS JetStream) and [`MemoryBus`] for the one-binary mode and
//! unit tests. `conformance` (feature `testsuite`) is the single behaviour
//! suite both run.
//!
//! How a message travels:
//!
//! 1. A producer publishes a [`Message`] — subject, unique id, payload, W3C
//!    `traceparent` — usually through [`publish_json`]. The [`Topology`]
//!    names the stream that captures the subject (`tracelab.evidence.>`,
//!    `tracelab.investigations.>`, the `tracelab.jobs.verify` work
//!    queue, `tracelab.dlq.>`); a second publish with the same id inside the
//!    duplicate window is dropped (`Nats-Msg-Id` on JetStream).
//! 2. A service opens a durable pull [`Consumer`] ([`ConsumerSpec`]: stream,
//!    durable name, filter, ack wait, [`RetryPolicy`]). Consumers opened with
//!    the same durable name share the messages; on a work queue each job goes
//!    to one of them.
//! 3. [`Consumer::next`] yields a [`Delivery`] with its delivery count. Long
//!    work calls [`Delivery::progress`] to restart the ack wait. A delivery
//!    that is dropped unsettled (crash) comes back after the ack wait.
//! 4. The handler's `Result` becomes an [`Outcome`] through the one mapping of
//!    [`tracelab_domain::ErrorKind`] ([`Outcome::from_error`]), and
//!    [`Delivery::settle`] applies it: ack; nak with exponential backoff; or,
//!    for poison messages and after the last allowed delivery, a dead letter
//!    on `tracelab.dlq.<subject>` carrying the original subject, delivery
//!    count and error as headers, then `term`.
//!
//! Consumers that write to PostgreSQL record the message id in the same
//! transaction as their results (`tracelab_store::record_once`) and ack after
//! the commit, so a redelivery is a no-op.

#[cfg(feature = "testsuite")]
pub mod conformance;
mod dead_letter;
mod jetstream;
mod memory;
mod message;
mod outcome;
mod port;
mod retry;
mod topology;

pub use dead_letter::DeadLetter;
pub use jetstream::{JetStreamBus, install_crypto_provider};
pub use memory::MemoryBus;
pub use message::{Message, Published, TRACEPARENT};
pub use outcome::{Outcome, Settled};
pub use port::{Backlog, Bus, Consumer, ConsumerSpec, Delivery, backend, publish_json};
pub use retry::RetryPolicy;
pub use topology::{Retention, StreamSpec, Topology, subject_matches};
