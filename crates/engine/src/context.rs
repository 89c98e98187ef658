//! What every agent of one investigation shares.

use crate::config::EngineConfig;
use crate::journal::SearchJournal;
use crate::pool::Pool;
use crate::probe::TestCommand;
use crate::progress::Progress;
use std::sync::Arc;
use std::time::Duration;
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::ports::CommandSpec;

pub struct Context {
    pub id: InvestigationId,
    /// Used in branch names.
    pub issue_id: String,
    pub config: EngineConfig,
    pub pool: Arc<Pool>,
    pub test: TestCommand,
    /// Full sha of the bad revision.
    pub bad: String,
    pub progress: Arc<dyn Progress>,
    /// Judgements of an earlier process of this investigation, and where to
    /// write new ones (the fleet); `None` on one machine.
    pub journal: Option<Arc<SearchJournal>>,
}

impl Context {
    pub fn spec(&self, argv: &[String], env: &[(String, String)]) -> CommandSpec {
        CommandSpec {
            argv: argv.to_vec(),
            env: env.to_vec(),
            timeout: self.config.command_timeout,
            output_limit: self.config.output_limit,
        }
    }

    pub fn test_spec(&self) -> CommandSpec {
        self.spec(&self.test.argv, &[])
    }

    pub fn timeout(&self) -> Duration {
        self.config.command_timeout
    }
}
