//! What the PostgreSQL and SQLite group stores share, written once: a
//! [`FailureGroup`] read from and written to its row, counting a sighting
//! in its locked (or new) group, the listing, and similar-issue merging with
//! its undo. The statements are the same text for both (`$n` parameters,
//! which SQLite reads too, numbered in order of first use); what differs is
//! behind [`GroupBackend`]: how a list of names is stored (`TEXT[]`, or
//! JSON text), the byte-order collation, row locks, and whether evidence
//! rows exist to follow an undone merge. JSON documents (`JSONB`, or text)
//! are the store's [`Backend::Document`].

use super::columns::{Columns, group_columns, language_name, page_rows, status_name};
use super::merges::{MAX_CANDIDATES, MergeRecord, Undo, Unmerged, json_error, similar_group};
use crate::backend::Backend;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Pool, Row, Type};
use std::marker::PhantomData;
use tracelab_evidence::similar::{MatchedFrame, SimilarityConfig, StackProfile};
use tracelab_evidence::{
    Error, FailureGroup, GroupKey, GroupPage, GroupQuery, GroupState, Observation, Occurrence,
    Result,
};

/// How a group store's database differs from the other's; implemented for
/// `Postgres` in `postgres.rs` and for `Sqlite` in `sqlite.rs`.
pub(crate) trait GroupBackend: Backend {
    /// A list of names as a column holds it (`TEXT[]`, or a JSON array as text).
    type List: for<'q> Encode<'q, Self> + Type<Self> + for<'r> Decode<'r, Self> + Send + 'static;
    fn list(column: &str, items: Vec<String>) -> Result<Self::List>;
    fn read_list(column: &str, stored: Self::List) -> Result<Vec<String>>;
    /// SQL that is true when the list column `column` holds the text parameter `param`.
    fn list_holds(column: &str, param: &str) -> String;
    /// Appended to a text column so that it sorts and compares by bytes
    /// (` COLLATE "C"`; SQLite's TEXT already does).
    const BY_BYTES: &'static str;
    /// Appended to a `SELECT` of a row that others may read but not change
    /// before the commit (` FOR SHARE`; nothing where writers are serialised).
    const SHARE_ROW: &'static str;
    /// Whether the database keeps evidence rows (`evidence`, the fleet's
    /// store) that move with their sightings when a merge is undone.
    const KEEPS_EVIDENCE: bool;
}

