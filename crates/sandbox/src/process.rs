//! Commands as process groups on the host.

use crate::capped::CappedOutput;
use crate::hardened::{Guarantees, Hardening, Isolation};
use crate::ownership::{Top, Walker};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tracelab_domain::allowlist::Allowlist;
use tracelab_domain::ports::{CommandResult, CommandSpec, Sandbox, SandboxProvider};
use tracelab_domain::{Error, Result};

/// Settings for local sandboxes. The caller (a service or the CLI) fills
/// `path` from its own environment; this crate never reads the environment.
#[derive(Debug, Clone)]
pub struct LocalConfig {
    pub allowlist: Allowlist,
    /// `PATH` inside the sandbox.
    pub path: String,
}

impl Default for LocalConfig {
    fn default() -> Self {
        Self {
            allowlist: Allowlist::default(),
            path: "/usr/local/bin:/usr/bin:/bin".into(),
        }
    }
}

/// Opens [`LocalSandbox`]es.
#[derive(Debug, Clone, Default)]
pub struct LocalSandboxProvider {
    config: LocalConfig,
    /// `None` for [`Isolation::None`].
    hardening: Option<Arc<Hardening>>,
}

impl LocalSandboxProvider {
    /// Commands without isolation ([`Isolation::None`]).
    pub fn new(config: LocalConfig) -> Self {
        Self {
            config,
            hardening: None,
        }
    }

    /// Commands with `isolation`. For [`Isolation::Hardened`] this probes,
    /// once, which mechanisms work here (a few short processes), logs what
    /// is and is not in force, and fails only when the configuration is
    /// invalid, when namespaces are required but refused, or when the
    /// service is root and cannot switch uid.
    pub fn with_isolation(config: LocalConfig, isolation: Isolation) -> Result<Self> {
        let hardening = match isolation {
            Isolation::None => None,
            Isolation::Hardened(hardened) => {
                let hardening = Hardening::detect(hardened, &config.path)?;
                let g = hardening.guarantees();
                if g.mechanism.is_some() {
                    tracing::info!(sandbox = %g.label(), guarantees = %g.describe(), "hardened local sandbox");
                } else {
                    tracing::warn!(sandbox = %g.label(), guarantees = %g.describe(), "hardened local sandbox WITHOUT namespaces");
                }
                if !g.not_in_force.is_empty() {
                    tracing::warn!(sandbox = %g.label(), not_in_force = %g.not_in_force.join("; "), "local sandbox: not in force");
                }
                Some(Arc::new(hardening))
            }
        };
        Ok(Self { config, hardening })
    }

    /// What commands of this provider's sandboxes are (and are not) protected by.
    pub fn guarantees(&self) -> Guarantees {
        self.hardening
            .as_ref()
            .map_or_else(Guarantees::none, |h| h.guarantees().clone())
    }

    /// [`Guarantees::describe`]: one paragraph for logs and status pages.
    pub fn describe(&self) -> String {
        self.guarantees().describe()
    }

    pub fn config(&self) -> &LocalConfig {
        &self.config
    }
}

#[async_trait::async_trait]
impl SandboxProvider for LocalSandboxProvider {
    fn name(&self) -> &str {
        if self.hardening.is_some() {
            "local-hardened"
        } else {
            "local"
        }
    }

    async fn open(&self, worktree: &Path, _label: &str) -> Result<Box<dyn Sandbox>> {
        if !worktree.is_dir() {
            return Err(Error::not_found(format!(
                "worktree {} does not exist",
                worktree.display()
            )));
        }
        let home = private_home()?;
        let mut sandbox = LocalSandbox {
            worktree: worktree.to_path_buf(),
            home,
            config: self.config.clone(),
            hardening: self.hardening.clone(),
            walker: Arc::new(Mutex::new(Walker::new(Top::Sticky))),
            closed: AtomicBool::new(false),
        };
        if let Some(hardening) = &self.hardening {
            // Bind mounts and the program lookup want the real path.
            sandbox.worktree = std::fs::canonicalize(worktree)
                .map_err(|e| Error::internal(format!("cannot resolve worktree: {e}")))?;
            prepare_home(&sandbox.home, hardening.owner())?;
            if hardening.owner().is_some() {
                crate::ownership::let_others_traverse(&sandbox.worktree).map_err(|e| {
                    Error::internal(format!(
                        "cannot let the sandbox uid reach {}: {e}",
                        sandbox.worktree.display()
                    ))
                })?;
            }
            sandbox.hand_over().await?;
        }
        Ok(Box::new(sandbox))
    }
}

