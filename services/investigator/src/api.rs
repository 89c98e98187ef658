//! The investigations API, independent of protocol: REST ([`crate::rest`])
//! and gRPC ([`crate::grpc`]) both call these.

use crate::auth::Caller;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tracelab_bus::{Bus, JetStreamBus};
use tracelab_domain::audit::{HandOff, Review};
use tracelab_domain::hypothesis::Hypothesis;
use tracelab_domain::ids::{HypothesisId, InvestigationId};
use tracelab_domain::ports::{HandOffStore, InvestigationStore};
use tracelab_domain::state::Transition;
use tracelab_domain::{Error, Result};
use tracelab_fleet::events::{ids, steps};
use tracelab_fleet::outbox;
use tracelab_fleet::sandbox::{SandboxSettings, engine_config};
use tracelab_notify::Outgoing;
use tracelab_proto::events::v1::{InvestigationRequested, Limits};
use tracelab_store::notifications::NewNotification;
use tracelab_store::{Created, NewInvestigation, PgStore};

pub struct Api {
    pub store: PgStore,
    pub bus: Arc<JetStreamBus>,
    pub verification_deadline: Duration,
    /// The service's sandbox settings: the commands investigations may run
    /// and the limits a request may ask for are checked against them at
    /// submission, so a bad request is refused (400), not FAILED later.
    pub sandbox: SandboxSettings,
    /// Local checkouts of repositories evidence names by URL.
    pub checkouts: crate::repositories::RepositoryMap,
    /// Which repositories a request may name (URL patterns, local roots).
    pub repositories: tracelab_fleet::repositories::Repositories,
    /// The four-eyes rule (`review.forbid_self_approval`), off when the
    /// API runs without tokens (every caller is `anonymous`).
    pub forbid_self_approval: bool,
    /// Code hosts for draft pull requests (`pull_requests.hosts`).
    pub pull_requests: tracelab_fleet::pull_request::PullRequests,
    /// Signed webhooks (`webhooks.urls`) and Jira comments (`jira`),
    /// stored with the stage that causes them; `None` without either.
    pub outgoing: Option<Arc<Outgoing>>,
}

/// `POST /api/investigations`. The design's names are accepted too:
/// `baseBranch` for `bad`, `jiraIssueId` for `issue_id`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct CreateRequest {
    /// A repository URL the deployment allows (`https://`, `ssh://`,
    /// `git@host:path`, `git://`), or a path under its local roots.
    pub repository: String,
    /// The failing test command.
    pub test_command: Option<String>,
    /// Evidence ingest stored: supplies the test command (re-running its
    /// failed test), the failing commit, and the repository when it is a
    /// local path, wherever the request leaves them out.
    pub evidence_id: Option<String>,
    /// Last known good revision.
    pub good: Option<String>,
    /// The failing revision or branch; default HEAD. (`baseBranch`: the
    /// design's name for it.)
    #[serde(alias = "base_branch", alias = "baseBranch")]
    pub bad: Option<String>,
    /// External issue id for branch names (`jiraIssueId` in the design).
    #[serde(alias = "jiraIssueId", alias = "jira_issue_id")]
    pub issue_id: Option<String>,
    pub parallelism: Option<u32>,
    pub command_timeout_ms: Option<u64>,
    pub max_runs: Option<u32>,
    /// Probes run each revision's own tests (default: the bad revision's
    /// failing test files on every probe).
    #[serde(default)]
    pub tests_at_revision: bool,
    pub max_hypotheses: Option<u32>,
    pub max_patch_attempts: Option<u32>,
}

/// An investigation as the API shows it. `report` is the Report JSON
/// contract (the same as the embedded `tracelab investigate --format json`)
/// once the arbiter decided.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct InvestigationView {
    pub id: String,
    pub state: String,
    pub verdict: Option<String>,
    pub repository: String,
    pub test_command: String,
    pub culprit: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: time::OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: time::OffsetDateTime,
    /// The Report JSON (docs/investigation.md) once decided.
    #[schema(value_type = Option<Object>)]
    pub report: Option<Value>,
    /// Every state change so far, with reasons (why it FAILED or BLOCKED).
    #[schema(value_type = Vec<crate::schema::TransitionDoc>)]
    pub transitions: Vec<Transition>,
    /// Who started it, the audit log, the pull request and its last error.
    #[serde(flatten)]
    #[schema(value_type = crate::schema::HandOffDoc)]
    pub hand_off: HandOff,
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

/// The investigation as the API shows it (also what webhooks carry and
/// Jira comments are written from).
pub async fn view(store: &PgStore, id: &str) -> Result<InvestigationView> {
    check_id(id)?;
    let id = InvestigationId(id.to_string());
    let row = store
        .investigation(&id)
        .await?
        .ok_or_else(|| Error::not_found(format!("investigation {id} not found")))?;
    let report = match row.report {
        Some(_) => InvestigationStore::get(store, &id)
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
        transitions: store.transitions(&id).await?,
        hand_off: store.hand_off(&id).await?.unwrap_or_default(),
    })
}

