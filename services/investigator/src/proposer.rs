//! The investigator's proposer: one `requested` event → a proposal.
//!
//! State on entry decides what happens, so a redelivery (after a crash or a
//! lost ack) never duplicates work or events:
//!
//! | stored state | action |
//! |---|---|
//! | CREATED, CONTEXT_LOADING, INVESTIGATING | (re)run reproduction and agents, save the proposal, publish; the culprit search resumes from the probe journal |
//! | VERIFYING | the proposal is stored: publish its jobs again (same message ids, so de-duplicated) |
//! | later or terminal | nothing |
//!
//! Failures of the investigation itself (the test cannot run, a bad
//! revision) end it FAILED or BLOCKED and the message is acked; failures of
//! the infrastructure (store, bus) are returned so the message is retried.

use std::sync::Arc;
use std::time::Duration;
use tracelab_bus::{Bus, Delivery, JetStreamBus};
use tracelab_domain::hypothesis::{Hypothesis, HypothesisStatus};
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::ports::SandboxProvider;
use tracelab_domain::state::InvestigationState;
use tracelab_domain::{Error, Result};
use tracelab_engine::InvestigateRequest;
use tracelab_engine::agents::experience::Experience;
use tracelab_engine::agents::test_behaviour::Classification;
use tracelab_engine::investigate::end_state_for;
use tracelab_engine::phases::{
    Proposal, propose, propose_experience, propose_repair, proposed_revert, reproduce,
};
use tracelab_engine::session::{Session, prepare};
use tracelab_fleet::events::{self, ids, steps};
use tracelab_fleet::repositories::{self, Repositories};
use tracelab_fleet::sandbox::{SandboxSettings, engine_config};
use tracelab_proto::events::v1::{
    HypothesesProposed, HypothesisKind, InvestigationRequested, Limits, VerifyJob,
};
use tracelab_store::{ExperienceStore, PgStore, ProposalRecord};

pub struct Investigator {
    pub bus: Arc<JetStreamBus>,
    pub store: PgStore,
    pub sandboxes: Arc<dyn SandboxProvider>,
    pub sandbox: SandboxSettings,
    pub verification_deadline: Duration,
    /// Fetches the repository an event names into this process's cache.
    pub repositories: Repositories,
}

/// What the agents produced, ready to store and publish.
struct Outcome {
    classification: Classification,
    proposal: Proposal,
    hypotheses: Vec<Hypothesis>,
    bad: String,
    test_command: String,
}

impl Investigator {
    pub async fn handle(&self, delivery: Arc<Delivery>) -> Result<()> {
        let event: InvestigationRequested = events::decode(&delivery)?;
        let id = InvestigationId(event.investigation_id.clone());
        let row = self
            .store
            .investigation(&id)
            .await?
            .ok_or_else(|| Error::not_found(format!("investigation {id} is not stored yet")))?;
        use InvestigationState::*;
        match row.state {
            Created | ContextLoading | Investigating => {}
            Verifying => return self.announce(&event).await,
            _ => return Ok(()),
        }
        if row.state == Created {
            self.store
                .advance(&id, Created, ContextLoading, None)
                .await?;
        }
        match self.investigate(&event, &id).await {
            Ok(outcome) => {
                let record = ProposalRecord {
                    classification: to_json(&outcome.classification)?,
                    proposal: to_json(&outcome.proposal)?,
                    bad: outcome.bad.clone(),
                    test_command: outcome.test_command.clone(),
                    deadline: time::OffsetDateTime::now_utc() + self.deadline(&event),
                };
                self.store
                    .save_proposal(&id, &record, &outcome.hypotheses)
                    .await?;
                self.announce(&event).await
            }
            Err(Failure::Investigation(e)) => {
                let end = end_state_for(&e);
                tracing::warn!(investigation = %id, error = %e, ?end, "investigation ended without a diagnosis");
                self.store.abort(&id, end, &e.message).await?;
                Ok(())
            }
            Err(Failure::Infrastructure(e)) => Err(e),
        }
    }

    fn deadline(&self, event: &InvestigationRequested) -> Duration {
        match event.limits.as_ref().map(|l| l.verification_deadline_ms) {
            Some(ms) if ms > 0 => Duration::from_millis(ms),
            _ => self.verification_deadline,
        }
    }

