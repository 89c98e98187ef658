//! [`GroupStore`] on SQLite (`failure_groups`, migration 0002), the embedded
//! mode's store. SQLite has one writer at a time: each write runs in a
//! `BEGIN IMMEDIATE` transaction, which takes the write lock before reading
//! (a deferred transaction that reads and then writes can fail with
//! SQLITE_BUSY when another writer got in between), then reads the group,
//! applies the model ([`FailureGroup::observe`]) and writes it back.
//!
//! With [`SqliteGroupStore::merging`], [`MergingGroupStore::record_similar`]
//! merges a new exact key into the most similar known group by the
//! PostgreSQL store's rule (`merges.rs`), recording the score and matched
//! frames in `group_merges` (migration 0004), in the same transaction.

use super::columns::{Columns, group_columns, language_name, page_rows, status_name};
use super::merges::{
    MAX_CANDIDATES, MergeRecord, MergingGroupStore, Undo, Unmerged, json_error, similar_group,
};
use crate::SqliteStore;
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, Sqlite, SqlitePool, Transaction};
use std::path::Path;
use tracelab_evidence::similar::{MatchedFrame, SimilarityConfig, StackProfile};
use tracelab_evidence::{
    Error, FailureGroup, GroupKey, GroupPage, GroupQuery, GroupState, GroupStore, Observation,
    Occurrence, Reason, Result,
};

/// Failure groups in the embedded SQLite database.
#[derive(Debug, Clone)]
pub struct SqliteGroupStore {
    pool: SqlitePool,
    /// Similar-issue merging in `record_similar`; `None`: exact keys only.
    similarity: Option<SimilarityConfig>,
}

fn db_error(e: sqlx::Error) -> Error {
    match &e {
        sqlx::Error::PoolTimedOut => Error::Timeout(format!("group store busy: {e}")),
        sqlx::Error::Io(_) | sqlx::Error::PoolClosed => {
            Error::Unavailable(format!("group store unavailable: {e}"))
        }
        // SQLITE_BUSY (5) and its extended codes: the write lock stayed taken past the busy timeout.
        sqlx::Error::Database(db)
            if db
                .code()
                .and_then(|c| c.parse::<i32>().ok())
                .is_some_and(|c| c & 0xff == 5) =>
        {
            Error::Timeout(format!("group store busy: {e}"))
        }
        _ => Error::Internal(format!("group store error: {e}")),
    }
}

fn set(column: &str, items: &[String]) -> Result<String> {
    serde_json::to_string(items)
        .map_err(|e| Error::Internal(format!("cannot encode {column}: {e}")))
}

fn from_row(row: &SqliteRow) -> Result<FailureGroup> {
    let get_err = |e: sqlx::Error| Error::Internal(format!("unreadable failure group row: {e}"));
    let list = |column: &str| -> Result<Vec<String>> {
        let text: String = row.try_get(column).map_err(get_err)?;
        serde_json::from_str(&text)
            .map_err(|e| Error::Internal(format!("stored {column} is not a JSON list: {e}")))
    };
    let investigation = row
        .try_get::<Option<String>, _>("investigation")
        .map_err(get_err)?
        .map(|s| serde_json::from_str(&s))
        .transpose()
        .map_err(|e| Error::Internal(format!("stored investigation mark is not JSON: {e}")))?;
    Columns {
        key: row.try_get("group_key").map_err(get_err)?,
        title: row.try_get("title").map_err(get_err)?,
        kind: row.try_get("kind").map_err(get_err)?,
        language: row.try_get("language").map_err(get_err)?,
        first_seen: row.try_get("first_seen").map_err(get_err)?,
        last_seen: row.try_get("last_seen").map_err(get_err)?,
        count: row.try_get("count").map_err(get_err)?,
        commits: list("commits")?,
        branches: list("branches")?,
        test_ids: list("test_ids")?,
        status: status_name(row.try_get("status").map_err(get_err)?)?,
        resolved_at: row.try_get("resolved_at").map_err(get_err)?,
        resolved_commit: row.try_get("resolved_commit").map_err(get_err)?,
        regressions: row.try_get("regressions").map_err(get_err)?,
        investigation,
        version: row.try_get("version").map_err(get_err)?,
        repositories: list("repositories")?,
    }
    .into_group()
}

