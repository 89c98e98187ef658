//! `POST /v1/jira/webhook`: Jira's issue webhook starts an investigation.
//!
//! Each host mounts it on its own port and says how an investigation
//! starts ([`Starter`]): the fleet's investigator beside `POST
//! /api/investigations`, because starting an investigation is that
//! endpoint's work (the stored request and its `requested` event in one
//! transaction, the repository and command checks; ingest takes evidence,
//! not requests), and `tracelab serve` by running the pipeline on its own
//! machine. The caller is Jira, which holds no API token, so the
//! check is a shared secret instead of a bearer token: Jira Cloud's body
//! signature (`X-Hub-Signature: sha256=…`, for a webhook registered with
//! the secret), or the secret itself in a query parameter or a header;
//! compared in constant time.
//!
//! Answers: 201 started, 200 the same issue and inputs again (the
//! investigation already started), 202 nothing to do (no label, another
//! event, a project not served) with the reason, 400 a payload that cannot
//! be read (missing fields) with the reason — and, when the issue carries
//! the label, a comment on it saying so, once per reason — 401 a missing or wrong secret,
//! 413 a body over `jira.intake.max_body_bytes`, and the API's own answers
//! for a repository or command it refuses (400/403) or a store that is
//! down (503, which Jira retries).

use super::intake::{self, Intake, Start};
use super::{IntakeSettings, secret};
use crate::Outgoing;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Arc;
use tracelab_domain::{Error, Result};

pub const PATH: &str = "/v1/jira/webhook";
/// Jira Cloud's body signature header.
pub const HUB_SIGNATURE: &str = "x-hub-signature";

/// How the host starts the investigation an issue asks for.
#[async_trait::async_trait]
pub trait Starter: Send + Sync + 'static {
    /// Starts it, or finds the one started for `start.dedupe_key` (then
    /// `created` is false). Errors keep their kind: InvalidArgument and
    /// PermissionDenied are told to the issue, others (a store that is
    /// down) are only answered, so Jira retries.
    async fn start(&self, start: &Start) -> Result<Started>;
}

/// What [`Starter::start`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Started {
    pub investigation_id: String,
    pub state: String,
    pub created: bool,
}

/// The endpoint: its settings, secret and starter. Hosts with a route
/// table of their own (the investigator's, which documents it in its
/// OpenAPI) call [`JiraIntake::receive`] from their handler; others mount
/// [`router`].
pub struct JiraIntake {
    starter: Arc<dyn Starter>,
    outgoing: Option<Arc<Outgoing>>,
    settings: IntakeSettings,
    secret: Vec<u8>,
}

/// The route alone, with its body limit.
pub fn router(intake: Arc<JiraIntake>) -> Router {
    let limit = intake.settings.max_body_bytes.max(1024);
    Router::new()
        .route(
            PATH,
            post(
                |State(state): State<Arc<JiraIntake>>,
                 Query(query): Query<HashMap<String, String>>,
                 headers: HeaderMap,
                 body: Bytes| async move {
                    state.receive(&query, &headers, &body).await
                },
            ),
        )
        .layer(DefaultBodyLimit::max(limit))
        .with_state(intake)
}

impl JiraIntake {
    /// The endpoint, or `None` when `jira.intake.enabled` is off. Refuses to
    /// start without a secret of at least 16 characters or without a place
    /// to carry it. `outgoing` comments on a labelled issue that is refused.
    pub fn new(
        starter: Arc<dyn Starter>,
        outgoing: Option<Arc<Outgoing>>,
        settings: &IntakeSettings,
    ) -> Result<Option<Self>> {
        if !settings.enabled {
            return Ok(None);
        }
        let secret = secret(
            "jira.intake.secret_file",
            &settings.secret,
            &settings.secret_file,
        )?;
        if secret.len() < 16 {
            return Err(Error::invalid(
                "jira.intake needs a shared secret of at least 16 characters (jira.intake.secret_file)",
            ));
        }
        if settings.secret_query.is_empty() && settings.secret_header.is_empty() {
            return Err(Error::invalid(
                "jira.intake: secret_query and secret_header are both empty; the secret must arrive somewhere",
            ));
        }
        if settings.label.trim().is_empty() {
            return Err(Error::invalid("jira.intake.label is empty"));
        }
        Ok(Some(Self {
            starter,
            outgoing,
            settings: settings.clone(),
            secret: secret.into_bytes(),
        }))
    }

    /// One webhook: checked, read, started; the answer as the module says.
    pub async fn receive(
        &self,
        query: &HashMap<String, String>,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Response {
        let state = self;
        if body.len() > state.settings.max_body_bytes.max(1024) {
            return refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                "invalid_argument",
                "the body is larger than jira.intake.max_body_bytes",
            );
        }
        // Jira Cloud's own webhook secret: an HMAC of the body, no secret on
        // the wire.
        if let Some(signature) = headers.get(HUB_SIGNATURE) {
            if !hub_signature_ok(signature.as_bytes(), &state.secret, body) {
                tracing::warn!("Jira webhook with a wrong signature refused");
                return refuse(
                    StatusCode::UNAUTHORIZED,
                    "unauthenticated",
                    "X-Hub-Signature does not match the body under the shared secret",
                );
            }
        } else if let Some(refused) = check_secret(state, query, headers) {
            return refused;
        }
        read_and_start(state, body).await
    }
}

fn answer(status: StatusCode, body: Value) -> Response {
    (status, Json(body)).into_response()
}

fn refuse(status: StatusCode, kind: &str, message: impl Into<String>) -> Response {
    answer(
        status,
        json!({"error": {"kind": kind, "message": message.into()}}),
    )
}