/// A driver error as a group store error (the database's own mapping, kept as the source).
pub(crate) fn db_error<DB: Backend>(e: sqlx::Error) -> Error {
    super::domain_error(DB::error(e))
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

impl Route {
    /// The group the sighting goes to (`None`: its own) and the merge made now.
    pub(super) fn target(self) -> (Option<GroupKey>, Option<MergeRecord>) {
        match self {
            Route::Own => (None, None),
            Route::Merged(key) => (Some(key), None),
            Route::MergedNow(record) => (Some(record.group_key.clone()), Some(record)),
        }
    }
}

/// The shared statements for one backend, e.g. `GroupRows::<Sqlite>::get(&pool, key)`.
pub(crate) struct GroupRows<DB>(PhantomData<DB>);

impl<DB: GroupBackend> GroupRows<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'q> String: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Option<String>: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Option<i64>: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> i32: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> f64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Option<DB::Document>: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    &'static str: ColumnIndex<DB::Row>,
{
    fn column<T>(row: &DB::Row, column: &'static str) -> Result<T>
    where
        T: for<'r> Decode<'r, DB> + Type<DB>,
    {
        row.try_get(column)
            .map_err(|e| Error::Internal(format!("unreadable {column} in the group store: {e}")))
    }

    pub(crate) fn from_row(row: &DB::Row) -> Result<FailureGroup> {
        let list = |column: &'static str| DB::read_list(column, Self::column(row, column)?);
        Columns {
            key: Self::column(row, "group_key")?,
            title: Self::column(row, "title")?,
            kind: Self::column(row, "kind")?,
            language: Self::column(row, "language")?,
            first_seen: Self::column(row, "first_seen")?,
            last_seen: Self::column(row, "last_seen")?,
            count: Self::column(row, "count")?,
            commits: list("commits")?,
            branches: list("branches")?,
            test_ids: list("test_ids")?,
            status: status_name(&Self::column::<String>(row, "status")?)?,
            resolved_at: Self::column(row, "resolved_at")?,
            resolved_commit: Self::column(row, "resolved_commit")?,
            regressions: Self::column(row, "regressions")?,
            investigation: Self::column::<Option<DB::Document>>(row, "investigation")?
                .map(read_document::<DB, _>)
                .transpose()?,
            version: Self::column(row, "version")?,
            repositories: list("repositories")?,
        }
        .into_group()
    }

    /// The group of `key`; its row locked until the commit where the
    /// database locks rows.
    pub(crate) async fn lock(
        tx: &mut DB::Connection,
        key: &GroupKey,
    ) -> Result<Option<FailureGroup>> {
        let sql = format!(
            "SELECT {} FROM failure_groups WHERE group_key = $1{}",
            group_columns!(),
            DB::LOCK_ROW
        );
        let row = sqlx::query::<DB>(sqlx::AssertSqlSafe(sql))
            .bind(key.0.clone())
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_error::<DB>)?;
        row.as_ref().map(Self::from_row).transpose()
    }

    /// The group of `key`, read outside a transaction.
    pub(crate) async fn get(pool: &Pool<DB>, key: &GroupKey) -> Result<Option<FailureGroup>> {
        let row = sqlx::query::<DB>(concat!(
            "SELECT ",
            group_columns!(),
            " FROM failure_groups WHERE group_key = $1"
        ))
        .bind(key.0.clone())
        .fetch_optional(pool)
        .await
        .map_err(db_error::<DB>)?;
        row.as_ref().map(Self::from_row).transpose()
    }

    /// `sql` with the columns of `g` bound as `$1`..`$17`, in [`group_columns!`] order.
    fn with_columns(
        sql: &'static str,
        g: &FailureGroup,
    ) -> Result<sqlx::query::Query<'static, DB, DB::Arguments>> {
        let c = Columns::from_group(g)?;
        let investigation = c
            .investigation
            .as_ref()
            .map(document::<DB, _>)
            .transpose()?;
        Ok(sqlx::query::<DB>(sql)
            .bind(c.key)
            .bind(c.title)
            .bind(c.kind)
            .bind(c.language)
            .bind(c.first_seen)
            .bind(c.last_seen)
            .bind(c.count)
            .bind(DB::list("commits", c.commits)?)
            .bind(DB::list("branches", c.branches)?)
            .bind(DB::list("test_ids", c.test_ids)?)
            .bind(c.status.to_string())
            .bind(c.resolved_at)
            .bind(c.resolved_commit)
            .bind(c.regressions)
            .bind(investigation)
            .bind(c.version)
            .bind(DB::list("repositories", c.repositories)?))
    }

    /// Inserts `g`; false when a row with its key already exists.
    pub(crate) async fn insert(tx: &mut DB::Connection, g: &FailureGroup) -> Result<bool> {
        let done = Self::with_columns(
            concat!(
                "INSERT INTO failure_groups (",
                group_columns!(),
                ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) \
                 ON CONFLICT (group_key) DO NOTHING"
            ),
            g,
        )?
        .execute(&mut *tx)
        .await
        .map_err(db_error::<DB>)?;
        Ok(DB::rows_affected(&done) == 1)
    }

    /// Writes back every column of the model (the key's title, kind and
    /// language never change). An update, not a replace: the row keeps its
    /// profile and environment, which `group_merges` and the listing refer to.
    pub(crate) async fn save(tx: &mut DB::Connection, g: &FailureGroup) -> Result<()> {
        Self::with_columns(
            "UPDATE failure_groups SET title = $2, kind = $3, language = $4, first_seen = $5, \
             last_seen = $6, count = $7, commits = $8, branches = $9, test_ids = $10, \
             status = $11, resolved_at = $12, resolved_commit = $13, regressions = $14, \
             investigation = $15, version = $16, repositories = $17 WHERE group_key = $1",
            g,
        )?
        .execute(&mut *tx)
        .await
        .map_err(db_error::<DB>)?;
        Ok(())
    }

    /// Counts `occ` in its group inside `tx`, the group row locked until
    /// the commit. A new group is inserted (and needs no save); an existing
    /// one is observed and must be saved by the caller. Inserting with `ON
    /// CONFLICT DO NOTHING`: a concurrent creator wins, and this writer then
    /// locks the row it made.
    pub(crate) async fn observe_locked(
        tx: &mut DB::Connection,
        occ: &Occurrence,
    ) -> Result<(FailureGroup, Observation)> {
        let mut g = match Self::lock(tx, &occ.key).await? {
            Some(g) => g,
            None => {
                let g = FailureGroup::new(occ);
                if Self::insert(tx, &g).await? {
                    return Ok((g, Observation::New));
                }
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

    /// `GroupStore::record`: one sighting counted in one write transaction.
    pub(crate) async fn record(
        pool: &Pool<DB>,
        occ: &Occurrence,
    ) -> Result<(FailureGroup, Observation)> {
        let mut tx = pool
            .begin_with(DB::BEGIN_WRITE)
            .await
            .map_err(db_error::<DB>)?;
        let (g, obs) = Self::observe_locked(&mut tx, occ).await?;
        if obs != Observation::New {
            Self::save(&mut tx, &g).await?;
        }
        tx.commit().await.map_err(db_error::<DB>)?;
        Ok((g, obs))
    }

    /// Locks an existing group, applies `change`, saves it. NotFound for an unknown key.
    pub(crate) async fn update(
        pool: &Pool<DB>,
        key: &GroupKey,
        change: impl FnOnce(&mut FailureGroup) + Send,
    ) -> Result<FailureGroup> {
        let mut tx = pool
            .begin_with(DB::BEGIN_WRITE)
            .await
            .map_err(db_error::<DB>)?;
        let mut g = Self::lock(&mut tx, key)
            .await?
            .ok_or_else(|| Error::NotFound(format!("failure group {key}")))?;
        change(&mut g);
        Self::save(&mut tx, &g).await?;
        tx.commit().await.map_err(db_error::<DB>)?;
        Ok(g)
    }

    /// One page of the listing, most recently seen first, ties by key in
    /// byte order; one row past the page proves there is a next one.
    pub(crate) async fn page(pool: &Pool<DB>, q: &GroupQuery) -> Result<GroupPage> {
        let sql = format!(
            "SELECT {columns} FROM failure_groups \
             WHERE (CAST($1 AS TEXT) IS NULL OR {holds}) \
             AND (CAST($2 AS TEXT) IS NULL OR status = $2) \
             AND (CAST($3 AS TEXT) IS NULL OR language = $3) \
             AND (CAST($4 AS BIGINT) IS NULL OR last_seen >= $4) \
             AND (CAST($5 AS BIGINT) IS NULL OR last_seen < $5 \
                  OR (last_seen = $5 AND group_key{bytes} > $6{bytes})) \
             ORDER BY last_seen DESC, group_key{bytes} LIMIT $7",
            columns = group_columns!(),
            holds = DB::list_holds("repositories", "$1"),
            bytes = DB::BY_BYTES,
        );
        let rows = sqlx::query::<DB>(sqlx::AssertSqlSafe(sql))
            .bind(q.repository.clone())
            .bind(q.state.map(|s| GroupState::as_str(s).to_string()))
            .bind(q.language.map(language_name).transpose()?)
            .bind(q.since)
            .bind(q.after.as_ref().map(|c| c.last_seen))
            .bind(q.after.as_ref().map(|c| c.key.0.clone()))
            .bind(page_rows(q))
            .fetch_all(pool)
            .await
            .map_err(db_error::<DB>)?;
        Ok(q.page(rows.iter().map(Self::from_row).collect::<Result<_>>()?))
    }

    /// Decides where a sighting of `exact` is counted, inside the write
    /// transaction: the group of an earlier merge of the key (unless undone),
    /// else — for a key without a group, with merging configured and a
    /// profile — the most similar known group, the merge written now. The
    /// merge row is read [`GroupBackend::SHARE_ROW`]: an undo in flight
    /// (which holds it locked) finishes first, so no sighting follows a
    /// merge being undone.
    pub(crate) async fn route(
        tx: &mut DB::Connection,
        similarity: Option<&SimilarityConfig>,
        occ: &Occurrence,
        profile: Option<&StackProfile>,
        now: i64,
    ) -> Result<Route> {
        let sql = format!(
            "SELECT group_key, undone_at FROM group_merges WHERE exact_key = $1{}",
            DB::SHARE_ROW
        );
        let earlier = sqlx::query::<DB>(sqlx::AssertSqlSafe(sql))
            .bind(occ.key.0.clone())
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_error::<DB>)?;
        if let Some(row) = earlier {
            return Ok(match Self::column::<Option<i64>>(&row, "undone_at")? {
                None => Route::Merged(GroupKey(Self::column(&row, "group_key")?)),
                Some(_) => Route::Own,
            });
        }
        let (Some(cfg), Some(profile)) = (similarity, profile) else {
            return Ok(Route::Own);
        };
        let known = sqlx::query::<DB>("SELECT group_key FROM failure_groups WHERE group_key = $1")
            .bind(occ.key.0.clone())
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_error::<DB>)?;
        if known.is_some() {
            return Ok(Route::Own);
        }
        let sql = format!(
            "SELECT group_key, profile FROM failure_groups WHERE profile IS NOT NULL \
             AND language = $1 ORDER BY last_seen DESC, group_key{} LIMIT $2",
            DB::BY_BYTES
        );
        let rows = sqlx::query::<DB>(sqlx::AssertSqlSafe(sql))
            .bind(language_name(occ.language)?)
            .bind(MAX_CANDIDATES)
            .fetch_all(&mut *tx)
            .await
            .map_err(db_error::<DB>)?;
        let mut candidates = Vec::with_capacity(rows.len());
        for row in &rows {
            let p: StackProfile = read_document::<DB, _>(Self::column(row, "profile")?)?;
            candidates.push((GroupKey(Self::column(row, "group_key")?), p));
        }
        let Some(record) = similar_group(&occ.key, profile, &candidates, cfg, now) else {
            return Ok(Route::Own);
        };
        sqlx::query::<DB>(
            "INSERT INTO group_merges (exact_key, group_key, score, nearest, matched, merged_at, \
             profile) VALUES ($1, $2, $3, $2, $4, $5, $6) ON CONFLICT (exact_key) DO NOTHING",
        )
        .bind(record.exact_key.0.clone())
        .bind(record.group_key.0.clone())
        .bind(record.score)
        .bind(document::<DB, _>(&record.matched)?)
        .bind(now)
        .bind(document::<DB, _>(profile)?)
        .execute(&mut *tx)
        .await
        .map_err(db_error::<DB>)?;
        Ok(Route::MergedNow(record))
    }

    /// Keeps the stack profile of a group just created, for later comparisons.
    pub(crate) async fn keep_profile(
        tx: &mut DB::Connection,
        key: &GroupKey,
        profile: &StackProfile,
    ) -> Result<()> {
        sqlx::query::<DB>(
            "UPDATE failure_groups SET profile = $2 WHERE group_key = $1 AND profile IS NULL",
        )
        .bind(key.0.clone())
        .bind(document::<DB, _>(profile)?)
        .execute(&mut *tx)
        .await
        .map_err(db_error::<DB>)?;
        Ok(())
    }

    /// Keeps the sighting `occ` (its key the exact key) under `group`, the
    /// group it was counted in: what an undone merge moves back.
    pub(crate) async fn keep_sighting(
        tx: &mut DB::Connection,
        group: &GroupKey,
        occ: &Occurrence,
    ) -> Result<()> {
        sqlx::query::<DB>(
            "INSERT INTO group_sightings (group_key, exact_key, at, occurrence) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(group.0.clone())
        .bind(occ.key.0.clone())
        .bind(occ.at)
        .bind(document::<DB, _>(occ)?)
        .execute(&mut *tx)
        .await
        .map_err(db_error::<DB>)?;
        Ok(())
    }

    /// `MergingGroupStore::record_similar`: routes `occ`, counts it in the
    /// group it goes to, keeps a new group's profile and the sighting, in
    /// one write transaction.
    pub(crate) async fn record_similar(
        pool: &Pool<DB>,
        similarity: Option<&SimilarityConfig>,
        occ: &Occurrence,
        profile: Option<&StackProfile>,
    ) -> Result<(FailureGroup, Observation, Option<MergeRecord>)> {
        let mut tx = pool
            .begin_with(DB::BEGIN_WRITE)
            .await
            .map_err(db_error::<DB>)?;
        let route = Self::route(&mut tx, similarity, occ, profile, occ.at).await?;
        let (target, merged) = route.target();
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
        tx.commit().await.map_err(db_error::<DB>)?;
        Ok((group, obs, merged))
    }

    /// A `group_merges` row.
    fn merge_record(r: &DB::Row) -> Result<MergeRecord> {
        let moved: Option<i64> = Self::column(r, "moved")?;
        Ok(MergeRecord {
            exact_key: GroupKey(Self::column(r, "exact_key")?),
            group_key: GroupKey(Self::column(r, "group_key")?),
            score: Self::column(r, "score")?,
            matched: read_document::<DB, Vec<MatchedFrame>>(Self::column(r, "matched")?)?,
            merged_at: Self::column(r, "merged_at")?,
            undone_at: Self::column(r, "undone_at")?,
            undone_by: Self::column(r, "undone_by")?,
            undo_reason: Self::column(r, "undo_reason")?,
            moved: moved.and_then(|m| u64::try_from(m).ok()),
        })
    }

    /// The merges into `group`, oldest first, undone ones included.
    pub(crate) async fn merges(pool: &Pool<DB>, group: &GroupKey) -> Result<Vec<MergeRecord>> {
        let sql = format!(
            "SELECT exact_key, group_key, score, matched, merged_at, undone_at, undone_by, \
             undo_reason, moved FROM group_merges \
             WHERE group_key = $1 ORDER BY merged_at, exact_key{}",
            DB::BY_BYTES
        );
        let rows = sqlx::query::<DB>(sqlx::AssertSqlSafe(sql))
            .bind(group.0.clone())
            .fetch_all(pool)
            .await
            .map_err(db_error::<DB>)?;
        rows.iter().map(Self::merge_record).collect()
    }

    /// Undoes the merge of `exact_key` in one write transaction: the merge
    /// row and both groups locked, the sightings it counted (and their
    /// evidence rows) moved to the exact key's own group, the undo recorded.
    pub(crate) async fn unmerge(
        pool: &Pool<DB>,
        exact_key: &GroupKey,
        undo: &Undo,
    ) -> Result<Option<Unmerged>> {
        let mut tx = pool
            .begin_with(DB::BEGIN_WRITE)
            .await
            .map_err(db_error::<DB>)?;
        let sql = format!(
            "SELECT group_key, profile FROM group_merges \
             WHERE exact_key = $1 AND undone_at IS NULL{}",
            DB::LOCK_ROW
        );
        let Some(row) = sqlx::query::<DB>(sqlx::AssertSqlSafe(sql))
            .bind(exact_key.0.clone())
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_error::<DB>)?
        else {
            return Ok(None);
        };
        let group = GroupKey(Self::column(&row, "group_key")?);
        let profile: Option<StackProfile> = Self::column::<Option<DB::Document>>(&row, "profile")?
            .map(read_document::<DB, _>)
            .transpose()?;
        let mut from = Self::lock(&mut tx, &group).await?.ok_or_else(|| {
            Error::Internal(format!("merged group {group} of {exact_key} is missing"))
        })?;
        let own = Self::lock(&mut tx, exact_key).await?;
        let existed = own.is_some();
        let sightings = sqlx::query::<DB>(
            "SELECT exact_key, occurrence FROM group_sightings WHERE group_key = $1 \
             ORDER BY at, id",
        )
        .bind(group.0.clone())
        .fetch_all(&mut *tx)
        .await
        .map_err(db_error::<DB>)?;
        let (mut moved, mut kept) = (Vec::new(), Vec::new());
        for r in &sightings {
            let occ: Occurrence = read_document::<DB, _>(Self::column(r, "occurrence")?)?;
            if Self::column::<String>(r, "exact_key")? == exact_key.0 {
                moved.push(occ);
            } else {
                kept.push(occ);
            }
        }
        let own = from.give_back(&moved, &kept, own);
        Self::save(&mut tx, &from).await?;
        if let Some(g) = &own {
            if existed {
                Self::save(&mut tx, g).await?;
            } else if !Self::insert(&mut tx, g).await? {
                return Err(Error::Conflict(format!(
                    "group {} appeared while its merge was undone",
                    g.key
                )));
            }
            if let Some(p) = &profile {
                Self::keep_profile(&mut tx, &g.key, p).await?;
            }
        }
        let mut moves = vec![
            "UPDATE group_sightings SET group_key = $2 WHERE group_key = $1 AND exact_key = $2",
        ];
        if DB::KEEPS_EVIDENCE {
            moves.push(
                "UPDATE evidence SET group_key = $2, exact_key = NULL \
                 WHERE group_key = $1 AND exact_key = $2",
            );
        }
        for sql in moves {
            sqlx::query::<DB>(sql)
                .bind(group.0.clone())
                .bind(exact_key.0.clone())
                .execute(&mut *tx)
                .await
                .map_err(db_error::<DB>)?;
        }
        let n = i64::try_from(moved.len()).unwrap_or(i64::MAX);
        let done = sqlx::query::<DB>(
            "UPDATE group_merges SET undone_at = $2, undone_by = $3, undo_reason = $4, moved = $5 \
             WHERE exact_key = $1 RETURNING exact_key, group_key, score, matched, merged_at, \
             undone_at, undone_by, undo_reason, moved",
        )
        .bind(exact_key.0.clone())
        .bind(undo.at)
        .bind(undo.by.clone())
        .bind(undo.reason.clone())
        .bind(n)
        .fetch_one(&mut *tx)
        .await
        .map_err(db_error::<DB>)?;
        let merge = Self::merge_record(&done)?;
        tx.commit().await.map_err(db_error::<DB>)?;
        Ok(Some(Unmerged { merge, from, own }))
    }
}

