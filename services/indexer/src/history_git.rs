//! What mining reads from a repository's mirror: the first-parent line of
//! a sequence, diffs, commit subjects, a commit's file list and a file's
//! text at a commit — `git` commands (argv, no shell) in the mirror, read
//! only. The history is built from them by the pure
//! `tracelab_experience::ci_history`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use tracelab_domain::{Error, Result};

/// A repository's git folder (a bare mirror or a work tree).
#[derive(Debug, Clone)]
pub struct Repo {
    path: PathBuf,
}

impl Repo {
    pub fn new(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
        }
    }

    /// `git ARGS` in the repository: its stdout, or `None` when git exits
    /// non-zero (an unknown revision or path); failing to start git is an
    /// error (the message is retried).
    async fn git(&self, args: &[&str]) -> Result<Option<String>> {
        let out = tokio::process::Command::new("git")
            .arg("-C")
            .arg(&self.path)
            .args(args)
            .env("GIT_TERMINAL_PROMPT", "0")
            .kill_on_drop(true)
            .output()
            .await
            .map_err(|e| Error::unavailable(format!("cannot run git: {e}")))?;
        if !out.status.success() {
            tracing::debug!(?args, stderr = %String::from_utf8_lossy(&out.stderr), "git refused");
            return Ok(None);
        }
        Ok(Some(String::from_utf8_lossy(&out.stdout).into_owned()))
    }

    async fn git_ok(&self, args: &[&str]) -> Result<String> {
        self.git(args).await?.ok_or_else(|| {
            Error::internal(format!(
                "git {} failed in {}",
                args.join(" "),
                self.path.display()
            ))
        })
    }

    /// Whether `a` is an ancestor of `b` (both known).
    pub async fn is_ancestor(&self, a: &str, b: &str) -> Result<bool> {
        Ok(self
            .git(&["merge-base", "--is-ancestor", a, b])
            .await?
            .is_some())
    }

    /// The first-parent commits after `from` up to `to`, oldest first, each
    /// with its first parent.
    pub async fn first_parent_line(&self, from: &str, to: &str) -> Result<Vec<(String, String)>> {
        let range = format!("{from}..{to}");
        let out = self
            .git_ok(&[
                "rev-list",
                "--first-parent",
                "--reverse",
                "--parents",
                &range,
            ])
            .await?;
        Ok(out
            .lines()
            .filter_map(|line| {
                let mut ids = line.split_whitespace();
                let sha = ids.next()?.to_string();
                Some((sha, ids.next().unwrap_or_default().to_string()))
            })
            .collect())
    }

    /// The unified diff from `a` to `b`.
    pub async fn diff(&self, a: &str, b: &str) -> Result<String> {
        self.git_ok(&["diff", "--no-color", "--no-ext-diff", "--no-renames", a, b])
            .await
    }

    /// The commit's subject line.
    pub async fn summary(&self, sha: &str) -> Result<String> {
        Ok(self
            .git_ok(&["log", "-1", "--format=%s", sha])
            .await?
            .trim_end()
            .to_string())
    }

    /// Every file path of the commit's tree.
    pub async fn files(&self, sha: &str) -> Result<BTreeSet<String>> {
        Ok(self
            .git_ok(&["ls-tree", "-r", "--name-only", sha])
            .await?
            .lines()
            .map(str::to_string)
            .collect())
    }

    /// A file's text at a commit; `None` when it does not exist there.
    pub async fn show(&self, sha: &str, path: &str) -> Result<Option<String>> {
        self.git(&["show", &format!("{sha}:{path}")]).await
    }
}
