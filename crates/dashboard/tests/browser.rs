//! The dashboard in a real browser: headless Chromium signs in through the
//! form, reads the list and investigation pages, approves through the
//! review form, and signs out. Screenshots of each page are written as
//! test artefacts.
//!
//! Chromium is driven over the DevTools protocol on `--remote-debugging-pipe`
//! (NUL-separated JSON on file descriptors 3 and 4, wired up by `sh`), so no
//! WebDriver or WebSocket crate is needed.
//!
//! Without Chromium the test skips, saying why; with
//! `TRACELAB_REQUIRE_BACKENDS=1` (CI) it fails instead. `TRACELAB_CHROMIUM`
//! names the binary; screenshots go to `$TRACELAB_ARTIFACTS/dashboard-screenshots`
//! or `<target>/dashboard-screenshots`.

mod fixtures;

use base64::Engine as _;
use fixtures::*;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tracelab_dashboard::{Authenticator, DashboardSource, ListFilter, Viewer};

type Error = Box<dyn std::error::Error + Send + Sync>;
type Result<T> = std::result::Result<T, Error>;

/// The longest any one browser step may take.
const STEP: Duration = Duration::from_secs(30);

struct Tokens;

impl Authenticator for Tokens {
    fn check(&self, token: &str) -> Option<Viewer> {
        (token == "review-token").then(|| Viewer {
            name: "rita".into(),
            can_review: true,
        })
    }
}

fn find_chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("TRACELAB_CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find_map(|dir| {
        [
            "chromium",
            "chromium-browser",
            "google-chrome",
            "google-chrome-stable",
        ]
        .iter()
        .map(|name| dir.join(name))
        .find(|p| p.is_file())
    })
}

/// `$TRACELAB_ARTIFACTS/dashboard-screenshots`, else next to the test
/// binary's target directory (`<target>/debug/deps/browser-*` → `<target>`).
fn artefact_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("TRACELAB_ARTIFACTS") {
        return PathBuf::from(dir).join("dashboard-screenshots");
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(Path::to_path_buf))
        .unwrap_or_else(std::env::temp_dir)
        .join("dashboard-screenshots")
}

/// A Chromium driven over the DevTools pipe, attached to one page.
struct Browser {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    next_id: u64,
    /// Events read while waiting for something else.
    events: VecDeque<Value>,
    session: String,
}

impl Browser {
    async fn launch(binary: &Path, profile: &Path, log: &Path) -> Result<Self> {
        // Chromium reads commands from fd 3 and writes answers to fd 4: the
        // shell puts our stdin and stdout there, and nulls its own.
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(r#"exec "$@" 3<&0 4>&1 </dev/null >/dev/null"#)
            .arg("sh")
            .arg(binary)
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--no-default-browser-check",
                "--hide-scrollbars",
                "--window-size=1280,2000",
                "--remote-debugging-pipe",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(log)?)
            .kill_on_drop(true)
            .spawn()?;
        let input = child.stdin.take().ok_or("no stdin")?;
        let output = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut browser = Browser {
            child,
            input,
            output,
            next_id: 0,
            events: VecDeque::new(),
            session: String::new(),
        };
        let target = browser
            .send(None, "Target.createTarget", json!({ "url": "about:blank" }))
            .await?;
        let target_id = target["targetId"]
            .as_str()
            .ok_or("no targetId")?
            .to_string();
        let attached = browser
            .send(
                None,
                "Target.attachToTarget",
                json!({ "targetId": target_id, "flatten": true }),
            )
            .await?;
        browser.session = attached["sessionId"]
            .as_str()
            .ok_or("no sessionId")?
            .to_string();
        browser.call("Page.enable", json!({})).await?;
        browser
            .call(
                "Emulation.setDeviceMetricsOverride",
                json!({ "width": 1280, "height": 2000, "deviceScaleFactor": 1, "mobile": false }),
            )
            .await?;
        Ok(browser)
    }

    async fn read(&mut self) -> Result<Value> {
        let mut buf = Vec::new();
        let n = tokio::time::timeout(STEP, self.output.read_until(0, &mut buf)).await??;
        if n == 0 {
            return Err("chromium closed the DevTools pipe".into());
        }
        buf.pop_if(|b| *b == 0);
        Ok(serde_json::from_slice(&buf)?)
    }

