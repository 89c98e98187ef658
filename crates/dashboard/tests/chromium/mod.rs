//! A headless Chromium driven over the DevTools protocol on
//! `--remote-debugging-pipe` (NUL-separated JSON on file descriptors 3 and
//! 4, wired up by `sh`), so no WebDriver or WebSocket crate is needed.
//! Shared by the dashboard's browser test and the CLI's `tracelab serve`
//! click-through (`#[path]`-included there); the includer needs tokio,
//! serde_json and base64.

#![allow(dead_code)]

use base64::Engine as _;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

pub type Error = Box<dyn std::error::Error + Send + Sync>;
pub type Result<T> = std::result::Result<T, Error>;

/// The longest any one browser step may take.
pub const STEP: Duration = Duration::from_secs(30);

pub fn find_chromium() -> Option<PathBuf> {
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

/// `$TRACELAB_ARTIFACTS/<name>`, else next to the test binary's target
/// directory (`<target>/debug/deps/<test>-*` → `<target>/<name>`).
pub fn artefact_dir(name: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os("TRACELAB_ARTIFACTS") {
        return PathBuf::from(dir).join(name);
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(Path::to_path_buf))
        .unwrap_or_else(std::env::temp_dir)
        .join(name)
}

/// A Chromium driven over the DevTools pipe, attached to one page.
pub struct Browser {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    next_id: u64,
    /// Events read while waiting for something else.
    events: VecDeque<Value>,
    session: String,
}

impl Browser {
    pub async fn launch(binary: &Path, profile: &Path, log: &Path) -> Result<Self> {
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

    pub async fn read(&mut self) -> Result<Value> {
        let mut buf = Vec::new();
        let n = tokio::time::timeout(STEP, self.output.read_until(0, &mut buf)).await??;
        if n == 0 {
            return Err("chromium closed the DevTools pipe".into());
        }
        buf.pop_if(|b| *b == 0);
        Ok(serde_json::from_slice(&buf)?)
    }

    pub async fn send(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value> {
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
    pub async fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        let session = self.session.clone();
        self.send(Some(&session), method, params).await
    }

    pub async fn wait_event(&mut self, method: &str) -> Result<Value> {
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
    pub async fn eval(&mut self, expression: &str) -> Result<Value> {
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

    pub async fn goto(&mut self, url: &str) -> Result<()> {
        self.events.clear();
        let r = self.call("Page.navigate", json!({ "url": url })).await?;
        if let Some(e) = r.get("errorText") {
            return Err(format!("navigating to {url}: {e}").into());
        }
        self.wait_event("Page.loadEventFired").await?;
        Ok(())
    }

    /// Clicks the centre of the element with a real mouse press and release.
    pub async fn click(&mut self, selector: &str) -> Result<()> {
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
    pub async fn click_and_wait(&mut self, selector: &str) -> Result<()> {
        self.events.clear();
        self.click(selector).await?;
        self.wait_event("Page.loadEventFired").await?;
        Ok(())
    }

    /// Focuses the field and types into it as a keyboard would.
    pub async fn type_into(&mut self, selector: &str, text: &str) -> Result<()> {
        self.eval(&format!(
            "document.querySelector({}).focus()",
            json!(selector)
        ))
        .await?;
        self.call("Input.insertText", json!({ "text": text }))
            .await?;
        Ok(())
    }

    pub async fn path(&mut self) -> Result<String> {
        Ok(self
            .eval("location.pathname + location.search")
            .await?
            .as_str()
            .unwrap_or_default()
            .to_string())
    }

    pub async fn text(&mut self) -> Result<String> {
        Ok(self
            .eval("document.body.innerText")
            .await?
            .as_str()
            .unwrap_or_default()
            .to_string())
    }

    /// A full-page PNG.
    pub async fn screenshot(&mut self, file: &Path) -> Result<()> {
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

    pub async fn close(mut self) -> Result<()> {
        let _ = self.send(None, "Browser.close", json!({})).await;
        let _ = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
        Ok(())
    }
}

/// Chromium, or `None` after saying why the test skips; with
/// `TRACELAB_REQUIRE_BACKENDS=1` (CI) a missing Chromium fails instead.
pub fn chromium_or_skip() -> Option<PathBuf> {
    let found = find_chromium();
    if found.is_none() {
        if std::env::var("TRACELAB_REQUIRE_BACKENDS").as_deref() == Ok("1") {
            panic!("TRACELAB_REQUIRE_BACKENDS=1 but no Chromium: apt-get install chromium");
        }
        eprintln!(
            "skipped: no Chromium found (install Debian's `chromium` or set TRACELAB_CHROMIUM)"
        );
    }
    found
}
