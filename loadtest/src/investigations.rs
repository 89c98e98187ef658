//! The investigations scenario: submit one investigation per generated
//! regression repository through `POST /api/investigations`, keep at most
//! `concurrency` undecided at once (a closed loop, like CI jobs waiting for
//! an answer), poll `GET /api/investigations/{id}` until a final state, and
//! check the culprit against the one the repository was built with.

use crate::http;
use crate::latency::{Recorder, Summary, human};
use crate::repos::{self, Repo, Shape};
use futures::StreamExt;
use serde::Serialize;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct Options {
    /// The investigator's REST base URL.
    pub api: String,
    pub count: usize,
    pub concurrency: usize,
    /// Where the repositories are made or reused (the services must read it).
    pub repos: PathBuf,
    pub shape: Shape,
    pub token: Option<String>,
    pub poll_interval: Duration,
    /// Per investigation, from submission to a final state.
    pub timeout: Duration,
    pub parallelism: Option<u32>,
    pub command_timeout_ms: Option<u64>,
    pub max_runs: Option<u32>,
}

/// How a finished investigation ended, judged against the known culprit.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Decided (WAITING_FOR_REVIEW or later) with the expected culprit.
    Right,
    /// Decided, but blaming another commit (or none).
    WrongCulprit { got: Option<String> },
    /// FAILED or BLOCKED, with the reason of the last transition.
    Ended {
        state: String,
        reason: Option<String>,
    },
}

/// Judges a `GET /api/investigations/{id}` body; `None` while it is not final.
pub fn judge(view: &Value, culprit: &str) -> Option<Outcome> {
    let state = view["state"].as_str().unwrap_or_default();
    match state {
        "WAITING_FOR_REVIEW" | "APPROVED" | "REJECTED" => {
            let got = view["culprit"]
                .as_str()
                .or_else(|| view["report"]["culprit"]["commit"].as_str());
            Some(if got == Some(culprit) {
                Outcome::Right
            } else {
                Outcome::WrongCulprit {
                    got: got.map(str::to_string),
                }
            })
        }
        "FAILED" | "BLOCKED" => Some(Outcome::Ended {
            state: state.to_string(),
            reason: view["transitions"]
                .as_array()
                .and_then(|t| t.last())
                .and_then(|t| t["reason"].as_str())
                .map(str::to_string),
        }),
        _ => None,
    }
}

/// Stored decision time minus stored creation time.
fn server_latency(view: &Value) -> Option<Duration> {
    use time::format_description::well_known::Rfc3339;
    let at = |key: &str| time::OffsetDateTime::parse(view[key].as_str()?, &Rfc3339).ok();
    let elapsed = at("updated_at")? - at("created_at")?;
    elapsed.try_into().ok()
}

/// Errors by cause; `poll_retries` are transient and not errors.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Errors {
    pub submit: u64,
    pub timed_out: u64,
    pub failed: u64,
    pub blocked: u64,
    pub wrong_culprit: u64,
    pub poll_retries: u64,
}

impl Errors {
    pub fn total(&self) -> u64 {
        self.submit + self.timed_out + self.failed + self.blocked + self.wrong_culprit
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub scenario: &'static str,
    pub api: String,
    pub count: usize,
    pub concurrency: usize,
    pub commits: usize,
    pub test_seconds: f64,
    pub repositories_generated: usize,
    pub wall_seconds: f64,
    /// Decided with the right culprit.
    pub completed: u64,
    /// `completed` per minute of wall-clock time.
    pub per_minute: f64,
    /// Client side: request sent → final state seen (includes up to one poll interval).
    pub latency: Summary,
    /// Server side: `created_at` → `updated_at` of the decided investigation.
    pub server_latency: Summary,
    pub errors: Errors,
    pub error_total: u64,
    /// The first few errors, to say why.
    pub error_samples: Vec<String>,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let e = &self.errors;
        writeln!(
            f,
            "investigations against {} (concurrency {}, {}-commit histories, {} s tests, {} repositories generated)",
            self.api,
            self.concurrency,
            self.commits,
            self.test_seconds,
            self.repositories_generated
        )?;
        writeln!(
            f,
            "  completed   {} of {} in {:.1} s → {:.2} investigations/min",
            self.completed, self.count, self.wall_seconds, self.per_minute
        )?;
        writeln!(f, "  end-to-end  {}", self.latency)?;
        writeln!(f, "  server      {}", self.server_latency)?;
        write!(
            f,
            "  errors      {} (submit {}, timed out {}, failed {}, blocked {}, wrong culprit {}); poll retries {}",
            self.error_total,
            e.submit,
            e.timed_out,
            e.failed,
            e.blocked,
            e.wrong_culprit,
            e.poll_retries
        )?;
        for s in &self.error_samples {
            write!(f, "\n    {s}")?;
        }
        Ok(())
    }
}

