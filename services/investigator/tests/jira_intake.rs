//! `POST /v1/jira/webhook` through the investigator's real router on a
//! real PostgreSQL and NATS (`TRACELAB_TEST_POSTGRES`, `TRACELAB_TEST_NATS`):
//! a labelled issue starts one investigation named after the issue (its
//! `requested` event on the bus), a redelivery and an unrelated edit start
//! nothing new, a changed template starts another; a wrong or missing
//! secret or a wrong Jira Cloud body signature is 401 (a right one is
//! accepted), an issue without the label or of another project 202
//! with the reason, a payload missing the test or not JSON 400, an
//! oversize body 413, a repository the deployment does not allow 403 —
//! and none of those store anything. The `created` stage's Jira comment is
//! stored for the dispatcher.

use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tracelab_bus::{JetStreamBus, Topology};
use tracelab_investigator::api::Api;
use tracelab_investigator::notifications::StoredViews;
use tracelab_notify::Outgoing;
use tracelab_notify::jira::webhook::{self, JiraIntake};
use tracelab_notify::jira::{IntakeSettings, JiraSettings, ProjectSettings, client};
use tracelab_store::{PgOptions, PgStore};
use tracelab_testkit::backends::{TEST_STREAM_BYTES, backend, unique_name};

const SECRET: &str = "jira-shared-secret-0123456789";

struct Setup {
    url: String,
    store: PgStore,
    bus: Arc<JetStreamBus>,
    schema: String,
    http: reqwest::Client,
}

