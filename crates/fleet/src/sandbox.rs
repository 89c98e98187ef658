//! Which sandboxes a service runs commands in, and the engine limits of one
//! investigation, from settings and from the limits an event carries.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tracelab_domain::ports::SandboxProvider;
use tracelab_domain::{Error, Result};
use tracelab_engine::EngineConfig;
use tracelab_proto::events::v1::Limits;
use tracelab_sandbox::{HardenedConfig, Isolation, LocalConfig, LocalSandboxProvider};
use tracelab_sandbox_docker::{DockerConfig, DockerSandboxProvider, Reap};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct SandboxSettings {
    /// `hardened` (the default: a local process under a separate uid when
    /// the service is root, in new namespaces where the kernel allows, with
    /// rlimits and an environment built from scratch), `docker` (a container
    /// per sandbox), or `local` (a plain process as the service's user; only
    /// with `allow_local`).
    pub kind: String,
    /// Docker image; empty = the sandbox default.
    pub image: String,
    /// Programs allowed beyond the default allowlist.
    pub allow: Vec<String>,
    /// Test commands may pass code on the command line (`python3 -c`).
    pub allow_inline_code: bool,
    /// Test commands may run a program from inside the repository (`./run-tests`).
    pub allow_repository_programs: bool,
    /// The `local` sandbox runs tests as this service's own user, with its
    /// network and whatever its files and environment hold: a service
    /// refuses it unless this says so (a development machine, or a pod that
    /// is itself the boundary).
    pub allow_local: bool,
    /// `docker`: the Docker engine's unix socket.
    pub docker_socket: PathBuf,
    /// `docker`: the container runtime, e.g. `runsc` (gVisor) where the
    /// engine has it registered; empty = the engine's default (runc).
    pub runtime: String,
    /// `hardened`: further paths commands must not see, beyond the default
    /// `/etc/tracelab`, `/run/secrets`, `/var/run/secrets` and the service
    /// user's home (put the folder of this service's token files here when
    /// it lies elsewhere).
    pub hidden_paths: Vec<PathBuf>,
    /// `hardened`: refuse to start unless a namespace mechanism (bubblewrap
    /// or unshare) works here, instead of running with the uid switch and
    /// rlimits only.
    pub require_namespaces: bool,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        Self {
            kind: "hardened".into(),
            image: String::new(),
            allow: Vec::new(),
            allow_inline_code: false,
            allow_repository_programs: false,
            allow_local: false,
            docker_socket: DockerConfig::default().socket,
            runtime: String::new(),
            hidden_paths: Vec::new(),
            require_namespaces: false,
        }
    }
}

/// Opens the configured provider (Docker: connects, removes orphans first),
/// its runs counted for `/metrics`.
pub async fn provider(settings: &SandboxSettings) -> Result<Arc<dyn SandboxProvider>> {
    let inner = open(settings).await?;
    Ok(Arc::new(crate::metered::Metered::new(inner)))
}

async fn open(settings: &SandboxSettings) -> Result<Arc<dyn SandboxProvider>> {
    match settings.kind.as_str() {
        "local" if !settings.allow_local => Err(Error::invalid(
            "sandbox.kind = \"local\" runs tests as this service's user, with its network, files and environment; \
             use sandbox.kind = \"docker\", or set sandbox.allow_local = true where that is acceptable (a development machine)",
        )),
        "local" => {
            tracing::warn!(
                "local sandbox: tests run as this service's user, with its network and files"
            );
            Ok(Arc::new(LocalSandboxProvider::new(local_config(settings))))
        }
        "hardened" => {
            let mut hardened = HardenedConfig {
                require_namespaces: settings.require_namespaces,
                ..HardenedConfig::default()
            };
            hardened
                .hidden_paths
                .extend(settings.hidden_paths.iter().cloned());
            let provider = LocalSandboxProvider::with_isolation(
                local_config(settings),
                Isolation::Hardened(hardened),
            )?;
            Ok(Arc::new(provider))
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
            config.socket = settings.docker_socket.clone();
            if !settings.runtime.is_empty() {
                config.runtime = Some(settings.runtime.clone());
            }
            let provider = DockerSandboxProvider::connect(config).await?;
            let reaped = provider.reap(Reap::Orphans).await?;
            if reaped > 0 {
                tracing::info!(reaped, "removed leftover sandbox containers");
            }
            Ok(Arc::new(provider))
        }
        other => Err(Error::invalid(format!(
            "sandbox kind {other:?}: use \"hardened\", \"docker\" or \"local\""
        ))),
    }
}

/// The local runner's settings: the default allowlist plus the service's,
/// and this service's `PATH` (the toolchains it was deployed with).
fn local_config(settings: &SandboxSettings) -> LocalConfig {
    let mut local = LocalConfig::default();
    local
        .allowlist
        .programs
        .extend(settings.allow.iter().cloned());
    if let Some(path) = std::env::var_os("PATH") {
        local.path = path.to_string_lossy().into_owned();
    }
    local
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_local_sandbox_is_refused_unless_allowed() {
        let local = SandboxSettings {
            kind: "local".into(),
            ..SandboxSettings::default()
        };
        let refused = match provider(&local).await {
            Err(e) => e,
            Ok(_) => panic!("the local sandbox was opened without allow_local"),
        };
        assert!(refused.message.contains("allow_local"), "{refused}");
        let allowed = SandboxSettings {
            allow_local: true,
            ..local
        };
        assert!(provider(&allowed).await.is_ok());
    }

    #[tokio::test]
    async fn the_default_is_the_hardened_runner_and_needs_no_permission() {
        let settings = SandboxSettings::default();
        assert_eq!(settings.kind, "hardened");
        assert!(!settings.allow_local);
        let sandboxes = provider(&settings).await.expect("hardened runner");
        assert_eq!(sandboxes.name(), "local-hardened");
    }
}