/// Equal in time independent of where they differ (digests of both, so
/// the length leaks nothing either).
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    let (a, b) = (Sha256::digest(given), Sha256::digest(expected));
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

/// The shared secret from the query or the header: `Some(answer)` when
/// missing or wrong.
fn check_secret(
    state: &JiraIntake,
    query: &HashMap<String, String>,
    headers: &HeaderMap,
) -> Option<Response> {
    let s = &state.settings;
    let from_query = (!s.secret_query.is_empty())
        .then(|| query.get(&s.secret_query))
        .flatten()
        .map(String::as_bytes);
    let from_header = (!s.secret_header.is_empty())
        .then(|| headers.get(s.secret_header.as_str()))
        .flatten()
        .map(|v| v.as_bytes());
    let Some(given) = from_header.or(from_query) else {
        return Some(refuse(
            StatusCode::UNAUTHORIZED,
            "unauthenticated",
            "no shared secret: give it as ?secret=, in the configured header, or sign the body (X-Hub-Signature)",
        ));
    };
    if !same_secret(given, &state.secret) {
        tracing::warn!("Jira webhook with a wrong secret refused");
        return Some(refuse(
            StatusCode::UNAUTHORIZED,
            "unauthenticated",
            "wrong shared secret",
        ));
    }
    None
}

/// `X-Hub-Signature: sha256=<hex HMAC-SHA256(secret, body)>`, what Jira
/// Cloud sends for a webhook registered with a secret; compared in
/// constant time.
pub fn hub_signature_ok(header: &[u8], secret: &[u8], body: &[u8]) -> bool {
    let Some(hex) = header.strip_prefix(b"sha256=") else {
        return false;
    };
    if hex.len() != 64 {
        return false;
    }
    let given: Option<Vec<u8>> = hex
        .chunks(2)
        .map(|pair| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|p| u8::from_str_radix(p, 16).ok())
        })
        .collect();
    let Some(given) = given else {
        return false;
    };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
        return false;
    };
    mac.update(body);
    mac.verify_slice(&given).is_ok()
}

async fn read_and_start(state: &JiraIntake, body: &[u8]) -> Response {
    let s = &state.settings;
    let payload: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                "invalid_argument",
                format!("the body is not JSON: {e}"),
            );
        }
    };
    let start = match intake::read(&payload, s) {
        Err(why) => {
            tracing::info!(why = %why, "Jira webhook refused");
            tell_the_issue(state, &payload, &why).await;
            return refuse(StatusCode::BAD_REQUEST, "invalid_argument", why);
        }
        Ok(Intake::Ignored(why)) => {
            tracing::info!(why = %why, "Jira webhook ignored");
            return answer(
                StatusCode::ACCEPTED,
                json!({"status": "ignored", "reason": why}),
            );
        }
        Ok(Intake::Start(start)) => start,
    };
    match state.starter.start(&start).await {
        Ok(Started {
            investigation_id,
            state,
            created,
        }) => {
            tracing::info!(issue = %start.issue_key, investigation = %investigation_id, created, "Jira issue investigated");
            let (status, word) = if created {
                (StatusCode::CREATED, "started")
            } else {
                (StatusCode::OK, "existing")
            };
            answer(
                status,
                json!({"status": word, "issue": start.issue_key, "investigation_id": investigation_id, "state": state}),
            )
        }
        Err(e) => {
            tracing::warn!(issue = %start.issue_key, error = %e, "Jira issue not investigated");
            // What the issue asks for is refused (not a passing outage).
            if matches!(
                e.kind,
                tracelab_domain::ErrorKind::InvalidArgument
                    | tracelab_domain::ErrorKind::PermissionDenied
            ) {
                tell_the_issue(state, &payload, &e.message).await;
            }
            let status = StatusCode::from_u16(e.kind.http_status())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            refuse(
                status,
                e.kind.name(),
                format!("issue {}: {}", start.issue_key, e.message),
            )
        }
    }
}

/// A labelled issue whose webhook was refused gets a comment saying why
/// (its reporter never sees our 400), once per issue and reason.
async fn tell_the_issue(state: &JiraIntake, payload: &Value, why: &str) {
    let (Some(out), Some(issue)) = (
        &state.outgoing,
        intake::labelled_issue(payload, &state.settings),
    ) else {
        return;
    };
    let digest: String = Sha256::digest(why.as_bytes())[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let key = format!("jira:{issue}:refused:{digest}");
    let lines = super::comment::refused(why);
    if let Err(e) = out.comment_on_issue(&issue, &key, &lines).await {
        tracing::warn!(%issue, error = %e, "cannot store the refusal's comment");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn hub_signatures() {
        // printf '{"a":1}' | openssl dgst -sha256 -hmac key
        let real = b"sha256=88a67f24bbcdaed0e6c997404bb79a743baf44c6bab2f4c27328e3009d22e342";
        let body = br#"{"a":1}"#;
        assert!(super::hub_signature_ok(real, b"key", body));
        assert!(!super::hub_signature_ok(real, b"other", body));
        assert!(!super::hub_signature_ok(real, b"key", b"{}"));
        assert!(!super::hub_signature_ok(&real[..40], b"key", body));
        assert!(!super::hub_signature_ok(b"sha1=00", b"key", body));
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(super::same_secret(b"0123456789abcdef", b"0123456789abcdef"));
        assert!(!super::same_secret(
            b"0123456789abcdeX",
            b"0123456789abcdef"
        ));
        assert!(!super::same_secret(
            b"0123456789abcdef0",
            b"0123456789abcdef"
        ));
        assert!(!super::same_secret(b"", b"0123456789abcdef"));
    }
}
