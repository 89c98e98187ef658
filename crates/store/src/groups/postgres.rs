//! [`GroupStore`](tracelab_evidence::GroupStore) on PostgreSQL (`failure_groups`, migration 0005), the
//! fleet's store; the statements are shared with SQLite (`rows.rs`).
//!
//! Each write runs in one transaction: lock the group's row (`SELECT ...
//! FOR UPDATE`), or create it with `INSERT ... ON CONFLICT DO NOTHING` (a
//! concurrent creator wins and this writer then locks the row it made),
//! apply [`FailureGroup::observe`], write the row back. Writers of one group
//! queue on its row lock, so every sighting is counted exactly once and
//! exactly one of them sees [`Observation::New`]; groups with different
//! keys do not block each other.
//!
//! [`FailureGroup::observe`]: tracelab_evidence::FailureGroup::observe
//! [`Observation::New`]: tracelab_evidence::Observation::New

use super::columns::group_columns;
use super::rows::{GroupBackend, GroupRows};
use crate::{PgOptions, PgStore};
use sqlx::{PgPool, Postgres};
use tracelab_evidence::similar::SimilarityConfig;
use tracelab_evidence::{Error, FailureGroup, Result};

pub(super) type Rows = GroupRows<Postgres>;

impl GroupBackend for Postgres {
    type List = Vec<String>;
    const BY_BYTES: &'static str = " COLLATE \"C\"";
    const SHARE_ROW: &'static str = " FOR SHARE";
    const KEEPS_EVIDENCE: bool = true;

    fn list(_column: &str, items: Vec<String>) -> Result<Vec<String>> {
        Ok(items)
    }
    fn read_list(_column: &str, stored: Vec<String>) -> Result<Vec<String>> {
        Ok(stored)
    }
    fn list_holds(column: &str, param: &str) -> String {
        format!("{param} = ANY({column})")
    }
}

/// sqlx errors through the store's one PostgreSQL mapping, onto evidence's kinds.
pub(super) fn db_error(e: sqlx::Error) -> Error {
    super::rows::db_error::<Postgres>(e)
}

/// Failure groups in PostgreSQL, sharing the fleet store's pool and migrations.
#[derive(Debug, Clone)]
pub struct PgGroupStore {
    pool: PgPool,
    /// Similar-issue merging in `record_evidence` and `record_similar`;
    /// `None`: exact keys only.
    similarity: Option<SimilarityConfig>,
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

    /// Merges new exact keys into similar groups in `record_evidence` and
    /// `record_similar` (`merges.rs`), with `config`'s weights and threshold.
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

    pub(super) fn pool(&self) -> &PgPool {
        &self.pool
    }
}

super::rows::group_store_operations!(PgGroupStore, Postgres);

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
        rows.iter().map(Rows::from_row).collect()
    }
}
