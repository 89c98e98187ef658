//! What to open, what was opened, and the checks made before anything
//! leaves the machine.

use crate::body;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use tracelab_domain::hypothesis::HypothesisStatus;
use tracelab_domain::report::Report;
use tracelab_domain::{Error, Result};
use tracelab_repos::RepoUrl;

/// The labels [`PullRequestRequest::for_report`] puts on a pull request.
pub const DEFAULT_LABELS: &[&str] = &["tracelab"];

/// A draft pull request to open for an approved diagnosis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequestRequest {
    /// The repository as investigated (`https://github.com/acme/shop`,
    /// `git@gitlab.example.com:group/sub/shop.git`). Pushed to with the
    /// deployment's git credentials; its path names the project on the
    /// code host.
    pub repository_url: String,
    /// The verified branch (`ai-debug/PVS-421-h2`).
    pub branch: String,
    /// What it is to be merged into (`main`).
    pub base_branch: String,
    /// One line; newlines become spaces.
    pub title: String,
    /// Markdown ([`crate::body::render`]).
    pub body: String,
    /// Labels to add; none may contain a comma (GitLab joins them by commas).
    pub labels: Vec<String>,
    /// The git repository holding `branch` (a worktree's repository or a bare mirror).
    pub local_repository: PathBuf,
    /// The project on the code host (`acme/shop`, `group/sub/shop`) when
    /// it is given rather than read from `repository_url`'s path (the
    /// CLI's `--github OWNER/REPO`).
    pub project: Option<String>,
}

/// An opened (or found) pull request / merge request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRequest {
    /// Where a person reviews it (`html_url` / `web_url`).
    pub url: String,
    /// GitHub's pull request number; GitLab's merge request `iid` (`!N`).
    pub number: u64,
}

/// A request that passed [`PullRequestRequest::check`].
#[derive(Debug, Clone)]
pub(crate) struct Checked {
    pub url: RepoUrl,
    /// The project's path on the code host (`acme/shop`, `group/sub/shop`).
    pub project: Vec<String>,
    pub title: String,
}

impl PullRequestRequest {
    /// The request for `report`'s winner: its branch, a title from its
    /// summary, the rendered diagnosis as body, [`DEFAULT_LABELS`].
    /// InvalidArgument unless the winner is VERIFIED and carries a patch
    /// on a branch: only a proven fix becomes a pull request.
    pub fn for_report(
        report: &Report,
        repository_url: impl Into<String>,
        base_branch: impl Into<String>,
        local_repository: impl Into<PathBuf>,
    ) -> Result<Self> {
        let Some(winner) = &report.winner else {
            return Err(Error::invalid(format!(
                "investigation {} has no winning hypothesis: there is no fix to open a pull request for",
                report.id
            )));
        };
        if winner.status != HypothesisStatus::Verified {
            return Err(Error::invalid(format!(
                "hypothesis {} of investigation {} is {}, not VERIFIED: only a verified fix becomes a pull request",
                winner.number,
                report.id,
                winner.status.as_str()
            )));
        }
        let (Some(branch), Some(_)) = (&winner.branch, &winner.patch) else {
            return Err(Error::invalid(format!(
                "hypothesis {} of investigation {} has no patch on a branch",
                winner.number, report.id
            )));
        };
        Ok(Self {
            repository_url: repository_url.into(),
            branch: branch.clone(),
            base_branch: base_branch.into(),
            title: body::title(report),
            body: body::render(report),
            labels: DEFAULT_LABELS.iter().map(|l| l.to_string()).collect(),
            local_repository: local_repository.into(),
            project: None,
        })
    }

    /// Everything that can be checked without the network, so a bad
    /// request pushes nothing. GitHub names repositories by exactly
    /// `owner/name`; GitLab projects may sit in nested groups.
    pub(crate) fn check(&self, exact_two_segments: bool) -> Result<Checked> {
        let url = RepoUrl::parse(&self.repository_url)?;
        let project: Vec<String> = match &self.project {
            Some(named) => check_project(named)?,
            None => url.key().split('/').skip(1).map(str::to_string).collect(),
        };
        if exact_two_segments && project.len() != 2 {
            return Err(Error::invalid(format!(
                "{url} does not name a GitHub repository as owner/name"
            )));
        }
        if project.len() < 2 {
            return Err(Error::invalid(format!(
                "{url} does not name a project as group/name"
            )));
        }
        check_branch("branch", &self.branch)?;
        check_branch("base branch", &self.base_branch)?;
        if self.branch == self.base_branch {
            return Err(Error::invalid(format!(
                "the branch and the base branch are both {:?}",
                self.branch
            )));
        }
        let title = self.title.split_whitespace().collect::<Vec<_>>().join(" ");
        if title.is_empty() {
            return Err(Error::invalid("the pull request title is empty"));
        }
        for label in &self.labels {
            if label.trim().is_empty() || label.contains([',', '\n', '\r']) {
                return Err(Error::invalid(format!(
                    "label {label:?} is empty or holds a comma or a line break"
                )));
            }
        }
        if !self.local_repository.is_dir() {
            return Err(Error::invalid(format!(
                "the local repository {} is not a directory",
                self.local_repository.display()
            )));
        }
        Ok(Checked {
            url,
            project,
            title,
        })
    }
}

