//! Both scenarios against small local servers that answer like the public
//! surface and misbehave on purpose (a wrong culprit, a FAILED investigation,
//! a refused submission, 429 with Retry-After, a 500), so the counts the
//! load generator prints are checked, not just produced.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracelab_loadtest::{evidence, investigations, repos};

async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{addr}")
}

/// The commit whose subject introduces the regression, found with git
/// itself rather than taken from the generator's manifest.
fn real_culprit(repo: &str) -> String {
    let out = Command::new("git")
        .args(["-C", repo, "log", "--format=%H", "--grep=Speed up add"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[derive(Default)]
struct Investigator {
    /// id → (repository, polls so far)
    investigations: Mutex<HashMap<String, (String, u32)>>,
}

async fn create(State(s): State<Arc<Investigator>>, Json(body): Json<Value>) -> impl IntoResponse {
    let repo = body["repository"].as_str().unwrap().to_string();
    assert_eq!(body["test_command"], "python3 test_app.py");
    assert_eq!(body["parallelism"], 2);
    if repo.ends_with("repo-0003") {
        let error =
            json!({"error": {"kind": "invalid_argument", "message": "not a git repository"}});
        return (StatusCode::BAD_REQUEST, Json(error));
    }
    let mut map = s.investigations.lock().unwrap();
    let id = format!("inv-{}", map.len());
    map.insert(id.clone(), (repo, 0));
    (
        StatusCode::CREATED,
        Json(json!({"id": id, "state": "CREATED"})),
    )
}

async fn show(State(s): State<Arc<Investigator>>, Path(id): Path<String>) -> Json<Value> {
    let (repo, polls) = {
        let mut map = s.investigations.lock().unwrap();
        let entry = map.get_mut(&id).unwrap();
        entry.1 += 1;
        entry.clone()
    };
    let times = json!({"created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:03Z"});
    let mut view = if polls < 3 {
        json!({"id": id, "state": "VERIFYING", "culprit": null})
    } else if repo.ends_with("repo-0001") {
        json!({"id": id, "state": "WAITING_FOR_REVIEW", "culprit": "0000000000000000000000000000000000000000"})
    } else if repo.ends_with("repo-0002") {
        json!({"id": id, "state": "FAILED", "culprit": null,
               "transitions": [{"from": "CONTEXT_LOADING", "to": "FAILED", "reason": "test command not found"}]})
    } else {
        json!({"id": id, "state": "WAITING_FOR_REVIEW", "culprit": real_culprit(&repo)})
    };
    view.as_object_mut()
        .unwrap()
        .extend(times.as_object().unwrap().clone());
    Json(view)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn investigations_are_counted_by_outcome() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let api = serve(
        Router::new()
            .route("/api/investigations", post(create))
            .route("/api/investigations/{id}", get(show))
            .with_state(Arc::new(Investigator::default())),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let report = investigations::run(investigations::Options {
        api,
        count: 5,
        concurrency: 3,
        repos: dir.path().join("repos"),
        shape: repos::Shape {
            commits: 4,
            test_seconds: 0.0,
        },
        token: None,
        poll_interval: Duration::from_millis(20),
        timeout: Duration::from_secs(30),
        parallelism: Some(2),
        command_timeout_ms: None,
        max_runs: None,
    })
    .await
    .unwrap();
    assert_eq!(report.completed, 2, "{report}");
    assert_eq!(report.errors.wrong_culprit, 1, "{report}");
    assert_eq!(report.errors.failed, 1, "{report}");
    assert_eq!(report.errors.submit, 1, "{report}");
    assert_eq!(report.error_total, 3, "{report}");
    assert_eq!(report.repositories_generated, 5);
    // Decided ones have a latency: three polls of 20 ms at least.
    assert_eq!(report.latency.count, 4, "{report}");
    assert!(report.latency.p50_ms >= 60.0, "{report}");
    assert_eq!(report.server_latency.p50_ms.round(), 3000.0, "{report}");
    assert!(report.per_minute > 0.0);
    let text = report.to_string();
    assert!(text.contains("test command not found"), "{text}");
    assert!(text.contains("HTTP 400"), "{text}");
}

#[derive(Default)]
struct Ingest {
    requests: Mutex<u32>,
    always_429: bool,
}

async fn intake(
    State(s): State<Arc<Ingest>>,
    Path(kind): Path<String>,
    headers: HeaderMap,
    body: String,
) -> impl IntoResponse {
    let n = {
        let mut r = s.requests.lock().unwrap();
        *r += 1;
        *r
    };
    assert_eq!(headers[header::AUTHORIZATION], "Bearer secret");
    let content_type = headers[header::CONTENT_TYPE].to_str().unwrap().to_string();
    match kind.as_str() {
        "ci-failures" => {
            assert_eq!(content_type, "application/json");
            let v: Value = serde_json::from_str(&body).unwrap();
            assert_eq!(v["schema"], 1);
        }
        "logs" => {
            assert_eq!(content_type, "application/x-ndjson");
            assert_eq!(body.lines().count(), 1);
            let v: Value = serde_json::from_str(body.trim_end()).unwrap();
            assert_eq!(v["level"], "error");
        }
        other => panic!("unexpected endpoint /v1/{other}"),
    }
    if s.always_429 {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, "0")],
            "slow down",
        )
            .into_response();
    }
    if n <= 2 {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, "1")],
            "slow down",
        )
            .into_response();
    }
    if body.contains("\"request_id\":\"req-5\"") {
        return (StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response();
    }
    (StatusCode::ACCEPTED, Json(json!({"accepted": 1}))).into_response()
}

async fn ingest(always_429: bool) -> String {
    serve(
        Router::new()
            .route("/v1/{kind}", post(intake))
            .with_state(Arc::new(Ingest {
                always_429,
                ..Ingest::default()
            })),
    )
    .await
}

fn evidence_options(url: String, count: u64, max_retries: u32) -> evidence::Options {
    evidence::Options {
        ingest: url,
        count,
        concurrency: 4,
        only: None,
        seed: 3,
        token: Some("secret".into()),
        max_retries,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limited_events_wait_and_are_retried_not_dropped() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let report = evidence::run(evidence_options(ingest(false).await, 12, 100))
        .await
        .unwrap();
    // 12 events: two answered 429 once each (then accepted), req-5 refused with 500.
    assert_eq!(report.accepted, 11, "{report}");
    assert_eq!(report.rate_limited, 2, "{report}");
    assert_eq!(report.retry_wait_seconds, 2.0, "{report}");
    assert_eq!(report.gave_up, 0);
    assert_eq!(report.non_2xx.get(&500), Some(&1), "{report}");
    assert_eq!(report.error_total, 1, "{report}");
    assert_eq!(
        report.accepted_by_kind.ci_failures + report.accepted_by_kind.logs,
        11
    );
    // 12 events + 2 retries = 14 answers; the retried events waited their second.
    assert_eq!(report.request_latency.count, 14, "{report}");
    assert!(report.latency.max_ms >= 1000.0, "{report}");
    assert!(report.per_second > 0.0);
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["non_2xx"]["500"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_still_refused_after_its_retries_is_reported_as_given_up() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let report = evidence::run(evidence_options(ingest(true).await, 2, 3))
        .await
        .unwrap();
    assert_eq!(report.accepted, 0, "{report}");
    assert_eq!(report.gave_up, 2, "{report}");
    // Each event: 1 try + 3 retries, all 429.
    assert_eq!(report.rate_limited, 8, "{report}");
    assert_eq!(report.error_total, 2, "{report}");
}
