//! One warm container per worktree; commands run in it by `docker exec`.
//!
//! Life of a command ([`DockerSandbox::exec`]):
//!
//! 1. refused unless its program is allowlisted and its environment is sane;
//! 2. waits for the sandbox's lock: one command at a time per container, so a
//!    command's leftovers can be told apart from the next command;
//! 3. the worktree is handed to the container user (see [`crate::ownership`]);
//! 4. `docker exec` as the container user, in `/work`, with a fixed minimal
//!    environment plus the spec's variables; stdout and stderr are read as one
//!    stream into a bounded head-and-tail capture until the wall-clock limit;
//! 5. on the limit: every process of the container user is killed with one
//!    `kill -KILL -1` exec (the container's own init and keep-alive run as a
//!    different uid, so they survive); if that cannot run (pids exhausted) or
//!    the stream still does not end, the container is restarted;
//! 6. the exit code is read only once the stream has ended;
//! 7. if the container's pids cgroup (read on the host) shows more than the
//!    init and the keep-alive, a sweep (`kill -KILL -1` again) removes what
//!    the command left running, so re-runs start from the same state;
//! 8. exit 137 is checked against the memory cgroup's `oom_kill` counter to
//!    report a memory-limit kill; a program Docker could not start is reported
//!    as blocked with the reason.

use crate::cgroup::{Cgroup, KEEPER_PROCESSES};
use crate::config::{DockerConfig, Ownership, WORKDIR};
use crate::error::{docker as docker_error, is_not_found};
use crate::ownership;
use bollard::Docker;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use bollard::query_parameters::{RemoveContainerOptions, RestartContainerOptions};
use futures_util::StreamExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::{Mutex, OwnedMutexGuard};
use tracelab_domain::ports::{CommandResult, CommandSpec, Sandbox};
use tracelab_domain::{Error, ErrorKind, Result};
use tracelab_sandbox::CappedOutput;

/// The environment every command starts from; the spec's variables go on top.
pub const BASE_ENV: [(&str, &str); 4] = [
    (
        "PATH",
        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    ),
    ("HOME", "/tmp"),
    ("LANG", "C.UTF-8"),
    ("TZ", "UTC"),
];

/// Limit for the sandbox's own short housekeeping execs (kill, counters).
const HOUSEKEEPING_TIMEOUT: Duration = Duration::from_secs(10);

/// A sandbox backed by one running container. Cheap to share by reference;
/// commands on one sandbox run one at a time.
pub struct DockerSandbox {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) docker: Docker,
    pub(crate) config: Arc<DockerConfig>,
    pub(crate) container_id: String,
    pub(crate) image_id: String,
    pub(crate) worktree: PathBuf,
    pub(crate) label: String,
    state: Arc<Mutex<State>>,
    /// The exec of the command running now, so a dropped future can wait
    /// for it to be gone.
    current_exec: std::sync::Mutex<Option<String>>,
    /// Host paths of the container's cgroup files, found after each start.
    cgroup: std::sync::Mutex<Cgroup>,
    closed: AtomicBool,
    removed: AtomicBool,
}

/// What the lock protects: knowledge about the container between commands.
#[derive(Debug, Default)]
struct State {
    /// Remembers the worktree's directories between ownership walks.
    walker: ownership::Walker,
    /// The memory cgroup's `oom_kill` counter after the last command, when readable.
    oom_kills: Option<u64>,
}

impl std::fmt::Debug for DockerSandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DockerSandbox")
            .field("container", &self.inner.container_id)
            .field("image", &self.inner.image_id)
            .field("worktree", &self.inner.worktree)
            .field("label", &self.inner.label)
            .finish()
    }
}

