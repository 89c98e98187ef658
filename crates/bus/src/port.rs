//! The bus port: publish, open a durable consumer, settle deliveries. Both
//! implementations provide the raw operations ([`backend`]); the policy —
//! backoff, dead-lettering, the crash-loop guard — lives here, once.

use crate::dead_letter::DeadLetter;
use crate::message::{Message, Published};
use crate::outcome::{Outcome, Settled};
use crate::retry::RetryPolicy;
use crate::topology::Topology;
use std::sync::Arc;
use std::time::Duration;
use tracelab_domain::Result;

/// A message bus: JetStream for the fleet, in-process for one binary.
#[async_trait::async_trait]
pub trait Bus: Send + Sync + 'static {
    fn topology(&self) -> &Topology;
    /// Stores `message` in the stream capturing its subject. Fails with
    /// InvalidArgument when no stream does; a duplicate id inside the window
    /// is reported, not stored.
    async fn publish(&self, message: Message) -> Result<Published>;
    /// Opens (creating if needed) the durable consumer `spec.durable`. Several
    /// consumers opened with the same durable name share its messages.
    async fn consumer(&self, spec: ConsumerSpec) -> Result<Consumer>;
}

/// A durable pull consumer's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerSpec {
    pub stream: String,
    pub durable: String,
    /// Subject filter inside the stream (wildcards allowed).
    pub filter: String,
    /// A delivery not settled (nor progress-acked) within this time is redelivered.
    pub ack_wait: Duration,
    pub retry: RetryPolicy,
    /// Messages pulled per request (JetStream); their ack wait starts on arrival.
    pub batch: usize,
}

impl ConsumerSpec {
    /// A consumer of every subject of `stream`, ack wait 30 s, the default retry policy.
    pub fn new(stream: &crate::topology::StreamSpec, durable: impl Into<String>) -> Self {
        Self {
            stream: stream.name.clone(),
            durable: durable.into(),
            filter: stream.subjects[0].clone(),
            ack_wait: Duration::from_secs(30),
            retry: RetryPolicy::default(),
            batch: 1,
        }
    }
    pub fn filter(mut self, filter: impl Into<String>) -> Self {
        self.filter = filter.into();
        self
    }
    pub fn ack_wait(mut self, ack_wait: Duration) -> Self {
        self.ack_wait = ack_wait;
        self
    }
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }
    pub fn batch(mut self, batch: usize) -> Self {
        self.batch = batch.max(1);
        self
    }
    /// The server-side delivery cap: one more than the policy's, so a message
    /// whose consumers crashed on every delivery is seen once more and
    /// dead-lettered with a reason instead of silently stopping.
    pub fn server_max_deliver(&self) -> u32 {
        self.retry.max_deliveries.max(1) + 1
    }
}

/// What implementations provide; the policy on top is shared.
pub mod backend {
    use super::*;

    /// Settles one delivery on the server (or in memory).
    #[async_trait::async_trait]
    pub trait Acker: Send + Sync {
        async fn ack(&self) -> Result<()>;
        async fn nak(&self, delay: Duration) -> Result<()>;
        /// Work in progress: restart the ack wait.
        async fn progress(&self) -> Result<()>;
        /// Never redeliver (the caller has dead-lettered it).
        async fn term(&self) -> Result<()>;
    }

    /// A delivery before policy: the message, its delivery count (1 = first), how to settle it.
    pub struct RawDelivery {
        pub message: Message,
        pub delivered: u32,
        pub acker: Box<dyn Acker>,
    }

    /// Pulls deliveries for one durable consumer.
    #[async_trait::async_trait]
    pub trait RawConsumer: Send {
        async fn next(&mut self, wait: Duration) -> Result<Option<RawDelivery>>;
        /// The consumer's backlog as the server counts it; `None` where the
        /// implementation cannot tell.
        async fn backlog(&mut self) -> Result<Option<Backlog>> {
            Ok(None)
        }
    }
}

/// How much work waits for one durable consumer (all its instances together).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backlog {
    /// Messages matching the consumer not yet delivered to anyone.
    pub pending: u64,
    /// Messages delivered and not yet settled (in flight, or their consumer died).
    pub ack_pending: u64,
}

/// A durable consumer handle. Dropping it (or a [`Delivery`]) without
/// settling leaves the message to be redelivered after the ack wait.
pub struct Consumer {
    raw: Box<dyn backend::RawConsumer>,
    bus: Arc<dyn Bus>,
    retry: RetryPolicy,
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

impl Consumer {
    /// Used by implementations: `bus` publishes dead letters.
    pub fn new(raw: Box<dyn backend::RawConsumer>, bus: Arc<dyn Bus>, retry: RetryPolicy) -> Self {
        Self { raw, bus, retry }
    }

