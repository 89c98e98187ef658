//! The HTTP side shared by both hosts: one client, the token in one
//! sensitive header per request, and answers mapped onto error kinds.
//!
//! | answer | kind | why |
//! |---|---|---|
//! | 2xx | — | |
//! | 401, 403 | PermissionDenied | naming the host and the permission the token lacks |
//! | 403/429 with a rate limit | Unavailable | the same request succeeds later |
//! | 404 | NotFound | no such project, or hidden from this token |
//! | 409, 422 | Conflict, InvalidArgument | with the host's own message; callers look for "already exists" first |
//! | 5xx, refused, timed out | Unavailable | retryable |
//!
//! The host's message is quoted with the token scrubbed out, though no
//! host is known to echo it.

use crate::secret::{Token, TokenSource};
use reqwest::header::{HeaderName, HeaderValue};
use reqwest::{Method, StatusCode, Url};
use serde_json::Value;
use std::time::Duration;
use tracelab_domain::{Error, ErrorKind, Result};

/// Which host, for messages and the permission it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    GitHub,
    GitLab,
}

impl Flavor {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Flavor::GitHub => "GitHub",
            Flavor::GitLab => "GitLab",
        }
    }

    fn permission(self) -> &'static str {
        match self {
            Flavor::GitHub => {
                "the token needs `pull_requests: write` and `contents: write` on the repository \
                 (a classic token: the `repo` scope)"
            }
            Flavor::GitLab => {
                "the token needs the `api` scope and at least the Developer role in the project"
            }
        }
    }
}

/// Installs ring as rustls' process-wide crypto provider, once: reqwest
/// is built without one (the workspace's rule: ring only). Keeps a
/// provider another crate installed first.
pub fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A code host's REST API at one base URL.
#[derive(Debug, Clone)]
pub(crate) struct Api {
    flavor: Flavor,
    client: reqwest::Client,
    base: Url,
    token: TokenSource,
}

/// A host's answer: status and JSON body (`Null` when it had none).
pub(crate) struct Answer {
    pub status: StatusCode,
    pub body: Value,
    rate_limited: bool,
}

