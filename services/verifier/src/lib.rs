//! The verifier: a worker on the `tracelab.jobs.verify` work queue. Each job
//! is one hypothesis; the verifier opens its own worktree and sandbox on the
//! repository, runs the verification contract, and stores the hypothesis
//! with its experiments in one transaction keyed by the job's message id —
//! then publishes `…arbitrate.verified.<n>` and acks. A job redelivered after
//! a crash is run again from scratch (nothing of it was committed); a job
//! whose result is already stored is only re-announced and acked.

use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
use tracelab_bus::{Bus, ConsumerSpec, Delivery};
use tracelab_domain::hypothesis::HypothesisStatus;
use tracelab_domain::ids::{HypothesisId, InvestigationId};
use tracelab_domain::ports::{ChatModel, SandboxProvider};
use tracelab_domain::{Error, Result};
use tracelab_engine::InvestigateRequest;
use tracelab_engine::RepairMode;
use tracelab_engine::agents::experience::{self, Experience};
use tracelab_engine::agents::test_behaviour::Classification;
use tracelab_engine::phases::{RevertCandidate, pending_repair, verify_candidate};
use tracelab_engine::session::{Session, prepare};
use tracelab_fleet::events::{self, ids, steps};
use tracelab_fleet::repositories::Repositories;
use tracelab_fleet::sandbox::{SandboxSettings, engine_config};
use tracelab_fleet::worker::{self, WorkerOptions};
use tracelab_fleet::{FleetSettings, connect};
use tracelab_llm::LlmServer;
use tracelab_proto::events::v1::{HypothesisKind, HypothesisVerified, VerifyJob};
use tracelab_service::health;
use tracelab_service::{Shutdown, http};
use tracelab_store::{ExperienceStore, PgStore, Recorded};

/// The durable consumer every verifier shares (a work queue: one job, one verifier).
pub const DURABLE: &str = "verifier";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Settings {
    pub fleet: FleetSettings,
    /// Health and readiness endpoints.
    pub listen: String,
    /// Jobs this process runs at once.
    pub concurrency: usize,
    /// A job not progress-acked for this long is redelivered to another verifier.
    pub ack_wait_seconds: u64,
    pub max_deliveries: u32,
    /// Names this process in stored results; empty = `verifier-<pid>`.
    pub name: String,
    pub sandbox: SandboxSettings,
    pub repair: RepairSettings,
}

/// Where this verifier's repair hypotheses get their fixes (the embedded
/// mode's `--repair`, `--repair-budget`, `--llm-*` and `TRACELAB_LLM_*`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct RepairSettings {
    /// `templates` (offline, the default), `llm`, `all` or `off`.
    pub mode: RepairMode,
    /// Wall time for screening candidate edits with the failing test.
    pub screening_budget_seconds: u64,
    /// Tokens (prompt and reply) the LLM patch agent may use per hypothesis.
    pub llm_token_budget: u64,
    /// Wall time the LLM patch agent may use per hypothesis.
    pub llm_budget_seconds: u64,
    /// The model server for `llm` and `all`; its key from a mounted file
    /// (`TRACELAB__REPAIR__LLM__API_KEY_FILE`).
    pub llm: LlmServer,
}

impl Default for RepairSettings {
    fn default() -> Self {
        let engine = tracelab_engine::EngineConfig::default();
        Self {
            mode: engine.repair,
            screening_budget_seconds: engine.repair_screening_budget.as_secs(),
            llm_token_budget: engine.llm_token_budget,
            llm_budget_seconds: engine.llm_wall_budget.as_secs(),
            llm: LlmServer::default(),
        }
    }
}

impl RepairSettings {
    /// The model client when the mode uses one: a mode that needs a server
    /// without one configured stops the verifier at start, not at its first job.
    fn chat_model(&self) -> Result<Option<Arc<dyn ChatModel>>> {
        if !self.mode.model() {
            return Ok(None);
        }
        Ok(Some(Arc::new(self.llm.client("repair.llm")?)))
    }

    fn apply(&self, config: &mut tracelab_engine::EngineConfig, model: Option<Arc<dyn ChatModel>>) {
        config.repair = self.mode;
        config.repair_screening_budget = Duration::from_secs(self.screening_budget_seconds);
        config.llm_token_budget = self.llm_token_budget;
        config.llm_wall_budget = Duration::from_secs(self.llm_budget_seconds);
        config.chat_model = model;
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            fleet: FleetSettings::default(),
            listen: "127.0.0.1:8083".into(),
            concurrency: 1,
            ack_wait_seconds: 30,
            max_deliveries: 5,
            name: String::new(),
            sandbox: SandboxSettings::default(),
            repair: RepairSettings::default(),
        }
    }
}