impl SqliteGroupStore {
    /// Uses the pool of a migrated [`SqliteStore`] (same file, same migrations).
    pub fn new(store: &SqliteStore) -> Self {
        Self {
            pool: store.pool().clone(),
            similarity: None,
        }
    }

    /// Merges new exact keys into similar groups in `record_similar`, with
    /// `config`'s weights and threshold (as `PgGroupStore::merging`).
    pub fn merging(mut self, config: SimilarityConfig) -> Self {
        self.similarity = Some(config);
        self
    }

    /// Where a sighting of `exact` is counted, and the merge made now if
    /// any (the write lock is held).
    async fn route(
        &self,
        tx: &mut Transaction<'_, Sqlite>,
        occ: &Occurrence,
        profile: Option<&StackProfile>,
    ) -> Result<(GroupKey, Option<MergeRecord>)> {
        let own = (occ.key.clone(), None);
        let earlier =
            sqlx::query("SELECT group_key, undone_at FROM group_merges WHERE exact_key = ?")
                .bind(&occ.key.0)
                .fetch_optional(&mut **tx)
                .await
                .map_err(db_error)?;
        if let Some(row) = earlier {
            let undone: Option<i64> = row.try_get("undone_at").map_err(db_error)?;
            return Ok(match undone {
                None => (GroupKey(row.try_get("group_key").map_err(db_error)?), None),
                Some(_) => own,
            });
        }
        let (Some(cfg), Some(profile)) = (&self.similarity, profile) else {
            return Ok(own);
        };
        if Self::load(tx, &occ.key).await?.is_some() {
            return Ok(own);
        }
        let rows = sqlx::query(
            "SELECT group_key, profile FROM failure_groups WHERE profile IS NOT NULL \
             AND language = ? ORDER BY last_seen DESC, group_key LIMIT ?",
        )
        .bind(language_name(occ.language)?)
        .bind(MAX_CANDIDATES)
        .fetch_all(&mut **tx)
        .await
        .map_err(db_error)?;
        let mut candidates = Vec::with_capacity(rows.len());
        for row in &rows {
            let text: String = row.try_get("profile").map_err(db_error)?;
            let p: StackProfile = serde_json::from_str(&text).map_err(json_error)?;
            candidates.push((GroupKey(row.try_get("group_key").map_err(db_error)?), p));
        }
        let Some(record) = similar_group(&occ.key, profile, &candidates, cfg, occ.at) else {
            return Ok(own);
        };
        let matched = serde_json::to_string(&record.matched).map_err(json_error)?;
        sqlx::query(
            "INSERT INTO group_merges (exact_key, group_key, score, nearest, matched, merged_at, \
             profile) VALUES (?1, ?2, ?3, ?2, ?4, ?5, ?6) ON CONFLICT (exact_key) DO NOTHING",
        )
        .bind(&record.exact_key.0)
        .bind(&record.group_key.0)
        .bind(record.score)
        .bind(matched)
        .bind(record.merged_at)
        .bind(serde_json::to_string(profile).map_err(json_error)?)
        .execute(&mut **tx)
        .await
        .map_err(db_error)?;
        Ok((record.group_key.clone(), Some(record)))
    }

    /// Opens (creating and migrating) the database file.
    pub async fn open(path: &Path) -> Result<Self> {
        let store = SqliteStore::open(path).await.map_err(super::domain_error)?;
        Ok(Self::new(&store))
    }

