//! GitLab (gitlab.com or self-managed) REST v4.
//!
//! - find: `GET /projects/{path}/merge_requests?source_branch={branch}&state=all`,
//!   keeping only answers whose `source_branch` is the branch;
//! - create: `POST /projects/{path}/merge_requests`, the title prefixed
//!   `Draft: ` (how GitLab marks a draft), labels comma-joined; a 409
//!   "Another open merge request already exists" means another attempt
//!   won: find it;
//! - labels on a found merge request: `PUT …/merge_requests/{iid}` with
//!   `add_labels`, only the missing ones.
//!
//! `{path}` is the project's full path URL-encoded as one segment
//! (`group%2Fsub%2Fshop`), which GitLab accepts wherever a project id goes.

use crate::http::{Api, Flavor};
use crate::request::{Checked, Opened, PullRequest, PullRequestRequest};
use crate::secret::TokenSource;
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;
use tracelab_domain::{Error, Result};

/// gitlab.com's API.
pub const GITLAB_API: &str = "https://gitlab.com/api/v4";

/// How GitLab marks a draft merge request.
pub const DRAFT_PREFIX: &str = "Draft: ";

/// A GitLab API client for one token.
#[derive(Debug, Clone)]
pub struct GitLab {
    api: Api,
}

impl GitLab {
    /// `api_url`: `https://gitlab.com/api/v4` or a self-managed
    /// `https://gitlab.example.com/api/v4`.
    pub fn new(api_url: &str, token: TokenSource, timeout: Duration) -> Result<Self> {
        Ok(Self {
            api: Api::new(Flavor::GitLab, api_url, token, timeout)?,
        })
    }

    pub(crate) async fn find(&self, target: &Checked, branch: &str) -> Result<Option<Opened>> {
        let id = target.project.join("/");
        let url = self.api.url(
            &["projects", &id, "merge_requests"],
            &[
                ("source_branch", branch),
                ("state", "all"),
                ("per_page", "100"),
            ],
        );
        let answer = self.api.send(Method::GET, url, None).await?;
        if !answer.status.is_success() {
            return Err(self.api.error(&answer, &id));
        }
        let found = answer
            .body
            .as_array()
            .into_iter()
            .flatten()
            .find(|mr| mr["source_branch"].as_str() == Some(branch));
        found.map(|mr| opened(mr, false)).transpose()
    }

    pub(crate) async fn create(
        &self,
        target: &Checked,
        request: &PullRequestRequest,
    ) -> Result<Opened> {
        let id = target.project.join("/");
        let url = self.api.url(&["projects", &id, "merge_requests"], &[]);
        let title = if target.title.to_ascii_lowercase().starts_with("draft:") {
            target.title.clone()
        } else {
            format!("{DRAFT_PREFIX}{}", target.title)
        };
        let mut body = json!({
            "source_branch": request.branch,
            "target_branch": request.base_branch,
            "title": title,
            "description": request.body,
            "remove_source_branch": false,
        });
        if !request.labels.is_empty() {
            body["labels"] = Value::String(request.labels.join(","));
        }
        let answer = self.api.send(Method::POST, url, Some(&body)).await?;
        if answer.status.is_success() {
            return opened(&answer.body, true);
        }
        if matches!(answer.status.as_u16(), 409 | 422)
            && crate::http::message(&answer.body)
                .to_ascii_lowercase()
                .contains("already exists")
            && let Some(found) = self.find(target, &request.branch).await?
        {
            return Ok(found);
        }
        Err(self.api.error(&answer, &id))
    }

    pub(crate) async fn add_labels(
        &self,
        target: &Checked,
        iid: u64,
        labels: &[String],
    ) -> Result<()> {
        let id = target.project.join("/");
        let iid = iid.to_string();
        let url = self
            .api
            .url(&["projects", &id, "merge_requests", &iid], &[]);
        let answer = self
            .api
            .send(
                Method::PUT,
                url,
                Some(&json!({ "add_labels": labels.join(",") })),
            )
            .await?;
        if !answer.status.is_success() {
            return Err(self.api.error(&answer, &id));
        }
        Ok(())
    }

    pub(crate) fn base(&self) -> &reqwest::Url {
        self.api.base()
    }
}

/// A merge request from GitLab's JSON.
fn opened(mr: &Value, created: bool) -> Result<Opened> {
    let (Some(number), Some(url)) = (mr["iid"].as_u64(), mr["web_url"].as_str()) else {
        return Err(Error::internal(
            "GitLab answered without a merge request iid and web_url",
        ));
    };
    Ok(Opened {
        pr: PullRequest {
            url: url.to_string(),
            number,
        },
        labels: mr["labels"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|l| l.as_str().map(str::to_string))
            .collect(),
        created,
    })
}
