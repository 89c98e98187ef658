//! Opening the working area of one investigation (or one verification job):
//! the validated request, a workspace of temporary worktrees and a pool of
//! sandboxes over it. The embedded engine opens one session per
//! investigation; in the fleet the investigator and every verifier job open
//! their own on the same repository.

use crate::config::{EngineConfig, InvestigateRequest};
use crate::context::Context;
use crate::git::Git;
use crate::pool::Pool;
use crate::probe::TestCommand;
use crate::progress::Progress;
use crate::workspace::Workspace;
use std::sync::Arc;
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::ports::SandboxProvider;
use tracelab_domain::runner;
use tracelab_domain::{Error, Result};

/// A request checked against the repository: revisions resolved to full shas.
pub struct Prepared {
    pub git: Git,
    pub test: TestCommand,
    pub bad: String,
    pub good: Option<String>,
}

/// Validates `request` before anything is stored or created.
pub async fn prepare(config: &EngineConfig, request: &InvestigateRequest) -> Result<Prepared> {
    config.validate()?;
    let git = Git::open(&request.repo).await?;
    let argv = config.allowlist.parse(&request.test_command)?;
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
    Ok(Prepared {
        git,
        test: TestCommand { argv, runner },
        bad,
        good,
    })
}

/// A context plus what it owns; [`Session::close`] releases the sandboxes and
/// worktrees (keeping at most one hypothesis branch).
pub struct Session {
    pub ctx: Context,
    workspace: Arc<Workspace>,
    pool: Arc<Pool>,
}

impl Session {
    pub fn open(
        id: InvestigationId,
        issue_id: Option<String>,
        prepared: Prepared,
        config: EngineConfig,
        sandboxes: Arc<dyn SandboxProvider>,
        progress: Arc<dyn Progress>,
    ) -> Result<Self> {
        let workspace = Arc::new(Workspace::create(prepared.git, id.short())?);
        let pool = Arc::new(
            Pool::new(workspace.clone(), sandboxes, &id.0, config.parallelism)
                .keeping(prepared.test.runner.incremental_build_dirs()),
        );
        let ctx = Context {
            issue_id: issue_id.unwrap_or_else(|| id.short().to_string()),
            id,
            config,
            pool: pool.clone(),
            test: prepared.test,
            bad: prepared.bad,
            progress,
            journal: None,
        };
        Ok(Self {
            ctx,
            workspace,
            pool,
        })
    }

    /// Keeps the culprit search's judgements in `journal` and starts from
    /// those an earlier process of this investigation made (a redelivered
    /// investigation in the fleet).
    pub async fn with_journal(
        mut self,
        journal: Arc<dyn tracelab_domain::journal::ProbeJournal>,
    ) -> Result<Self> {
        let journal = crate::journal::SearchJournal::open(self.ctx.id.clone(), journal).await?;
        if journal.loaded() > 0 {
            self.ctx.progress.report(&format!(
                "resuming: {} probe judgements journaled by an earlier attempt",
                journal.loaded()
            ));
        }
        self.ctx.journal = Some(Arc::new(journal));
        Ok(self)
    }

    /// Closes the sandboxes and removes the worktrees and every hypothesis
    /// branch except `keep` (the winner's, for review).
    pub async fn close(self, keep: Option<&str>) {
        self.pool.close().await;
        if let Some(branch) = keep {
            self.workspace.keep_branch(branch);
        }
        let Self {
            ctx,
            workspace,
            pool,
        } = self;
        drop(ctx);
        drop(pool);
        drop(workspace); // removes worktrees and the branches not kept
    }
}
