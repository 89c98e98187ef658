//! `tracelab --server URL …`: the same commands against a fleet's REST API.
//! `investigate` submits, follows the state until the arbiter decides, and
//! prints the same report (JSON or markdown) as the embedded mode. While it
//! follows, an API that stops answering (a restart, a rolling update) is
//! waited out with backoff for `--server-patience` seconds before it gives
//! up with a clear error; the investigation goes on in the fleet either way.

use crate::args::{Format, InvestigateArgs, InvestigationsCommand, SandboxKind};
use crate::output;
use anyhow::{Context, bail};
use backon::{ExponentialBuilder, Retryable as _};
use serde_json::{Value, json};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tracelab_domain::report::Report;

pub struct Remote {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
    /// How long following an investigation waits out an API that does not answer.
    patience: Duration,
}

/// A failed call. `unreachable`: no answer at all, or a gateway's 502/503/504
/// in front of an API that is restarting — worth waiting out while following.
#[derive(Debug)]
struct CallError {
    message: String,
    unreachable: bool,
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CallError {}

impl Remote {
    pub fn new(url: &str, token: Option<String>, patience: Duration) -> anyhow::Result<Self> {
        let base = url.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            bail!("--server {url}: expected an http:// or https:// URL");
        }
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            .build()
            .context("cannot build the HTTP client")?;
        Ok(Self {
            base,
            token,
            http,
            patience,
        })
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<Value> {
        Ok(self.try_call(method, path, body).await?)
    }

    async fn try_call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, CallError> {
        let url = format!("{}{path}", self.base);
        let mut request = self.http.request(method.clone(), &url);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.map_err(|e| CallError {
            message: format!("{method} {url}: {e}"),
            unreachable: e.is_connect() || e.is_timeout() || e.is_request(),
        })?;
        let status = response.status();
        let gateway = matches!(status.as_u16(), 502..=504);
        let value: Value = response.json().await.map_err(|e| CallError {
            message: format!("{method} {url} answered {status}, not JSON: {e}"),
            unreachable: gateway,
        })?;
        if !status.is_success() {
            let message = value["error"]["message"].as_str().unwrap_or("no message");
            return Err(CallError {
                message: format!("the server refused ({status}): {message}"),
                unreachable: gateway,
            });
        }
        Ok(value)
    }

    /// GET `path`, waiting out an API that does not answer for at most
    /// `self.patience` (exponential backoff from 250 ms to 5 s).
    async fn get_patiently(&self, path: &str, id: &str) -> anyhow::Result<Value> {
        let since = Instant::now();
        let attempt = || self.try_call(reqwest::Method::GET, path, None);
        attempt
            .retry(
                ExponentialBuilder::default()
                    .with_min_delay(Duration::from_millis(250))
                    .with_max_delay(Duration::from_secs(5))
                    .with_total_delay(Some(self.patience))
                    .without_max_times(),
            )
            .sleep(tokio::time::sleep)
            .when(|e: &CallError| e.unreachable)
            .notify(|e: &CallError, wait: Duration| {
                eprintln!("warning: {e}; the server may be restarting, retrying in {wait:.1?}")
            })
            .await
            .map_err(|e| {
                if e.unreachable {
                    anyhow::anyhow!(
                        "the server at {} did not answer for {:.0?} while following investigation {id} ({e}); \
                         it goes on in the fleet: `tracelab --server {} investigations show {id}`",
                        self.base,
                        since.elapsed(),
                        self.base
                    )
                } else {
                    anyhow::Error::new(e)
                }
            })
    }

