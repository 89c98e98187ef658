//! `GET /v1/groups`: the failure groups, a page at a time, for readers
//! (viewer tokens). Filters: `repository`, `state` (open, resolved),
//! `language`, `since` (unix seconds, last seen at or after); paging:
//! `limit` (1 to 500, default 50) and `cursor` (the previous page's `next`).
//! The listing rule is the library's ([`GroupQuery`]); this module only
//! reads the request and answers.
//!
//! `POST /v1/groups/merges/{exact_key}/undo` (body `{"reason": "…"}`)
//! undoes a similarity merge that filed one bug's traces under another's
//! group: the sightings it counted move back to the exact key's own group,
//! the key is never merged by similarity again, and the merge history
//! (`group_merges`) keeps who undid it (the viewer token's name) and why.
//! 200 with the merge record and both groups; 404 when the key has no merge
//! to undo; 400 without a reason.
//!
//! Intake tokens send evidence and cannot read; viewer tokens read and
//! correct the grouping (undo a merge), and cannot send. With no viewer
//! tokens, both are open only where the intake is too
//! (`allow_unauthenticated`); otherwise they are refused.

use crate::auth::TokenSetting;
use crate::rejection::{Rejection, ingest_error};
use crate::submission::Ingest;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use std::sync::Arc;
use tracelab_domain::Result;
use tracelab_evidence::{
    GroupCursor, GroupKey, GroupQuery, GroupState, GroupStore, Language, MAX_PAGE,
};
use tracelab_service::tokens::TokenTable;
use tracelab_store::groups::MergingGroupStore;
use tracelab_store::groups::Undo;

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
        .route("/v1/groups/merges/{exact_key}/undo", post(undo))
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

/// The body of an undo: why the merge was wrong.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UndoBody {
    reason: String,
}

async fn undo(
    State(state): State<GroupsState>,
    Path(exact_key): Path<String>,
    headers: HeaderMap,
    body: std::result::Result<Json<UndoBody>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let who = match state.readers.reader(authorization) {
        Ok(who) => who,
        Err(e) => return problem(StatusCode::UNAUTHORIZED, e),
    };
    let reason = match body {
        Ok(Json(b)) => b.reason,
        Err(e) => return problem(StatusCode::BAD_REQUEST, e.body_text()),
    };
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let undo = match Undo::new(now, &who, &reason) {
        Ok(u) => u,
        Err(e) => return problem(StatusCode::BAD_REQUEST, e.to_string()),
    };
    let key = GroupKey(exact_key);
    match state.ingest.groups().unmerge(&key, &undo).await {
        Ok(Some(done)) => {
            tracing::info!(exact_key = %key, group = %done.merge.group_key, by = %undo.by,
                moved = done.merge.moved, "similarity merge undone");
            (StatusCode::OK, Json(done)).into_response()
        }
        Ok(None) => problem(
            StatusCode::NOT_FOUND,
            format!("{key} has no similarity merge to undo"),
        ),
        Err(e) => Rejection::Failed(ingest_error(e)).into_response(),
    }
}
