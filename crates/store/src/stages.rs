//! The fleet's stage writes on PostgreSQL, one per hand-off. Each method is one
//! transaction that checks the investigation's state first, so a service that
//! processes a redelivered message finds the work done and changes nothing:
//!
//! - API: [`PgStore::create_requested`] (CREATED, with the request and the
//!   `requested` event in the [outbox](crate::outbox)).
//! - investigator: [`PgStore::save_proposal`] (INVESTIGATING → VERIFYING with
//!   the classification, the proposal and every hypothesis, pending ones too).
//! - verifier: [`PgStore::record_verification`] (one hypothesis and its
//!   experiments, keyed by the job's message id, only while the hypothesis
//!   is PENDING: a result after the decision is kept apart as late).
//! - arbiter: [`PgStore::arbitration_input`], then [`PgStore::save_decision`]
//!   (VERIFYING → ARBITRATING → WAITING_FOR_REVIEW with the report, the
//!   hypotheses the deadline cut short, and the `decided` event in the outbox).
//! - reviewers: `HandOffStore::review` (APPROVED/REJECTED plus an audit row, module `hand_off`).

use crate::backend::Shared;
use crate::idempotency::record_once;
use crate::outbox::{OutboxMessage, enqueue};
use crate::pg_error::db_error;
use crate::postgres::PgStore;
use serde_json::Value;
use sqlx::{PgConnection, Postgres, Row};
use std::str::FromStr;
use time::OffsetDateTime;
use tracelab_domain::audit::AuditAction;
use tracelab_domain::hypothesis::{Hypothesis, HypothesisStatus};
use tracelab_domain::ids::{HypothesisId, InvestigationId};
use tracelab_domain::report::Report;
use tracelab_domain::state::InvestigationState;
use tracelab_domain::{Error, Result};

/// The investigator's hand-off to verifiers and the arbiter.
#[derive(Debug, Clone)]
pub struct ProposalRecord {
    /// The engine's `Classification`, as JSON.
    pub classification: Value,
    /// The engine's `Proposal`, as JSON.
    pub proposal: Value,
    pub bad: String,
    pub test_command: String,
    pub deadline: OffsetDateTime,
}

/// A new investigation for [`PgStore::create_requested`].
#[derive(Debug, Clone)]
pub struct NewInvestigation<'a> {
    pub id: &'a InvestigationId,
    pub repository: &'a str,
    pub test_command: &'a str,
    /// The request as the API took it (JSON).
    pub request: &'a Value,
    /// Evidence it was started from.
    pub evidence: &'a [String],
    /// At most one investigation has a given key (e.g. failure group and
    /// revision for the ones the group policy starts).
    pub dedupe_key: Option<&'a str>,
    /// Its `requested` event, stored in the outbox with it.
    pub announce: &'a OutboxMessage,
    /// Who started it (the API token's name) and with which role: stored
    /// on the investigation and as its `started` audit row.
    pub started_by: &'a str,
    pub role: &'a str,
}

/// What [`PgStore::create_requested`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Created {
    New,
    /// An investigation with the same `dedupe_key` exists: this one.
    Existing(InvestigationId),
}

/// What [`PgStore::record_verification`] did with a verifier's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// Stored: the hypothesis was PENDING and its investigation VERIFYING.
    Stored,
    /// This message was processed before (a redelivery): nothing changed.
    AlreadyRecorded,
    /// The hypothesis was no longer PENDING (the arbiter decided at the
    /// deadline): the result is kept in `late_verifications` and the
    /// hypothesis the decision was based on is left as it is.
    Late,
}

/// Everything the arbiter needs, read in one query set.
#[derive(Debug, Clone)]
pub struct ArbitrationInput {
    pub state: InvestigationState,
    pub repository: String,
    pub created_at: OffsetDateTime,
    pub proposal: ProposalRecord,
    /// Ordered by number.
    pub hypotheses: Vec<Hypothesis>,
}

/// A piece of evidence as ingest stored it: `body` is the redacted failure
/// (the `tracelab parse` object).
#[derive(Debug, Clone)]
pub struct EvidenceRow {
    pub id: String,
    pub kind: String,
    pub repository: Option<String>,
    pub commit: Option<String>,
    pub body: Value,
}