async fn setup(repo_root: &std::path::Path) -> Option<Setup> {
    let pg = backend("TRACELAB_TEST_POSTGRES")?;
    let nats = backend("TRACELAB_TEST_NATS")?;
    tracelab_bus::install_crypto_provider();
    let schema = unique_name("jira_intake");
    let store = PgStore::connect(
        &pg,
        PgOptions {
            schema: Some(schema.clone()),
            max_connections: 4,
            ..PgOptions::default()
        },
    )
    .await
    .unwrap();
    let topology = Topology::with_prefix(&schema).with_stream_limit(TEST_STREAM_BYTES);
    let bus = Arc::new(JetStreamBus::connect(&nats, topology).await.unwrap());
    bus.ensure_streams().await.unwrap();
    let mut allowed = tracelab_fleet::FleetSettings::default().repositories;
    allowed.local_roots = vec![repo_root.display().to_string()];
    let repositories = tracelab_fleet::repositories::Repositories::new(&allowed).unwrap();
    let jira = JiraSettings {
        base_url: "http://127.0.0.1:9".into(),
        user: "bot@example.com".into(),
        token: "jira-token-0123456789".into(),
        intake: IntakeSettings {
            enabled: true,
            secret: SECRET.into(),
            projects: [
                (
                    "PVS".to_string(),
                    ProjectSettings {
                        repository: String::new(),
                    },
                ),
                ("OPS".to_string(), ProjectSettings::default()),
            ]
            .into(),
            max_body_bytes: 64 * 1024,
            ..IntakeSettings::default()
        },
        ..JiraSettings::default()
    };
    let sandbox = tracelab_fleet::sandbox::SandboxSettings {
        allow_local: true,
        ..Default::default()
    };
    let api = Arc::new(Api {
        store: store.clone(),
        bus: bus.clone(),
        verification_deadline: Duration::from_secs(600),
        sandbox,
        checkouts: tracelab_investigator::repositories::RepositoryMap::new(&Default::default()),
        repositories,
        forbid_self_approval: true,
        pull_requests: tracelab_investigator::pull_request::PullRequests::new(
            &Default::default(),
            &Default::default(),
        )
        .unwrap(),
        outgoing: Outgoing::new(
            Arc::new(store.clone()),
            Arc::new(StoredViews(store.clone())),
            None,
            client::Client::new(&jira).unwrap(),
            &jira,
        )
        .map(Arc::new),
    });
    let intake = JiraIntake::new(api.clone(), api.outgoing.clone(), &jira.intake)
        .unwrap()
        .expect("enabled");
    // The investigator's own REST router, where the route is documented.
    let router = tracelab_investigator::rest::routes(
        api,
        tracelab_investigator::auth::Auth::new(&[]).unwrap(),
        Some(Arc::new(intake)),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    Some(Setup {
        url,
        store,
        bus,
        schema,
        http: reqwest::Client::new(),
    })
}

impl Setup {
    async fn post(&self, query: &str, header: Option<&str>, body: String) -> (u16, Value) {
        let mut r = self
            .http
            .post(format!("{}{}{query}", self.url, webhook::PATH))
            .header("content-type", "application/json")
            .body(body);
        if let Some(secret) = header {
            r = r.header("x-tracelab-secret", secret);
        }
        let r = r.send().await.unwrap();
        let status = r.status().as_u16();
        let text = r.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    async fn post_signed(&self, query: &str, signature: &str, body: String) -> (u16, Value) {
        let r = self
            .http
            .post(format!("{}{}{query}", self.url, webhook::PATH))
            .header("content-type", "application/json")
            .header(webhook::HUB_SIGNATURE, signature)
            .body(body)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    async fn hook(&self, payload: &Value) -> (u16, Value) {
        self.post(&format!("?secret={SECRET}"), None, payload.to_string())
            .await
    }

    async fn count(&self) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM investigations")
            .fetch_one(self.store.pool())
            .await
            .unwrap()
    }
}

fn issue(key: &str, labels: &[&str], description: &str) -> Value {
    json!({
        "timestamp": 1_733_250_000_000u64,
        "webhookEvent": "jira:issue_created",
        "user": {"accountId": "5b10a2844c20165700ede21g", "emailAddress": "ada@example.com"},
        "issue": {"key": key, "fields": {
            "project": {"key": key.split('-').next().unwrap()},
            "labels": labels,
            "summary": "Cart total wrong",
            "description": description,
        }}
    })
}

#[tokio::test]
async fn a_labelled_issue_starts_one_investigation_named_after_it() {
    let root = std::env::temp_dir().join(unique_name("jira_repos"));
    let repo = root.join("shop");
    std::fs::create_dir_all(&repo).unwrap();
    let init = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&repo)
        .status()
        .unwrap();
    assert!(init.success());
    let Some(s) = setup(&root).await else {
        return;
    };
    let repository = repo.display().to_string();
    let template = format!(
        "Totals are off.\nrepository: {repository}\ntest: pytest -q tests/test_cart.py\ngood: v1\nbad: main"
    );

    // Refused before anything is read: no secret, a wrong one.
    let payload = issue("PVS-421", &["tracelab"], &template);
    let (status, body) = s.post("", None, payload.to_string()).await;
    assert_eq!(status, 401, "{body}");
    let (status, _) = s.post("?secret=nope", None, payload.to_string()).await;
    assert_eq!(status, 401);
    let (status, _) = s
        .post(
            "",
            Some("jira-shared-secret-012345678X"),
            payload.to_string(),
        )
        .await;
    assert_eq!(status, 401);

    // Jira Cloud's body signature: a wrong one is refused even with the
    // secret in the query.
    let signed = |body: &str, secret: &str| {
        use hmac::Mac;
        let mut m = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        m.update(body.as_bytes());
        let hex: String = m
            .finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("sha256={hex}")
    };
    let text = payload.to_string();
    let (status, _) = s
        .post_signed(
            &format!("?secret={SECRET}"),
            &signed(&text, "not-the-secret-0123456789"),
            text.clone(),
        )
        .await;
    assert_eq!(status, 401);
    assert_eq!(s.count().await, 0);

    // Started, through the header this time; then a redelivery, and an
    // edit that leaves the inputs alone, through the query.
    let (status, first) = s.post("", Some(SECRET), payload.to_string()).await;
    assert_eq!(status, 201, "{first}");
    assert_eq!(first["status"], "started");
    assert_eq!(first["issue"], "PVS-421");
    let id = first["investigation_id"].as_str().unwrap().to_string();
    let (status, again) = s
        .post_signed("", &signed(&text, SECRET), text.clone())
        .await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["investigation_id"], id.as_str());
    let (status, again) = s.hook(&payload).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["status"], "existing");
    assert_eq!(again["investigation_id"], id.as_str());
    let mut edited = issue("PVS-421", &["tracelab", "cart"], &template);
    edited["webhookEvent"] = json!("jira:issue_updated");
    edited["issue"]["fields"]["summary"] = json!("Cart total wrong (again)");
    let (status, again) = s.hook(&edited).await;
    assert_eq!(
        (status, again["investigation_id"].as_str()),
        (200, Some(id.as_str()))
    );
    assert_eq!(s.count().await, 1);

    // Stored as the API would: issue id, revisions, who; its event on the bus.
    let row = s
        .store
        .investigation(&tracelab_domain::ids::InvestigationId(id.clone()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.test_command, "pytest -q tests/test_cart.py");
    let request = row.request.unwrap();
    assert_eq!(request["issue_id"], "PVS-421");
    assert_eq!(request["good"], "v1");
    assert_eq!(request["bad"], "main");
    let hand_off = tracelab_domain::ports::HandOffStore::hand_off(
        &s.store,
        &tracelab_domain::ids::InvestigationId(id.clone()),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(hand_off.started_by.as_deref(), Some("jira:ada@example.com"));
    let waiting: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox")
        .fetch_one(s.store.pool())
        .await
        .unwrap();
    assert_eq!(waiting, 0, "the requested event was published");
    // The `created` comment was stored with the investigation, for the
    // dispatcher to render and send.
    let notes = s.store.notifications(&id).await.unwrap();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].body.is_none(), "rendered at dispatch");
    assert_eq!(
        (notes[0].channel.as_str(), notes[0].target.as_str()),
        ("jira", "PVS-421")
    );

    // A new bad revision in the template: another investigation.
    let moved = issue(
        "PVS-421",
        &["tracelab"],
        &template.replace("bad: main", "bad: release"),
    );
    let (status, other) = s.hook(&moved).await;
    assert_eq!(status, 201, "{other}");
    assert_ne!(other["investigation_id"], id.as_str());
    assert_eq!(s.count().await, 2);

    // Nothing to do, with the reason.
    let (status, body) = s.hook(&issue("PVS-422", &["frontend"], &template)).await;
    assert_eq!(status, 202, "{body}");
    assert!(body["reason"].as_str().unwrap().contains("label"), "{body}");
    let (status, body) = s.hook(&issue("WEB-9", &["tracelab"], &template)).await;
    assert_eq!(status, 202, "{body}");
    assert!(
        body["reason"].as_str().unwrap().contains("project WEB"),
        "{body}"
    );

    // Bad payloads.
    let (status, body) = s
        .hook(&issue(
            "PVS-423",
            &["tracelab"],
            &format!("repository: {repository}"),
        ))
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("names no test"),
        "{body}"
    );
    // The reporter hears why, once per reason (a second update adds nothing).
    let no_test = issue(
        "PVS-423",
        &["tracelab"],
        &format!("repository: {repository}"),
    );
    let (status, _) = s.hook(&no_test).await;
    assert_eq!(status, 400);
    let told = s.store.notifications("jira:PVS-423").await.unwrap();
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(
        (told[0].channel.as_str(), told[0].target.as_str()),
        ("jira", "PVS-423")
    );
    let body = told[0]
        .body
        .as_ref()
        .expect("a refusal's comment is rendered at once");
    assert!(body.to_string().contains("names no test"), "{body}");
    let (status, _) = s
        .post(&format!("?secret={SECRET}"), None, "{not json".into())
        .await;
    assert_eq!(status, 400);
    let (status, body) = s.hook(&json!({"webhookEvent": "jira:issue_created"})).await;
    assert_eq!(status, 400, "{body}");
    let huge = issue("PVS-424", &["tracelab"], &"x".repeat(100 * 1024));
    let (status, _) = s.hook(&huge).await;
    assert_eq!(status, 413);

    // The API's own checks still apply: a repository outside the roots.
    let (status, body) = s
        .hook(&issue(
            "OPS-1",
            &["tracelab"],
            "repository: /etc\ntest: pytest -q",
        ))
        .await;
    assert!(matches!(status, 400 | 403), "{status} {body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("issue OPS-1"),
        "{body}"
    );
    assert_eq!(s.count().await, 2, "nothing refused was stored");
    assert_eq!(s.store.notifications("jira:OPS-1").await.unwrap().len(), 1);

    std::fs::remove_dir_all(&root).unwrap();
    s.bus.delete_streams().await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP SCHEMA {} CASCADE",
        s.schema
    )))
    .execute(s.store.pool())
    .await
    .unwrap();
}
