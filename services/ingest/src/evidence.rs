//! Evidence rows: deterministic ids and the body stored in the `evidence` table
//! (migrations/postgres/0002_create_evidence.sql).
//!
//! An id is a digest of (kind, source, content digest, failure index): the
//! same request retried by a client, or an intake message redelivered, gives
//! the same ids, so `INSERT … ON CONFLICT DO NOTHING` stores it once and the
//! submission counts it in its group once.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// SHA-256 of a request's (decompressed) content.
pub fn content_digest(body: &[u8]) -> [u8; 32] {
    Sha256::digest(body).into()
}

/// `ev-` and 32 hex digits (128 bits) of SHA-256(kind ‖ 0 ‖ source ‖ 0 ‖ digest ‖ index).
pub fn evidence_id(kind: &str, source: &str, digest: &[u8; 32], index: usize) -> String {
    let mut h = Sha256::new();
    h.update(kind.as_bytes());
    h.update([0]);
    h.update(source.as_bytes());
    h.update([0]);
    h.update(digest);
    h.update((index as u64).to_be_bytes());
    let d = h.finalize();
    let mut id = String::with_capacity(35);
    id.push_str("ev-");
    for b in &d[..16] {
        id.push_str(&format!("{b:02x}"));
    }
    id
}

/// The `body` column: the redacted failure as `tracelab parse` prints it
/// (what the investigator reads to start from evidence: `test_id`,
/// `language`, ...), plus an `intake` member saying how it arrived
/// (channel, branch, job, formats).
pub fn body(failure: &tracelab_evidence::Failure, intake: Value) -> Value {
    let mut body =
        serde_json::to_value(failure).unwrap_or_else(|_| Value::Object(Default::default()));
    if let Value::Object(map) = &mut body {
        map.insert("intake".into(), intake);
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_depend_on_every_part_and_nothing_else() {
        let d = content_digest(b"body");
        let id = evidence_id("ci", "github", &d, 0);
        assert_eq!(id, evidence_id("ci", "github", &d, 0));
        assert_eq!(id.len(), 35);
        assert!(id.starts_with("ev-"));
        for other in [
            evidence_id("logs", "github", &d, 0),
            evidence_id("ci", "gitlab", &d, 0),
            evidence_id("ci", "github", &content_digest(b"body2"), 0),
            evidence_id("ci", "github", &d, 1),
        ] {
            assert_ne!(id, other);
        }
    }
}
