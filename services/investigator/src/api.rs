//! The investigations API, independent of protocol: REST ([`crate::rest`])
//! and gRPC ([`crate::grpc`]) both call these.

use crate::auth::Caller;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tracelab_bus::{Bus, JetStreamBus};
use tracelab_domain::allowlist::Allowlist;
use tracelab_domain::hypothesis::Hypothesis;
use tracelab_domain::ids::{HypothesisId, InvestigationId};
use tracelab_domain::ports::InvestigationStore;
use tracelab_domain::state::{InvestigationState, Transition};
use tracelab_domain::{Error, Result};
use tracelab_fleet::events::{self, ids, steps};
use tracelab_proto::events::v1::{InvestigationRequested, Limits};
use tracelab_store::PgStore;

pub struct Api {
    pub store: PgStore,
    pub bus: Arc<JetStreamBus>,
    pub verification_deadline: Duration,
    /// The commands investigations may run (default plus the service's extra programs).
    pub allowlist: Allowlist,
}

/// `POST /api/investigations`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CreateRequest {
    /// A path the services can read.
    pub repository: String,
    /// The failing test command.
    pub test_command: Option<String>,
    /// Instead of a test command: an evidence id from ingest (not supported yet).
    pub evidence_id: Option<String>,
    /// Last known good revision.
    pub good: Option<String>,
    /// The failing revision or branch; default HEAD.
    #[serde(alias = "base_branch")]
    pub bad: Option<String>,
    /// External issue id for branch names.
    pub issue_id: Option<String>,
    pub parallelism: Option<u32>,
    pub command_timeout_ms: Option<u64>,
    pub max_runs: Option<u32>,
}

/// An investigation as the API shows it. `report` is the Report JSON
/// contract (the same as the embedded `tracelab investigate --format json`)
/// once the arbiter decided.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InvestigationView {
    pub id: String,
    pub state: String,
    pub verdict: Option<String>,
    pub repository: String,
    pub test_command: String,
    pub culprit: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: time::OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: time::OffsetDateTime,
    pub report: Option<Value>,
    /// Every state change so far, with reasons (why it FAILED or BLOCKED).
    pub transitions: Vec<Transition>,
}

fn check_id(id: &str) -> Result<()> {
    let ok = !id.is_empty()
        && id.len() <= 80
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "{id:?} is not an investigation or hypothesis id"
        )))
    }
}

impl Api {
    pub async fn create(
        &self,
        request: CreateRequest,
        caller: &Caller,
    ) -> Result<InvestigationView> {
        if request.repository.trim().is_empty() {
            return Err(Error::invalid("repository is required"));
        }
        let test_command = match (&request.test_command, &request.evidence_id) {
            (Some(t), _) if !t.trim().is_empty() => t.trim().to_string(),
            (_, Some(_)) => {
                return Err(Error::invalid(
                    "starting from an evidence id is not supported yet; give test_command",
                ));
            }
            _ => return Err(Error::invalid("test_command is required")),
        };
        self.allowlist.parse(&test_command)?;
        if !Path::new(&request.repository).join(".git").exists() {
            return Err(Error::invalid(format!(
                "{} is not a git repository the services can read",
                request.repository
            )));
        }
        let id = InvestigationId::generate();
        let body = serde_json::to_value(&request)
            .map_err(|e| Error::internal(format!("cannot encode request: {e}")))?;
        self.store
            .create_requested(&id, &request.repository, &test_command, &body)
            .await?;
        let event = InvestigationRequested {
            investigation_id: id.0.clone(),
            repository: request.repository.clone(),
            test_command,
            good: request.good.clone().unwrap_or_default(),
            bad: request.bad.clone().unwrap_or_default(),
            issue_id: request.issue_id.clone().unwrap_or_default(),
            limits: Some(Limits {
                parallelism: request.parallelism.unwrap_or(0),
                command_timeout_ms: request.command_timeout_ms.unwrap_or(0),
                max_runs: request.max_runs.unwrap_or(0),
                max_hypotheses: 0,
                verification_deadline_ms: self.verification_deadline.as_millis() as u64,
            }),
            requested_by: caller.name.clone(),
        };
        let topology = self.bus.topology().clone();
        let published = events::publish(
            self.bus.as_ref(),
            topology.investigation_step(&id.0, steps::REQUESTED),
            ids::requested(&id.0),
            &event,
        )
        .await;
        if let Err(e) = published {
            let reason = format!("could not queue the investigation: {e}");
            let _ = self
                .store
                .abort(&id, InvestigationState::Blocked, &reason)
                .await;
            return Err(Error::unavailable(reason));
        }
        tracing::info!(investigation = %id, by = %caller.name, "investigation requested");
        self.get(&id.0).await
    }

    pub async fn get(&self, id: &str) -> Result<InvestigationView> {
        check_id(id)?;
        let id = InvestigationId(id.to_string());
        let row = self
            .store
            .investigation(&id)
            .await?
            .ok_or_else(|| Error::not_found(format!("investigation {id} not found")))?;
        let report = match row.report {
            Some(_) => InvestigationStore::get(&self.store, &id)
                .await?
                .map(serde_json::to_value)
                .transpose()
                .map_err(|e| Error::internal(format!("cannot encode report: {e}")))?,
            None => None,
        };
        Ok(InvestigationView {
            id: row.id.0,
            state: row.state.as_str().to_string(),
            verdict: row.verdict,
            repository: row.repository,
            test_command: row.test_command,
            culprit: row.culprit,
            created_at: row.created_at,
            updated_at: row.updated_at,
            report,
            transitions: self.store.transitions(&id).await?,
        })
    }

    pub async fn hypotheses(&self, id: &str) -> Result<Vec<Hypothesis>> {
        let view = self.get(id).await?;
        self.store.hypotheses(&InvestigationId(view.id)).await
    }

    pub async fn evidence(&self, hypothesis: &str) -> Result<Hypothesis> {
        check_id(hypothesis)?;
        self.store
            .hypothesis(&HypothesisId(hypothesis.to_string()))
            .await?
            .ok_or_else(|| Error::not_found(format!("hypothesis {hypothesis} not found")))
    }

    pub async fn review(
        &self,
        id: &str,
        approve: bool,
        caller: &Caller,
        reason: Option<&str>,
    ) -> Result<InvestigationView> {
        check_id(id)?;
        let investigation = InvestigationId(id.to_string());
        self.store
            .review(
                &investigation,
                approve,
                &caller.name,
                caller.role.as_str(),
                reason.filter(|r| !r.trim().is_empty()),
            )
            .await?;
        tracing::info!(%investigation, approve, by = %caller.name, "review recorded");
        self.get(id).await
    }
}
