//! The HTTP intake: `POST /v1/ci-failures` and `POST /v1/logs` (content types
//! in [`crate::body`]). Each request: source (token or header or peer) →
//! room reserved in the admission bound for the body (its declared length,
//! or the limit when undeclared or gzipped; 429 Busy when full) → body read
//! with the limit (413 past it, checked again after gzip) →
//! [`Ingest::submit`] → 202 with the [`crate::submission::Summary`], or the
//! [`Rejection`]'s answer.

use crate::auth::{Auth, SOURCE_HEADER};
use crate::body;
use crate::rejection::Rejection;
use crate::submission::{Ingest, Input, Submission};
use axum::body::Body;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use bytes::Bytes;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tracelab_domain::{Error, Result};
use tracelab_evidence::Refusal;
use tracelab_service::Shutdown;

#[derive(Clone)]
struct AppState {
    ingest: Arc<Ingest>,
    auth: Auth,
}

pub fn routes(ingest: Arc<Ingest>, auth: Auth) -> Router {
    Router::new()
        .route("/v1/ci-failures", post(ci_failures))
        .route("/v1/logs", post(logs))
        .with_state(AppState { ingest, auth })
}

/// Serves `router` with the peer address available (the source of an open intake).
pub async fn serve(listener: TcpListener, router: Router, shutdown: Shutdown) -> Result<()> {
    tracing::info!(addr = ?listener.local_addr().ok(), "serving HTTP");
    axum::serve(
        listener,
        router.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(async move { shutdown.requested().await })
    .await
    .map_err(|e| Error::internal(format!("HTTP server failed: {e}")))
}

fn header_str(headers: &HeaderMap, name: impl header::AsHeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn source(state: &AppState, headers: &HeaderMap, peer: SocketAddr) -> Result<String, Rejection> {
    state
        .auth
        .source(
            header_str(headers, header::AUTHORIZATION),
            header_str(headers, SOURCE_HEADER),
            Some(peer.ip()),
        )
        .map_err(Rejection::Unauthenticated)
}

/// The body, at most `limit` bytes on the wire and after decompression.
async fn read(headers: &HeaderMap, body: Body, limit: usize) -> Result<Bytes, Rejection> {
    let too_large = |size: usize| Refusal::TooLarge {
        what: "the request body".into(),
        size,
        limit,
    };
    let declared = header_str(headers, header::CONTENT_LENGTH).and_then(|v| v.parse().ok());
    if let Some(len) = declared.filter(|len| *len > limit) {
        return Err(too_large(len).into());
    }
    let bytes = match Limited::new(body, limit).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
            return Err(too_large(limit + 1).into());
        }
        Err(e) => {
            return Err(Refusal::Invalid(format!("reading the request body: {e}")).into());
        }
    };
    let encoding = header_str(headers, header::CONTENT_ENCODING);
    if matches!(encoding, Some(e) if !e.eq_ignore_ascii_case("identity")) {
        let encoding = encoding.map(str::to_owned);
        return tokio::task::spawn_blocking(move || {
            body::decode(encoding.as_deref(), bytes, limit)
        })
        .await
        .map_err(|e| Rejection::Failed(Error::internal(format!("gzip task failed: {e}"))))?;
    }
    Ok(bytes)
}

async fn submit(
    state: AppState,
    headers: HeaderMap,
    peer: SocketAddr,
    body: Body,
    logs: bool,
) -> Result<Response, Rejection> {
    let source = source(&state, &headers, peer)?;
    let declared = header_str(&headers, header::CONTENT_LENGTH)
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|_| header_str(&headers, header::CONTENT_ENCODING).is_none());
    let reading = state.ingest.reserve_upload(declared)?;
    let bytes = read(&headers, body, state.ingest.limits().max_body_bytes).await?;
    drop(reading);
    let input = if logs {
        Input::Logs(body::log_encoding(
            header_str(&headers, header::CONTENT_TYPE),
            &bytes,
        )?)
    } else {
        Input::CiReport
    };
    let summary = state
        .ingest
        .submit(Submission {
            input,
            source,
            channel: "http",
            body: bytes,
        })
        .await?;
    Ok((StatusCode::ACCEPTED, Json(summary)).into_response())
}

async fn ci_failures(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Rejection> {
    counted(
        "ci-failures",
        submit(state, headers, peer, body, false).await,
    )
}

async fn logs(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Rejection> {
    counted("logs", submit(state, headers, peer, body, true).await)
}

/// Counts each request by endpoint and outcome (`accepted` or the
/// rejection's kind) for `/metrics`.
fn counted(
    endpoint: &'static str,
    answer: Result<Response, Rejection>,
) -> Result<Response, Rejection> {
    let outcome = match &answer {
        Ok(_) => "accepted",
        Err(r) => r.kind(),
    };
    metrics::counter!("tracelab_ingest_requests_total", "endpoint" => endpoint, "outcome" => outcome)
        .increment(1);
    answer
}
