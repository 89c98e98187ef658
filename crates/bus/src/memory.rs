//! The in-process bus for the embedded mode and unit tests: the same
//! delivery semantics as JetStream (durable consumers with a cursor, ack
//! wait, nak with delay, progress, term, server-side delivery cap, work-queue
//! retention, de-duplication by message id) over a mutex and a `Notify`.
//! Time is `tokio::time`, so tests can pause it.

use crate::message::{Message, Published};
use crate::port::backend::{Acker, RawConsumer, RawDelivery};
use crate::port::{Bus, Consumer, ConsumerSpec};
use crate::topology::{Retention, StreamSpec, Topology, filters_overlap, subject_matches};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;
use tracelab_domain::{Error, Result};

/// A bus inside one process. Cheap to clone; clones share the streams.
#[derive(Clone)]
pub struct MemoryBus {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for MemoryBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryBus")
            .field("topology", &self.inner.topology)
            .finish_non_exhaustive()
    }
}

struct Inner {
    topology: Topology,
    streams: Mutex<HashMap<String, StreamState>>,
    /// Woken on publish, nak and term: waiting consumers look again.
    changed: Notify,
}

struct StreamState {
    spec: StreamSpec,
    messages: BTreeMap<u64, Message>,
    last_seq: u64,
    /// message id -> (sequence, when first published)
    seen: HashMap<String, (u64, Instant)>,
    /// The same ids in publish order, so expiring the window is O(expired).
    seen_order: VecDeque<(Instant, String)>,
    consumers: HashMap<String, ConsumerState>,
}

struct ConsumerState {
    filter: String,
    ack_wait: Duration,
    max_deliver: u32,
    /// Next stream sequence never delivered to this consumer.
    cursor: u64,
    /// Delivered, not yet acked or terminated.
    pending: BTreeMap<u64, Pending>,
}

struct Pending {
    deliveries: u32,
    /// When it may be delivered again (ack wait or nak delay).
    due: Instant,
}

impl MemoryBus {
    pub fn new(topology: Topology) -> Self {
        let streams = topology
            .streams()
            .iter()
            .map(|spec| {
                (
                    spec.name.clone(),
                    StreamState {
                        spec: spec.clone(),
                        messages: BTreeMap::new(),
                        last_seq: 0,
                        seen: HashMap::new(),
                        seen_order: VecDeque::new(),
                        consumers: HashMap::new(),
                    },
                )
            })
            .collect();
        Self {
            inner: Arc::new(Inner {
                topology,
                streams: Mutex::new(streams),
                changed: Notify::new(),
            }),
        }
    }

