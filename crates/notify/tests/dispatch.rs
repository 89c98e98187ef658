//! The dispatcher on both stores (SQLite in a file; PostgreSQL from
//! `TRACELAB_TEST_POSTGRES`, one schema per test), against testkit's fake
//! HTTP receivers: a stage's rows, stored without a body, are rendered
//! from the investigation once and sent signed (the receiver checks the
//! signature the way docs/review.md tells receivers to); a receiver
//! failing twice gets the event on the third attempt with the same
//! delivery id, an unreachable one is given up after the configured
//! attempts, every attempt is logged in order; a delivery pending when its
//! dispatcher goes away is sent by the next one; Jira Cloud and Server get
//! their comments with their own auth, API version and body format.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracelab_domain::Result;
use tracelab_notify::jira::client::Client;
use tracelab_notify::jira::{Flavor, JiraSettings};
use tracelab_notify::webhooks::{
    DELIVERY_HEADER, EVENT_HEADER, REPLAY_WINDOW, SIGNATURE_HEADER, WebhookSettings, Webhooks,
    verify,
};
use tracelab_notify::{NotificationStore, Outgoing, Views};
use tracelab_store::notifications::Notification;
use tracelab_store::webhooks::WebhookDelivery;
use tracelab_store::{PgOptions, PgStore, SqliteStore};
use tracelab_testkit::backends::{backend, unique_name};
use tracelab_testkit::http_recorder::HttpRecorder;

const SECRET: &str = "whsec-test-0123456789abcdef";

/// The host's investigations as its API shows them (a fake of the host,
/// not of what is tested: the dispatcher renders from whatever it reads).
#[derive(Default)]
struct FixedViews(Mutex<HashMap<String, Value>>);

impl FixedViews {
    fn with(self, id: &str, view: Value) -> Self {
        self.0.lock().unwrap().insert(id.into(), view);
        self
    }
}

#[async_trait::async_trait]
impl Views for FixedViews {
    async fn view(&self, id: &str) -> Result<Option<Value>> {
        Ok(self.0.lock().unwrap().get(id).cloned())
    }
}

/// What the tests read back from either store.
#[async_trait::async_trait]
trait Readback: NotificationStore {
    async fn rows(&self, id: &str) -> Vec<Notification>;
    async fn log(&self, id: &str) -> Vec<WebhookDelivery>;
}

#[async_trait::async_trait]
impl Readback for PgStore {
    async fn rows(&self, id: &str) -> Vec<Notification> {
        self.notifications(id).await.unwrap()
    }
    async fn log(&self, id: &str) -> Vec<WebhookDelivery> {
        self.webhook_deliveries(id).await.unwrap()
    }
}

#[async_trait::async_trait]
impl Readback for SqliteStore {
    async fn rows(&self, id: &str) -> Vec<Notification> {
        self.notifications(id).await.unwrap()
    }
    async fn log(&self, id: &str) -> Vec<WebhookDelivery> {
        self.webhook_deliveries(id).await.unwrap()
    }
}

fn views() -> Arc<FixedViews> {
    Arc::new(
        FixedViews::default()
            .with(
                "inv-1",
                json!({"id": "inv-1", "state": "APPROVED", "audit": [], "transitions": []}),
            )
            .with(
                "inv-9",
                json!({"id": "inv-9", "state": "CREATED", "audit": [], "transitions": []}),
            ),
    )
}

fn webhooks(urls: Vec<String>, secret: &str, attempts: u32) -> Option<Webhooks> {
    Webhooks::new(&WebhookSettings {
        urls,
        secret: secret.into(),
        attempts,
        first_retry_ms: 10,
        ..WebhookSettings::default()
    })
    .unwrap()
}

fn outgoing<S: Readback>(
    store: &Arc<S>,
    hooks: Option<Webhooks>,
    jira: Option<Client>,
) -> Arc<Outgoing> {
    let settings = JiraSettings {
        first_retry_ms: 10,
        ..JiraSettings::default()
    };
    Arc::new(Outgoing::new(store.clone(), views(), hooks, jira, &settings).expect("configured"))
}

/// What a stage does: its plan stored (here outside a transaction), then a wake.
async fn stage<S: Readback>(
    out: &Outgoing,
    store: &S,
    kind: &str,
    id: &str,
    issue: Option<&str>,
) -> usize {
    let mut new = 0;
    for n in out.plan(kind, id, issue) {
        assert!(n.body.is_none(), "a stage's rows are rendered at dispatch");
        new += usize::from(store.enqueue(&n).await.unwrap());
    }
    out.wake();
    new
}

