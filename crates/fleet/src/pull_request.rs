//! The draft pull request of an approved investigation, from the fleet.
//!
//! In the fleet the verified `ai-debug/{ISSUE}-h{N}` branch lives in the
//! worktree of whichever verifier proved it, on another machine and long
//! gone. What is stored is its patch (the diff from `bad`), so the
//! investigator rebuilds the commit from it:
//!
//! ```text
//! checkout (this process's mirror of the repository, `bad` fetched)
//!   └─ a temporary bare repository borrowing the mirror's objects (alternates)
//!        read-tree bad → apply --cached patch → write-tree → commit-tree
//!        (fixed author, committer and dates) → refs/heads/ai-debug/…
//! tracelab_codehost::open_draft_pull_request (push, find or create, labels)
//! ```
//!
//! The rebuilt commit is a function of what is stored — `bad`, the patch,
//! the message and a fixed identity dated like `bad` — so rebuilding it
//! again gives the same sha: a retry after a failure finds its branch on
//! the server at exactly that commit (a no-op push), never a conflicting
//! one. The mirror is only read; the temporary repository goes when the
//! call ends.

use crate::repositories::Repositories;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};
use tracelab_codehost::{
    CodeHost, HostKind, PullRequest, PullRequestRequest, Pusher, Token, TokenSource,
};
use tracelab_domain::report::Report;
use tracelab_domain::{Error, Result};
use tracelab_repos::git::{Failure, Git};
use tracelab_repos::{RepoUrl, RepositorySettings};

/// Who the rebuilt commit says wrote it (the engine's identity too).
const AUTHOR: (&str, &str) = ("TraceLab", "tracelab@localhost");

/// `pull_requests` in the investigator's settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PullRequestSettings {
    /// Code hosts by a name of your choice (`[pull_requests.hosts.github]`);
    /// a repository's pull request goes to the host whose `host` is the
    /// repository URL's `host[:port]`.
    pub hosts: BTreeMap<String, CodeHostSetting>,
}

/// One code host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CodeHostSetting {
    /// `host[:port]` of the repository URLs it serves (`github.com`,
    /// `gitlab.example.com`), lower case.
    pub host: String,
    pub kind: HostKind,
    /// The API root; empty: `https://api.github.com` or
    /// `https://gitlab.com/api/v4`. GitHub Enterprise Server:
    /// `https://ghe.example.com/api/v3`; self-managed GitLab:
    /// `https://gitlab.example.com/api/v4`.
    pub api_url: String,
    /// The API token. Set it from a mounted secret:
    /// `TRACELAB__PULL_REQUESTS__HOSTS__<NAME>__TOKEN_FILE=/run/secrets/…`
    /// (read at start); never in a TOML file that is checked in.
    pub token: String,
    /// Or a file read at every request (rotation without a restart).
    pub token_file: String,
    /// Labels put on every pull request.
    pub labels: Vec<String>,
    /// The branch a pull request targets when the investigation's request
    /// named no branch as its bad revision.
    pub base_branch: String,
    /// Longest one API request may take, in seconds.
    pub timeout_seconds: u64,
}

impl Default for CodeHostSetting {
    fn default() -> Self {
        Self {
            host: String::new(),
            kind: HostKind::GitHub,
            api_url: String::new(),
            token: String::new(),
            token_file: String::new(),
            labels: tracelab_codehost::DEFAULT_LABELS
                .iter()
                .map(|l| l.to_string())
                .collect(),
            base_branch: "main".into(),
            timeout_seconds: 30,
        }
    }
}

struct Host {
    name: String,
    authority: String,
    client: CodeHost,
    labels: Vec<String>,
    base_branch: String,
}

/// The configured code hosts and the pusher (the deployment's git credentials).
pub struct PullRequests {
    hosts: Vec<Host>,
    pusher: Pusher,
    git: Git,
}

