//! Investigations the failure-group policy asks for. Ingest publishes
//! `InvestigationSuggested` on `<prefix>.evidence.suggested` when a group is
//! new on a protected branch, regressed, or keeps recurring; this starts an
//! investigation from the suggestion's newest evidence — when that evidence
//! says how to re-run the failure and names a repository the services can
//! read. At most one investigation is started per failure group and
//! revision (a key the store keeps unique), however many suggestions race
//! for it. A suggestion that cannot be acted on is logged with the reason and
//! acked (it is not poison: the evidence is simply not enough); a store or
//! bus failure is retried.

use crate::api::{Api, CreateRequest};
use crate::auth::{Caller, Role};
use tracelab_bus::Delivery;
use tracelab_domain::{Error, ErrorKind, Result};
use tracelab_fleet::events;
use tracelab_proto::events::v1::InvestigationSuggested;

/// The durable consumer of suggestions (one per fleet: each suggestion starts at most one investigation).
pub const DURABLE: &str = "investigator-suggestions";

/// The caller recorded on investigations the policy started.
pub const POLICY_CALLER: &str = "failure-group-policy";

pub async fn handle(api: &Api, delivery: &Delivery) -> Result<()> {
    let suggestion: InvestigationSuggested = events::decode(delivery)?;
    let evidence_id = suggestion.evidence_ids.last().ok_or_else(|| {
        Error::invalid(format!(
            "suggestion for group {} names no evidence",
            suggestion.group_key
        ))
    })?;
    let existing = api.store.investigations_of_evidence(evidence_id).await?;
    if let Some(id) = existing.first() {
        tracing::info!(evidence = %evidence_id, investigation = %id, "suggestion already investigated");
        return Ok(());
    }
    let revision = api
        .store
        .evidence(evidence_id)
        .await?
        .and_then(|e| e.commit)
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| format!("evidence:{evidence_id}"));
    let key = dedupe_key(&suggestion.group_key, &revision);
    let request = CreateRequest {
        evidence_id: Some(evidence_id.clone()),
        ..CreateRequest::default()
    };
    let caller = Caller {
        name: POLICY_CALLER.into(),
        role: Role::Reviewer,
    };
    match api.create_keyed(request, &caller, Some(&key)).await {
        Ok(view) => {
            tracing::info!(
                group = %suggestion.group_key,
                reason = %suggestion.reason,
                evidence = %evidence_id,
                investigation = %view.id,
                "investigation started by the failure-group policy"
            );
            Ok(())
        }
        Err(e) if e.kind == ErrorKind::InvalidArgument => {
            tracing::info!(
                group = %suggestion.group_key,
                evidence = %evidence_id,
                why = %e,
                "suggestion not investigated"
            );
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// The one investigation the policy starts for a failure group at a
/// revision (evidence without a commit stands for its own revision).
pub fn dedupe_key(group_key: &str, revision: &str) -> String {
    format!("group-policy:{group_key}@{revision}")
}
