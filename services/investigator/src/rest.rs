//! The REST API of DESIGN.md over [`crate::api::Api`]. Errors are JSON
//! `{"error": {"kind", "message"}}` with the status of their kind.

use crate::api::{Api, CreateRequest};
use crate::auth::{Action, Auth, Caller, Denied};
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use tracelab_domain::Error;
use tracelab_domain::ports::InvestigationStore;
use tracelab_notify::jira::webhook::JiraIntake;
use tracing::Instrument;
use utoipa::OpenApi as _;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

#[derive(Clone)]
pub(crate) struct AppState {
    api: Arc<Api>,
    auth: Auth,
    /// `POST /v1/jira/webhook`, when `jira.intake.enabled`.
    jira: Option<Arc<JiraIntake>>,
}

pub fn routes(api: Arc<Api>, auth: Auth, jira: Option<Arc<JiraIntake>>) -> Router {
    let (router, _) = table().split_for_parts();
    router.with_state(AppState { api, auth, jira })
}

/// Every REST route, each registered from its handler's `#[utoipa::path]`
/// (method and path included): the router and the OpenAPI document are
/// built from this one table. Register routes here only through `routes!`.
pub(crate) fn table() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(crate::openapi::ApiDoc::openapi())
        .routes(routes!(create, list))
        .routes(routes!(show))
        .routes(routes!(hypotheses))
        .routes(routes!(approve))
        .routes(routes!(reject))
        .routes(routes!(pull_request))
        .routes(routes!(evidence))
        .routes(routes!(openapi_json))
        .routes(routes!(jira_webhook))
}

/// The OpenAPI document of [`table`].
pub fn openapi() -> utoipa::openapi::OpenApi {
    table().into_openapi()
}

/// The document, rendered once.
fn openapi_text() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        openapi()
            .to_json()
            .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    })
}

/// This API as OpenAPI 3.1, for client generators. No token needed: it
/// describes the API and holds no data.
#[utoipa::path(
    get,
    path = "/api/openapi.json",
    tag = "investigations",
    responses((status = 200, description = "The OpenAPI document", content_type = "application/json", body = Object))
)]
pub(crate) async fn openapi_json() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], openapi_text()).into_response()
}

/// Jira's issue webhook (`jira:issue_created`, `jira:issue_updated`)
/// starts the investigation a labelled issue asks for (docs/review.md).
/// Jira holds no API token: the shared secret comes as
/// `X-Hub-Signature: sha256=HMAC(secret, body)` (a Jira Cloud webhook
/// registered with the secret), in `?secret=` or in the configured header.
#[utoipa::path(
    post,
    path = "/v1/jira/webhook",
    tag = "jira",
    params(("secret" = Option<String>, Query, description = "The shared secret, when the webhook neither signs the body nor sets the header")),
    request_body(content = Object, description = "Jira's issue webhook as Jira sends it", content_type = "application/json"),
    responses(
        (status = 201, description = "Started", body = crate::schema::JiraWebhookAnswer),
        (status = 200, description = "The same issue and inputs again: the investigation already started", body = crate::schema::JiraWebhookAnswer),
        (status = 202, description = "Nothing to do (no label, another event, a project not served), with the reason", body = Object),
        (status = 400, description = "A payload that cannot be read, or a repository or command the API refuses; a labelled issue is also told why in a comment", body = crate::schema::ErrorBody),
        (status = 401, description = "A missing or wrong secret or signature", body = crate::schema::ErrorBody),
        (status = 404, description = "The intake is not enabled (jira.intake.enabled)", body = crate::schema::ErrorBody),
        (status = 413, description = "A body over jira.intake.max_body_bytes", body = crate::schema::ErrorBody),
        (status = 503, description = "The store is down: Jira retries", body = crate::schema::ErrorBody)
    ),
    security(("jira_secret" = []))
)]
async fn jira_webhook(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match &state.jira {
        Some(intake) => intake.receive(&query, &headers, &body).await,
        None => ApiError(
            StatusCode::NOT_FOUND,
            "not_found",
            "the Jira intake is not enabled here (jira.intake.enabled)".into(),
        )
        .into_response(),
    }
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

#[utoipa::path(
    post,
    path = "/api/investigations",
    tag = "investigations",
    request_body = crate::api::CreateRequest,
    responses(
        (status = 201, description = "Started (or the existing one for the same evidence); `Location` names it", body = crate::api::InvestigationView),
        (status = 400, description = "A bad request: unknown field, repository not allowed, command not allowed", body = crate::schema::ErrorBody),
        (status = 401, description = "No or an unknown token", body = crate::schema::ErrorBody),
        (status = 403, description = "The token's role may not do this", body = crate::schema::ErrorBody)
    ),
    security(("bearer" = []))
)]
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
pub(crate) struct ListQuery {
    limit: Option<u32>,
}

#[utoipa::path(
    get,
    path = "/api/investigations",
    tag = "investigations",
    params(("limit" = Option<u32>, Query, description = "At most this many, newest first (1..=1000, default 50)")),
    responses(
        (status = 200, description = "`{\"investigations\": [summary...]}`, newest first", body = Object),
        (status = 401, description = "No or an unknown token", body = crate::schema::ErrorBody),
        (status = 403, description = "The token's role may not do this", body = crate::schema::ErrorBody)
    ),
    security(("bearer" = []))
)]
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

