//! Similar-issue merging in the fleet's group store: a failure whose exact
//! key has no group joins the most similar known group (the library's
//! [`best_match`] over the groups' stored stack profiles, same language,
//! most recently seen first) and the merge is written down with its score
//! and matched frames (`group_merges`, migration 0012). Later sightings of
//! that exact key follow the merge. Every sighting counted through this
//! path is kept under the group it was counted in and its own exact key
//! (`group_sightings`, migration 0017), so [`MergingGroupStore::unmerge`]
//! can undo a merge: the sightings it counted move back to the exact key's
//! own group ([`FailureGroup::give_back`]), who undid it and why are kept in
//! the merge history, and the exact key is never merged by similarity
//! again. Evidence rows keep their exact key (`evidence.exact_key`) and
//! move with their sightings.
//!
//! The rule ([`similar_group`]) is shared by both stores: PostgreSQL
//! (`record_evidence`, [`MergingGroupStore::record_similar`]) and SQLite
//! (`sqlite.rs`), so the one-machine store merges as the fleet's does.

use super::postgres::{PgGroupStore, db_error};
use serde::{Deserialize, Serialize};
use sqlx::{Postgres, Row, Transaction};
use tracelab_evidence::similar::{MatchedFrame, SimilarityConfig, StackProfile, best_match};
use tracelab_evidence::{Error, FailureGroup, GroupKey, Language, Observation, Occurrence, Result};

/// Groups a new trace is compared with, at most (the most recently seen).
pub const MAX_CANDIDATES: i64 = 200;

/// Longest reason kept for undoing a merge, in bytes (longer ones are refused).
pub const MAX_UNDO_REASON: usize = 1000;

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
    /// Who undid it and why (set with `undone_at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undone_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo_reason: Option<String>,
    /// Sightings the undoing moved back to the exact key's own group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved: Option<u64>,
}

/// Who undoes a merge, when and why: kept in the merge history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undo {
    /// Unix seconds.
    pub at: i64,
    /// The person or token name.
    pub by: String,
    pub reason: String,
}

impl Undo {
    /// Refuses an empty name or reason, or a reason past [`MAX_UNDO_REASON`]:
    /// the history must say who and why.
    pub fn new(at: i64, by: &str, reason: &str) -> Result<Self> {
        let (by, reason) = (by.trim(), reason.trim());
        if by.is_empty() || reason.is_empty() {
            return Err(Error::InvalidArgument(
                "undoing a merge needs who undoes it and why".into(),
            ));
        }
        if reason.len() > MAX_UNDO_REASON {
            return Err(Error::InvalidArgument(format!(
                "the reason is {} bytes, more than {MAX_UNDO_REASON}",
                reason.len()
            )));
        }
        Ok(Self {
            at,
            by: by.to_owned(),
            reason: reason.to_owned(),
        })
    }
}

