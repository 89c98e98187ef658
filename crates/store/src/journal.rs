//! The probe journal in PostgreSQL ([`tracelab_domain::journal`]): the fleet's
//! investigator writes each judgement of the culprit search as it is made,
//! and a redelivered investigation loads them.

use crate::pg_error::db_error;
use crate::postgres::PgStore;
use sqlx::Row;
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::journal::{
    JournaledProbe, ProbeJournal, oracle_name, parse_oracle, parse_result, result_name,
};
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
                let (oracle, result) = (text("oracle")?, text("result")?);
                Ok(JournaledProbe {
                    revision: text("revision")?,
                    oracle: parse_oracle(&oracle).ok_or_else(|| {
                        Error::internal(format!("journaled probe with unknown oracle {oracle:?}"))
                    })?,
                    result: parse_result(&result).ok_or_else(|| {
                        Error::internal(format!("journaled probe with unknown result {result:?}"))
                    })?,
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
        .bind(oracle_name(probe.oracle))
        .bind(result_name(probe.result))
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