#[utoipa::path(
    get,
    path = "/api/investigations/{id}",
    tag = "investigations",
    params(("id" = String, Path, description = "The investigation's id")),
    responses(
        (status = 200, body = crate::api::InvestigationView),
        (status = 404, body = crate::schema::ErrorBody),
        (status = 401, description = "No or an unknown token", body = crate::schema::ErrorBody),
        (status = 403, description = "The token's role may not do this", body = crate::schema::ErrorBody)
    ),
    security(("bearer" = []))
)]
async fn show(State(state): State<AppState>, headers: HeaderMap, Path(id): Path<String>) -> Reply {
    caller(&state, &headers, Action::Read)?;
    Ok(Json(state.api.get(&id).await?).into_response())
}

#[utoipa::path(
    get,
    path = "/api/investigations/{id}/hypotheses",
    tag = "investigations",
    params(("id" = String, Path, description = "The investigation's id")),
    responses(
        (status = 200, description = "`{\"investigation_id\", \"hypotheses\": [...]}` (the Report JSON's hypotheses)", body = Object),
        (status = 404, body = crate::schema::ErrorBody),
        (status = 401, description = "No or an unknown token", body = crate::schema::ErrorBody),
        (status = 403, description = "The token's role may not do this", body = crate::schema::ErrorBody)
    ),
    security(("bearer" = []))
)]
async fn hypotheses(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Reply {
    caller(&state, &headers, Action::Read)?;
    let list = state.api.hypotheses(&id).await?;
    Ok(Json(json!({ "investigation_id": id, "hypotheses": list })).into_response())
}

#[utoipa::path(
    get,
    path = "/api/hypotheses/{id}/evidence",
    tag = "investigations",
    params(("id" = String, Path, description = "A hypothesis id")),
    responses(
        (status = 200, description = "`{\"hypothesis_id\", \"status\", \"status_reason\", \"experiments\": [...]}`", body = Object),
        (status = 404, body = crate::schema::ErrorBody),
        (status = 401, description = "No or an unknown token", body = crate::schema::ErrorBody),
        (status = 403, description = "The token's role may not do this", body = crate::schema::ErrorBody)
    ),
    security(("bearer" = []))
)]
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

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct DecisionBody {
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

#[utoipa::path(
    post,
    path = "/api/investigations/{id}/approve",
    tag = "investigations",
    params(("id" = String, Path, description = "The investigation's id")),
    request_body(content = Option<DecisionBody>, description = "Optional `{\"reason\"}`"),
    responses(
        (status = 200, description = "The decided investigation", body = crate::api::InvestigationView),
        (status = 404, body = crate::schema::ErrorBody),
        (status = 409, description = "Not waiting for review (decided already, or still running)", body = crate::schema::ErrorBody),
        (status = 401, description = "No or an unknown token", body = crate::schema::ErrorBody),
        (status = 403, description = "The token's role may not do this", body = crate::schema::ErrorBody)
    ),
    security(("bearer" = []))
)]
async fn approve(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Reply {
    decide(state, headers, id, body, true).await
}

#[utoipa::path(
    post,
    path = "/api/investigations/{id}/reject",
    tag = "investigations",
    params(("id" = String, Path, description = "The investigation's id")),
    request_body(content = Option<DecisionBody>, description = "Optional `{\"reason\"}`"),
    responses(
        (status = 200, description = "The decided investigation", body = crate::api::InvestigationView),
        (status = 404, body = crate::schema::ErrorBody),
        (status = 409, description = "Not waiting for review (decided already, or still running)", body = crate::schema::ErrorBody),
        (status = 401, description = "No or an unknown token", body = crate::schema::ErrorBody),
        (status = 403, description = "The token's role may not do this", body = crate::schema::ErrorBody)
    ),
    security(("bearer" = []))
)]
async fn reject(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Reply {
    decide(state, headers, id, body, false).await
}

/// `POST /api/investigations/{id}/pull-request` → `{url, number}`.
#[utoipa::path(
    post,
    path = "/api/investigations/{id}/pull-request",
    tag = "investigations",
    params(("id" = String, Path, description = "The investigation's id")),
    responses(
        (status = 200, description = "The draft pull request (the stored one on a repeat call)", body = crate::pull_request::PullRequestView),
        (status = 400, description = "The code host refused it (e.g. its 422); stored, retryable", body = crate::schema::ErrorBody),
        (status = 404, body = crate::schema::ErrorBody),
        (status = 409, description = "Not APPROVED", body = crate::schema::ErrorBody),
        (status = 503, description = "The code host or git server is down; stored, call again", body = crate::schema::ErrorBody),
        (status = 401, description = "No or an unknown token", body = crate::schema::ErrorBody),
        (status = 403, description = "The token's role may not do this", body = crate::schema::ErrorBody)
    ),
    security(("bearer" = []))
)]
async fn pull_request(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Reply {
    let caller = caller(&state, &headers, Action::Review)?;
    let opened = state.api.open_pull_request(&id, &caller).await?;
    Ok(Json(opened).into_response())
}