/// An investigation started from a failure group's evidence, and what it
/// concluded (the winning hypothesis is the fix a reviewer saw).
#[derive(Debug, Clone, PartialEq)]
pub struct GroupInvestigation {
    pub group_key: String,
    pub id: String,
    pub state: String,
    pub verdict: Option<String>,
    pub culprit: Option<String>,
    /// The winner's kind (`revert`, …) and the branch it was verified on.
    pub fix_kind: Option<String>,
    pub fix_branch: Option<String>,
    pub created_at: OffsetDateTime,
}

/// An investigation's row, whatever its progress.
#[derive(Debug, Clone)]
pub struct InvestigationRow {
    pub id: InvestigationId,
    pub state: InvestigationState,
    pub verdict: Option<String>,
    pub repository: String,
    pub test_command: String,
    pub culprit: Option<String>,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
    pub request: Option<Value>,
    pub report: Option<Value>,
}

/// Compare-and-set of the state plus the transition row, inside `tx`.
/// Conflict (with the current state) when the row is not in `from`.
pub(crate) async fn move_state(
    tx: &mut PgConnection,
    id: &InvestigationId,
    from: InvestigationState,
    to: InvestigationState,
    reason: Option<&str>,
) -> Result<()> {
    crate::backend::Shared::<sqlx::Postgres>::move_state(
        tx,
        id,
        from,
        to,
        OffsetDateTime::now_utc(),
        reason,
    )
    .await
}

async fn state_in(
    tx: &mut PgConnection,
    id: &InvestigationId,
) -> Result<Option<InvestigationState>> {
    let row = sqlx::query("SELECT state FROM investigations WHERE id = $1 FOR UPDATE")
        .bind(&id.0)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_error)?;
    row.map(|r| InvestigationState::from_str(&r.get::<String, _>(0)))
        .transpose()
}

fn hypothesis_from(body: Value) -> Result<Hypothesis> {
    serde_json::from_value(body)
        .map_err(|e| Error::internal(format!("stored hypothesis is unreadable: {e}")))
}

impl PgStore {
    /// Creates the investigation in CREATED with the request that started
    /// it and, in the same transaction, its `requested` event in the outbox:
    /// a crash before the publish leaves the event for the relay, never an
    /// investigation nobody hears of. With a `dedupe_key` that another
    /// investigation already has, nothing is created and that one is returned.
    pub async fn create_requested(&self, new: &NewInvestigation<'_>) -> Result<Created> {
        self.create_requested_notifying(new, &[]).await
    }

    /// [`PgStore::create_requested`], enqueueing the `created` stage's
    /// notifications in the same transaction (none for an existing key).
    pub async fn create_requested_notifying(
        &self,
        new: &NewInvestigation<'_>,
        notes: &[crate::notifications::NewNotification],
    ) -> Result<Created> {
        let id = new.id;
        let now = OffsetDateTime::now_utc();
        let mut tx = self.pool().begin().await.map_err(db_error)?;
        let inserted = sqlx::query(
            "INSERT INTO investigations (id, repository, test_command, state, request, created_at, updated_at, dedupe_key, started_by) VALUES ($1, $2, $3, $4, $5, $6, $6, $7, $8)",
        )
        .bind(&id.0)
        .bind(new.repository)
        .bind(new.test_command)
        .bind(InvestigationState::Created.as_str())
        .bind(new.request)
        .bind(now)
        .bind(new.dedupe_key)
        .bind(new.started_by)
        .execute(&mut *tx)
        .await;
        match inserted {
            Ok(_) => {}
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                drop(tx);
                if let Some(key) = new.dedupe_key {
                    let existing: Option<String> =
                        sqlx::query_scalar("SELECT id FROM investigations WHERE dedupe_key = $1")
                            .bind(key)
                            .fetch_optional(self.pool())
                            .await
                            .map_err(db_error)?;
                    if let Some(existing) = existing {
                        return Ok(Created::Existing(InvestigationId(existing)));
                    }
                }
                return Err(Error::conflict(format!(
                    "investigation {id} already exists"
                )));
            }
            Err(e) => return Err(db_error(e)),
        }
        for evidence_id in new.evidence {
            sqlx::query(
                "INSERT INTO investigation_evidence (investigation_id, evidence_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            )
            .bind(&id.0)
            .bind(evidence_id)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        }
        crate::backend::Shared::<sqlx::Postgres>::audit(
            &mut tx,
            id,
            AuditAction::Started,
            new.started_by,
            new.role,
            None,
        )
        .await?;
        enqueue(&mut tx, new.announce).await?;
        crate::notifications::enqueue_in::<sqlx::Postgres>(&mut tx, notes).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(Created::New)
    }

