//! Port traits the engine needs; adapters implement them (local process,
//! Docker, SQLite, PostgreSQL, ...). Errors are domain [`Error`]s.

use crate::allowlist::Allowlist;
use crate::error::{Error, Result};
use crate::ids::InvestigationId;
use crate::report::{InvestigationSummary, Report};
use crate::state::{InvestigationState, Transition};
use std::path::Path;
use std::time::Duration;

/// One command to run in a sandbox: argv (no shell), extra environment, limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    pub argv: Vec<String>,
    /// Variables set on top of the sandbox's minimal, fixed environment.
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    /// Bytes of combined output kept (head and tail).
    pub output_limit: usize,
}

impl CommandSpec {
    /// What every [`Sandbox`] refuses before anything runs, as
    /// `InvalidArgument`: a program `allowlist` does not allow (or shell
    /// syntax, or no argv), NUL bytes in an argument, an environment
    /// variable whose name is empty or holds `=` or NUL or whose value holds
    /// NUL, and a zero timeout. One check, so a sandbox cannot skip part of it.
    pub fn check(&self, allowlist: &Allowlist) -> Result<()> {
        allowlist.check(&self.argv)?;
        if self.argv.iter().any(|a| a.contains('\0')) {
            return Err(Error::invalid(
                "command arguments must not contain NUL bytes",
            ));
        }
        for (key, value) in &self.env {
            if key.is_empty() || key.contains('=') || key.contains('\0') || value.contains('\0') {
                return Err(Error::invalid(format!(
                    "invalid environment variable {key:?}"
                )));
            }
        }
        if self.timeout.is_zero() {
            return Err(Error::invalid("command timeout must be positive"));
        }
        Ok(())
    }

    pub fn display(&self) -> String {
        let mut parts: Vec<String> = self
            .env
            .iter()
            .map(|(k, v)| format!("{k}={}", shell_words::quote(v)))
            .collect();
        parts.push(shell_words::join(&self.argv));
        parts.join(" ")
    }
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandResult {
    /// `None` when it did not exit by itself.
    pub exit_code: Option<i32>,
    pub duration: Duration,
    /// Combined stdout and stderr, trimmed to the limit.
    pub output: String,
    /// Set when the command could not run to completion: timeout, a missing
    /// program, a resource limit. The text is the reason people read.
    pub blocked: Option<String>,
}

impl CommandResult {
    pub fn passed(&self) -> bool {
        self.blocked.is_none() && self.exit_code == Some(0)
    }
}

/// A place to run commands against one checked-out worktree. The behaviour
/// every implementation must have is `tracelab_sandbox::conformance`.
#[async_trait::async_trait]
pub trait Sandbox: Send + Sync {
    /// `local` or `docker@<image digest>`; stored with every experiment.
    fn describe(&self) -> String;
    /// Runs one command to completion (or its time limit) in the worktree.
    /// A spec that [`CommandSpec::check`] refuses is an `InvalidArgument`
    /// error and runs nothing; a program that cannot start, a timeout or a
    /// resource limit is a result with `blocked` set. Dropping the future
    /// must stop the command. `Conflict` once the sandbox is closed.
    async fn exec(&self, spec: &CommandSpec) -> Result<CommandResult>;
    /// Releases everything the sandbox holds. Idempotent.
    async fn close(&self) -> Result<()>;
}

/// Opens sandboxes over worktrees.
#[async_trait::async_trait]
pub trait SandboxProvider: Send + Sync {
    fn name(&self) -> &str;
    /// `label` ties the sandbox to its investigation, for clean-up after a crash.
    async fn open(&self, worktree: &Path, label: &str) -> Result<Box<dyn Sandbox>>;
}

/// Where investigations live.
#[async_trait::async_trait]
pub trait InvestigationStore: Send + Sync {
    async fn create(
        &self,
        id: &InvestigationId,
        repository: &str,
        test_command: &str,
    ) -> Result<()>;
    /// Persists a transition; fails with Conflict when the stored state is not `transition.from`.
    async fn transition(&self, id: &InvestigationId, transition: &Transition) -> Result<()>;
    /// Stores the final report (hypotheses and experiments included).
    async fn save_report(&self, report: &Report) -> Result<()>;
    async fn get(&self, id: &InvestigationId) -> Result<Option<Report>>;
    async fn state(&self, id: &InvestigationId) -> Result<Option<InvestigationState>>;
    async fn list(&self, limit: u32) -> Result<Vec<InvestigationSummary>>;
    async fn transitions(&self, id: &InvestigationId) -> Result<Vec<Transition>>;
}

/// What happens to an investigation after the pipeline: reviews, the audit
/// log and the draft pull request. A separate port from
/// [`InvestigationStore`] because the engine never needs it. Every write
/// appends an [`AuditEntry`](crate::audit::AuditEntry) in the same
/// transaction as the change it records; stores refuse updates and deletes
/// of audit rows.
#[async_trait::async_trait]
pub trait HandOffStore: Send + Sync {
    /// WAITING_FOR_REVIEW → APPROVED or REJECTED, with the transition (its
    /// reason) and an audit row. NotFound for an unknown id; Conflict when
    /// the investigation is not waiting for review; PermissionDenied when
    /// [`check_reviewer`](crate::audit::check_reviewer) refuses.
    async fn review(
        &self,
        id: &InvestigationId,
        review: &crate::audit::Review<'_>,
    ) -> Result<InvestigationState>;
    /// Starter, audit rows, pull request and its last error; `None` for an unknown id.
    async fn hand_off(&self, id: &InvestigationId) -> Result<Option<crate::audit::HandOff>>;
    /// Stores the pull request of an APPROVED investigation (clearing the
    /// last error) with a `pull_request_opened` row, and returns the stored
    /// one: when one is stored already, that one, and nothing is written.
    /// Conflict unless APPROVED.
    async fn record_pull_request(
        &self,
        id: &InvestigationId,
        actor: &str,
        role: &str,
        link: &crate::audit::PullRequestLink,
    ) -> Result<crate::audit::PullRequestLink>;
    /// Stores why opening the pull request failed, with a
    /// `pull_request_failed` row (the error as its reason).
    async fn record_pull_request_failure(
        &self,
        id: &InvestigationId,
        actor: &str,
        role: &str,
        error: &str,
    ) -> Result<()>;
}

/// One message of a chat-completions conversation (`system`, `user`,
/// `assistant`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

/// One request to a chat model: the conversation and its limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatRequest {
    pub messages: Vec<ChatMessage>,
    /// Tokens the reply may use at most.
    pub max_tokens: u32,
    /// Wall time for the whole request, connection to last byte.
    pub timeout: Duration,
}

