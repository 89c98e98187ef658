//! What an investigation is asked to do, and its limits.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tracelab_domain::allowlist::Allowlist;
use tracelab_domain::ports::ChatModel;
use tracelab_domain::sequential::SequentialConfig;
use tracelab_domain::{Error, Result};

/// The request: which repository, which failing test, which revisions.
#[derive(Debug, Clone)]
pub struct InvestigateRequest {
    pub repo: PathBuf,
    pub test_command: String,
    pub good: Option<String>,
    /// Defaults to `HEAD`.
    pub bad: Option<String>,
    /// External issue id used in branch names; defaults to the investigation's short id.
    pub issue_id: Option<String>,
}

/// Limits and tunables. Defaults follow DESIGN.md.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Sandboxes used at once (k in the k-ary culprit search).
    pub parallelism: usize,
    pub command_timeout: Duration,
    /// Bytes of output kept per command (head and tail).
    pub output_limit: usize,
    /// Bytes of output stored per experiment.
    pub stored_output_limit: usize,
    pub sequential: SequentialConfig,
    /// Failures in a row after which the re-runs at the bad revision stop
    /// once the culprit search has named a culprit, leaving the fix's clean
    /// runs to confirm the failure is deterministic
    /// (`sequential::passes_to_confirm`); 0 always finishes the sequential
    /// test. Only the embedded pipeline stops early: the fleet's
    /// investigator cannot yet resume the re-runs after a verifier's answer.
    pub confirm_by_fix_after: u32,
    /// Wall time the re-runs at the bad revision may take: a test slower than
    /// `budget × k / max_runs` gets fewer re-runs (never fewer than
    /// `reproduction_min_runs`).
    pub reproduction_budget: Duration,
    pub reproduction_min_runs: u32,
    /// Probability of calling a revision good when the failure is present but flaky.
    pub good_miss_probability: f64,
    pub max_hypotheses: usize,
    /// Fix candidates verified per hypothesis (those that do not apply do not count).
    pub max_patch_attempts: usize,
    /// Probes run their own revision's tests instead of the bad revision's
    /// failing test files (`--tests-at-revision`).
    pub tests_at_revision: bool,
    /// Revisions examined backwards (with doubling steps) when no `--good` is given.
    pub lookback_limit: usize,
    /// Environment deltas tried by the test-behaviour agent.
    pub environment_variants: Vec<(String, String)>,
    /// Runs of the isolated test before calling a failure order-dependent.
    pub isolation_runs: u32,
    pub allowlist: Allowlist,
    /// Fixes beyond revert when no culprit fix is verified (`--repair`).
    pub repair: RepairMode,
    /// Wall time for screening repair candidates with the failing test.
    pub repair_screening_budget: Duration,
    /// Repair candidates generated at most (screening tries them best first).
    pub repair_candidates: usize,
    /// The LLM patch agent's model (`--repair llm|all`); its implementation
    /// redacts every prompt (`tracelab-llm`). `None`: no endpoint configured.
    pub chat_model: Option<Arc<dyn ChatModel>>,
    /// Tokens (prompt + reply, as the server counts them) the LLM patch
    /// agent may use per investigation.
    pub llm_token_budget: u64,
    /// Wall time the LLM patch agent's model calls may take per investigation.
    pub llm_wall_budget: Duration,
    /// Tokens one reply may use at most.
    pub llm_max_reply_tokens: u32,
    /// Past repairs the experience agent may reuse; `None`: the agent is off.
    pub experience: Option<Arc<Experience>>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            parallelism: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
                .max(2),
            command_timeout: Duration::from_secs(120),
            output_limit: 256 * 1024,
            stored_output_limit: 8 * 1024,
            sequential: SequentialConfig::default(),
            confirm_by_fix_after: 4,
            reproduction_budget: Duration::from_secs(120),
            reproduction_min_runs: 5,
            good_miss_probability: 0.01,
            max_hypotheses: 3,
            max_patch_attempts: 2,
            tests_at_revision: false,
            lookback_limit: 100_000,
            environment_variants: vec![
                ("TZ".into(), "America/New_York".into()),
                ("TZ".into(), "Asia/Kolkata".into()),
                ("LC_ALL".into(), "C".into()),
                ("PYTHONHASHSEED".into(), "0".into()),
            ],
            isolation_runs: 3,
            allowlist: Allowlist::default(),
            repair: RepairMode::default(),
            repair_screening_budget: Duration::from_secs(60),
            repair_candidates: 300,
            chat_model: None,
            llm_token_budget: 60_000,
            llm_wall_budget: Duration::from_secs(300),
            llm_max_reply_tokens: 2048,
            experience: None,
        }
    }
}

/// The longest a single command may be given. An investigation runs the
/// test dozens of times (re-runs, probes, the contract's steps), so a test
/// slower than this is not one it can diagnose in useful time, and an
/// unbounded timeout lets one request hold a sandbox slot forever.
pub const MAX_COMMAND_TIMEOUT: Duration = Duration::from_secs(3600);

impl EngineConfig {
    pub fn validate(&self) -> Result<()> {
        if self.parallelism == 0 || self.parallelism > 64 {
            return Err(Error::invalid("parallelism must be between 1 and 64"));
        }
        if self.command_timeout.is_zero() {
            return Err(Error::invalid("the command timeout must be positive"));
        }
        if self.command_timeout > MAX_COMMAND_TIMEOUT {
            return Err(Error::invalid(format!(
                "the command timeout {:?} is longer than the limit of {:?}",
                self.command_timeout, MAX_COMMAND_TIMEOUT
            )));
        }
        if self.max_patch_attempts == 0 || self.max_hypotheses == 0 {
            return Err(Error::invalid(
                "max_hypotheses and max_patch_attempts must be at least 1",
            ));
        }
        if !(0.0 < self.good_miss_probability && self.good_miss_probability < 0.5) {
            return Err(Error::invalid("good_miss_probability must be in (0, 0.5)"));
        }
        if self.repair.model() && self.chat_model.is_none() {
            return Err(Error::invalid(
                "repair with the LLM patch agent needs a model endpoint (base URL and model); none is configured",
            ));
        }
        self.sequential.validate()
    }
}

/// Where fixes beyond revert come from (`--repair`, the verifier's `repair.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RepairMode {
    /// Only reverts of a culprit carry fixes.
    Off,
    /// Offline repair templates (no network, no model).
    #[default]
    Templates,
    /// The LLM patch agent only (`EngineConfig::chat_model`).
    Llm,
    /// Templates first, then the LLM patch agent in the same hypothesis.
    All,
}

impl RepairMode {
    pub fn templates(self) -> bool {
        matches!(self, RepairMode::Templates | RepairMode::All)
    }

    pub fn model(self) -> bool {
        matches!(self, RepairMode::Llm | RepairMode::All)
    }
}

/// The records an investigation may reuse, loaded by the caller (the
/// one-machine store, the fleet's store) with the recurring flag set.
#[derive(Debug, Clone, Default)]
pub struct Experience {
    pub records: Vec<tracelab_experience::ExperienceRecord>,
    /// The CI workflow of the failure, when it comes from one; without it
    /// an L1 record is of the same workflow when that workflow ran the
    /// investigation's test command ([`tracelab_experience::retrieve::same_workflow`]).
    pub workflow: Option<String>,
    /// The key the records of this repository were mined under, for the
    /// scope rules. `None`: the repository's path on this machine (what
    /// one-machine mining records). The fleet gives the repository as it
    /// admitted it (`Repositories::admit`: the URL, or the canonical local
    /// path), since its checkouts are mirrors in each worker's own cache.
    pub repository: Option<String>,
}
