//! The probe journal in PostgreSQL ([`tracelab_domain::journal`]): the fleet's
//! investigator writes each judgement of the culprit search as it is made,
//! and a redelivered investigation loads them.

use crate::pg_error::db_error;
use crate::postgres::PgStore;
use sqlx::Row;
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::journal::{JournaledProbe, ProbeJournal};
use tracelab_domain::{Error, Result};

#[async_trait::async_trait]
impl ProbeJournal for PgStore {
    async fn load(&self, id: &InvestigationId) -> Result<Vec<JournaledProbe>> {
        let rows = sqlx::query(
            "SELECT revision, oracle, result, runs, passes FROM probe_journal \
             WHERE investigation_id = $1 ORDER BY at, revision",
        )
        .bind(&id.0)
        .fetch_all(self.pool())
        .await
        .map_err(db_error)?;
        rows.iter()
            .map(|row| {
                let text = |column: &str| row.try_get::<String, _>(column).map_err(db_error);
                let count = |column: &str| -> Result<u32> {
                    let n: i32 = row.try_get(column).map_err(db_error)?;
                    u32::try_from(n).map_err(|_| Error::internal(format!("negative {column}")))
                };
                Ok(JournaledProbe {
                    revision: text("revision")?,
                    oracle: from_stored("oracle", text("oracle")?)?,
                    result: from_stored("result", text("result")?)?,
                    runs: count("runs")?,
                    passes: count("passes")?,
                })
            })
            .collect()
    }

    async fn record(&self, id: &InvestigationId, probe: &JournaledProbe) -> Result<()> {
        let count = |n: u32| i32::try_from(n).unwrap_or(i32::MAX);
        sqlx::query(
            "INSERT INTO probe_journal (investigation_id, revision, oracle, result, runs, passes) \
             VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (investigation_id, revision, oracle) DO UPDATE \
             SET result = EXCLUDED.result, runs = EXCLUDED.runs, passes = EXCLUDED.passes, at = now()",
        )
        .bind(&id.0)
        .bind(&probe.revision)
        .bind(stored(probe.oracle)?)
        .bind(stored(probe.result)?)
        .bind(count(probe.runs))
        .bind(count(probe.passes))
        .execute(self.pool())
        .await
        .map_err(db_error)?;
        Ok(())
    }

    async fn classification(&self, id: &InvestigationId) -> Result<Option<serde_json::Value>> {
        sqlx::query_scalar(
            "SELECT classification FROM reproduction_journal WHERE investigation_id = $1",
        )
        .bind(&id.0)
        .fetch_optional(self.pool())
        .await
        .map_err(db_error)
    }

    async fn record_classification(
        &self,
        id: &InvestigationId,
        classification: &serde_json::Value,
    ) -> Result<()> {
        sqlx::query(
            "INSERT INTO reproduction_journal (investigation_id, classification) VALUES ($1, $2) \
             ON CONFLICT (investigation_id) DO UPDATE SET classification = EXCLUDED.classification, at = now()",
        )
        .bind(&id.0)
        .bind(classification)
        .execute(self.pool())
        .await
        .map_err(db_error)?;
        Ok(())
    }
}

/// An enum as stored text: its serde name (`tests_at_bad`, `untestable`).
fn stored<T: serde::Serialize>(value: T) -> Result<String> {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => Ok(name),
        other => Err(Error::internal(format!(
            "journal value without a name: {other:?}"
        ))),
    }
}

/// The inverse of [`stored`], naming the column when the text is unknown.
fn from_stored<T: serde::de::DeserializeOwned>(column: &str, text: String) -> Result<T> {
    serde_json::from_value(serde_json::Value::String(text.clone()))
        .map_err(|_| Error::internal(format!("journaled probe with unknown {column} {text:?}")))
}
