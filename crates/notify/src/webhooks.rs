//! Signed outgoing webhooks: each stage of an investigation (`created`,
//! `decided`, `approved`, `rejected`, `pull_request_opened`) is POSTed as
//! JSON to every configured URL, signed so the receiver can tell it came
//! from this deployment and is fresh. Each delivery is stored before it is
//! sent (`crate::outgoing`: retried with exponential backoff, resumed after
//! a restart), and every attempt is logged on the investigation
//! (`webhook_deliveries`, shown on its dashboard page).
//!
//! Signature (docs/review.md has a receiver's recipe):
//!
//! ```text
//! X-TraceLab-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>
//! X-TraceLab-Event: approved
//! X-TraceLab-Delivery: <id, the same for every attempt of one event to one URL>
//! ```
//!
//! Receivers recompute the HMAC over the raw body, compare in constant
//! time, and refuse a `t` more than [`REPLAY_WINDOW`] away from their clock
//! (each attempt is signed anew with its own `t`).

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::Sha256;
use std::time::Duration;
use time::OffsetDateTime;
use tracelab_domain::{Error, Result};

pub const SIGNATURE_HEADER: &str = "x-tracelab-signature";
pub const EVENT_HEADER: &str = "x-tracelab-event";
pub const DELIVERY_HEADER: &str = "x-tracelab-delivery";
/// How far a signature's `t` may be from the receiver's clock.
pub const REPLAY_WINDOW: Duration = Duration::from_secs(300);

/// `webhooks` in the investigator's settings (and `tracelab serve`'s).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WebhookSettings {
    /// Receivers; none: no webhooks.
    pub urls: Vec<String>,
    /// The shared signing secret. Set it from a mounted file
    /// (`TRACELAB__WEBHOOKS__SECRET_FILE`), never in a checked-in file.
    pub secret: String,
    pub secret_file: String,
    /// Attempts per event and URL, the first included.
    pub attempts: u32,
    /// Wait before the second attempt; doubled before each further one.
    pub first_retry_ms: u64,
    /// The longest wait between two attempts.
    pub max_retry_ms: u64,
    /// Longest one attempt may take.
    pub timeout_seconds: u64,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            urls: Vec::new(),
            secret: String::new(),
            secret_file: String::new(),
            attempts: 10,
            first_retry_ms: 1000,
            max_retry_ms: 3_600_000,
            timeout_seconds: 10,
        }
    }
}

/// `t=<timestamp>,v1=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>`.
pub fn sign(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    format!("t={timestamp},v1={}", hex(&mac(secret, timestamp, body)))
}

fn mac(secret: &[u8], timestamp: i64, body: &[u8]) -> Vec<u8> {
    let mut m = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    m.update(timestamp.to_string().as_bytes());
    m.update(b".");
    m.update(body);
    m.finalize().into_bytes().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a receiver does: the header's MAC over `body` is right (constant
/// time) and its `t` within `window` of `now`. The reason when not.
pub fn verify(
    secret: &[u8],
    header: &str,
    body: &[u8],
    now: i64,
    window: Duration,
) -> std::result::Result<(), &'static str> {
    let mut t = None;
    let mut v1 = None;
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => t = v.parse::<i64>().ok(),
            Some(("v1", v)) => v1 = Some(v),
            _ => {}
        }
    }
    let (t, v1) = (t.ok_or("no timestamp")?, v1.ok_or("no v1 signature")?);
    if now.abs_diff(t) > window.as_secs() {
        return Err("timestamp outside the replay window");
    }
    let Ok(m) = Hmac::<Sha256>::new_from_slice(secret) else {
        return Err("bad secret");
    };
    let mut m = m;
    m.update(t.to_string().as_bytes());
    m.update(b".");
    m.update(body);
    let given: Option<Vec<u8>> = (v1.len() == 64)
        .then(|| {
            (0..32)
                .map(|i| u8::from_str_radix(&v1[2 * i..2 * i + 2], 16).ok())
                .collect()
        })
        .flatten();
    m.verify_slice(&given.ok_or("malformed signature")?)
        .map_err(|_| "signature mismatch")
}

/// The configured receivers and how to reach them. Deliveries are stored
/// first and sent by the dispatcher (`crate::outgoing`), which calls
/// [`Webhooks::send`] once per attempt.
pub struct Webhooks {
    client: reqwest::Client,
    urls: Vec<String>,
    secret: Vec<u8>,
    /// Attempts per event and URL, the first included.
    pub attempts: u32,
    /// Wait before the second attempt; doubled before each further one.
    pub first_retry: Duration,
    /// The longest wait between two attempts.
    pub max_retry: Duration,
    /// The longest one attempt takes.
    pub timeout: Duration,
}

