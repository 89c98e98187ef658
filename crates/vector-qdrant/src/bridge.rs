//! The `VectorIndex` port is synchronous; qdrant-client is async. The
//! adapter owns a small tokio runtime and runs each call on it, waiting on a
//! channel — never `block_on` on the caller's thread, which panics inside an
//! async context. A caller on an async worker should still wrap calls in
//! `spawn_blocking`: the wait blocks its thread for one round trip.

use std::future::Future;
use tokio::runtime::Runtime;
use tracelab_domain::{Error, ErrorKind, Result};

#[derive(Debug)]
pub(crate) struct Bridge {
    /// `Option` only so `Drop` can hand the runtime to `shutdown_background`.
    runtime: Option<Runtime>,
}

impl Bridge {
    pub(crate) fn new() -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("tracelab-qdrant")
            .enable_all()
            .build()
            .map_err(|e| {
                Error::new(
                    ErrorKind::Internal,
                    format!("cannot start the Qdrant client runtime: {e}"),
                )
            })?;
        Ok(Self {
            runtime: Some(runtime),
        })
    }

    /// Runs `fut` on the adapter's runtime and waits for its output.
    pub(crate) fn run<T: Send + 'static>(
        &self,
        fut: impl Future<Output = T> + Send + 'static,
    ) -> Result<T> {
        let runtime = self.runtime.as_ref().ok_or_else(|| {
            Error::new(
                ErrorKind::Internal,
                "the Qdrant client runtime is shut down",
            )
        })?;
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        runtime.spawn(async move {
            // The receiver is gone only if the caller's thread died.
            let _ = tx.send(fut.await);
        });
        rx.recv().map_err(|_| {
            Error::new(
                ErrorKind::Internal,
                "a Qdrant call was cancelled before it finished",
            )
        })
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which panics inside an async context;
        // shutting down in the background never does.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_futures_from_plain_threads() {
        let b = Bridge::new().unwrap();
        assert_eq!(b.run(async { 40 + 2 }).unwrap(), 42);
    }

    #[test]
    fn runs_and_drops_inside_an_async_context() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let b = Bridge::new().unwrap();
            let v = b
                .run(async {
                    tokio::task::yield_now().await;
                    7
                })
                .unwrap();
            assert_eq!(v, 7);
            drop(b);
        });
    }
}
