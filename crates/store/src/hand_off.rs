//! The domain's [`HandOffStore`] on both databases: reviews, the audit log
//! (`decisions`, append-only by trigger) and the draft pull request of an
//! approved investigation. Each write changes the investigation and
//! appends its audit row in one transaction.

use crate::pg_error::db_error as pg_db_error;
use crate::postgres::PgStore;
use crate::sqlite::{SqliteStore, db_error as sqlite_db_error, now, parse_time};
use sqlx::{PgConnection, Row, SqliteConnection};
use std::str::FromStr;
use time::OffsetDateTime;
use tracelab_domain::audit::{
    AuditAction, AuditEntry, HandOff, PullRequestLink, Review, check_reviewer,
};
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::ports::HandOffStore;
use tracelab_domain::state::InvestigationState;
use tracelab_domain::{Error, Result};

/// The transition's reason: who decided, and why when they said.
fn transition_reason(review: &Review<'_>) -> String {
    match review.reason.map(str::trim).filter(|r| !r.is_empty()) {
        Some(r) => format!("{}: {r}", review.reviewer),
        None => review.reviewer.to_string(),
    }
}

fn target(review: &Review<'_>) -> (InvestigationState, AuditAction) {
    if review.approve {
        (InvestigationState::Approved, AuditAction::Approved)
    } else {
        (InvestigationState::Rejected, AuditAction::Rejected)
    }
}

fn not_reviewable(id: &InvestigationId, state: InvestigationState) -> Error {
    Error::conflict(format!(
        "investigation {id} is {state}; only WAITING_FOR_REVIEW can be approved or rejected"
    ))
}

fn not_approved(id: &InvestigationId, state: InvestigationState) -> Error {
    Error::conflict(format!(
        "investigation {id} is {state}, not APPROVED: a pull request is opened only for an approved diagnosis"
    ))
}

fn reason(review: &Review<'_>) -> Option<String> {
    review
        .reason
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(str::to_string)
}

fn link_from(
    url: Option<String>,
    number: Option<i64>,
    host: Option<String>,
) -> Option<PullRequestLink> {
    match (url, number, host) {
        (Some(url), Some(number), Some(host)) => Some(PullRequestLink {
            url,
            number: u64::try_from(number).unwrap_or_default(),
            host,
        }),
        _ => None,
    }
}

fn number_of(link: &PullRequestLink) -> Result<i64> {
    i64::try_from(link.number)
        .map_err(|_| Error::invalid(format!("pull request number {} is too large", link.number)))
}

// ------------------------------------------------------------- PostgreSQL

/// Appends one audit row inside `tx`.
pub(crate) async fn audit_pg(
    tx: &mut PgConnection,
    id: &InvestigationId,
    action: AuditAction,
    actor: &str,
    role: &str,
    reason: Option<&str>,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO decisions (investigation_id, actor, role, action, reason, at) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(&id.0)
    .bind(actor)
    .bind(role)
    .bind(action.as_str())
    .bind(reason)
    .bind(OffsetDateTime::now_utc())
    .execute(&mut *tx)
    .await
    .map_err(pg_db_error)?;
    Ok(())
}

/// The investigation's state and starter, locked for this transaction.
async fn locked_pg(
    tx: &mut PgConnection,
    id: &InvestigationId,
) -> Result<(InvestigationState, Option<String>)> {
    let row = sqlx::query("SELECT state, started_by FROM investigations WHERE id = $1 FOR UPDATE")
        .bind(&id.0)
        .fetch_optional(&mut *tx)
        .await
        .map_err(pg_db_error)?
        .ok_or_else(|| Error::not_found(format!("investigation {id} not found")))?;
    Ok((
        InvestigationState::from_str(&row.get::<String, _>(0))?,
        row.get(1),
    ))
}

#[async_trait::async_trait]
impl HandOffStore for PgStore {
    async fn review(
        &self,
        id: &InvestigationId,
        review: &Review<'_>,
    ) -> Result<InvestigationState> {
        let (to, action) = target(review);
        let mut tx = self.begin().await?;
        let (state, started_by) = locked_pg(&mut tx, id).await?;
        if state != InvestigationState::WaitingForReview {
            return Err(not_reviewable(id, state));
        }
        check_reviewer(
            started_by.as_deref(),
            review.reviewer,
            review.forbid_self_approval,
        )?;
        crate::pipeline::move_state(&mut tx, id, state, to, Some(&transition_reason(review)))
            .await?;
        audit_pg(
            &mut tx,
            id,
            action,
            review.reviewer,
            review.role,
            reason(review).as_deref(),
        )
        .await?;
        tx.commit().await.map_err(pg_db_error)?;
        Ok(to)
    }

