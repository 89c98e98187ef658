//! The HTTP client both scenarios share, and how a `Retry-After` answer is read.

use reqwest::header::{HeaderMap, HeaderValue, RETRY_AFTER};
use std::time::Duration;

/// The longest wait a `Retry-After` may impose before the load generator
/// retries anyway (a misconfigured server must not stall the run for hours).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// One pooled client; `token` becomes a bearer `Authorization` header.
pub fn client(token: Option<&str>, timeout: Duration) -> anyhow::Result<reqwest::Client> {
    let mut headers = HeaderMap::new();
    if let Some(token) = token.filter(|t| !t.is_empty()) {
        let mut value = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| anyhow::anyhow!("the token has characters a header cannot carry"))?;
        value.set_sensitive(true);
        headers.insert(reqwest::header::AUTHORIZATION, value);
    }
    Ok(reqwest::Client::builder()
        .default_headers(headers)
        .timeout(timeout)
        .pool_max_idle_per_host(256)
        .build()?)
}

/// The wait a `Retry-After` header asks for: delay-seconds as RFC 9110
/// allows (an HTTP date is rare for 429 and is read as one second), capped
/// at [`MAX_RETRY_AFTER`]; one second when the header is missing or bad.
pub fn retry_after(headers: &HeaderMap) -> Duration {
    let seconds = headers
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(1);
    Duration::from_secs(seconds).min(MAX_RETRY_AFTER)
}

/// `http://host:port/` + `path` without doubling the slash.
pub fn join(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(value: Option<&str>, expected: u64) {
        let mut h = HeaderMap::new();
        if let Some(v) = value {
            h.insert(RETRY_AFTER, HeaderValue::from_str(v).unwrap());
        }
        assert_eq!(retry_after(&h), Duration::from_secs(expected), "{value:?}");
    }

    #[test]
    fn retry_after_values() {
        check(Some("2"), 2);
        check(Some(" 7 "), 7);
        check(Some("0"), 0);
        check(Some("3600"), 60);
        check(Some("Wed, 21 Oct 2015 07:28:00 GMT"), 1);
        check(Some("-1"), 1);
        check(None, 1);
    }

    #[test]
    fn joins_urls() {
        assert_eq!(join("http://h:1/", "/api/x"), "http://h:1/api/x");
        assert_eq!(join("http://h:1", "api/x"), "http://h:1/api/x");
    }
}
