//! [`GroupStore`] on PostgreSQL (`failure_groups`, migration 0005).
//!
//! `record` runs in one transaction: lock the group's row
//! (`SELECT ... FOR UPDATE`), or create it with `INSERT ... ON CONFLICT DO
//! NOTHING` (a concurrent creator wins and this writer then locks the row it
//! made), apply [`FailureGroup::observe`], write the row back. Writers of one
//! group queue on its row lock, so every sighting is counted exactly once and
//! exactly one of them sees [`Observation::New`]; groups with different keys
//! do not block each other.

use super::columns::{Columns, group_columns, language_name, page_rows, status_name};
use crate::{PgOptions, PgStore};
use sqlx::postgres::PgRow;
use sqlx::{PgPool, Postgres, Row, Transaction};
use tracelab_evidence::similar::SimilarityConfig;
use tracelab_evidence::{
    Error, FailureGroup, GroupKey, GroupPage, GroupQuery, GroupState, GroupStore, Observation,
    Occurrence, Reason, Result,
};

/// Failure groups in PostgreSQL, sharing the fleet store's pool and migrations.
#[derive(Debug, Clone)]
pub struct PgGroupStore {
    pool: PgPool,
    /// Similar-issue merging in `record_evidence`; `None`: exact keys only.
    similarity: Option<SimilarityConfig>,
}

/// sqlx errors through the store's one PostgreSQL mapping, onto ingest's kinds.
pub(super) fn db_error(e: sqlx::Error) -> Error {
    super::domain_error(crate::pg_error::db_error(e))
}

fn from_row(row: &PgRow) -> Result<FailureGroup> {
    let get_err = |e: sqlx::Error| Error::Internal(format!("unreadable failure group row: {e}"));
    Columns {
        key: row.try_get("group_key").map_err(get_err)?,
        title: row.try_get("title").map_err(get_err)?,
        kind: row.try_get("kind").map_err(get_err)?,
        language: row.try_get("language").map_err(get_err)?,
        first_seen: row.try_get("first_seen").map_err(get_err)?,
        last_seen: row.try_get("last_seen").map_err(get_err)?,
        count: row.try_get("count").map_err(get_err)?,
        commits: row.try_get("commits").map_err(get_err)?,
        branches: row.try_get("branches").map_err(get_err)?,
        test_ids: row.try_get("test_ids").map_err(get_err)?,
        status: status_name(row.try_get("status").map_err(get_err)?)?,
        resolved_at: row.try_get("resolved_at").map_err(get_err)?,
        resolved_commit: row.try_get("resolved_commit").map_err(get_err)?,
        regressions: row.try_get("regressions").map_err(get_err)?,
        investigation: row.try_get("investigation").map_err(get_err)?,
        version: row.try_get("version").map_err(get_err)?,
        repositories: row.try_get("repositories").map_err(get_err)?,
    }
    .into_group()
}

impl PgGroupStore {
    /// Uses `pool`, whose database must be migrated (by [`PgStore::connect`],
    /// which runs every `migrations/postgres` file, `failure_groups` included).
    pub fn new(pool: PgPool) -> Self {
        Self {
            pool,
            similarity: None,
        }
    }

    /// Merges new exact keys into similar groups in `record_evidence`
    /// (`merges.rs`), with `config`'s weights and threshold.
    pub fn merging(mut self, config: SimilarityConfig) -> Self {
        self.similarity = Some(config);
        self
    }

    pub(super) fn similarity(&self) -> Option<&SimilarityConfig> {
        self.similarity.as_ref()
    }

    /// Connects and migrates like [`PgStore::connect`].
    pub async fn connect(url: &str, options: PgOptions) -> Result<Self> {
        let store = PgStore::connect(url, options)
            .await
            .map_err(super::domain_error)?;
        Ok(Self::new(store.pool().clone()))
    }

