//! The delivery log of outgoing webhooks, on both databases: one row per
//! attempt to send one event to one URL (the investigator's dispatcher
//! writes them, the investigation's page reads them).

use crate::pg_error::db_error as pg_db_error;
use crate::postgres::PgStore;
use crate::sqlite::{SqliteStore, db_error as sqlite_db_error, now, parse_time};
use sqlx::Row;
use tracelab_domain::Result;

pub use tracelab_domain::webhook::WebhookDelivery;

/// The most rows [`PgStore::webhook_deliveries`] returns, newest kept.
pub const MAX_LISTED: i64 = 200;

impl PgStore {
    pub async fn record_webhook_delivery(&self, d: &WebhookDelivery) -> Result<()> {
        sqlx::query(
            "INSERT INTO webhook_deliveries \
             (investigation_id, event, delivery_id, url, attempt, delivered, http_status, error) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(&d.investigation_id)
        .bind(&d.event)
        .bind(&d.delivery_id)
        .bind(&d.url)
        .bind(d.attempt as i32)
        .bind(d.delivered)
        .bind(d.http_status.map(i32::from))
        .bind(&d.error)
        .execute(self.pool())
        .await
        .map_err(pg_db_error)?;
        Ok(())
    }

    /// The investigation's delivery attempts, oldest first.
    pub async fn webhook_deliveries(&self, investigation_id: &str) -> Result<Vec<WebhookDelivery>> {
        let rows = sqlx::query(
            "SELECT * FROM (SELECT seq, investigation_id, event, delivery_id, url, attempt, delivered, \
             http_status, error, at FROM webhook_deliveries WHERE investigation_id = $1 \
             ORDER BY seq DESC LIMIT $2) newest ORDER BY seq",
        )
        .bind(investigation_id)
        .bind(MAX_LISTED)
        .fetch_all(self.pool())
        .await
        .map_err(pg_db_error)?;
        rows.iter()
            .map(|r| -> std::result::Result<WebhookDelivery, sqlx::Error> {
                Ok(WebhookDelivery {
                    investigation_id: r.try_get("investigation_id")?,
                    event: r.try_get("event")?,
                    delivery_id: r.try_get("delivery_id")?,
                    url: r.try_get("url")?,
                    attempt: r.try_get::<i32, _>("attempt")?.max(0) as u32,
                    delivered: r.try_get("delivered")?,
                    http_status: r
                        .try_get::<Option<i32>, _>("http_status")?
                        .and_then(|s| u16::try_from(s).ok()),
                    error: r.try_get("error")?,
                    at: Some(r.try_get("at")?),
                })
            })
            .collect::<std::result::Result<_, _>>()
            .map_err(pg_db_error)
    }
}

impl SqliteStore {
    pub async fn record_webhook_delivery(&self, d: &WebhookDelivery) -> Result<()> {
        sqlx::query(
            "INSERT INTO webhook_deliveries \
             (investigation_id, event, delivery_id, url, attempt, delivered, http_status, error, at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&d.investigation_id)
        .bind(&d.event)
        .bind(&d.delivery_id)
        .bind(&d.url)
        .bind(i64::from(d.attempt))
        .bind(d.delivered)
        .bind(d.http_status.map(i64::from))
        .bind(&d.error)
        .bind(now())
        .execute(self.pool())
        .await
        .map_err(sqlite_db_error)?;
        Ok(())
    }

    /// The investigation's delivery attempts, oldest first.
    pub async fn webhook_deliveries(&self, investigation_id: &str) -> Result<Vec<WebhookDelivery>> {
        let rows = sqlx::query(
            "SELECT * FROM (SELECT seq, investigation_id, event, delivery_id, url, attempt, delivered, \
             http_status, error, at FROM webhook_deliveries WHERE investigation_id = ? \
             ORDER BY seq DESC LIMIT ?) ORDER BY seq",
        )
        .bind(investigation_id)
        .bind(MAX_LISTED)
        .fetch_all(self.pool())
        .await
        .map_err(sqlite_db_error)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            let at: String = r.try_get("at").map_err(sqlite_db_error)?;
            out.push(WebhookDelivery {
                investigation_id: r.try_get("investigation_id").map_err(sqlite_db_error)?,
                event: r.try_get("event").map_err(sqlite_db_error)?,
                delivery_id: r.try_get("delivery_id").map_err(sqlite_db_error)?,
                url: r.try_get("url").map_err(sqlite_db_error)?,
                attempt: r
                    .try_get::<i64, _>("attempt")
                    .map_err(sqlite_db_error)?
                    .max(0) as u32,
                delivered: r.try_get("delivered").map_err(sqlite_db_error)?,
                http_status: r
                    .try_get::<Option<i64>, _>("http_status")
                    .map_err(sqlite_db_error)?
                    .and_then(|s| u16::try_from(s).ok()),
                error: r.try_get("error").map_err(sqlite_db_error)?,
                at: Some(parse_time(&at)?),
            });
        }
        Ok(out)
    }
}