struct Verifier {
    name: String,
    bus: Arc<dyn Bus>,
    store: PgStore,
    sandboxes: Arc<dyn SandboxProvider>,
    sandbox: SandboxSettings,
    /// This verifier's own mirror cache: a job names a URL and revisions,
    /// and each verifier fetches them, on whatever machine it runs.
    repositories: Repositories,
    repair: RepairSettings,
    chat_model: Option<Arc<dyn ChatModel>>,
}

/// Runs the verifier until `shutdown`; in-flight jobs finish first.
pub async fn run(settings: Settings, shutdown: Shutdown) -> anyhow::Result<()> {
    let chat_model = settings.repair.chat_model()?;
    let repositories = Repositories::new(&settings.fleet.repositories)?;
    let listener = http::bind(&settings.listen).await?;
    let store = connect::store(&settings.fleet, &shutdown).await?;
    let bus = connect::bus(&settings.fleet, &shutdown).await?;
    let name = if settings.name.is_empty() {
        format!("verifier-{}", std::process::id())
    } else {
        settings.name.clone()
    };
    let readiness = tracelab_fleet::ready::readiness(&shutdown, &store, &bus);
    let server = tokio::spawn(http::serve(
        listener,
        health::routes(readiness),
        shutdown.clone(),
    ));
    let verifier = Arc::new(Verifier {
        name,
        bus: bus.clone(),
        store,
        sandboxes: tracelab_fleet::sandbox::provider(&settings.sandbox).await?,
        sandbox: settings.sandbox.clone(),
        repositories,
        repair: settings.repair.clone(),
        chat_model,
    });
    let topology = settings.fleet.topology();
    let spec = worker::with_delivery(
        ConsumerSpec::new(topology.verify_jobs_stream(), DURABLE),
        settings.ack_wait_seconds,
        settings.max_deliveries,
    );
    let options = WorkerOptions {
        name: verifier.name.clone(),
        drain: Duration::from_secs(settings.fleet.drain_seconds),
    };
    tracing::info!(name = %verifier.name, concurrency = settings.concurrency, "verifier ready");
    worker::run_pool(
        settings.concurrency,
        bus.clone(),
        spec,
        options,
        shutdown.clone(),
        move |delivery| {
            let verifier = verifier.clone();
            async move { verifier.handle(delivery).await }
        },
    )
    .await?;
    server.await??;
    Ok(())
}

impl Verifier {
    async fn handle(&self, delivery: Arc<Delivery>) -> Result<()> {
        let job: VerifyJob = events::decode(&delivery)?;
        if !matches!(
            job.kind(),
            HypothesisKind::Revert | HypothesisKind::Repair | HypothesisKind::Experience
        ) {
            return Err(Error::invalid(format!(
                "verify job {} has kind {:?}; this verifier proves REVERT, REPAIR and EXPERIENCE hypotheses",
                job.hypothesis_id,
                job.kind()
            )));
        }
        let hypothesis_id = HypothesisId(job.hypothesis_id.clone());
        let stored = self
            .store
            .hypothesis(&hypothesis_id)
            .await?
            .ok_or_else(|| {
                Error::not_found(format!("hypothesis {hypothesis_id} is not stored yet"))
            })?;
        if stored.status == HypothesisStatus::Pending {
            tracing::info!(hypothesis = %hypothesis_id, delivered = delivery.delivered, "verifying");
            let started = std::time::Instant::now();
            let (hypothesis, follow_up) = self.verify(&job).await?;
            let seconds = started.elapsed().as_secs_f64();
            metrics::histogram!("tracelab_verification_seconds").record(seconds);
            metrics::histogram!("tracelab_phase_seconds", "phase" => "verify").record(seconds);
            let recorded = self
                .store
                .record_verification(
                    DURABLE,
                    &delivery.message.id,
                    &hypothesis,
                    &self.name,
                    follow_up.as_ref(),
                )
                .await?;
            metrics::counter!(
                "tracelab_verifications_total",
                "status" => hypothesis.status.as_str(),
                "recorded" => match recorded {
                    Recorded::Stored => "stored",
                    Recorded::AlreadyRecorded => "already",
                    Recorded::Late => "late",
                }
            )
            .increment(1);
            match recorded {
                Recorded::Late => {
                    tracing::warn!(hypothesis = %hypothesis.id, status = hypothesis.status.as_str(), "verified after the investigation was decided: kept as a late result")
                }
                _ => {
                    tracing::info!(hypothesis = %hypothesis.id, status = hypothesis.status.as_str(), ?recorded, "verified")
                }
            }
        }
        self.announce_follow_up(&job).await?;
        let status = self
            .store
            .hypothesis(&hypothesis_id)
            .await?
            .map(|h| h.status.as_str().to_string())
            .unwrap_or_default();
        let topology = self.bus.topology();
        events::publish(
            self.bus.as_ref(),
            topology.investigation_step(&job.investigation_id, &steps::verified(job.number)),
            ids::verified(&job.hypothesis_id),
            &HypothesisVerified {
                investigation_id: job.investigation_id.clone(),
                hypothesis_id: job.hypothesis_id.clone(),
                status,
                verifier: self.name.clone(),
            },
        )
        .await?;
        Ok(())
    }