/// How one investigation went.
#[derive(Debug)]
struct Sample {
    repo: String,
    id: Option<String>,
    result: Result<(Outcome, Duration, Option<Duration>), Failure>,
    poll_retries: u64,
}

#[derive(Debug)]
enum Failure {
    Submit(String),
    TimedOut,
}

pub async fn run(opts: Options) -> anyhow::Result<Report> {
    anyhow::ensure!(opts.count > 0, "--count must be at least 1");
    anyhow::ensure!(opts.concurrency > 0, "--concurrency must be at least 1");
    let generate = {
        let (dir, count, shape, workers) =
            (opts.repos.clone(), opts.count, opts.shape, opts.concurrency);
        tokio::task::spawn_blocking(move || repos::prepare(&dir, count, shape, workers))
    };
    let prepared = generate.await??;
    eprintln!(
        "loadtest: {} repositories in {} ({} generated now)",
        prepared.repos.len(),
        opts.repos.display(),
        prepared.generated
    );
    let client = http::client(opts.token.as_deref(), Duration::from_secs(30))?;
    let started = Instant::now();
    let total = prepared.repos.len();
    let mut samples = futures::stream::iter(prepared.repos.iter())
        .map(|repo| investigate(&client, &opts, repo))
        .buffer_unordered(opts.concurrency);

    let mut latency = Recorder::default();
    let mut server = Recorder::default();
    let mut errors = Errors::default();
    let mut samples_text = Vec::new();
    let mut completed = 0u64;
    let mut done = 0usize;
    let mut last = started;
    while let Some(sample) = samples.next().await {
        done += 1;
        last = Instant::now();
        errors.poll_retries += sample.poll_retries;
        let id = sample.id.as_deref().unwrap_or("-");
        let mut error = None;
        match &sample.result {
            Ok((outcome, elapsed, stored)) => {
                latency.record(*elapsed);
                if let Some(s) = stored {
                    server.record(*s);
                }
                match outcome {
                    Outcome::Right => completed += 1,
                    Outcome::WrongCulprit { got } => {
                        errors.wrong_culprit += 1;
                        error = Some(format!("{id} blamed {got:?}"));
                    }
                    Outcome::Ended { state, reason } => {
                        if state == "BLOCKED" {
                            errors.blocked += 1;
                        } else {
                            errors.failed += 1;
                        }
                        error = Some(format!(
                            "{id} ended {state}: {}",
                            reason.as_deref().unwrap_or("no reason")
                        ));
                    }
                }
                eprintln!(
                    "loadtest: [{done}/{total}] {id} {} in {}",
                    match outcome {
                        Outcome::Right => "right culprit",
                        Outcome::WrongCulprit { .. } => "WRONG culprit",
                        Outcome::Ended { state, .. } => state.as_str(),
                    },
                    human(elapsed.as_secs_f64() * 1000.0)
                );
            }
            Err(Failure::Submit(m)) => {
                errors.submit += 1;
                error = Some(format!("submitting {}: {m}", sample.repo));
            }
            Err(Failure::TimedOut) => {
                errors.timed_out += 1;
                error = Some(format!("{id} not decided within {:?}", opts.timeout));
            }
        }
        if let Some(e) = error {
            if sample.result.is_err() {
                eprintln!("loadtest: [{done}/{total}] {e}");
            }
            if samples_text.len() < 5 {
                samples_text.push(e);
            }
        }
    }
    let wall = last.duration_since(started).as_secs_f64();
    Ok(Report {
        scenario: "investigations",
        api: opts.api.clone(),
        count: opts.count,
        concurrency: opts.concurrency,
        commits: opts.shape.commits,
        test_seconds: opts.shape.test_seconds,
        repositories_generated: prepared.generated,
        wall_seconds: wall,
        completed,
        per_minute: if wall > 0.0 {
            completed as f64 * 60.0 / wall
        } else {
            0.0
        },
        latency: latency.summary(),
        server_latency: server.summary(),
        error_total: errors.total(),
        errors,
        error_samples: samples_text,
    })
}

fn request_body(opts: &Options, repo: &Repo) -> Value {
    let mut body = json!({
        "repository": repo.path.display().to_string(),
        "test_command": repo.test_command,
    });
    let fields = [
        ("parallelism", opts.parallelism.map(u64::from)),
        ("command_timeout_ms", opts.command_timeout_ms),
        ("max_runs", opts.max_runs.map(u64::from)),
    ];
    for (key, value) in fields {
        if let Some(v) = value {
            body[key] = json!(v);
        }
    }
    body
}

