//! The embedded pipeline: one process runs reproduction, the agents, the
//! verifier and the arbiter, persisting every state transition.

use crate::agents::code_path;
use crate::config::{EngineConfig, InvestigateRequest};
use crate::context::Context;
use crate::phases::{
    Proposed, behaviour_checks, conclude, numbered, propose_again, propose_awaiting_fix,
    report_behaviour, reproduce, verify_candidate,
};
use crate::progress::Progress;
use crate::repair::repair;
use crate::session::{Prepared, Session, prepare};
use std::sync::Arc;
use std::time::Instant;
use tracelab_domain::hypothesis::HypothesisStatus;
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::ports::{InvestigationStore, SandboxProvider};
use tracelab_domain::report::Report;
use tracelab_domain::sequential::Behaviour;
use tracelab_domain::state::{InvestigationState, Transition};
use tracelab_domain::{Error, ErrorKind, Result};

/// Why an investigation ended without a diagnosis. The investigation (if it
/// was created) is stored as FAILED or BLOCKED with this reason.
#[derive(Debug, Clone)]
pub struct Aborted {
    pub id: Option<InvestigationId>,
    pub error: Error,
}

/// Runs investigations against a store and a sandbox provider.
pub struct Engine {
    pub config: EngineConfig,
    pub store: Arc<dyn InvestigationStore>,
    pub sandboxes: Arc<dyn SandboxProvider>,
    pub progress: Arc<dyn Progress>,
}

struct Tracker<'a> {
    store: &'a dyn InvestigationStore,
    id: InvestigationId,
    state: InvestigationState,
    transitions: Vec<Transition>,
}

impl Tracker<'_> {
    async fn move_to(&mut self, next: InvestigationState, reason: Option<String>) -> Result<()> {
        self.state.transition(next)?;
        let t = Transition {
            from: self.state,
            to: next,
            at: time::OffsetDateTime::now_utc(),
            reason,
        };
        self.store.transition(&self.id, &t).await?;
        self.transitions.push(t);
        self.state = next;
        Ok(())
    }
}

impl Engine {
    /// Runs one investigation to WAITING_FOR_REVIEW (a diagnosis, whatever the
    /// verdict), or returns why it could not.
    pub async fn investigate(
        &self,
        request: InvestigateRequest,
    ) -> std::result::Result<Report, Aborted> {
        self.investigate_as(InvestigationId::generate(), request)
            .await
    }

    /// [`Engine::investigate`] with a caller-chosen id, so the caller can
    /// still name the investigation if it cancels the future.
    pub async fn investigate_as(
        &self,
        id: InvestigationId,
        request: InvestigateRequest,
    ) -> std::result::Result<Report, Aborted> {
        let prepared = prepare(&self.config, &request)
            .await
            .map_err(|error| Aborted { id: None, error })?;
        let started = Instant::now();
        let created_at = time::OffsetDateTime::now_utc();
        let repository = prepared.git.path().display().to_string();
        let test_display = prepared.test.display();
        self.store
            .create(&id, &repository, &test_display)
            .await
            .map_err(|error| Aborted { id: None, error })?;
        let mut tracker = Tracker {
            store: self.store.as_ref(),
            id: id.clone(),
            state: InvestigationState::Created,
            transitions: Vec::new(),
        };
        let outcome = self.run(&mut tracker, &request, prepared).await;
        match outcome {
            Ok(mut report) => {
                report.created_at = created_at;
                report.duration_ms = started.elapsed().as_millis() as u64;
                report.transitions = tracker.transitions.clone();
                report.repository = repository;
                self.store
                    .save_report(&report)
                    .await
                    .map_err(|error| Aborted {
                        id: Some(id.clone()),
                        error,
                    })?;
                Ok(report)
            }
            Err(error) => {
                let end = end_state_for(&error);
                if !tracker.state.is_terminal() {
                    let _ = tracker.move_to(end, Some(error.message.clone())).await;
                }
                Err(Aborted {
                    id: Some(id),
                    error,
                })
            }
        }
    }

    async fn run(
        &self,
        tracker: &mut Tracker<'_>,
        request: &InvestigateRequest,
        prepared: Prepared,
    ) -> Result<Report> {
        let good = prepared.good.clone();
        let session = Session::open(
            tracker.id.clone(),
            request.issue_id.clone(),
            prepared,
            self.config.clone(),
            self.sandboxes.clone(),
            self.progress.clone(),
        )?;
        let result = pipeline(tracker, &session.ctx, good).await;
        let keep = result
            .as_ref()
            .ok()
            .and_then(|r| r.winner.as_ref())
            .and_then(|w| w.branch.clone());
        session.close(keep.as_deref()).await;
        result
    }
}

/// Unavailable or timed-out dependencies block an investigation (it can be
/// retried); anything else fails it.
pub fn end_state_for(error: &Error) -> InvestigationState {
    if error.kind == ErrorKind::Unavailable || error.kind == ErrorKind::Timeout {
        InvestigationState::Blocked
    } else {
        InvestigationState::Failed
    }
}

