//! The investigator's side of `tracelab-notify`: how it reads an
//! investigation for a notification's body ([`StoredViews`]), how a Jira
//! issue starts one (the [`Starter`] over [`Api::create_once`]), and the
//! `decided` stage, which happens in the arbiter: the investigator hears
//! of it through a durable consumer of `<prefix>.investigations.*.decided`
//! ([`on_decided`]) and enqueues it with a key, so a redelivery adds
//! nothing. The other stages enqueue theirs in their own transaction
//! (`crate::api`).

use crate::api::{Api, CreateRequest};
use crate::auth::{Caller, Role};
use serde_json::Value;
use std::time::Duration;
use tracelab_bus::Delivery;
use tracelab_domain::{Error, ErrorKind, Result};
use tracelab_notify::Views;
use tracelab_notify::jira::intake::Start;
use tracelab_notify::jira::webhook::{Started, Starter};
use tracelab_store::PgStore;

/// The durable consumer of `decided` events (one per fleet).
pub const DECIDED_DURABLE: &str = "investigator-notifications";

/// Decisions older than this are not announced: the consumer starts at
/// the beginning of the stream (30 days), and a deployment that turns
/// webhooks on should not replay a month of decisions.
pub const DECIDED_MAX_AGE: Duration = Duration::from_secs(24 * 3600);

/// Investigations as the API shows them, for notification bodies.
pub struct StoredViews(pub PgStore);

#[async_trait::async_trait]
impl Views for StoredViews {
    async fn view(&self, investigation_id: &str) -> Result<Option<Value>> {
        match crate::api::view(&self.0, investigation_id).await {
            Ok(view) => serde_json::to_value(&view)
                .map(Some)
                .map_err(|e| Error::internal(format!("cannot encode: {e}"))),
            Err(e) if e.kind == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// A Jira issue starts an investigation as `POST /api/investigations`
/// does, keyed by the issue and its inputs, by `jira:<user>` as a reviewer.
#[async_trait::async_trait]
impl Starter for Api {
    async fn start(&self, start: &Start) -> Result<Started> {
        let request = CreateRequest {
            repository: start.repository.clone(),
            test_command: Some(start.test.clone()),
            good: start.good.clone(),
            bad: start.bad.clone(),
            issue_id: Some(start.issue_key.clone()),
            ..CreateRequest::default()
        };
        let caller = Caller {
            name: start.requested_by.clone(),
            role: Role::Reviewer,
        };
        let (view, created) = self
            .create_once(request, &caller, Some(&start.dedupe_key))
            .await?;
        Ok(Started {
            investigation_id: view.id,
            state: view.state,
            created,
        })
    }
}

/// A `decided` event from the arbiter: its webhooks and Jira comment.
pub async fn on_decided(api: &Api, delivery: &Delivery) -> Result<()> {
    let decided: tracelab_proto::events::v1::InvestigationDecided =
        tracelab_fleet::events::decode(delivery)?;
    let view = api.get(&decided.investigation_id).await?;
    let decided_at = view
        .transitions
        .iter()
        .rev()
        .find(|t| t.to == tracelab_domain::state::InvestigationState::WaitingForReview)
        .map_or(view.updated_at, |t| t.at);
    if time::OffsetDateTime::now_utc() - decided_at > DECIDED_MAX_AGE {
        tracing::info!(investigation = %view.id, "decided too long ago to announce");
        return Ok(());
    }
    if let Some(out) = &api.outgoing {
        // Errors go back to the consumer: the event is redelivered.
        out.enqueue("decided", &decided.investigation_id).await?;
    }
    Ok(())
}
