//! CI reports the fleet keeps for mining (#16, PostgreSQL `0018`): each
//! report ingest announced, by repository and branch in arrival order, and
//! what mining each completed failing → passing sequence gave.
//!
//! Both writes are idempotent — a report by its id, a mining by its
//! sequence — so the indexer's consumer can write, then ack, and a
//! redelivery changes nothing.

use crate::pg_error::db_error;
use crate::postgres::PgStore;
use sqlx::Row;
use tracelab_domain::{Error, Result};
use tracelab_experience::Failure;
use tracelab_experience::reconstruct::Note;

/// One kept report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CiReportRow {
    /// The event's report id (deterministic from the report body).
    pub id: String,
    pub repository: String,
    pub branch: String,
    pub commit: String,
    pub job: String,
    pub has_test_reports: bool,
    /// Frames as CI printed them.
    pub failures: Vec<Failure>,
}

/// What mining one sequence gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mining {
    pub repository: String,
    pub branch: String,
    pub failing: String,
    pub passing: String,
    pub workflow: String,
    pub records: usize,
    pub notes: Vec<Note>,
}

impl PgStore {
    /// Keeps `report`; `false` when its id was kept already.
    pub async fn record_ci_report(&self, report: &CiReportRow) -> Result<bool> {
        let failures = serde_json::to_value(&report.failures)
            .map_err(|e| Error::internal(format!("ci report {}: {e}", report.id)))?;
        let done = sqlx::query(
            "INSERT INTO ci_reports (id, repository, branch, commit_sha, job, has_test_reports, failures) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING",
        )
        .bind(&report.id)
        .bind(&report.repository)
        .bind(&report.branch)
        .bind(&report.commit)
        .bind(&report.job)
        .bind(report.has_test_reports)
        .bind(failures)
        .execute(self.pool())
        .await
        .map_err(db_error)?;
        Ok(done.rows_affected() == 1)
    }

    /// The reports of one branch in arrival order.
    pub async fn ci_reports_of_branch(
        &self,
        repository: &str,
        branch: &str,
    ) -> Result<Vec<CiReportRow>> {
        let rows = sqlx::query(
            "SELECT id, repository, branch, commit_sha, job, has_test_reports, failures \
             FROM ci_reports WHERE repository = $1 AND branch = $2 ORDER BY seq",
        )
        .bind(repository)
        .bind(branch)
        .fetch_all(self.pool())
        .await
        .map_err(db_error)?;
        rows.into_iter()
            .map(|row| {
                let id: String = row.get("id");
                let failures: serde_json::Value = row.get("failures");
                let failures = serde_json::from_value(failures).map_err(|e| {
                    Error::internal(format!("stored ci report {id} does not parse: {e}"))
                })?;
                Ok(CiReportRow {
                    id,
                    repository: row.get("repository"),
                    branch: row.get("branch"),
                    commit: row.get("commit_sha"),
                    job: row.get("job"),
                    has_test_reports: row.get("has_test_reports"),
                    failures,
                })
            })
            .collect()
    }

    /// Keeps what mining a sequence gave (replacing an earlier mining of
    /// the same sequence: its notes say what the last attempt saw).
    pub async fn record_mining(&self, mining: &Mining) -> Result<()> {
        let notes = serde_json::to_value(&mining.notes)
            .map_err(|e| Error::internal(format!("mining notes: {e}")))?;
        sqlx::query(
            "INSERT INTO ci_report_minings (repository, branch, failing, passing, workflow, records, notes) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (repository, branch, failing, passing) DO UPDATE \
             SET workflow = EXCLUDED.workflow, records = EXCLUDED.records, \
                 notes = EXCLUDED.notes, mined_at = now()",
        )
        .bind(&mining.repository)
        .bind(&mining.branch)
        .bind(&mining.failing)
        .bind(&mining.passing)
        .bind(&mining.workflow)
        .bind(i32::try_from(mining.records).unwrap_or(i32::MAX))
        .bind(notes)
        .execute(self.pool())
        .await
        .map_err(db_error)?;
        Ok(())
    }

    /// The minings of a repository's branch, oldest first.
    pub async fn minings(&self, repository: &str, branch: &str) -> Result<Vec<Mining>> {
        let rows = sqlx::query(
            "SELECT repository, branch, failing, passing, workflow, records, notes \
             FROM ci_report_minings WHERE repository = $1 AND branch = $2 ORDER BY mined_at",
        )
        .bind(repository)
        .bind(branch)
        .fetch_all(self.pool())
        .await
        .map_err(db_error)?;
        rows.into_iter()
            .map(|row| {
                let notes: serde_json::Value = row.get("notes");
                let records: i32 = row.get("records");
                Ok(Mining {
                    repository: row.get("repository"),
                    branch: row.get("branch"),
                    failing: row.get("failing"),
                    passing: row.get("passing"),
                    workflow: row.get("workflow"),
                    records: usize::try_from(records).unwrap_or(0),
                    notes: serde_json::from_value(notes).map_err(|e| {
                        Error::internal(format!("stored mining notes do not parse: {e}"))
                    })?,
                })
            })
            .collect()
    }
}
