//! Durable outgoing notifications (signed webhooks and Jira comments), on
//! both databases: stored before they are sent, claimed by a dispatcher
//! with a lease, settled as delivered, retried later or given up. A
//! process that dies mid-send leaves its row due again once the lease
//! ends, so nothing is lost by a restart; a receiver may then see one event
//! twice and deduplicates on its stable key (the webhook's delivery id).
//!
//! A stage that changes the investigation (created, approved, rejected,
//! pull request opened) enqueues its notifications in its own transaction
//! ([`enqueue_in`], called by the stage's write), so a crash between the
//! two cannot lose them. Those rows have no body yet: the dispatcher
//! renders it from the investigation when it first claims the row and
//! stores it ([`PgStore::notification_rendered`]), so retries send the same
//! bytes.

use crate::backend::Backend;
use crate::postgres::PgStore;
use crate::sqlite::SqliteStore;
use serde_json::Value;
use sqlx::{
    ColumnIndex, Decode, Encode, Executor, IntoArguments, Pool, Postgres, Row, Sqlite, Type,
};
use std::marker::PhantomData;
use std::time::Duration;
use time::OffsetDateTime;
use tracelab_domain::{Error, Result};

/// What a stage asks to send.
#[derive(Debug, Clone, PartialEq)]
pub struct NewNotification {
    /// Unique per investigation, event, channel and target: enqueueing the
    /// same key again adds nothing.
    pub key: String,
    pub investigation_id: String,
    /// `webhook` or `jira`.
    pub channel: String,
    pub event: String,
    /// The URL (webhook) or the issue key (Jira).
    pub target: String,
    /// What is sent, as it is sent; `None`: rendered by the dispatcher from
    /// the investigation when it first claims it.
    pub body: Option<Value>,
}

/// A stored notification.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    pub seq: i64,
    pub key: String,
    pub investigation_id: String,
    pub channel: String,
    pub event: String,
    pub target: String,
    /// `None` until rendered.
    pub body: Option<Value>,
    /// Attempts made before this claim.
    pub attempts: u32,
    pub delivered_at: Option<OffsetDateTime>,
    pub given_up_at: Option<OffsetDateTime>,
    pub last_error: Option<String>,
}

/// How the notifications table differs between the databases. The
/// statements are the same text; times come from the database's own clock
/// in both (one clock for every dispatcher of the fleet).
pub(crate) trait NotificationBackend: Backend {
    /// A time as the table holds it: TIMESTAMPTZ, or Unix milliseconds in SQLite.
    type Instant: for<'r> Decode<'r, Self> + Type<Self> + Send + 'static;
    fn read_instant(stored: Self::Instant) -> Result<OffsetDateTime>;
    /// SQL for the database clock's now, in the table's time type.
    const NOW: &'static str;
    /// SQL for now plus the seconds (a float) in parameter `param`.
    fn later(param: &str) -> String;
    /// Appended to the claim's inner `SELECT`: ` FOR UPDATE SKIP LOCKED`,
    /// so concurrent dispatchers take different rows; nothing where the
    /// database serialises writers.
    const SKIP_LOCKED: &'static str;
}

impl NotificationBackend for Postgres {
    type Instant = OffsetDateTime;
    const NOW: &'static str = "now()";
    const SKIP_LOCKED: &'static str = " FOR UPDATE SKIP LOCKED";
    fn read_instant(stored: OffsetDateTime) -> Result<OffsetDateTime> {
        Ok(stored)
    }
    fn later(param: &str) -> String {
        format!("now() + make_interval(secs => {param})")
    }
}

/// Unix milliseconds by SQLite's clock, as migration 0007's defaults.
const SQLITE_NOW_MS: &str = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";

impl NotificationBackend for Sqlite {
    type Instant = i64;
    const NOW: &'static str = SQLITE_NOW_MS;
    const SKIP_LOCKED: &'static str = "";
    fn read_instant(ms: i64) -> Result<OffsetDateTime> {
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
            .map_err(|e| Error::internal(format!("stored time {ms} ms: {e}")))
    }
    fn later(param: &str) -> String {
        format!("({SQLITE_NOW_MS} + CAST({param} * 1000 AS INTEGER))")
    }
}