impl Api {
    pub async fn create(
        &self,
        request: CreateRequest,
        caller: &Caller,
    ) -> Result<InvestigationView> {
        self.create_keyed(request, caller, None).await
    }

    /// [`Api::create`], at most once per `dedupe_key`: when an investigation
    /// with that key exists, it is returned and nothing new is started.
    pub async fn create_keyed(
        &self,
        request: CreateRequest,
        caller: &Caller,
        dedupe_key: Option<&str>,
    ) -> Result<InvestigationView> {
        Ok(self.create_once(request, caller, dedupe_key).await?.0)
    }

    /// [`Api::create_keyed`], saying whether it started a new one (`true`)
    /// or found the key's.
    pub async fn create_once(
        &self,
        request: CreateRequest,
        caller: &Caller,
        dedupe_key: Option<&str>,
    ) -> Result<(InvestigationView, bool)> {
        let mut request = request;
        let evidence_id = request
            .evidence_id
            .as_deref()
            .map(str::trim)
            .filter(|id| !id.is_empty())
            .map(str::to_string);
        let evidence = match evidence_id {
            Some(id) => Some(self.start_from_evidence(&id, &mut request).await?),
            None => None,
        };
        if request.repository.trim().is_empty() {
            return Err(Error::invalid("repository is required"));
        }
        let test_command = match &request.test_command {
            Some(t) if !t.trim().is_empty() => t.trim().to_string(),
            _ => return Err(Error::invalid("test_command or evidence_id is required")),
        };
        // Refused here (403 / 400) rather than FAILED later; the workers
        // fetch what they need themselves.
        request.repository = self.repositories.admit(&request.repository)?;
        let id = InvestigationId::generate();
        let body = serde_json::to_value(&request)
            .map_err(|e| Error::internal(format!("cannot encode request: {e}")))?;
        let event = InvestigationRequested {
            investigation_id: id.0.clone(),
            repository: request.repository.clone(),
            test_command: test_command.clone(),
            good: request.good.clone().unwrap_or_default(),
            bad: request.bad.clone().unwrap_or_default(),
            issue_id: request.issue_id.clone().unwrap_or_default(),
            limits: Some(Limits {
                parallelism: request.parallelism.unwrap_or(0),
                command_timeout_ms: request.command_timeout_ms.unwrap_or(0),
                max_runs: request.max_runs.unwrap_or(0),
                max_hypotheses: request.max_hypotheses.unwrap_or(0),
                verification_deadline_ms: self.verification_deadline.as_millis() as u64,
                tests_at_revision: request.tests_at_revision,
                max_patch_attempts: request.max_patch_attempts.unwrap_or(0),
            }),
            requested_by: caller.name.clone(),
        };
        engine_config(event.limits.as_ref(), &self.sandbox)?
            .allowlist
            .parse(&test_command)?;
        let topology = self.bus.topology().clone();
        let announce = outbox::message(
            topology.investigation_step(&id.0, steps::REQUESTED),
            ids::requested(&id.0),
            &event,
        );
        // The `created` webhooks and comment commit with the investigation.
        let notes = self.plan("created", &id.0, request.issue_id.as_deref());
        let created = self
            .store
            .create_requested_notifying(
                &NewInvestigation {
                    id: &id,
                    repository: &request.repository,
                    test_command: &test_command,
                    request: &body,
                    evidence: evidence.as_slice(),
                    dedupe_key,
                    announce: &announce,
                    started_by: &caller.name,
                    role: caller.role.as_str(),
                },
                &notes,
            )
            .await?;
        if let Created::Existing(existing) = created {
            tracing::info!(investigation = %existing, key = dedupe_key.unwrap_or_default(), "already investigated");
            return Ok((self.get(&existing.0).await?, false));
        }
        // Stored with its event: if this publish fails (or this process dies
        // now) the outbox relay publishes it, so the request is not lost.
        if let Err(e) = outbox::deliver(self.bus.as_ref(), &self.store, &announce).await {
            tracing::warn!(investigation = %id, error = %e, "requested event left to the outbox relay");
        }
        tracing::info!(investigation = %id, by = %caller.name, "investigation requested");
        metrics::counter!("tracelab_investigations_created_total").increment(1);
        self.notified();
        Ok((self.get(&id.0).await?, true))
    }

    /// What stage `kind` of the investigation stores with its write:
    /// nothing when neither webhooks nor Jira are configured.
    pub(crate) fn plan(
        &self,
        kind: &str,
        investigation: &str,
        issue: Option<&str>,
    ) -> Vec<NewNotification> {
        self.outgoing
            .as_ref()
            .map(|out| out.plan(kind, investigation, issue))
            .unwrap_or_default()
    }