    /// A private in-memory database (tests).
    pub async fn in_memory() -> Result<Self> {
        let store = SqliteStore::in_memory()
            .await
            .map_err(super::domain_error)?;
        Ok(Self::new(&store))
    }

    async fn begin(&self) -> Result<Transaction<'static, Sqlite>> {
        self.pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(db_error)
    }

    async fn load(
        tx: &mut Transaction<'_, Sqlite>,
        key: &GroupKey,
    ) -> Result<Option<FailureGroup>> {
        let row = sqlx::query(concat!(
            "SELECT ",
            group_columns!(),
            " FROM failure_groups WHERE group_key = ?"
        ))
        .bind(&key.0)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db_error)?;
        row.as_ref().map(from_row).transpose()
    }

    /// Inserts the row or updates the model's columns (the write lock is
    /// held). An update, not a replace: a replace deletes the row first,
    /// losing its profile and environment and breaking `group_merges`' reference.
    async fn save(tx: &mut Transaction<'_, Sqlite>, g: &FailureGroup) -> Result<()> {
        let c = Columns::from_group(g)?;
        let investigation = c.investigation.as_ref().map(|v| v.to_string());
        sqlx::query(concat!(
            "INSERT INTO failure_groups (",
            group_columns!(),
            ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (group_key) DO UPDATE SET title = excluded.title, kind = excluded.kind, \
             language = excluded.language, first_seen = excluded.first_seen, \
             last_seen = excluded.last_seen, count = excluded.count, commits = excluded.commits, \
             branches = excluded.branches, test_ids = excluded.test_ids, status = excluded.status, \
             resolved_at = excluded.resolved_at, resolved_commit = excluded.resolved_commit, \
             regressions = excluded.regressions, investigation = excluded.investigation, \
             version = excluded.version, repositories = excluded.repositories"
        ))
        .bind(&c.key)
        .bind(&c.title)
        .bind(&c.kind)
        .bind(&c.language)
        .bind(c.first_seen)
        .bind(c.last_seen)
        .bind(c.count)
        .bind(set("commits", &c.commits)?)
        .bind(set("branches", &c.branches)?)
        .bind(set("test_ids", &c.test_ids)?)
        .bind(c.status)
        .bind(c.resolved_at)
        .bind(&c.resolved_commit)
        .bind(c.regressions)
        .bind(investigation)
        .bind(c.version)
        .bind(set("repositories", &c.repositories)?)
        .execute(&mut **tx)
        .await
        .map_err(db_error)?;
        Ok(())
    }

    /// Keeps the stack profile of a group just created, for later comparisons.
    async fn keep_profile(
        tx: &mut Transaction<'_, Sqlite>,
        key: &GroupKey,
        profile: &StackProfile,
    ) -> Result<()> {
        let text = serde_json::to_string(profile).map_err(json_error)?;
        sqlx::query(
            "UPDATE failure_groups SET profile = ? WHERE group_key = ? AND profile IS NULL",
        )
        .bind(text)
        .bind(&key.0)
        .execute(&mut **tx)
        .await
        .map_err(db_error)?;
        Ok(())
    }

    async fn update(
        &self,
        key: &GroupKey,
        change: impl FnOnce(&mut FailureGroup),
    ) -> Result<FailureGroup> {
        let mut tx = self.begin().await?;
        let mut g = Self::load(&mut tx, key)
            .await?
            .ok_or_else(|| Error::NotFound(format!("failure group {key}")))?;
        change(&mut g);
        Self::save(&mut tx, &g).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(g)
    }
}

#[async_trait::async_trait]
impl GroupStore for SqliteGroupStore {
    async fn record(&self, occ: &Occurrence) -> Result<(FailureGroup, Observation)> {
        let mut tx = self.begin().await?;
        let (g, obs) = match Self::load(&mut tx, &occ.key).await? {
            Some(mut g) => {
                let obs = g.observe(occ);
                (g, obs)
            }
            None => (FailureGroup::new(occ), Observation::New),
        };
        Self::save(&mut tx, &g).await?;
        tx.commit().await.map_err(db_error)?;
        Ok((g, obs))
    }

