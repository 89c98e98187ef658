//! The evidence scenario: post N events to the ingest (CI failure reports to
//! `/v1/ci-failures`, JSON log lines to `/v1/logs`) with at most
//! `concurrency` requests in flight. A 429 is the ingest's back-pressure:
//! the event waits `Retry-After` and is sent again, counted apart from the
//! other non-2xx answers, never dropped (up to `max_retries` tries, after
//! which it is reported as given up).

use crate::http;
use crate::latency::{Recorder, Summary};
use crate::payloads::{self, Kind};
use futures::StreamExt;
use reqwest::StatusCode;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone)]
pub struct Options {
    /// The ingest service's base URL.
    pub ingest: String,
    pub count: u64,
    pub concurrency: usize,
    /// One kind only; `None` alternates CI reports and log lines.
    pub only: Option<Kind>,
    pub seed: u64,
    pub token: Option<String>,
    /// 429 answers one event may get before it is given up.
    pub max_retries: u32,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Accepted {
    pub ci_failures: u64,
    pub logs: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub scenario: &'static str,
    pub ingest: String,
    pub count: u64,
    pub concurrency: usize,
    pub seed: u64,
    pub wall_seconds: f64,
    /// Events answered 2xx.
    pub accepted: u64,
    pub accepted_by_kind: Accepted,
    /// `accepted` per second of wall-clock time.
    pub per_second: f64,
    /// Per accepted event: first request sent → 2xx, retries and waits included.
    pub latency: Summary,
    /// Per HTTP answer (any status): request sent → answer.
    pub request_latency: Summary,
    /// 429 answers; each was retried after its `Retry-After`.
    pub rate_limited: u64,
    pub retry_wait_seconds: f64,
    /// Events still refused with 429 after `max_retries` tries.
    pub gave_up: u64,
    /// Other non-2xx answers by status (not retried).
    pub non_2xx: BTreeMap<u16, u64>,
    /// Requests that got no answer (connection refused, timeout).
    pub transport_errors: u64,
    pub error_total: u64,
    pub error_samples: Vec<String>,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "evidence against {} (concurrency {}, seed {})",
            self.ingest, self.concurrency, self.seed
        )?;
        writeln!(
            f,
            "  accepted    {} of {} in {:.1} s → {:.1} events/s ({} CI reports, {} log lines)",
            self.accepted,
            self.count,
            self.wall_seconds,
            self.per_second,
            self.accepted_by_kind.ci_failures,
            self.accepted_by_kind.logs
        )?;
        writeln!(f, "  per event   {}", self.latency)?;
        writeln!(f, "  per request {}", self.request_latency)?;
        writeln!(
            f,
            "  429         {} answers, all retried after Retry-After ({:.1} s waited); {} events given up",
            self.rate_limited, self.retry_wait_seconds, self.gave_up
        )?;
        let statuses: Vec<String> = self
            .non_2xx
            .iter()
            .map(|(s, n)| format!("{s}×{n}"))
            .collect();
        write!(
            f,
            "  errors      {} (other non-2xx: {}; no answer: {})",
            self.error_total,
            if statuses.is_empty() {
                "none".to_string()
            } else {
                statuses.join(", ")
            },
            self.transport_errors
        )?;
        for s in &self.error_samples {
            write!(f, "\n    {s}")?;
        }
        Ok(())
    }
}

/// How one event went.
#[derive(Debug, Default)]
struct Sample {
    kind: Option<Kind>,
    accepted: bool,
    latency: Duration,
    requests: Vec<Duration>,
    rate_limited: u64,
    waited: Duration,
    gave_up: bool,
    refused: Option<(u16, String)>,
    transport: Option<String>,
}

