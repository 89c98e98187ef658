//! [`GroupStore`] on SQLite (`failure_groups`, migration 0002), the
//! embedded mode's store; the statements are shared with PostgreSQL
//! (`rows.rs`). SQLite has one writer at a time: each write runs in a
//! `BEGIN IMMEDIATE` transaction, which takes the write lock before reading
//! (a deferred transaction that reads and then writes can fail with
//! SQLITE_BUSY when another writer got in between). Lists and JSON
//! documents are stored as JSON text.
//!
//! With [`SqliteGroupStore::merging`], [`MergingGroupStore::record_similar`]
//! merges a new exact key into the most similar known group by the
//! PostgreSQL store's rule (`merges.rs`), recording the score and matched
//! frames in `group_merges` (migration 0004), in the same transaction.

use super::merges::{MergeRecord, MergingGroupStore, Undo, Unmerged};
use super::rows::{GroupBackend, GroupRows, json_text};
use crate::SqliteStore;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::{Sqlite, SqlitePool};
use std::path::Path;
use tracelab_evidence::similar::{SimilarityConfig, StackProfile};
use tracelab_evidence::{
    Error, FailureGroup, GroupKey, GroupPage, GroupQuery, GroupStore, Observation, Occurrence,
    Reason, Result,
};

type Rows = GroupRows<Sqlite>;

impl GroupBackend for Sqlite {
    type List = String;
    type Json = String;
    const BY_BYTES: &'static str = "";
    const SHARE_ROW: &'static str = "";
    const KEEPS_EVIDENCE: bool = false;

    fn list(_column: &str, items: Vec<String>) -> Result<String> {
        json_text(&items)
    }
    fn read_list(column: &str, stored: String) -> Result<Vec<String>> {
        serde_json::from_str(&stored)
            .map_err(|e| Error::Internal(format!("stored {column} is not a JSON list: {e}")))
    }
    fn json<T: Serialize + ?Sized>(value: &T) -> Result<String> {
        json_text(value)
    }
    fn read_json<T: DeserializeOwned>(stored: String) -> Result<T> {
        serde_json::from_str(&stored).map_err(super::merges::json_error)
    }
    fn list_holds(column: &str, param: &str) -> String {
        format!("EXISTS (SELECT 1 FROM json_each({column}) WHERE value = {param})")
    }
}

/// Failure groups in the embedded SQLite database.
#[derive(Debug, Clone)]
pub struct SqliteGroupStore {
    pool: SqlitePool,
    /// Similar-issue merging in `record_similar`; `None`: exact keys only.
    similarity: Option<SimilarityConfig>,
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
}

#[async_trait::async_trait]
impl GroupStore for SqliteGroupStore {
    async fn record(&self, occ: &Occurrence) -> Result<(FailureGroup, Observation)> {
        Rows::record(&self.pool, occ).await
    }

    async fn get(&self, key: &GroupKey) -> Result<Option<FailureGroup>> {
        Rows::get(&self.pool, key).await
    }

    async fn resolve(
        &self,
        key: &GroupKey,
        at: i64,
        commit: Option<String>,
    ) -> Result<FailureGroup> {
        Rows::update(&self.pool, key, |g| g.resolve(at, commit)).await
    }

    async fn mark_investigation(
        &self,
        key: &GroupKey,
        at: i64,
        reason: Reason,
    ) -> Result<FailureGroup> {
        Rows::update(&self.pool, key, |g| g.mark_investigation(at, reason)).await
    }

    async fn page(&self, q: &GroupQuery) -> Result<GroupPage> {
        Rows::page(&self.pool, q).await
    }
}

#[async_trait::async_trait]
impl MergingGroupStore for SqliteGroupStore {
    async fn record_similar(
        &self,
        occ: &Occurrence,
        profile: Option<&StackProfile>,
    ) -> Result<(FailureGroup, Observation, Option<MergeRecord>)> {
        Rows::record_similar(&self.pool, self.similarity.as_ref(), occ, profile).await
    }

    async fn merges(&self, group: &GroupKey) -> Result<Vec<MergeRecord>> {
        Rows::merges(&self.pool, group).await
    }

    async fn unmerge(&self, exact_key: &GroupKey, undo: &Undo) -> Result<Option<Unmerged>> {
        Rows::unmerge(&self.pool, exact_key, undo).await
    }
}
