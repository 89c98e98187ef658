//! A piece of evidence and its failure group, in one transaction: the row
//! is stored, the occurrence counted, the policy asked and — when it says
//! investigate — the group marked, or none of it. A crash anywhere before
//! the commit leaves nothing behind, so the retry (same deterministic
//! evidence id) does all of it; after the commit the retry finds the row and
//! changes nothing. No occurrence is lost or counted twice. When the policy
//! asks for an investigation, the row keeps the suggestion, so a retry after
//! a lost publish can send it again (an outbox of one).

use super::merges::MergeRecord;
use super::postgres::{PgGroupStore, Rows, db_error};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::Row;
use tracelab_evidence::similar::StackProfile;
use tracelab_evidence::{
    Decision, FailureGroup, GroupKey, Observation, Occurrence, Policy, Reason, Result, Trigger,
    decide,
};

/// What recording a piece of evidence did.
#[derive(Debug, Clone, PartialEq)]
pub enum EvidenceOutcome {
    /// Stored now and counted in its group.
    Recorded {
        group: Box<FailureGroup>,
        observation: Observation,
        decision: Decision,
        /// Set when this sighting merged its exact key into a similar group.
        merged: Option<MergeRecord>,
    },
    /// Stored before (a retry): nothing changed. `suggested` is the
    /// investigation the policy asked for then, to publish again;
    /// `group_key` the group it was counted in.
    Seen {
        suggested: Option<Suggested>,
        group_key: GroupKey,
    },
}

/// The policy's request for an investigation, kept with the evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Suggested {
    pub reason: Reason,
    /// The group's count when it was asked.
    pub count: u64,
}

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
    /// The CI report's environment fingerprint (toolchains, OS/arch, locale,
    /// timezone, lockfile digests, container image); kept on the row and,
    /// as its latest, on the group.
    pub environment: Option<Value>,
    /// What similar-issue merging compares (`StackProfile::from_failure`);
    /// `None`: the failure is grouped by its exact key only.
    pub profile: Option<StackProfile>,
}

impl PgGroupStore {
    /// Stores `evidence` and triages `occ` with `policy` in one transaction.
    pub async fn record_evidence(
        &self,
        evidence: &NewEvidence,
        occ: &Occurrence,
        policy: &Policy,
        trigger: &Trigger,
        now: i64,
    ) -> Result<EvidenceOutcome> {
        let mut tx = self.pool().begin().await.map_err(db_error)?;
        let stored = sqlx::query(
            "INSERT INTO evidence (id, kind, source, repository, commit_sha, stack_signature, \
             error_signature, group_key, body, received_at, environment) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (id) DO NOTHING",
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
        .bind(evidence.environment.as_ref().map(sqlx::types::Json))
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        if stored.rows_affected() == 0 {
            let row = sqlx::query("SELECT suggestion, group_key FROM evidence WHERE id = $1")
                .bind(&evidence.id)
                .fetch_one(&mut *tx)
                .await
                .map_err(db_error)?;
            let suggested = row
                .get::<Option<sqlx::types::Json<Suggested>>, _>(0)
                .map(|j| j.0);
            let group_key = row
                .get::<Option<String>, _>(1)
                .map_or_else(|| occ.key.clone(), GroupKey);
            return Ok(EvidenceOutcome::Seen {
                suggested,
                group_key,
            });
        }
        let exact_key = occ.key.clone();
        let route = Rows::route(
            &mut tx,
            self.similarity(),
            occ,
            evidence.profile.as_ref(),
            now,
        )
        .await?;
        let (target, merged) = route.target();
        let routed;
        let occ = match &target {
            Some(key) => {
                sqlx::query("UPDATE evidence SET group_key = $2, exact_key = $3 WHERE id = $1")
                    .bind(&evidence.id)
                    .bind(&key.0)
                    .bind(&occ.key.0)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error)?;
                routed = Occurrence {
                    key: key.clone(),
                    ..occ.clone()
                };
                &routed
            }
            None => occ,
        };
        let (mut group, observation) = Rows::observe_locked(&mut tx, occ).await?;
        // The sighting under its exact key: what undoing a merge moves back.
        let sighting = Occurrence {
            key: exact_key,
            ..occ.clone()
        };
        Rows::keep_sighting(&mut tx, &group.key, &sighting).await?;
        if observation == Observation::New
            && let Some(p) = &evidence.profile
        {
            Rows::keep_profile(&mut tx, &group.key, p).await?;
        }
        let decision = decide(policy, &group, &observation, occ, trigger, now);
        if let Decision::Investigate { reason } = &decision {
            group.mark_investigation(now, reason.clone());
            let suggested = Suggested {
                reason: reason.clone(),
                count: group.count,
            };
            sqlx::query("UPDATE evidence SET suggestion = $2 WHERE id = $1")
                .bind(&evidence.id)
                .bind(sqlx::types::Json(&suggested))
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
        }
        Rows::save(&mut tx, &group).await?;
        if let Some(env) = &evidence.environment {
            // The group shows the environment it was last seen in.
            sqlx::query("UPDATE failure_groups SET environment = $2 WHERE group_key = $1")
                .bind(&group.key.0)
                .bind(sqlx::types::Json(env))
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
        }
        tx.commit().await.map_err(db_error)?;
        Ok(EvidenceOutcome::Recorded {
            group: Box::new(group),
            observation,
            decision,
            merged,
        })
    }
}
