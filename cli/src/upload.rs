//! Sending a CI report to a fleet's ingest (`POST /v1/ci-failures`), with
//! retries on connection errors, 429 and 503 (honouring `Retry-After`).

use anyhow::Context as _;
use backon::{ExponentialBuilder, Retryable as _};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug)]
struct SendError {
    message: String,
    retry: bool,
    retry_after: Option<Duration>,
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Posts `body` and prints the ingest's answer.
pub async fn send(
    server: &str,
    token: Option<&str>,
    body: Vec<u8>,
    content_encoding: Option<&str>,
    timeout: Duration,
) -> anyhow::Result<ExitCode> {
    // reqwest is built without a crypto provider (see DEPENDENCIES.md): ring, once.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let url = format!("{}/v1/ci-failures", server.trim_end_matches('/'));
    let url = reqwest::Url::parse(&url).with_context(|| format!("bad --server {server:?}"))?;
    let client = reqwest::Client::builder()
        .timeout(timeout)
        .user_agent(concat!("tracelab/", env!("CARGO_PKG_VERSION")))
        .build()
        .context("cannot build the HTTP client")?;
    let attempt = || async {
        let mut request = client
            .post(url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.clone());
        if let Some(encoding) = content_encoding {
            request = request.header(reqwest::header::CONTENT_ENCODING, encoding);
        }
        if let Some(t) = token {
            request = request.bearer_auth(t);
        }
        let response = request.send().await.map_err(|e| SendError {
            message: format!("cannot reach {url}: {e}"),
            retry: e.is_connect() || e.is_timeout(),
            retry_after: None,
        })?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|s| Duration::from_secs(s.min(60)));
        let text = response.text().await.unwrap_or_default();
        if status.is_success() {
            return Ok(text);
        }
        Err(SendError {
            message: format!(
                "{url} answered {status}: {}",
                text.chars().take(500).collect::<String>()
            ),
            retry: status.as_u16() == 429 || status.as_u16() == 503,
            retry_after,
        })
    };
    let answer = attempt
        .retry(
            ExponentialBuilder::default()
                .with_min_delay(Duration::from_secs(1))
                .with_max_times(3),
        )
        .sleep(tokio::time::sleep)
        .when(|e: &SendError| e.retry)
        .adjust(|e: &SendError, next: Option<Duration>| next.map(|d| e.retry_after.unwrap_or(d)))
        .notify(|e: &SendError, wait: Duration| eprintln!("warning: {e}; retrying in {wait:?}"))
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if answer.trim().is_empty() {
        eprintln!("report sent to {url}");
    } else {
        println!("{}", answer.trim());
    }
    Ok(ExitCode::SUCCESS)
}