    /// Evidence ingest stored (already redacted), by id.
    pub async fn evidence(&self, id: &str) -> Result<Option<EvidenceRow>> {
        let row = sqlx::query(
            "SELECT id, kind, repository, commit_sha, body FROM evidence WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(self.pool())
        .await
        .map_err(db_error)?;
        Ok(row.map(|r| EvidenceRow {
            id: r.get(0),
            kind: r.get(1),
            repository: r.get(2),
            commit: r.get(3),
            body: r.get::<sqlx::types::Json<Value>, _>(4).0,
        }))
    }

    /// The investigations started from `evidence_id`, oldest first.
    pub async fn investigations_of_evidence(&self, evidence_id: &str) -> Result<Vec<String>> {
        sqlx::query_scalar(
            "SELECT i.id FROM investigation_evidence e JOIN investigations i ON i.id = e.investigation_id WHERE e.evidence_id = $1 ORDER BY i.created_at",
        )
        .bind(evidence_id)
        .fetch_all(self.pool())
        .await
        .map_err(db_error)
    }

    /// The investigations started from the evidence of these failure groups,
    /// newest first, with what they concluded: how a past failure was fixed.
    pub async fn investigations_of_groups(
        &self,
        group_keys: &[String],
    ) -> Result<Vec<GroupInvestigation>> {
        let rows = sqlx::query(
            "SELECT DISTINCT ON (i.id) e.group_key, i.id, i.state, i.verdict, i.culprit, \
             i.report->'winner'->>'kind', i.report->'winner'->>'branch', i.created_at \
             FROM evidence e JOIN investigation_evidence ie ON ie.evidence_id = e.id \
             JOIN investigations i ON i.id = ie.investigation_id \
             WHERE e.group_key = ANY($1) ORDER BY i.id",
        )
        .bind(group_keys)
        .fetch_all(self.pool())
        .await
        .map_err(db_error)?;
        let mut found: Vec<GroupInvestigation> = rows
            .iter()
            .map(|r| GroupInvestigation {
                group_key: r.get(0),
                id: r.get(1),
                state: r.get(2),
                verdict: r.get(3),
                culprit: r.get(4),
                fix_kind: r.get(5),
                fix_branch: r.get(6),
                created_at: r.get(7),
            })
            .collect();
        found.sort_by(|a, b| {
            b.created_at
                .cmp(&a.created_at)
                .then_with(|| a.id.cmp(&b.id))
        });
        Ok(found)
    }

    /// The evidence an investigation was started from.
    pub async fn investigation_evidence(&self, id: &InvestigationId) -> Result<Vec<String>> {
        sqlx::query_scalar(
            "SELECT evidence_id FROM investigation_evidence WHERE investigation_id = $1 ORDER BY evidence_id",
        )
        .bind(&id.0)
        .fetch_all(self.pool())
        .await
        .map_err(db_error)
    }

    /// One investigation's row.
    pub async fn investigation(&self, id: &InvestigationId) -> Result<Option<InvestigationRow>> {
        let row = sqlx::query(
            "SELECT id, state, verdict, repository, test_command, culprit, created_at, updated_at, request, report FROM investigations WHERE id = $1",
        )
        .bind(&id.0)
        .fetch_optional(self.pool())
        .await
        .map_err(db_error)?;
        row.map(|r| {
            Ok(InvestigationRow {
                id: InvestigationId(r.get(0)),
                state: InvestigationState::from_str(&r.get::<String, _>(1))?,
                verdict: r.get(2),
                repository: r.get(3),
                test_command: r.get(4),
                culprit: r.get(5),
                created_at: r.get(6),
                updated_at: r.get(7),
                request: r.get(8),
                report: r.get(9),
            })
        })
        .transpose()
    }

    /// Moves `id` from `from` to `to` unless it is already in `to`
    /// (`Ok(false)`: a redelivery found the step done).
    pub async fn advance(
        &self,
        id: &InvestigationId,
        from: InvestigationState,
        to: InvestigationState,
        reason: Option<&str>,
    ) -> Result<bool> {
        let mut tx = self.begin().await?;
        let current = state_in(&mut tx, id)
            .await?
            .ok_or_else(|| Error::not_found(format!("investigation {id} not found")))?;
        if current == to {
            return Ok(false);
        }
        move_state(&mut tx, id, from, to, reason).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(true)
    }

    /// Ends an investigation that cannot go on (FAILED or BLOCKED), from
    /// whatever non-terminal state it is in. `Ok(false)` when already terminal.
    pub async fn abort(
        &self,
        id: &InvestigationId,
        end: InvestigationState,
        reason: &str,
    ) -> Result<bool> {
        let mut tx = self.begin().await?;
        let Some(current) = state_in(&mut tx, id).await? else {
            return Err(Error::not_found(format!("investigation {id} not found")));
        };
        if current.is_terminal() || current == InvestigationState::WaitingForReview {
            return Ok(false);
        }
        move_state(&mut tx, id, current, end, Some(reason)).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(true)
    }

    /// INVESTIGATING → VERIFYING with the proposal and every hypothesis, in
    /// one transaction. `Ok(false)` when the proposal was already saved.
    pub async fn save_proposal(
        &self,
        id: &InvestigationId,
        record: &ProposalRecord,
        hypotheses: &[Hypothesis],
    ) -> Result<bool> {
        let mut tx = self.begin().await?;
        let current = state_in(&mut tx, id)
            .await?
            .ok_or_else(|| Error::not_found(format!("investigation {id} not found")))?;
        if current != InvestigationState::Investigating {
            let saved = sqlx::query("SELECT 1 FROM proposals WHERE investigation_id = $1")
                .bind(&id.0)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_error)?;
            if saved.is_some() {
                return Ok(false);
            }
        }
        move_state(
            &mut tx,
            id,
            InvestigationState::Investigating,
            InvestigationState::Verifying,
            None,
        )
        .await?;
        sqlx::query(
            "INSERT INTO proposals (investigation_id, classification, proposal, bad, test_command, deadline) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&id.0)
        .bind(&record.classification)
        .bind(&record.proposal)
        .bind(&record.bad)
        .bind(&record.test_command)
        .bind(record.deadline)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        for h in hypotheses {
            Shared::<Postgres>::insert_hypothesis(&mut tx, id, h).await?;
        }
        tx.commit().await.map_err(db_error)?;
        Ok(true)
    }

    /// Stores a verifier's result for one hypothesis exactly once per
    /// `message_id`: the hypothesis row is updated and its experiments
    /// replaced in the same transaction that records the message — only
    /// while the hypothesis is PENDING. The investigation's row is locked
    /// first, so this and [`PgStore::save_decision`] never interleave: a
    /// result that arrives after the decision is [`Recorded::Late`].
    ///
    /// `follow_up`, a PENDING hypothesis this result calls for (a repair
    /// after a revert that was not verified), is proposed in the same
    /// transaction: the arbiter, which decides once nothing is pending, can
    /// never see the result without it.
    pub async fn record_verification(
        &self,
        consumer: &str,
        message_id: &str,
        hypothesis: &Hypothesis,
        verifier: &str,
        follow_up: Option<&Hypothesis>,
    ) -> Result<Recorded> {
        let body = serde_json::to_value(hypothesis)
            .map_err(|e| Error::internal(format!("cannot encode hypothesis: {e}")))?;
        let mut tx = self.begin().await?;
        let investigation: String =
            sqlx::query_scalar("SELECT investigation_id FROM hypotheses WHERE id = $1")
                .bind(&hypothesis.id.0)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_error)?
                .ok_or_else(|| {
                    Error::not_found(format!("hypothesis {} was never proposed", hypothesis.id))
                })?;
        let investigation = InvestigationId(investigation);
        // Lock order: the investigation, then its hypothesis (as save_decision).
        let state = state_in(&mut tx, &investigation).await?;
        if !record_once(&mut tx, consumer, message_id).await? {
            return Ok(Recorded::AlreadyRecorded);
        }
        let mut stored = 0;
        if state == Some(InvestigationState::Verifying) {
            stored = sqlx::query(
                "UPDATE hypotheses SET status = $1, summary = $2, patch = $3, branch = $4, body = $5, verified_by = $6 \
                 WHERE id = $7 AND status = $8",
            )
            .bind(hypothesis.status.as_str())
            .bind(&hypothesis.summary)
            .bind(&hypothesis.patch)
            .bind(&hypothesis.branch)
            .bind(&body)
            .bind(verifier)
            .bind(&hypothesis.id.0)
            .bind(HypothesisStatus::Pending.as_str())
            .execute(&mut *tx)
            .await
            .map_err(db_error)?
            .rows_affected();
        }
        if stored == 0 {
            sqlx::query(
                "INSERT INTO late_verifications (hypothesis_id, message_id, verifier, status, body) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
            )
            .bind(&hypothesis.id.0)
            .bind(message_id)
            .bind(verifier)
            .bind(hypothesis.status.as_str())
            .bind(&body)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
            tx.commit().await.map_err(db_error)?;
            return Ok(Recorded::Late);
        }
        sqlx::query("DELETE FROM experiments WHERE hypothesis_id = $1")
            .bind(&hypothesis.id.0)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        Shared::<Postgres>::insert_experiments(&mut tx, hypothesis).await?;
        if let Some(next) = follow_up {
            Shared::<Postgres>::insert_hypothesis(&mut tx, &investigation, next).await?;
        }
        tx.commit().await.map_err(db_error)?;
        Ok(Recorded::Stored)
    }

