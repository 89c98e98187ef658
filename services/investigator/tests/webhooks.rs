//! Signed webhooks against a local receiver that checks every signature
//! the way docs/review.md tells receivers to, stored and dispatched on a
//! real PostgreSQL (`TRACELAB_TEST_POSTGRES`): a receiver failing twice
//! gets the event on the third attempt (same delivery id, each attempt
//! signed anew), an unreachable one is given up after the configured
//! attempts, every attempt is logged in order, enqueueing an event twice
//! sends it once, and a delivery pending when its dispatcher goes away is
//! sent by the next one (a restart loses nothing).

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracelab_investigator::delivery::Outgoing;
use tracelab_investigator::jira::JiraSettings;
use tracelab_investigator::webhooks::{
    DELIVERY_HEADER, EVENT_HEADER, REPLAY_WINDOW, SIGNATURE_HEADER, WebhookSettings, Webhooks,
    verify,
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
    /// Answer 503 to every request while set.
    down: bool,
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
                if s.down {
                    return StatusCode::SERVICE_UNAVAILABLE;
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

async fn pg(name: &str) -> Option<(PgStore, String, String)> {
    let pg = backend("TRACELAB_TEST_POSTGRES")?;
    let schema = unique_name(name);
    let store = PgStore::connect(&pg, options(&schema)).await.unwrap();
    Some((store, pg, schema))
}

fn options(schema: &str) -> PgOptions {
    PgOptions {
        schema: Some(schema.to_string()),
        max_connections: 2,
        ..PgOptions::default()
    }
}

fn outgoing(store: &PgStore, urls: Vec<String>, secret: &str, attempts: u32) -> Arc<Outgoing> {
    let hooks = Webhooks::new(&WebhookSettings {
        urls,
        secret: secret.into(),
        attempts,
        first_retry_ms: 10,
        ..WebhookSettings::default()
    })
    .unwrap();
    Arc::new(Outgoing::new(
        store.clone(),
        hooks,
        None,
        &JiraSettings::default(),
    ))
}

/// Dispatches until nothing of the investigation is pending.
async fn drain(out: &Arc<Outgoing>, store: &PgStore, investigation: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        out.dispatch_due().await.unwrap();
        let pending = store
            .notifications(investigation)
            .await
            .unwrap()
            .into_iter()
            .filter(|n| n.delivered_at.is_none() && n.given_up_at.is_none())
            .count();
        if pending == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "{pending} still pending");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn drop_schema(store: &PgStore, schema: &str) {
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
        .execute(store.pool())
        .await
        .unwrap();
}

#[tokio::test]
async fn events_are_stored_signed_retried_and_logged() {
    let Some((store, _, schema)) = pg("webhooks").await else {
        return;
    };
    let received = Arc::new(Mutex::new(Received {
        fail: 2,
        ..Received::default()
    }));
    let good_url = receiver(received.clone()).await;
    // Nothing listens here: a closed port.
    let dead = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead_url = format!("http://{}/hook", dead.local_addr().unwrap());
    drop(dead);
    let out = outgoing(&store, vec![good_url.clone(), dead_url.clone()], SECRET, 3);

    let data = json!({"id": "inv-1", "state": "APPROVED"});
    assert_eq!(
        out.enqueue("approved", "inv-1", &data, &data)
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        out.enqueue("approved", "inv-1", &data, &data)
            .await
            .unwrap(),
        0,
        "the same stage again adds nothing"
    );
    drain(&out, &store, "inv-1").await;
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

    let log = store.webhook_deliveries("inv-1").await.unwrap();
    let mut summary: Vec<(String, u32, bool, Option<u16>)> = log
        .iter()
        .map(|d| (d.url.clone(), d.attempt, d.delivered, d.http_status))
        .collect();
    summary.sort();
    let mut expected = vec![
        (good_url.clone(), 1, false, Some(500)),
        (good_url.clone(), 2, false, Some(500)),
        (good_url.clone(), 3, true, Some(204)),
        (dead_url.clone(), 1, false, None),
        (dead_url.clone(), 2, false, None),
        (dead_url.clone(), 3, false, None),
    ];
    expected.sort();
    assert_eq!(summary, expected);
    let to_good: Vec<_> = log.iter().filter(|d| d.url == good_url).collect();
    assert!(
        to_good.iter().all(|d| d.delivery_id == delivery),
        "one id per event and URL"
    );
    let to_dead = log.iter().find(|d| d.url == dead_url).unwrap();
    assert!(
        to_dead.error.as_deref().unwrap().starts_with("not sent"),
        "{:?}",
        to_dead.error
    );
    assert!(to_good[0].error.as_deref().unwrap().contains("HTTP 500"));
    let stored = store.notifications("inv-1").await.unwrap();
    let given_up: Vec<_> = stored.iter().filter(|n| n.given_up_at.is_some()).collect();
    assert_eq!(given_up.len(), 1, "{stored:?}");
    assert_eq!(given_up[0].target, dead_url);
    assert_eq!(given_up[0].attempts, 3);
    assert!(given_up[0].last_error.is_some());

    // A receiver with another secret refuses: the signature is what it checks.
    let wrong = outgoing(&store, vec![good_url], "another-secret-0123456789", 1);
    wrong
        .enqueue("rejected", "inv-2", &data, &data)
        .await
        .unwrap();
    drain(&wrong, &store, "inv-2").await;
    assert_eq!(received.lock().unwrap().refused, ["signature mismatch"]);
    drop_schema(&store, &schema).await;
}

#[tokio::test]
async fn a_pending_delivery_survives_a_restart() {
    let Some((store, pg, schema)) = pg("webhooks_restart").await else {
        return;
    };
    let received = Arc::new(Mutex::new(Received {
        down: true,
        ..Received::default()
    }));
    let url = receiver(received.clone()).await;
    let first = outgoing(&store, vec![url.clone()], SECRET, 5);
    let data = json!({"id": "inv-9", "state": "CREATED"});
    first
        .enqueue("created", "inv-9", &data, &data)
        .await
        .unwrap();
    assert_eq!(first.dispatch_due().await.unwrap(), 1);
    // The process goes away with the event undelivered.
    drop(first);
    drop(store);
    received.lock().unwrap().down = false;

    // A new process: its own connection, nothing in memory.
    let store = PgStore::connect(&pg, options(&schema)).await.unwrap();
    let second = outgoing(&store, vec![url.clone()], SECRET, 5);
    drain(&second, &store, "inv-9").await;
    let good = received.lock().unwrap().good.clone();
    assert_eq!(good.len(), 1);
    assert_eq!(good[0].1, "created");
    let attempts: Vec<(u32, bool, Option<u16>)> = store
        .webhook_deliveries("inv-9")
        .await
        .unwrap()
        .iter()
        .map(|d| (d.attempt, d.delivered, d.http_status))
        .collect();
    assert_eq!(attempts, [(1, false, Some(503)), (2, true, Some(204))]);
    assert!(
        store.webhook_deliveries("inv-9").await.unwrap()[1].delivery_id == good[0].0,
        "the same delivery id after the restart"
    );
    drop_schema(&store, &schema).await;
}
