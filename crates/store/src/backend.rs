//! What the SQLite and PostgreSQL investigation stores share, written once:
//! the compare-and-set of an investigation's state with its transition row,
//! the audit row, and the mapping of rows to the domain's types. The SQL is
//! the same text for both (`$n` parameters, which SQLite reads too); what
//! differs is behind [`Backend`]: how a time is stored (TIMESTAMPTZ, or
//! RFC 3339 text in SQLite) and how a driver error reads as a domain error.

use sqlx::{ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Row, Type};
use std::marker::PhantomData;
use std::str::FromStr;
use time::OffsetDateTime;
use tracelab_domain::audit::{AuditAction, AuditEntry};
use tracelab_domain::hypothesis::Hypothesis;
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::report::{InvestigationSummary, Report};
use tracelab_domain::state::{InvestigationState, Transition};
use tracelab_domain::verdict::Verdict;
use tracelab_domain::{Error, Result};

/// The differences between the two databases that the shared code needs;
/// each store's module implements it for its database.
pub(crate) trait Backend: Database {
    /// A time as a column holds it.
    type Time: for<'q> Encode<'q, Self> + Type<Self> + for<'r> Decode<'r, Self> + Send + 'static;
    fn time(t: OffsetDateTime) -> Self::Time;
    fn read_time(stored: Self::Time) -> Result<OffsetDateTime>;
    fn rows_affected(result: &Self::QueryResult) -> u64;
    /// Appended to a `SELECT` that reads a row the transaction will change:
    /// ` FOR UPDATE`, or nothing where the database serialises writers.
    const LOCK_ROW: &'static str;
    /// How a transaction that reads, then writes, begins. SQLite's
    /// `BEGIN IMMEDIATE` takes the write lock first: a deferred one that
    /// read a snapshot another writer (a dispatcher) has since changed
    /// cannot upgrade and fails at once, without waiting.
    const BEGIN_WRITE: &'static str = "BEGIN";
    /// The stored report as JSON text in a `SELECT` (PostgreSQL keeps it as
    /// JSONB in `report`, SQLite as text in `report_json`).
    const REPORT_TEXT: &'static str;
    /// The column the report is written to.
    const REPORT_COLUMN: &'static str;
    /// A JSON document as a column holds it (JSONB, or text in SQLite).
    type Document: for<'q> Encode<'q, Self> + Type<Self> + for<'r> Decode<'r, Self> + Send + 'static;
    fn document(value: serde_json::Value) -> Self::Document;
    fn read_document(stored: Self::Document) -> Result<serde_json::Value>;
    /// A driver error as a domain error (Unavailable for a server that is
    /// away, Conflict for a unique violation, …).
    fn error(e: sqlx::Error) -> Error;
}

/// The shared statements for one backend, e.g.
/// `Shared::<Sqlite>::move_state(&mut tx, …)`. The bounds say once which
/// Rust types the backend's driver must read and write.
pub(crate) struct Shared<DB>(PhantomData<DB>);

