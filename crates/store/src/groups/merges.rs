//! Similar-issue merging in the fleet's group store: a failure whose exact
//! key has no group joins the most similar known group (the library's
//! [`best_match`] over the groups' stored stack profiles, same language,
//! most recently seen first) and the merge is written down with its score
//! and matched frames (`group_merges`, migration 0012). Later sightings of
//! that exact key follow the merge; [`PgGroupStore::unmerge`] undoes it, and
//! the exact key is then never merged by similarity again, so its next
//! sighting opens a group of its own. Evidence rows keep their exact key
//! (`evidence.exact_key`), so what a merge counted can be told apart.
//!
//! The rule ([`similar_group`]) is shared by both stores: PostgreSQL
//! (`record_evidence`, [`MergingGroupStore::record_similar`]) and SQLite
//! (`sqlite.rs`), so the one-machine store merges as the fleet's does.

use super::postgres::{PgGroupStore, db_error};
use serde::{Deserialize, Serialize};
use sqlx::{Postgres, Row, Transaction};
use tracelab_ingest::similar::{MatchedFrame, SimilarityConfig, StackProfile, best_match};
use tracelab_ingest::{Error, FailureGroup, GroupKey, Language, Observation, Occurrence, Result};

/// Groups a new trace is compared with, at most (the most recently seen).
pub const MAX_CANDIDATES: i64 = 200;

/// One exact key counted in another group by similarity, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergeRecord {
    /// The failure's own exact key.
    pub exact_key: GroupKey,
    /// The group it was counted in.
    pub group_key: GroupKey,
    pub score: f64,
    /// Frames the alignment matched (the new trace's positions first).
    pub matched: Vec<MatchedFrame>,
    /// Unix seconds of the merge, and of its undoing.
    pub merged_at: i64,
    pub undone_at: Option<i64>,
}

/// Where a sighting is counted.
pub(super) enum Route {
    /// In the group of its exact key (new or known).
    Own,
    /// In the group an earlier merge of its exact key chose.
    Merged(GroupKey),
    /// In a group chosen now by similarity (the merge is written).
    MergedNow(MergeRecord),
}

/// A group store that merges similar issues: the stores' one interface to
/// similar-issue merging, checked on both by `conformance::merges`.
#[async_trait::async_trait]
pub trait MergingGroupStore: Send + Sync {
    /// Counts `occ` in its group: the group of its exact key, the group an
    /// earlier merge of that key chose, or — when the key has no group yet
    /// and `profile` is like a known group's — that group, the merge
    /// recorded (returned when made now). Without merging configured, or
    /// without a profile, exactly [`GroupStore::record`](tracelab_ingest::GroupStore::record).
    async fn record_similar(
        &self,
        occ: &Occurrence,
        profile: Option<&StackProfile>,
    ) -> Result<(FailureGroup, Observation, Option<MergeRecord>)>;
    /// The merges into `group`, oldest first, undone ones included.
    async fn merges(&self, group: &GroupKey) -> Result<Vec<MergeRecord>>;
    /// Undoes the merge of `exact_key`: its next sighting opens a group of
    /// its own, never merged by similarity again. False: nothing to undo.
    async fn unmerge(&self, exact_key: &GroupKey, at: i64) -> Result<bool>;
}

/// The merge rule both stores apply to a new exact key: the best of the
/// candidate groups' profiles (same language, most recently seen first,
/// at most [`MAX_CANDIDATES`]) at the threshold or above.
pub(super) fn similar_group(
    exact: &GroupKey,
    profile: &StackProfile,
    candidates: &[(GroupKey, StackProfile)],
    cfg: &SimilarityConfig,
    now: i64,
) -> Option<MergeRecord> {
    if profile.frames.is_empty() {
        return None;
    }
    let (group_key, s) = best_match(profile, candidates, cfg)?;
    Some(MergeRecord {
        exact_key: exact.clone(),
        group_key,
        score: s.score,
        matched: s.matched,
        merged_at: now,
        undone_at: None,
    })
}

pub(super) fn json_error(e: serde_json::Error) -> Error {
    Error::Internal(format!("unreadable merge or profile: {e}"))
}

pub(super) fn language_name(l: Language) -> Result<String> {
    match serde_json::to_value(l).map_err(json_error)? {
        serde_json::Value::String(s) => Ok(s),
        other => Err(Error::Internal(format!("language as {other}"))),
    }
}

