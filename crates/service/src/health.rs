//! Liveness and readiness. `/healthz` says the process serves requests;
//! `/readyz` runs every registered dependency check (with a timeout) and
//! answers 503 while one fails or while the service drains for shutdown, so
//! an orchestrator stops routing work to it. `/metrics` is the Prometheus
//! scrape ([`crate::metrics`]).

use crate::Shutdown;
use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use serde_json::{Value, json};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tracelab_domain::Result;

type CheckFuture = Pin<Box<dyn Future<Output = Result<()>> + Send>>;
type CheckFn = Arc<dyn Fn() -> CheckFuture + Send + Sync>;

/// The named dependency checks behind `/readyz`.
#[derive(Clone)]
pub struct Readiness {
    checks: Vec<(String, CheckFn)>,
    shutdown: Shutdown,
    timeout: Duration,
}

impl Readiness {
    pub fn new(shutdown: Shutdown) -> Self {
        Self {
            checks: Vec::new(),
            shutdown,
            timeout: Duration::from_secs(2),
        }
    }

    /// Adds a check; `check` is called on every `/readyz` request.
    pub fn check<F, Fut>(mut self, name: &str, check: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<()>> + Send + 'static,
    {
        self.checks
            .push((name.to_string(), Arc::new(move || Box::pin(check()))));
        self
    }

    /// Runs every check; `(ready, per-check detail)`.
    pub async fn evaluate(&self) -> (bool, Value) {
        let mut ready = !self.shutdown.is_requested();
        let mut detail = serde_json::Map::new();
        if self.shutdown.is_requested() {
            detail.insert("shutdown".into(), json!("draining"));
        }
        for (name, check) in &self.checks {
            let verdict = match tokio::time::timeout(self.timeout, check()).await {
                Ok(Ok(())) => json!("ok"),
                Ok(Err(e)) => {
                    ready = false;
                    json!(e.to_string())
                }
                Err(_) => {
                    ready = false;
                    json!(format!("no answer within {:?}", self.timeout))
                }
            };
            detail.insert(name.clone(), verdict);
        }
        (ready, Value::Object(detail))
    }
}

/// `GET /healthz` and `GET /readyz`, to merge into a service's router.
pub fn routes(readiness: Readiness) -> Router {
    crate::metrics::handle();
    Router::new()
        .route("/metrics", get(|| async { crate::metrics::render() }))
        .route("/healthz", get(|| async { Json(json!({"status": "ok"})) }))
        .route("/readyz", get(ready))
        .with_state(Arc::new(readiness))
}

async fn ready(State(readiness): State<Arc<Readiness>>) -> (StatusCode, Json<Value>) {
    let (ok, checks) = readiness.evaluate().await;
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(json!({"ready": ok, "checks": checks})))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracelab_domain::Error;

    #[tokio::test]
    async fn a_failing_check_or_a_shutdown_makes_the_service_unready() {
        let shutdown = Shutdown::new();
        let ok = Readiness::new(shutdown.clone()).check("db", || async { Ok(()) });
        assert!(ok.evaluate().await.0);
        let bad = ok
            .clone()
            .check("bus", || async { Err(Error::unavailable("nats down")) });
        let (ready, detail) = bad.evaluate().await;
        assert!(!ready);
        assert_eq!(detail["bus"], "nats down");
        shutdown.request();
        assert!(!ok.evaluate().await.0);
    }
}
