//! GitHub (and GitHub Enterprise Server) REST v3.
//!
//! - find: `GET /repos/{owner}/{repo}/pulls?head={owner}:{branch}&state=all`,
//!   keeping only answers whose `head.ref` is the branch (GitHub ignores a
//!   malformed `head` filter and lists everything);
//! - create: `POST /repos/{owner}/{repo}/pulls` with `draft: true`; a 422
//!   "A pull request already exists" means another attempt won: find it;
//! - labels: `POST /repos/{owner}/{repo}/issues/{number}/labels`, only the
//!   missing ones.

use crate::http::{Api, Flavor};
use crate::request::{Checked, Opened, PullRequest, PullRequestRequest};
use crate::secret::TokenSource;
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;
use tracelab_domain::{Error, Result};

/// GitHub's public API.
pub const GITHUB_API: &str = "https://api.github.com";

/// A GitHub API client for one token.
#[derive(Debug, Clone)]
pub struct GitHub {
    api: Api,
}

impl GitHub {
    /// `api_url`: `https://api.github.com` or a GitHub Enterprise Server's
    /// `https://ghe.example.com/api/v3`.
    pub fn new(api_url: &str, token: TokenSource, timeout: Duration) -> Result<Self> {
        Ok(Self {
            api: Api::new(Flavor::GitHub, api_url, token, timeout)?,
        })
    }

    pub(crate) async fn find(&self, target: &Checked, branch: &str) -> Result<Option<Opened>> {
        let (owner, repo) = (&target.project[0], &target.project[1]);
        let head = format!("{owner}:{branch}");
        let url = self.api.url(
            &["repos", owner, repo, "pulls"],
            &[("head", &head), ("state", "all"), ("per_page", "100")],
        );
        let answer = self.api.send(Method::GET, url, None).await?;
        if !answer.status.is_success() {
            return Err(self.api.error(&answer, &project(target)));
        }
        let found = answer
            .body
            .as_array()
            .into_iter()
            .flatten()
            .find(|pr| pr["head"]["ref"].as_str() == Some(branch));
        found.map(|pr| opened(pr, false)).transpose()
    }

    pub(crate) async fn create(
        &self,
        target: &Checked,
        request: &PullRequestRequest,
    ) -> Result<Opened> {
        let (owner, repo) = (&target.project[0], &target.project[1]);
        let url = self.api.url(&["repos", owner, repo, "pulls"], &[]);
        let body = json!({
            "title": target.title,
            "head": request.branch,
            "base": request.base_branch,
            "body": request.body,
            "draft": true,
        });
        let answer = self.api.send(Method::POST, url, Some(&body)).await?;
        if answer.status.is_success() {
            return opened(&answer.body, true);
        }
        if answer.status.as_u16() == 422
            && crate::http::message(&answer.body)
                .to_ascii_lowercase()
                .contains("already exists")
            && let Some(found) = self.find(target, &request.branch).await?
        {
            return Ok(found);
        }
        Err(self.api.error(&answer, &project(target)))
    }

    pub(crate) async fn add_labels(
        &self,
        target: &Checked,
        number: u64,
        labels: &[String],
    ) -> Result<()> {
        let (owner, repo) = (&target.project[0], &target.project[1]);
        let number = number.to_string();
        let url = self
            .api
            .url(&["repos", owner, repo, "issues", &number, "labels"], &[]);
        let answer = self
            .api
            .send(Method::POST, url, Some(&json!({ "labels": labels })))
            .await?;
        if !answer.status.is_success() {
            return Err(self.api.error(&answer, &project(target)));
        }
        Ok(())
    }

    pub(crate) fn base(&self) -> &reqwest::Url {
        self.api.base()
    }
}

fn project(target: &Checked) -> String {
    target.project.join("/")
}

/// A pull request from GitHub's JSON.
fn opened(pr: &Value, created: bool) -> Result<Opened> {
    let (Some(number), Some(url)) = (pr["number"].as_u64(), pr["html_url"].as_str()) else {
        return Err(Error::internal(
            "GitHub answered without a pull request number and html_url",
        ));
    };
    Ok(Opened {
        pr: PullRequest {
            url: url.to_string(),
            number,
        },
        labels: pr["labels"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|l| l["name"].as_str().map(str::to_string))
            .collect(),
        created,
    })
}
