//! The fleet's bus on NATS JetStream: one stream per event family (limits
//! retention for events and dead letters, work-queue retention for jobs),
//! durable pull consumers with explicit acks, `Nats-Msg-Id` de-duplication,
//! the W3C `traceparent` as a header. Publishes (idempotent thanks to the
//! message id) and the initial connection are retried with `backon`; after
//! that the client reconnects by itself with our backoff.

use crate::message::{Message, Published, TRACEPARENT};
use crate::port::backend::{Acker, RawConsumer, RawDelivery};
use crate::port::{Backlog, Bus, Consumer, ConsumerSpec};
use crate::retry::RetryPolicy;
use crate::topology::{Retention, Topology};
use async_nats::header::HeaderMap;
use async_nats::jetstream::{self, AckKind, consumer::pull, message::PublishMessage, stream};
use backon::{ExponentialBuilder, Retryable};
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tracelab_domain::{Error, ErrorKind, Result};

/// Installs rustls' ring crypto provider as the process default, once.
/// async-nats (and sqlx, tonic) use ring; without one default, rustls cannot
/// choose at run time when another crate brings aws-lc-rs.
pub fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Err means another provider was installed first: keep it.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Backoff between reconnection attempts and for our own retries.
const RECONNECT: RetryPolicy = RetryPolicy {
    max_deliveries: u32::MAX,
    min_delay: Duration::from_millis(50),
    max_delay: Duration::from_secs(2),
};

fn retry_backoff(times: usize) -> ExponentialBuilder {
    ExponentialBuilder::default()
        .with_min_delay(RECONNECT.min_delay)
        .with_max_delay(RECONNECT.max_delay)
        .with_max_times(times)
}

/// The de-duplication header.
const MESSAGE_ID: &str = "Nats-Msg-Id";

fn unavailable(what: &str, e: impl std::fmt::Display) -> Error {
    Error::unavailable(format!("{what}: {e}"))
}

/// The JetStream bus. Cheap to clone; clones share one connection.
#[derive(Clone)]
pub struct JetStreamBus {
    client: async_nats::Client,
    js: jetstream::Context,
    topology: Arc<Topology>,
}

impl std::fmt::Debug for JetStreamBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JetStreamBus")
            .field("topology", &self.topology)
            .finish_non_exhaustive()
    }
}

impl JetStreamBus {
    /// Connects (retrying for about ten seconds), then creates the
    /// topology's streams that do not exist yet.
    pub async fn connect(url: &str, topology: Topology) -> Result<Self> {
        install_crypto_provider();
        let connect = || async {
            async_nats::ConnectOptions::new()
                .connection_timeout(Duration::from_secs(5))
                .reconnect_delay_callback(|attempts| RECONNECT.delay(attempts as u32))
                .max_reconnects(None)
                .connect(url)
                .await
                .map_err(|e| unavailable(&format!("cannot connect to NATS at {url}"), e))
        };
        let client = connect
            .retry(retry_backoff(10))
            .notify(|e, delay| tracing::warn!(error = %e, ?delay, "NATS connect failed; retrying"))
            .await?;
        let js = jetstream::new(client.clone());
        let bus = Self {
            client,
            js,
            topology: Arc::new(topology),
        };
        bus.ensure_streams().await?;
        Ok(bus)
    }

    /// Creates missing streams (existing ones are left as they are).
    pub async fn ensure_streams(&self) -> Result<()> {
        for spec in self.topology.streams() {
            let config = stream::Config {
                name: spec.name.clone(),
                subjects: spec.subjects.clone(),
                retention: match spec.retention {
                    Retention::Limits => stream::RetentionPolicy::Limits,
                    Retention::WorkQueue => stream::RetentionPolicy::WorkQueue,
                },
                duplicate_window: spec.duplicate_window,
                max_age: spec.max_age.unwrap_or_default(),
                max_bytes: spec.max_bytes,
                discard: stream::DiscardPolicy::New,
                storage: stream::StorageType::File,
                ..Default::default()
            };
            self.js
                .get_or_create_stream(config)
                .await
                .map_err(|e| unavailable(&format!("cannot create stream {}", spec.name), e))?;
        }
        Ok(())
    }