    async fn get(&self, key: &GroupKey) -> Result<Option<FailureGroup>> {
        let row = sqlx::query(concat!(
            "SELECT ",
            group_columns!(),
            " FROM failure_groups WHERE group_key = ?"
        ))
        .bind(&key.0)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_error)?;
        row.as_ref().map(from_row).transpose()
    }

    async fn resolve(
        &self,
        key: &GroupKey,
        at: i64,
        commit: Option<String>,
    ) -> Result<FailureGroup> {
        self.update(key, |g| g.resolve(at, commit)).await
    }

    async fn mark_investigation(
        &self,
        key: &GroupKey,
        at: i64,
        reason: Reason,
    ) -> Result<FailureGroup> {
        self.update(key, |g| g.mark_investigation(at, reason)).await
    }

    async fn page(&self, q: &GroupQuery) -> Result<GroupPage> {
        // TEXT compares by bytes (BINARY), the listing's tie-break order.
        let rows = sqlx::query(concat!(
            "SELECT ",
            group_columns!(),
            " FROM failure_groups WHERE (?1 IS NULL \
                 OR EXISTS (SELECT 1 FROM json_each(repositories) WHERE value = ?1)) \
             AND (?2 IS NULL OR status = ?2) AND (?3 IS NULL OR language = ?3) \
             AND (?4 IS NULL OR last_seen >= ?4) \
             AND (?5 IS NULL OR last_seen < ?5 OR (last_seen = ?5 AND group_key > ?6)) \
             ORDER BY last_seen DESC, group_key LIMIT ?7"
        ))
        .bind(&q.repository)
        .bind(q.state.map(GroupState::as_str))
        .bind(q.language.map(language_name).transpose()?)
        .bind(q.since)
        .bind(q.after.as_ref().map(|c| c.last_seen))
        .bind(q.after.as_ref().map(|c| c.key.0.as_str()))
        .bind(page_rows(q))
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(q.page(rows.iter().map(from_row).collect::<Result<_>>()?))
    }
}

#[async_trait::async_trait]
impl MergingGroupStore for SqliteGroupStore {
    async fn record_similar(
        &self,
        occ: &Occurrence,
        profile: Option<&StackProfile>,
    ) -> Result<(FailureGroup, Observation, Option<MergeRecord>)> {
        let mut tx = self.begin().await?;
        let (target, merged) = self.route(&mut tx, occ, profile).await?;
        let routed = Occurrence {
            key: target,
            ..occ.clone()
        };
        let (g, obs) = match Self::load(&mut tx, &routed.key).await? {
            Some(mut g) => {
                let obs = g.observe(&routed);
                (g, obs)
            }
            None => (FailureGroup::new(&routed), Observation::New),
        };
        Self::save(&mut tx, &g).await?;
        if obs == Observation::New
            && let Some(p) = profile
        {
            Self::keep_profile(&mut tx, &g.key, p).await?;
        }
        // The sighting under its exact key: what undoing a merge moves back.
        sqlx::query(
            "INSERT INTO group_sightings (group_key, exact_key, at, occurrence) VALUES (?, ?, ?, ?)",
        )
        .bind(&g.key.0)
        .bind(&occ.key.0)
        .bind(occ.at)
        .bind(serde_json::to_string(occ).map_err(json_error)?)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok((g, obs, merged))
    }

    async fn merges(&self, group: &GroupKey) -> Result<Vec<MergeRecord>> {
        let rows = sqlx::query(
            "SELECT exact_key, group_key, score, matched, merged_at, undone_at, undone_by, \
             undo_reason, moved FROM group_merges WHERE group_key = ? ORDER BY merged_at, exact_key",
        )
        .bind(&group.0)
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        rows.iter().map(merge_record).collect()
    }

