//! Which sandboxes a service runs commands in, and the engine limits of one
//! investigation, from settings and from the limits an event carries.

use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
use tracelab_domain::ports::SandboxProvider;
use tracelab_domain::{Error, Result};
use tracelab_engine::EngineConfig;
use tracelab_proto::events::v1::Limits;
use tracelab_sandbox::{LocalConfig, LocalSandboxProvider};
use tracelab_sandbox_docker::{DockerConfig, DockerSandboxProvider, Reap};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct SandboxSettings {
    /// `local` (worktree + process with limits) or `docker`.
    pub kind: String,
    /// Docker image; empty = the sandbox default.
    pub image: String,
    /// Programs allowed beyond the default allowlist.
    pub allow: Vec<String>,
    /// Test commands may pass code on the command line (`python3 -c`).
    pub allow_inline_code: bool,
    /// Test commands may run a program from inside the repository (`./run-tests`).
    pub allow_repository_programs: bool,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        Self {
            kind: "local".into(),
            image: String::new(),
            allow: Vec::new(),
            allow_inline_code: false,
            allow_repository_programs: false,
        }
    }
}

/// Opens the configured provider (Docker: connects, removes orphans first).
pub async fn provider(settings: &SandboxSettings) -> Result<Arc<dyn SandboxProvider>> {
    match settings.kind.as_str() {
        "local" => {
            let mut local = LocalConfig::default();
            local
                .allowlist
                .programs
                .extend(settings.allow.iter().cloned());
            if let Some(path) = std::env::var_os("PATH") {
                local.path = path.to_string_lossy().into_owned();
            }
            Ok(Arc::new(LocalSandboxProvider::new(local)))
        }
        "docker" => {
            let mut config = DockerConfig::default();
            config
                .allowlist
                .programs
                .extend(settings.allow.iter().cloned());
            if !settings.image.is_empty() {
                config.image = settings.image.clone();
            }
            let provider = DockerSandboxProvider::connect(config).await?;
            let reaped = provider.reap(Reap::Orphans).await?;
            if reaped > 0 {
                tracing::info!(reaped, "removed leftover sandbox containers");
            }
            Ok(Arc::new(provider))
        }
        other => Err(Error::invalid(format!(
            "sandbox kind {other:?}: use \"local\" or \"docker\""
        ))),
    }
}

/// The engine configuration for one investigation: defaults, the service's
/// allowlist, then the limits the request carried (0 = default).
pub fn engine_config(limits: Option<&Limits>, sandbox: &SandboxSettings) -> Result<EngineConfig> {
    let mut config = EngineConfig::default();
    config
        .allowlist
        .programs
        .extend(sandbox.allow.iter().cloned());
    config.allowlist.inline_code = sandbox.allow_inline_code;
    config.allowlist.repository_programs = sandbox.allow_repository_programs;
    if let Some(l) = limits {
        if l.parallelism > 0 {
            config.parallelism = l.parallelism as usize;
        }
        if l.command_timeout_ms > 0 {
            config.command_timeout = Duration::from_millis(l.command_timeout_ms);
        }
        if l.max_runs > 0 {
            config.sequential.max_runs = l.max_runs;
        }
        if l.max_hypotheses > 0 {
            config.max_hypotheses = l.max_hypotheses as usize;
        }
        if l.max_patch_attempts > 0 {
            config.max_patch_attempts = l.max_patch_attempts as usize;
        }
        config.tests_at_revision = l.tests_at_revision;
    }
    config.validate()?;
    Ok(config)
}
