use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
use sqlx::{Row, SqlitePool};
use std::path::Path;
use std::str::FromStr;
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::ports::InvestigationStore;
use tracelab_domain::report::{InvestigationSummary, Report};
use tracelab_domain::state::{InvestigationState, Transition};
use tracelab_domain::verdict::Verdict;
use tracelab_domain::{Error, Result};

/// The embedded store: one SQLite file (or memory) via sqlx.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    /// Who `create` records as the starter (`local` unless [`SqliteStore::acting_as`]).
    actor: String,
}

pub(crate) fn db_error(e: sqlx::Error) -> Error {
    match e {
        sqlx::Error::RowNotFound => Error::not_found("not found"),
        sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) => {
            Error::unavailable(format!("store unavailable: {e}"))
        }
        other => Error::internal(format!("store error: {other}")),
    }
}

pub(crate) fn now() -> String {
    rfc3339(time::OffsetDateTime::now_utc())
}

pub(crate) fn rfc3339(t: time::OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .expect("formattable time")
}

pub(crate) fn parse_time(s: &str) -> Result<time::OffsetDateTime> {
    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .map_err(|e| Error::internal(format!("bad timestamp {s:?} in store: {e}")))
}

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

impl SqliteStore {
    /// Opens (creating if needed) the database file and migrates it.
    pub async fn open(path: &Path) -> Result<Self> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| {
                Error::unavailable(format!("cannot create {}: {e}", parent.display()))
            })?;
        }
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .foreign_keys(true)
            .busy_timeout(std::time::Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .map_err(|e| {
                Error::unavailable(format!("cannot open the store at {}: {e}", path.display()))
            })?;
        Self::migrated(pool).await
    }

    /// A private in-memory database (tests).
    pub async fn in_memory() -> Result<Self> {
        let options = SqliteConnectOptions::from_str("sqlite::memory:")
            .map_err(db_error)?
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options)
            .await
            .map_err(db_error)?;
        Self::migrated(pool).await
    }

    /// The same store, recording `actor` (the OS user on one machine) as
    /// the starter of the investigations it creates.
    pub fn acting_as(&self, actor: impl Into<String>) -> Self {
        Self {
            pool: self.pool.clone(),
            actor: actor.into(),
        }
    }

    /// The migrated pool, for stores of other tables in the same file
    /// (`SqliteGroupStore`).
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    async fn migrated(pool: SqlitePool) -> Result<Self> {
        sqlx::migrate!("../../migrations/sqlite")
            .run(&pool)
            .await
            .map_err(|e| Error::internal(format!("store migration failed: {e}")))?;
        Ok(Self {
            pool,
            actor: "local".into(),
        })
    }
}

#[async_trait::async_trait]
impl InvestigationStore for SqliteStore {
    async fn create(
        &self,
        id: &InvestigationId,
        repository: &str,
        test_command: &str,
    ) -> Result<()> {
        let at = now();
        let mut tx = self.pool.begin().await.map_err(db_error)?;
        let inserted = sqlx::query(
            "INSERT INTO investigations (id, repository, test_command, state, created_at, updated_at, started_by) VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&id.0)
        .bind(repository)
        .bind(test_command)
        .bind(InvestigationState::Created.as_str())
        .bind(&at)
        .bind(&at)
        .bind(&self.actor)
        .execute(&mut *tx)
        .await;
        match inserted {
            Ok(_) => {}
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                return Err(Error::conflict(format!(
                    "investigation {id} already exists"
                )));
            }
            Err(e) => return Err(db_error(e)),
        }
        crate::hand_off::audit_sqlite(
            &mut tx,
            id,
            tracelab_domain::audit::AuditAction::Started,
            &self.actor,
            "local",
            None,
        )
        .await?;
        tx.commit().await.map_err(db_error)
    }

