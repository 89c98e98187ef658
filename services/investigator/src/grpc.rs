//! The investigations API over gRPC (`tracelab.api.v1.Investigations`), the
//! same operations as REST. The bearer token travels in the `authorization`
//! metadata; W3C `traceparent` metadata continues the caller's trace.

use crate::api::{Api, CreateRequest, InvestigationView};
use crate::auth::{Action, Auth, Caller, Denied};
use std::sync::Arc;
use tokio::net::TcpListener;
use tonic::{Request, Response, Status};
use tracelab_domain::Error;
use tracelab_domain::hypothesis::Hypothesis;
use tracelab_proto::api::v1 as pb;
use tracelab_proto::api::v1::investigations_server::{Investigations, InvestigationsServer};
use tracelab_service::Shutdown;
use tracelab_service::grpc::status;
use tracing::Instrument;

struct Service {
    api: Arc<Api>,
    auth: Auth,
}

fn denied(d: Denied) -> Status {
    match d {
        Denied::Unauthenticated(m) => Status::unauthenticated(m),
        Denied::Forbidden(m) => Status::permission_denied(m),
    }
}

fn caller<T>(auth: &Auth, request: &Request<T>, action: Action) -> Result<Caller, Status> {
    let header = request
        .metadata()
        .get("authorization")
        .and_then(|v| v.to_str().ok());
    auth.authorize(header, action).map_err(denied)
}

fn traced<T>(request: &Request<T>, name: &'static str) -> tracing::Span {
    let span = tracing::info_span!("grpc", method = name);
    tracelab_service::grpc::continue_trace(&span, request);
    span
}

fn none_if_empty(s: String) -> Option<String> {
    Some(s).filter(|s| !s.is_empty())
}

fn investigation(v: InvestigationView) -> pb::Investigation {
    let rfc = |t: time::OffsetDateTime| {
        t.format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default()
    };
    pb::Investigation {
        report_json: v.report.as_ref().map(|r| r.to_string()).unwrap_or_default(),
        id: v.id,
        state: v.state,
        verdict: v.verdict.unwrap_or_default(),
        repository: v.repository,
        test_command: v.test_command,
        culprit: v.culprit.unwrap_or_default(),
        created_at: rfc(v.created_at),
        updated_at: rfc(v.updated_at),
    }
}

