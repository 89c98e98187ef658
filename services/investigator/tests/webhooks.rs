//! Signed webhooks against a local receiver that checks every signature
//! the way docs/review.md tells receivers to, with the delivery log on a
//! real PostgreSQL (`TRACELAB_TEST_POSTGRES`): a receiver failing twice
//! gets the event on the third attempt (same delivery id, each attempt
//! signed anew), an unreachable one is given up after the configured
//! attempts, and every attempt is logged in order.

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tracelab_investigator::webhooks::{
    DELIVERY_HEADER, EVENT_HEADER, Event, REPLAY_WINDOW, SIGNATURE_HEADER, WebhookSettings,
    Webhooks, verify,
};
use tracelab_store::{PgOptions, PgStore};
use tracelab_testkit::backends::{backend, unique_name};

const SECRET: &str = "whsec-test-0123456789abcdef";

#[derive(Default)]
struct Received {
    /// (delivery id, event, body) of each request that verified.
    good: Vec<(String, String, Value)>,
    /// Requests refused, and why.
    refused: Vec<String>,
    /// Answer 500 to this many more requests.
    fail: usize,
}

async fn receiver(state: Arc<Mutex<Received>>) -> String {
    let app = axum::Router::new().route(
        "/hook",
        post(move |headers: HeaderMap, body: Bytes| {
            let state = state.clone();
            async move {
                let header = |n: &str| {
                    headers
                        .get(n)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_string()
                };
                let now = time::OffsetDateTime::now_utc().unix_timestamp();
                let mut s = state.lock().unwrap();
                if let Err(why) = verify(
                    SECRET.as_bytes(),
                    &header(SIGNATURE_HEADER),
                    &body,
                    now,
                    REPLAY_WINDOW,
                ) {
                    s.refused.push(why.to_string());
                    return StatusCode::UNAUTHORIZED;
                }
                if s.fail > 0 {
                    s.fail -= 1;
                    return StatusCode::INTERNAL_SERVER_ERROR;
                }
                s.good.push((
                    header(DELIVERY_HEADER),
                    header(EVENT_HEADER),
                    serde_json::from_slice(&body).unwrap(),
                ));
                StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

#[tokio::test]
async fn events_are_signed_retried_and_logged() {
    let Some(pg) = backend("TRACELAB_TEST_POSTGRES") else {
        return;
    };
    let schema = unique_name("webhooks");
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
    let received = Arc::new(Mutex::new(Received {
        fail: 2,
        ..Received::default()
    }));
    let good_url = receiver(received.clone()).await;
    // Nothing listens here: a closed port.
    let dead = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead_url = format!("http://{}/hook", dead.local_addr().unwrap());
    drop(dead);
    let hooks = Webhooks::new(&WebhookSettings {
        urls: vec![good_url.clone(), dead_url.clone()],
        secret: SECRET.into(),
        attempts: 3,
        first_retry_ms: 10,
        ..WebhookSettings::default()
    })
    .unwrap()
    .unwrap();

    let event = Event {
        kind: "approved",
        investigation_id: "inv-1".into(),
        data: json!({"id": "inv-1", "state": "APPROVED"}),
    };
    let started = std::time::Instant::now();
    assert_eq!(
        hooks.deliver(&store, &event).await,
        1,
        "one of two URLs got it"
    );
    let (refused, good) = {
        let r = received.lock().unwrap();
        (r.refused.clone(), r.good.clone())
    };
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!(good.len(), 1, "delivered once, after two 500s");
    let (delivery, kind, body) = good[0].clone();
    assert_eq!(kind, "approved");
    assert_eq!(body["event"], "approved");
    assert_eq!(body["investigation_id"], "inv-1");
    assert_eq!(body["delivery"], delivery.as_str());
    assert_eq!(body["data"]["state"], "APPROVED");
    // Backoff 10 ms then 20 ms per URL: well under a second in all.
    assert!(started.elapsed() < std::time::Duration::from_secs(5));

    let log = store.webhook_deliveries("inv-1").await.unwrap();
    let summary: Vec<(String, u32, bool, Option<u16>)> = log
        .iter()
        .map(|d| (d.url.clone(), d.attempt, d.delivered, d.http_status))
        .collect();
    assert_eq!(
        summary,
        [
            (good_url.clone(), 1, false, Some(500)),
            (good_url.clone(), 2, false, Some(500)),
            (good_url.clone(), 3, true, Some(204)),
            (dead_url.clone(), 1, false, None),
            (dead_url.clone(), 2, false, None),
            (dead_url.clone(), 3, false, None),
        ]
    );
    assert!(
        log[..3].iter().all(|d| d.delivery_id == delivery),
        "one id per event and URL"
    );
    assert!(
        log[3].error.as_deref().unwrap().starts_with("not sent"),
        "{:?}",
        log[3].error
    );
    assert!(log[0].error.as_deref().unwrap().contains("HTTP 500"));

    // A receiver with another secret refuses: the signature is what it checks.
    let wrong = Webhooks::new(&WebhookSettings {
        urls: vec![good_url],
        secret: "another-secret-0123456789".into(),
        attempts: 1,
        ..WebhookSettings::default()
    })
    .unwrap()
    .unwrap();
    assert_eq!(wrong.deliver(&store, &event).await, 0);
    assert_eq!(received.lock().unwrap().refused, ["signature mismatch"]);

    sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
        .execute(store.pool())
        .await
        .unwrap();
}