    async fn investigate(
        &self,
        event: &InvestigationRequested,
        id: &InvestigationId,
    ) -> std::result::Result<Outcome, Failure> {
        use Failure::*;
        let mut config =
            engine_config(event.limits.as_ref(), &self.sandbox).map_err(Investigation)?;
        config.experience = self
            .experience(&event.repository)
            .await
            .map_err(Infrastructure)?;
        // A URL is fetched into this process's mirror cache and the
        // revisions resolved there (`main` is the server's main now).
        let bad = Some(event.bad.as_str())
            .filter(|s| !s.is_empty())
            .unwrap_or("HEAD");
        let good = Some(event.good.as_str()).filter(|s| !s.is_empty());
        let wanted: Vec<&str> = std::iter::once(bad).chain(good).collect();
        let checkout = self
            .repositories
            .checkout(&event.repository, &wanted)
            .await
            .map_err(|e| match repositories::is_final(&e) {
                true => Investigation(e),
                false => Infrastructure(e),
            })?;
        let request = InvestigateRequest {
            repo: checkout.path.clone(),
            test_command: event.test_command.clone(),
            good: good.map(|_| checkout.resolved[1].clone()),
            bad: Some(checkout.resolved[0].clone()),
            issue_id: Some(event.issue_id.clone()).filter(|s| !s.is_empty()),
        };
        let prepared = prepare(&config, &request).await.map_err(Investigation)?;
        let good = prepared.good.clone();
        let session = Session::open(
            id.clone(),
            request.issue_id.clone(),
            prepared,
            config,
            self.sandboxes.clone(),
            Arc::new(tracelab_engine::Silent),
        )
        .map_err(Investigation)?
        // A redelivered investigation resumes its culprit search from the
        // judgements the investigator that died had journaled.
        .with_journal(Arc::new(self.store.clone()))
        .await
        .map_err(Infrastructure)?;
        if let Some(journal) = session.ctx.journal.as_ref().filter(|j| j.loaded() > 0) {
            tracing::info!(investigation = %id, judgements = journal.loaded(), "resuming the culprit search from journaled probes");
        }
        let result = self.agents(&session, id, good).await;
        session.close(None).await;
        result
    }

    async fn agents(
        &self,
        session: &Session,
        id: &InvestigationId,
        good: Option<String>,
    ) -> std::result::Result<Outcome, Failure> {
        use Failure::*;
        use InvestigationState::*;
        let ctx = &session.ctx;
        let started = std::time::Instant::now();
        let reproduction = reproduce(ctx, good.as_deref())
            .await
            .map_err(Investigation)?;
        phase_seconds("reproduce", started);
        self.store
            .advance(id, ContextLoading, Investigating, None)
            .await
            .map_err(Infrastructure)?;
        let started = std::time::Instant::now();
        let (classification, mut proposal) = propose(ctx, reproduction, good)
            .await
            .map_err(Investigation)?;
        phase_seconds("propose", started);
        let mut hypotheses = proposal.hypotheses.clone();
        if let Some(candidate) = &proposal.revert {
            hypotheses.push(
                proposed_revert(ctx, candidate)
                    .await
                    .map_err(Investigation)?,
            );
        }
        hypotheses.sort_by_key(|h| h.number);
        // A past repair retrieved for the failure is a verifier's job too.
        if let Some(h) = propose_experience(ctx, &classification, &mut proposal, &hypotheses) {
            hypotheses.push(h);
        }
        // The suspects' repair is a verifier's job: at once when there is no
        // culprit to revert, else by the revert's verifier if the revert is
        // not verified (`repair_after_revert`).
        if let Some(h) = propose_repair(ctx, &classification, &mut proposal, &hypotheses) {
            hypotheses.push(h);
        }
        Ok(Outcome {
            classification,
            proposal,
            hypotheses,
            bad: ctx.bad.clone(),
            test_command: ctx.test.display(),
        })
    }

    /// The fleet's experience records for the experience agent (all of
    /// them: the scope rules keep L1 and L2 to this repository, keyed as
    /// the fleet admitted it), or `None` when there are none.
    async fn experience(&self, repository: &str) -> Result<Option<Arc<Experience>>> {
        let records = self.store.experience(None).await?;
        Ok((!records.is_empty()).then(|| {
            Arc::new(Experience {
                records,
                workflow: None,
                repository: Some(repository.to_string()),
            })
        }))
    }

