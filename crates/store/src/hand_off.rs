//! The domain's [`HandOffStore`] on both databases: reviews, the audit log
//! (`decisions`, append-only by trigger) and the draft pull request of an
//! approved investigation. Each write changes the investigation and
//! appends its audit row in one transaction. One implementation, generic
//! over the [`Backend`]; the two stores' trait impls only hand it their pool.
//! The `…_notifying` variants also enqueue the stage's webhooks and Jira
//! comments in the same transaction.

use crate::backend::{Backend, Shared};
use crate::notifications::{NewNotification, enqueue_in};
use crate::postgres::PgStore;
use crate::sqlite::SqliteStore;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Pool, Row, Type};
use std::str::FromStr;
use time::OffsetDateTime;
use tracelab_domain::audit::{AuditAction, HandOff, PullRequestLink, Review, check_reviewer};
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

fn number_of(link: &PullRequestLink) -> Result<i64> {
    i64::try_from(link.number)
        .map_err(|_| Error::invalid(format!("pull request number {} is too large", link.number)))
}

/// The hand-off statements, once for both backends (a second impl block of
/// [`Shared`], which also reads from the pool directly).
impl<DB: Backend> Shared<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'c> &'c Pool<DB>: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'q> String: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Option<String>: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> Option<i64>: Decode<'q, DB> + Type<DB>,
    usize: ColumnIndex<DB::Row>,
{
    /// The investigation's state and starter, locked for this transaction
    /// where the database locks rows (SQLite serialises writers instead: the
    /// transaction's first write takes the lock, and every write below is a
    /// compare-and-set).
    pub(crate) async fn current(
        tx: &mut DB::Connection,
        id: &InvestigationId,
    ) -> Result<(InvestigationState, Option<String>)> {
        let sql = format!(
            "SELECT state, started_by FROM investigations WHERE id = $1{}",
            DB::LOCK_ROW
        );
        let row = sqlx::query::<DB>(sqlx::AssertSqlSafe(sql))
            .bind(id.0.clone())
            .fetch_optional(&mut *tx)
            .await
            .map_err(DB::error)?
            .ok_or_else(|| Error::not_found(format!("investigation {id} not found")))?;
        Ok((
            InvestigationState::from_str(&row.try_get::<String, _>(0).map_err(DB::error)?)?,
            row.try_get(1).map_err(DB::error)?,
        ))
    }

    pub(crate) async fn review(
        pool: &Pool<DB>,
        id: &InvestigationId,
        review: &Review<'_>,
        notes: &[NewNotification],
    ) -> Result<InvestigationState> {
        let (to, action) = target(review);
        let mut tx = pool.begin_with(DB::BEGIN_WRITE).await.map_err(DB::error)?;
        let (state, started_by) = Self::current(&mut tx, id).await?;
        if state != InvestigationState::WaitingForReview {
            return Err(not_reviewable(id, state));
        }
        check_reviewer(
            started_by.as_deref(),
            review.reviewer,
            review.forbid_self_approval,
        )?;
        Shared::<DB>::move_state(
            &mut tx,
            id,
            state,
            to,
            OffsetDateTime::now_utc(),
            Some(&transition_reason(review)),
        )
        .await?;
        Shared::<DB>::audit(
            &mut tx,
            id,
            action,
            review.reviewer,
            review.role,
            reason(review).as_deref(),
        )
        .await?;
        enqueue_in::<DB>(&mut tx, notes).await?;
        tx.commit().await.map_err(DB::error)?;
        Ok(to)
    }

    pub(crate) async fn hand_off(pool: &Pool<DB>, id: &InvestigationId) -> Result<Option<HandOff>> {
        let Some(row) = sqlx::query::<DB>(
            "SELECT started_by, pull_request_url, pull_request_number, pull_request_host, pull_request_error FROM investigations WHERE id = $1",
        )
        .bind(id.0.clone())
        .fetch_optional(pool)
        .await
        .map_err(DB::error)?
        else {
            return Ok(None);
        };
        let audit = Shared::<DB>::audit_entries(pool, id).await?;
        Ok(Some(HandOff {
            started_by: row.try_get(0).map_err(DB::error)?,
            audit,
            pull_request: Self::link_from(&row, 1)?,
            pull_request_error: row.try_get(4).map_err(DB::error)?,
        }))
    }

    pub(crate) async fn record_pull_request(
        pool: &Pool<DB>,
        id: &InvestigationId,
        actor: &str,
        role: &str,
        link: &PullRequestLink,
        notes: &[NewNotification],
    ) -> Result<PullRequestLink> {
        let number = number_of(link)?;
        let mut tx = pool.begin_with(DB::BEGIN_WRITE).await.map_err(DB::error)?;
        let (state, _) = Self::current(&mut tx, id).await?;
        if state != InvestigationState::Approved {
            return Err(not_approved(id, state));
        }
        // Only the first link is stored: a racing second attempt keeps it.
        let updated = sqlx::query::<DB>(
            "UPDATE investigations SET pull_request_url = $1, pull_request_number = $2, pull_request_host = $3, pull_request_error = NULL, updated_at = $4 WHERE id = $5 AND pull_request_url IS NULL",
        )
        .bind(link.url.clone())
        .bind(number)
        .bind(link.host.clone())
        .bind(DB::time(OffsetDateTime::now_utc()))
        .bind(id.0.clone())
        .execute(&mut *tx)
        .await
        .map_err(DB::error)?;
        if DB::rows_affected(&updated) == 0 {
            let row = sqlx::query::<DB>(
                "SELECT pull_request_url, pull_request_number, pull_request_host FROM investigations WHERE id = $1",
            )
            .bind(id.0.clone())
            .fetch_one(&mut *tx)
            .await
            .map_err(DB::error)?;
            return Self::link_from(&row, 0)?.ok_or_else(|| {
                Error::internal(format!("investigation {id}: partial pull request link"))
            });
        }
        Shared::<DB>::audit(
            &mut tx,
            id,
            AuditAction::PullRequestOpened,
            actor,
            role,
            Some(&link.url),
        )
        .await?;
        enqueue_in::<DB>(&mut tx, notes).await?;
        tx.commit().await.map_err(DB::error)?;
        Ok(link.clone())
    }

    pub(crate) async fn record_pull_request_failure(
        pool: &Pool<DB>,
        id: &InvestigationId,
        actor: &str,
        role: &str,
        error: &str,
    ) -> Result<()> {
        let mut tx = pool.begin_with(DB::BEGIN_WRITE).await.map_err(DB::error)?;
        Self::current(&mut tx, id).await?;
        sqlx::query::<DB>(
            "UPDATE investigations SET pull_request_error = $1, updated_at = $2 WHERE id = $3",
        )
        .bind(error.to_string())
        .bind(DB::time(OffsetDateTime::now_utc()))
        .bind(id.0.clone())
        .execute(&mut *tx)
        .await
        .map_err(DB::error)?;
        Shared::<DB>::audit(
            &mut tx,
            id,
            AuditAction::PullRequestFailed,
            actor,
            role,
            Some(error),
        )
        .await?;
        tx.commit().await.map_err(DB::error)
    }

    /// The pull request link in columns `first..first + 3` (url, number, host),
    /// when all three are set.
    fn link_from(row: &DB::Row, first: usize) -> Result<Option<PullRequestLink>> {
        let url: Option<String> = row.try_get(first).map_err(DB::error)?;
        let number: Option<i64> = row.try_get(first + 1).map_err(DB::error)?;
        let host: Option<String> = row.try_get(first + 2).map_err(DB::error)?;
        Ok(match (url, number, host) {
            (Some(url), Some(number), Some(host)) => Some(PullRequestLink {
                url,
                number: u64::try_from(number).unwrap_or_default(),
                host,
            }),
            _ => None,
        })
    }
}

