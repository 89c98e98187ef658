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
use crate::pg_error::db_error;
use crate::postgres::PgStore;
use crate::sqlite::{SqliteStore, db_error as sqlite_db_error};
use serde_json::Value;
use sqlx::{Encode, Executor, IntoArguments, Row, Type};
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

fn pg_row(r: &sqlx::postgres::PgRow) -> std::result::Result<Notification, sqlx::Error> {
    Ok(Notification {
        seq: r.try_get("seq")?,
        key: r.try_get("key")?,
        investigation_id: r.try_get("investigation_id")?,
        channel: r.try_get("channel")?,
        event: r.try_get("event")?,
        target: r.try_get("target")?,
        body: r.try_get("body")?,
        attempts: r.try_get::<i32, _>("attempts")?.max(0) as u32,
        delivered_at: r.try_get("delivered_at")?,
        given_up_at: r.try_get("given_up_at")?,
        last_error: r.try_get("last_error")?,
    })
}

fn sqlite_row(r: &sqlx::sqlite::SqliteRow) -> std::result::Result<Notification, sqlx::Error> {
    let time = |ms: Option<i64>| {
        ms.and_then(|ms| OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).ok())
    };
    let body: Option<String> = r.try_get("body")?;
    Ok(Notification {
        seq: r.try_get("seq")?,
        key: r.try_get("key")?,
        investigation_id: r.try_get("investigation_id")?,
        channel: r.try_get("channel")?,
        event: r.try_get("event")?,
        target: r.try_get("target")?,
        body: body
            .map(|b| serde_json::from_str(&b))
            .transpose()
            .map_err(|e| sqlx::Error::Decode(Box::new(e)))?,
        attempts: r.try_get::<i64, _>("attempts")?.max(0) as u32,
        delivered_at: time(r.try_get("delivered_at")?),
        given_up_at: time(r.try_get("given_up_at")?),
        last_error: r.try_get("last_error")?,
    })
}

macro_rules! columns {
    () => {
        "seq, key, investigation_id, channel, event, target, body, attempts, \
         delivered_at, given_up_at, last_error"
    };
}

fn interval(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn now_ms() -> i64 {
    i64::try_from(OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl PgStore {
    /// Stores it, due now, unless its key is stored already. `true` when new.
    pub async fn enqueue_notification(&self, n: &NewNotification) -> Result<bool> {
        let done = sqlx::query(
            "INSERT INTO notifications (key, investigation_id, channel, event, target, body) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (key) DO NOTHING",
        )
        .bind(&n.key)
        .bind(&n.investigation_id)
        .bind(&n.channel)
        .bind(&n.event)
        .bind(&n.target)
        .bind(&n.body)
        .execute(self.pool())
        .await
        .map_err(db_error)?;
        Ok(done.rows_affected() == 1)
    }

    /// Up to `limit` due notifications, oldest first, each pushed `lease`
    /// ahead so no other dispatcher takes it meanwhile (and it is due again
    /// if this one dies before settling it).
    pub async fn claim_notifications(
        &self,
        limit: i64,
        lease: Duration,
    ) -> Result<Vec<Notification>> {
        let rows = sqlx::query(concat!(
            "UPDATE notifications SET next_at = now() + make_interval(secs => $2) \
             WHERE seq IN (SELECT seq FROM notifications \
               WHERE delivered_at IS NULL AND given_up_at IS NULL AND next_at <= now() \
               ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED) \
             RETURNING ",
            columns!()
        ))
        .bind(limit)
        .bind(interval(lease))
        .fetch_all(self.pool())
        .await
        .map_err(db_error)?;
        let mut out: Vec<Notification> = rows
            .iter()
            .map(pg_row)
            .collect::<std::result::Result<_, _>>()
            .map_err(db_error)?;
        out.sort_by_key(|n| n.seq);
        Ok(out)
    }

    /// The body the dispatcher rendered for a row enqueued without one;
    /// a body stored already (another dispatcher's) is kept and returned.
    pub async fn notification_rendered(&self, seq: i64, body: &Value) -> Result<Value> {
        sqlx::query_scalar(
            "UPDATE notifications SET body = COALESCE(body, $2) WHERE seq = $1 RETURNING body",
        )
        .bind(seq)
        .bind(body)
        .fetch_one(self.pool())
        .await
        .map_err(db_error)
    }

    /// Delivered: never sent again.
    pub async fn notification_delivered(&self, seq: i64) -> Result<()> {
        sqlx::query(
            "UPDATE notifications SET attempts = attempts + 1, delivered_at = now(), \
             last_error = NULL WHERE seq = $1",
        )
        .bind(seq)
        .execute(self.pool())
        .await
        .map_err(db_error)?;
        Ok(())
    }

    /// Not delivered: due again after `retry_in`, or given up (`None`).
    pub async fn notification_failed(
        &self,
        seq: i64,
        error: &str,
        retry_in: Option<Duration>,
    ) -> Result<()> {
        let q = match retry_in {
            Some(wait) => sqlx::query(
                "UPDATE notifications SET attempts = attempts + 1, last_error = $2, \
                 next_at = now() + make_interval(secs => $3) WHERE seq = $1",
            )
            .bind(seq)
            .bind(error)
            .bind(interval(wait)),
            None => sqlx::query(
                "UPDATE notifications SET attempts = attempts + 1, last_error = $2, \
                 given_up_at = now() WHERE seq = $1",
            )
            .bind(seq)
            .bind(error),
        };
        q.execute(self.pool()).await.map_err(db_error)?;
        Ok(())
    }

    /// The investigation's notifications, oldest first (delivered, pending
    /// and given up).
    pub async fn notifications(&self, investigation_id: &str) -> Result<Vec<Notification>> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            columns!(),
            " FROM notifications WHERE investigation_id = $1 ORDER BY seq"
        ))
        .bind(investigation_id)
        .fetch_all(self.pool())
        .await
        .map_err(db_error)?;
        rows.iter()
            .map(pg_row)
            .collect::<std::result::Result<_, _>>()
            .map_err(db_error)
    }
}