    /// Verifier results that came after their hypothesis was decided.
    pub async fn late_verifications(&self, id: &HypothesisId) -> Result<i64> {
        sqlx::query_scalar("SELECT count(*) FROM late_verifications WHERE hypothesis_id = $1")
            .bind(&id.0)
            .fetch_one(self.pool())
            .await
            .map_err(db_error)
    }

    /// The hypotheses of one investigation, ordered by number.
    pub async fn hypotheses(&self, id: &InvestigationId) -> Result<Vec<Hypothesis>> {
        let rows = sqlx::query(
            "SELECT body FROM hypotheses WHERE investigation_id = $1 AND body IS NOT NULL ORDER BY number",
        )
        .bind(&id.0)
        .fetch_all(self.pool())
        .await
        .map_err(db_error)?;
        rows.into_iter()
            .map(|r| hypothesis_from(r.get(0)))
            .collect()
    }

    /// One hypothesis with its experiments.
    pub async fn hypothesis(&self, id: &HypothesisId) -> Result<Option<Hypothesis>> {
        let row = sqlx::query("SELECT body FROM hypotheses WHERE id = $1 AND body IS NOT NULL")
            .bind(&id.0)
            .fetch_optional(self.pool())
            .await
            .map_err(db_error)?;
        row.map(|r| hypothesis_from(r.get(0))).transpose()
    }

