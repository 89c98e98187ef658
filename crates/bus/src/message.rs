//! What travels on the bus: a subject, a unique message id (the
//! de-duplication key, `Nats-Msg-Id` on JetStream), a payload, the W3C trace
//! context and optional extra headers.

use bytes::Bytes;
use std::collections::BTreeMap;

/// Header carrying the W3C trace context (`traceparent`).
pub const TRACEPARENT: &str = "traceparent";

/// One message, as published and as delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub subject: String,
    /// Unique per logical message; a re-publish with the same id inside the
    /// stream's duplicate window is dropped.
    pub id: String,
    pub payload: Bytes,
    /// W3C `traceparent` of the span that published the message.
    pub traceparent: Option<String>,
    /// Further headers (dead-letter metadata, for instance).
    pub headers: BTreeMap<String, String>,
}

impl Message {
    pub fn new(
        subject: impl Into<String>,
        id: impl Into<String>,
        payload: impl Into<Bytes>,
    ) -> Self {
        Self {
            subject: subject.into(),
            id: id.into(),
            payload: payload.into(),
            traceparent: None,
            headers: BTreeMap::new(),
        }
    }

    pub fn with_traceparent(mut self, traceparent: impl Into<String>) -> Self {
        self.traceparent = Some(traceparent.into());
        self
    }

    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }
}

/// The stream's answer to a publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    pub stream: String,
    /// Stream sequence of the stored message (of the first copy for a duplicate).
    pub sequence: u64,
    /// True when the id was seen inside the duplicate window and nothing was stored.
    pub duplicate: bool,
}