/// Dispatches until nothing of the investigation is pending.
async fn drain<S: Readback>(out: &Arc<Outgoing>, store: &S, id: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        out.dispatch_due().await.unwrap();
        let pending = store
            .rows(id)
            .await
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

/// (delivery id, event, body) of each request whose signature verified;
/// the reasons of those that did not.
fn verified(r: &HttpRecorder) -> (Vec<(String, String, Value)>, Vec<String>) {
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let mut good = Vec::new();
    let mut refused = Vec::new();
    for req in r.requests() {
        let header = |n: &str| req.header(n).unwrap_or_default().to_string();
        match verify(
            SECRET.as_bytes(),
            &header(SIGNATURE_HEADER),
            &req.body,
            now,
            REPLAY_WINDOW,
        ) {
            Ok(()) if (200..300).contains(&req.status) => good.push((
                header(DELIVERY_HEADER),
                header(EVENT_HEADER),
                serde_json::from_slice(&req.body).unwrap(),
            )),
            Ok(()) => {}
            Err(why) => refused.push(why.to_string()),
        }
    }
    (good, refused)
}

async fn events_are_signed_retried_and_logged<S: Readback>(store: Arc<S>) {
    let receiver = HttpRecorder::start(204).unwrap();
    receiver.answer_next(500);
    receiver.answer_next(500);
    let good_url = receiver.url("/hook");
    // Nothing listens here: a closed port.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}/hook", dead.local_addr().unwrap());
    drop(dead);
    let out = outgoing(
        &store,
        webhooks(vec![good_url.clone(), dead_url.clone()], SECRET, 3),
        None,
    );

    assert_eq!(
        stage(&out, store.as_ref(), "approved", "inv-1", None).await,
        2
    );
    assert_eq!(
        stage(&out, store.as_ref(), "approved", "inv-1", None).await,
        0,
        "the same stage again adds nothing"
    );
    drain(&out, store.as_ref(), "inv-1").await;
    let (good, refused) = verified(&receiver);
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!(good.len(), 1, "delivered once, after two 500s");
    let (delivery, kind, body) = good[0].clone();
    assert_eq!(kind, "approved");
    assert_eq!(body["event"], "approved");
    assert_eq!(body["investigation_id"], "inv-1");
    assert_eq!(body["delivery"], delivery.as_str());
    assert_eq!(body["data"]["state"], "APPROVED", "rendered from the view");
    let bodies: Vec<String> = receiver.requests().iter().map(|r| r.text()).collect();
    assert!(
        bodies.windows(2).all(|w| w[0] == w[1]),
        "the same bytes on every attempt"
    );

    let log = store.log("inv-1").await;
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
    assert!(
        log.iter()
            .filter(|d| d.url == good_url)
            .all(|d| d.delivery_id == delivery),
        "one id per event and URL"
    );
    let to_dead = log.iter().find(|d| d.url == dead_url).unwrap();
    assert!(
        to_dead.error.as_deref().unwrap().starts_with("not sent"),
        "{:?}",
        to_dead.error
    );
    let stored = store.rows("inv-1").await;
    let given_up: Vec<_> = stored.iter().filter(|n| n.given_up_at.is_some()).collect();
    assert_eq!(given_up.len(), 1, "{stored:?}");
    assert_eq!(given_up[0].target, dead_url);
    assert_eq!(given_up[0].attempts, 3);

    // Another secret: the receiver refuses, the signature is what it checks.
    let wrong = outgoing(
        &store,
        webhooks(vec![good_url], "another-secret-0123456789", 1),
        None,
    );
    stage(&wrong, store.as_ref(), "rejected", "inv-1", None).await;
    drain(&wrong, store.as_ref(), "inv-1").await;
    assert_eq!(verified(&receiver).1, ["signature mismatch"]);

    // An investigation the host does not know: given up, said why.
    stage(&out, store.as_ref(), "created", "inv-unknown", None).await;
    drain(&out, store.as_ref(), "inv-unknown").await;
    let rows = store.rows("inv-unknown").await;
    assert!(
        rows.iter()
            .all(|n| n.given_up_at.is_some()
                && n.last_error.as_deref().unwrap().contains("not found"))
    );
}

/// A pending delivery is sent by the next dispatcher (`reopen` gives the
/// next process's store: its own connections, nothing in memory).
async fn a_pending_delivery_survives_a_restart<S: Readback, F, Fut>(store: Arc<S>, reopen: F)
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Arc<S>>,
{
    let receiver = HttpRecorder::start(503).unwrap();
    let url = receiver.url("/hook");
    let first = outgoing(&store, webhooks(vec![url.clone()], SECRET, 5), None);
    stage(&first, store.as_ref(), "created", "inv-9", None).await;
    assert_eq!(first.dispatch_due().await.unwrap(), 1);
    drop(first);
    drop(store);
    receiver.answer_always(204);

    let store = reopen().await;
    let second = outgoing(&store, webhooks(vec![url], SECRET, 5), None);
    drain(&second, store.as_ref(), "inv-9").await;
    let (good, _) = verified(&receiver);
    assert_eq!(good.len(), 1);
    assert_eq!(good[0].1, "created");
    let log = store.log("inv-9").await;
    let attempts: Vec<(u32, bool, Option<u16>)> = log
        .iter()
        .map(|d| (d.attempt, d.delivered, d.http_status))
        .collect();
    assert_eq!(attempts, [(1, false, Some(503)), (2, true, Some(204))]);
    assert_eq!(
        log[1].delivery_id, good[0].0,
        "the same delivery id after the restart"
    );
}

async fn decisions_are_commented_on_jira<S: Readback>(store: Arc<S>) {
    for (id, flavor, version, auth) in [
        (
            "inv-1",
            Flavor::Cloud,
            3,
            "Basic Ym90QGV4YW1wbGUuY29tOmppcmEtdG9rZW4tMDEyMzQ1Njc4OQ==",
        ),
        ("inv-9", Flavor::Server, 2, "Bearer jira-token-0123456789"),
    ] {
        let jira = HttpRecorder::start(201).unwrap();
        let client = Client::new(&JiraSettings {
            base_url: jira.url(""),
            flavor,
            user: "bot@example.com".into(),
            token: "jira-token-0123456789".into(),
            dashboard_url: "https://tracelab.example.com/".into(),
            ..JiraSettings::default()
        })
        .unwrap();
        jira.answer_next(503);
        let out = outgoing(&store, None, client);
        assert_eq!(
            stage(&out, store.as_ref(), "approved", id, Some("PVS-421")).await,
            1
        );
        assert_eq!(
            stage(&out, store.as_ref(), "approved", id, Some("not a key")).await,
            0
        );
        drain(&out, store.as_ref(), id).await;
        let calls = jira.requests();
        assert_eq!(calls.len(), 2, "a 503, then the comment");
        let last = &calls[1];
        assert_eq!(last.method, "POST");
        assert_eq!(
            last.target,
            format!("/rest/api/{version}/issue/PVS-421/comment")
        );
        assert_eq!(last.header("authorization"), Some(auth));
        assert_eq!(calls[0].body, last.body, "the same comment on the retry");
        let body: Value = serde_json::from_slice(&last.body).unwrap();
        let text = body["body"].to_string();
        assert!(text.contains("A reviewer approved"), "{text}");
        assert!(
            text.contains(&format!("https://tracelab.example.com/investigations/{id}")),
            "{text}"
        );
        match flavor {
            Flavor::Cloud => assert_eq!(body["body"]["type"], "doc"),
            Flavor::Server => assert!(body["body"].is_string()),
        }
        let logged: Vec<String> = store
            .log(id)
            .await
            .iter()
            .map(|d| d.event.clone())
            .collect();
        assert_eq!(logged, ["jira:approved", "jira:approved"]);
    }
}

async fn sqlite(dir: &std::path::Path) -> Arc<SqliteStore> {
    Arc::new(SqliteStore::open(&dir.join("tracelab.db")).await.unwrap())
}

#[tokio::test]
async fn sqlite_events_are_signed_retried_and_logged() {
    let dir = tempfile::tempdir().unwrap();
    events_are_signed_retried_and_logged(sqlite(dir.path()).await).await;
}

#[tokio::test]
async fn sqlite_a_pending_delivery_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    a_pending_delivery_survives_a_restart(sqlite(&path).await, || sqlite(&path)).await;
}