    async fn transition(&self, id: &InvestigationId, t: &Transition) -> Result<()> {
        t.from.transition(t.to)?;
        let mut tx = self.pool.begin().await.map_err(db_error)?;
        let updated = sqlx::query(
            "UPDATE investigations SET state = ?, updated_at = ? WHERE id = ? AND state = ?",
        )
        .bind(t.to.as_str())
        .bind(now())
        .bind(&id.0)
        .bind(t.from.as_str())
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        if updated.rows_affected() == 0 {
            let current = sqlx::query("SELECT state FROM investigations WHERE id = ?")
                .bind(&id.0)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_error)?;
            return Err(match current {
                None => Error::not_found(format!("investigation {id} not found")),
                Some(row) => Error::conflict(format!(
                    "investigation {id} is {}, not {}; cannot move to {}",
                    row.get::<String, _>(0),
                    t.from,
                    t.to
                )),
            });
        }
        sqlx::query("INSERT INTO transitions (investigation_id, from_state, to_state, at, reason) VALUES (?, ?, ?, ?, ?)")
            .bind(&id.0)
            .bind(t.from.as_str())
            .bind(t.to.as_str())
            .bind(rfc3339(t.at))
            .bind(&t.reason)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        tx.commit().await.map_err(db_error)
    }

    async fn save_report(&self, report: &Report) -> Result<()> {
        let body = serde_json::to_string(report)
            .map_err(|e| Error::internal(format!("cannot encode report: {e}")))?;
        let mut tx = self.pool.begin().await.map_err(db_error)?;
        let updated = sqlx::query(
            "UPDATE investigations SET report_json = ?, verdict = ?, culprit = ?, state = ?, updated_at = ? WHERE id = ?",
        )
        .bind(&body)
        .bind(report.verdict.as_str())
        .bind(report.culprit.as_ref().map(|c| c.commit.commit.clone()))
        .bind(report.state.as_str())
        .bind(now())
        .bind(&report.id.0)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        if updated.rows_affected() == 0 {
            return Err(Error::not_found(format!(
                "investigation {} not found",
                report.id
            )));
        }
        sqlx::query("DELETE FROM hypotheses WHERE investigation_id = ?")
            .bind(&report.id.0)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        for h in &report.hypotheses {
            sqlx::query(
                "INSERT INTO hypotheses (id, investigation_id, number, agent, kind, status, summary, patch, branch) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(&h.id.0)
            .bind(&report.id.0)
            .bind(h.number as i64)
            .bind(json(&h.agent))
            .bind(json(&h.kind))
            .bind(h.status.as_str())
            .bind(&h.summary)
            .bind(&h.patch)
            .bind(&h.branch)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
            for e in &h.experiments {
                let counts = e.effective_counts();
                sqlx::query(
                    "INSERT INTO experiments (hypothesis_id, step, command, revision, exit_code, duration_ms, outcome, output, sandbox, note, runs, failures) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                )
                .bind(&h.id.0)
                .bind(e.step.as_str())
                .bind(&e.command)
                .bind(&e.revision)
                .bind(e.exit_code)
                .bind(e.duration_ms as i64)
                .bind(json(&e.outcome))
                .bind(&e.output)
                .bind(&e.sandbox)
                .bind(&e.note)
                .bind(counts.runs as i64)
                .bind(counts.failures as i64)
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
            }
        }
        tx.commit().await.map_err(db_error)
    }

    async fn get(&self, id: &InvestigationId) -> Result<Option<Report>> {
        let row = sqlx::query("SELECT report_json, state FROM investigations WHERE id = ?")
            .bind(&id.0)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_error)?;
        let Some(row) = row else { return Ok(None) };
        let Some(body) = row.get::<Option<String>, _>(0) else {
            return Ok(None);
        };
        let mut report: Report = serde_json::from_str(&body)
            .map_err(|e| Error::internal(format!("stored report {id} is unreadable: {e}")))?;
        // The state may have moved on since the report was written (approve/reject).
        report.state = InvestigationState::from_str(&row.get::<String, _>(1))?;
        report.transitions = self.transitions(id).await?;
        Ok(Some(report))
    }

    async fn state(&self, id: &InvestigationId) -> Result<Option<InvestigationState>> {
        let row = sqlx::query("SELECT state FROM investigations WHERE id = ?")
            .bind(&id.0)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_error)?;
        row.map(|r| InvestigationState::from_str(&r.get::<String, _>(0)))
            .transpose()
    }

    async fn list(&self, limit: u32) -> Result<Vec<InvestigationSummary>> {
        let rows = sqlx::query(
            "SELECT id, state, verdict, repository, test_command, culprit, created_at FROM investigations ORDER BY created_at DESC, id DESC LIMIT ?",
        )
        .bind(limit as i64)
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        rows.into_iter()
            .map(|r| {
                let verdict = r
                    .get::<Option<String>, _>(2)
                    .map(|v| serde_json::from_value::<Verdict>(serde_json::Value::String(v)))
                    .transpose()
                    .map_err(|e| Error::internal(format!("bad verdict in store: {e}")))?;
                Ok(InvestigationSummary {
                    id: InvestigationId(r.get(0)),
                    state: InvestigationState::from_str(&r.get::<String, _>(1))?,
                    verdict,
                    repository: r.get(3),
                    test_command: r.get(4),
                    culprit: r.get(5),
                    created_at: parse_time(&r.get::<String, _>(6))?,
                })
            })
            .collect()
    }

    async fn transitions(&self, id: &InvestigationId) -> Result<Vec<Transition>> {
        let rows = sqlx::query("SELECT from_state, to_state, at, reason FROM transitions WHERE investigation_id = ? ORDER BY seq")
            .bind(&id.0)
            .fetch_all(&self.pool)
            .await
            .map_err(db_error)?;
        rows.into_iter()
            .map(|r| {
                Ok(Transition {
                    from: InvestigationState::from_str(&r.get::<String, _>(0))?,
                    to: InvestigationState::from_str(&r.get::<String, _>(1))?,
                    at: parse_time(&r.get::<String, _>(2))?,
                    reason: r.get(3),
                })
            })
            .collect()
    }
}