/// A value as the database's JSON document.
fn document<DB: Backend, T: Serialize + ?Sized>(value: &T) -> Result<DB::Document> {
    serde_json::to_value(value)
        .map(DB::document)
        .map_err(json_error)
}

/// A stored JSON document as a value of its type.
fn read_document<DB: Backend, T: DeserializeOwned>(stored: DB::Document) -> Result<T> {
    let value = DB::read_document(stored).map_err(super::domain_error)?;
    serde_json::from_value(value).map_err(json_error)
}

/// A list of names as JSON text (SQLite's list columns).
pub(crate) fn json_text(items: &[String]) -> Result<String> {
    serde_json::to_string(items).map_err(json_error)
}

/// `GroupStore` and `MergingGroupStore` for a store type with a `pool` of
/// database `$db` and an optional `similarity` configuration: every
/// operation is the shared statement set of [`GroupRows`].
macro_rules! group_store_operations {
    ($store:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl tracelab_evidence::GroupStore for $store {
            async fn record(
                &self,
                occ: &tracelab_evidence::Occurrence,
            ) -> tracelab_evidence::Result<(
                tracelab_evidence::FailureGroup,
                tracelab_evidence::Observation,
            )> {
                $crate::groups::rows::GroupRows::<$db>::record(&self.pool, occ).await
            }

            async fn get(
                &self,
                key: &tracelab_evidence::GroupKey,
            ) -> tracelab_evidence::Result<Option<tracelab_evidence::FailureGroup>> {
                $crate::groups::rows::GroupRows::<$db>::get(&self.pool, key).await
            }

            async fn resolve(
                &self,
                key: &tracelab_evidence::GroupKey,
                at: i64,
                commit: Option<String>,
            ) -> tracelab_evidence::Result<tracelab_evidence::FailureGroup> {
                $crate::groups::rows::GroupRows::<$db>::update(&self.pool, key, |g| {
                    g.resolve(at, commit)
                })
                .await
            }

            async fn mark_investigation(
                &self,
                key: &tracelab_evidence::GroupKey,
                at: i64,
                reason: tracelab_evidence::Reason,
            ) -> tracelab_evidence::Result<tracelab_evidence::FailureGroup> {
                $crate::groups::rows::GroupRows::<$db>::update(&self.pool, key, |g| {
                    g.mark_investigation(at, reason)
                })
                .await
            }

            async fn page(
                &self,
                q: &tracelab_evidence::GroupQuery,
            ) -> tracelab_evidence::Result<tracelab_evidence::GroupPage> {
                $crate::groups::rows::GroupRows::<$db>::page(&self.pool, q).await
            }
        }

        #[async_trait::async_trait]
        impl $crate::groups::MergingGroupStore for $store {
            async fn record_similar(
                &self,
                occ: &tracelab_evidence::Occurrence,
                profile: Option<&tracelab_evidence::similar::StackProfile>,
            ) -> tracelab_evidence::Result<(
                tracelab_evidence::FailureGroup,
                tracelab_evidence::Observation,
                Option<$crate::groups::MergeRecord>,
            )> {
                $crate::groups::rows::GroupRows::<$db>::record_similar(
                    &self.pool,
                    self.similarity.as_ref(),
                    occ,
                    profile,
                )
                .await
            }

            async fn merges(
                &self,
                group: &tracelab_evidence::GroupKey,
            ) -> tracelab_evidence::Result<Vec<$crate::groups::MergeRecord>> {
                $crate::groups::rows::GroupRows::<$db>::merges(&self.pool, group).await
            }

            async fn unmerge(
                &self,
                exact_key: &tracelab_evidence::GroupKey,
                undo: &$crate::groups::Undo,
            ) -> tracelab_evidence::Result<Option<$crate::groups::Unmerged>> {
                $crate::groups::rows::GroupRows::<$db>::unmerge(&self.pool, exact_key, undo).await
            }
        }
    };
}
pub(crate) use group_store_operations;