/// The same operations on `tracelab serve`'s SQLite file (migration 0007).
/// SQLite serialises writers, so a claim is one `UPDATE … RETURNING`.
impl SqliteStore {
    /// Stores it, due now, unless its key is stored already. `true` when new.
    pub async fn enqueue_notification(&self, n: &NewNotification) -> Result<bool> {
        let body = n.body.as_ref().map(Value::to_string);
        let done = sqlx::query(
            "INSERT INTO notifications (key, investigation_id, channel, event, target, body) \
             VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING",
        )
        .bind(&n.key)
        .bind(&n.investigation_id)
        .bind(&n.channel)
        .bind(&n.event)
        .bind(&n.target)
        .bind(body)
        .execute(self.pool())
        .await
        .map_err(sqlite_db_error)?;
        Ok(done.rows_affected() == 1)
    }

    /// Up to `limit` due notifications, oldest first, each pushed `lease` ahead.
    pub async fn claim_notifications(
        &self,
        limit: i64,
        lease: Duration,
    ) -> Result<Vec<Notification>> {
        let now = now_ms();
        let rows = sqlx::query(concat!(
            "UPDATE notifications SET next_at = ?1 \
             WHERE seq IN (SELECT seq FROM notifications \
               WHERE delivered_at IS NULL AND given_up_at IS NULL AND next_at <= ?2 \
               ORDER BY seq LIMIT ?3) \
             RETURNING ",
            columns!()
        ))
        .bind(now.saturating_add(ms(lease)))
        .bind(now)
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .map_err(sqlite_db_error)?;
        let mut out: Vec<Notification> = rows
            .iter()
            .map(sqlite_row)
            .collect::<std::result::Result<_, _>>()
            .map_err(sqlite_db_error)?;
        out.sort_by_key(|n| n.seq);
        Ok(out)
    }

    /// See [`PgStore::notification_rendered`].
    pub async fn notification_rendered(&self, seq: i64, body: &Value) -> Result<Value> {
        let stored: String = sqlx::query_scalar(
            "UPDATE notifications SET body = COALESCE(body, ?2) WHERE seq = ?1 RETURNING body",
        )
        .bind(seq)
        .bind(body.to_string())
        .fetch_one(self.pool())
        .await
        .map_err(sqlite_db_error)?;
        serde_json::from_str(&stored)
            .map_err(|e| Error::internal(format!("notification {seq}: stored body: {e}")))
    }

    /// Delivered: never sent again.
    pub async fn notification_delivered(&self, seq: i64) -> Result<()> {
        sqlx::query(
            "UPDATE notifications SET attempts = attempts + 1, delivered_at = ?2, \
             last_error = NULL WHERE seq = ?1",
        )
        .bind(seq)
        .bind(now_ms())
        .execute(self.pool())
        .await
        .map_err(sqlite_db_error)?;
        Ok(())
    }

    /// Not delivered: due again after `retry_in`, or given up (`None`).
    pub async fn notification_failed(
        &self,
        seq: i64,
        error: &str,
        retry_in: Option<Duration>,
    ) -> Result<()> {
        let now = now_ms();
        let q = match retry_in {
            Some(wait) => sqlx::query(
                "UPDATE notifications SET attempts = attempts + 1, last_error = ?2, \
                 next_at = ?3 WHERE seq = ?1",
            )
            .bind(seq)
            .bind(error)
            .bind(now.saturating_add(ms(wait))),
            None => sqlx::query(
                "UPDATE notifications SET attempts = attempts + 1, last_error = ?2, \
                 given_up_at = ?3 WHERE seq = ?1",
            )
            .bind(seq)
            .bind(error)
            .bind(now),
        };
        q.execute(self.pool()).await.map_err(sqlite_db_error)?;
        Ok(())
    }

    /// The investigation's notifications, oldest first.
    pub async fn notifications(&self, investigation_id: &str) -> Result<Vec<Notification>> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            columns!(),
            " FROM notifications WHERE investigation_id = ? ORDER BY seq"
        ))
        .bind(investigation_id)
        .fetch_all(self.pool())
        .await
        .map_err(sqlite_db_error)?;
        rows.iter()
            .map(sqlite_row)
            .collect::<std::result::Result<_, _>>()
            .map_err(sqlite_db_error)
    }
}