#[tokio::test]
async fn sqlite_decisions_are_commented_on_jira() {
    let dir = tempfile::tempdir().unwrap();
    decisions_are_commented_on_jira(sqlite(dir.path()).await).await;
}

fn pg_options(schema: &str) -> PgOptions {
    PgOptions {
        schema: Some(schema.to_string()),
        max_connections: 2,
        ..PgOptions::default()
    }
}

async fn pg(name: &str) -> Option<(Arc<PgStore>, String, String)> {
    let url = backend("TRACELAB_TEST_POSTGRES")?;
    let schema = unique_name(name);
    let store = PgStore::connect(&url, pg_options(&schema)).await.unwrap();
    Some((Arc::new(store), url, schema))
}

async fn drop_schema(store: &PgStore, schema: &str) {
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
        .execute(store.pool())
        .await
        .unwrap();
}

#[tokio::test]
async fn postgres_events_are_signed_retried_and_logged() {
    let Some((store, _, schema)) = pg("notify_hooks").await else {
        return;
    };
    events_are_signed_retried_and_logged(store.clone()).await;
    drop_schema(&store, &schema).await;
}

#[tokio::test]
async fn postgres_a_pending_delivery_survives_a_restart() {
    let Some((store, url, schema)) = pg("notify_restart").await else {
        return;
    };
    let reopen = || async { Arc::new(PgStore::connect(&url, pg_options(&schema)).await.unwrap()) };
    a_pending_delivery_survives_a_restart(store, reopen).await;
    let store = PgStore::connect(&url, pg_options(&schema)).await.unwrap();
    drop_schema(&store, &schema).await;
}

#[tokio::test]
async fn postgres_decisions_are_commented_on_jira() {
    let Some((store, _, schema)) = pg("notify_jira").await else {
        return;
    };
    decisions_are_commented_on_jira(store.clone()).await;
    drop_schema(&store, &schema).await;
}
