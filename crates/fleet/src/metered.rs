//! Sandbox runs counted for `/metrics`: a provider wrapper, so every kind of
//! sandbox is measured the same way and the adapters stay free of metrics.
//!
//! `tracelab_sandbox_runs_total{sandbox, outcome}` with outcome `passed`,
//! `failed` (exited non-zero), `blocked` (timeout, limit, refused program)
//! or `error` (the sandbox itself failed), and
//! `tracelab_sandbox_run_seconds{sandbox}`.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use tracelab_domain::Result;
use tracelab_domain::ports::{CommandResult, CommandSpec, Sandbox, SandboxProvider};

/// `inner` with its sandboxes' commands counted and timed.
pub struct Metered {
    inner: Arc<dyn SandboxProvider>,
}

impl Metered {
    pub fn new(inner: Arc<dyn SandboxProvider>) -> Self {
        Self { inner }
    }
}

#[async_trait::async_trait]
impl SandboxProvider for Metered {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn open(&self, worktree: &Path, label: &str) -> Result<Box<dyn Sandbox>> {
        let inner = self.inner.open(worktree, label).await?;
        Ok(Box::new(MeteredSandbox {
            inner,
            kind: self.inner.name().to_string(),
        }))
    }
}

struct MeteredSandbox {
    inner: Box<dyn Sandbox>,
    kind: String,
}

#[async_trait::async_trait]
impl Sandbox for MeteredSandbox {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    async fn exec(&self, spec: &CommandSpec) -> Result<CommandResult> {
        let started = Instant::now();
        let result = self.inner.exec(spec).await;
        metrics::counter!("tracelab_sandbox_runs_total", "sandbox" => self.kind.clone(), "outcome" => outcome(&result))
            .increment(1);
        metrics::histogram!("tracelab_sandbox_run_seconds", "sandbox" => self.kind.clone())
            .record(started.elapsed().as_secs_f64());
        result
    }

    async fn close(&self) -> Result<()> {
        self.inner.close().await
    }
}

fn outcome(result: &Result<CommandResult>) -> &'static str {
    match result {
        Err(_) => "error",
        Ok(r) if r.blocked.is_some() => "blocked",
        Ok(r) if r.passed() => "passed",
        Ok(_) => "failed",
    }
}