impl Api {
    /// `base` is the API root (`https://api.github.com`,
    /// `https://gitlab.example.com/api/v4`). https only, except on
    /// loopback: the token must not cross a network in clear text.
    pub(crate) fn new(
        flavor: Flavor,
        base: &str,
        token: TokenSource,
        timeout: Duration,
    ) -> Result<Self> {
        let refuse = |why: &str| {
            Err(Error::invalid(format!(
                "the {} API URL {base:?} {why}",
                flavor.name()
            )))
        };
        let Ok(mut url) = Url::parse(base.trim()) else {
            return refuse("is not a URL");
        };
        if !url.username().is_empty() || url.password().is_some() {
            // Not echoed beyond what the caller wrote; refuse before any use.
            return Err(Error::invalid(format!(
                "the {} API URL holds credentials; give the token as a file",
                flavor.name()
            )));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return refuse("has a query or fragment");
        }
        let loopback = matches!(
            url.host_str(),
            Some("localhost" | "127.0.0.1" | "[::1]" | "::1")
        );
        match url.scheme() {
            "https" => {}
            "http" if loopback => {}
            _ => return refuse("must be https:// (the token would travel in clear text)"),
        }
        if let Ok(mut segments) = url.path_segments_mut() {
            segments.pop_if_empty();
        }
        install_crypto_provider();
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            // An API does not redirect a write; following one could carry
            // the token to another host.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("tracelab-codehost/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error::internal(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self {
            flavor,
            client,
            base: url,
            token,
        })
    }

    /// The base URL, for messages (it holds no credentials).
    pub(crate) fn base(&self) -> &Url {
        &self.base
    }

    /// `base/segment/…`, each segment percent-encoded (`/` included, as
    /// GitLab's `group%2Fproject` ids need).
    pub(crate) fn url(&self, segments: &[&str], query: &[(&str, &str)]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.extend(segments);
        }
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        url
    }

    /// Sends one request with the token and returns the answer, whatever
    /// its status; transport failures are Unavailable.
    pub(crate) async fn send(
        &self,
        method: Method,
        url: Url,
        body: Option<&Value>,
    ) -> Result<Answer> {
        let token = self.token.token()?;
        let mut request = self
            .client
            .request(method.clone(), url.clone())
            .header(reqwest::header::ACCEPT, self.accept());
        for (name, value) in self.headers(&token)? {
            request = request.header(name, value);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let what = format!("{method} {}", url.path());
        let response = request.send().await.map_err(|e| self.transport(&what, e))?;
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| self.transport(&what, e))?;
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        };
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let rate_limited = status == StatusCode::TOO_MANY_REQUESTS
            || (status == StatusCode::FORBIDDEN
                && (header("x-ratelimit-remaining") == Some("0")
                    || header("retry-after").is_some()));
        tracing::debug!(host = self.flavor.name(), request = %what, status = status.as_u16(), "code host answered");
        Ok(Answer {
            status,
            body: scrub_value(body, token.expose()),
            rate_limited,
        })
    }

    fn accept(&self) -> &'static str {
        match self.flavor {
            Flavor::GitHub => "application/vnd.github+json",
            Flavor::GitLab => "application/json",
        }
    }

    /// The authentication header (sensitive: HTTP-level logging and
    /// `Debug` show `Sensitive`) and the host's fixed headers.
    fn headers(&self, token: &Token) -> Result<Vec<(HeaderName, HeaderValue)>> {
        let (name, value) = match self.flavor {
            Flavor::GitHub => (
                reqwest::header::AUTHORIZATION,
                format!("Bearer {}", token.expose()),
            ),
            Flavor::GitLab => (
                HeaderName::from_static("private-token"),
                token.expose().to_string(),
            ),
        };
        let mut value = HeaderValue::from_str(&value)
            .map_err(|_| Error::invalid("the code host token is not a valid header value"))?;
        value.set_sensitive(true);
        let mut headers = vec![(name, value)];
        if self.flavor == Flavor::GitHub {
            headers.push((
                HeaderName::from_static("x-github-api-version"),
                HeaderValue::from_static("2022-11-28"),
            ));
        }
        Ok(headers)
    }

    fn transport(&self, what: &str, e: reqwest::Error) -> Error {
        let why = if e.is_timeout() {
            "it did not answer in time".to_string()
        } else {
            // The innermost cause says what happened ("Connection refused");
            // reqwest's own text only says a request failed.
            let mut cause: &dyn std::error::Error = &e;
            while let Some(next) = cause.source() {
                cause = next;
            }
            cause.to_string()
        };
        Error::unavailable(format!(
            "{} at {} cannot be reached ({what}): {why}; retry later",
            self.flavor.name(),
            self.base
        ))
        .with_source(e.without_url())
    }

    /// The error for an answer that is not a success. `project` names what
    /// was asked about (`acme/shop`).
    pub(crate) fn error(&self, answer: &Answer, project: &str) -> Error {
        let host = self.flavor.name();
        let base = &self.base;
        let status = answer.status.as_u16();
        let said = message(&answer.body);
        let quoted = if said.is_empty() {
            String::new()
        } else {
            format!(": {said}")
        };
        let (kind, message) = match status {
            _ if answer.rate_limited => (
                ErrorKind::Unavailable,
                format!(
                    "{host} at {base} rate-limited the token (HTTP {status}); retry later{quoted}"
                ),
            ),
            401 => (
                ErrorKind::PermissionDenied,
                format!(
                    "{host} at {base} did not accept the token (HTTP 401: expired, revoked or mistyped); {}",
                    self.flavor.permission()
                ),
            ),
            403 => (
                ErrorKind::PermissionDenied,
                format!(
                    "{host} at {base} refused the token for {project} (HTTP 403){quoted}; {}",
                    self.flavor.permission()
                ),
            ),
            404 => (
                ErrorKind::NotFound,
                format!(
                    "{host} at {base} has no project {project} (HTTP 404), or hides it from this token{quoted}"
                ),
            ),
            409 => (
                ErrorKind::Conflict,
                format!("{host} refused it for {project} (HTTP 409){quoted}"),
            ),
            400 | 422 => (
                ErrorKind::InvalidArgument,
                format!("{host} refused it for {project} (HTTP {status}){quoted}"),
            ),
            300..=399 => (
                ErrorKind::InvalidArgument,
                format!(
                    "{host} at {base} redirected (HTTP {status}): has {project} moved? Use its new URL"
                ),
            ),
            500..=599 => (
                ErrorKind::Unavailable,
                format!("{host} at {base} failed (HTTP {status}); retry later{quoted}"),
            ),
            _ => (
                ErrorKind::Internal,
                format!("{host} at {base} answered HTTP {status}{quoted}"),
            ),
        };
        Error::new(kind, message)
    }
}