impl<DB: Backend> Shared<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'q> String: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Option<String>: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> Option<i64>: Decode<'q, DB> + Type<DB>,
    usize: ColumnIndex<DB::Row>,
{
    /// A new investigation in CREATED, started by `actor`, with its
    /// `started` audit row. Conflict when the id exists.
    pub(crate) async fn create(
        tx: &mut DB::Connection,
        id: &InvestigationId,
        repository: &str,
        test_command: &str,
        actor: &str,
    ) -> Result<()> {
        let inserted = sqlx::query::<DB>(
            "INSERT INTO investigations (id, repository, test_command, state, created_at, updated_at, started_by) VALUES ($1, $2, $3, $4, $5, $5, $6)",
        )
        .bind(id.0.clone())
        .bind(repository.to_string())
        .bind(test_command.to_string())
        .bind(InvestigationState::Created.as_str().to_string())
        .bind(DB::time(OffsetDateTime::now_utc()))
        .bind(actor.to_string())
        .execute(&mut *tx)
        .await;
        match inserted {
            Ok(_) => {}
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                return Err(Error::conflict(format!(
                    "investigation {id} already exists"
                )));
            }
            Err(e) => return Err(DB::error(e)),
        }
        Self::audit(tx, id, AuditAction::Started, actor, "local", None).await
    }

    /// Compare-and-set of the state plus the transition row (at `at`, with
    /// `reason`), inside `tx`. NotFound for an unknown id; Conflict, naming the
    /// current state, when the row is not in `from` any more.
    pub(crate) async fn move_state(
        tx: &mut DB::Connection,
        id: &InvestigationId,
        from: InvestigationState,
        to: InvestigationState,
        at: OffsetDateTime,
        reason: Option<&str>,
    ) -> Result<()> {
        from.transition(to)?;
        let updated = sqlx::query::<DB>(
            "UPDATE investigations SET state = $1, updated_at = $2 WHERE id = $3 AND state = $4",
        )
        .bind(to.as_str().to_string())
        .bind(DB::time(OffsetDateTime::now_utc()))
        .bind(id.0.clone())
        .bind(from.as_str().to_string())
        .execute(&mut *tx)
        .await
        .map_err(DB::error)?;
        if DB::rows_affected(&updated) == 0 {
            return Err(match Self::state_of(&mut *tx, id).await? {
                None => Error::not_found(format!("investigation {id} not found")),
                Some(current) => Error::conflict(format!(
                    "investigation {id} is {current}, not {from}; cannot move to {to}"
                )),
            });
        }
        sqlx::query::<DB>(
            "INSERT INTO transitions (investigation_id, from_state, to_state, at, reason) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(id.0.clone())
        .bind(from.as_str().to_string())
        .bind(to.as_str().to_string())
        .bind(DB::time(at))
        .bind(reason.map(str::to_string))
        .execute(&mut *tx)
        .await
        .map_err(DB::error)?;
        Ok(())
    }

    /// Appends one audit row inside `tx`.
    pub(crate) async fn audit(
        tx: &mut DB::Connection,
        id: &InvestigationId,
        action: AuditAction,
        actor: &str,
        role: &str,
        reason: Option<&str>,
    ) -> Result<()> {
        sqlx::query::<DB>(
            "INSERT INTO decisions (investigation_id, actor, role, action, reason, at) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(id.0.clone())
        .bind(actor.to_string())
        .bind(role.to_string())
        .bind(action.as_str().to_string())
        .bind(reason.map(str::to_string))
        .bind(DB::time(OffsetDateTime::now_utc()))
        .execute(&mut *tx)
        .await
        .map_err(DB::error)?;
        Ok(())
    }

    /// The investigation's audit log, oldest first.
    pub(crate) async fn audit_entries<'c>(
        executor: impl Executor<'c, Database = DB>,
        id: &InvestigationId,
    ) -> Result<Vec<AuditEntry>> {
        let rows = sqlx::query::<DB>(
            "SELECT action, actor, role, reason, at FROM decisions WHERE investigation_id = $1 ORDER BY seq",
        )
        .bind(id.0.clone())
        .fetch_all(executor)
        .await
        .map_err(DB::error)?;
        rows.iter()
            .map(|r| {
                Ok(AuditEntry {
                    action: AuditAction::parse(&Self::get::<String>(r, 0)?)?,
                    actor: Self::get(r, 1)?,
                    role: Self::get(r, 2)?,
                    reason: Self::get(r, 3)?,
                    at: DB::read_time(Self::get(r, 4)?)?,
                })
            })
            .collect()
    }

    /// The investigation's transitions, oldest first.
    pub(crate) async fn transitions<'c>(
        executor: impl Executor<'c, Database = DB>,
        id: &InvestigationId,
    ) -> Result<Vec<Transition>> {
        let rows = sqlx::query::<DB>(
            "SELECT from_state, to_state, at, reason FROM transitions WHERE investigation_id = $1 ORDER BY seq",
        )
        .bind(id.0.clone())
        .fetch_all(executor)
        .await
        .map_err(DB::error)?;
        rows.iter()
            .map(|r| {
                Ok(Transition {
                    from: state(&Self::get::<String>(r, 0)?)?,
                    to: state(&Self::get::<String>(r, 1)?)?,
                    at: DB::read_time(Self::get(r, 2)?)?,
                    reason: Self::get(r, 3)?,
                })
            })
            .collect()
    }

    /// The newest `limit` investigations, newest first.
    pub(crate) async fn summaries<'c>(
        executor: impl Executor<'c, Database = DB>,
        limit: u32,
    ) -> Result<Vec<InvestigationSummary>> {
        let rows = sqlx::query::<DB>(
            "SELECT id, state, verdict, repository, test_command, culprit, created_at FROM investigations ORDER BY created_at DESC, id DESC LIMIT $1",
        )
        .bind(i64::from(limit))
        .fetch_all(executor)
        .await
        .map_err(DB::error)?;
        rows.iter()
            .map(|r| {
                let verdict = Self::get::<Option<String>>(r, 2)?
                    .map(|v| serde_json::from_value::<Verdict>(serde_json::Value::String(v)))
                    .transpose()
                    .map_err(|e| Error::internal(format!("bad verdict in store: {e}")))?;
                Ok(InvestigationSummary {
                    id: InvestigationId(Self::get(r, 0)?),
                    state: state(&Self::get::<String>(r, 1)?)?,
                    verdict,
                    repository: Self::get(r, 3)?,
                    test_command: Self::get(r, 4)?,
                    culprit: Self::get(r, 5)?,
                    created_at: DB::read_time(Self::get(r, 6)?)?,
                })
            })
            .collect()
    }

    /// The stored report with the current state and the transitions;
    /// `None` for an unknown id or one without a report yet.
    pub(crate) async fn report<'c>(
        executor: impl Executor<'c, Database = DB> + Copy,
        id: &InvestigationId,
    ) -> Result<Option<Report>> {
        let sql = format!(
            "SELECT {}, state FROM investigations WHERE id = $1",
            DB::REPORT_TEXT
        );
        let row = sqlx::query::<DB>(sqlx::AssertSqlSafe(sql))
            .bind(id.0.clone())
            .fetch_optional(executor)
            .await
            .map_err(DB::error)?;
        let Some(row) = row else { return Ok(None) };
        let Some(body) = Self::get::<Option<String>>(&row, 0)? else {
            return Ok(None);
        };
        let mut report: Report = serde_json::from_str(&body)
            .map_err(|e| Error::internal(format!("stored report {id} is unreadable: {e}")))?;
        // The state may have moved on since the report was written (approve/reject).
        report.state = state(&Self::get::<String>(&row, 1)?)?;
        report.transitions = Self::transitions(executor, id).await?;
        Ok(Some(report))
    }

    /// The investigation's state; `None` for an unknown id.
    pub(crate) async fn state_of<'c>(
        executor: impl Executor<'c, Database = DB>,
        id: &InvestigationId,
    ) -> Result<Option<InvestigationState>> {
        let row = sqlx::query::<DB>("SELECT state FROM investigations WHERE id = $1")
            .bind(id.0.clone())
            .fetch_optional(executor)
            .await
            .map_err(DB::error)?;
        row.map(|r| state(&Self::get::<String>(&r, 0)?)).transpose()
    }

    /// Column `index` of `row`, a driver error (wrong type, missing column) as a domain error.
    fn get<T>(row: &DB::Row, index: usize) -> Result<T>
    where
        T: for<'r> Decode<'r, DB> + Type<DB>,
    {
        row.try_get(index).map_err(DB::error)
    }
}