impl std::fmt::Debug for PullRequests {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PullRequests")
            .field(
                "hosts",
                &self.hosts.iter().map(|h| &h.name).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// What [`PullRequests::open`] opened, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    pub pr: PullRequest,
    pub kind: HostKind,
}

impl PullRequests {
    /// Checks every host's settings (InvalidArgument naming the host);
    /// pushes use `repositories`' credentials.
    pub fn new(settings: &PullRequestSettings, repositories: &RepositorySettings) -> Result<Self> {
        let mut hosts = Vec::new();
        for (name, h) in &settings.hosts {
            let refuse = |why: String| Error::invalid(format!("pull_requests.hosts.{name}: {why}"));
            let authority = h.host.trim().to_ascii_lowercase();
            if authority.is_empty() || authority.contains(['/', ' ', '@']) {
                return Err(refuse(format!(
                    "host {:?} must be a host[:port] such as github.com",
                    h.host
                )));
            }
            let token = match (h.token.trim().is_empty(), h.token_file.trim().is_empty()) {
                (false, true) => TokenSource::Value(Token::new(h.token.clone())?),
                (true, false) => TokenSource::File(h.token_file.trim().into()),
                _ => {
                    return Err(refuse(
                        "set exactly one of token (e.g. from TRACELAB__PULL_REQUESTS__HOSTS__<NAME>__TOKEN_FILE) and token_file".into(),
                    ));
                }
            };
            if h.timeout_seconds == 0 {
                return Err(refuse("timeout_seconds must be at least 1".into()));
            }
            let client = CodeHost::new(
                h.kind,
                &h.api_url,
                token,
                Duration::from_secs(h.timeout_seconds),
            )
            .map_err(|e| refuse(e.message))?;
            hosts.push(Host {
                name: name.clone(),
                authority,
                client,
                labels: h.labels.clone(),
                base_branch: h.base_branch.clone(),
            });
        }
        Ok(Self {
            hosts,
            pusher: Pusher::new(repositories)?,
            git: Git::from_process_env(&std::env::temp_dir(), repositories.ambient_credentials),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }

    /// Rebuilds the winner's commit of `report` on its `bad` revision,
    /// pushes it as the winner's branch and finds or opens its draft pull
    /// request. `requested_bad` is the bad revision as the request named
    /// it: a branch name there is the pull request's base.
    pub async fn open(
        &self,
        repositories: &Repositories,
        report: &Report,
        requested_bad: Option<&str>,
    ) -> Result<Opened> {
        let url = RepoUrl::parse(&report.repository).map_err(|e| {
            Error::conflict(format!(
                "investigation {}'s repository {} is not a URL a pull request can go to: {}",
                report.id, report.repository, e.message
            ))
        })?;
        let host = self.host_for(&url)?;
        let base = base_branch(requested_bad, &host.base_branch);
        let work = tempfile::Builder::new()
            .prefix("tracelab-pr-")
            .tempdir()
            .map_err(|e| Error::unavailable(format!("no temporary folder for the branch: {e}")))?;
        let mut request = PullRequestRequest::for_report(
            report,
            report.repository.clone(),
            base,
            work.path().join("repo.git"),
        )?;
        let checkout = repositories
            .checkout(&report.repository, &[&report.bad])
            .await?;
        request.labels = host.labels.clone();
        let winner = report
            .winner
            .as_ref()
            .ok_or_else(|| Error::internal("for_report checked the winner"))?;
        let patch = winner.patch.as_deref().unwrap_or_default();
        let message = commit_message(report);
        self.rebuild(
            &checkout.path,
            work.path(),
            &checkout.resolved[0],
            patch,
            &request.branch,
            &message,
        )
        .await?;
        let pr = tracelab_codehost::open_draft_pull_request(&self.pusher, &host.client, &request)
            .await?;
        Ok(Opened {
            pr,
            kind: host.client.kind(),
        })
    }

    fn host_for(&self, url: &RepoUrl) -> Result<&Host> {
        let authority = url.key().split('/').next().unwrap_or_default();
        self.hosts
            .iter()
            .find(|h| h.authority == authority)
            .ok_or_else(|| {
                Error::conflict(format!(
                    "no code host is configured for {authority} (pull_requests.hosts.<name>.host); \
                     configured: {}",
                    if self.hosts.is_empty() {
                        "none".to_string()
                    } else {
                        self.hosts
                            .iter()
                            .map(|h| format!("{} ({})", h.name, h.authority))
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                ))
            })
    }

    /// `branch` at the commit `patch` makes on `bad`, in a bare repository
    /// at `work/repo.git` that borrows `checkout`'s objects.
    async fn rebuild(
        &self,
        checkout: &Path,
        work: &Path,
        bad: &str,
        patch: &str,
        branch: &str,
        message: &str,
    ) -> Result<String> {
        let deadline = Instant::now() + Duration::from_secs(120);
        let repo = work.join("repo.git");
        let git = |dir: &Path,
                   args: Vec<&str>,
                   env: Vec<(String, String)>,
                   stdin: Option<Vec<u8>>| {
            let (git, dir) = (self.git.clone(), dir.to_path_buf());
            let args: Vec<String> = args.into_iter().map(str::to_string).collect();
            async move {
                let argv: Vec<&str> = args.iter().map(String::as_str).collect();
                git.run(&dir, &argv, &env, stdin, deadline)
                    .await
                    .map(|out| out.trim().to_string())
                    .map_err(|f| {
                        let said = match f {
                            Failure::Start(e) => e.to_string(),
                            Failure::Timeout => "took longer than 120 s".into(),
                            Failure::Exit(stderr) => tracelab_repos::git::last_line(&stderr, None),
                        };
                        Error::internal(format!("rebuilding the branch: git {}: {said}", args[0]))
                    })
            }
        };
        let common = git(
            checkout,
            vec!["rev-parse", "--path-format=absolute", "--git-common-dir"],
            vec![],
            None,
        )
        .await?;
        git(work, vec!["init", "--bare", "-q", "repo.git"], vec![], None).await?;
        let objects = Path::new(&common).join("objects");
        std::fs::write(
            repo.join("objects/info/alternates"),
            format!("{}\n", objects.display()),
        )
        .map_err(|e| Error::internal(format!("cannot borrow the mirror's objects: {e}")))?;
        let bad_commit = format!("{bad}^{{commit}}");
        let bad = git(
            &repo,
            vec![
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                &bad_commit,
            ],
            vec![],
            None,
        )
        .await?;
        let date = git(
            &repo,
            vec!["show", "-s", "--format=%ct", &bad],
            vec![],
            None,
        )
        .await?;
        let date = format!("@{date} +0000");
        let index = work.join("index").display().to_string();
        let with_index = vec![("GIT_INDEX_FILE".to_string(), index)];
        git(&repo, vec!["read-tree", &bad], with_index.clone(), None).await?;
        git(
            &repo,
            vec!["apply", "--cached", "--binary", "--whitespace=nowarn", "-"],
            with_index.clone(),
            Some(patch.as_bytes().to_vec()),
        )
        .await
        .map_err(|e| {
            Error::conflict(format!(
                "the verified patch no longer applies to {bad}: {}",
                e.message
            ))
        })?;
        let tree = git(&repo, vec!["write-tree"], with_index, None).await?;
        let identity = [
            ("GIT_AUTHOR_NAME", AUTHOR.0),
            ("GIT_AUTHOR_EMAIL", AUTHOR.1),
            ("GIT_COMMITTER_NAME", AUTHOR.0),
            ("GIT_COMMITTER_EMAIL", AUTHOR.1),
            ("GIT_AUTHOR_DATE", &date),
            ("GIT_COMMITTER_DATE", &date),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .to_vec();
        let commit = git(
            &repo,
            vec![
                "-c",
                "commit.gpgSign=false",
                "commit-tree",
                &tree,
                "-p",
                &bad,
                "-F",
                "-",
            ],
            identity,
            Some(message.as_bytes().to_vec()),
        )
        .await?;
        let refname = format!("refs/heads/{branch}");
        git(&repo, vec!["update-ref", &refname, &commit], vec![], None).await?;
        tracing::info!(%branch, %commit, "rebuilt the verified branch from its patch");
        Ok(commit)
    }
}

/// The base of the pull request: the request's bad revision when it named
/// a branch (`main`, `release/2.1`), else the host's default. A sha,
/// `HEAD` or a revision expression is not a branch to merge into.
pub fn base_branch(requested_bad: Option<&str>, default: &str) -> String {
    let is_branch = |b: &str| {
        let sha_like = b.len() >= 7 && b.chars().all(|c| c.is_ascii_hexdigit());
        let expression = b.starts_with('-')
            || b.contains(['~', '^', ':', '@', ' ', '\\', '?', '*', '['])
            || b.contains("..");
        !(b.is_empty() || b == "HEAD" || sha_like || expression)
    };
    let named = requested_bad.map(str::trim).filter(|b| is_branch(b));
    named
        .map(|b| b.strip_prefix("refs/heads/").unwrap_or(b).to_string())
        .unwrap_or_else(|| default.to_string())
}

/// The rebuilt commit's message: the winner's summary and where it came from.
pub fn commit_message(report: &Report) -> String {
    let (number, summary) = report
        .winner
        .as_ref()
        .map(|w| (w.number, w.summary.as_str()))
        .unwrap_or((0, ""));
    format!(
        "{}\n\nVerified by TraceLab (investigation {}, hypothesis {number}) and approved by a reviewer.\nProposed as a draft; TraceLab never merges.\n",
        summary.lines().next().unwrap_or("TraceLab fix").trim(),
        report.id
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_is_a_named_branch_or_the_default() {
        assert_eq!(base_branch(Some("release/2.1"), "main"), "release/2.1");
        assert_eq!(base_branch(Some("refs/heads/dev"), "main"), "dev");
        for not_a_branch in [
            None,
            Some(""),
            Some("HEAD"),
            Some("0123abcd"),
            Some("0123456789abcdef0123456789abcdef01234567"),
            Some("main~2"),
            Some("v1..v2"),
            Some("-x"),
        ] {
            assert_eq!(
                base_branch(not_a_branch, "trunk"),
                "trunk",
                "{not_a_branch:?}"
            );
        }
    }

    #[test]
    fn hosts_need_one_token_and_a_host() {
        let repositories = RepositorySettings::default();
        let with = |h: CodeHostSetting| PullRequestSettings {
            hosts: [("gh".to_string(), h)].into(),
        };
        let ok = CodeHostSetting {
            host: "github.com".into(),
            token: "ghp_x".into(),
            ..Default::default()
        };
        assert!(
            !PullRequests::new(&with(ok.clone()), &repositories)
                .unwrap()
                .is_empty()
        );
        for bad in [
            CodeHostSetting {
                token: String::new(),
                ..ok.clone()
            },
            CodeHostSetting {
                token_file: "/run/t".into(),
                ..ok.clone()
            },
            CodeHostSetting {
                host: "https://github.com/".into(),
                ..ok.clone()
            },
            CodeHostSetting {
                api_url: "http://github.example.com/api".into(),
                ..ok.clone()
            },
        ] {
            let e = PullRequests::new(&with(bad), &repositories).unwrap_err();
            assert!(e.message.contains("pull_requests.hosts.gh"), "{e}");
            assert!(!e.message.contains("ghp_x"), "{e}");
        }
    }
}