    async fn send(&mut self, session: Option<&str>, method: &str, params: Value) -> Result<Value> {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            message["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&message)?;
        bytes.push(0);
        self.input.write_all(&bytes).await?;
        self.input.flush().await?;
        loop {
            let m = self.read().await?;
            if m["id"].as_u64() == Some(id) {
                if let Some(e) = m.get("error") {
                    return Err(format!("{method}: {e}").into());
                }
                return Ok(m["result"].clone());
            }
            if m.get("method").is_some() {
                self.events.push_back(m);
            }
        }
    }

    /// A command to the attached page.
    async fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        let session = self.session.clone();
        self.send(Some(&session), method, params).await
    }

    async fn wait_event(&mut self, method: &str) -> Result<Value> {
        let deadline = Instant::now() + STEP;
        loop {
            if let Some(i) = self.events.iter().position(|e| e["method"] == method) {
                return Ok(self.events.remove(i).unwrap_or_default());
            }
            if Instant::now() > deadline {
                return Err(format!("no {method} within {STEP:?}").into());
            }
            let m = self.read().await?;
            if m.get("method").is_some() {
                self.events.push_back(m);
            }
        }
    }

    /// The value of a JavaScript expression in the page.
    async fn eval(&mut self, expression: &str) -> Result<Value> {
        let r = self
            .call(
                "Runtime.evaluate",
                json!({ "expression": expression, "returnByValue": true }),
            )
            .await?;
        if let Some(e) = r.get("exceptionDetails") {
            return Err(format!("{expression}: {e}").into());
        }
        Ok(r["result"]["value"].clone())
    }

    async fn goto(&mut self, url: &str) -> Result<()> {
        self.events.clear();
        let r = self.call("Page.navigate", json!({ "url": url })).await?;
        if let Some(e) = r.get("errorText") {
            return Err(format!("navigating to {url}: {e}").into());
        }
        self.wait_event("Page.loadEventFired").await?;
        Ok(())
    }

