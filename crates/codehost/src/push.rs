//! Pushing the verified branch: the exact commit that was verified, to a
//! branch of the same name on the server, never over someone else's.
//!
//! 1. The local branch is resolved to a commit once; that commit is what is
//!    pushed (`<sha>:refs/heads/<branch>`), so a branch moving meanwhile
//!    cannot change what the pull request shows.
//! 2. `git ls-remote` asks the server for the branch. Already at that
//!    commit: done (idempotent, nothing pushed). At another commit:
//!    Conflict — it is not ours to overwrite.
//! 3. Otherwise a plain push (no `--force`, no lease) creates it. If the
//!    server rejects it because the branch appeared meanwhile, step 2's
//!    question is asked again and answered the same way.

use crate::request::check_branch;
use std::path::Path;
use std::time::{Duration, Instant};
use tracelab_domain::{Error, ErrorKind, Result};
use tracelab_repos::git::{Complaint, Failure, Git, complaint, last_line};
use tracelab_repos::{Credentials, Scheme};
use tracelab_repos::{RepoUrl, RepositorySettings};

/// Beside the mirror cache's options (no hooks — a pre-push hook must not
/// run with the push credentials in its environment —, protocol v2, any
/// owner): push exactly the one ref asked for, with no tags, no submodules
/// and no signing prompt.
const PUSH_OPTIONS: &[&str] = &[
    "push.followTags=false",
    "push.recurseSubmodules=no",
    "push.gpgSign=false",
];

/// What [`Pusher::push_branch`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// The commit the remote branch now points at.
    pub commit: String,
    /// False when the branch was already there at that commit.
    pub created: bool,
}

/// Pushes branches with the deployment's git credentials.
#[derive(Debug, Clone)]
pub struct Pusher {
    git: Git,
    credentials: Credentials,
    timeout: Duration,
}

impl Pusher {
    /// Uses `settings.credentials` (and `ambient_credentials`) exactly as
    /// the mirror cache does, and `fetch_timeout_seconds` as the deadline
    /// of one push (check and push together).
    pub fn new(settings: &RepositorySettings) -> Result<Self> {
        if settings.fetch_timeout_seconds == 0 {
            return Err(Error::invalid(
                "fleet.repositories.fetch_timeout_seconds must be at least 1",
            ));
        }
        Ok(Self {
            git: Git::from_process_env(&std::env::temp_dir(), settings.ambient_credentials)
                .with_options(PUSH_OPTIONS),
            credentials: Credentials::new(&settings.credentials, settings.ambient_credentials)?,
            timeout: Duration::from_secs(settings.fetch_timeout_seconds),
        })
    }

    /// Another deadline for one push.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Pushes `branch` of the repository at `local` to `url` (see the
    /// module docs). Conflict when the server has the branch at another
    /// commit; NotFound when the local branch does not exist;
    /// PermissionDenied, NotFound or Unavailable by what the server said.
    #[tracing::instrument(skip_all, fields(repository = %url, branch = %branch))]
    pub async fn push_branch(&self, url: &RepoUrl, local: &Path, branch: &str) -> Result<Pushed> {
        check_branch("branch", branch)?;
        if url.scheme() == Scheme::Git {
            return Err(Error::invalid(format!(
                "{url}: git:// cannot authenticate a push; use the repository's https:// or ssh URL"
            )));
        }
        let deadline = Instant::now() + self.timeout;
        let refname = format!("refs/heads/{branch}");
        let local_ref = format!("{refname}^{{commit}}");
        let commit = self
            .git
            .run(
                local,
                &[
                    "rev-parse",
                    "--verify",
                    "--quiet",
                    "--end-of-options",
                    &local_ref,
                ],
                &[],
                None,
                deadline,
            )
            .await
            .map(|out| out.trim().to_string())
            .map_err(|_| {
                Error::not_found(format!(
                    "the local repository {} has no branch {branch}",
                    local.display()
                ))
            })?;
        let auth = self.credentials.auth(url)?;
        let secret = auth.secret.as_deref();
        let settle = |remote: Option<String>| match remote {
            Some(sha) if sha == commit => Ok(Some(Pushed {
                commit: commit.clone(),
                created: false,
            })),
            Some(sha) => Err(Error::conflict(format!(
                "{url} already has a branch {branch} at {}, not at the verified commit {}; \
                 refusing to overwrite it (delete or rename it on the server to open this pull request)",
                short(&sha),
                short(&commit)
            ))),
            None => Ok(None),
        };
        if let Some(done) = settle(
            self.remote(local, url, &refname, &auth.env, secret, deadline)
                .await?,
        )? {
            tracing::info!(commit = %done.commit, "the branch is already on the server");
            return Ok(done);
        }
        let refspec = format!("{commit}:{refname}");
        let pushed = self
            .git
            .run(
                local,
                &[
                    "push",
                    "--no-verify",
                    "--porcelain",
                    "--",
                    url.fetch_url(),
                    &refspec,
                ],
                &auth.env,
                None,
                deadline,
            )
            .await;
        match pushed {
            Ok(_) => {
                tracing::info!(commit = %commit, "pushed the branch");
                Ok(Pushed {
                    commit,
                    created: true,
                })
            }
            Err(Failure::Exit(stderr)) if rejected(&stderr) => {
                // Someone created it between the check and the push.
                match settle(
                    self.remote(local, url, &refname, &auth.env, secret, deadline)
                        .await?,
                )? {
                    Some(done) => Ok(done),
                    None => Err(Error::conflict(format!(
                        "{url} rejected the new branch {branch}: {}",
                        last_line(&stderr, secret)
                    ))),
                }
            }
            Err(failure) => Err(self.git_error("pushing to", url, failure, secret)),
        }
    }

