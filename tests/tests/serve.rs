//! `tracelab serve`: the review dashboard over the one-machine store, as a
//! person (and a link checker) uses it — the contract other tools rely on:
//! the first stdout line is the URL (with a sign-in token when none was
//! given), `?token=` signs in, pages without a session go to sign-in,
//! `Authorization: Bearer` reads pages, and an approval through the form
//! is stored.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use tracelab_e2e::tracelab_binary;

struct Served {
    child: Child,
    url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(db: &str, token: Option<&str>) -> Served {
    let mut command = Command::new(tracelab_binary());
    command
        .args(["--db", db, "serve", "--listen", "127.0.0.1:0"])
        .env_remove("TRACELAB_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(token) = token {
        command.env("TRACELAB_TOKEN", token);
    }
    let mut child = command.spawn().expect("start tracelab serve");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("the first line");
    Served {
        child,
        url: first.trim().to_string(),
    }
}

fn demo(db: &str) -> String {
    let out = Command::new(tracelab_binary())
        .args(["--db", db, "-q", "demo", "--format", "json"])
        .output()
        .expect("run tracelab demo");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    report["id"].as_str().expect("id").to_string()
}

fn origin(url: &str) -> String {
    let rest = url.strip_prefix("http://").expect("http URL");
    format!("http://{}", rest.split('/').next().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_serves_this_machines_investigations_and_records_an_approval() {
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("t.db").display().to_string();
    let id = demo(&db);
    let served = serve(&db, None);
    let token = served
        .url
        .split("?token=")
        .nth(1)
        .expect("a generated token in the link")
        .to_string();
    assert!(token.len() >= 32, "{}", served.url);
    let base = origin(&served.url);
    tracelab_bus::install_crypto_provider();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();

    // No session: to the sign-in form.
    let r = http
        .get(format!("{base}/investigations"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    assert!(
        r.headers()["location"]
            .to_str()
            .unwrap()
            .starts_with("/login")
    );

    // The printed link signs in and drops the token from the address.
    let r = http.get(&served.url).send().await.unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()["location"], "/investigations");
    let cookie = r.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let get = |path: &str| {
        http.get(format!("{base}{path}"))
            .header("cookie", &cookie)
            .send()
    };
    let list = get("/investigations").await.unwrap().text().await.unwrap();
    assert!(list.contains(&id), "{list}");
    let detail = get(&format!("/investigations/{id}"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(detail.contains("WAITING_FOR_REVIEW"), "{detail}");

    // A script reads with the bearer token, without a session.
    let r = http
        .get(format!("{base}/investigations/{id}"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);

    // Approve through the form, as the browser does.
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
    let out = Command::new(tracelab_binary())
        .args(["--db", &db, "investigations", "list", "--format", "json"])
        .output()
        .unwrap();
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["state"], "APPROVED", "{listed}");
    // The page's audit log: started by this machine's user, approved through the dashboard.
    let page = http
        .get(format!("{base}/investigations/{id}"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("<code>started</code>"), "{page}");
    assert!(page.contains("<code>approved</code>"), "{page}");
    assert!(
        page.contains("looks right"),
        "the reviewer's reason is in the log"
    );
    assert!(page.contains("No pull request has been opened."));
    drop(served);

    // With TRACELAB_TOKEN the link carries no token, and that token signs in.
    let served = serve(&db, Some("my-own-token-123"));
    assert!(!served.url.contains("token="), "{}", served.url);
    let r = http
        .get(format!("{}?token=my-own-token-123", served.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    assert!(r.headers().contains_key("set-cookie"));
}