    /// Experiment rows stored for one hypothesis (to check nothing is duplicated).
    pub async fn experiment_count(&self, id: &HypothesisId) -> Result<i64> {
        let row = sqlx::query("SELECT count(*) FROM experiments WHERE hypothesis_id = $1")
            .bind(&id.0)
            .fetch_one(self.pool())
            .await
            .map_err(db_error)?;
        Ok(row.get(0))
    }

    /// Messages `consumer` recorded as processed (each exactly once).
    pub async fn processed_count(&self, consumer: &str) -> Result<i64> {
        let row = sqlx::query("SELECT count(*) FROM processed_messages WHERE consumer = $1")
            .bind(consumer)
            .fetch_one(self.pool())
            .await
            .map_err(db_error)?;
        Ok(row.get(0))
    }

    /// Which verifier stored the result of a hypothesis.
    pub async fn verified_by(&self, id: &HypothesisId) -> Result<Option<String>> {
        let row = sqlx::query("SELECT verified_by FROM hypotheses WHERE id = $1")
            .bind(&id.0)
            .fetch_optional(self.pool())
            .await
            .map_err(db_error)?;
        Ok(row.and_then(|r| r.get(0)))
    }

    /// What the arbiter needs; `None` before the investigator proposed.
    pub async fn arbitration_input(
        &self,
        id: &InvestigationId,
    ) -> Result<Option<ArbitrationInput>> {
        let row = sqlx::query(
            "SELECT i.state, i.repository, i.created_at, p.classification, p.proposal, p.bad, p.test_command, p.deadline FROM investigations i JOIN proposals p ON p.investigation_id = i.id WHERE i.id = $1",
        )
        .bind(&id.0)
        .fetch_optional(self.pool())
        .await
        .map_err(db_error)?;
        let Some(r) = row else { return Ok(None) };
        Ok(Some(ArbitrationInput {
            state: InvestigationState::from_str(&r.get::<String, _>(0))?,
            repository: r.get(1),
            created_at: r.get(2),
            proposal: ProposalRecord {
                classification: r.get(3),
                proposal: r.get(4),
                bad: r.get(5),
                test_command: r.get(6),
                deadline: r.get(7),
            },
            hypotheses: self.hypotheses(id).await?,
        }))
    }

