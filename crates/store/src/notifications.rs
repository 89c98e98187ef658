//! Durable outgoing notifications (the fleet's signed webhooks and Jira
//! comments): stored before they are sent, claimed by a dispatcher with a
//! lease, settled as delivered, retried later or given up. A process that
//! dies mid-send leaves its row due again once the lease ends, so nothing
//! is lost by a restart; a receiver may then see one event twice and
//! deduplicates on its stable key (the webhook's delivery id).

use crate::pg_error::db_error;
use crate::postgres::PgStore;
use serde_json::Value;
use sqlx::Row;
use std::time::Duration;
use time::OffsetDateTime;
use tracelab_domain::Result;

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
    /// What is sent, as it is sent.
    pub body: Value,
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
    pub body: Value,
    /// Attempts made before this claim.
    pub attempts: u32,
    pub delivered_at: Option<OffsetDateTime>,
    pub given_up_at: Option<OffsetDateTime>,
    pub last_error: Option<String>,
}

fn row(r: &sqlx::postgres::PgRow) -> std::result::Result<Notification, sqlx::Error> {
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

macro_rules! columns {
    () => {
        "seq, key, investigation_id, channel, event, target, body, attempts, \
         delivered_at, given_up_at, last_error"
    };
}

fn interval(d: Duration) -> f64 {
    d.as_secs_f64()
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
            .map(row)
            .collect::<std::result::Result<_, _>>()
            .map_err(db_error)?;
        out.sort_by_key(|n| n.seq);
        Ok(out)
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
            .map(row)
            .collect::<std::result::Result<_, _>>()
            .map_err(db_error)
    }
}