/// Makes the hardened sandbox's home usable by the command uid. Git inside
/// the sandbox runs as that uid on a worktree whose `.git` stays root's, so
/// it is told to trust it; that file is only ever read by the sandbox's git.
fn prepare_home(home: &Path, owner: Option<(u32, u32)>) -> Result<()> {
    let gitconfig = home.join(".gitconfig");
    std::fs::write(&gitconfig, "[safe]\n\tdirectory = *\n")
        .map_err(|e| Error::internal(format!("cannot write sandbox home: {e}")))?;
    if let Some((uid, gid)) = owner {
        for p in [home, gitconfig.as_path()] {
            std::os::unix::fs::lchown(p, Some(uid), Some(gid))
                .map_err(|e| Error::internal(format!("cannot chown sandbox home: {e}")))?;
        }
    }
    Ok(())
}

/// A fresh empty directory used as `HOME`, so tools do not read the operator's dotfiles.
fn private_home() -> Result<PathBuf> {
    tempfile::Builder::new()
        .prefix("tracelab-home-")
        .tempdir()
        .map(tempfile::TempDir::keep)
        .map_err(|e| Error::internal(format!("cannot create sandbox home: {e}")))
}

/// Runs commands in one worktree on the host.
#[derive(Debug)]
pub struct LocalSandbox {
    worktree: PathBuf,
    home: PathBuf,
    config: LocalConfig,
    hardening: Option<Arc<Hardening>>,
    /// Hands new files to the command uid before each command (root service only).
    walker: Arc<Mutex<Walker>>,
    /// Set by `close`: the home is gone, so no command may run any more.
    closed: AtomicBool,
}

/// Kills a process group when dropped, so cancelling `exec` stops everything it started.
struct GroupGuard(Option<Pid>);

impl GroupGuard {
    fn kill(&mut self) {
        if let Some(pgid) = self.0.take() {
            // ESRCH (already gone) is the normal case after a clean exit.
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn pump(mut reader: impl AsyncRead + Unpin, sink: Arc<Mutex<CappedOutput>>) {
    let mut buf = [0u8; 8192];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => sink.lock().expect("output lock").push(&buf[..n]),
        }
    }
}

impl LocalSandbox {
    fn command(&self, spec: &CommandSpec) -> Command {
        let mut cmd = match &self.hardening {
            None => {
                let mut cmd = Command::new(&spec.argv[0]);
                cmd.args(&spec.argv[1..]);
                cmd
            }
            Some(hardening) => {
                let line = hardening.line(&self.worktree, &self.home, &spec.argv, &spec.env);
                let mut cmd = Command::new(&line[0]);
                cmd.args(&line[1..]);
                cmd
            }
        };
        cmd.current_dir(&self.worktree)
            .env_clear()
            .env("PATH", &self.config.path)
            .env("HOME", &self.home)
            .env("LANG", "C.UTF-8")
            .env("TZ", "UTC")
            .env("TRACELAB_SANDBOX", "local")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        // Hardened, the spec's variables are in the line instead: set by its
        // last step, they reach the command alone, never a privileged wrapper.
        if self.hardening.is_none() {
            cmd.envs(spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        }
        cmd
    }

    /// The `PATH` the command will see (the spec may override the default).
    fn command_path(&self, spec: &CommandSpec) -> String {
        spec.env
            .iter()
            .rev()
            .find(|(k, _)| k == "PATH")
            .map_or_else(|| self.config.path.clone(), |(_, v)| v.clone())
    }

    /// Gives what the engine created since the last command to the command uid.
    async fn hand_over(&self) -> Result<()> {
        let Some((uid, gid)) = self.hardening.as_ref().and_then(|h| h.owner()) else {
            return Ok(());
        };
        let walker = self.walker.clone();
        let root = self.worktree.clone();
        tokio::task::spawn_blocking(move || {
            walker
                .lock()
                .expect("walker lock")
                .hand_over(&root, uid, gid)
        })
        .await
        .map_err(|e| Error::internal(format!("worktree hand-over panicked: {e}")))?
        .map_err(|e| Error::internal(format!("cannot hand the worktree to uid {uid}: {e}")))?;
        Ok(())
    }
}

#[async_trait::async_trait]
impl Sandbox for LocalSandbox {
    fn describe(&self) -> String {
        self.hardening
            .as_ref()
            .map_or_else(|| "local".into(), |h| h.guarantees().label())
    }

