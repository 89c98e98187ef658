//! Webhooks and Jira from a whole fleet (real NATS and PostgreSQL):
//!
//! - an investigation's `created` and `decided` events reach a receiver that
//!   verifies every signature — `decided` made by the arbiter and heard by
//!   the investigator's consumer — and a delivery that failed while the
//!   receiver was down survives a `kill -9` of the investigator: the
//!   restarted one sends it with the same delivery id;
//! - a Jira issue webhook on the investigator's API port starts the
//!   investigation (branch named after the issue), and a fake Jira gets the
//!   `created` and `decided` comments (verdict, culprit, the dashboard link)
//!   with the Server/Data Center flavor's Bearer token.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracelab_e2e::{Fleet, FleetOptions, backends};
use tracelab_notify::webhooks::{REPLAY_WINDOW, verify};
use tracelab_testkit::scenarios;

const SECRET: &str = "whsec-e2e-0123456789abcdef";

/// One request as received.
#[derive(Debug, Clone)]
struct Request {
    path: String,
    headers: std::collections::HashMap<String, String>,
    body: Vec<u8>,
}

#[derive(Default)]
struct Receiver {
    /// (event header, delivery header, body) of each verified webhook.
    got: Mutex<Vec<(String, String, Value)>>,
    refused: Mutex<Vec<String>>,
    /// Every request answered 2xx (the fake Jira's comments).
    requests: Mutex<Vec<Request>>,
    down: AtomicBool,
    /// Check webhook signatures (off for the fake Jira).
    signed: bool,
}

/// A small HTTP/1.1 receiver on a thread (one request per connection).
fn receiver(state: Arc<Receiver>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut headers = std::collections::HashMap::new();
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let path = line.split(' ').nth(1).unwrap_or_default().to_string();
            loop {
                line.clear();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((k, v)) = line.trim_end().split_once(':') {
                    headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
                }
            }
            let length: usize = headers
                .get("content-length")
                .and_then(|l| l.parse().ok())
                .unwrap_or(0);
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            let header = |n: &str| headers.get(n).cloned().unwrap_or_default();
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs() as i64;
            let status = if state.down.load(Ordering::SeqCst) {
                "503 Service Unavailable"
            } else if !state.signed {
                state.requests.lock().unwrap().push(Request {
                    path,
                    headers: headers.clone(),
                    body,
                });
                "201 Created"
            } else {
                match verify(
                    SECRET.as_bytes(),
                    &header("x-tracelab-signature"),
                    &body,
                    now,
                    REPLAY_WINDOW,
                ) {
                    Ok(()) => {
                        state.got.lock().unwrap().push((
                            header("x-tracelab-event"),
                            header("x-tracelab-delivery"),
                            serde_json::from_slice(&body).unwrap_or(Value::Null),
                        ));
                        "204 No Content"
                    }
                    Err(why) => {
                        state.refused.lock().unwrap().push(why.to_string());
                        "401 Unauthorized"
                    }
                }
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
        }
    });
    url
}