    /// Messages stored in `stream` now (work queues drop acked ones).
    pub fn stored(&self, stream: &str) -> usize {
        self.inner
            .lock()
            .get(stream)
            .map_or(0, |s| s.messages.len())
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, StreamState>> {
        // A panic while holding the lock cannot leave the maps half-updated
        // in a way later calls would trip over, so poisoning is ignored.
        self.streams.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait::async_trait]
impl Bus for MemoryBus {
    fn topology(&self) -> &Topology {
        &self.inner.topology
    }

    async fn publish(&self, message: Message) -> Result<Published> {
        let Some(spec) = self.inner.topology.stream_for(&message.subject) else {
            return Err(Error::invalid(format!(
                "no stream captures subject {}",
                message.subject
            )));
        };
        let now = Instant::now();
        let mut streams = self.inner.lock();
        let stream = streams
            .get_mut(&spec.name)
            .expect("every topology stream exists");
        let window = stream.spec.duplicate_window;
        while let Some((at, _)) = stream.seen_order.front() {
            if now.duration_since(*at) < window {
                break;
            }
            let (_, id) = stream.seen_order.pop_front().expect("front exists");
            stream.seen.remove(&id);
        }
        if let Some((sequence, _)) = stream.seen.get(&message.id) {
            return Ok(Published {
                stream: spec.name.clone(),
                sequence: *sequence,
                duplicate: true,
            });
        }
        stream.last_seq += 1;
        let sequence = stream.last_seq;
        stream.seen.insert(message.id.clone(), (sequence, now));
        stream.seen_order.push_back((now, message.id.clone()));
        stream.messages.insert(sequence, message);
        drop(streams);
        self.inner.changed.notify_waiters();
        Ok(Published {
            stream: spec.name.clone(),
            sequence,
            duplicate: false,
        })
    }

    async fn consumer(&self, spec: ConsumerSpec) -> Result<Consumer> {
        {
            let mut streams = self.inner.lock();
            let stream = streams
                .get_mut(&spec.stream)
                .ok_or_else(|| Error::not_found(format!("no stream {}", spec.stream)))?;
            if stream.spec.retention == Retention::WorkQueue
                && stream.consumers.iter().any(|(name, c)| {
                    *name != spec.durable && filters_overlap(&c.filter, &spec.filter)
                })
            {
                return Err(Error::conflict(format!(
                    "work queue {} already has a consumer overlapping {}",
                    spec.stream, spec.filter
                )));
            }
            let first = stream
                .messages
                .keys()
                .next()
                .copied()
                .unwrap_or(stream.last_seq + 1);
            stream
                .consumers
                .entry(spec.durable.clone())
                .or_insert_with(|| ConsumerState {
                    filter: spec.filter.clone(),
                    ack_wait: spec.ack_wait,
                    max_deliver: spec.server_max_deliver(),
                    cursor: first,
                    pending: BTreeMap::new(),
                });
        }
        let raw = MemoryConsumer {
            inner: self.inner.clone(),
            stream: spec.stream.clone(),
            durable: spec.durable.clone(),
        };
        Ok(Consumer::new(
            Box::new(raw),
            Arc::new(self.clone()),
            spec.retry,
        ))
    }
}

struct MemoryConsumer {
    inner: Arc<Inner>,
    stream: String,
    durable: String,
}

enum Next {
    Ready(RawDelivery),
    /// Nothing now; something may become due at this instant.
    WaitUntil(Option<Instant>),
}

impl MemoryConsumer {
    fn take(&self, now: Instant) -> Next {
        let mut streams = self.inner.lock();
        let stream = streams.get_mut(&self.stream).expect("stream exists");
        let messages = &stream.messages;
        let consumer = stream
            .consumers
            .get_mut(&self.durable)
            .expect("consumer exists");
        // Messages removed by a work queue ack (or never to be redelivered) leave pending.
        // Entries that used their last delivery and whose wait ran out are
        // never redelivered (JetStream's max deliver); both leave `pending`.
        let max = consumer.max_deliver;
        consumer
            .pending
            .retain(|seq, p| messages.contains_key(seq) && (p.deliveries < max || p.due > now));
        // 1. Redeliveries whose time has come, oldest first.
        let due = consumer
            .pending
            .iter()
            .find(|(_, p)| p.due <= now && p.deliveries < consumer.max_deliver)
            .map(|(seq, _)| *seq);
        if let Some(seq) = due {
            let p = consumer.pending.get_mut(&seq).expect("just found");
            p.deliveries += 1;
            p.due = now + consumer.ack_wait;
            return Next::Ready(self.delivery(messages[&seq].clone(), seq, p.deliveries));
        }
        // 2. The next new message matching the filter.
        let next = messages
            .range(consumer.cursor..)
            .find(|(_, m)| subject_matches(&consumer.filter, &m.subject))
            .map(|(seq, m)| (*seq, m.clone()));
        if let Some((seq, message)) = next {
            consumer.cursor = seq + 1;
            consumer.pending.insert(
                seq,
                Pending {
                    deliveries: 1,
                    due: now + consumer.ack_wait,
                },
            );
            return Next::Ready(self.delivery(message, seq, 1));
        }
        consumer.cursor = stream.last_seq + 1;
        let wake = consumer
            .pending
            .values()
            .filter(|p| p.deliveries < consumer.max_deliver)
            .map(|p| p.due)
            .min();
        Next::WaitUntil(wake)
    }

    fn delivery(&self, message: Message, seq: u64, delivered: u32) -> RawDelivery {
        RawDelivery {
            message,
            delivered,
            acker: Box::new(MemoryAcker {
                inner: self.inner.clone(),
                stream: self.stream.clone(),
                durable: self.durable.clone(),
                seq,
            }),
        }
    }
}

#[async_trait::async_trait]
impl RawConsumer for MemoryConsumer {
    async fn next(&mut self, wait: Duration) -> Result<Option<RawDelivery>> {
        let deadline = Instant::now() + wait;
        loop {
            let changed = self.inner.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let now = Instant::now();
            let wake = match self.take(now) {
                Next::Ready(d) => return Ok(Some(d)),
                Next::WaitUntil(wake) => wake.map_or(deadline, |w| w.min(deadline)),
            };
            if now >= deadline {
                return Ok(None);
            }
            tokio::select! {
                _ = &mut changed => {}
                _ = tokio::time::sleep_until(wake) => {}
            }
        }
    }
}

struct MemoryAcker {
    inner: Arc<Inner>,
    stream: String,
    durable: String,
    seq: u64,
}

impl MemoryAcker {
    /// Runs `f` on the pending entry (if still pending) and the stream.
    fn with<R>(&self, f: impl FnOnce(&mut StreamState, u64) -> R) -> R {
        let mut streams = self.inner.lock();
        let stream = streams.get_mut(&self.stream).expect("stream exists");
        f(stream, self.seq)
    }

    fn finish(&self) {
        self.with(|stream, seq| {
            if let Some(c) = stream.consumers.get_mut(&self.durable) {
                c.pending.remove(&seq);
            }
            if stream.spec.retention == Retention::WorkQueue {
                stream.messages.remove(&seq);
            }
        });
        self.inner.changed.notify_waiters();
    }

    fn reschedule(&self, delay: impl FnOnce(&ConsumerState) -> Duration) {
        let now = Instant::now();
        self.with(|stream, seq| {
            if let Some(c) = stream.consumers.get_mut(&self.durable) {
                let d = delay(c);
                if let Some(p) = c.pending.get_mut(&seq) {
                    p.due = now + d;
                }
            }
        });
        self.inner.changed.notify_waiters();
    }
}

#[async_trait::async_trait]
impl Acker for MemoryAcker {
    async fn ack(&self) -> Result<()> {
        self.finish();
        Ok(())
    }
    async fn nak(&self, delay: Duration) -> Result<()> {
        self.reschedule(|_| delay);
        Ok(())
    }
    async fn progress(&self) -> Result<()> {
        self.reschedule(|c| c.ack_wait);
        Ok(())
    }
    async fn term(&self) -> Result<()> {
        self.finish();
        Ok(())
    }
}