    /// Publishes the verify jobs of the stored proposal and `…arbitrate.proposed`.
    /// Message ids make a repeat harmless.
    async fn announce(&self, event: &InvestigationRequested) -> Result<()> {
        let id = InvestigationId(event.investigation_id.clone());
        let input = self
            .store
            .arbitration_input(&id)
            .await?
            .ok_or_else(|| Error::not_found(format!("proposal of {id} is not stored")))?;
        let proposal: Proposal = serde_json::from_value(input.proposal.proposal.clone())
            .map_err(|e| Error::internal(format!("stored proposal of {id}: {e}")))?;
        let classification = serde_json::to_vec(&input.proposal.classification)
            .map_err(|e| Error::internal(format!("classification of {id}: {e}")))?;
        let topology = self.bus.topology().clone();
        let mut pending = Vec::new();
        let mut jobs = Vec::new();
        let proposed = |number: u32| {
            input
                .hypotheses
                .iter()
                .find(|h| h.number == number)
                .ok_or_else(|| Error::internal(format!("hypothesis {number} of {id} is missing")))
        };
        if let Some(candidate) = &proposal.revert {
            let hypothesis = proposed(candidate.number)?;
            if hypothesis.status == HypothesisStatus::Pending {
                let (follow_up_number, suspects_json) = match &proposal.repair_after_revert {
                    Some(repair) => (
                        repair.number,
                        serde_json::to_vec(&proposal.suspects)
                            .map_err(|e| Error::internal(format!("suspects of {id}: {e}")))?,
                    ),
                    None => (0, Vec::new()),
                };
                let job = VerifyJob {
                    investigation_id: id.0.clone(),
                    hypothesis_id: hypothesis.id.0.clone(),
                    number: candidate.number,
                    kind: HypothesisKind::Revert as i32,
                    repository: event.repository.clone(),
                    test_command: event.test_command.clone(),
                    bad: input.proposal.bad.clone(),
                    issue_id: event.issue_id.clone(),
                    culprit: candidate.culprit.clone(),
                    passes_needed: candidate.passes_needed,
                    rates_json: candidate
                        .rates
                        .map(|r| serde_json::to_vec(&r).expect("rates serialise"))
                        .unwrap_or_default(),
                    classification_json: classification.clone(),
                    limits: event.limits.or(Some(Limits::default())),
                    suspects_json,
                    follow_up_number,
                };
                jobs.push(job);
            }
        }
        let repairs = [
            (&proposal.experience, HypothesisKind::Experience),
            (&proposal.repair, HypothesisKind::Repair),
        ];
        for (candidate, kind) in repairs {
            let Some(candidate) = candidate else { continue };
            let hypothesis = proposed(candidate.number)?;
            if hypothesis.status == HypothesisStatus::Pending {
                let suspects = serde_json::to_vec(&proposal.suspects)
                    .map_err(|e| Error::internal(format!("suspects of {id}: {e}")))?;
                jobs.push(VerifyJob {
                    investigation_id: id.0.clone(),
                    hypothesis_id: hypothesis.id.0.clone(),
                    number: candidate.number,
                    kind: kind as i32,
                    repository: event.repository.clone(),
                    test_command: event.test_command.clone(),
                    bad: input.proposal.bad.clone(),
                    issue_id: event.issue_id.clone(),
                    culprit: String::new(),
                    passes_needed: 1,
                    classification_json: classification.clone(),
                    limits: event.limits.or(Some(Limits::default())),
                    suspects_json: suspects,
                    follow_up_number: 0,
                    rates_json: Vec::new(),
                });
            }
        }
        for job in jobs {
            events::publish(
                self.bus.as_ref() as &dyn Bus,
                topology.verify_jobs(),
                ids::verify_job(&job.hypothesis_id),
                &job,
            )
            .await?;
            pending.push(job.hypothesis_id.clone());
        }
        events::publish(
            self.bus.as_ref() as &dyn Bus,
            topology.investigation_step(&id.0, steps::PROPOSED),
            ids::proposed(&id.0),
            &HypothesesProposed {
                investigation_id: id.0.clone(),
                pending_hypothesis_ids: pending,
                deadline_unix_ms: (input.proposal.deadline.unix_timestamp_nanos() / 1_000_000)
                    as i64,
            },
        )
        .await?;
        tracing::info!(investigation = %id, hypotheses = input.hypotheses.len(), "proposal published");
        Ok(())
    }
}

enum Failure {
    /// The investigation cannot go on (ends FAILED or BLOCKED).
    Investigation(Error),
    /// A dependency failed; retry the message.
    Infrastructure(Error),
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<serde_json::Value> {
    serde_json::to_value(value).map_err(|e| Error::internal(format!("cannot encode: {e}")))
}

/// `tracelab_phase_seconds{phase}`: how long one phase of an investigation
/// took in this service (the verifier records `verify`).
fn phase_seconds(phase: &'static str, started: std::time::Instant) {
    metrics::histogram!("tracelab_phase_seconds", "phase" => phase)
        .record(started.elapsed().as_secs_f64());
}