    pub(super) async fn lock(
        tx: &mut Transaction<'_, Postgres>,
        key: &GroupKey,
    ) -> Result<Option<FailureGroup>> {
        let row = sqlx::query(concat!(
            "SELECT ",
            group_columns!(),
            " FROM failure_groups WHERE group_key = $1 FOR UPDATE"
        ))
        .bind(&key.0)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db_error)?;
        row.as_ref().map(from_row).transpose()
    }

    /// Inserts `g`; false when a row with its key already exists.
    pub(super) async fn insert(
        tx: &mut Transaction<'_, Postgres>,
        g: &FailureGroup,
    ) -> Result<bool> {
        let c = Columns::from_group(g)?;
        let done = sqlx::query(concat!(
            "INSERT INTO failure_groups (",
            group_columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) \
             ON CONFLICT (group_key) DO NOTHING"
        ))
        .bind(c.key)
        .bind(c.title)
        .bind(c.kind)
        .bind(c.language)
        .bind(c.first_seen)
        .bind(c.last_seen)
        .bind(c.count)
        .bind(c.commits)
        .bind(c.branches)
        .bind(c.test_ids)
        .bind(c.status)
        .bind(c.resolved_at)
        .bind(c.resolved_commit)
        .bind(c.regressions)
        .bind(c.investigation)
        .bind(c.version)
        .bind(c.repositories)
        .execute(&mut **tx)
        .await
        .map_err(db_error)?;
        Ok(done.rows_affected() == 1)
    }

    /// Writes back every column the model may change (the row is locked).
    pub(super) async fn save(tx: &mut Transaction<'_, Postgres>, g: &FailureGroup) -> Result<()> {
        let c = Columns::from_group(g)?;
        sqlx::query(
            "UPDATE failure_groups SET first_seen = $2, last_seen = $3, count = $4, commits = $5, \
             branches = $6, test_ids = $7, status = $8, resolved_at = $9, resolved_commit = $10, \
             regressions = $11, investigation = $12, version = $13, repositories = $14 \
             WHERE group_key = $1",
        )
        .bind(c.key)
        .bind(c.first_seen)
        .bind(c.last_seen)
        .bind(c.count)
        .bind(c.commits)
        .bind(c.branches)
        .bind(c.test_ids)
        .bind(c.status)
        .bind(c.resolved_at)
        .bind(c.resolved_commit)
        .bind(c.regressions)
        .bind(c.investigation)
        .bind(c.version)
        .bind(c.repositories)
        .execute(&mut **tx)
        .await
        .map_err(db_error)?;
        Ok(())
    }

    /// Counts `occ` in its group inside `tx`, the group row locked until
    /// the commit. A new group is inserted (and needs no save); an existing
    /// one is observed and must be saved by the caller.
    pub(super) async fn observe_locked(
        tx: &mut Transaction<'_, Postgres>,
        occ: &Occurrence,
    ) -> Result<(FailureGroup, Observation)> {
        let mut g = match Self::lock(tx, &occ.key).await? {
            Some(g) => g,
            None => {
                let g = FailureGroup::new(occ);
                if Self::insert(tx, &g).await? {
                    return Ok((g, Observation::New));
                }
                // Another writer created it after our SELECT; its row is committed now.
                Self::lock(tx, &occ.key).await?.ok_or_else(|| {
                    Error::Internal(format!(
                        "failure group {} vanished while recording",
                        occ.key
                    ))
                })?
            }
        };
        let obs = g.observe(occ);
        Ok((g, obs))
    }

    pub(super) fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Locks an existing group, applies `change`, saves it.
    async fn update(
        &self,
        key: &GroupKey,
        change: impl FnOnce(&mut FailureGroup),
    ) -> Result<FailureGroup> {
        let mut tx = self.pool.begin().await.map_err(db_error)?;
        let mut g = Self::lock(&mut tx, key)
            .await?
            .ok_or_else(|| Error::NotFound(format!("failure group {key}")))?;
        change(&mut g);
        Self::save(&mut tx, &g).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(g)
    }
}

#[async_trait::async_trait]
impl GroupStore for PgGroupStore {
    async fn record(&self, occ: &Occurrence) -> Result<(FailureGroup, Observation)> {
        let mut tx = self.pool.begin().await.map_err(db_error)?;
        let (g, obs) = Self::observe_locked(&mut tx, occ).await?;
        if obs != Observation::New {
            Self::save(&mut tx, &g).await?;
        }
        tx.commit().await.map_err(db_error)?;
        Ok((g, obs))
    }

    async fn get(&self, key: &GroupKey) -> Result<Option<FailureGroup>> {
        let row = sqlx::query(concat!(
            "SELECT ",
            group_columns!(),
            " FROM failure_groups WHERE group_key = $1"
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
        // One row past the page proves there is a next one.
        let rows = sqlx::query(concat!(
            "SELECT ",
            group_columns!(),
            " FROM failure_groups WHERE ($1::TEXT IS NULL OR $1 = ANY(repositories)) \
             AND ($2::TEXT IS NULL OR status = $2) AND ($3::TEXT IS NULL OR language = $3) \
             AND ($4::BIGINT IS NULL OR last_seen >= $4) \
             AND ($5::BIGINT IS NULL OR last_seen < $5 \
                  OR (last_seen = $5 AND group_key COLLATE \"C\" > $6 COLLATE \"C\")) \
             ORDER BY last_seen DESC, group_key COLLATE \"C\" LIMIT $7"
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

/// "This error signature → its past failures": lookups by the signatures a
/// group key is made of (`stack:<stack sig>[:…]`, `error:<error sig>[@…]`).
impl PgGroupStore {
    /// Groups whose key starts with `stack:<stack_signature>` or
    /// `error:<error_signature>` (either may be empty, not both), most
    /// recently seen first. Signatures are hex (`tracelab_evidence`'s 16
    /// characters; a prefix of 4 or more matches too), so nothing in them
    /// can act as a LIKE pattern.
    pub async fn find_by_signature(
        &self,
        error_signature: &str,
        stack_signature: &str,
        limit: usize,
    ) -> Result<Vec<FailureGroup>> {
        let check = |what: &str, s: &str| -> Result<Option<String>> {
            if s.is_empty() {
                return Ok(None);
            }
            if s.len() < 4 || s.len() > 64 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(Error::InvalidArgument(format!(
                    "{what} {s:?} is not a signature (4 to 64 hex characters)"
                )));
            }
            Ok(Some(s.to_ascii_lowercase()))
        };
        let error = check("error signature", error_signature)?;
        let stack = check("stack signature", stack_signature)?;
        if error.is_none() && stack.is_none() {
            return Err(Error::InvalidArgument(
                "give an error signature, a stack signature or both".into(),
            ));
        }
        // A group is keyed by one signature but its evidence carries both, so
        // an error signature also finds the stack-keyed groups it occurred in.
        let rows = sqlx::query(concat!(
            "SELECT ",
            group_columns!(),
            " FROM failure_groups WHERE ($1::TEXT IS NOT NULL AND (group_key LIKE 'stack:' || $1 || '%' \
             OR group_key IN (SELECT group_key FROM evidence WHERE stack_signature LIKE $1 || '%'))) \
             OR ($2::TEXT IS NOT NULL AND (group_key LIKE 'error:' || $2 || '%' \
             OR group_key IN (SELECT group_key FROM evidence WHERE error_signature LIKE $2 || '%'))) \
             ORDER BY last_seen DESC, group_key COLLATE \"C\" LIMIT $3"
        ))
        .bind(stack)
        .bind(error)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        rows.iter().map(from_row).collect()
    }
}