impl PgGroupStore {
    /// Decides where `exact` is counted, inside the evidence's transaction.
    pub(super) async fn route(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        exact: &GroupKey,
        language: Language,
        profile: Option<&StackProfile>,
        now: i64,
    ) -> Result<Route> {
        let earlier =
            sqlx::query("SELECT group_key, undone_at FROM group_merges WHERE exact_key = $1")
                .bind(&exact.0)
                .fetch_optional(&mut **tx)
                .await
                .map_err(db_error)?;
        if let Some(row) = earlier {
            let undone: Option<i64> = row.get("undone_at");
            return Ok(match undone {
                None => Route::Merged(GroupKey(row.get("group_key"))),
                Some(_) => Route::Own,
            });
        }
        let (Some(cfg), Some(profile)) = (self.similarity(), profile) else {
            return Ok(Route::Own);
        };
        let known = sqlx::query("SELECT 1 FROM failure_groups WHERE group_key = $1")
            .bind(&exact.0)
            .fetch_optional(&mut **tx)
            .await
            .map_err(db_error)?;
        if known.is_some() {
            return Ok(Route::Own);
        }
        let rows = sqlx::query(
            "SELECT group_key, profile FROM failure_groups WHERE profile IS NOT NULL \
             AND language = $1 ORDER BY last_seen DESC, group_key COLLATE \"C\" LIMIT $2",
        )
        .bind(language_name(language)?)
        .bind(MAX_CANDIDATES)
        .fetch_all(&mut **tx)
        .await
        .map_err(db_error)?;
        let mut candidates = Vec::with_capacity(rows.len());
        for row in &rows {
            let p: sqlx::types::Json<StackProfile> = row.get("profile");
            candidates.push((GroupKey(row.get("group_key")), p.0));
        }
        let Some(record) = similar_group(exact, profile, &candidates, cfg, now) else {
            return Ok(Route::Own);
        };
        sqlx::query(
            "INSERT INTO group_merges (exact_key, group_key, score, nearest, matched, merged_at) \
             VALUES ($1, $2, $3, $2, $4, $5) ON CONFLICT (exact_key) DO NOTHING",
        )
        .bind(&record.exact_key.0)
        .bind(&record.group_key.0)
        .bind(record.score)
        .bind(sqlx::types::Json(&record.matched))
        .bind(now)
        .execute(&mut **tx)
        .await
        .map_err(db_error)?;
        Ok(Route::MergedNow(record))
    }

    /// Keeps the stack profile of a group just created, for later comparisons.
    pub(super) async fn keep_profile(
        tx: &mut Transaction<'_, Postgres>,
        key: &GroupKey,
        profile: &StackProfile,
    ) -> Result<()> {
        sqlx::query(
            "UPDATE failure_groups SET profile = $2 WHERE group_key = $1 AND profile IS NULL",
        )
        .bind(&key.0)
        .bind(sqlx::types::Json(profile))
        .execute(&mut **tx)
        .await
        .map_err(db_error)?;
        Ok(())
    }

    /// The merges into `group`, oldest first, undone ones included.
    pub async fn merges(&self, group: &GroupKey) -> Result<Vec<MergeRecord>> {
        let rows = sqlx::query(
            "SELECT exact_key, group_key, score, matched, merged_at, undone_at FROM group_merges \
             WHERE group_key = $1 ORDER BY merged_at, exact_key COLLATE \"C\"",
        )
        .bind(&group.0)
        .fetch_all(self.pool())
        .await
        .map_err(db_error)?;
        rows.iter()
            .map(|r| {
                let matched: sqlx::types::Json<Vec<MatchedFrame>> = r.get("matched");
                Ok(MergeRecord {
                    exact_key: GroupKey(r.get("exact_key")),
                    group_key: GroupKey(r.get("group_key")),
                    score: r.get("score"),
                    matched: matched.0,
                    merged_at: r.get("merged_at"),
                    undone_at: r.get("undone_at"),
                })
            })
            .collect()
    }

    /// Undoes the merge of `exact_key`: its next sighting opens a group of
    /// its own and it is never merged by similarity again. Sightings already
    /// counted stay where they are (their evidence rows keep the exact key).
    /// False when there was no merge to undo.
    pub async fn unmerge(&self, exact_key: &GroupKey, at: i64) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE group_merges SET undone_at = $2 WHERE exact_key = $1 AND undone_at IS NULL",
        )
        .bind(&exact_key.0)
        .bind(at)
        .execute(self.pool())
        .await
        .map_err(db_error)?;
        Ok(done.rows_affected() == 1)
    }
}

#[async_trait::async_trait]
impl MergingGroupStore for PgGroupStore {
    async fn record_similar(
        &self,
        occ: &Occurrence,
        profile: Option<&StackProfile>,
    ) -> Result<(FailureGroup, Observation, Option<MergeRecord>)> {
        let mut tx = self.pool().begin().await.map_err(db_error)?;
        let (target, merged) = match self
            .route(&mut tx, &occ.key, occ.language, profile, occ.at)
            .await?
        {
            Route::Own => (None, None),
            Route::Merged(key) => (Some(key), None),
            Route::MergedNow(record) => (Some(record.group_key.clone()), Some(record)),
        };
        let routed = Occurrence {
            key: target.unwrap_or_else(|| occ.key.clone()),
            ..occ.clone()
        };
        let (group, obs) = Self::observe_locked(&mut tx, &routed).await?;
        if obs == Observation::New {
            if let Some(p) = profile {
                Self::keep_profile(&mut tx, &group.key, p).await?;
            }
        } else {
            Self::save(&mut tx, &group).await?;
        }
        tx.commit().await.map_err(db_error)?;
        Ok((group, obs, merged))
    }

    async fn merges(&self, group: &GroupKey) -> Result<Vec<MergeRecord>> {
        PgGroupStore::merges(self, group).await
    }

    async fn unmerge(&self, exact_key: &GroupKey, at: i64) -> Result<bool> {
        PgGroupStore::unmerge(self, exact_key, at).await
    }
}