/// The trait for one store: its pool handed to the generic functions.
macro_rules! hand_off_store {
    ($store:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl HandOffStore for $store {
            async fn review(
                &self,
                id: &InvestigationId,
                review: &Review<'_>,
            ) -> Result<InvestigationState> {
                Shared::<$db>::review(self.pool(), id, review, &[]).await
            }

            async fn hand_off(&self, id: &InvestigationId) -> Result<Option<HandOff>> {
                Shared::<$db>::hand_off(self.pool(), id).await
            }

            async fn record_pull_request(
                &self,
                id: &InvestigationId,
                actor: &str,
                role: &str,
                link: &PullRequestLink,
            ) -> Result<PullRequestLink> {
                Shared::<$db>::record_pull_request(self.pool(), id, actor, role, link, &[]).await
            }

            async fn record_pull_request_failure(
                &self,
                id: &InvestigationId,
                actor: &str,
                role: &str,
                error: &str,
            ) -> Result<()> {
                Shared::<$db>::record_pull_request_failure(self.pool(), id, actor, role, error)
                    .await
            }
        }

        /// The stages that notify, with their notifications in the same
        /// transaction (`crate::notifications`): both commit or neither.
        impl $store {
            /// [`HandOffStore::review`], enqueueing `notes` with it.
            pub async fn review_notifying(
                &self,
                id: &InvestigationId,
                review: &Review<'_>,
                notes: &[NewNotification],
            ) -> Result<InvestigationState> {
                Shared::<$db>::review(self.pool(), id, review, notes).await
            }

            /// [`HandOffStore::record_pull_request`], enqueueing `notes`
            /// when this call stored the link (not when one was stored).
            pub async fn record_pull_request_notifying(
                &self,
                id: &InvestigationId,
                actor: &str,
                role: &str,
                link: &PullRequestLink,
                notes: &[NewNotification],
            ) -> Result<PullRequestLink> {
                Shared::<$db>::record_pull_request(self.pool(), id, actor, role, link, notes).await
            }
        }
    };
}

hand_off_store!(PgStore, sqlx::Postgres);
hand_off_store!(SqliteStore, sqlx::Sqlite);
