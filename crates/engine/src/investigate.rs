//! The embedded pipeline: one process runs reproduction, the agents, the
//! verifier and the arbiter, persisting every state transition.

use crate::agents::git_history::{self, FlakeModel};
use crate::agents::test_behaviour;
use crate::config::{EngineConfig, InvestigateRequest};
use crate::context::Context;
use crate::git::Git;
use crate::pool::Pool;
use crate::probe::TestCommand;
use crate::progress::Progress;
use crate::verify::{RevertPlan, verify_revert};
use crate::workspace::Workspace;
use std::sync::Arc;
use std::time::Instant;
use tracelab_domain::arbiter::select_winner;
use tracelab_domain::hypothesis::{Hypothesis, HypothesisKind};
use tracelab_domain::ids::{HypothesisId, InvestigationId};
use tracelab_domain::ports::{InvestigationStore, SandboxProvider};
use tracelab_domain::report::Report;
use tracelab_domain::runner;
use tracelab_domain::sequential::{Behaviour, MAX_RUNS_CAP};
use tracelab_domain::state::{InvestigationState, Transition};
use tracelab_domain::verdict::decide;
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
    /// Validates the request before anything is stored or created.
    async fn prepare(
        &self,
        request: &InvestigateRequest,
    ) -> Result<(Git, TestCommand, String, Option<String>)> {
        self.config.validate()?;
        let git = Git::open(&request.repo).await?;
        let argv = self.config.allowlist.parse(&request.test_command)?;
        let runner = runner::detect(&argv);
        let bad = git
            .resolve(request.bad.as_deref().unwrap_or("HEAD"))
            .await?;
        let good = match &request.good {
            Some(g) => {
                let good = git.resolve(g).await?;
                if good == bad {
                    return Err(Error::invalid("--good and --bad name the same commit"));
                }
                if !git.is_ancestor(&good, &bad).await? {
                    return Err(Error::invalid(format!(
                        "--good {g} is not an ancestor of the bad revision"
                    )));
                }
                Some(good)
            }
            None => None,
        };
        Ok((git, TestCommand { argv, runner }, bad, good))
    }

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
        let (git, test, bad, good) = self
            .prepare(&request)
            .await
            .map_err(|error| Aborted { id: None, error })?;
        let started = Instant::now();
        let created_at = time::OffsetDateTime::now_utc();
        let repository = git.path().display().to_string();
        self.store
            .create(&id, &repository, &test.display())
            .await
            .map_err(|error| Aborted { id: None, error })?;
        let mut tracker = Tracker {
            store: self.store.as_ref(),
            id: id.clone(),
            state: InvestigationState::Created,
            transitions: Vec::new(),
        };
        let outcome = self
            .run(
                &mut tracker,
                &request,
                git,
                test.clone(),
                bad.clone(),
                good.clone(),
            )
            .await;
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
                let end =
                    if error.kind == ErrorKind::Unavailable || error.kind == ErrorKind::Timeout {
                        InvestigationState::Blocked
                    } else {
                        InvestigationState::Failed
                    };
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
        git: Git,
        test: TestCommand,
        bad: String,
        good: Option<String>,
    ) -> Result<Report> {
        let id = tracker.id.clone();
        let workspace = Arc::new(Workspace::create(git, id.short())?);
        let pool = Arc::new(Pool::new(
            workspace.clone(),
            self.sandboxes.clone(),
            &id.0,
            self.config.parallelism,
        ));
        let ctx = Context {
            id: id.clone(),
            issue_id: request
                .issue_id
                .clone()
                .unwrap_or_else(|| id.short().to_string()),
            config: self.config.clone(),
            pool: pool.clone(),
            test,
            bad,
            progress: self.progress.clone(),
        };
        let result = self.pipeline(tracker, &ctx, good).await;
        pool.close().await;
        if let Ok(report) = &result
            && let Some(branch) = report.winner.as_ref().and_then(|w| w.branch.as_ref())
        {
            workspace.keep_branch(branch);
        }
        drop(ctx);
        drop(pool);
        drop(workspace); // removes worktrees and the branches of losing hypotheses
        result
    }

    async fn pipeline(
        &self,
        tracker: &mut Tracker<'_>,
        ctx: &Context,
        good: Option<String>,
    ) -> Result<Report> {
        use InvestigationState::*;
        tracker.move_to(ContextLoading, None).await?;
        ctx.progress.report(&format!(
            "reproducing `{}` at {}",
            ctx.test.display(),
            &ctx.bad[..12]
        ));
        let classification = test_behaviour::classify(ctx).await?;
        if let Some(reason) = &classification.blocked {
            return Err(Error::unavailable(format!(
                "the test could not run at the bad revision: {reason}"
            )));
        }
        ctx.progress.report(&format!(
            "the failure is {:?} ({} of {} runs failed)",
            classification.decision.behaviour,
            classification.counts.failures,
            classification.counts.runs
        ));

        tracker.move_to(Investigating, None).await?;
        let mut hypotheses: Vec<Hypothesis> = Vec::new();
        let behaviour = classification.decision.behaviour;
        let mut bisect = None;
        let mut notes = Vec::new();
        let mut culprit = None;

        let history = async {
            let Some(baseline) = classification.baseline.clone() else {
                return Ok(None);
            };
            let model = FlakeModel::new(
                classification.failure_rate(),
                ctx.config.good_miss_probability,
                MAX_RUNS_CAP,
                baseline,
            );
            if let Some(g) = &good {
                git_history::check_good(ctx, g, &model).await?;
            }
            git_history::find_culprit(ctx, good.clone(), &model)
                .await
                .map(|f| Some((f, model)))
        };
        let behaviour_agent = async {
            let order = test_behaviour::order_dependence(ctx, 0, &classification).await?;
            let env = test_behaviour::environment_dependence(ctx, 0, &classification).await?;
            Ok::<_, Error>((order, env))
        };
        let (history, (order, env)) = futures::future::try_join(history, behaviour_agent).await?;
        // Numbers follow a fixed agent order, whatever finished first.
        hypotheses.extend(test_behaviour::flaky_hypothesis(ctx, 0, &classification));
        hypotheses.extend(order);
        hypotheses.extend(env);
        for (i, h) in hypotheses.iter_mut().enumerate() {
            h.number = i as u32 + 1;
            h.id = HypothesisId::new(&ctx.id, h.number);
        }
        let mut model = None;
        if let Some((finding, m)) = history {
            if let Some(note) = &finding.summary.note {
                notes.push(note.clone());
            }
            culprit = finding.culprit.clone();
            bisect = Some(finding.summary);
            model = Some(m);
        }

        tracker.move_to(Verifying, None).await?;
        if let (Some(sha), Some(model)) = (&culprit, &model)
            && hypotheses.len() < ctx.config.max_hypotheses
        {
            ctx.progress
                .report(&format!("verifying the revert of {}", &sha[..12]));
            let plan = RevertPlan {
                number: hypotheses.len() as u32 + 1,
                culprit: sha,
                classification: &classification,
                passes_needed: model.passes_needed,
            };
            hypotheses.push(verify_revert(ctx, plan).await?);
        }

        tracker.move_to(Arbitrating, None).await?;
        let winner = select_winner(&hypotheses).cloned();
        let verdict = decide(winner.as_ref(), &hypotheses, behaviour);
        let culprit_info = winner
            .as_ref()
            .filter(|w| w.kind == HypothesisKind::Revert)
            .and_then(|w| w.culprit.clone());
        if culprit_info.is_none()
            && let Some(h) = hypotheses.iter().find(|h| h.kind == HypothesisKind::Revert)
        {
            notes.push(format!(
                "the culprit candidate was not verified: {}",
                h.status_reason
            ));
        }
        let flaky = matches!(behaviour, Behaviour::Flaky).then(|| classification.flaky_stats());
        tracker.move_to(WaitingForReview, None).await?;
        ctx.progress
            .report(&format!("verdict: {}", verdict.as_str()));
        Ok(Report {
            id: ctx.id.clone(),
            state: tracker.state,
            verdict,
            culprit: culprit_info,
            flaky,
            hypotheses,
            winner,
            repository: String::new(),
            test_command: ctx.test.display(),
            bad: ctx.bad.clone(),
            good: bisect.as_ref().and_then(|b| b.good.clone()),
            failure: classification.baseline.as_ref().map(|b| b.describe()),
            reproduction: Some(classification.experiment.clone()),
            bisect,
            notes,
            created_at: time::OffsetDateTime::now_utc(),
            duration_ms: 0,
            transitions: Vec::new(),
        })
    }
}