    pub async fn investigate(
        &self,
        quiet: bool,
        args: &InvestigateArgs,
    ) -> anyhow::Result<ExitCode> {
        let run = &args.run;
        if run.sandbox != SandboxKind::Local
            || run.image.is_some()
            || run.recipe.is_some()
            || !run.allow.is_empty()
        {
            bail!(
                "--sandbox, --image, --recipe and --allow are the fleet's settings; leave them out with --server"
            );
        }
        // A URL goes as it is: the fleet fetches it.
        let repo = match args.repo.to_str() {
            Some(url) if tracelab_repos::looks_like_url(url) => url.to_string(),
            _ => std::path::absolute(&args.repo)
                .context("repository path")?
                .display()
                .to_string(),
        };
        let mut body = json!({
            "repository": repo,
            "test_command": args.test,
            "evidence_id": args.evidence,
            "good": args.good,
            "bad": args.bad,
            "issue_id": args.issue_id,
            "command_timeout_ms": run.timeout * 1000,
            "max_runs": run.max_runs,
            "tests_at_revision": run.tests_at_revision,
            "max_hypotheses": run.max_hypotheses,
            "max_patch_attempts": run.max_patch_attempts,
        });
        if let Some(k) = run.parallel {
            body["parallelism"] = json!(k);
        }
        let created = self
            .call(reqwest::Method::POST, "/api/investigations", Some(body))
            .await?;
        let id = created["id"]
            .as_str()
            .context("the server sent no id")?
            .to_string();
        if !quiet {
            eprintln!("investigation {id} submitted to {}", self.base);
        }
        let started = Instant::now();
        let mut last_state = String::new();
        let path = format!("/api/investigations/{id}");
        loop {
            let view = tokio::select! {
                view = self.get_patiently(&path, &id) => view?,
                _ = tokio::signal::ctrl_c() => {
                    eprintln!("stopped following; investigation {id} goes on in the fleet");
                    return Ok(ExitCode::from(130));
                }
            };
            let state = view["state"].as_str().unwrap_or_default().to_string();
            if state != last_state && !quiet {
                eprintln!("[{:>6.1}s] {state}", started.elapsed().as_secs_f64());
            }
            match state.as_str() {
                "WAITING_FOR_REVIEW" | "APPROVED" | "REJECTED" => {
                    let report: Report = serde_json::from_value(view["report"].clone())
                        .context("the server's report does not follow the Report contract")?;
                    output::write_report(&report, run.format, run.out.as_deref())?;
                    return Ok(ExitCode::SUCCESS);
                }
                "FAILED" | "BLOCKED" => {
                    let reason = view["transitions"]
                        .as_array()
                        .and_then(|t| t.last())
                        .and_then(|t| t["reason"].as_str())
                        .unwrap_or("no reason recorded");
                    eprintln!("error: {reason} (investigation {id}, {state})");
                    return Ok(ExitCode::from(1));
                }
                _ => {}
            }
            last_state = state;
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    pub async fn investigations(&self, cmd: InvestigationsCommand) -> anyhow::Result<ExitCode> {
        match cmd {
            InvestigationsCommand::List { limit, format } => {
                let list = self
                    .call(
                        reqwest::Method::GET,
                        &format!("/api/investigations?limit={limit}"),
                        None,
                    )
                    .await?;
                let items: Vec<tracelab_domain::report::InvestigationSummary> =
                    serde_json::from_value(list["investigations"].clone())
                        .context("the server's list is not a list of investigations")?;
                match format {
                    Format::Json => println!("{}", serde_json::to_string_pretty(&items)?),
                    Format::Markdown => print!("{}", output::list_table(&items)),
                }
            }
            InvestigationsCommand::Show { id, format } => {
                let view = self
                    .call(
                        reqwest::Method::GET,
                        &format!("/api/investigations/{id}"),
                        None,
                    )
                    .await?;
                if view["report"].is_null() {
                    bail!(
                        "investigation {id} has no report yet (state {})",
                        view["state"].as_str().unwrap_or("?")
                    );
                }
                let report: Report = serde_json::from_value(view["report"].clone())?;
                output::write_report(&report, format, None)?;
            }
            InvestigationsCommand::Approve { id, reason } => {
                self.review(&id, "approve", reason).await?
            }
            InvestigationsCommand::Reject { id, reason } => {
                self.review(&id, "reject", reason).await?
            }
            InvestigationsCommand::PullRequest(args) => {
                if args.remote.is_some() || args.github.is_some() || args.gitlab.is_some() {
                    bail!(
                        "with --server the fleet's pull_requests settings choose the remote and the code host; leave out --remote, --github and --gitlab"
                    );
                }
                let opened = self
                    .call(
                        reqwest::Method::POST,
                        &format!("/api/investigations/{}/pull-request", args.id),
                        None,
                    )
                    .await?;
                let url = opened["url"]
                    .as_str()
                    .context("the server's answer has no url")?;
                let number = opened["number"]
                    .as_u64()
                    .context("the server's answer has no number")?;
                crate::pull_request::print(url, number, args.format)?;
            }
        }
        Ok(ExitCode::SUCCESS)
    }

    async fn review(&self, id: &str, action: &str, reason: Option<String>) -> anyhow::Result<()> {
        let view = self
            .call(
                reqwest::Method::POST,
                &format!("/api/investigations/{id}/{action}"),
                Some(json!({ "reason": reason })),
            )
            .await?;
        println!(
            "investigation {id} is now {}",
            view["state"].as_str().unwrap_or("?")
        );
        Ok(())
    }
}