/// What undoing a merge did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unmerged {
    /// The merge, now with who undid it, why and how many sightings moved.
    pub merge: MergeRecord,
    /// The group the merge counted into, without the moved sightings.
    pub from: FailureGroup,
    /// The exact key's own group holding them; `None` when none were
    /// recorded (a merge made before migration 0017 kept no sightings).
    pub own: Option<FailureGroup>,
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
    /// without a profile, exactly [`GroupStore::record`](tracelab_evidence::GroupStore::record).
    async fn record_similar(
        &self,
        occ: &Occurrence,
        profile: Option<&StackProfile>,
    ) -> Result<(FailureGroup, Observation, Option<MergeRecord>)>;
    /// The merges into `group`, oldest first, undone ones included.
    async fn merges(&self, group: &GroupKey) -> Result<Vec<MergeRecord>>;
    /// Undoes the merge of `exact_key`: the sightings it counted in the
    /// other group move to the exact key's own group, whose next sightings
    /// it counts; it is never merged by similarity again; `undo` is kept in
    /// the merge history. `None`: no merge of that key to undo.
    async fn unmerge(&self, exact_key: &GroupKey, undo: &Undo) -> Result<Option<Unmerged>>;
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
        undone_by: None,
        undo_reason: None,
        moved: None,
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
    /// The merge row is read `FOR SHARE`: an undo in flight (which holds it
    /// `FOR UPDATE`) finishes first, so no sighting follows a merge being undone.
    pub(super) async fn route(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        exact: &GroupKey,
        language: Language,
        profile: Option<&StackProfile>,
        now: i64,
    ) -> Result<Route> {
        let earlier = sqlx::query(
            "SELECT group_key, undone_at FROM group_merges WHERE exact_key = $1 FOR SHARE",
        )
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
            "INSERT INTO group_merges (exact_key, group_key, score, nearest, matched, merged_at, \
             profile) VALUES ($1, $2, $3, $2, $4, $5, $6) ON CONFLICT (exact_key) DO NOTHING",
        )
        .bind(&record.exact_key.0)
        .bind(&record.group_key.0)
        .bind(record.score)
        .bind(sqlx::types::Json(&record.matched))
        .bind(now)
        .bind(sqlx::types::Json(profile))
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

    /// Keeps the sighting `occ` (its key the exact key) under `group`, the
    /// group it was counted in: what an undone merge moves back.
    pub(super) async fn keep_sighting(
        tx: &mut Transaction<'_, Postgres>,
        group: &GroupKey,
        occ: &Occurrence,
    ) -> Result<()> {
        sqlx::query(
            "INSERT INTO group_sightings (group_key, exact_key, at, occurrence) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(&group.0)
        .bind(&occ.key.0)
        .bind(occ.at)
        .bind(sqlx::types::Json(occ))
        .execute(&mut **tx)
        .await
        .map_err(db_error)?;
        Ok(())
    }

    /// The merges into `group`, oldest first, undone ones included.
    pub async fn merges(&self, group: &GroupKey) -> Result<Vec<MergeRecord>> {
        let rows = sqlx::query(
            "SELECT exact_key, group_key, score, matched, merged_at, undone_at, undone_by, \
             undo_reason, moved FROM group_merges \
             WHERE group_key = $1 ORDER BY merged_at, exact_key COLLATE \"C\"",
        )
        .bind(&group.0)
        .fetch_all(self.pool())
        .await
        .map_err(db_error)?;
        rows.iter()
            .map(|r| {
                let matched: sqlx::types::Json<Vec<MatchedFrame>> = r.get("matched");
                let moved: Option<i64> = r.get("moved");
                Ok(MergeRecord {
                    exact_key: GroupKey(r.get("exact_key")),
                    group_key: GroupKey(r.get("group_key")),
                    score: r.get("score"),
                    matched: matched.0,
                    merged_at: r.get("merged_at"),
                    undone_at: r.get("undone_at"),
                    undone_by: r.get("undone_by"),
                    undo_reason: r.get("undo_reason"),
                    moved: moved.and_then(|m| u64::try_from(m).ok()),
                })
            })
            .collect()
    }

    /// Undoes the merge of `exact_key` in one transaction: the merge row
    /// and both groups locked, the sightings it counted (and their evidence
    /// rows) moved to the exact key's own group, the undo recorded.
    pub async fn unmerge(&self, exact_key: &GroupKey, undo: &Undo) -> Result<Option<Unmerged>> {
        let mut tx = self.pool().begin().await.map_err(db_error)?;
        let Some(row) = sqlx::query(
            "SELECT group_key, profile FROM group_merges \
             WHERE exact_key = $1 AND undone_at IS NULL FOR UPDATE",
        )
        .bind(&exact_key.0)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_error)?
        else {
            return Ok(None);
        };
        let group = GroupKey(row.get("group_key"));
        let profile: Option<sqlx::types::Json<StackProfile>> = row.get("profile");
        let mut from = Self::lock(&mut tx, &group).await?.ok_or_else(|| {
            Error::Internal(format!("merged group {group} of {exact_key} is missing"))
        })?;
        let own = Self::lock(&mut tx, exact_key).await?;
        let existed = own.is_some();
        let sightings = sqlx::query(
            "SELECT exact_key, occurrence FROM group_sightings WHERE group_key = $1 \
             ORDER BY at, id",
        )
        .bind(&group.0)
        .fetch_all(&mut *tx)
        .await
        .map_err(db_error)?;
        let (mut moved, mut kept) = (Vec::new(), Vec::new());
        for r in &sightings {
            let occ: sqlx::types::Json<Occurrence> = r.get("occurrence");
            if r.get::<String, _>("exact_key") == exact_key.0 {
                moved.push(occ.0);
            } else {
                kept.push(occ.0);
            }
        }
        let own = from.give_back(&moved, &kept, own);
        Self::save(&mut tx, &from).await?;
        if let Some(g) = &own {
            if existed {
                Self::save(&mut tx, g).await?;
            } else {
                if !Self::insert(&mut tx, g).await? {
                    return Err(Error::Conflict(format!(
                        "group {} appeared while its merge was undone",
                        g.key
                    )));
                }
            }
            if let Some(p) = &profile {
                Self::keep_profile(&mut tx, &g.key, &p.0).await?;
            }
        }
        for sql in [
            "UPDATE group_sightings SET group_key = $2 WHERE group_key = $1 AND exact_key = $2",
            "UPDATE evidence SET group_key = $2, exact_key = NULL \
             WHERE group_key = $1 AND exact_key = $2",
        ] {
            sqlx::query(sql)
                .bind(&group.0)
                .bind(&exact_key.0)
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
        }
        let n = u64::try_from(moved.len()).unwrap_or(u64::MAX);
        let done = sqlx::query(
            "UPDATE group_merges SET undone_at = $2, undone_by = $3, undo_reason = $4, moved = $5 \
             WHERE exact_key = $1 \
             RETURNING exact_key, group_key, score, matched, merged_at",
        )
        .bind(&exact_key.0)
        .bind(undo.at)
        .bind(&undo.by)
        .bind(&undo.reason)
        .bind(i64::try_from(n).unwrap_or(i64::MAX))
        .fetch_one(&mut *tx)
        .await
        .map_err(db_error)?;
        let matched: sqlx::types::Json<Vec<MatchedFrame>> = done.get("matched");
        let merge = MergeRecord {
            exact_key: exact_key.clone(),
            group_key: group,
            score: done.get("score"),
            matched: matched.0,
            merged_at: done.get("merged_at"),
            undone_at: Some(undo.at),
            undone_by: Some(undo.by.clone()),
            undo_reason: Some(undo.reason.clone()),
            moved: Some(n),
        };
        tx.commit().await.map_err(db_error)?;
        Ok(Some(Unmerged { merge, from, own }))
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
        Self::keep_sighting(&mut tx, &group.key, occ).await?;
        tx.commit().await.map_err(db_error)?;
        Ok((group, obs, merged))
    }

    async fn merges(&self, group: &GroupKey) -> Result<Vec<MergeRecord>> {
        PgGroupStore::merges(self, group).await
    }

    async fn unmerge(&self, exact_key: &GroupKey, undo: &Undo) -> Result<Option<Unmerged>> {
        PgGroupStore::unmerge(self, exact_key, undo).await
    }
}
