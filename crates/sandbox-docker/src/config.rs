//! Knobs of the Docker sandbox, with the defaults a verifier should start from.

use std::path::PathBuf;
use std::time::Duration;
use tracelab_domain::allowlist::Allowlist;
use tracelab_domain::{Error, Result};

/// The image every sandbox starts from unless a repository recipe is built
/// (`deploy/sandbox/build-base-image.sh` builds it).
pub const BASE_IMAGE: &str = "tracelab-sandbox-base:bookworm";

/// Mount point of the worktree inside the container; also the working directory.
pub const WORKDIR: &str = "/work";

/// Configuration of a [`crate::DockerSandboxProvider`]. Services fill it from
/// their `sandbox` config section; this crate never reads the environment.
#[derive(Debug, Clone, PartialEq)]
pub struct DockerConfig {
    /// Unix socket of the Docker engine (local only: no TCP, no TLS).
    pub socket: PathBuf,
    /// Time the daemon has to answer one API request (not the command's limit).
    pub api_timeout: Duration,
    /// Image reference (tag or id) sandboxes are created from. Resolved to an
    /// image id once, at connect time, so every sandbox of a provider runs the
    /// same bits even if the tag moves.
    pub image: String,
    /// CPUs per container (CFS quota), e.g. `1.0`.
    pub cpus: f64,
    /// Memory per container in MiB; swap is disabled (memory-swap = memory).
    pub memory_mib: u64,
    /// Maximum number of processes and threads per container.
    pub pids_limit: i64,
    /// Size of the `/tmp` tmpfs (also `HOME`) in MiB; counts against `memory_mib`.
    pub tmpfs_mib: u64,
    /// uid:gid commands run as. The worktree is handed to this uid.
    pub user: (u32, u32),
    /// uid:gid of the container's own processes (init and the keep-alive
    /// sleep). Deliberately different from `user`, so that killing "every
    /// process of `user`" clears a command's leftovers without stopping the
    /// container. Non-root, owns nothing.
    pub keeper_user: (u32, u32),
    /// Programs a command may start (checked before anything reaches Docker).
    pub allowlist: Allowlist,
    /// How the container user gets write access to the worktree.
    pub ownership: Ownership,
    /// Extra time after a command's limit for its output stream to end once
    /// its processes were killed, before the sandbox is restarted instead.
    pub kill_grace: Duration,
}

/// How the worktree becomes writable for the container user (uid `user.0`),
/// given that the engine runs git on the host as root between commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ownership {
    /// Before every command, hand every path not yet owned by the container
    /// user to it (`lchown`, `.git` excluded). Files the engine created as root
    /// since the last command become writable. Costs one metadata walk.
    ChownBeforeEachExec,
    /// Only once, when the sandbox opens.
    ChownOnOpen,
    /// Never touch ownership (the caller prepared the worktree).
    Leave,
}

impl Default for DockerConfig {
    fn default() -> Self {
        Self {
            socket: PathBuf::from("/var/run/docker.sock"),
            api_timeout: Duration::from_secs(60),
            image: BASE_IMAGE.to_string(),
            cpus: 1.0,
            memory_mib: 1024,
            pids_limit: 256,
            tmpfs_mib: 256,
            user: (10001, 10001),
            keeper_user: (65534, 65534),
            allowlist: Allowlist::default(),
            ownership: Ownership::ChownBeforeEachExec,
            kill_grace: Duration::from_secs(5),
        }
    }
}

impl DockerConfig {
    /// Fails fast on values Docker would reject or that defeat the sandbox.
    pub fn validate(&self) -> Result<()> {
        if !(self.cpus.is_finite() && self.cpus >= 0.01) {
            return Err(Error::invalid(format!(
                "sandbox cpus must be at least 0.01, got {}",
                self.cpus
            )));
        }
        if self.memory_mib < 16 {
            return Err(Error::invalid(format!(
                "sandbox memory_mib must be at least 16, got {}",
                self.memory_mib
            )));
        }
        if self.pids_limit < 8 {
            return Err(Error::invalid(format!(
                "sandbox pids_limit must be at least 8, got {}",
                self.pids_limit
            )));
        }
        if self.tmpfs_mib == 0 || self.tmpfs_mib > self.memory_mib {
            return Err(Error::invalid(format!(
                "sandbox tmpfs_mib must be between 1 and memory_mib ({}), got {}",
                self.memory_mib, self.tmpfs_mib
            )));
        }
        if self.user.0 == 0 || self.keeper_user.0 == 0 {
            return Err(Error::invalid("sandbox users must not be root (uid 0)"));
        }
        if self.user.0 == self.keeper_user.0 {
            return Err(Error::invalid(
                "sandbox user and keeper_user must differ (see DockerConfig::keeper_user)",
            ));
        }
        if self.image.trim().is_empty() {
            return Err(Error::invalid("sandbox image must not be empty"));
        }
        if self.allowlist.programs.is_empty() {
            return Err(Error::invalid(
                "sandbox allowlist is empty: no command could run",
            ));
        }
        Ok(())
    }

    pub(crate) fn memory_bytes(&self) -> i64 {
        i64::try_from(self.memory_mib.saturating_mul(1024 * 1024)).unwrap_or(i64::MAX)
    }

    pub(crate) fn nano_cpus(&self) -> i64 {
        (self.cpus * 1e9).round() as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_refuse_unsafe_values() {
        let config = DockerConfig::default();
        config.validate().unwrap();
        assert_eq!(config.nano_cpus(), 1_000_000_000);
        assert_eq!(config.memory_bytes(), 1024 * 1024 * 1024);
        let root = DockerConfig {
            user: (0, 0),
            ..DockerConfig::default()
        };
        assert!(root.validate().unwrap_err().message.contains("root"));
        let same = DockerConfig {
            keeper_user: (10001, 10001),
            ..DockerConfig::default()
        };
        assert!(same.validate().unwrap_err().message.contains("differ"));
        let tmpfs = DockerConfig {
            tmpfs_mib: 4096,
            ..DockerConfig::default()
        };
        assert!(tmpfs.validate().is_err());
    }
}
