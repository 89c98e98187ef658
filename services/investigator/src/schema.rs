//! The shapes the OpenAPI document names that are not the API's own
//! types: the error body, and mirrors of the few domain types inside an
//! investigation (transitions, the hand-off), which the domain cannot
//! derive `ToSchema` for (it does no IO and knows no HTTP). Apart from
//! `crate::openapi` so the API's types can name them without the
//! document (`crate::api` → here, never back).

use serde::Serialize;
use utoipa::ToSchema;

/// Every error: `{"error": {"kind", "message"}}` with the status of its kind.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Serialize, ToSchema)]
pub struct ErrorDetail {
    /// `invalid_argument`, `not_found`, `conflict`, `permission_denied`,
    /// `unavailable`, `timeout`, `internal`, `unauthenticated`, `forbidden`.
    pub kind: String,
    pub message: String,
}

/// One state change (`tracelab_domain::state::Transition`).
#[derive(Serialize, ToSchema)]
#[schema(as = Transition)]
pub struct TransitionDoc {
    pub from: String,
    pub to: String,
    /// RFC 3339.
    #[schema(format = DateTime)]
    pub at: String,
    pub reason: Option<String>,
}

/// Who started it, the audit log and the pull request
/// (`tracelab_domain::audit::HandOff`), flattened into the investigation.
#[derive(Serialize, ToSchema)]
#[schema(as = HandOff)]
pub struct HandOffDoc {
    pub started_by: Option<String>,
    /// Oldest first; append-only.
    pub audit: Vec<AuditEntryDoc>,
    pub pull_request: Option<PullRequestLinkDoc>,
    /// Why the last attempt to open the pull request failed.
    pub pull_request_error: Option<String>,
}

/// One audit row (`tracelab_domain::audit::AuditEntry`).
#[derive(Serialize, ToSchema)]
#[schema(as = AuditEntry)]
pub struct AuditEntryDoc {
    /// `started`, `approved`, `rejected`, `pull_request_opened`, `pull_request_failed`.
    pub action: String,
    pub actor: String,
    pub role: String,
    pub reason: Option<String>,
    #[schema(format = DateTime)]
    pub at: String,
}

/// The opened pull request (`tracelab_domain::audit::PullRequestLink`).
#[derive(Serialize, ToSchema)]
#[schema(as = PullRequestLink)]
pub struct PullRequestLinkDoc {
    pub url: String,
    pub number: u64,
    /// `github` or `gitlab`.
    pub host: String,
}

/// What `POST /v1/jira/webhook` answers when it started (201) or found
/// (200) the issue's investigation.
#[derive(Serialize, ToSchema)]
pub struct JiraWebhookAnswer {
    /// `started` or `existing`.
    pub status: String,
    /// The issue key, the investigation's issue id.
    pub issue: String,
    pub investigation_id: String,
    pub state: String,
}