    /// Deletes the topology's streams (tests and teardown).
    pub async fn delete_streams(&self) -> Result<()> {
        for spec in self.topology.streams() {
            match self.js.delete_stream(&spec.name).await {
                Ok(_) => {}
                Err(e) if e.to_string().contains("not found") => {}
                Err(e) => {
                    return Err(unavailable(
                        &format!("cannot delete stream {}", spec.name),
                        e,
                    ));
                }
            }
        }
        Ok(())
    }

    /// The underlying client, for connection state and flushing.
    /// Readiness: the connection to the server is up.
    pub async fn ping(&self) -> Result<()> {
        match self.client.connection_state() {
            async_nats::connection::State::Connected => Ok(()),
            state => Err(tracelab_domain::Error::unavailable(format!(
                "NATS connection is {state:?}"
            ))),
        }
    }

    pub fn client(&self) -> &async_nats::Client {
        &self.client
    }

    async fn publish_once(&self, message: &Message) -> Result<Published> {
        let mut headers = HeaderMap::new();
        for (name, value) in &message.headers {
            headers.insert(name.as_str(), value.as_str());
        }
        if let Some(tp) = &message.traceparent {
            headers.insert(TRACEPARENT, tp.as_str());
        }
        let publish = PublishMessage::build()
            .payload(message.payload.clone())
            .headers(headers)
            .message_id(&message.id);
        let timed_out = |e: &dyn std::fmt::Display| {
            Error::new(
                ErrorKind::Timeout,
                format!("publish to {} timed out: {e}", message.subject),
            )
        };
        let pending = self
            .js
            .send_publish(message.subject.clone(), publish)
            .await
            .map_err(|e| match e.kind() {
                jetstream::context::PublishErrorKind::TimedOut => timed_out(&e),
                _ => unavailable(&format!("cannot publish to {}", message.subject), e),
            })?;
        let ack = pending.await.map_err(|e| match e.kind() {
            jetstream::context::PublishErrorKind::TimedOut => timed_out(&e),
            _ => unavailable(
                &format!("publish to {} not acknowledged", message.subject),
                e,
            ),
        })?;
        Ok(Published {
            stream: ack.stream,
            sequence: ack.sequence,
            duplicate: ack.duplicate,
        })
    }
}

#[async_trait::async_trait]
impl Bus for JetStreamBus {
    fn topology(&self) -> &Topology {
        &self.topology
    }

    async fn publish(&self, message: Message) -> Result<Published> {
        if self.topology.stream_for(&message.subject).is_none() {
            return Err(Error::invalid(format!(
                "no stream captures subject {}",
                message.subject
            )));
        }
        // Retrying is safe: the message id makes a second copy a duplicate.
        let message = &message;
        (|| async move { self.publish_once(message).await })
            .retry(retry_backoff(12))
            .when(|e: &Error| matches!(e.kind, ErrorKind::Unavailable | ErrorKind::Timeout))
            .notify(|e, delay| tracing::warn!(error = %e, ?delay, "publish failed; retrying"))
            .await
    }

    async fn consumer(&self, spec: ConsumerSpec) -> Result<Consumer> {
        let stream = self
            .js
            .get_stream(&spec.stream)
            .await
            .map_err(|e| unavailable(&format!("no stream {}", spec.stream), e))?;
        let config = pull::Config {
            durable_name: Some(spec.durable.clone()),
            filter_subject: spec.filter.clone(),
            ack_policy: jetstream::consumer::AckPolicy::Explicit,
            ack_wait: spec.ack_wait,
            max_deliver: i64::from(spec.server_max_deliver()),
            ..Default::default()
        };
        let consumer = stream
            .get_or_create_consumer(&spec.durable, config)
            .await
            .map_err(|e| unavailable(&format!("cannot create consumer {}", spec.durable), e))?;
        let raw = JetStreamConsumer {
            consumer,
            batch: spec.batch,
            current: None,
        };
        Ok(Consumer::new(
            Box::new(raw),
            Arc::new(self.clone()),
            spec.retry,
        ))
    }
}