/// Stores `notes` inside `tx`, each unless its key is stored already: the
/// stage's write and its notifications commit or roll back together. The
/// rows carry no body (rendered at dispatch). Returns how many were new.
pub(crate) async fn enqueue_in<DB: Backend>(
    tx: &mut DB::Connection,
    notes: &[NewNotification],
) -> Result<usize>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'q> String: Encode<'q, DB> + Type<DB>,
{
    let mut new = 0;
    for n in notes {
        if n.body.is_some() {
            return Err(Error::internal(
                "a stage's notification is rendered at dispatch: enqueue it without a body",
            ));
        }
        let done = sqlx::query::<DB>(
            "INSERT INTO notifications (key, investigation_id, channel, event, target) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (key) DO NOTHING",
        )
        .bind(n.key.clone())
        .bind(n.investigation_id.clone())
        .bind(n.channel.clone())
        .bind(n.event.clone())
        .bind(n.target.clone())
        .execute(&mut *tx)
        .await
        .map_err(DB::error)?;
        new += DB::rows_affected(&done) as usize;
    }
    Ok(new)
}

macro_rules! columns {
    () => {
        "seq, key, investigation_id, channel, event, target, body, attempts, \
         delivered_at, given_up_at, last_error"
    };
}

/// The notification statements, once for both databases.
pub(crate) struct Notifications<DB>(PhantomData<DB>);