/// A project path as given (`owner/repo`, `group/sub/project`): segments
/// of letters, digits, `.`, `_` and `-`, none empty, `.` or `..`.
fn check_project(named: &str) -> Result<Vec<String>> {
    let named = named.trim().trim_end_matches(".git");
    let segments: Vec<String> = named.split('/').map(str::to_string).collect();
    let ok = segments.iter().all(|s| {
        !s.is_empty()
            && s != "."
            && s != ".."
            && !s.starts_with('-')
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    });
    if !ok {
        return Err(Error::invalid(format!(
            "{named:?} is not a project path like owner/repo"
        )));
    }
    Ok(segments)
}

/// Git's branch name rules (`git check-ref-format --branch`), checked here
/// so a name reaches neither git's argv nor an API as something else: no
/// leading `-` (an option), no `..`, `@{`, control characters, spaces or
/// `~^:?*[\`, no component starting with `.` or ending with `.lock`.
pub(crate) fn check_branch(what: &str, name: &str) -> Result<()> {
    let bad = |why: &str| Err(Error::invalid(format!("{what} {name:?} {why}")));
    if name.is_empty() {
        return Err(Error::invalid(format!("the {what} is empty")));
    }
    if name.starts_with('-') {
        return bad("starts with '-'");
    }
    if name == "@" || name.contains("..") || name.contains("@{") || name.contains("//") {
        return bad("is not a valid git branch name");
    }
    if name
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || "~^:?*[\\".contains(c))
    {
        return bad("holds a character git branch names cannot have");
    }
    if name.starts_with('/') || name.ends_with('/') || name.ends_with('.') {
        return bad("is not a valid git branch name");
    }
    if name
        .split('/')
        .any(|c| c.starts_with('.') || c.ends_with(".lock"))
    {
        return bad("has a component starting with '.' or ending with '.lock'");
    }
    Ok(())
}

/// A pull request as found or created, with the labels it has.
#[derive(Debug, Clone)]
pub(crate) struct Opened {
    pub pr: PullRequest,
    pub labels: Vec<String>,
    pub created: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_names_follow_git() {
        for ok in ["ai-debug/PVS-421-h2", "main", "release/1.2", "a_b"] {
            check_branch("branch", ok).unwrap();
        }
        for bad in [
            "", "-f", "a..b", "a b", "a:b", "a~1", "a^", "x@{1}", "/a", "a/", "a.", ".hidden",
            "a/.b", "a.lock", "a//b", "a\nb", "@",
        ] {
            assert!(check_branch("branch", bad).is_err(), "{bad:?}");
        }
    }

    fn request(url: &str) -> PullRequestRequest {
        PullRequestRequest {
            repository_url: url.into(),
            branch: "ai-debug/T-h1".into(),
            base_branch: "main".into(),
            title: " Fix\nthe  bug ".into(),
            body: String::new(),
            labels: vec!["tracelab".into()],
            local_repository: std::env::temp_dir(),
            project: None,
        }
    }

    #[test]
    fn requests_are_checked_before_the_network() {
        let checked = request("https://github.com/acme/shop.git")
            .check(true)
            .unwrap();
        assert_eq!(checked.project, ["acme", "shop"]);
        assert_eq!(checked.title, "Fix the bug");
        let checked = request("git@gitlab.example.com:group/sub/shop.git")
            .check(false)
            .unwrap();
        assert_eq!(checked.project, ["group", "sub", "shop"]);
        assert!(
            request("https://github.com/group/sub/shop")
                .check(true)
                .is_err()
        );
        assert!(
            request("https://x-token:s3cret@github.com/a/b")
                .check(true)
                .unwrap_err()
                .message
                .contains("not in the URL")
        );
        let mut r = request("https://github.com/a/b");
        r.labels = vec!["a,b".into()];
        assert!(r.check(true).is_err());
        let mut r = request("https://github.com/a/b");
        r.base_branch = r.branch.clone();
        assert!(r.check(true).is_err());
        let mut r = request("https://github.com/a/b");
        r.local_repository = "/nonexistent/repo".into();
        assert!(r.check(true).is_err());
        let mut r = request("http://127.0.0.1:9/x/y/z.git");
        r.project = Some("acme/shop".into());
        assert_eq!(r.check(true).unwrap().project, ["acme", "shop"]);
        for bad in ["acme", "acme/../x", "a//b", "-x/y", "a b/c"] {
            r.project = Some(bad.into());
            assert!(r.check(true).is_err(), "{bad}");
        }
    }
}
