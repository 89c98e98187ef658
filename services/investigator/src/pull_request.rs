//! `POST /api/investigations/{id}/pull-request`: the draft pull request of
//! an approved investigation. Thin: the rules are the store's (approved
//! only, the first link kept, an audit row per attempt) and the work is
//! `tracelab_fleet::pull_request` (rebuild the verified branch from its
//! patch, push, find or create).

use crate::api::Api;
use crate::auth::Caller;
use serde::{Deserialize, Serialize};
use tracelab_domain::audit::PullRequestLink;
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::ports::{HandOffStore, InvestigationStore};
use tracelab_domain::state::InvestigationState;
use tracelab_domain::{Error, Result};
pub use tracelab_fleet::pull_request::{PullRequestSettings, PullRequests};

/// `review` in the investigator's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReviewSettings {
    /// The four-eyes rule: the token that started an investigation may not
    /// approve or reject it (403). On by default — an approval is what
    /// turns a machine's diagnosis into a pull request in the team's name,
    /// so it should be a second person's — and off only where one person
    /// runs everything. Without tokens (`allow_unauthenticated`) every
    /// caller is `anonymous` and the rule cannot apply.
    pub forbid_self_approval: bool,
}

impl Default for ReviewSettings {
    fn default() -> Self {
        Self {
            forbid_self_approval: true,
        }
    }
}

/// What the endpoint answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PullRequestView {
    pub url: String,
    pub number: u64,
}

impl From<PullRequestLink> for PullRequestView {
    fn from(link: PullRequestLink) -> Self {
        Self {
            url: link.url,
            number: link.number,
        }
    }
}

impl Api {
    /// 404 for an unknown id, 409 unless APPROVED; a stored pull request
    /// is returned as it is. Otherwise one attempt: its failure is stored
    /// on the investigation (with an audit row) and returned with its kind
    /// (503 when the code host or git server is down: call again).
    pub async fn open_pull_request(&self, id: &str, caller: &Caller) -> Result<PullRequestView> {
        let view = self.get(id).await?;
        let investigation = InvestigationId(view.id.clone());
        if view.state != InvestigationState::Approved.as_str() {
            return Err(Error::conflict(format!(
                "investigation {id} is {}, not APPROVED: a pull request is opened only after a reviewer approved the diagnosis",
                view.state
            )));
        }
        if let Some(link) = view.hand_off.pull_request {
            return Ok(link.into());
        }
        let attempt = async {
            let report = InvestigationStore::get(&self.store, &investigation)
                .await?
                .ok_or_else(|| Error::conflict(format!("investigation {id} has no report")))?;
            let requested_bad = self
                .store
                .investigation(&investigation)
                .await?
                .and_then(|row| row.request)
                .and_then(|r| r.get("bad").and_then(|b| b.as_str()).map(str::to_string));
            self.pull_requests
                .open(&self.repositories, &report, requested_bad.as_deref())
                .await
        };
        match attempt.await {
            Ok(opened) => {
                let link = PullRequestLink {
                    url: opened.pr.url,
                    number: opened.pr.number,
                    host: opened.kind.as_str().to_string(),
                };
                // Its webhooks and comment commit with the link (none when
                // another call stored one first).
                let notes = self.plan_stored("pull_request_opened", id).await?;
                let stored = self
                    .store
                    .record_pull_request_notifying(
                        &investigation,
                        &caller.name,
                        caller.role.as_str(),
                        &link,
                        &notes,
                    )
                    .await?;
                self.notified();
                tracing::info!(%investigation, url = %stored.url, by = %caller.name, "draft pull request opened");
                Ok(stored.into())
            }
            Err(e) => {
                let message = format!("{}: {}", e.kind.name(), e.message);
                if let Err(stored) = self
                    .store
                    .record_pull_request_failure(
                        &investigation,
                        &caller.name,
                        caller.role.as_str(),
                        &message,
                    )
                    .await
                {
                    tracing::error!(%investigation, error = %stored, "cannot store the pull request failure");
                }
                tracing::warn!(%investigation, error = %message, "opening the pull request failed");
                Err(e)
            }
        }
    }
}
