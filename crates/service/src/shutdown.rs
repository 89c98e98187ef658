//! One shutdown signal per process. Loops check [`Shutdown::is_requested`]
//! between units of work and select on [`Shutdown::requested`] while idle, so
//! in-flight work finishes (and is acked) before the process exits.

use tokio_util::sync::CancellationToken;

#[derive(Clone, Debug, Default)]
pub struct Shutdown {
    token: CancellationToken,
}

impl Shutdown {
    pub fn new() -> Self {
        Self::default()
    }

    /// A shutdown requested by SIGINT or SIGTERM (and by [`Shutdown::request`]).
    pub fn on_signals() -> Self {
        let shutdown = Self::new();
        let token = shutdown.token.clone();
        tokio::spawn(async move {
            let ctrl_c = tokio::signal::ctrl_c();
            #[cfg(unix)]
            {
                let mut term =
                    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    {
                        Ok(s) => s,
                        Err(e) => {
                            tracing::error!(error = %e, "cannot listen for SIGTERM");
                            let _ = ctrl_c.await;
                            token.cancel();
                            return;
                        }
                    };
                tokio::select! {
                    _ = ctrl_c => {}
                    _ = term.recv() => {}
                }
            }
            #[cfg(not(unix))]
            let _ = ctrl_c.await;
            tracing::info!("shutdown requested: draining in-flight work");
            token.cancel();
        });
        shutdown
    }

    pub fn request(&self) {
        self.token.cancel();
    }

    pub fn is_requested(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Completes when shutdown is requested.
    pub async fn requested(&self) {
        self.token.cancelled().await
    }
}
