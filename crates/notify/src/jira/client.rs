//! Posts one comment to Jira's REST API. The token goes only into the
//! `Authorization` header: errors are reported without it and without the
//! request's URL parameters.

use super::{Flavor, JiraSettings, is_issue_key};
use serde_json::Value;
use std::time::Duration;
use tracelab_domain::{Error, Result};

pub struct Client {
    http: reqwest::Client,
    base_url: String,
    flavor: Flavor,
    user: String,
    token: String,
    /// `<dashboard_url>/investigations/`, when set.
    pub dashboard_url: Option<String>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("jira::Client")
            .field("base_url", &self.base_url)
            .field("flavor", &self.flavor)
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// `None` without `base_url`. A Cloud site needs `user` and a token,
    /// Server/DC a token.
    pub fn new(settings: &JiraSettings) -> Result<Option<Self>> {
        let base = settings.base_url.trim().trim_end_matches('/');
        if base.is_empty() {
            return Ok(None);
        }
        if !(base.starts_with("https://") || base.starts_with("http://")) {
            return Err(Error::invalid(format!(
                "jira.base_url: {base:?} is not an http(s) URL"
            )));
        }
        let token = super::secret("jira.token_file", &settings.token, &settings.token_file)?;
        if token.is_empty() {
            return Err(Error::invalid(
                "jira.base_url is set but no token (jira.token_file)",
            ));
        }
        if settings.flavor == Flavor::Cloud && settings.user.trim().is_empty() {
            return Err(Error::invalid(
                "jira.flavor = \"cloud\" needs jira.user (the account's e-mail) with the API token",
            ));
        }
        let dashboard = settings.dashboard_url.trim().trim_end_matches('/');
        crate::install_crypto_provider();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(settings.timeout_seconds.max(1)))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::internal(format!("jira client: {e}")))?;
        Ok(Some(Self {
            http,
            base_url: base.to_string(),
            flavor: settings.flavor,
            user: settings.user.trim().to_string(),
            token,
            dashboard_url: (!dashboard.is_empty()).then(|| format!("{dashboard}/investigations/")),
        }))
    }

    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    /// Where comments on `issue` go.
    pub fn comment_url(&self, issue: &str) -> String {
        let version = match self.flavor {
            Flavor::Cloud => 3,
            Flavor::Server => 2,
        };
        format!("{}/rest/api/{version}/issue/{issue}/comment", self.base_url)
    }

    /// One attempt: the HTTP status when Jira answered, and why it is not
    /// delivered when it is not (anything but 2xx).
    pub async fn post_comment(&self, issue: &str, body: &Value) -> (Option<u16>, Option<String>) {
        if !is_issue_key(issue) {
            return (None, Some(format!("{issue:?} is not a Jira issue key")));
        }
        let request = self
            .http
            .post(self.comment_url(issue))
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(body.to_string());
        let request = match self.flavor {
            Flavor::Cloud => request.basic_auth(&self.user, Some(&self.token)),
            Flavor::Server => request.bearer_auth(&self.token),
        };
        match request.send().await {
            Ok(r) if r.status().is_success() => (Some(r.status().as_u16()), None),
            Ok(r) => {
                let status = r.status().as_u16();
                // Jira's `errorMessages` say why (e.g. no permission to
                // comment); a short excerpt, never our request.
                let detail: String = r
                    .text()
                    .await
                    .unwrap_or_default()
                    .chars()
                    .take(300)
                    .collect();
                (
                    Some(status),
                    Some(format!("Jira answered HTTP {status}: {detail}")),
                )
            }
            Err(e) => (None, Some(format!("not sent: {}", e.without_url()))),
        }
    }
}
