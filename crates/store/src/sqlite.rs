use crate::backend::{Backend, Shared};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
use sqlx::{Sqlite, SqlitePool};
use std::path::Path;
use std::str::FromStr;
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::ports::InvestigationStore;
use tracelab_domain::report::{InvestigationSummary, Report};
use tracelab_domain::state::{InvestigationState, Transition};
use tracelab_domain::{Error, Result};

/// The embedded store: one SQLite file (or memory) via sqlx.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    /// Who `create` records as the starter (`local` unless [`SqliteStore::acting_as`]).
    actor: String,
}

/// A driver error as a domain error: a full pool, or a write lock held
/// past the busy timeout (SQLITE_BUSY and its extended codes), is a
/// Timeout; a closed pool or a file error is Unavailable; a unique
/// violation is a Conflict.
pub(crate) fn db_error(e: sqlx::Error) -> Error {
    let busy = |db: &dyn sqlx::error::DatabaseError| {
        db.code()
            .and_then(|c| c.parse::<i32>().ok())
            .is_some_and(|c| c & 0xff == 5)
    };
    match &e {
        sqlx::Error::RowNotFound => Error::not_found("not found"),
        sqlx::Error::PoolTimedOut => Error::timeout(format!("store busy: {e}")),
        sqlx::Error::Database(db) if busy(db.as_ref()) => {
            Error::timeout(format!("store busy: {e}"))
        }
        sqlx::Error::Database(db) if db.is_unique_violation() => {
            Error::conflict(format!("already exists: {e}"))
        }
        sqlx::Error::Io(_) | sqlx::Error::PoolClosed => {
            Error::unavailable(format!("store unavailable: {e}"))
        }
        _ => Error::internal(format!("store error: {e}")),
    }
}

pub(crate) fn now() -> String {
    rfc3339(time::OffsetDateTime::now_utc())
}

pub(crate) fn rfc3339(t: time::OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .expect("formattable time")
}

pub(crate) fn parse_time(s: &str) -> Result<time::OffsetDateTime> {
    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .map_err(|e| Error::internal(format!("bad timestamp {s:?} in store: {e}")))
}

impl SqliteStore {
    /// Opens (creating if needed) the database file and migrates it.
    pub async fn open(path: &Path) -> Result<Self> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| {
                Error::unavailable(format!("cannot create {}: {e}", parent.display()))
            })?;
        }
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .foreign_keys(true)
            .busy_timeout(std::time::Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .map_err(|e| {
                Error::unavailable(format!("cannot open the store at {}: {e}", path.display()))
            })?;
        Self::migrated(pool).await
    }

    /// A private in-memory database (tests).
    pub async fn in_memory() -> Result<Self> {
        let options = SqliteConnectOptions::from_str("sqlite::memory:")
            .map_err(db_error)?
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options)
            .await
            .map_err(db_error)?;
        Self::migrated(pool).await
    }

    /// The same store, recording `actor` (the OS user on one machine) as
    /// the starter of the investigations it creates.
    pub fn acting_as(&self, actor: impl Into<String>) -> Self {
        Self {
            pool: self.pool.clone(),
            actor: actor.into(),
        }
    }

    /// The migrated pool, for stores of other tables in the same file
    /// (`SqliteGroupStore`).
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    async fn migrated(pool: SqlitePool) -> Result<Self> {
        sqlx::migrate!("../../migrations/sqlite")
            .run(&pool)
            .await
            .map_err(|e| Error::internal(format!("store migration failed: {e}")))?;
        Ok(Self {
            pool,
            actor: "local".into(),
        })
    }
}

#[async_trait::async_trait]
impl InvestigationStore for SqliteStore {
    async fn create(
        &self,
        id: &InvestigationId,
        repository: &str,
        test_command: &str,
    ) -> Result<()> {
        let mut tx = self.pool.begin().await.map_err(db_error)?;
        Shared::<Sqlite>::create(&mut tx, id, repository, test_command, &self.actor).await?;
        tx.commit().await.map_err(db_error)
    }

    async fn transition(&self, id: &InvestigationId, t: &Transition) -> Result<()> {
        let mut tx = self.pool.begin().await.map_err(db_error)?;
        Shared::<Sqlite>::move_state(&mut tx, id, t.from, t.to, t.at, t.reason.as_deref()).await?;
        tx.commit().await.map_err(db_error)
    }

    async fn save_report(&self, report: &Report) -> Result<()> {
        let mut tx = self
            .pool
            .begin_with(Sqlite::BEGIN_WRITE)
            .await
            .map_err(db_error)?;
        Shared::<Sqlite>::save_report(&mut tx, report).await?;
        tx.commit().await.map_err(db_error)
    }

    async fn get(&self, id: &InvestigationId) -> Result<Option<Report>> {
        Shared::report(&self.pool, id).await
    }

    async fn state(&self, id: &InvestigationId) -> Result<Option<InvestigationState>> {
        Shared::state_of(&self.pool, id).await
    }

    async fn list(&self, limit: u32) -> Result<Vec<InvestigationSummary>> {
        Shared::summaries(&self.pool, limit).await
    }

    async fn transitions(&self, id: &InvestigationId) -> Result<Vec<Transition>> {
        Shared::transitions(&self.pool, id).await
    }
}

/// SQLite keeps times as RFC 3339 text and has no row locks.
impl Backend for Sqlite {
    type Time = String;
    const LOCK_ROW: &'static str = "";
    const BEGIN_WRITE: &'static str = "BEGIN IMMEDIATE";
    const REPORT_TEXT: &'static str = "report_json";
    const REPORT_COLUMN: &'static str = "report_json";
    type Document = String;
    fn document(value: serde_json::Value) -> String {
        value.to_string()
    }
    fn read_document(stored: String) -> Result<serde_json::Value> {
        serde_json::from_str(&stored)
            .map_err(|e| Error::internal(format!("a stored JSON document is unreadable: {e}")))
    }
    fn time(t: time::OffsetDateTime) -> String {
        rfc3339(t)
    }
    fn read_time(stored: String) -> Result<time::OffsetDateTime> {
        parse_time(&stored)
    }
    fn rows_affected(result: &sqlx::sqlite::SqliteQueryResult) -> u64 {
        result.rows_affected()
    }
    fn error(e: sqlx::Error) -> Error {
        db_error(e)
    }
}
