//! `GET /v1/groups`: the failure groups, a page at a time, for readers
//! (viewer tokens). Filters: `repository`, `state` (open, resolved),
//! `language`, `since` (unix seconds, last seen at or after); paging:
//! `limit` (1 to 500, default 50) and `cursor` (the previous page's `next`).
//! The listing rule is the library's ([`GroupQuery`]); this module only
//! reads the request and answers.
//!
//! Intake tokens send evidence and cannot read; viewer tokens read and
//! cannot send. With no viewer tokens, reading is open only where the
//! intake is too (`allow_unauthenticated`); otherwise it is refused.

use crate::auth::TokenSetting;
use crate::rejection::{Rejection, ingest_error};
use crate::submission::Ingest;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use std::sync::Arc;
use tracelab_domain::Result;
use tracelab_ingest::{GroupCursor, GroupQuery, GroupState, GroupStore, Language, MAX_PAGE};
use tracelab_service::tokens::TokenTable;

/// Who may read groups.
#[derive(Clone, Debug)]
pub struct Readers {
    tokens: TokenTable<String>,
    open: bool,
}

impl Readers {
    /// Viewer tokens; `open_intake` opens reading when there are none.
    pub fn new(viewers: &[TokenSetting], open_intake: bool) -> Result<Self> {
        let tokens = TokenTable::named("viewer token", viewers)?;
        let open = tokens.is_open() && open_intake;
        Ok(Self { tokens, open })
    }

    /// The reader's name, or the 401 message.
    fn reader(&self, authorization: Option<&str>) -> std::result::Result<String, String> {
        if self.open {
            return Ok("anonymous".into());
        }
        if self.tokens.is_open() {
            return Err("no viewer tokens are configured: reading groups is off".into());
        }
        self.tokens.bearer(authorization).cloned()
    }
}

#[derive(Clone)]
struct GroupsState {
    ingest: Arc<Ingest>,
    readers: Readers,
}

pub fn routes(ingest: Arc<Ingest>, readers: Readers) -> Router {
    Router::new()
        .route("/v1/groups", get(list))
        .with_state(GroupsState { ingest, readers })
}

/// The query string as sent; every value is checked by [`Params::query`].
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    repository: Option<String>,
    state: Option<String>,
    language: Option<String>,
    since: Option<i64>,
    cursor: Option<String>,
    limit: Option<usize>,
}

impl Params {
    fn query(self) -> std::result::Result<GroupQuery, String> {
        let language = self
            .language
            .map(|l| {
                serde_json::from_value::<Language>(serde_json::Value::String(l.clone()))
                    .map_err(|_| format!("language {l:?} is not one TraceLab knows"))
            })
            .transpose()?;
        let limit = self.limit.unwrap_or(GroupQuery::default().limit);
        if !(1..=MAX_PAGE).contains(&limit) {
            return Err(format!("limit {limit} is not between 1 and {MAX_PAGE}"));
        }
        Ok(GroupQuery {
            repository: self.repository.filter(|r| !r.is_empty()),
            state: self
                .state
                .map(|s| s.parse::<GroupState>())
                .transpose()
                .map_err(|e| e.to_string())?,
            language,
            since: self.since,
            after: self
                .cursor
                .map(|c| c.parse::<GroupCursor>())
                .transpose()
                .map_err(|e| e.to_string())?,
            limit,
        })
    }
}

fn problem(status: StatusCode, detail: String) -> Response {
    (status, Json(serde_json::json!({ "error": detail }))).into_response()
}

async fn list(
    State(state): State<GroupsState>,
    headers: HeaderMap,
    params: std::result::Result<Query<Params>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if let Err(e) = state.readers.reader(authorization) {
        return problem(StatusCode::UNAUTHORIZED, e);
    }
    let query = match params
        .map_err(|e| e.body_text())
        .and_then(|Query(p)| p.query())
    {
        Ok(q) => q,
        Err(e) => return problem(StatusCode::BAD_REQUEST, e),
    };
    match state.ingest.groups().page(&query).await {
        Ok(page) => (StatusCode::OK, Json(page)).into_response(),
        Err(e) => Rejection::Failed(ingest_error(e)).into_response(),
    }
}