/// Shortest pull request we send; the server answers an expired one with a 408.
const MIN_EXPIRES: Duration = Duration::from_millis(50);

struct JetStreamConsumer {
    consumer: jetstream::consumer::Consumer<pull::Config>,
    batch: usize,
    /// The open pull request. Kept across `next` calls that time out
    /// locally, so a message the server sends late is not stranded.
    current: Option<pull::Batch>,
}

fn delivery(message: jetstream::Message) -> Result<RawDelivery> {
    let delivered = message
        .info()
        .map_err(|e| Error::internal(format!("JetStream message without ack metadata: {e}")))?
        .delivered;
    let (message, acker) = message.split();
    let mut out = Message::new(message.subject.to_string(), String::new(), message.payload);
    if let Some(headers) = &message.headers {
        for (name, values) in headers.iter() {
            let Some(value) = values.first() else {
                continue;
            };
            let name = name.to_string();
            if name.eq_ignore_ascii_case(MESSAGE_ID) {
                out.id = value.as_str().to_string();
            } else if name.eq_ignore_ascii_case(TRACEPARENT) {
                out.traceparent = Some(value.as_str().to_string());
            } else {
                out.headers.insert(name, value.as_str().to_string());
            }
        }
    }
    Ok(RawDelivery {
        message: out,
        delivered: u32::try_from(delivered).unwrap_or(u32::MAX),
        acker: Box::new(JetStreamAcker(acker)),
    })
}

#[async_trait::async_trait]
impl RawConsumer for JetStreamConsumer {
    async fn backlog(&mut self) -> Result<Option<Backlog>> {
        let info = self
            .consumer
            .info()
            .await
            .map_err(|e| unavailable("cannot read the consumer's state", e))?;
        Ok(Some(Backlog {
            pending: info.num_pending,
            ack_pending: info.num_ack_pending as u64,
        }))
    }

    async fn next(&mut self, wait: Duration) -> Result<Option<RawDelivery>> {
        let deadline = Instant::now() + wait;
        loop {
            if self.current.is_none() {
                let expires = deadline
                    .saturating_duration_since(Instant::now())
                    .max(MIN_EXPIRES);
                let batch = self
                    .consumer
                    .batch()
                    .max_messages(self.batch)
                    .expires(expires)
                    .messages()
                    .await
                    .map_err(|e| unavailable("cannot pull from JetStream", e))?;
                self.current = Some(batch);
            }
            let batch = self.current.as_mut().expect("just set");
            match tokio::time::timeout_at(deadline, batch.next()).await {
                Err(_) => return Ok(None),
                Ok(Some(Ok(message))) => return delivery(message).map(Some),
                Ok(Some(Err(e))) => {
                    self.current = None;
                    return Err(unavailable("pull from JetStream failed", e));
                }
                Ok(None) => {
                    self.current = None;
                    if Instant::now() >= deadline {
                        return Ok(None);
                    }
                }
            }
        }
    }
}

struct JetStreamAcker(jetstream::message::Acker);

impl JetStreamAcker {
    async fn send(&self, kind: AckKind) -> Result<()> {
        self.0
            .ack_with(kind)
            .await
            .map_err(|e| unavailable("cannot settle message", e))
    }
}

#[async_trait::async_trait]
impl Acker for JetStreamAcker {
    /// Waits for the server's confirmation: an acked message is never redelivered.
    async fn ack(&self) -> Result<()> {
        self.0
            .double_ack()
            .await
            .map_err(|e| unavailable("ack not confirmed", e))
    }
    async fn nak(&self, delay: Duration) -> Result<()> {
        self.send(AckKind::Nak(Some(delay))).await
    }
    async fn progress(&self) -> Result<()> {
        self.send(AckKind::Progress).await
    }
    async fn term(&self) -> Result<()> {
        self.0
            .double_ack_with(AckKind::Term)
            .await
            .map_err(|e| unavailable("term not confirmed", e))
    }
}
