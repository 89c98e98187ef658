//! Serving a router until shutdown: in-flight requests finish, new
//! connections are refused.

use crate::Shutdown;
use axum::Router;
use std::net::SocketAddr;
use tokio::net::TcpListener;
use tracelab_domain::{Error, Result};

/// Binds `addr` with an error that names it.
pub async fn bind(addr: &str) -> Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .map_err(|e| Error::unavailable(format!("cannot listen on {addr}: {e}")))
}

/// Serves `router` on `listener` until `shutdown`, then drains.
pub async fn serve(listener: TcpListener, router: Router, shutdown: Shutdown) -> Result<()> {
    let addr: Option<SocketAddr> = listener.local_addr().ok();
    tracing::info!(?addr, "serving HTTP");
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { shutdown.requested().await })
        .await
        .map_err(|e| Error::internal(format!("HTTP server failed: {e}")))
}
