//! Dead letters: a message that could not be processed, republished to
//! `<prefix>.dlq.<original subject>` with the original payload, id and trace
//! context plus headers saying where it came from and why it failed. A
//! message of a stream of raw input ([`crate::StreamSpec::raw_payload`]) is
//! dead-lettered by reference: its id, subject, size and the reason, never
//! its unredacted payload or its publisher's headers.

use crate::message::Message;

pub const ORIGINAL_SUBJECT: &str = "Tracelab-Original-Subject";
pub const ORIGINAL_ID: &str = "Tracelab-Original-Id";
pub const DELIVERY_COUNT: &str = "Tracelab-Delivery-Count";
pub const ERROR: &str = "Tracelab-Error";
/// Set when the payload was left out: the original's size in bytes.
pub const PAYLOAD_DROPPED: &str = "Tracelab-Payload-Dropped-Bytes";

/// The metadata of a dead letter, read back from its headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    pub original_subject: String,
    pub original_id: String,
    pub delivered: u32,
    pub error: String,
}

impl DeadLetter {
    /// The dead letter to publish for `original`, which failed on delivery
    /// `delivered`; `raw` leaves its payload and headers out (see the module doc).
    pub fn wrap(
        original: &Message,
        dlq_subject: String,
        delivered: u32,
        error: &str,
        raw: bool,
    ) -> Message {
        let payload = if raw {
            bytes::Bytes::new()
        } else {
            original.payload.clone()
        };
        let mut m = Message::new(dlq_subject, format!("dlq:{}", original.id), payload);
        m.traceparent = original.traceparent.clone();
        if raw {
            m.headers
                .insert(PAYLOAD_DROPPED.into(), original.payload.len().to_string());
        } else {
            m.headers = original.headers.clone();
        }
        // Headers are single-line; keep the reason readable and bounded.
        let error: String = error
            .replace(['\r', '\n'], " ")
            .chars()
            .take(1024)
            .collect();
        m.with_header(ORIGINAL_SUBJECT, original.subject.clone())
            .with_header(ORIGINAL_ID, original.id.clone())
            .with_header(DELIVERY_COUNT, delivered.to_string())
            .with_header(ERROR, error)
    }

    /// Reads the metadata of a delivered dead letter; `None` for other messages.
    pub fn read(message: &Message) -> Option<Self> {
        Some(Self {
            original_subject: message.headers.get(ORIGINAL_SUBJECT)?.clone(),
            original_id: message.headers.get(ORIGINAL_ID)?.clone(),
            delivered: message.headers.get(DELIVERY_COUNT)?.parse().ok()?,
            error: message.headers.get(ERROR)?.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_then_read() {
        let m = Message::new("t.jobs.verify", "j1", "body").with_traceparent("00-abc-def-01");
        let d = DeadLetter::wrap(
            &m,
            "t.dlq.t.jobs.verify".into(),
            3,
            "Internal: boom\nline two",
            false,
        );
        assert_eq!(d.id, "dlq:j1");
        assert_eq!(d.traceparent.as_deref(), Some("00-abc-def-01"));
        assert_eq!(
            DeadLetter::read(&d),
            Some(DeadLetter {
                original_subject: "t.jobs.verify".into(),
                original_id: "j1".into(),
                delivered: 3,
                error: "Internal: boom line two".into(),
            })
        );
        assert_eq!(DeadLetter::read(&m), None);
    }
}
