//! A piece of evidence and its failure group, in one transaction: the row
//! is stored, the occurrence counted, the policy asked and — when it says
//! investigate — the group marked, or none of it. A crash anywhere before
//! the commit leaves nothing behind, so the retry (same deterministic
//! evidence id) does all of it; after the commit the retry finds the row and
//! changes nothing. No occurrence is lost or counted twice.

use super::postgres::{PgGroupStore, db_error};
use serde_json::Value;
use tracelab_ingest::{
    Decision, FailureGroup, Observation, Occurrence, Policy, Result, Trigger, decide,
};

/// A row of the `evidence` table, everything already redacted.
#[derive(Debug, Clone)]
pub struct NewEvidence {
    pub id: String,
    pub kind: String,
    pub source: String,
    pub repository: Option<String>,
    pub commit: Option<String>,
    pub stack_signature: Option<String>,
    pub error_signature: Option<String>,
    pub group_key: String,
    /// The redacted failure (`tracelab parse`'s object) and how it arrived.
    pub body: Value,
    pub received_at: time::OffsetDateTime,
}

impl PgGroupStore {
    /// Stores `evidence` and triages `occ` with `policy` in one
    /// transaction. `None` when the evidence was stored before (a retry).
    pub async fn record_evidence(
        &self,
        evidence: &NewEvidence,
        occ: &Occurrence,
        policy: &Policy,
        trigger: &Trigger,
        now: i64,
    ) -> Result<Option<(FailureGroup, Observation, Decision)>> {
        let mut tx = self.pool().begin().await.map_err(db_error)?;
        let stored = sqlx::query(
            "INSERT INTO evidence (id, kind, source, repository, commit_sha, stack_signature, \
             error_signature, group_key, body, received_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (id) DO NOTHING",
        )
        .bind(&evidence.id)
        .bind(&evidence.kind)
        .bind(&evidence.source)
        .bind(&evidence.repository)
        .bind(&evidence.commit)
        .bind(&evidence.stack_signature)
        .bind(&evidence.error_signature)
        .bind(&evidence.group_key)
        .bind(sqlx::types::Json(&evidence.body))
        .bind(evidence.received_at)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        if stored.rows_affected() == 0 {
            return Ok(None);
        }
        let (mut group, observation) = Self::observe_locked(&mut tx, occ).await?;
        let decision = decide(policy, &group, &observation, occ, trigger, now);
        if let Decision::Investigate { reason } = &decision {
            group.mark_investigation(now, reason.clone());
        }
        Self::save_locked(&mut tx, &group).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(Some((group, observation, decision)))
    }
}