async fn pipeline(
    tracker: &mut Tracker<'_>,
    ctx: &Context,
    good: Option<String>,
) -> Result<Report> {
    use InvestigationState::*;
    tracker.move_to(ContextLoading, None).await?;
    let reproduction = reproduce(ctx, good.as_deref()).await?;
    tracker.move_to(Investigating, None).await?;
    let Proposed {
        mut classification,
        mut proposal,
        pending,
    } = propose_awaiting_fix(ctx, reproduction, good.clone()).await?;
    tracker.move_to(Verifying, None).await?;
    let mut hypotheses = proposal.hypotheses.clone();
    // The revert's verification (its own sandbox) beside the code index.
    // The order and environment checks (the pool's slots) run beside them
    // only when there is no revert to verify; otherwise they wait for its
    // verdict: a verified revert explains the failure whatever they would
    // find, and on a small machine their runs slow the verification down.
    let verified = async {
        match &proposal.revert {
            Some(candidate) => verify_candidate(ctx, &classification, candidate)
                .await
                .map(Some),
            None => Ok(None),
        }
    };
    let checks_beside = proposal.revert.is_none();
    let checks = async {
        if checks_beside {
            behaviour_checks(ctx, &classification).await.map(Some)
        } else {
            Ok(None)
        }
    };
    let suspects = async {
        Ok(match &proposal.revert {
            Some(r) => code_path::suspects_after_culprit(ctx, &classification, &r.culprit).await,
            None => code_path::suspects(ctx, &classification).await,
        })
    };
    let (revert, checked, suspects) =
        futures::future::try_join3(verified, checks, suspects).await?;
    match suspects {
        Ok(s) => proposal.suspects = s,
        Err(note) => proposal.notes.push(note),
    }
    let revert_verified = revert
        .as_ref()
        .is_some_and(|h| h.status == HypothesisStatus::Verified);
    // A confirmation that counted on the verification's own failures at
    // bad holds only if they happened.
    let confirmed = revert_verified
        && classification
            .fix_confirmation
            .zip(revert.as_ref())
            .is_some_and(|(c, h)| c.holds_for(&h.experiments));
    hypotheses.extend(revert);
    let mut checks_deferred = checked.is_none();
    hypotheses.extend(numbered(
        ctx,
        checked.unwrap_or_default(),
        proposal.next_number(),
    ));
    if let (Some(pending), Some(confirmation)) = (pending, classification.fix_confirmation) {
        if confirmed {
            classification.decision.confident = true;
            proposal.notes.push(confirmation.confirmed_note());
        } else {
            // No fix confirms the few failures: the re-runs go on to the
            // sequential test's own decision.
            ctx.progress
                .report("no verified fix confirms the failures: finishing the re-runs at bad");
            classification = pending.finish(ctx, false).await?;
            classification.fix_confirmation = None;
            report_behaviour(ctx, &classification);
            let why = if revert_verified {
                "whose regression test alone also passed at the bad revision"
            } else {
                "which was not verified"
            };
            proposal.notes.push(format!(
                "the re-runs at bad stopped at {} for the culprit's fix, {why}; they were finished ({} of {} runs failed)",
                confirmation.failures_in_a_row(), classification.counts.failures, classification.counts.runs
            ));
            if classification.decision.behaviour != Behaviour::Deterministic {
                // The search and the behaviour checks assumed a deterministic
                // failure: they run again under the measured behaviour.
                let notes = std::mem::take(&mut proposal.notes);
                let suspects = std::mem::take(&mut proposal.suspects);
                proposal = propose_again(ctx, &classification, good, suspects).await?;
                proposal.notes.splice(0..0, notes);
                hypotheses = proposal.hypotheses.clone();
                // The agents ran again, the behaviour checks among them.
                checks_deferred = false;
                if let Some(candidate) = &proposal.revert {
                    hypotheses.push(verify_candidate(ctx, &classification, candidate).await?);
                }
            }
        }
    }
    if checks_deferred {
        if revert_verified {
            proposal.notes.push(
                "order and environment checks not run: the culprit's revert is verified, which explains the failure (they run when no revert is verified)".into(),
            );
        } else {
            let checked = behaviour_checks(ctx, &classification).await?;
            hypotheses.extend(numbered(ctx, checked, proposal.next_number()));
        }
    }
    if crate::agents::experience::wanted(&ctx.config, &classification, &hypotheses) {
        let number = hypotheses.len() as u32 + 1;
        let found = crate::agents::experience::reuse(ctx, &classification, number).await?;
        hypotheses.extend(found.hypothesis);
        proposal.notes.extend(found.notes);
    }
    if crate::repair::wanted(&ctx.config, &classification, &hypotheses) {
        let number = hypotheses.len() as u32 + 1;
        let culprit = proposal.revert.as_ref().map(|r| r.culprit.as_str());
        match repair(ctx, &classification, &proposal.suspects, number, culprit).await? {
            Ok(h) => hypotheses.push(h),
            Err(note) => proposal.notes.push(note),
        }
    }
    tracker.move_to(Arbitrating, None).await?;
    let report = conclude(
        &ctx.id,
        ctx.test.display(),
        ctx.bad.clone(),
        &classification,
        proposal,
        hypotheses,
    );
    tracker.move_to(WaitingForReview, None).await?;
    ctx.progress
        .report(&format!("verdict: {}", report.verdict.as_str()));
    Ok(Report {
        state: tracker.state,
        ..report
    })
}