pub async fn run(opts: Options) -> anyhow::Result<Report> {
    anyhow::ensure!(opts.count > 0, "--count must be at least 1");
    anyhow::ensure!(opts.concurrency > 0, "--concurrency must be at least 1");
    let client = http::client(opts.token.as_deref(), Duration::from_secs(30))?;
    let started = Instant::now();
    let mut samples = futures::stream::iter(0..opts.count)
        .map(|n| send(&client, &opts, n))
        .buffer_unordered(opts.concurrency);

    let mut latency = Recorder::default();
    let mut request_latency = Recorder::default();
    let mut report = Report {
        scenario: "evidence",
        ingest: opts.ingest.clone(),
        count: opts.count,
        concurrency: opts.concurrency,
        seed: opts.seed,
        wall_seconds: 0.0,
        accepted: 0,
        accepted_by_kind: Accepted::default(),
        per_second: 0.0,
        latency: Summary::default(),
        request_latency: Summary::default(),
        rate_limited: 0,
        retry_wait_seconds: 0.0,
        gave_up: 0,
        non_2xx: BTreeMap::new(),
        transport_errors: 0,
        error_total: 0,
        error_samples: Vec::new(),
    };
    let mut waited = Duration::ZERO;
    let mut last = started;
    while let Some(s) = samples.next().await {
        last = Instant::now();
        for r in &s.requests {
            request_latency.record(*r);
        }
        report.rate_limited += s.rate_limited;
        waited += s.waited;
        let mut error = None;
        if s.accepted {
            report.accepted += 1;
            latency.record(s.latency);
            match s.kind {
                Some(Kind::CiFailure) => report.accepted_by_kind.ci_failures += 1,
                Some(Kind::LogLine) => report.accepted_by_kind.logs += 1,
                None => {}
            }
        } else if s.gave_up {
            report.gave_up += 1;
            error = Some(format!("still 429 after {} tries", opts.max_retries));
        } else if let Some((status, body)) = s.refused {
            *report.non_2xx.entry(status).or_default() += 1;
            error = Some(format!("HTTP {status}: {body}"));
        } else if let Some(e) = s.transport {
            report.transport_errors += 1;
            error = Some(e);
        }
        if let Some(e) = error {
            report.error_total += 1;
            if report.error_samples.len() < 5 {
                report.error_samples.push(e);
            }
        }
    }
    report.wall_seconds = last.duration_since(started).as_secs_f64();
    report.per_second = if report.wall_seconds > 0.0 {
        report.accepted as f64 / report.wall_seconds
    } else {
        0.0
    };
    report.latency = latency.summary();
    report.request_latency = request_latency.summary();
    report.retry_wait_seconds = waited.as_secs_f64();
    Ok(report)
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default()
}

async fn send(client: &reqwest::Client, opts: &Options, n: u64) -> Sample {
    let event = payloads::event(n, opts.seed, opts.only, unix_ms());
    let url = http::join(&opts.ingest, event.kind.path());
    let mut sample = Sample {
        kind: Some(event.kind),
        ..Sample::default()
    };
    let first = Instant::now();
    loop {
        let sent = Instant::now();
        let answer = client
            .post(&url)
            .header(reqwest::header::CONTENT_TYPE, event.kind.content_type())
            .body(event.body.clone())
            .send()
            .await;
        let response = match answer {
            Ok(r) => r,
            Err(e) => {
                sample.transport = Some(format!("POST {url}: {e}"));
                return sample;
            }
        };
        sample.requests.push(sent.elapsed());
        let status = response.status();
        if status.is_success() {
            sample.accepted = true;
            sample.latency = first.elapsed();
            return sample;
        }
        if status == StatusCode::TOO_MANY_REQUESTS {
            sample.rate_limited += 1;
            if sample.rate_limited > u64::from(opts.max_retries) {
                sample.gave_up = true;
                return sample;
            }
            let wait = http::retry_after(response.headers());
            sample.waited += wait;
            tokio::time::sleep(wait).await;
            continue;
        }
        let body = response.text().await.unwrap_or_default();
        sample.refused = Some((status.as_u16(), body.chars().take(200).collect()));
        return sample;
    }
}