    async fn exec(&self, spec: &CommandSpec) -> Result<CommandResult> {
        spec.check(&self.config.allowlist)?;
        if self.closed.load(Ordering::SeqCst) {
            return Err(Error::conflict("sandbox is closed"));
        }
        let started = Instant::now();
        if let Some(hardening) = &self.hardening {
            // `env` would read a program name with `=` as a variable.
            if !spec.env.is_empty() && spec.argv[0].contains('=') {
                return Ok(CommandResult {
                    exit_code: None,
                    duration: started.elapsed(),
                    output: String::new(),
                    blocked: Some(format!("program name {:?} contains '='", spec.argv[0])),
                });
            }
            // Inside, a missing program would be the wrappers' exit 127;
            // say it the way an unwrapped spawn does.
            if !hardening.resolves(
                &spec.argv[0],
                &self.command_path(spec),
                &self.worktree,
                &self.home,
            ) {
                return Ok(CommandResult {
                    exit_code: None,
                    duration: started.elapsed(),
                    output: String::new(),
                    blocked: Some(format!("program not found: {}", spec.argv[0])),
                });
            }
            self.hand_over().await?;
        }
        let mut child = match self.command(spec).spawn() {
            Ok(child) => child,
            Err(e) => {
                let reason = if e.kind() == std::io::ErrorKind::NotFound {
                    format!("program not found: {}", spec.argv[0])
                } else {
                    format!("cannot start {}: {e}", spec.argv[0])
                };
                return Ok(CommandResult {
                    exit_code: None,
                    duration: started.elapsed(),
                    output: String::new(),
                    blocked: Some(reason),
                });
            }
        };
        let mut group = GroupGuard(child.id().map(|id| Pid::from_raw(id as i32)));
        let sink = Arc::new(Mutex::new(CappedOutput::new(spec.output_limit)));
        let out = tokio::spawn(pump(
            child.stdout.take().expect("piped stdout"),
            sink.clone(),
        ));
        let err = tokio::spawn(pump(
            child.stderr.take().expect("piped stderr"),
            sink.clone(),
        ));

        let waited = tokio::time::timeout(spec.timeout, child.wait()).await;
        // Whatever happened, nothing of this group may outlive the experiment;
        // killing also closes pipes held open by leftover grandchildren.
        group.kill();
        let (exit_code, blocked) = match waited {
            Ok(Ok(status)) => (
                status.code(),
                status
                    .code()
                    .is_none()
                    .then(|| format!("killed by signal {status}")),
            ),
            Ok(Err(e)) => (None, Some(format!("waiting for the command failed: {e}"))),
            Err(_) => {
                let _ = child.wait().await;
                (
                    None,
                    Some(format!("timed out after {} s", spec.timeout.as_secs_f64())),
                )
            }
        };
        // Drain the streams (bounded: the group is dead, so the pipes close).
        let drain = Duration::from_secs(5);
        let _ = tokio::time::timeout(drain, out).await;
        let _ = tokio::time::timeout(drain, err).await;
        let output = Arc::try_unwrap(sink)
            .map(|m| m.into_inner().expect("output lock").into_string())
            .unwrap_or_else(|shared| {
                std::mem::replace(
                    &mut *shared.lock().expect("output lock"),
                    CappedOutput::new(1),
                )
                .into_string()
            });
        Ok(CommandResult {
            exit_code,
            duration: started.elapsed(),
            output,
            blocked,
        })
    }

    async fn close(&self) -> Result<()> {
        self.closed.store(true, Ordering::SeqCst);
        match tokio::fs::remove_dir_all(&self.home).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::internal(format!("cannot remove sandbox home: {e}"))),
        }
    }
}

impl Drop for LocalSandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(argv: &[&str], timeout_ms: u64) -> CommandSpec {
        CommandSpec {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            env: vec![("EXTRA".into(), "1".into())],
            timeout: Duration::from_millis(timeout_ms),
            output_limit: 4096,
        }
    }

    async fn sandbox(dir: &Path) -> Box<dyn Sandbox> {
        LocalSandboxProvider::default()
            .open(dir, "test")
            .await
            .unwrap()
    }

    /// The two streams are read concurrently into one capped buffer in the
    /// order bytes arrive, so only the order within one stream is
    /// guaranteed: the tail of a stream's last write is what is kept.
    #[tokio::test]
    async fn huge_output_is_capped() {
        let dir = tempfile::tempdir().unwrap();
        let sb = sandbox(dir.path()).await;
        for stream in ["stdout", "stderr"] {
            let program = format!(
                "import sys; sys.{stream}.write('x' * 5_000_000); sys.{stream}.write('END'); sys.{stream}.flush()"
            );
            let r = sb
                .exec(&spec(&["python3", "-c", &program], 20_000))
                .await
                .unwrap();
            assert!(r.passed(), "{stream}: {r:?}");
            assert!(
                r.output.len() < 5000,
                "{stream}: {} bytes kept",
                r.output.len()
            );
            assert!(r.output.starts_with("xxxx"), "{stream}: head kept");
            assert!(r.output.ends_with("END"), "{stream}: tail kept");
        }
    }
}