impl<DB: NotificationBackend> Notifications<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'q> String: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Option<String>: Decode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Option<DB::Document>: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Option<DB::Instant>: Decode<'q, DB> + Type<DB>,
    for<'q> i32: Decode<'q, DB> + Type<DB>,
    for<'q> f64: Encode<'q, DB> + Type<DB>,
    &'static str: ColumnIndex<DB::Row>,
{
    fn get<T>(row: &DB::Row, column: &'static str) -> Result<T>
    where
        T: for<'r> Decode<'r, DB> + Type<DB>,
    {
        row.try_get(column).map_err(DB::error)
    }

    fn from_row(r: &DB::Row) -> Result<Notification> {
        let instant = |column| {
            Self::get::<Option<DB::Instant>>(r, column)?
                .map(DB::read_instant)
                .transpose()
        };
        Ok(Notification {
            seq: Self::get(r, "seq")?,
            key: Self::get(r, "key")?,
            investigation_id: Self::get(r, "investigation_id")?,
            channel: Self::get(r, "channel")?,
            event: Self::get(r, "event")?,
            target: Self::get(r, "target")?,
            body: Self::get::<Option<DB::Document>>(r, "body")?
                .map(DB::read_document)
                .transpose()?,
            attempts: Self::get::<i32>(r, "attempts")?.max(0) as u32,
            delivered_at: instant("delivered_at")?,
            given_up_at: instant("given_up_at")?,
            last_error: Self::get(r, "last_error")?,
        })
    }

    async fn enqueue(pool: &Pool<DB>, n: &NewNotification) -> Result<bool> {
        let done = sqlx::query::<DB>(
            "INSERT INTO notifications (key, investigation_id, channel, event, target, body) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (key) DO NOTHING",
        )
        .bind(n.key.clone())
        .bind(n.investigation_id.clone())
        .bind(n.channel.clone())
        .bind(n.event.clone())
        .bind(n.target.clone())
        .bind(n.body.as_ref().map(|b| DB::document(b.clone())))
        .execute(pool)
        .await
        .map_err(DB::error)?;
        Ok(DB::rows_affected(&done) == 1)
    }

    async fn claim(pool: &Pool<DB>, limit: i64, lease: Duration) -> Result<Vec<Notification>> {
        let sql = format!(
            "UPDATE notifications SET next_at = {lease_end} \
             WHERE seq IN (SELECT seq FROM notifications \
               WHERE delivered_at IS NULL AND given_up_at IS NULL AND next_at <= {now} \
               ORDER BY seq LIMIT $1{skip_locked}) \
             RETURNING {columns}",
            lease_end = DB::later("$2"),
            now = DB::NOW,
            skip_locked = DB::SKIP_LOCKED,
            columns = columns!(),
        );
        let rows = sqlx::query::<DB>(sqlx::AssertSqlSafe(sql))
            .bind(limit)
            .bind(lease.as_secs_f64())
            .fetch_all(pool)
            .await
            .map_err(DB::error)?;
        let mut out = rows
            .iter()
            .map(Self::from_row)
            .collect::<Result<Vec<_>>>()?;
        out.sort_by_key(|n| n.seq);
        Ok(out)
    }

    async fn rendered(pool: &Pool<DB>, seq: i64, body: &Value) -> Result<Value> {
        let row = sqlx::query::<DB>(
            "UPDATE notifications SET body = COALESCE(body, $2) WHERE seq = $1 RETURNING body",
        )
        .bind(seq)
        .bind(DB::document(body.clone()))
        .fetch_one(pool)
        .await
        .map_err(DB::error)?;
        DB::read_document(Self::get(&row, "body")?)
    }

    async fn delivered(pool: &Pool<DB>, seq: i64) -> Result<()> {
        let sql = format!(
            "UPDATE notifications SET attempts = attempts + 1, delivered_at = {}, \
             last_error = NULL WHERE seq = $1",
            DB::NOW
        );
        sqlx::query::<DB>(sqlx::AssertSqlSafe(sql))
            .bind(seq)
            .execute(pool)
            .await
            .map_err(DB::error)?;
        Ok(())
    }

    async fn failed(
        pool: &Pool<DB>,
        seq: i64,
        error: &str,
        retry_in: Option<Duration>,
    ) -> Result<()> {
        let sql = match retry_in {
            Some(_) => format!(
                "UPDATE notifications SET attempts = attempts + 1, last_error = $2, \
                 next_at = {} WHERE seq = $1",
                DB::later("$3")
            ),
            None => format!(
                "UPDATE notifications SET attempts = attempts + 1, last_error = $2, \
                 given_up_at = {} WHERE seq = $1",
                DB::NOW
            ),
        };
        let mut q = sqlx::query::<DB>(sqlx::AssertSqlSafe(sql))
            .bind(seq)
            .bind(error.to_string());
        if let Some(wait) = retry_in {
            q = q.bind(wait.as_secs_f64());
        }
        q.execute(pool).await.map_err(DB::error)?;
        Ok(())
    }

    async fn of_investigation(
        pool: &Pool<DB>,
        investigation_id: &str,
    ) -> Result<Vec<Notification>> {
        let rows = sqlx::query::<DB>(concat!(
            "SELECT ",
            columns!(),
            " FROM notifications WHERE investigation_id = $1 ORDER BY seq"
        ))
        .bind(investigation_id.to_string())
        .fetch_all(pool)
        .await
        .map_err(DB::error)?;
        rows.iter().map(Self::from_row).collect()
    }
}

/// The notification operations of a store (the fleet's PostgreSQL, or
/// `tracelab serve`'s SQLite file, migration 0007).
macro_rules! notification_operations {
    ($store:ty, $db:ty) => {
        impl $store {
            /// Stores it, due now, unless its key is stored already. `true` when new.
            pub async fn enqueue_notification(&self, n: &NewNotification) -> Result<bool> {
                Notifications::<$db>::enqueue(self.pool(), n).await
            }

            /// Up to `limit` due notifications, oldest first, each pushed `lease`
            /// ahead so no other dispatcher takes it meanwhile (and it is due again
            /// if this one dies before settling it).
            pub async fn claim_notifications(
                &self,
                limit: i64,
                lease: Duration,
            ) -> Result<Vec<Notification>> {
                Notifications::<$db>::claim(self.pool(), limit, lease).await
            }

            /// The body the dispatcher rendered for a row enqueued without one;
            /// a body stored already (another dispatcher's) is kept and returned.
            pub async fn notification_rendered(&self, seq: i64, body: &Value) -> Result<Value> {
                Notifications::<$db>::rendered(self.pool(), seq, body).await
            }

            /// Delivered: never sent again.
            pub async fn notification_delivered(&self, seq: i64) -> Result<()> {
                Notifications::<$db>::delivered(self.pool(), seq).await
            }

            /// Not delivered: due again after `retry_in`, or given up (`None`).
            pub async fn notification_failed(
                &self,
                seq: i64,
                error: &str,
                retry_in: Option<Duration>,
            ) -> Result<()> {
                Notifications::<$db>::failed(self.pool(), seq, error, retry_in).await
            }

            /// The investigation's notifications, oldest first (delivered, pending
            /// and given up).
            pub async fn notifications(&self, investigation_id: &str) -> Result<Vec<Notification>> {
                Notifications::<$db>::of_investigation(self.pool(), investigation_id).await
            }
        }
    };
}

notification_operations!(PgStore, Postgres);
notification_operations!(SqliteStore, Sqlite);
