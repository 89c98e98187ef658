//! The REST API of DESIGN.md over [`crate::api::Api`]. Errors are JSON
//! `{"error": {"kind", "message"}}` with the status of their kind.

use crate::api::{Api, CreateRequest};
use crate::auth::{Action, Auth, Caller, Denied};
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;
use tracelab_domain::Error;
use tracelab_domain::ports::InvestigationStore;
use tracing::Instrument;

#[derive(Clone)]
struct AppState {
    api: Arc<Api>,
    auth: Auth,
}

pub fn routes(api: Arc<Api>, auth: Auth) -> Router {
    Router::new()
        .route("/api/investigations", post(create).get(list))
        .route("/api/investigations/{id}", get(show))
        .route("/api/investigations/{id}/hypotheses", get(hypotheses))
        .route("/api/investigations/{id}/approve", post(approve))
        .route("/api/investigations/{id}/reject", post(reject))
        .route("/api/investigations/{id}/pull-request", post(pull_request))
        .route("/api/hypotheses/{id}/evidence", get(evidence))
        .with_state(AppState { api, auth })
}

/// A refused or failed request.
pub struct ApiError(StatusCode, &'static str, String);

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        let status =
            StatusCode::from_u16(e.kind.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        ApiError(status, e.kind.name(), e.message)
    }
}

impl From<Denied> for ApiError {
    fn from(d: Denied) -> Self {
        match d {
            Denied::Unauthenticated(m) => ApiError(StatusCode::UNAUTHORIZED, "unauthenticated", m),
            Denied::Forbidden(m) => ApiError(StatusCode::FORBIDDEN, "forbidden", m),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (
            self.0,
            Json(json!({"error": {"kind": self.1, "message": self.2}})),
        )
            .into_response();
        if self.0 == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
        }
        response
    }
}

type Reply = Result<Response, ApiError>;

fn caller(state: &AppState, headers: &HeaderMap, action: Action) -> Result<Caller, ApiError> {
    let header = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    Ok(state.auth.authorize(header, action)?)
}

fn parse<T: serde::de::DeserializeOwned + Default>(body: &Bytes) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body).map_err(|e| {
        Error::invalid(format!(
            "request body is not valid JSON for this endpoint: {e}"
        ))
        .into()
    })
}

async fn create(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Reply {
    let caller = caller(&state, &headers, Action::Start)?;
    let request: CreateRequest = parse(&body)?;
    // A caller's W3C trace context makes the whole investigation part of its trace.
    let span = tracing::info_span!("POST /api/investigations");
    let parent = headers.get("traceparent").and_then(|v| v.to_str().ok());
    tracelab_service::telemetry::continue_trace(&span, parent);
    let view = state.api.create(request, &caller).instrument(span).await?;
    let location = format!("/api/investigations/{}", view.id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(view),
    )
        .into_response())
}

#[derive(Deserialize)]
struct ListQuery {
    limit: Option<u32>,
}

async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<ListQuery>,
) -> Reply {
    caller(&state, &headers, Action::Read)?;
    let limit = q.limit.unwrap_or(50).clamp(1, 1000);
    let items = state.api.store.list(limit).await?;
    Ok(Json(json!({ "investigations": items })).into_response())
}

async fn show(State(state): State<AppState>, headers: HeaderMap, Path(id): Path<String>) -> Reply {
    caller(&state, &headers, Action::Read)?;
    Ok(Json(state.api.get(&id).await?).into_response())
}

async fn hypotheses(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Reply {
    caller(&state, &headers, Action::Read)?;
    let list = state.api.hypotheses(&id).await?;
    Ok(Json(json!({ "investigation_id": id, "hypotheses": list })).into_response())
}

async fn evidence(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Reply {
    caller(&state, &headers, Action::Read)?;
    let h = state.api.evidence(&id).await?;
    Ok(Json(json!({
        "hypothesis_id": h.id,
        "status": h.status,
        "status_reason": h.status_reason,
        "experiments": h.experiments,
    }))
    .into_response())
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct DecisionBody {
    reason: Option<String>,
}

async fn decide(
    state: AppState,
    headers: HeaderMap,
    id: String,
    body: Bytes,
    approve: bool,
) -> Reply {
    let caller = caller(&state, &headers, Action::Review)?;
    let body: DecisionBody = parse(&body)?;
    let view = state
        .api
        .review(&id, approve, &caller, body.reason.as_deref())
        .await?;
    Ok(Json(view).into_response())
}

async fn approve(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Reply {
    decide(state, headers, id, body, true).await
}

async fn reject(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Reply {
    decide(state, headers, id, body, false).await
}

/// `POST /api/investigations/{id}/pull-request` → `{url, number}`.
async fn pull_request(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Reply {
    let caller = caller(&state, &headers, Action::Review)?;
    let opened = state.api.open_pull_request(&id, &caller).await?;
    Ok(Json(opened).into_response())
}