    /// Publishes the repair job a revert that was not verified proposed
    /// (stored with its result), also when the job is redelivered after a
    /// crash between the two: the message id makes a repeat harmless.
    async fn announce_follow_up(&self, job: &VerifyJob) -> Result<()> {
        if job.follow_up_number == 0 {
            return Ok(());
        }
        let investigation = InvestigationId(job.investigation_id.clone());
        let id = HypothesisId::new(&investigation, job.follow_up_number);
        let pending = self
            .store
            .hypothesis(&id)
            .await?
            .is_some_and(|h| h.status == HypothesisStatus::Pending);
        if !pending {
            return Ok(());
        }
        let repair = VerifyJob {
            hypothesis_id: id.0.clone(),
            number: job.follow_up_number,
            kind: HypothesisKind::Repair as i32,
            passes_needed: 1,
            follow_up_number: 0,
            rates_json: Vec::new(),
            ..job.clone()
        };
        events::publish(
            self.bus.as_ref(),
            self.bus.topology().verify_jobs(),
            ids::verify_job(&repair.hypothesis_id),
            &repair,
        )
        .await?;
        tracing::info!(hypothesis = %id, "the revert was not verified: repair proposed");
        Ok(())
    }

    /// Runs the job's hypothesis; for a revert with a follow-up that is not
    /// verified, also the repair hypothesis it calls for (PENDING).
    async fn verify(
        &self,
        job: &VerifyJob,
    ) -> Result<(
        tracelab_domain::hypothesis::Hypothesis,
        Option<tracelab_domain::hypothesis::Hypothesis>,
    )> {
        let classification: Classification = serde_json::from_slice(&job.classification_json)
            .map_err(|e| {
                Error::invalid(format!(
                    "verify job {}: classification: {e}",
                    job.hypothesis_id
                ))
            })?;
        let mut config = engine_config(job.limits.as_ref(), &self.sandbox)?;
        config.parallelism = 1;
        self.repair.apply(&mut config, self.chat_model.clone());
        // The experience agent reuses the records; the LLM patch agent shows
        // them in its prompt as past fixes of the same failure.
        if job.kind() == HypothesisKind::Experience
            || (job.kind() == HypothesisKind::Repair && config.repair.model())
        {
            config.experience = Some(Arc::new(self.experience(&job.repository).await?));
        }
        let checkout = self
            .repositories
            .checkout(&job.repository, &[&job.bad])
            .await?;
        let request = InvestigateRequest {
            repo: checkout.path.clone(),
            test_command: job.test_command.clone(),
            good: None,
            bad: Some(job.bad.clone()),
            issue_id: Some(job.issue_id.clone()).filter(|s| !s.is_empty()),
        };
        let prepared = prepare(&config, &request).await?;
        let session = Session::open(
            InvestigationId(job.investigation_id.clone()),
            request.issue_id.clone(),
            prepared,
            config,
            self.sandboxes.clone(),
            Arc::new(tracelab_engine::Silent),
        )?;
        let result = match job.kind() {
            HypothesisKind::Repair => repair_job(&session.ctx, &classification, job).await,
            HypothesisKind::Experience => experience_job(&session.ctx, &classification, job).await,
            _ => {
                let candidate = RevertCandidate {
                    number: job.number,
                    culprit: job.culprit.clone(),
                    passes_needed: job.passes_needed,
                    rates: (!job.rates_json.is_empty())
                        .then(|| serde_json::from_slice(&job.rates_json))
                        .transpose()
                        .map_err(|e| {
                            tracelab_domain::Error::invalid(format!(
                                "the job's rates are not valid JSON: {e}"
                            ))
                        })?,
                };
                verify_candidate(&session.ctx, &classification, &candidate).await
            }
        };
        let follow_up = match &result {
            Ok(h)
                if job.kind() == HypothesisKind::Revert
                    && job.follow_up_number > 0
                    && h.status != HypothesisStatus::Verified
                    && session.ctx.config.repair != RepairMode::Off =>
            {
                Some(pending_repair(&session.ctx, job.follow_up_number))
            }
            _ => None,
        };
        let keep = result
            .as_ref()
            .ok()
            .filter(|h| h.status == HypothesisStatus::Verified)
            .and_then(|h| h.branch.clone());
        session.close(keep.as_deref()).await;
        Ok((result?, follow_up))
    }
}