    /// VERIFYING → ARBITRATING → WAITING_FOR_REVIEW with the report, in one
    /// transaction that also marks `expired` (the hypotheses the arbiter
    /// read as PENDING and decided without, at the deadline) as the report
    /// has them, and puts `announce` (the `decided` event) in the outbox.
    /// `Ok(false)` when another arbiter (or a redelivery) decided first; a
    /// Conflict when a verifier stored one of `expired` after the arbiter
    /// read it (decide again with it).
    pub async fn save_decision(
        &self,
        report: &Report,
        expired: &[HypothesisId],
        announce: &OutboxMessage,
    ) -> Result<bool> {
        use InvestigationState::*;
        let id = &report.id;
        let mut tx = self.begin().await?;
        let current = state_in(&mut tx, id)
            .await?
            .ok_or_else(|| Error::not_found(format!("investigation {id} not found")))?;
        if current != Verifying {
            return Ok(false);
        }
        for hid in expired {
            let decided = report
                .hypotheses
                .iter()
                .find(|h| &h.id == hid)
                .ok_or_else(|| {
                    Error::internal(format!("expired hypothesis {hid} is not in the report"))
                })?;
            let body = serde_json::to_value(decided)
                .map_err(|e| Error::internal(format!("cannot encode hypothesis: {e}")))?;
            let updated = sqlx::query(
                "UPDATE hypotheses SET status = $1, body = $2 WHERE id = $3 AND status = $4",
            )
            .bind(decided.status.as_str())
            .bind(&body)
            .bind(&hid.0)
            .bind(HypothesisStatus::Pending.as_str())
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
            if updated.rows_affected() == 0 {
                return Err(Error::conflict(format!(
                    "hypothesis {hid} of {id} was verified after the arbiter read it"
                )));
            }
        }
        move_state(&mut tx, id, Verifying, Arbitrating, None).await?;
        move_state(&mut tx, id, Arbitrating, WaitingForReview, None).await?;
        let body = serde_json::to_value(report)
            .map_err(|e| Error::internal(format!("cannot encode report: {e}")))?;
        sqlx::query(
            "UPDATE investigations SET report = $1, verdict = $2, culprit = $3, updated_at = now() WHERE id = $4",
        )
        .bind(&body)
        .bind(report.verdict.as_str())
        .bind(report.culprit.as_ref().map(|c| c.commit.commit.clone()))
        .bind(&id.0)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        enqueue(&mut tx, announce).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(true)
    }

    /// Investigations still VERIFYING whose deadline passed.
    pub async fn overdue(&self, now: OffsetDateTime, limit: u32) -> Result<Vec<InvestigationId>> {
        let rows = sqlx::query(
            "SELECT i.id FROM investigations i JOIN proposals p ON p.investigation_id = i.id WHERE i.state = $1 AND p.deadline < $2 ORDER BY p.deadline LIMIT $3",
        )
        .bind(InvestigationState::Verifying.as_str())
        .bind(now)
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await
        .map_err(db_error)?;
        Ok(rows
            .into_iter()
            .map(|r| InvestigationId(r.get(0)))
            .collect())
    }

    /// How many investigations are in each state (states with none are
    /// absent), for the `tracelab_investigations{state}` gauge.
    pub async fn counts_by_state(&self) -> Result<Vec<(String, i64)>> {
        let rows = sqlx::query("SELECT state, count(*) FROM investigations GROUP BY state")
            .fetch_all(self.pool())
            .await
            .map_err(db_error)?;
        Ok(rows.into_iter().map(|r| (r.get(0), r.get(1))).collect())
    }
}