fn events(r: &Receiver) -> Vec<String> {
    r.got.lock().unwrap().iter().map(|g| g.0.clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn decided_reaches_receivers_and_survives_an_investigator_crash() {
    let Some(b) = backends() else { return };
    let state = Arc::new(Receiver {
        signed: true,
        ..Receiver::default()
    });
    state.down.store(true, Ordering::SeqCst);
    let url = receiver(state.clone());
    let mut fleet = Fleet::start(
        &b,
        FleetOptions {
            investigator_config: Some(format!(
                "[webhooks]\nurls = [\"{url}\"]\nsecret = \"{SECRET}\"\nattempts = 500\nfirst_retry_ms = 100\nmax_retry_ms = 1000\n"
            )),
            ..FleetOptions::default()
        },
    )
    .await;
    let s = scenarios::linear_regression(6, 3, 0.0);
    let id = fleet
        .submit(json!({
            "repository": s.repo.path().display().to_string(),
            "test_command": s.test_command,
            "command_timeout_ms": 30000,
        }))
        .await;
    let view = fleet.wait_decided(&id, Duration::from_secs(300)).await;
    assert_eq!(view["state"], "WAITING_FOR_REVIEW", "{view}");

    // While the receiver is down, both events wait with failed attempts.
    let store = fleet.store().await;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let failed: Vec<String> = store
            .webhook_deliveries(&id)
            .await
            .unwrap()
            .into_iter()
            .filter(|d| !d.delivered)
            .map(|d| d.event)
            .collect();
        if failed.iter().any(|e| e == "created") && failed.iter().any(|e| e == "decided") {
            break;
        }
        assert!(Instant::now() < deadline, "{failed:?}\n{}", fleet.logs());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    fleet.kill("investigator");
    state.down.store(false, Ordering::SeqCst);
    fleet.restart("investigator").await;

    // Generous: a delivery the killed process had claimed waits for its
    // lease (90 s with these settings) to run out.
    let deadline = Instant::now() + Duration::from_secs(200);
    while !(events(&state).contains(&"created".to_string())
        && events(&state).contains(&"decided".to_string()))
    {
        assert!(
            Instant::now() < deadline,
            "{:?}\n{}",
            events(&state),
            fleet.logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(state.refused.lock().unwrap().is_empty());
    let got = state.got.lock().unwrap().clone();
    let decided = got.iter().find(|g| g.0 == "decided").unwrap();
    assert_eq!(decided.2["investigation_id"], id.as_str());
    assert_eq!(decided.2["data"]["state"], "WAITING_FOR_REVIEW");
    assert_eq!(decided.2["data"]["verdict"], view["verdict"]);
    let log = store.webhook_deliveries(&id).await.unwrap();
    assert!(
        log.iter()
            .filter(|d| d.event == "decided")
            .all(|d| d.delivery_id == decided.1),
        "one delivery id across the restart: {log:?}"
    );
    assert_eq!(
        got.iter().filter(|g| g.0 == "decided").count(),
        1,
        "sent once after the receiver came back"
    );
}

const JIRA_TOKEN: &str = "jira-pat-e2e-0123456789SECRET";
const JIRA_SECRET: &str = "jira-intake-e2e-0123456789";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_jira_issue_is_investigated_and_its_decision_commented() {
    let Some(b) = backends() else { return };
    let jira = Arc::new(Receiver::default());
    let jira_url = receiver(jira.clone());
    let jira_base = jira_url.trim_end_matches("/hook").to_string();
    let s = scenarios::linear_regression(6, 3, 0.0);
    let fleet = Fleet::start(
        &b,
        FleetOptions {
            investigator_config: Some(format!(
                "[jira]\nbase_url = \"{jira_base}\"\nflavor = \"server\"\ntoken = \"{JIRA_TOKEN}\"\n\
                 dashboard_url = \"https://tracelab.example.com\"\nfirst_retry_ms = 100\n\
                 [jira.intake]\nenabled = true\nsecret = \"{JIRA_SECRET}\"\nlabel = \"tracelab\"\n"
            )),
            ..FleetOptions::default()
        },
    )
    .await;
    let issue = json!({
        "webhookEvent": "jira:issue_created",
        "user": {"name": "ada"},
        "issue": {"key": "PVS-421", "fields": {
            "project": {"key": "PVS"},
            "labels": ["tracelab"],
            "description": format!(
                "The total is wrong since the last release.\nrepository: {}\ntest: {}\n",
                s.repo.path().display(),
                s.test_command
            ),
        }}
    });
    let r = fleet
        .http()
        .post(format!(
            "{}/v1/jira/webhook?secret={JIRA_SECRET}",
            fleet.api
        ))
        .header("content-type", "application/json")
        .body(issue.to_string())
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let answer: Value = r.json().await.unwrap();
    assert_eq!(status, 201, "{answer}\n{}", fleet.logs());
    let id = answer["investigation_id"].as_str().unwrap().to_string();
    let view = fleet.wait_decided(&id, Duration::from_secs(300)).await;
    assert_eq!(view["state"], "WAITING_FOR_REVIEW", "{view}");
    let winner = &view["report"]["winner"];
    assert!(
        winner["branch"]
            .as_str()
            .is_some_and(|b| b.starts_with("ai-debug/PVS-421-h")),
        "{winner}"
    );

    let deadline = Instant::now() + Duration::from_secs(60);
    let comments = loop {
        let got = jira.requests.lock().unwrap().clone();
        if got.len() >= 2 {
            break got;
        }
        assert!(Instant::now() < deadline, "{got:?}\n{}", fleet.logs());
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(comments.len(), 2, "{comments:?}");
    for c in &comments {
        assert_eq!(c.path, "/rest/api/2/issue/PVS-421/comment");
        assert_eq!(
            c.headers.get("authorization").map(String::as_str),
            Some(format!("Bearer {JIRA_TOKEN}").as_str())
        );
    }
    let texts: Vec<String> = comments
        .iter()
        .map(|c| {
            serde_json::from_slice::<Value>(&c.body).unwrap()["body"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let decided = texts
        .iter()
        .find(|t| t.contains("finished its diagnosis"))
        .unwrap_or_else(|| panic!("{texts:?}"));
    let culprit: String = s.culprit.clone().unwrap().chars().take(12).collect();
    assert!(decided.contains("Verdict: *regression*"), "{decided}");
    assert!(decided.contains(&culprit), "{decided}");
    assert!(
        decided.contains(&format!("https://tracelab.example.com/investigations/{id}")),
        "{decided}"
    );
    assert!(!fleet.logs().contains(JIRA_TOKEN), "the token in a log");
}

/// `tracelab serve` (one machine, SQLite) sends the fleet's webhooks: the
/// demo's `created` and `decided` (run by another process, found by the
/// sweep) and the dashboard approval's `approved`, each once, signed and
/// checked by testkit's fake receiver the way receivers are told to; the
/// receiver's first answer is a 503, retried with the same delivery id;
/// the attempts are on the investigation's page. No backend needed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_sends_signed_webhooks_for_its_stages() {
    use std::process::{Command, Stdio};
    use tracelab_testkit::http_recorder::HttpRecorder;
    let bin = tracelab_e2e::tracelab_binary();
    let receiver = HttpRecorder::start(204).unwrap();
    receiver.answer_next(503);
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("t.db").display().to_string();
    let out = Command::new(&bin)
        .args(["--db", &db, "-q", "demo", "--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = report["id"].as_str().unwrap().to_string();

    let token = "serve-token-0123456789abcdef";
    let mut child = Command::new(&bin)
        .args(["--db", &db, "serve", "--listen", "127.0.0.1:0"])
        .env("TRACELAB_TOKEN", token)
        .env("TRACELAB_WEBHOOK_URLS", receiver.url("/hook"))
        .env("TRACELAB_WEBHOOK_SECRET", SECRET)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let _served = Kill(child);
    let base = first
        .trim()
        .strip_suffix("/investigations")
        .expect("the dashboard URL")
        .to_string();

    // Sign in, then approve through the form as a browser does.
    tracelab_bus::install_crypto_provider();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = http
        .get(format!("{base}/investigations?token={token}"))
        .send()
        .await
        .unwrap();
    let cookie = r.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let page = |http: &reqwest::Client| {
        http.get(format!("{base}/investigations/{id}"))
            .header("cookie", &cookie)
            .send()
    };
    let detail = page(&http).await.unwrap().text().await.unwrap();
    let csrf = detail
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the review form's CSRF token")
        .to_string();
    let r = http
        .post(format!("{base}/investigations/{id}/approve"))
        .header("cookie", &cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("csrf={csrf}&reason=looks+right"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303, "{}", r.text().await.unwrap_or_default());

    // created, decided and approved arrive, each once, signed.
    let deadline = Instant::now() + Duration::from_secs(30);
    let verified = loop {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let requests = receiver.requests();
        let mut verified = Vec::new();
        for r in &requests {
            let signature = r.header("x-tracelab-signature").unwrap_or_default();
            verify(SECRET.as_bytes(), signature, &r.body, now, REPLAY_WINDOW)
                .unwrap_or_else(|why| panic!("{why}: {r:?}"));
            let body: Value = serde_json::from_slice(&r.body).unwrap();
            verified.push((
                r.header("x-tracelab-event").unwrap().to_string(),
                r.header("x-tracelab-delivery").unwrap().to_string(),
                r.status,
                body,
            ));
        }
        let delivered = verified.iter().filter(|v| v.2 == 204).count();
        if delivered >= 3 {
            break verified;
        }
        assert!(
            Instant::now() < deadline,
            "only {delivered} delivered: {verified:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut delivered: Vec<&str> = verified
        .iter()
        .filter(|v| v.2 == 204)
        .map(|v| v.0.as_str())
        .collect();
    delivered.sort();
    assert_eq!(delivered, ["approved", "created", "decided"]);
    let refused = &verified[0];
    assert_eq!(refused.2, 503, "the scripted outage");
    let retried = verified
        .iter()
        .find(|v| v.2 == 204 && v.0 == refused.0)
        .unwrap();
    assert_eq!(retried.1, refused.1, "the retry has the same delivery id");
    assert_eq!(retried.3, refused.3, "and the same body");
    let approved = verified.iter().find(|v| v.0 == "approved").unwrap();
    assert_eq!(approved.3["investigation_id"], id.as_str());
    assert_eq!(approved.3["data"]["state"], "APPROVED");
    let audit = approved.3["data"]["audit"].to_string();
    assert!(audit.contains("looks right"), "{audit}");
    let decided = verified.iter().find(|v| v.0 == "decided").unwrap();
    assert_eq!(decided.3["data"]["report"]["id"], id.as_str());

    // The attempts are on the page.
    let detail = page(&http).await.unwrap().text().await.unwrap();
    assert!(detail.contains("Webhook deliveries"), "{detail}");
}

#[tokio::test]
async fn an_approval_on_the_command_line_is_queued_and_serve_delivers_it() {
    // `tracelab investigations approve` with webhooks configured stores the
    // approved notification with the approval itself; `tracelab serve`,
    // started afterwards, delivers it, signed.
    use std::process::{Command, Stdio};
    use tracelab_testkit::http_recorder::HttpRecorder;
    let bin = tracelab_e2e::tracelab_binary();
    let receiver = HttpRecorder::start(204).unwrap();
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("t.db").display().to_string();
    let out = Command::new(&bin)
        .args(["--db", &db, "-q", "demo", "--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = report["id"].as_str().unwrap().to_string();
    let hook = receiver.url("/hook");
    let approve = Command::new(&bin)
        .args([
            "--db",
            &db,
            "investigations",
            "approve",
            &id,
            "--reason",
            "from the shell",
        ])
        .env("TRACELAB_WEBHOOK_URLS", &hook)
        .env("TRACELAB_WEBHOOK_SECRET", SECRET)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&approve.stderr).to_string();
    assert!(approve.status.success(), "{said}");
    assert!(
        said.contains("queued 1 notification(s) of the approved stage"),
        "{said}"
    );
    assert!(
        receiver.requests().is_empty(),
        "nothing is sent by the CLI itself"
    );

    let mut child = Command::new(&bin)
        .args(["--db", &db, "serve", "--listen", "127.0.0.1:0"])
        .env("TRACELAB_TOKEN", "serve-token-0123456789abcdef")
        .env("TRACELAB_WEBHOOK_URLS", &hook)
        .env("TRACELAB_WEBHOOK_SECRET", SECRET)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let approved = loop {
        let found = receiver
            .requests()
            .into_iter()
            .find(|r| r.status == 204 && r.header("x-tracelab-event") == Some("approved"));
        if let Some(r) = found {
            break r;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("no approved webhook: {:?}", receiver.requests());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let _ = child.kill();
    let _ = child.wait();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let signature = approved.header("x-tracelab-signature").unwrap_or_default();
    verify(
        SECRET.as_bytes(),
        signature,
        &approved.body,
        now,
        REPLAY_WINDOW,
    )
    .unwrap_or_else(|why| panic!("{why}"));
    let body: Value = serde_json::from_slice(&approved.body).unwrap();
    assert_eq!(body["investigation_id"], id.as_str());
    assert_eq!(body["data"]["state"], "APPROVED");
    assert!(body["data"]["audit"].to_string().contains("from the shell"));
}
