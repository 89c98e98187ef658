//! The transactional outbox. A hand-off between services is a state change
//! in the store followed by an event on the bus; a crash between the two
//! would leave the state with no way forward (an investigation CREATED that
//! no investigator ever hears of, a decision no follower is told about).
//! So the event is written here in the same transaction as the change; the
//! writer publishes it right after the commit and deletes the row once the
//! bus acknowledged it, and a relay ([`PgStore::outbox_due`]) publishes rows
//! older than a grace period, which only a crash or an unreachable bus
//! leaves behind. Delivery is at least once; the bus drops a re-publish of
//! the same message id inside its duplicate window and every consumer is
//! idempotent beyond it.

use crate::pg_error::db_error;
use crate::postgres::PgStore;
use sqlx::{PgConnection, Row};
use std::time::Duration;
use tracelab_domain::Result;

/// An event waiting to be published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxMessage {
    /// The bus message id (derived from what the event is about, so a
    /// re-publish is de-duplicated).
    pub id: String,
    pub subject: String,
    pub payload: Vec<u8>,
}

/// Adds `message` inside the caller's transaction; a row with the same id
/// already waiting is kept (the event is the same).
pub(crate) async fn enqueue(tx: &mut PgConnection, message: &OutboxMessage) -> Result<()> {
    sqlx::query(
        "INSERT INTO outbox (message_id, subject, payload) VALUES ($1, $2, $3) ON CONFLICT (message_id) DO NOTHING",
    )
    .bind(&message.id)
    .bind(&message.subject)
    .bind(&message.payload)
    .execute(tx)
    .await
    .map_err(db_error)?;
    Ok(())
}

impl PgStore {
    /// The bus acknowledged `message_id`: it no longer waits.
    pub async fn outbox_sent(&self, message_id: &str) -> Result<()> {
        sqlx::query("DELETE FROM outbox WHERE message_id = $1")
            .bind(message_id)
            .execute(self.pool())
            .await
            .map_err(db_error)?;
        Ok(())
    }

    /// Messages waiting longer than `grace`, oldest first: the writer did
    /// not get to publish them (it crashed, or the bus was unreachable).
    pub async fn outbox_due(&self, grace: Duration, limit: u32) -> Result<Vec<OutboxMessage>> {
        let grace_ms = i64::try_from(grace.as_millis()).unwrap_or(i64::MAX);
        let rows = sqlx::query(
            "SELECT message_id, subject, payload FROM outbox \
             WHERE created_at < now() - make_interval(secs => $1::double precision / 1000) \
             ORDER BY created_at LIMIT $2",
        )
        .bind(grace_ms)
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await
        .map_err(db_error)?;
        Ok(rows
            .into_iter()
            .map(|r| OutboxMessage {
                id: r.get(0),
                subject: r.get(1),
                payload: r.get(2),
            })
            .collect())
    }

    /// Messages still waiting, whatever their age.
    pub async fn outbox_len(&self) -> Result<i64> {
        sqlx::query_scalar("SELECT count(*) FROM outbox")
            .fetch_one(self.pool())
            .await
            .map_err(db_error)
    }
}
