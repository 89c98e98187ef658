//! A pool of `k` probe slots, each a detached worktree with an open sandbox,
//! so that k revisions (or k re-runs) are tested at once. Slots are created
//! lazily and reused: moving a slot to another revision is a checkout, not a
//! new worktree or container.

use crate::git::Worktree;
use crate::workspace::Workspace;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::{Mutex, Semaphore};
use tracelab_domain::Result;
use tracelab_domain::ports::{CommandResult, CommandSpec, Sandbox, SandboxProvider};

struct Slot {
    worktree: Worktree,
    sandbox: Box<dyn Sandbox>,
}

pub struct Pool {
    workspace: Arc<Workspace>,
    provider: Arc<dyn SandboxProvider>,
    label: String,
    free: Mutex<Vec<Slot>>,
    permits: Semaphore,
    created: AtomicUsize,
    size: usize,
}

/// A finished run and where it ran.
#[derive(Debug, Clone)]
pub struct PoolRun {
    pub result: CommandResult,
    pub sandbox: String,
}

impl Pool {
    pub fn new(
        workspace: Arc<Workspace>,
        provider: Arc<dyn SandboxProvider>,
        label: &str,
        size: usize,
    ) -> Self {
        let size = size.max(1);
        Self {
            workspace,
            provider,
            label: label.to_string(),
            free: Mutex::new(Vec::new()),
            permits: Semaphore::new(size),
            created: AtomicUsize::new(0),
            size,
        }
    }

    pub fn size(&self) -> usize {
        self.size
    }

    pub fn workspace(&self) -> &Arc<Workspace> {
        &self.workspace
    }

    pub fn provider(&self) -> &Arc<dyn SandboxProvider> {
        &self.provider
    }

    async fn take_slot(&self, revision: &str) -> Result<Slot> {
        if let Some(slot) = self.free.lock().await.pop() {
            return Ok(slot);
        }
        let n = self.created.fetch_add(1, Ordering::Relaxed);
        let worktree = self
            .workspace
            .detached(&format!("probe-{n}"), revision)
            .await?;
        let sandbox = self.provider.open(&worktree.path, &self.label).await?;
        Ok(Slot { worktree, sandbox })
    }

    /// Runs `spec` at `revision` in a clean checkout (untracked files removed).
    pub async fn run(&self, revision: &str, spec: &CommandSpec) -> Result<PoolRun> {
        let _permit = self
            .permits
            .acquire()
            .await
            .expect("pool semaphore is never closed");
        let started = std::time::Instant::now();
        let slot = self.take_slot(revision).await?;
        let checkout = slot.worktree.checkout(revision).await;
        let checked_out = std::time::Instant::now();
        let outcome = match checkout {
            Ok(()) => slot.sandbox.exec(spec).await,
            Err(e) => Err(e),
        };
        tracing::debug!(
            revision = &revision[..revision.len().min(12)],
            checkout_ms = (checked_out - started).as_millis() as u64,
            exec_ms = checked_out.elapsed().as_millis() as u64,
            "probe run"
        );
        let sandbox = slot.sandbox.describe();
        self.free.lock().await.push(slot);
        outcome.map(|result| PoolRun { result, sandbox })
    }

    /// Releases every sandbox; worktrees go with the workspace.
    pub async fn close(&self) {
        for slot in self.free.lock().await.drain(..) {
            let _ = slot.sandbox.close().await;
        }
    }
}