/// The report's save, with the few more column types it writes.
impl<DB: Backend> Shared<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'q> String: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Option<String>: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> Option<i64>: Decode<'q, DB> + Type<DB>,
    usize: ColumnIndex<DB::Row>,
    for<'q> i32: Encode<'q, DB> + Type<DB>,
    for<'q> Option<i32>: Encode<'q, DB> + Type<DB>,
    for<'q> Option<DB::Document>: Encode<'q, DB> + Type<DB>,
{
    /// Writes `report` (the investigation's row, its hypotheses and their
    /// experiments) inside `tx`, replacing what an earlier save wrote, so
    /// saving the same report again is harmless. NotFound for an unknown id.
    pub(crate) async fn save_report(tx: &mut DB::Connection, report: &Report) -> Result<()> {
        let body = serde_json::to_value(report)
            .map_err(|e| Error::internal(format!("cannot encode report: {e}")))?;
        let sql = format!(
            "UPDATE investigations SET {} = $1, verdict = $2, culprit = $3, state = $4, updated_at = $5 WHERE id = $6",
            DB::REPORT_COLUMN
        );
        let updated = sqlx::query::<DB>(sqlx::AssertSqlSafe(sql))
            .bind(Some(DB::document(body)))
            .bind(report.verdict.as_str().to_string())
            .bind(report.culprit.as_ref().map(|c| c.commit.commit.clone()))
            .bind(report.state.as_str().to_string())
            .bind(DB::time(OffsetDateTime::now_utc()))
            .bind(report.id.0.clone())
            .execute(&mut *tx)
            .await
            .map_err(DB::error)?;
        if DB::rows_affected(&updated) == 0 {
            return Err(Error::not_found(format!(
                "investigation {} not found",
                report.id
            )));
        }
        sqlx::query::<DB>("DELETE FROM hypotheses WHERE investigation_id = $1")
            .bind(report.id.0.clone())
            .execute(&mut *tx)
            .await
            .map_err(DB::error)?;
        for h in &report.hypotheses {
            Self::insert_hypothesis(tx, &report.id, h).await?;
        }
        Ok(())
    }

    /// Writes one hypothesis row (with its full JSON) and its experiments.
    pub(crate) async fn insert_hypothesis(
        tx: &mut DB::Connection,
        investigation: &InvestigationId,
        h: &Hypothesis,
    ) -> Result<()> {
        let body = serde_json::to_value(h)
            .map_err(|e| Error::internal(format!("cannot encode hypothesis: {e}")))?;
        sqlx::query::<DB>(
            "INSERT INTO hypotheses (id, investigation_id, number, agent, kind, status, summary, patch, branch, body) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(h.id.0.clone())
        .bind(investigation.0.clone())
        .bind(i32::try_from(h.number).unwrap_or(i32::MAX))
        .bind(name(&h.agent))
        .bind(name(&h.kind))
        .bind(h.status.as_str().to_string())
        .bind(h.summary.clone())
        .bind(h.patch.clone())
        .bind(h.branch.clone())
        .bind(Some(DB::document(body)))
        .execute(&mut *tx)
        .await
        .map_err(DB::error)?;
        Self::insert_experiments(tx, h).await
    }

    /// Writes the experiments of `h` (the caller removed any earlier ones).
    pub(crate) async fn insert_experiments(tx: &mut DB::Connection, h: &Hypothesis) -> Result<()> {
        for e in &h.experiments {
            let counts = e.effective_counts();
            sqlx::query::<DB>(
                "INSERT INTO experiments (hypothesis_id, step, command, revision, exit_code, duration_ms, outcome, output, sandbox, note, runs, failures) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            )
            .bind(h.id.0.clone())
            .bind(e.step.as_str().to_string())
            .bind(e.command.clone())
            .bind(e.revision.clone())
            .bind(e.exit_code)
            .bind(i64::try_from(e.duration_ms).unwrap_or(i64::MAX))
            .bind(name(&e.outcome))
            .bind(e.output.clone())
            .bind(e.sandbox.clone())
            .bind(e.note.clone())
            .bind(i32::try_from(counts.runs).unwrap_or(i32::MAX))
            .bind(i32::try_from(counts.failures).unwrap_or(i32::MAX))
            .execute(&mut *tx)
            .await
            .map_err(DB::error)?;
        }
        Ok(())
    }
}

/// A unit enum's serde name (`code_path`, `passed`), as the name columns store it.
fn name<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn state(stored: &str) -> Result<InvestigationState> {
    InvestigationState::from_str(stored)
}