impl Verifier {
    /// Every stored record (the scope rules keep L1 and L2 to this
    /// repository, L3 from anywhere), keyed by the repository as the fleet
    /// admitted it: the checkout is a mirror in this verifier's cache.
    async fn experience(&self, repository: &str) -> Result<Experience> {
        Ok(Experience {
            records: self.store.experience(None).await?,
            workflow: None,
            repository: Some(repository.to_string()),
        })
    }
}

/// Re-applies and proves the past repairs of the job's failure (the
/// embedded pipeline's experience agent); none applicable is an
/// INCONCLUSIVE hypothesis with the reasons, so the arbiter still gets an
/// answer.
async fn experience_job(
    ctx: &tracelab_engine::context::Context,
    classification: &Classification,
    job: &VerifyJob,
) -> Result<tracelab_domain::hypothesis::Hypothesis> {
    let found = experience::reuse(ctx, classification, job.number).await?;
    if let Some(h) = found.hypothesis {
        return Ok(h);
    }
    let mut h = tracelab_domain::hypothesis::Hypothesis::new(
        HypothesisId(job.hypothesis_id.clone()),
        job.number,
        tracelab_domain::hypothesis::AgentKind::Experience,
        tracelab_domain::hypothesis::HypothesisKind::Patch,
        "a past repair of this failure, re-applied, fixes it (experience)",
    );
    h.status = HypothesisStatus::Inconclusive;
    h.status_reason = if found.notes.is_empty() {
        "experience: no past repair of this failure was retrieved".into()
    } else {
        found.notes.join("; ")
    };
    Ok(h)
}

/// Screens and proves the repair templates of the job's suspects (the
/// embedded pipeline's code); no candidate to prove is an INCONCLUSIVE
/// hypothesis with the reason, so the arbiter still gets an answer.
async fn repair_job(
    ctx: &tracelab_engine::context::Context,
    classification: &Classification,
    job: &VerifyJob,
) -> Result<tracelab_domain::hypothesis::Hypothesis> {
    let suspects: Vec<tracelab_domain::report::Suspect> =
        serde_json::from_slice(&job.suspects_json).map_err(|e| {
            Error::invalid(format!("verify job {}: suspects: {e}", job.hypothesis_id))
        })?;
    // A repair after a revert that was not verified knows the culprit.
    let culprit = (!job.culprit.is_empty()).then_some(job.culprit.as_str());
    match tracelab_engine::repair::repair(ctx, classification, &suspects, job.number, culprit)
        .await?
    {
        Ok(h) => Ok(h),
        Err(note) => {
            let mut h = tracelab_domain::hypothesis::Hypothesis::new(
                HypothesisId(job.hypothesis_id.clone()),
                job.number,
                tracelab_domain::hypothesis::AgentKind::CodePath,
                tracelab_domain::hypothesis::HypothesisKind::Patch,
                "an edit of a suspect function fixes the failure",
            );
            h.status = HypothesisStatus::Inconclusive;
            h.status_reason = note;
            Ok(h)
        }
    }
}

/// The binary's whole `main` (the end-to-end harness builds the same binary).
pub fn main() -> std::process::ExitCode {
    tracelab_service::launch("tracelab-verifier", |s: &Settings| s.fleet.otlp(), run)
}