impl DockerSandbox {
    pub(crate) async fn start(
        docker: Docker,
        config: Arc<DockerConfig>,
        container_id: String,
        image_id: String,
        worktree: PathBuf,
        label: String,
        walker: ownership::Walker,
    ) -> Result<Self> {
        let inner = Arc::new(Inner {
            docker,
            config,
            container_id,
            image_id,
            worktree,
            label,
            state: Arc::new(Mutex::new(State {
                walker,
                oom_kills: None,
            })),
            current_exec: std::sync::Mutex::new(None),
            cgroup: std::sync::Mutex::new(Cgroup::default()),
            closed: AtomicBool::new(false),
            removed: AtomicBool::new(false),
        });
        let sandbox = Self { inner };
        if let Err(error) = sandbox
            .inner
            .docker
            .start_container(&sandbox.inner.container_id, None)
            .await
        {
            let error = docker_error("start container", error);
            let _ = sandbox.close().await;
            return Err(error);
        }
        sandbox.inner.discover_cgroup().await;
        let baseline = sandbox.inner.read_oom_kills().await;
        sandbox.inner.state.lock().await.oom_kills = baseline;
        Ok(sandbox)
    }

    /// Id of the container (for logs and operators).
    pub fn container_id(&self) -> &str {
        &self.inner.container_id
    }

    /// Id of the image the container runs (`sha256:...`).
    pub fn image_id(&self) -> &str {
        &self.inner.image_id
    }

    /// The host directory mounted at `/work`.
    pub fn worktree(&self) -> &Path {
        &self.inner.worktree
    }
}

/// Runs an ownership walk off the async threads and gives the walker back.
pub(crate) async fn hand_over(
    mut walker: ownership::Walker,
    root: &Path,
    (uid, gid): (u32, u32),
) -> Result<ownership::Walker> {
    let root = root.to_path_buf();
    tokio::task::spawn_blocking(move || walker.hand_over(&root, uid, gid).map(|_| walker))
        .await
        .map_err(|e| Error::internal(format!("worktree ownership task failed: {e}")))?
        .map_err(|e| Error::internal(format!("cannot hand the worktree to uid {uid}: {e}")))
}

/// The fixed environment with `extra` applied on top (same key replaces).
pub fn environment(extra: &[(String, String)]) -> Vec<String> {
    let mut env: Vec<(String, String)> = BASE_ENV
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    for (key, value) in extra {
        match env.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value.clone(),
            None => env.push((key.clone(), value.clone())),
        }
    }
    env.into_iter().map(|(k, v)| format!("{k}={v}")).collect()
}

/// "timed out after 2 s", "timed out after 0.5 s".
pub(crate) fn seconds(duration: Duration) -> String {
    if duration.subsec_millis() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

/// Parses `oom_kill N` out of cgroup v2 `memory.events` or v1 `memory.oom_control`.
pub(crate) fn parse_oom_kills(text: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        line.strip_prefix("oom_kill ")
            .and_then(|n| n.trim().parse().ok())
    })
}

/// Recognises Docker's own report that it could not start the program.
pub(crate) fn start_failure(exit_code: i64, output: &str, program: &str) -> Option<String> {
    if !(exit_code == 126 || exit_code == 127) || !output.contains("OCI runtime exec failed") {
        return None;
    }
    let lower = output.to_ascii_lowercase();
    Some(
        if lower.contains("executable file not found")
            || lower.contains("no such file or directory")
        {
            format!("program {program:?} not found in the sandbox image")
        } else if lower.contains("permission denied") {
            format!("program {program:?} is not executable in the sandbox")
        } else {
            format!(
                "could not start {program:?}: {}",
                output.lines().next().unwrap_or_default().trim()
            )
        },
    )
}

/// Kills the command if its future is dropped before it finished, and keeps
/// the sandbox locked until that is done.
struct Running {
    inner: Arc<Inner>,
    lock: Option<OwnedMutexGuard<State>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let Some(lock) = self.lock.take() else { return };
        let inner = self.inner.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                inner.kill_commands().await;
                inner.wait_current_exec().await;
                drop(lock);
            });
        }
    }
}

impl Running {
    fn state(&mut self) -> &mut State {
        self.lock.as_mut().expect("lock held while running")
    }

    fn finish(mut self) {
        self.lock.take();
    }
}

/// Output and exit status of an exec.
struct Finished {
    output: String,
    exit_code: Option<i64>,
    timed_out: bool,
    duration: Duration,
}

