//! [`GroupStore`](tracelab_evidence::GroupStore) on SQLite (`failure_groups`, migration 0002), the
//! embedded mode's store; the statements are shared with PostgreSQL
//! (`rows.rs`). SQLite has one writer at a time: each write runs in a
//! `BEGIN IMMEDIATE` transaction, which takes the write lock before reading
//! (a deferred transaction that reads and then writes can fail with
//! SQLITE_BUSY when another writer got in between). Lists and JSON
//! documents are stored as JSON text.
//!
//! With [`SqliteGroupStore::merging`], [`MergingGroupStore::record_similar`](super::MergingGroupStore::record_similar)
//! merges a new exact key into the most similar known group by the
//! PostgreSQL store's rule (`merges.rs`), recording the score and matched
//! frames in `group_merges` (migration 0004), in the same transaction.

use super::rows::{GroupBackend, json_text};
use crate::SqliteStore;
use sqlx::{Sqlite, SqlitePool};
use std::path::Path;
use tracelab_evidence::similar::SimilarityConfig;
use tracelab_evidence::{Error, Result};

impl GroupBackend for Sqlite {
    type List = String;
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

super::rows::group_store_operations!(SqliteGroupStore, Sqlite);