async fn investigate(client: &reqwest::Client, opts: &Options, repo: &Repo) -> Sample {
    let mut sample = Sample {
        repo: repo.path.display().to_string(),
        id: None,
        result: Err(Failure::TimedOut),
        poll_retries: 0,
    };
    let start = Instant::now();
    let id = match submit(client, opts, repo).await {
        Ok(id) => id,
        Err(m) => {
            sample.result = Err(Failure::Submit(m));
            return sample;
        }
    };
    sample.id = Some(id.clone());
    let url = http::join(&opts.api, &format!("/api/investigations/{id}"));
    let deadline = start + opts.timeout;
    while Instant::now() < deadline {
        tokio::time::sleep(opts.poll_interval).await;
        let view: Value = match client.get(&url).send().await {
            Ok(r) if r.status().is_success() => match r.json().await {
                Ok(v) => v,
                Err(_) => {
                    sample.poll_retries += 1;
                    continue;
                }
            },
            _ => {
                sample.poll_retries += 1;
                continue;
            }
        };
        if let Some(outcome) = judge(&view, &repo.culprit) {
            sample.result = Ok((outcome, start.elapsed(), server_latency(&view)));
            return sample;
        }
    }
    sample
}

async fn submit(client: &reqwest::Client, opts: &Options, repo: &Repo) -> Result<String, String> {
    let response = client
        .post(http::join(&opts.api, "/api/investigations"))
        .json(&request_body(opts, repo))
        .send()
        .await
        .map_err(|e| format!("request failed: {e}"))?;
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    if !status.is_success() {
        return Err(format!(
            "HTTP {status}: {}",
            body.chars().take(300).collect::<String>()
        ));
    }
    serde_json::from_str::<Value>(&body)
        .ok()
        .and_then(|v| v["id"].as_str().map(str::to_string))
        .ok_or_else(|| {
            format!(
                "HTTP {status} without an id: {}",
                body.chars().take(300).collect::<String>()
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

    fn check(view: Value, expected: Option<Outcome>) {
        assert_eq!(judge(&view, SHA), expected, "{view}");
    }

    #[test]
    fn judges_views() {
        check(json!({"state": "VERIFYING"}), None);
        check(json!({"state": "CREATED", "culprit": SHA}), None);
        check(json!({}), None);
        check(
            json!({"state": "WAITING_FOR_REVIEW", "culprit": SHA}),
            Some(Outcome::Right),
        );
        check(
            json!({"state": "APPROVED", "culprit": null, "report": {"culprit": {"commit": SHA}}}),
            Some(Outcome::Right),
        );
        check(
            json!({"state": "WAITING_FOR_REVIEW", "culprit": "ffff"}),
            Some(Outcome::WrongCulprit {
                got: Some("ffff".into()),
            }),
        );
        check(
            json!({"state": "WAITING_FOR_REVIEW", "culprit": null, "report": null}),
            Some(Outcome::WrongCulprit { got: None }),
        );
        check(
            json!({"state": "BLOCKED", "transitions": [
                {"from": "CREATED", "to": "CONTEXT_LOADING", "reason": null},
                {"from": "CONTEXT_LOADING", "to": "BLOCKED", "reason": "sandbox unavailable"}]}),
            Some(Outcome::Ended {
                state: "BLOCKED".into(),
                reason: Some("sandbox unavailable".into()),
            }),
        );
        check(
            json!({"state": "FAILED"}),
            Some(Outcome::Ended {
                state: "FAILED".into(),
                reason: None,
            }),
        );
    }

    #[test]
    fn server_latency_from_timestamps() {
        let v =
            json!({"created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:12.5Z"});
        assert_eq!(server_latency(&v), Some(Duration::from_millis(12_500)));
        assert_eq!(server_latency(&json!({"created_at": "x"})), None);
        let backwards =
            json!({"created_at": "2026-01-01T00:00:01Z", "updated_at": "2026-01-01T00:00:00Z"});
        assert_eq!(server_latency(&backwards), None);
    }

    #[test]
    fn request_carries_only_given_limits() {
        let opts = Options {
            api: "http://x".into(),
            count: 1,
            concurrency: 1,
            repos: PathBuf::from("/r"),
            shape: Shape {
                commits: 4,
                test_seconds: 0.0,
            },
            token: None,
            poll_interval: Duration::from_millis(1),
            timeout: Duration::from_secs(1),
            parallelism: Some(2),
            command_timeout_ms: None,
            max_runs: None,
        };
        let repo = Repo {
            path: PathBuf::from("/r/repo-0000"),
            test_command: "python3 test_app.py".into(),
            culprit: SHA.into(),
            culprit_at: 1,
        };
        assert_eq!(
            request_body(&opts, &repo),
            json!({"repository": "/r/repo-0000", "test_command": "python3 test_app.py", "parallelism": 2})
        );
    }
}