    /// The plan of a stage of a stored investigation (its issue read first:
    /// it does not change).
    pub(crate) async fn plan_stored(
        &self,
        kind: &str,
        investigation: &str,
    ) -> Result<Vec<NewNotification>> {
        match &self.outgoing {
            Some(out) => {
                let issue = out.issue_of(investigation).await?;
                Ok(out.plan(kind, investigation, issue.as_deref()))
            }
            None => Ok(Vec::new()),
        }
    }

    /// A stage committed its notifications: the dispatcher sends them now.
    pub(crate) fn notified(&self) {
        if let Some(out) = &self.outgoing {
            out.wake();
        }
    }

    /// Fills what the request left out from stored evidence: the test
    /// command re-running the failed test (from its test id), the failing
    /// commit, and the repository when ingest recorded a local path. Returns
    /// the evidence id to link.
    async fn start_from_evidence(&self, id: &str, request: &mut CreateRequest) -> Result<String> {
        let evidence = self
            .store
            .evidence(id)
            .await?
            .ok_or_else(|| Error::invalid(format!("evidence {id} is not stored")))?;
        if request.repository.trim().is_empty()
            && let Some(repo) = evidence.repository.as_deref()
        {
            // A configured shared checkout first, else the URL (or path) as
            // the evidence gives it, if the deployment allows it.
            request.repository = match self.checkouts.local_path(repo) {
                Some(local) => local.to_string(),
                None => self.repositories.admit(repo).map_err(|e| {
                    Error::new(
                        e.kind,
                        format!("evidence {id} names the repository {repo}: {e}; give repository, allow it in `fleet.repositories.allow`, or map it in the investigator's `repositories` setting"),
                    )
                })?,
            };
        }
        if request.bad.as_deref().is_none_or(|b| b.trim().is_empty()) {
            request.bad = evidence.commit.clone().filter(|c| !c.is_empty());
        }
        if request
            .test_command
            .as_deref()
            .is_none_or(|t| t.trim().is_empty())
        {
            let test_id = evidence.body.get("test_id").and_then(Value::as_str);
            let language = evidence
                .body
                .get("language")
                .cloned()
                .and_then(|l| serde_json::from_value(l).ok())
                .unwrap_or(tracelab_evidence::Language::Unknown);
            let command = test_id.and_then(|t| tracelab_evidence::rerun_command(t, language));
            request.test_command = Some(command.ok_or_else(|| {
                Error::invalid(format!(
                    "evidence {id} ({}, test id {test_id:?}, language {language:?}) does not say how to re-run the failure; give test_command",
                    evidence.kind
                ))
            })?);
        }
        Ok(evidence.id)
    }

    pub async fn get(&self, id: &str) -> Result<InvestigationView> {
        view(&self.store, id).await
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

    /// An approved fix resolves the failure groups of the evidence the
    /// investigation looked at (#15; a later sighting reopens them as a
    /// regression). The approval stands if this fails: it is logged.
    async fn resolve_groups(&self, investigation: &InvestigationId) {
        let groups = tracelab_store::PgGroupStore::new(self.store.pool().clone());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        match groups
            .resolve_investigation(&investigation.0, now, None)
            .await
        {
            Ok(resolved) => {
                tracing::info!(%investigation, groups = resolved.len(), "failure groups resolved")
            }
            Err(e) => tracing::warn!(%investigation, error = %e, "failure groups not resolved"),
        }
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
        let kind = if approve { "approved" } else { "rejected" };
        let notes = self.plan_stored(kind, id).await?;
        self.store
            .review_notifying(
                &investigation,
                &Review {
                    approve,
                    reviewer: &caller.name,
                    role: caller.role.as_str(),
                    reason: reason.filter(|r| !r.trim().is_empty()),
                    forbid_self_approval: self.forbid_self_approval,
                },
                &notes,
            )
            .await?;
        self.notified();
        tracing::info!(%investigation, approve, by = %caller.name, "review recorded");
        if approve {
            self.resolve_groups(&investigation).await;
        }
        self.get(id).await
    }
}

#[cfg(test)]
mod tests {
    use super::CreateRequest;

    #[test]
    fn the_designs_field_names_are_accepted() {
        let r: CreateRequest = serde_json::from_str(
            r#"{"repository": "https://git.example.com/acme/shop", "jiraIssueId": "PVS-421", "baseBranch": "main", "test_command": "pytest -q"}"#,
        )
        .unwrap();
        assert_eq!(r.issue_id.as_deref(), Some("PVS-421"));
        assert_eq!(r.bad.as_deref(), Some("main"));
        let unknown = serde_json::from_str::<CreateRequest>(r#"{"repositry": "x"}"#);
        assert!(unknown.is_err(), "unknown fields stay refused");
    }
}