    /// The consumer's backlog (one server round trip on JetStream).
    pub async fn backlog(&mut self) -> Result<Option<Backlog>> {
        self.raw.backlog().await
    }

    /// The next delivery, waiting at most `wait`; `None` when none arrived.
    /// A message already delivered more often than the policy allows (its
    /// consumers crashed before settling it) is dead-lettered here and skipped.
    pub async fn next(&mut self, wait: Duration) -> Result<Option<Delivery>> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            let Some(raw) = self.raw.next(remaining).await? else {
                return Ok(None);
            };
            let delivery = Delivery {
                message: raw.message,
                delivered: raw.delivered,
                acker: raw.acker,
                bus: self.bus.clone(),
                retry: self.retry,
            };
            if delivery.delivered > self.retry.max_deliveries {
                let reason = format!(
                    "delivered {} times without being settled (consumer crashed or stalled past the ack wait)",
                    delivery.delivered - 1
                );
                tracing::warn!(subject = %delivery.message.subject, id = %delivery.message.id, %reason, "dead-lettering");
                delivery.dead_letter(&reason).await?;
                continue;
            }
            return Ok(Some(delivery));
        }
    }
}

/// One delivered message and the means to settle it.
pub struct Delivery {
    pub message: Message,
    /// 1 on the first delivery.
    pub delivered: u32,
    acker: Box<dyn backend::Acker>,
    bus: Arc<dyn Bus>,
    retry: RetryPolicy,
}

impl std::fmt::Debug for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivery")
            .field("message", &self.message)
            .field("delivered", &self.delivered)
            .finish_non_exhaustive()
    }
}

impl Delivery {
    pub async fn ack(self) -> Result<()> {
        self.acker.ack().await
    }

    /// Redeliver after `delay` (not counted as success).
    pub async fn nak(self, delay: Duration) -> Result<()> {
        self.acker.nak(delay).await
    }

    /// Still working: restarts the ack wait so a long job is not redelivered.
    pub async fn progress(&self) -> Result<()> {
        self.acker.progress().await
    }

    /// Publishes the message to the dead-letter subject with `reason`, then
    /// terminates it. The dead letter's id derives from the message id, so a
    /// crash between the two steps cannot produce two dead letters.
    pub async fn dead_letter(self, reason: &str) -> Result<()> {
        let topology = self.bus.topology();
        let subject = topology.dead_letter(&self.message.subject);
        let raw = topology
            .stream_for(&self.message.subject)
            .is_some_and(|s| s.raw_payload);
        let letter = DeadLetter::wrap(&self.message, subject, self.delivered, reason, raw);
        self.bus.publish(letter).await?;
        self.acker.term().await
    }

    /// Applies `outcome` with this consumer's retry policy.
    pub async fn settle(self, outcome: Outcome) -> Result<Settled> {
        let (subject, id, delivered) = (&self.message.subject, &self.message.id, self.delivered);
        match &outcome {
            Outcome::Ack => tracing::debug!(%subject, %id, delivered, "ack"),
            Outcome::Retry { reason } => tracing::info!(%subject, %id, delivered, %reason, "retry"),
            Outcome::Reject { reason } => {
                tracing::warn!(%subject, %id, delivered, %reason, "reject")
            }
        }
        match outcome {
            Outcome::Ack => {
                self.ack().await?;
                Ok(Settled::Acked)
            }
            Outcome::Retry { reason } if self.delivered >= self.retry.max_deliveries => {
                let reason = format!("{reason} (gave up after {} deliveries)", self.delivered);
                self.dead_letter(&reason).await?;
                Ok(Settled::DeadLettered { reason })
            }
            Outcome::Retry { .. } => {
                let delay = self.retry.delay(self.delivered);
                self.nak(delay).await?;
                Ok(Settled::Retrying { delay })
            }
            Outcome::Reject { reason } => {
                self.dead_letter(&reason).await?;
                Ok(Settled::DeadLettered { reason })
            }
        }
    }

    /// The payload as JSON of type `T`; a payload that does not parse is an
    /// InvalidArgument (so [`Outcome::from_error`] rejects it).
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
        serde_json::from_slice(&self.message.payload).map_err(|e| {
            tracelab_domain::Error::invalid(format!(
                "message {} on {} is not valid JSON for its type: {e}",
                self.message.id, self.message.subject
            ))
        })
    }
}

/// Publishes `value` as JSON.
pub async fn publish_json<T: serde::Serialize>(
    bus: &dyn Bus,
    subject: impl Into<String>,
    id: impl Into<String>,
    value: &T,
    traceparent: Option<&str>,
) -> Result<Published> {
    let payload = serde_json::to_vec(value)
        .map_err(|e| tracelab_domain::Error::internal(format!("cannot encode message: {e}")))?;
    let mut message = Message::new(subject, id, payload);
    message.traceparent = traceparent.map(str::to_string);
    bus.publish(message).await
}