    /// Clicks the centre of the element with a real mouse press and release.
    async fn click(&mut self, selector: &str) -> Result<()> {
        let rect = self
            .eval(&format!(
                "(() => {{ const e = document.querySelector({sel}); if (!e) return null; \
                 e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect(); \
                 return [r.x + r.width / 2, r.y + r.height / 2]; }})()",
                sel = json!(selector)
            ))
            .await?;
        let (x, y) = (
            rect[0].as_f64().ok_or(format!("no element {selector}"))?,
            rect[1].as_f64().ok_or("no y")?,
        );
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 }),
            )
            .await?;
        }
        Ok(())
    }

    /// Clicks, then waits for the page that the click loads.
    async fn click_and_wait(&mut self, selector: &str) -> Result<()> {
        self.events.clear();
        self.click(selector).await?;
        self.wait_event("Page.loadEventFired").await?;
        Ok(())
    }

    /// Focuses the field and types into it as a keyboard would.
    async fn type_into(&mut self, selector: &str, text: &str) -> Result<()> {
        self.eval(&format!(
            "document.querySelector({}).focus()",
            json!(selector)
        ))
        .await?;
        self.call("Input.insertText", json!({ "text": text }))
            .await?;
        Ok(())
    }

    async fn path(&mut self) -> Result<String> {
        Ok(self
            .eval("location.pathname + location.search")
            .await?
            .as_str()
            .unwrap_or_default()
            .to_string())
    }

    async fn text(&mut self) -> Result<String> {
        Ok(self
            .eval("document.body.innerText")
            .await?
            .as_str()
            .unwrap_or_default()
            .to_string())
    }

    /// A full-page PNG.
    async fn screenshot(&mut self, file: &Path) -> Result<()> {
        let metrics = self.call("Page.getLayoutMetrics", json!({})).await?;
        let size = &metrics["cssContentSize"];
        let (w, h) = (
            size["width"].as_f64().unwrap_or(1280.0),
            size["height"].as_f64().unwrap_or(2000.0),
        );
        let shot = self
            .call(
                "Page.captureScreenshot",
                json!({
                    "format": "png",
                    "captureBeyondViewport": true,
                    "clip": { "x": 0, "y": 0, "width": w, "height": h, "scale": 1 }
                }),
            )
            .await?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().ok_or("no screenshot data")?)?;
        std::fs::write(file, png)?;
        Ok(())
    }

    async fn close(mut self) -> Result<()> {
        let _ = self.send(None, "Browser.close", json!({})).await;
        let _ = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_signs_in_reads_and_approves_in_chromium() -> Result<()> {
    let Some(chromium) = find_chromium() else {
        if std::env::var("TRACELAB_REQUIRE_BACKENDS").as_deref() == Ok("1") {
            panic!("TRACELAB_REQUIRE_BACKENDS=1 but no Chromium: apt-get install chromium");
        }
        eprintln!(
            "skipped: no Chromium found (install Debian's `chromium` or set TRACELAB_CHROMIUM)"
        );
        return Ok(());
    };
    let started = Instant::now();
    let shots = artefact_dir();
    std::fs::create_dir_all(&shots)?;
    let profile = tempfile::tempdir()?;

    let verified = regression_verified();
    let hostile = hostile();
    let source = Arc::new(MemorySource::new(vec![
        failed(),
        flaky(),
        regression_unverified(),
        hostile.clone(),
        verified.clone(),
    ]));
    let dyn_source: Arc<dyn DashboardSource> = source.clone();
    let app = tracelab_dashboard::router(dyn_source, Arc::new(Tokens));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let mut b = Browser::launch(&chromium, profile.path(), &shots.join("chromium.log")).await?;

    // No session: the list sends the browser to the sign-in form.
    b.goto(&format!("{base}/investigations")).await?;
    let path = b.path().await?;
    assert!(path.starts_with("/login?next="), "{path}");
    b.screenshot(&shots.join("01-login.png")).await?;

    // Sign in through the form: typed token, clicked button.
    b.type_into("#token", "review-token").await?;
    b.click_and_wait("form.login button[type=submit]").await?;
    assert_eq!(b.path().await?, "/investigations");
    assert_eq!(
        b.eval("document.cookie").await?,
        json!(""),
        "the session cookie is HttpOnly"
    );
    let rows = b
        .eval("document.querySelectorAll('table.list tbody tr').length")
        .await?;
    assert_eq!(rows, json!(5));
    assert!(b.text().await?.contains("Signed in as rita (reviewer)"));
    b.screenshot(&shots.join("02-list.png")).await?;

    // The filter form narrows the list (a plain GET form).
    b.eval("document.querySelector('select[name=verdict]').value = 'flaky'")
        .await?;
    b.click_and_wait("form.filters button[type=submit]").await?;
    assert!(b.path().await?.contains("verdict=flaky"));
    let rows = b
        .eval("document.querySelectorAll('table.list tbody tr').length")
        .await?;
    assert_eq!(rows, json!(1));
    b.goto(&format!("{base}/investigations")).await?;

    // Hostile text renders as text and runs nothing.
    b.click_and_wait(&format!("a.id[title='{}']", hostile.id.0))
        .await?;
    assert_eq!(b.eval("window.__pwned === undefined").await?, json!(true));
    assert_eq!(
        b.eval("document.querySelectorAll('main script, main img').length")
            .await?,
        json!(0)
    );
    assert!(b.text().await?.contains(HOSTILE));
    b.screenshot(&shots.join("03-hostile-text.png")).await?;

    for (name, report) in [
        ("04-regression-unverified.png", regression_unverified()),
        ("05-flaky.png", flaky()),
        ("06-failed.png", failed()),
    ] {
        b.goto(&format!("{base}/investigations/{}", report.id.0))
            .await?;
        b.screenshot(&shots.join(name)).await?;
    }

    // The verified regression: read it, approve it with a reason.
    let page = format!("/investigations/{}", verified.id.0);
    b.goto(&format!("{base}{page}")).await?;
    let text = b.text().await?;
    assert!(text.contains("Round totals in add()"), "{text}");
    assert!(text.contains("WAITING_FOR_REVIEW"));
    let svgs = b
        .eval("document.querySelectorAll('svg.search').length")
        .await?;
    assert_eq!(svgs, json!(1));
    b.screenshot(&shots.join("07-investigation.png")).await?;
    b.type_into("#reason", "revert is right").await?;
    b.click_and_wait("button.approve").await?;
    assert_eq!(b.path().await?, page);
    let text = b.text().await?;
    assert!(text.contains("APPROVED"), "{text}");
    assert!(text.contains("approved by rita: revert is right"), "{text}");
    assert_eq!(
        b.eval("document.querySelectorAll('button.approve').length")
            .await?,
        json!(0)
    );
    b.screenshot(&shots.join("08-approved.png")).await?;
    assert_eq!(
        source.reviews(),
        vec![Review {
            id: verified.id.0.clone(),
            approve: true,
            reviewer: "rita".into(),
            reason: Some("revert is right".into()),
        }]
    );

    // Sign out; the list is closed again.
    b.click_and_wait("form.logout button").await?;
    assert!(b.path().await?.starts_with("/login"));
    b.goto(&format!("{base}/investigations")).await?;
    assert!(b.path().await?.starts_with("/login"));

    b.close().await?;
    server.abort();
    eprintln!(
        "browser test took {:.1} s; screenshots in {}",
        started.elapsed().as_secs_f64(),
        shots.display()
    );
    Ok(())
}