fn hypothesis(h: &Hypothesis) -> pb::Hypothesis {
    pb::Hypothesis {
        id: h.id.0.clone(),
        number: h.number,
        agent: serde_json::to_value(h.agent)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        kind: serde_json::to_value(h.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        status: h.status.as_str().to_string(),
        summary: h.summary.clone(),
        status_reason: h.status_reason.clone(),
        branch: h.branch.clone().unwrap_or_default(),
        patch: h.patch.clone().unwrap_or_default(),
    }
}

#[tonic::async_trait]
impl Investigations for Service {
    async fn create(
        &self,
        request: Request<pb::CreateInvestigationRequest>,
    ) -> Result<Response<pb::Investigation>, Status> {
        let span = traced(&request, "Create");
        let caller = caller(&self.auth, &request, Action::Start)?;
        let r = request.into_inner();
        let create = CreateRequest {
            repository: r.repository,
            test_command: none_if_empty(r.test_command),
            evidence_id: none_if_empty(r.evidence_id),
            good: none_if_empty(r.good),
            bad: none_if_empty(r.bad),
            issue_id: none_if_empty(r.issue_id),
            parallelism: Some(r.parallelism).filter(|n| *n > 0),
            command_timeout_ms: Some(r.command_timeout_ms).filter(|n| *n > 0),
            max_runs: Some(r.max_runs).filter(|n| *n > 0),
            tests_at_revision: r.tests_at_revision,
            max_hypotheses: Some(r.max_hypotheses).filter(|n| *n > 0),
            max_patch_attempts: Some(r.max_patch_attempts).filter(|n| *n > 0),
        };
        let view = self
            .api
            .create(create, &caller)
            .instrument(span)
            .await
            .map_err(status)?;
        Ok(Response::new(investigation(view)))
    }

    async fn get(
        &self,
        request: Request<pb::GetInvestigationRequest>,
    ) -> Result<Response<pb::Investigation>, Status> {
        caller(&self.auth, &request, Action::Read)?;
        let view = self
            .api
            .get(&request.into_inner().id)
            .await
            .map_err(status)?;
        Ok(Response::new(investigation(view)))
    }

    async fn list_hypotheses(
        &self,
        request: Request<pb::GetInvestigationRequest>,
    ) -> Result<Response<pb::HypothesisList>, Status> {
        caller(&self.auth, &request, Action::Read)?;
        let list = self
            .api
            .hypotheses(&request.into_inner().id)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::HypothesisList {
            hypotheses: list.iter().map(hypothesis).collect(),
        }))
    }

    async fn get_evidence(
        &self,
        request: Request<pb::GetHypothesisRequest>,
    ) -> Result<Response<pb::EvidenceList>, Status> {
        caller(&self.auth, &request, Action::Read)?;
        let h = self
            .api
            .evidence(&request.into_inner().id)
            .await
            .map_err(status)?;
        let experiments = h
            .experiments
            .iter()
            .map(|e| {
                let counts = e.effective_counts();
                pb::Experiment {
                    step: e.step.as_str().to_string(),
                    command: e.command.clone(),
                    revision: e.revision.clone(),
                    exit_code: e.exit_code.unwrap_or_default(),
                    has_exit_code: e.exit_code.is_some(),
                    duration_ms: e.duration_ms,
                    outcome: serde_json::to_value(e.outcome)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default(),
                    output: e.output.clone(),
                    sandbox: e.sandbox.clone(),
                    note: e.note.clone().unwrap_or_default(),
                    runs: counts.runs,
                    failures: counts.failures,
                }
            })
            .collect();
        Ok(Response::new(pb::EvidenceList {
            hypothesis_id: h.id.0,
            experiments,
        }))
    }

    async fn approve(
        &self,
        request: Request<pb::DecisionRequest>,
    ) -> Result<Response<pb::Investigation>, Status> {
        let caller = caller(&self.auth, &request, Action::Review)?;
        let r = request.into_inner();
        let view = self
            .api
            .review(&r.id, true, &caller, Some(&r.reason))
            .await
            .map_err(status)?;
        Ok(Response::new(investigation(view)))
    }

    async fn reject(
        &self,
        request: Request<pb::DecisionRequest>,
    ) -> Result<Response<pb::Investigation>, Status> {
        let caller = caller(&self.auth, &request, Action::Review)?;
        let r = request.into_inner();
        let view = self
            .api
            .review(&r.id, false, &caller, Some(&r.reason))
            .await
            .map_err(status)?;
        Ok(Response::new(investigation(view)))
    }

    async fn open_pull_request(
        &self,
        request: Request<pb::GetInvestigationRequest>,
    ) -> Result<Response<pb::PullRequest>, Status> {
        let caller = caller(&self.auth, &request, Action::Review)?;
        let opened = self
            .api
            .open_pull_request(&request.into_inner().id, &caller)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::PullRequest {
            url: opened.url,
            number: opened.number,
        }))
    }
}

/// Serves the gRPC API on `listener` until `shutdown`.
pub async fn serve(
    listener: TcpListener,
    api: Arc<Api>,
    auth: Auth,
    shutdown: Shutdown,
) -> tracelab_domain::Result<()> {
    tracing::info!(addr = ?listener.local_addr().ok(), "serving gRPC");
    tonic::transport::Server::builder()
        .add_service(InvestigationsServer::new(Service { api, auth }))
        .serve_with_incoming_shutdown(
            tracelab_service::grpc::incoming_nodelay(listener),
            async move { shutdown.requested().await },
        )
        .await
        .map_err(|e| Error::internal(format!("gRPC server failed: {e}")))
}