/// A chat model's reply, with what the experiment stores about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatReply {
    pub content: String,
    /// The model that answered (the server's name for it, else the configured one).
    pub model: String,
    /// SHA-256 (hex) of the messages as sent, after redaction.
    pub prompt_sha256: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// The reply stopped at `max_tokens` (or the server's own limit).
    pub truncated: bool,
}

/// A chat-completions model (the LLM patch agent's, #12). Implementations
/// redact every message before it leaves the process and keep their
/// credentials out of errors and `Debug`. Errors: Unavailable (server down,
/// 5xx, 429), Timeout, PermissionDenied (the key was refused), Internal (a
/// reply that is not a chat completion).
#[async_trait::async_trait]
pub trait ChatModel: Send + Sync + std::fmt::Debug {
    /// The configured model name.
    fn model(&self) -> &str;
    async fn chat(&self, request: &ChatRequest) -> Result<ChatReply>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn spec(argv: &[&str], env: &[(&str, &str)], timeout: Duration) -> CommandSpec {
        CommandSpec {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            timeout,
            output_limit: 1024,
        }
    }

    #[test]
    fn check_refuses_what_no_sandbox_may_run() {
        let allow = Allowlist::default();
        let second = Duration::from_secs(1);
        assert!(
            spec(&["python3", "t.py"], &[("SEED", "1")], second)
                .check(&allow)
                .is_ok()
        );
        for (bad, why) in [
            (spec(&[], &[], second), "empty command"),
            (spec(&["sh", "-c", "id"], &[], second), "not allowlisted"),
            (
                spec(&["python3", "a", "|", "b"], &[], second),
                "shell syntax",
            ),
            (spec(&["python3", "a\0b"], &[], second), "NUL"),
            (spec(&["python3"], &[("", "1")], second), "environment"),
            (spec(&["python3"], &[("A=B", "1")], second), "environment"),
            (spec(&["python3"], &[("A", "1\0")], second), "environment"),
            (spec(&["python3"], &[], Duration::ZERO), "timeout"),
        ] {
            let error = bad.check(&allow).unwrap_err();
            assert_eq!(error.kind, ErrorKind::InvalidArgument, "{bad:?}");
            assert!(error.message.contains(why), "{bad:?}: {error}");
        }
    }
}