/// The host's explanation: GitHub's `message` and `errors[].message`,
/// GitLab's `message` (a string, a list, or `{field: [messages]}`) or
/// `error`. One line, at most 300 characters.
pub(crate) fn message(body: &Value) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut add = |v: &Value| match v {
        Value::String(s) => parts.push(s.clone()),
        Value::Array(items) => {
            parts.extend(items.iter().filter_map(|i| i.as_str().map(str::to_string)))
        }
        Value::Object(fields) => {
            for (field, said) in fields {
                let said: Vec<&str> = match said {
                    Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
                    Value::String(s) => vec![s.as_str()],
                    _ => Vec::new(),
                };
                parts.push(format!("{field} {}", said.join(", ")));
            }
        }
        _ => {}
    };
    match body {
        Value::Object(_) => {
            add(&body["message"]);
            add(&body["error"]);
            if let Some(errors) = body["errors"].as_array() {
                for e in errors {
                    match e {
                        Value::String(_) => add(e),
                        _ => add(&e["message"]),
                    }
                }
            }
        }
        Value::String(s) if !s.trim_start().starts_with('<') => parts.push(s.clone()),
        _ => {}
    }
    let text = parts
        .join("; ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if text.chars().count() > 300 {
        let mut cut: String = text.chars().take(299).collect();
        cut.push('…');
        return cut;
    }
    text
}

/// Replaces `secret` in every string of `value`.
fn scrub_value(value: Value, secret: &str) -> Value {
    match value {
        Value::String(s) if s.contains(secret) => Value::String(s.replace(secret, "***")),
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| scrub_value(v, secret)).collect())
        }
        Value::Object(fields) => Value::Object(
            fields
                .into_iter()
                .map(|(k, v)| (k, scrub_value(v, secret)))
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn host_messages_are_read_in_every_shape() {
        let github = json!({"message": "Validation Failed", "errors": [{"resource": "PullRequest", "code": "custom", "message": "No commits between main and ai-debug/x"}]});
        assert_eq!(
            message(&github),
            "Validation Failed; No commits between main and ai-debug/x"
        );
        assert_eq!(
            message(&json!({"message": ["Another open merge request already exists"]})),
            "Another open merge request already exists"
        );
        assert_eq!(
            message(&json!({"message": {"target_branch": ["is invalid"]}})),
            "target_branch is invalid"
        );
        assert_eq!(
            message(&json!({"error": "insufficient_scope"})),
            "insufficient_scope"
        );
        assert_eq!(
            message(&Value::String("<html>bad gateway</html>".into())),
            ""
        );
    }

    #[test]
    fn api_urls_must_be_https_off_loopback() {
        let token = || TokenSource::Value(Token::new("t0ken").unwrap());
        let t = Duration::from_secs(5);
        assert!(
            Api::new(
                Flavor::GitHub,
                "https://ghe.example.com/api/v3/",
                token(),
                t
            )
            .is_ok()
        );
        assert!(Api::new(Flavor::GitHub, "http://127.0.0.1:8080/api/v3", token(), t).is_ok());
        for bad in [
            "http://ghe.example.com/api/v3",
            "ftp://x/",
            "https://u:p@x/",
            "https://x/?a=1",
            "nope",
        ] {
            let e = Api::new(Flavor::GitLab, bad, token(), t).unwrap_err();
            assert!(!e.message.contains(":p@"), "{e}");
        }
        let api = Api::new(
            Flavor::GitLab,
            "https://gitlab.example.com/api/v4/",
            token(),
            t,
        )
        .unwrap();
        assert_eq!(
            api.url(
                &["projects", "group/sub/shop", "merge_requests"],
                &[("source_branch", "ai-debug/T-h1")]
            )
            .as_str(),
            "https://gitlab.example.com/api/v4/projects/group%2Fsub%2Fshop/merge_requests?source_branch=ai-debug%2FT-h1"
        );
    }

    #[test]
    fn the_token_is_scrubbed_from_answers() {
        let v = scrub_value(json!({"message": ["bad t0ken here"], "n": 1}), "t0ken");
        assert_eq!(v, json!({"message": ["bad *** here"], "n": 1}));
    }
}
