//! The code host a deployment opens pull requests on: GitHub or GitLab,
//! chosen by configuration. An enum rather than a trait object: there are
//! two, both known here, and their calls are async.

use crate::github::{GITHUB_API, GitHub};
use crate::gitlab::{GITLAB_API, GitLab};
use crate::request::{Checked, Opened, PullRequestRequest};
use crate::secret::TokenSource;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;
use tracelab_domain::{Error, Result};

/// Which API a host speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum HostKind {
    #[default]
    GitHub,
    GitLab,
}

impl HostKind {
    /// `github` or `gitlab`, as in settings.
    pub fn as_str(self) -> &'static str {
        match self {
            HostKind::GitHub => "github",
            HostKind::GitLab => "gitlab",
        }
    }
}

/// The code host's configuration. Nothing here is secret: the token is
/// named by the file holding it, read at every request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CodeHostSettings {
    pub kind: HostKind,
    /// The API root; empty = `https://api.github.com` or
    /// `https://gitlab.com/api/v4`. GitHub Enterprise Server:
    /// `https://ghe.example.com/api/v3`; self-managed GitLab:
    /// `https://gitlab.example.com/api/v4`.
    pub api_url: String,
    /// File holding the token (a fine-grained GitHub token or GitHub App
    /// installation token; a GitLab project or personal access token).
    pub token_file: String,
    /// Longest one API request may take, in seconds.
    pub timeout_seconds: u64,
}

impl Default for CodeHostSettings {
    fn default() -> Self {
        Self {
            kind: HostKind::GitHub,
            api_url: String::new(),
            token_file: String::new(),
            timeout_seconds: 30,
        }
    }
}

/// A code host's API client.
#[derive(Debug, Clone)]
pub enum CodeHost {
    GitHub(GitHub),
    GitLab(GitLab),
}

impl CodeHost {
    pub fn from_settings(settings: &CodeHostSettings) -> Result<Self> {
        if settings.token_file.is_empty() {
            return Err(Error::invalid("the code host needs token_file"));
        }
        if settings.timeout_seconds == 0 {
            return Err(Error::invalid(
                "the code host's timeout_seconds must be at least 1",
            ));
        }
        let token = TokenSource::File(PathBuf::from(&settings.token_file));
        let timeout = Duration::from_secs(settings.timeout_seconds);
        Self::new(settings.kind, &settings.api_url, token, timeout)
    }

    /// A client of `kind` at `api_url` (empty: the public GitHub or
    /// GitLab API) with `token` from anywhere (a setting read from a
    /// `_FILE`, the CLI's environment).
    pub fn new(
        kind: HostKind,
        api_url: &str,
        token: TokenSource,
        timeout: Duration,
    ) -> Result<Self> {
        let api = |default: &'static str| {
            if api_url.trim().is_empty() {
                default
            } else {
                api_url
            }
        };
        Ok(match kind {
            HostKind::GitHub => CodeHost::GitHub(GitHub::new(api(GITHUB_API), token, timeout)?),
            HostKind::GitLab => CodeHost::GitLab(GitLab::new(api(GITLAB_API), token, timeout)?),
        })
    }

    pub fn kind(&self) -> HostKind {
        match self {
            CodeHost::GitHub(_) => HostKind::GitHub,
            CodeHost::GitLab(_) => HostKind::GitLab,
        }
    }

    /// The API root, for messages and logs.
    pub fn api_url(&self) -> &str {
        match self {
            CodeHost::GitHub(h) => h.base().as_str(),
            CodeHost::GitLab(h) => h.base().as_str(),
        }
    }

    /// Checks `request` for this host, before anything is sent anywhere.
    pub(crate) fn check(&self, request: &PullRequestRequest) -> Result<Checked> {
        request.check(self.kind() == HostKind::GitHub)
    }

    /// The pull request for `request.branch`, found (in any state: open,
    /// closed or merged — it is never opened twice) or created as a draft.
    pub(crate) async fn find_or_create(
        &self,
        target: &Checked,
        request: &PullRequestRequest,
    ) -> Result<Opened> {
        let found = match self {
            CodeHost::GitHub(h) => h.find(target, &request.branch).await?,
            CodeHost::GitLab(h) => h.find(target, &request.branch).await?,
        };
        if let Some(found) = found {
            return Ok(found);
        }
        match self {
            CodeHost::GitHub(h) => h.create(target, request).await,
            CodeHost::GitLab(h) => h.create(target, request).await,
        }
    }

    /// Adds the labels of `wanted` that `opened` lacks (compared without
    /// case, as both hosts do); nothing when none are missing.
    pub(crate) async fn add_missing_labels(
        &self,
        target: &Checked,
        opened: &Opened,
        wanted: &[String],
    ) -> Result<()> {
        let missing: Vec<String> = wanted
            .iter()
            .filter(|w| !opened.labels.iter().any(|l| l.eq_ignore_ascii_case(w)))
            .cloned()
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        match self {
            CodeHost::GitHub(h) => h.add_labels(target, opened.pr.number, &missing).await,
            CodeHost::GitLab(h) => h.add_labels(target, opened.pr.number, &missing).await,
        }
    }
}
