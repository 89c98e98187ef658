//! The fleet's store on PostgreSQL: the same tables as the embedded store
//! (`migrations/postgres`, run on connect), proper types (TIMESTAMPTZ, JSONB),
//! and errors mapped so that a restarting server reads as Unavailable.
//! TIMESTAMPTZ keeps microseconds: transition times read back truncated from
//! nanoseconds (the report JSON keeps its own times exactly).

use crate::backend::{Backend, Shared};
use crate::pg_error::db_error;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgPool, Postgres, Transaction};
use std::str::FromStr;
use std::time::Duration;
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::ports::InvestigationStore;
use tracelab_domain::report::{InvestigationSummary, Report};
use tracelab_domain::state::{InvestigationState, Transition};
use tracelab_domain::{Error, Result};

/// The fleet store: a pool of PostgreSQL connections via sqlx.
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
    /// Who `InvestigationStore::create` records as the starter (`local`
    /// unless [`PgStore::acting_as`]); the API's `create_requested` names
    /// its caller itself.
    actor: String,
}

/// Pool settings for services and tests.
#[derive(Debug, Clone)]
pub struct PgOptions {
    pub max_connections: u32,
    /// How long an operation waits for a connection (a down server shows up
    /// as Unavailable after this long).
    pub acquire_timeout: Duration,
    /// Put the tables in this schema (created if missing) instead of
    /// `public`; tests use one schema each so they can run in parallel.
    pub schema: Option<String>,
}

impl Default for PgOptions {
    fn default() -> Self {
        Self {
            max_connections: 8,
            acquire_timeout: Duration::from_secs(5),
            schema: None,
        }
    }
}

fn valid_schema(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "schema name {name:?}: use [a-z_][a-z0-9_]*"
        )))
    }
}

impl PgStore {
    /// Connects to `url` (`postgres://user@host:port/db`), then migrates.
    /// The connection is plain TCP: TLS to PostgreSQL is not enabled yet.
    pub async fn connect(url: &str, options: PgOptions) -> Result<Self> {
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(Error::invalid(
                "PostgreSQL URL must start with postgres:// or postgresql://",
            ));
        }
        let mut connect = PgConnectOptions::from_str(url)
            .map_err(|e| Error::invalid(format!("bad PostgreSQL URL: {e}")))?;
        if let Some(schema) = &options.schema {
            valid_schema(schema)?;
            let mut conn = connect
                .connect()
                .await
                .map_err(|e| Error::unavailable(format!("cannot connect to PostgreSQL: {e}")))?;
            // Audited: `schema` passed valid_schema ([a-z_][a-z0-9_]*).
            let created = sqlx::query(sqlx::AssertSqlSafe(format!(
                "CREATE SCHEMA IF NOT EXISTS {schema}"
            )))
            .execute(&mut conn)
            .await;
            match created {
                Ok(_) => {}
                // Several services starting at once race on IF NOT EXISTS;
                // the loser sees a unique violation: the schema exists.
                Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {}
                Err(e) => return Err(db_error(e)),
            }
            conn.close().await.map_err(db_error)?;
            connect = connect.options([("search_path", schema.as_str())]);
        }
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            // A connection broken by a server restart is noticed and replaced
            // before it is handed out.
            .test_before_acquire(true)
            .connect_with(connect)
            .await
            .map_err(|e| Error::unavailable(format!("cannot connect to PostgreSQL: {e}")))?;
        sqlx::migrate!("../../migrations/postgres")
            .run(&pool)
            .await
            .map_err(|e| Error::internal(format!("store migration failed: {e}")))?;
        Ok(Self {
            pool,
            actor: "local".into(),
        })
    }

    /// The same store, recording `actor` as the starter of what `create` creates.
    pub fn acting_as(&self, actor: impl Into<String>) -> Self {
        Self {
            pool: self.pool.clone(),
            actor: actor.into(),
        }
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Readiness: the server answers a query.
    pub async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map(|_| ())
            .map_err(db_error)
    }

    /// Starts a transaction (for [`crate::record_once`] and the consumer's own writes).
    pub async fn begin(&self) -> Result<Transaction<'static, Postgres>> {
        self.pool.begin().await.map_err(db_error)
    }
}

#[async_trait::async_trait]
impl InvestigationStore for PgStore {
    async fn create(
        &self,
        id: &InvestigationId,
        repository: &str,
        test_command: &str,
    ) -> Result<()> {
        let mut tx = self.pool.begin().await.map_err(db_error)?;
        Shared::<Postgres>::create(&mut tx, id, repository, test_command, &self.actor).await?;
        tx.commit().await.map_err(db_error)
    }

    async fn transition(&self, id: &InvestigationId, t: &Transition) -> Result<()> {
        let mut tx = self.pool.begin().await.map_err(db_error)?;
        Shared::<Postgres>::move_state(&mut tx, id, t.from, t.to, t.at, t.reason.as_deref())
            .await?;
        tx.commit().await.map_err(db_error)
    }

    async fn save_report(&self, report: &Report) -> Result<()> {
        let mut tx = self.pool.begin().await.map_err(db_error)?;
        Shared::<Postgres>::save_report(&mut tx, report).await?;
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

/// PostgreSQL stores TIMESTAMPTZ and locks the rows a transaction changes.
impl Backend for Postgres {
    type Time = time::OffsetDateTime;
    const LOCK_ROW: &'static str = " FOR UPDATE";
    const REPORT_TEXT: &'static str = "report::text";
    const REPORT_COLUMN: &'static str = "report";
    type Document = serde_json::Value;
    fn document(value: serde_json::Value) -> serde_json::Value {
        value
    }
    fn read_document(stored: serde_json::Value) -> Result<serde_json::Value> {
        Ok(stored)
    }
    fn time(t: time::OffsetDateTime) -> time::OffsetDateTime {
        t
    }
    fn read_time(stored: time::OffsetDateTime) -> Result<time::OffsetDateTime> {
        Ok(stored)
    }
    fn rows_affected(result: &sqlx::postgres::PgQueryResult) -> u64 {
        result.rows_affected()
    }
    fn error(e: sqlx::Error) -> Error {
        db_error(e)
    }
}
