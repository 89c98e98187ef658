//! Killing and cleaning up: the command user's processes killed on a
//! timeout or a dropped future, leftovers swept after a command (counted in
//! the container's cgroup when the host can read it), the OOM counter, the
//! container restarted when nothing else works, and removed on close.

use crate::cgroup::{Cgroup, KEEPER_PROCESSES, parse_oom_kills};
use crate::error::{docker as docker_error, force_remove};
use crate::exec::start_failure;
use crate::sandbox::Inner;
use bollard::query_parameters::RestartContainerOptions;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tracelab_domain::Result;

impl Inner {
    /// After a kill: waits until the command's exec has stopped, restarting
    /// the container when it does not stop within the grace period.
    pub(crate) async fn wait_current_exec(&self) {
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

    /// Kills every process of the command user (`kill(-1)` spares the caller,
    /// PID 1 and, by permission, the keeper's processes; a fork racing with
    /// it is aborted by the kernel). Where the cgroup is visible, waits until
    /// only the keepers remain, retrying a few times because the kill itself
    /// cannot start while the pids limit is exhausted. Falls back to
    /// restarting the container.
    pub(crate) async fn kill_commands(&self) {
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
    pub(crate) async fn wait_for_keepers_only(&self, patience: Duration) -> Option<bool> {
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

    pub(crate) async fn restart(&self) -> Result<()> {
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
    pub(crate) async fn discover_cgroup(&self) {
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

    pub(crate) fn cgroup(&self) -> Cgroup {
        self.cgroup.lock().expect("cgroup lock").clone()
    }

    /// Kills what a finished command left running. Skipped when the cgroup
    /// shows only the keepers (the exited command may take a moment to be
    /// reaped, hence one short second look before paying for an exec).
    pub(crate) async fn sweep_leftovers(&self) {
        if self.may_have_leftovers() {
            tokio::time::sleep(Duration::from_millis(5)).await;
            if self.may_have_leftovers() {
                tracing::debug!(container = %self.container_id, "sweeping leftover processes");
                self.kill_commands().await;
            }
        }
    }

    /// Whether processes other than the keepers may be running (true when unknown).
    pub(crate) fn may_have_leftovers(&self) -> bool {
        self.cgroup().pids().is_none_or(|n| n > KEEPER_PROCESSES)
    }

    pub(crate) async fn read_oom_kills(&self) -> Option<u64> {
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

    pub(crate) async fn container_oom_killed(&self) -> bool {
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
        force_remove(&self.docker, &self.container_id)
            .await
            .map_err(|e| docker_error("remove container", e))?;
        self.removed.store(true, Ordering::SeqCst);
        Ok(())
    }
}