impl Webhooks {
    /// `None` without URLs. A URL must be http(s); a secret is required.
    pub fn new(settings: &WebhookSettings) -> Result<Option<Self>> {
        if settings.urls.is_empty() {
            return Ok(None);
        }
        for url in &settings.urls {
            if !(url.starts_with("https://") || url.starts_with("http://")) {
                return Err(Error::invalid(format!(
                    "webhooks.urls: {url:?} is not an http(s) URL"
                )));
            }
        }
        let secret = crate::jira::secret(
            "webhooks.secret_file",
            &settings.secret,
            &settings.secret_file,
        )?;
        if secret.len() < 16 {
            return Err(Error::invalid(
                "webhooks need a signing secret of at least 16 characters (webhooks.secret_file)",
            ));
        }
        crate::install_crypto_provider();
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(settings.timeout_seconds.max(1)))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::internal(format!("webhook client: {e}")))?;
        Ok(Some(Self {
            client,
            urls: settings.urls.clone(),
            secret: secret.into_bytes(),
            attempts: settings.attempts.max(1),
            first_retry: Duration::from_millis(settings.first_retry_ms),
            max_retry: Duration::from_millis(settings.max_retry_ms),
            timeout: Duration::from_secs(settings.timeout_seconds.max(1)),
        }))
    }

    /// The receivers.
    pub fn urls(&self) -> &[String] {
        &self.urls
    }

    /// What a receiver gets for one event: `{"event", "delivery",
    /// "investigation_id", "at", "data"}`, the same bytes on every attempt.
    pub fn payload(kind: &str, delivery_id: &str, investigation_id: &str, data: &Value) -> Value {
        let at = OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        json!({
            "event": kind,
            "delivery": delivery_id,
            "investigation_id": investigation_id,
            "at": at,
            "data": data,
        })
    }

    /// One attempt, signed now: the receiver's HTTP status when it
    /// answered, and why the event is not delivered when it is not (any
    /// answer but 2xx).
    pub async fn send(
        &self,
        url: &str,
        kind: &str,
        delivery_id: &str,
        body: &str,
    ) -> (Option<u16>, Option<String>) {
        let t = OffsetDateTime::now_utc().unix_timestamp();
        let sent = self
            .client
            .post(url)
            .header("content-type", "application/json")
            .header(SIGNATURE_HEADER, sign(&self.secret, t, body.as_bytes()))
            .header(EVENT_HEADER, kind)
            .header(DELIVERY_HEADER, delivery_id)
            .body(body.to_string())
            .send()
            .await;
        match sent {
            Ok(res) if res.status().is_success() => (Some(res.status().as_u16()), None),
            Ok(res) => (
                Some(res.status().as_u16()),
                Some(format!(
                    "the receiver answered HTTP {}",
                    res.status().as_u16()
                )),
            ),
            // Without the URL: it may carry credentials.
            Err(e) => (None, Some(format!("not sent: {}", e.without_url()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"whsec-0123456789abcdef";

    #[test]
    fn a_signature_verifies_and_anything_changed_does_not() {
        let body = br#"{"event":"approved"}"#;
        let header = sign(SECRET, 1_700_000_000, body);
        assert!(header.starts_with("t=1700000000,v1="));
        assert_eq!(
            verify(SECRET, &header, body, 1_700_000_100, REPLAY_WINDOW),
            Ok(())
        );
        assert_eq!(
            verify(
                SECRET,
                &header,
                br#"{"event":"rejected"}"#,
                1_700_000_000,
                REPLAY_WINDOW
            ),
            Err("signature mismatch")
        );
        assert_eq!(
            verify(
                b"another-secret-0123",
                &header,
                body,
                1_700_000_000,
                REPLAY_WINDOW
            ),
            Err("signature mismatch")
        );
        assert_eq!(
            verify(SECRET, &header, body, 1_700_000_301, REPLAY_WINDOW),
            Err("timestamp outside the replay window")
        );
        let moved = header.replace("t=1700000000", "t=1700000200");
        assert_eq!(
            verify(SECRET, &moved, body, 1_700_000_200, REPLAY_WINDOW),
            Err("signature mismatch"),
            "the timestamp is signed too"
        );
        assert_eq!(
            verify(SECRET, "v1=00", body, 0, REPLAY_WINDOW),
            Err("no timestamp")
        );
    }

    #[test]
    fn the_mac_is_hmac_sha256_of_timestamp_dot_body() {
        // `printf "1.x" | openssl dgst -sha256 -hmac key`
        assert_eq!(
            sign(b"key", 1, b"x"),
            "t=1,v1=fc4913c41a7bf793267e2a384f3261c9436ec2cd097bd745e7b0d99113f510ec"
        );
    }

    #[test]
    fn settings_are_checked() {
        let mut s = WebhookSettings {
            urls: vec!["ftp://x".into()],
            secret: "0123456789abcdef".into(),
            ..Default::default()
        };
        assert!(Webhooks::new(&s).is_err());
        s.urls = vec!["https://hooks.example/t".into()];
        s.secret = "short".into();
        assert!(Webhooks::new(&s).is_err());
        s.urls.clear();
        assert!(Webhooks::new(&s).unwrap().is_none());
    }
}
