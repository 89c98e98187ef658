//! `tracelab --server URL …`: the same commands against a fleet's REST API.
//! `investigate` submits, follows the state until the arbiter decides, and
//! prints the same report (JSON or markdown) as the embedded mode.

use crate::args::{Format, InvestigateArgs, InvestigationsCommand, SandboxKind};
use crate::output;
use anyhow::{Context, bail};
use serde_json::{Value, json};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tracelab_domain::report::Report;

pub struct Remote {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
}

impl Remote {
    pub fn new(url: &str, token: Option<String>) -> anyhow::Result<Self> {
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
        Ok(Self { base, token, http })
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<Value> {
        let url = format!("{}{path}", self.base);
        let mut request = self.http.request(method.clone(), &url);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request
            .send()
            .await
            .with_context(|| format!("{method} {url}"))?;
        let status = response.status();
        let value: Value = response
            .json()
            .await
            .with_context(|| format!("{method} {url}: the answer is not JSON"))?;
        if !status.is_success() {
            let message = value["error"]["message"].as_str().unwrap_or("no message");
            bail!("the server refused ({status}): {message}");
        }
        Ok(value)
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
        let repo = std::path::absolute(&args.repo).context("repository path")?;
        let mut body = json!({
            "repository": repo.display().to_string(),
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
                view = self.call(reqwest::Method::GET, &path, None) => view?,
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