impl Inner {
    /// Creates and starts an exec; restarts the container once if it had stopped.
    async fn start_exec(
        &self,
        argv: &[String],
        env: Vec<String>,
        (uid, gid): (u32, u32),
    ) -> Result<(String, StartExecResults)> {
        let options = CreateExecOptions {
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            attach_stdin: Some(false),
            tty: Some(false),
            cmd: Some(argv.to_vec()),
            env: Some(env),
            user: Some(format!("{uid}:{gid}")),
            working_dir: Some(WORKDIR.to_string()),
            ..Default::default()
        };
        let created = match self
            .docker
            .create_exec(&self.container_id, options.clone())
            .await
        {
            Ok(created) => created,
            Err(error) if !self.closed.load(Ordering::SeqCst) && is_conflict(&error) => {
                tracing::warn!(container = %self.container_id, "sandbox container was not running; restarting it");
                self.restart().await?;
                self.docker
                    .create_exec(&self.container_id, options)
                    .await
                    .map_err(|e| docker_error("create exec", e))?
            }
            Err(error) => return Err(self.gone_or(docker_error("create exec", error))),
        };
        let started = self
            .docker
            .start_exec(
                &created.id,
                Some(StartExecOptions {
                    detach: false,
                    tty: false,
                    output_capacity: Some(64 * 1024),
                }),
            )
            .await
            .map_err(|e| docker_error("start exec", e))?;
        Ok((created.id, started))
    }

    fn gone_or(&self, error: Error) -> Error {
        if self.closed.load(Ordering::SeqCst) {
            Error::conflict(format!("sandbox {} is closed", self.label))
        } else {
            error
        }
    }

    /// Runs argv to the end of its output or `limit`, whichever comes first.
    /// On the limit, with `kill_on_timeout`, the user's processes are killed
    /// (restart as a fallback); housekeeping execs just give up.
    async fn run(
        &self,
        argv: &[String],
        env: Vec<String>,
        user: (u32, u32),
        limit: Duration,
        output_limit: usize,
        kill_on_timeout: bool,
    ) -> Result<Finished> {
        let started_at = Instant::now();
        let (exec_id, started) = self.start_exec(argv, env, user).await?;
        if kill_on_timeout {
            *self.current_exec.lock().expect("current exec lock") = Some(exec_id.clone());
        }
        let StartExecResults::Attached { mut output, input } = started else {
            return Err(Error::internal("docker started the exec detached"));
        };
        drop(input);
        let mut capture = CappedOutput::new(output_limit);
        // A limit too large to represent means "no limit" in practice: a year.
        let deadline = started_at
            .checked_add(limit)
            .unwrap_or_else(|| started_at + Duration::from_secs(365 * 24 * 3600));
        let deadline = tokio::time::Instant::from_std(deadline);
        let mut timed_out = false;
        let mut stream_error = None;
        loop {
            match tokio::time::timeout_at(deadline, output.next()).await {
                Ok(Some(Ok(chunk))) => capture.push(&chunk.into_bytes()),
                Ok(Some(Err(error))) => {
                    stream_error = Some(error);
                    break;
                }
                Ok(None) => break,
                Err(_) => {
                    timed_out = true;
                    break;
                }
            }
        }
        let duration = started_at.elapsed();
        if timed_out && !kill_on_timeout {
            return Ok(Finished {
                output: capture.into_string(),
                exit_code: None,
                timed_out,
                duration,
            });
        }
        if timed_out {
            self.kill_commands().await;
            // The stream ends once no process holds its pipes any more.
            let grace = tokio::time::Instant::now() + self.config.kill_grace;
            loop {
                match tokio::time::timeout_at(grace, output.next()).await {
                    Ok(Some(Ok(chunk))) => capture.push(&chunk.into_bytes()),
                    Ok(Some(Err(_)) | None) => break,
                    Err(_) => {
                        tracing::warn!(container = %self.container_id, "output did not end after kill; restarting");
                        drop(output);
                        self.restart().await?;
                        break;
                    }
                }
            }
            return Ok(Finished {
                output: capture.into_string(),
                exit_code: None,
                timed_out,
                duration,
            });
        }
        drop(output);
        if let Some(error) = stream_error {
            return Err(self.gone_or(docker_error("read exec output", error)));
        }
        let exit_code = self.exit_code(&exec_id).await?;
        Ok(Finished {
            output: capture.into_string(),
            exit_code,
            timed_out,
            duration,
        })
    }

