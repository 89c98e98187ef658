//! Jira comments against a local fake Jira that checks what a real one
//! would (the auth header of the flavor, the REST path, the body's shape),
//! stored and dispatched on a real PostgreSQL (`TRACELAB_TEST_POSTGRES`):
//! Cloud gets ADF with Basic e-mail:token, Server/Data Center wiki text
//! with a Bearer token; while Jira is down the comment waits (the failure
//! stored and listed), and it is posted once Jira is back; an
//! investigation without a Jira issue gets no comment.

use axum::body::Bytes;
use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracelab_domain::ids::InvestigationId;
use tracelab_investigator::delivery::Outgoing;
use tracelab_investigator::jira::{Flavor, JiraSettings, client::Client};
use tracelab_store::{NewInvestigation, OutboxMessage, PgOptions, PgStore};
use tracelab_testkit::backends::{backend, unique_name};

const TOKEN: &str = "jira-api-token-0123456789SECRET";
const USER: &str = "tracelab-bot@example.com";

#[derive(Default)]
struct FakeJira {
    /// (API version, issue, body) of each comment accepted.
    comments: Vec<(String, String, Value)>,
    /// Why requests were refused.
    refused: Vec<String>,
    /// Answer 503 while set.
    down: bool,
}

async fn fake_jira(state: Arc<Mutex<FakeJira>>, flavor: Flavor) -> String {
    let app = axum::Router::new().route(
        "/rest/api/{version}/issue/{issue}/comment",
        post(
            move |Path((version, issue)): Path<(String, String)>,
                  headers: HeaderMap,
                  body: Bytes| {
                let state = state.clone();
                async move {
                    let mut s = state.lock().unwrap();
                    if s.down {
                        return (StatusCode::SERVICE_UNAVAILABLE, "down for maintenance");
                    }
                    let auth = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_string();
                    let (want_version, want_auth) = match flavor {
                        Flavor::Cloud => (
                            "3",
                            format!("Basic {}", base64(format!("{USER}:{TOKEN}").as_bytes())),
                        ),
                        Flavor::Server => ("2", format!("Bearer {TOKEN}")),
                    };
                    if auth != want_auth {
                        s.refused.push(format!("auth {auth:?}"));
                        return (StatusCode::UNAUTHORIZED, "bad auth");
                    }
                    if version != want_version {
                        s.refused.push(format!("version {version}"));
                        return (StatusCode::NOT_FOUND, "no such API");
                    }
                    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
                        s.refused.push("not JSON".into());
                        return (StatusCode::BAD_REQUEST, "not JSON");
                    };
                    let shape_ok = match flavor {
                        Flavor::Cloud => {
                            body["body"]["type"] == "doc" && body["body"]["version"] == 1
                        }
                        Flavor::Server => body["body"].is_string(),
                    };
                    if !shape_ok {
                        s.refused.push(format!("body {body}"));
                        return (StatusCode::BAD_REQUEST, "bad body");
                    }
                    s.comments.push((version, issue, body));
                    (StatusCode::CREATED, "{}")
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// RFC 4648 base64, to state the header a Jira Cloud expects independently.
fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

async fn investigation(store: &PgStore, issue: Option<&str>) -> String {
    let id = InvestigationId::generate();
    let request =
        json!({"repository": "/srv/shop", "test_command": "pytest -q", "issue_id": issue});
    store
        .create_requested(&NewInvestigation {
            id: &id,
            repository: "/srv/shop",
            test_command: "pytest -q",
            request: &request,
            evidence: &[],
            dedupe_key: None,
            announce: &OutboxMessage {
                id: format!("{id}.requested"),
                subject: "jira-test.requested".into(),
                payload: Vec::new(),
            },
            started_by: "jira:ada@example.com",
            role: "reviewer",
        })
        .await
        .unwrap();
    id.0
}

fn outgoing(store: &PgStore, base_url: &str, flavor: Flavor) -> Arc<Outgoing> {
    let settings = JiraSettings {
        base_url: base_url.into(),
        flavor,
        user: USER.into(),
        token: TOKEN.into(),
        dashboard_url: "https://tracelab.example.com/".into(),
        attempts: 5,
        first_retry_ms: 10,
        ..JiraSettings::default()
    };
    let client = Client::new(&settings).unwrap();
    Arc::new(Outgoing::new(store.clone(), None, client, &settings))
}

async fn drain(out: &Arc<Outgoing>, store: &PgStore, investigation: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        out.dispatch_due().await.unwrap();
        let pending = store
            .notifications(investigation)
            .await
            .unwrap()
            .iter()
            .filter(|n| n.delivered_at.is_none() && n.given_up_at.is_none())
            .count();
        if pending == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "{pending} still pending");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn decided_view(id: &str) -> Value {
    json!({"id": id, "state": "WAITING_FOR_REVIEW", "verdict": "regression",
        "report": {"culprit": {"commit": "89abcdef0123456789ab", "summary": "Round totals",
            "author": "Bo", "verified": true}},
        "audit": [], "transitions": []})
}

#[tokio::test]
async fn decisions_are_commented_on_jira_cloud_and_server() {
    let Some(pg) = backend("TRACELAB_TEST_POSTGRES") else {
        return;
    };
    let schema = unique_name("jira");
    let store = PgStore::connect(
        &pg,
        PgOptions {
            schema: Some(schema.clone()),
            max_connections: 2,
            ..PgOptions::default()
        },
    )
    .await
    .unwrap();

    // Cloud, down at first: the comment waits, its failure visible.
    let cloud = Arc::new(Mutex::new(FakeJira {
        down: true,
        ..FakeJira::default()
    }));
    let out = outgoing(
        &store,
        &fake_jira(cloud.clone(), Flavor::Cloud).await,
        Flavor::Cloud,
    );
    let id = investigation(&store, Some("PVS-421")).await;
    let view = decided_view(&id);
    assert_eq!(out.enqueue("decided", &id, &view, &view).await.unwrap(), 1);
    assert_eq!(out.enqueue("decided", &id, &view, &view).await.unwrap(), 0);
    assert_eq!(out.dispatch_due().await.unwrap(), 1);
    let pending = store.notifications(&id).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert!(pending[0].delivered_at.is_none() && pending[0].given_up_at.is_none());
    assert!(
        pending[0]
            .last_error
            .as_deref()
            .unwrap()
            .contains("HTTP 503: down for maintenance"),
        "{:?}",
        pending[0].last_error
    );
    cloud.lock().unwrap().down = false;
    drain(&out, &store, &id).await;
    let (comments, refused) = {
        let c = cloud.lock().unwrap();
        (c.comments.clone(), c.refused.clone())
    };
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!(comments.len(), 1);
    let (version, issue, body) = &comments[0];
    assert_eq!((version.as_str(), issue.as_str()), ("3", "PVS-421"));
    let text = body.to_string();
    assert!(text.contains("regression"), "{text}");
    assert!(text.contains("89abcdef0123"), "{text}");
    assert!(
        text.contains(&format!("https://tracelab.example.com/investigations/{id}")),
        "{text}"
    );
    assert!(!text.contains(TOKEN));
    let log = store.webhook_deliveries(&id).await.unwrap();
    let attempts: Vec<(&str, u32, bool, Option<u16>)> = log
        .iter()
        .map(|d| (d.event.as_str(), d.attempt, d.delivered, d.http_status))
        .collect();
    assert_eq!(
        attempts,
        [
            ("jira:decided", 1, false, Some(503)),
            ("jira:decided", 2, true, Some(201))
        ]
    );
    assert!(log[0].url.ends_with("/rest/api/3/issue/PVS-421/comment"));
    assert!(
        log.iter()
            .all(|d| !d.error.clone().unwrap_or_default().contains(TOKEN))
    );

    // Server / Data Center: wiki text, a Bearer token, REST v2.
    let server = Arc::new(Mutex::new(FakeJira::default()));
    let out = outgoing(
        &store,
        &fake_jira(server.clone(), Flavor::Server).await,
        Flavor::Server,
    );
    let id = investigation(&store, Some("OPS-7")).await;
    let mut view = decided_view(&id);
    view["state"] = json!("APPROVED");
    view["audit"] = json!([{"action": "approved", "actor": "rita", "reason": "right culprit"}]);
    out.enqueue("approved", &id, &view, &view).await.unwrap();
    drain(&out, &store, &id).await;
    let comments = server.lock().unwrap().comments.clone();
    assert_eq!(comments.len(), 1, "{:?}", server.lock().unwrap().refused);
    let (version, issue, body) = &comments[0];
    assert_eq!((version.as_str(), issue.as_str()), ("2", "OPS-7"));
    let text = body["body"].as_str().unwrap();
    assert!(text.contains("By rita: right culprit"), "{text}");

    // No Jira issue: nothing to comment on.
    let plain = investigation(&store, None).await;
    let view = decided_view(&plain);
    assert_eq!(
        out.enqueue("decided", &plain, &view, &view).await.unwrap(),
        0
    );

    sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
        .execute(store.pool())
        .await
        .unwrap();
}
