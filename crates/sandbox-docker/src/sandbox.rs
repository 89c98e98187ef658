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

//!
//! This module holds the sandbox and its life from start to close; running
//! one command is `exec.rs`, killing and cleaning up after commands is
//! `cleanup.rs`, the environment and the worktree hand-over `environment.rs`.

use crate::cgroup::Cgroup;
use crate::config::DockerConfig;
use crate::error::{docker as docker_error, force_remove};
use crate::ownership;
use bollard::Docker;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::Mutex;
use tracelab_domain::Result;
use tracelab_domain::ports::{CommandResult, CommandSpec, Sandbox};

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
    pub(crate) state: Arc<Mutex<State>>,
    /// The exec of the command running now, so a dropped future can wait
    /// for it to be gone.
    pub(crate) current_exec: std::sync::Mutex<Option<String>>,
    /// Host paths of the container's cgroup files, found after each start.
    pub(crate) cgroup: std::sync::Mutex<Cgroup>,
    pub(crate) closed: AtomicBool,
    pub(crate) removed: AtomicBool,
}

/// What the lock protects: knowledge about the container between commands.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// Remembers the worktree's directories between ownership walks.
    pub(crate) walker: ownership::Walker,
    /// The memory cgroup's `oom_kill` counter after the last command, when readable.
    pub(crate) oom_kills: Option<u64>,
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
                let Ok(docker) = config.client() else { return };
                if let Err(error) = force_remove(&docker, &id).await {
                    tracing::warn!(container = %id, %error, "could not remove a dropped sandbox; reap will");
                }
            });
        });
        if let Err(error) = spawned {
            tracing::warn!(%error, "could not start the sandbox clean-up thread");
        }
    }
}
