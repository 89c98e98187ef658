//! A pool of `k` probe slots, each a detached worktree with an open sandbox,
//! so that k revisions (or k re-runs) are tested at once. Slots are created
//! lazily and reused: moving a slot to another revision is a checkout, not a
//! new worktree or container.

use crate::git::Worktree;
use crate::overlay::Overlay;
use crate::workspace::Workspace;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::{Mutex, Notify, Semaphore};
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
    /// Build directories kept between checkouts of a slot.
    keep: &'static [&'static str],
    /// Culprit searches holding precedence: background runs wait for zero.
    precedence: AtomicUsize,
    precedence_released: Notify,
}

/// While alive, background work (the rest of the reproduction) waits, so
/// the culprit search has every slot. Dropping it lets the background go on.
pub struct Precedence<'a> {
    pool: &'a Pool,
}

impl Drop for Precedence<'_> {
    fn drop(&mut self) {
        if self.pool.precedence.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.pool.precedence_released.notify_waiters();
        }
    }
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
            keep: &[],
            precedence: AtomicUsize::new(0),
            precedence_released: Notify::new(),
        }
    }

    /// Keeps these build directories between a slot's checkouts.
    pub fn keeping(mut self, keep: &'static [&'static str]) -> Self {
        self.keep = keep;
        self
    }

    /// Takes precedence over background runs until the guard is dropped.
    pub fn precedence(&self) -> Precedence<'_> {
        self.precedence.fetch_add(1, Ordering::AcqRel);
        Precedence { pool: self }
    }

    /// Waits until nothing holds precedence. A run that starts just before a
    /// search takes precedence delays that search by at most one run.
    pub async fn wait_for_turn(&self) {
        loop {
            let released = self.precedence_released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            if self.precedence.load(Ordering::Acquire) == 0 {
                return;
            }
            released.await;
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
        self.run_overlaid(revision, spec, None).await
    }

    /// [`Pool::run`] with the oracle's test files laid over the checkout
    /// (nothing is laid at the overlay's own revision).
    pub async fn run_overlaid(
        &self,
        revision: &str,
        spec: &CommandSpec,
        overlay: Option<&Overlay>,
    ) -> Result<PoolRun> {
        let _permit = self
            .permits
            .acquire()
            .await
            .expect("pool semaphore is never closed");
        let started = std::time::Instant::now();
        let slot = self.take_slot(revision).await?;
        let mut checkout = slot.worktree.checkout_keeping(revision, self.keep).await;
        if let (Ok(()), Some(o)) = (&checkout, overlay)
            && o.rev != revision
        {
            checkout = slot.worktree.overlay(&o.rev, &o.files).await;
        }
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
