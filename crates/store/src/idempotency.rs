//! Exactly-once effects on an at-least-once bus: a consumer records the
//! message id in the same transaction as its results and acks only after the
//! commit. A redelivered message finds its id and does nothing.
//!
//! ```text
//! let mut tx = store.begin().await?;
//! if record_once(&mut tx, "verifier", &delivery.message.id).await? {
//!     write_results(&mut tx).await?;
//! }
//! tx.commit().await?;   // results and progress together
//! delivery.ack().await?; // only after the commit
//! ```

use crate::pg_error::db_error;
use sqlx::PgConnection;
use tracelab_domain::Result;

/// Marks `message_id` processed by `consumer` inside the caller's
/// transaction. `true` the first time (do the work), `false` when it was
/// already recorded (a redelivery: skip the work, commit, ack). A concurrent
/// duplicate waits for the first transaction and then sees `false`.
pub async fn record_once(tx: &mut PgConnection, consumer: &str, message_id: &str) -> Result<bool> {
    let inserted = sqlx::query(
        "INSERT INTO processed_messages (consumer, message_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
    )
    .bind(consumer)
    .bind(message_id)
    .execute(tx)
    .await
    .map_err(db_error)?;
    Ok(inserted.rows_affected() == 1)
}