    /// Where the server's `refname` points, if it has it.
    async fn remote(
        &self,
        local: &Path,
        url: &RepoUrl,
        refname: &str,
        env: &[(String, String)],
        secret: Option<&str>,
        deadline: Instant,
    ) -> Result<Option<String>> {
        let out = self
            .git
            .run(
                local,
                &["ls-remote", "--refs", "--", url.fetch_url(), refname],
                env,
                None,
                deadline,
            )
            .await
            .map_err(|f| self.git_error("asking for branches of", url, f, secret))?;
        Ok(out
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .find(|(_, name)| *name == refname)
            .map(|(sha, _)| sha.to_string()))
    }

    /// The error of a git command that talked to `url`, by what git
    /// printed, with `secret` scrubbed from anything quoted.
    fn git_error(
        &self,
        what: &str,
        url: &RepoUrl,
        failure: Failure,
        secret: Option<&str>,
    ) -> Error {
        let stderr = match failure {
            Failure::Start(e) => {
                return Error::unavailable(format!("cannot run git for {url}: {e}")).with_source(e);
            }
            Failure::Timeout => {
                return Error::unavailable(format!(
                    "{what} {url} took longer than {} s; stopped (retry later)",
                    self.timeout.as_secs()
                ));
            }
            Failure::Exit(stderr) => stderr,
        };
        git_error(what, url, &stderr, secret)
    }
}

/// Whether git says the server refused the update itself (the branch
/// exists and our commit does not descend from it).
fn rejected(stderr: &str) -> bool {
    let said = stderr.to_ascii_lowercase();
    [
        "[rejected]",
        "non-fast-forward",
        "fetch first",
        "already exists",
    ]
    .iter()
    .any(|n| said.contains(n))
}

fn git_error(what: &str, url: &RepoUrl, stderr: &str, secret: Option<&str>) -> Error {
    let said = stderr.to_ascii_lowercase();
    let any = |needles: &[&str]| needles.iter().any(|n| said.contains(n));
    let last = last_line(stderr, secret);
    // What only a push hears; the rest is what a fetch hears too.
    let complaint = if any(&[
        "protected branch",
        "pre-receive hook declined",
        "hook declined",
    ]) {
        return Error::new(
            ErrorKind::PermissionDenied,
            format!("{url} refused the branch (a server-side rule): {last}"),
        );
    } else if any(&["permission to", "not allowed to push"]) {
        Complaint::Refused
    } else {
        complaint(stderr)
    };
    let (kind, message) = match complaint {
        Complaint::NoCredentials => (
            ErrorKind::PermissionDenied,
            format!(
                "the git server asked for credentials to push to {url}, and none are configured for it (fleet.repositories.credentials)"
            ),
        ),
        Complaint::HostKey => (
            ErrorKind::PermissionDenied,
            format!("the SSH host key of {url} is not the one pinned in known_hosts"),
        ),
        Complaint::NotFound => (
            ErrorKind::NotFound,
            format!(
                "{url}: the git server has no such repository (or hides it from these credentials)"
            ),
        ),
        Complaint::Refused => (
            ErrorKind::PermissionDenied,
            format!(
                "the git server refused to let the configured credentials push to {url}: they need write access \
                 (GitHub: contents: write; GitLab: write_repository with the Developer role)"
            ),
        ),
        Complaint::Unreachable => (
            ErrorKind::Unavailable,
            format!("{url} cannot be reached: {last}"),
        ),
        Complaint::Other => (ErrorKind::Internal, format!("{what} {url} failed: {last}")),
    };
    Error::new(kind, message)
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_maps_to_kinds_without_the_secret() {
        use ErrorKind::*;
        let url = RepoUrl::parse("https://git.example.com/acme/shop").unwrap();
        let table = [
            (
                "fatal: could not read Username for 'https://x': terminal prompts disabled",
                PermissionDenied,
            ),
            (
                "fatal: Authentication failed for 'https://x/'",
                PermissionDenied,
            ),
            (
                "remote: Permission to acme/shop.git denied to bot.\nfatal: unable to access 'https://x/': The requested URL returned error: 403",
                PermissionDenied,
            ),
            (
                "remote: GitLab: You are not allowed to push code to protected branches on this project.",
                PermissionDenied,
            ),
            (
                "remote: Repository not found.\nfatal: repository 'https://x/' not found",
                NotFound,
            ),
            (
                "fatal: unable to access 'https://x/': Failed to connect to x port 443: Connection refused",
                Unavailable,
            ),
            (
                "fatal: unable to access 'https://x/': The requested URL returned error: 502",
                Unavailable,
            ),
            ("error: hunter2 went odd", Internal),
        ];
        for (stderr, expected) in table {
            let e = git_error("pushing to", &url, stderr, Some("hunter2"));
            assert_eq!(e.kind, expected, "{stderr}");
            assert!(!e.message.contains("hunter2"), "{e}");
        }
        assert!(rejected(
            " ! [rejected]        abc -> ai-debug/x (fetch first)"
        ));
        assert!(!rejected("fatal: Authentication failed"));
    }
}
