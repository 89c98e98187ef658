//! Groups resolve when a fix for them is approved: the groups of the
//! evidence an investigation looked at (`investigation_evidence`) are marked
//! resolved, by that investigation, at the approval's time. A sighting after
//! that reopens the group as a regression ([`FailureGroup::observe`]); a
//! late report of an older run does not. Approval comes before the fix is
//! merged and deployed, so a sighting in between also counts as a
//! regression: the group then says the approved fix did not hold yet.
//!
//! [`FailureGroup::observe`]: tracelab_evidence::FailureGroup::observe

use super::postgres::{PgGroupStore, Rows, db_error};
use sqlx::Row;
use tracelab_evidence::{FailureGroup, GroupKey, GroupStatus, Result};

impl PgGroupStore {
    /// Resolves every open group of `investigation`'s evidence at `at`
    /// (`commit`: the fix, when known) and records the investigation as
    /// `resolved_by`. Groups already resolved are left as they are, so a
    /// repeated call changes nothing. Returns the groups it resolved.
    pub async fn resolve_investigation(
        &self,
        investigation: &str,
        at: i64,
        commit: Option<String>,
    ) -> Result<Vec<FailureGroup>> {
        let mut tx = self.pool().begin().await.map_err(db_error)?;
        let keys: Vec<String> = sqlx::query(
            "SELECT DISTINCT e.group_key COLLATE \"C\" AS k FROM investigation_evidence ie \
             JOIN evidence e ON e.id = ie.evidence_id \
             WHERE ie.investigation_id = $1 AND e.group_key IS NOT NULL ORDER BY k",
        )
        .bind(investigation)
        .fetch_all(&mut *tx)
        .await
        .map_err(db_error)?
        .iter()
        .map(|r| r.get(0))
        .collect();
        let mut resolved = Vec::new();
        for key in keys {
            // In key order, so two resolutions never wait on each other's locks in a cycle.
            let Some(mut g) = Rows::lock(&mut tx, &GroupKey(key)).await? else {
                continue;
            };
            if g.status != GroupStatus::Open {
                continue;
            }
            g.resolve(at, commit.clone());
            Rows::save(&mut tx, &g).await?;
            sqlx::query("UPDATE failure_groups SET resolved_by = $2 WHERE group_key = $1")
                .bind(&g.key.0)
                .bind(investigation)
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
            resolved.push(g);
        }
        tx.commit().await.map_err(db_error)?;
        Ok(resolved)
    }

    /// The investigation whose approved fix resolved `key` last, if any.
    pub async fn resolved_by(&self, key: &GroupKey) -> Result<Option<String>> {
        let row = sqlx::query("SELECT resolved_by FROM failure_groups WHERE group_key = $1")
            .bind(&key.0)
            .fetch_optional(self.pool())
            .await
            .map_err(db_error)?;
        Ok(row.and_then(|r| r.get(0)))
    }
}