    async fn hand_off(&self, id: &InvestigationId) -> Result<Option<HandOff>> {
        let Some(row) = sqlx::query(
            "SELECT started_by, pull_request_url, pull_request_number, pull_request_host, pull_request_error FROM investigations WHERE id = $1",
        )
        .bind(&id.0)
        .fetch_optional(self.pool())
        .await
        .map_err(pg_db_error)?
        else {
            return Ok(None);
        };
        let rows = sqlx::query(
            "SELECT action, actor, role, reason, at FROM decisions WHERE investigation_id = $1 ORDER BY seq",
        )
        .bind(&id.0)
        .fetch_all(self.pool())
        .await
        .map_err(pg_db_error)?;
        let audit = rows
            .into_iter()
            .map(|r| {
                Ok(AuditEntry {
                    action: AuditAction::parse(&r.get::<String, _>(0))?,
                    actor: r.get(1),
                    role: r.get(2),
                    reason: r.get(3),
                    at: r.get(4),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(HandOff {
            started_by: row.get(0),
            audit,
            pull_request: link_from(row.get(1), row.get(2), row.get(3)),
            pull_request_error: row.get(4),
        }))
    }

    async fn record_pull_request(
        &self,
        id: &InvestigationId,
        actor: &str,
        role: &str,
        link: &PullRequestLink,
    ) -> Result<PullRequestLink> {
        let number = number_of(link)?;
        let mut tx = self.begin().await?;
        let (state, _) = locked_pg(&mut tx, id).await?;
        if state != InvestigationState::Approved {
            return Err(not_approved(id, state));
        }
        let row = sqlx::query(
            "SELECT pull_request_url, pull_request_number, pull_request_host FROM investigations WHERE id = $1",
        )
        .bind(&id.0)
        .fetch_one(&mut *tx)
        .await
        .map_err(pg_db_error)?;
        if let Some(stored) = link_from(row.get(0), row.get(1), row.get(2)) {
            return Ok(stored);
        }
        sqlx::query(
            "UPDATE investigations SET pull_request_url = $1, pull_request_number = $2, pull_request_host = $3, pull_request_error = NULL, updated_at = now() WHERE id = $4",
        )
        .bind(&link.url)
        .bind(number)
        .bind(&link.host)
        .bind(&id.0)
        .execute(&mut *tx)
        .await
        .map_err(pg_db_error)?;
        audit_pg(
            &mut tx,
            id,
            AuditAction::PullRequestOpened,
            actor,
            role,
            Some(&link.url),
        )
        .await?;
        tx.commit().await.map_err(pg_db_error)?;
        Ok(link.clone())
    }

    async fn record_pull_request_failure(
        &self,
        id: &InvestigationId,
        actor: &str,
        role: &str,
        error: &str,
    ) -> Result<()> {
        let mut tx = self.begin().await?;
        locked_pg(&mut tx, id).await?;
        sqlx::query(
            "UPDATE investigations SET pull_request_error = $1, updated_at = now() WHERE id = $2",
        )
        .bind(error)
        .bind(&id.0)
        .execute(&mut *tx)
        .await
        .map_err(pg_db_error)?;
        audit_pg(
            &mut tx,
            id,
            AuditAction::PullRequestFailed,
            actor,
            role,
            Some(error),
        )
        .await?;
        tx.commit().await.map_err(pg_db_error)
    }
}

// ----------------------------------------------------------------- SQLite

/// Appends one audit row inside `tx`.
pub(crate) async fn audit_sqlite(
    tx: &mut SqliteConnection,
    id: &InvestigationId,
    action: AuditAction,
    actor: &str,
    role: &str,
    reason: Option<&str>,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO decisions (investigation_id, actor, role, action, reason, at) VALUES (?, ?, ?, ?, ?, ?)",
    )
    .bind(&id.0)
    .bind(actor)
    .bind(role)
    .bind(action.as_str())
    .bind(reason)
    .bind(now())
    .execute(&mut *tx)
    .await
    .map_err(sqlite_db_error)?;
    Ok(())
}

/// The investigation's state and starter. (SQLite serialises writers: the
/// transaction's first write takes the lock; `BEGIN IMMEDIATE` is not
/// needed because every write below is a compare-and-set.)
async fn current_sqlite(
    tx: &mut SqliteConnection,
    id: &InvestigationId,
) -> Result<(InvestigationState, Option<String>)> {
    let row = sqlx::query("SELECT state, started_by FROM investigations WHERE id = ?")
        .bind(&id.0)
        .fetch_optional(&mut *tx)
        .await
        .map_err(sqlite_db_error)?
        .ok_or_else(|| Error::not_found(format!("investigation {id} not found")))?;
    Ok((
        InvestigationState::from_str(&row.get::<String, _>(0))?,
        row.get(1),
    ))
}

#[async_trait::async_trait]
impl HandOffStore for SqliteStore {
    async fn review(
        &self,
        id: &InvestigationId,
        review: &Review<'_>,
    ) -> Result<InvestigationState> {
        let (to, action) = target(review);
        let mut tx = self.pool().begin().await.map_err(sqlite_db_error)?;
        let (state, started_by) = current_sqlite(&mut tx, id).await?;
        if state != InvestigationState::WaitingForReview {
            return Err(not_reviewable(id, state));
        }
        check_reviewer(
            started_by.as_deref(),
            review.reviewer,
            review.forbid_self_approval,
        )?;
        state.transition(to)?;
        let at = now();
        let updated = sqlx::query(
            "UPDATE investigations SET state = ?, updated_at = ? WHERE id = ? AND state = ?",
        )
        .bind(to.as_str())
        .bind(&at)
        .bind(&id.0)
        .bind(state.as_str())
        .execute(&mut *tx)
        .await
        .map_err(sqlite_db_error)?;
        if updated.rows_affected() == 0 {
            return Err(Error::conflict(format!(
                "investigation {id} was decided meanwhile"
            )));
        }
        sqlx::query("INSERT INTO transitions (investigation_id, from_state, to_state, at, reason) VALUES (?, ?, ?, ?, ?)")
            .bind(&id.0)
            .bind(state.as_str())
            .bind(to.as_str())
            .bind(&at)
            .bind(transition_reason(review))
            .execute(&mut *tx)
            .await
            .map_err(sqlite_db_error)?;
        audit_sqlite(
            &mut tx,
            id,
            action,
            review.reviewer,
            review.role,
            reason(review).as_deref(),
        )
        .await?;
        tx.commit().await.map_err(sqlite_db_error)?;
        Ok(to)
    }

    async fn hand_off(&self, id: &InvestigationId) -> Result<Option<HandOff>> {
        let Some(row) = sqlx::query(
            "SELECT started_by, pull_request_url, pull_request_number, pull_request_host, pull_request_error FROM investigations WHERE id = ?",
        )
        .bind(&id.0)
        .fetch_optional(self.pool())
        .await
        .map_err(sqlite_db_error)?
        else {
            return Ok(None);
        };
        let rows = sqlx::query(
            "SELECT action, actor, role, reason, at FROM decisions WHERE investigation_id = ? ORDER BY seq",
        )
        .bind(&id.0)
        .fetch_all(self.pool())
        .await
        .map_err(sqlite_db_error)?;
        let audit = rows
            .into_iter()
            .map(|r| {
                Ok(AuditEntry {
                    action: AuditAction::parse(&r.get::<String, _>(0))?,
                    actor: r.get(1),
                    role: r.get(2),
                    reason: r.get(3),
                    at: parse_time(&r.get::<String, _>(4))?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(HandOff {
            started_by: row.get(0),
            audit,
            pull_request: link_from(row.get(1), row.get(2), row.get(3)),
            pull_request_error: row.get(4),
        }))
    }

    async fn record_pull_request(
        &self,
        id: &InvestigationId,
        actor: &str,
        role: &str,
        link: &PullRequestLink,
    ) -> Result<PullRequestLink> {
        let number = number_of(link)?;
        let mut tx = self.pool().begin().await.map_err(sqlite_db_error)?;
        let (state, _) = current_sqlite(&mut tx, id).await?;
        if state != InvestigationState::Approved {
            return Err(not_approved(id, state));
        }
        // Only the first link is stored: a racing second attempt keeps it.
        let updated = sqlx::query(
            "UPDATE investigations SET pull_request_url = ?, pull_request_number = ?, pull_request_host = ?, pull_request_error = NULL, updated_at = ? WHERE id = ? AND pull_request_url IS NULL",
        )
        .bind(&link.url)
        .bind(number)
        .bind(&link.host)
        .bind(now())
        .bind(&id.0)
        .execute(&mut *tx)
        .await
        .map_err(sqlite_db_error)?;
        if updated.rows_affected() == 0 {
            let row = sqlx::query(
                "SELECT pull_request_url, pull_request_number, pull_request_host FROM investigations WHERE id = ?",
            )
            .bind(&id.0)
            .fetch_one(&mut *tx)
            .await
            .map_err(sqlite_db_error)?;
            return link_from(row.get(0), row.get(1), row.get(2)).ok_or_else(|| {
                Error::internal(format!("investigation {id}: partial pull request link"))
            });
        }
        audit_sqlite(
            &mut tx,
            id,
            AuditAction::PullRequestOpened,
            actor,
            role,
            Some(&link.url),
        )
        .await?;
        tx.commit().await.map_err(sqlite_db_error)?;
        Ok(link.clone())
    }

    async fn record_pull_request_failure(
        &self,
        id: &InvestigationId,
        actor: &str,
        role: &str,
        error: &str,
    ) -> Result<()> {
        let mut tx = self.pool().begin().await.map_err(sqlite_db_error)?;
        current_sqlite(&mut tx, id).await?;
        sqlx::query(
            "UPDATE investigations SET pull_request_error = ?, updated_at = ? WHERE id = ?",
        )
        .bind(error)
        .bind(now())
        .bind(&id.0)
        .execute(&mut *tx)
        .await
        .map_err(sqlite_db_error)?;
        audit_sqlite(
            &mut tx,
            id,
            AuditAction::PullRequestFailed,
            actor,
            role,
            Some(error),
        )
        .await?;
        tx.commit().await.map_err(sqlite_db_error)
    }
}