    async fn unmerge(&self, exact_key: &GroupKey, undo: &Undo) -> Result<Option<Unmerged>> {
        let mut tx = self.begin().await?;
        let Some(row) = sqlx::query(
            "SELECT group_key, profile FROM group_merges WHERE exact_key = ? AND undone_at IS NULL",
        )
        .bind(&exact_key.0)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_error)?
        else {
            return Ok(None);
        };
        let group = GroupKey(row.try_get("group_key").map_err(db_error)?);
        let profile: Option<String> = row.try_get("profile").map_err(db_error)?;
        let mut from = Self::load(&mut tx, &group).await?.ok_or_else(|| {
            Error::Internal(format!("merged group {group} of {exact_key} is missing"))
        })?;
        let own = Self::load(&mut tx, exact_key).await?;
        let sightings = sqlx::query(
            "SELECT exact_key, occurrence FROM group_sightings WHERE group_key = ? ORDER BY at, id",
        )
        .bind(&group.0)
        .fetch_all(&mut *tx)
        .await
        .map_err(db_error)?;
        let (mut moved, mut kept) = (Vec::new(), Vec::new());
        for r in &sightings {
            let text: String = r.try_get("occurrence").map_err(db_error)?;
            let occ: Occurrence = serde_json::from_str(&text).map_err(json_error)?;
            let exact: String = r.try_get("exact_key").map_err(db_error)?;
            if exact == exact_key.0 {
                moved.push(occ);
            } else {
                kept.push(occ);
            }
        }
        let own = from.give_back(&moved, &kept, own);
        Self::save(&mut tx, &from).await?;
        if let Some(g) = &own {
            Self::save(&mut tx, g).await?;
            if let Some(p) = &profile {
                let p: StackProfile = serde_json::from_str(p).map_err(json_error)?;
                Self::keep_profile(&mut tx, &g.key, &p).await?;
            }
        }
        sqlx::query(
            "UPDATE group_sightings SET group_key = ?2 WHERE group_key = ?1 AND exact_key = ?2",
        )
        .bind(&group.0)
        .bind(&exact_key.0)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        let n = i64::try_from(moved.len()).unwrap_or(i64::MAX);
        let done = sqlx::query(
            "UPDATE group_merges SET undone_at = ?2, undone_by = ?3, undo_reason = ?4, moved = ?5 \
             WHERE exact_key = ?1 RETURNING exact_key, group_key, score, matched, merged_at, \
             undone_at, undone_by, undo_reason, moved",
        )
        .bind(&exact_key.0)
        .bind(undo.at)
        .bind(&undo.by)
        .bind(&undo.reason)
        .bind(n)
        .fetch_one(&mut *tx)
        .await
        .map_err(db_error)?;
        let merge = merge_record(&done)?;
        tx.commit().await.map_err(db_error)?;
        Ok(Some(Unmerged { merge, from, own }))
    }
}

/// A `group_merges` row.
fn merge_record(r: &SqliteRow) -> Result<MergeRecord> {
    let matched: String = r.try_get("matched").map_err(db_error)?;
    let matched: Vec<MatchedFrame> = serde_json::from_str(&matched).map_err(json_error)?;
    let moved: Option<i64> = r.try_get("moved").map_err(db_error)?;
    Ok(MergeRecord {
        exact_key: GroupKey(r.try_get("exact_key").map_err(db_error)?),
        group_key: GroupKey(r.try_get("group_key").map_err(db_error)?),
        score: r.try_get("score").map_err(db_error)?,
        matched,
        merged_at: r.try_get("merged_at").map_err(db_error)?,
        undone_at: r.try_get("undone_at").map_err(db_error)?,
        undone_by: r.try_get("undone_by").map_err(db_error)?,
        undo_reason: r.try_get("undo_reason").map_err(db_error)?,
        moved: moved.and_then(|m| u64::try_from(m).ok()),
    })
}