    /// After a kill: waits until the command's exec has stopped, restarting
    /// the container when it does not stop within the grace period.
    async fn wait_current_exec(&self) {
        let Some(exec_id) = self.current_exec.lock().expect("current exec lock").take() else {
            return;
        };
        let deadline = Instant::now() + self.config.kill_grace;
        while Instant::now() < deadline {
            match self.docker.inspect_exec(&exec_id).await {
                Ok(inspect) if inspect.running == Some(true) => {
                    tokio::time::sleep(Duration::from_millis(20)).await
                }
                _ => return,
            }
        }
        if let Err(error) = self.restart().await {
            tracing::error!(container = %self.container_id, %error, "sandbox restart failed");
        }
    }

    /// Reads the exit code once the exec has stopped running. Its output
    /// has ended, so the process is exiting; a loaded engine can take a
    /// while to say so, hence a deadline rather than a number of polls.
    async fn exit_code(&self, exec_id: &str) -> Result<Option<i64>> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        let mut pause = Duration::from_millis(5);
        loop {
            let inspect = self
                .docker
                .inspect_exec(exec_id)
                .await
                .map_err(|e| self.gone_or(docker_error("inspect exec", e)))?;
            if inspect.running != Some(true) {
                return Ok(inspect.exit_code);
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(200));
        }
    }

    /// A short housekeeping command as `uid`; returns its exit code and output.
    async fn housekeeping(&self, argv: &[&str], user: (u32, u32)) -> Result<(Option<i64>, String)> {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let finished = self
            .run(
                &argv,
                environment(&[]),
                user,
                HOUSEKEEPING_TIMEOUT,
                4096,
                false,
            )
            .await?;
        if finished.timed_out {
            return Err(Error::new(
                ErrorKind::Timeout,
                format!("sandbox housekeeping {argv:?} timed out"),
            ));
        }
        Ok((finished.exit_code, finished.output))
    }

    /// Kills every process of the command user (`kill(-1)` spares the caller,
    /// PID 1 and, by permission, the keeper's processes; a fork racing with
    /// it is aborted by the kernel). Where the cgroup is visible, waits until
    /// only the keepers remain, retrying a few times because the kill itself
    /// cannot start while the pids limit is exhausted. Falls back to
    /// restarting the container.
    async fn kill_commands(&self) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        let user = self.config.user;
        for attempt in 0..5 {
            let outcome = Box::pin(self.housekeeping(&["kill", "-KILL", "-1"], user)).await;
            let ran = match &outcome {
                Ok((Some(code), output)) => start_failure(*code, output, "kill").is_none(),
                Ok((None, _)) => false,
                Err(error) => {
                    tracing::debug!(container = %self.container_id, %error, attempt, "kill did not run");
                    false
                }
            };
            match (
                ran,
                self.wait_for_keepers_only(Duration::from_secs(1)).await,
            ) {
                (_, Some(true)) | (true, None) => return,
                _ => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
        tracing::warn!(container = %self.container_id, "cannot kill leftovers in place; restarting the sandbox");
        if let Err(error) = self.restart().await {
            tracing::error!(container = %self.container_id, %error, "sandbox restart failed");
        }
    }

    /// `Some(true)` once the cgroup holds only the keepers, `Some(false)` if
    /// it still holds more after `patience`, `None` when it is not visible.
    async fn wait_for_keepers_only(&self, patience: Duration) -> Option<bool> {
        let cgroup = self.cgroup();
        let deadline = Instant::now() + patience;
        loop {
            if cgroup.pids()? <= KEEPER_PROCESSES {
                return Some(true);
            }
            if Instant::now() >= deadline {
                return Some(false);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    async fn restart(&self) -> Result<()> {
        self.docker
            .restart_container(
                &self.container_id,
                Some(RestartContainerOptions {
                    t: Some(0),
                    signal: None,
                }),
            )
            .await
            .map_err(|e| self.gone_or(docker_error("restart container", e)))?;
        self.discover_cgroup().await;
        Ok(())
    }

    /// Finds the container's cgroup files on the host (new after each start).
    async fn discover_cgroup(&self) {
        let pid = match self
            .docker
            .inspect_container(&self.container_id, None)
            .await
        {
            Ok(inspect) => inspect.state.and_then(|s| s.pid).unwrap_or(0),
            Err(_) => 0,
        };
        let found = if pid > 0 {
            Cgroup::discover(Path::new("/proc"), Path::new("/sys/fs/cgroup"), pid)
        } else {
            Cgroup::default()
        };
        tracing::debug!(container = %self.container_id, ?found, "sandbox cgroup files");
        *self.cgroup.lock().expect("cgroup lock") = found;
    }

    fn cgroup(&self) -> Cgroup {
        self.cgroup.lock().expect("cgroup lock").clone()
    }

    /// Kills what a finished command left running. Skipped when the cgroup
    /// shows only the keepers (the exited command may take a moment to be
    /// reaped, hence one short second look before paying for an exec).
    async fn sweep_leftovers(&self) {
        if self.may_have_leftovers() {
            tokio::time::sleep(Duration::from_millis(5)).await;
            if self.may_have_leftovers() {
                tracing::debug!(container = %self.container_id, "sweeping leftover processes");
                self.kill_commands().await;
            }
        }
    }

    /// Whether processes other than the keepers may be running (true when unknown).
    fn may_have_leftovers(&self) -> bool {
        self.cgroup().pids().is_none_or(|n| n > KEEPER_PROCESSES)
    }

    async fn read_oom_kills(&self) -> Option<u64> {
        if let Some(count) = self.cgroup().oom_kills() {
            return Some(count);
        }
        let argv = [
            "cat",
            "/sys/fs/cgroup/memory.events",
            "/sys/fs/cgroup/memory/memory.oom_control",
        ];
        match Box::pin(self.housekeeping(&argv, self.config.keeper_user)).await {
            Ok((_, text)) => parse_oom_kills(&text),
            Err(error) => {
                tracing::debug!(container = %self.container_id, %error, "cannot read the oom_kill counter");
                None
            }
        }
    }

    async fn exec(self: &Arc<Self>, spec: &CommandSpec) -> Result<CommandResult> {
        let lock = self.state.clone().lock_owned().await;
        if self.closed.load(Ordering::SeqCst) {
            return Err(Error::conflict(format!("sandbox {} is closed", self.label)));
        }
        let mut running = Running {
            inner: self.clone(),
            lock: Some(lock),
        };
        if self.config.ownership == Ownership::ChownBeforeEachExec {
            let walker = std::mem::take(&mut running.state().walker);
            running.state().walker = hand_over(walker, &self.worktree, self.config.user).await?;
        }
        let finished = self
            .run(
                &spec.argv,
                environment(&spec.env),
                self.config.user,
                spec.timeout,
                spec.output_limit,
                true,
            )
            .await?;
        let program = spec.argv[0].as_str();
        let mut result = CommandResult {
            exit_code: finished.exit_code.map(|c| c as i32),
            duration: finished.duration,
            output: finished.output,
            blocked: None,
        };
        if finished.timed_out {
            result.blocked = Some(format!("timed out after {}", seconds(spec.timeout)));
            running.finish();
            return Ok(result);
        }
        // Anything the command left behind goes before the next one starts.
        self.sweep_leftovers().await;
        match finished.exit_code {
            None => {
                result.blocked =
                    Some("exit status unavailable: the sandbox lost track of the command".into())
            }
            Some(code) => {
                if let Some(reason) = start_failure(code, &result.output, program) {
                    result.exit_code = None;
                    result.blocked = Some(reason);
                } else if code == 137 {
                    let before = running.state().oom_kills;
                    let after = self.read_oom_kills().await;
                    running.state().oom_kills = after;
                    let oom = match (before, after) {
                        // A restarted container starts a new cgroup whose counter is lower.
                        (Some(b), Some(a)) => a > b || (a < b && a > 0),
                        _ => self.container_oom_killed().await,
                    };
                    if oom {
                        result.exit_code = None;
                        result.blocked = Some(format!(
                            "killed: memory limit {} MiB exceeded (exit status 137)",
                            self.config.memory_mib
                        ));
                    }
                }
            }
        }
        running.finish();
        Ok(result)
    }

    async fn container_oom_killed(&self) -> bool {
        match self
            .docker
            .inspect_container(&self.container_id, None)
            .await
        {
            Ok(inspect) => inspect.state.and_then(|s| s.oom_killed).unwrap_or(false),
            Err(_) => false,
        }
    }

    pub(crate) async fn remove(&self) -> Result<()> {
        self.closed.store(true, Ordering::SeqCst);
        if self.removed.load(Ordering::SeqCst) {
            return Ok(());
        }
        let options = RemoveContainerOptions {
            force: true,
            v: true,
            link: false,
        };
        match self
            .docker
            .remove_container(&self.container_id, Some(options))
            .await
        {
            Ok(()) => {}
            Err(error) if is_not_found(&error) || is_removal_in_progress(&error) => {}
            Err(error) => return Err(docker_error("remove container", error)),
        }
        self.removed.store(true, Ordering::SeqCst);
        Ok(())
    }
}

fn is_conflict(error: &bollard::errors::Error) -> bool {
    matches!(
        error,
        bollard::errors::Error::DockerResponseServerError {
            status_code: 409,
            ..
        }
    )
}

fn is_removal_in_progress(error: &bollard::errors::Error) -> bool {
    matches!(error, bollard::errors::Error::DockerResponseServerError { status_code: 409, message } if message.contains("already in progress"))
}

#[async_trait::async_trait]
impl Sandbox for DockerSandbox {
    fn describe(&self) -> String {
        format!("docker@{}", self.inner.image_id)
    }

    async fn exec(&self, spec: &CommandSpec) -> Result<CommandResult> {
        spec.check(&self.inner.config.allowlist)?;
        self.inner.exec(spec).await
    }

    async fn close(&self) -> Result<()> {
        self.inner.remove().await
    }
}

impl Drop for DockerSandbox {
    /// Best effort: the container goes even when `close` was never awaited.
    /// Runs on its own thread with a fresh client, because the caller's
    /// runtime may be shutting down. [`crate::DockerSandboxProvider::reap`]
    /// catches what a crash leaves.
    fn drop(&mut self) {
        if self.inner.removed.load(Ordering::SeqCst) {
            return;
        }
        self.inner.closed.store(true, Ordering::SeqCst);
        let id = self.inner.container_id.clone();
        let config = self.inner.config.clone();
        let spawned = std::thread::Builder::new().name("tracelab-sandbox-drop".into()).spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
            runtime.block_on(async move {
                let Ok(docker) = crate::provider::connect_client(&config) else { return };
                let options = RemoveContainerOptions { force: true, v: true, link: false };
                if let Err(error) = docker.remove_container(&id, Some(options)).await
                    && !is_not_found(&error)
                {
                    tracing::warn!(container = %id, %error, "could not remove a dropped sandbox; reap will");
                }
            });
        });
        if let Err(error) = spawned {
            tracing::warn!(%error, "could not start the sandbox clean-up thread");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_is_fixed_then_extended() {
        let env = environment(&[
            ("TZ".into(), "Europe/Paris".into()),
            ("SEED".into(), "1".into()),
        ]);
        assert_eq!(
            env,
            [
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "HOME=/tmp",
                "LANG=C.UTF-8",
                "TZ=Europe/Paris",
                "SEED=1"
            ]
        );
    }

    #[test]
    fn reads_oom_counters_of_both_cgroup_versions() {
        assert_eq!(
            parse_oom_kills("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n"),
            Some(1)
        );
        assert_eq!(
            parse_oom_kills("oom_kill_disable 0\nunder_oom 0\noom_kill 4\n"),
            Some(4)
        );
        assert_eq!(
            parse_oom_kills("cat: nope: No such file or directory\n"),
            None
        );
    }

    #[test]
    fn recognises_programs_docker_cannot_start() {
        let missing = "OCI runtime exec failed: exec failed: container_linux.go:380: starting container process caused: exec: \"cargo\": executable file not found in $PATH: unknown\r\n";
        assert_eq!(
            start_failure(126, missing, "cargo").unwrap(),
            "program \"cargo\" not found in the sandbox image"
        );
        assert!(start_failure(1, missing, "cargo").is_none());
        assert!(start_failure(127, "python3: can't open file", "python3").is_none());
        assert_eq!(seconds(Duration::from_secs(3)), "3 s");
        assert_eq!(seconds(Duration::from_millis(1500)), "1.5 s");
    }
}
