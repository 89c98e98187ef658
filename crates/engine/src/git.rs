//! The `git` CLI, run without a shell. History reads and worktree plumbing
//! go through the same binary the user has, so worktrees, merges and
//! reverts behave exactly as they do for them.

use std::path::{Path, PathBuf};
use tokio::process::Command;
use tracelab_domain::hypothesis::CommitInfo;
use tracelab_domain::{Error, Result};

use crate::worktree_lock::WorktreeAdminLock;

/// A repository on disk.
#[derive(Debug, Clone)]
pub struct Git {
    repo: PathBuf,
}

/// A commit and its parents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphCommit {
    pub sha: String,
    pub parents: Vec<String>,
}

/// `git -C dir` as the engine runs it. Worktrees may be owned by the
/// sandbox user, and code under test may have written hooks: never run
/// repository hooks as the engine's user.
fn git_command(dir: &Path) -> Command {
    let mut command = Command::new("git");
    command
        .args([
            "-c",
            "safe.directory=*",
            "-c",
            "core.hooksPath=/dev/null",
            "-C",
        ])
        .arg(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .kill_on_drop(true);
    command
}

pub(crate) async fn run_git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = git_command(dir)
        .args(args)
        .output()
        .await
        .map_err(|e| Error::unavailable(format!("cannot run git: {e}")))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let line = stderr
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("unknown error")
            .trim();
        return Err(Error::invalid(format!(
            "git {}: {line}",
            args.first().copied().unwrap_or("")
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// An RFC 3339 date with UTC written as `+00:00`, as git 2.39 writes `%aI`
/// (git 2.47 writes `Z`): the same commit gets the same date in a report
/// whichever git read it (a fleet's machines, or two gits on one `PATH`).
fn same_offset_form(date: &str) -> String {
    match date.strip_suffix('Z') {
        Some(utc) => format!("{utc}+00:00"),
        None => date.to_string(),
    }
}

impl Git {
    /// Opens a repository, with a clear error when `path` is not one.
    pub async fn open(path: &Path) -> Result<Self> {
        if !path.is_dir() {
            return Err(Error::not_found(format!(
                "{} is not a directory",
                path.display()
            )));
        }
        let not_a_repository =
            |_| Error::invalid(format!("{} is not a git repository", path.display()));
        // A bare repository (the fleet's mirror of a repository fetched by
        // URL) has no top level: it is its own git folder, and worktrees
        // are added from it like from a checkout.
        let bare = run_git(path, &["rev-parse", "--is-bare-repository"])
            .await
            .map_err(not_a_repository)?;
        let top = if bare.trim() == "true" {
            run_git(path, &["rev-parse", "--absolute-git-dir"]).await
        } else {
            run_git(path, &["rev-parse", "--show-toplevel"]).await
        }
        .map_err(not_a_repository)?;
        Ok(Self {
            repo: PathBuf::from(top.trim()),
        })
    }

    pub fn path(&self) -> &Path {
        &self.repo
    }

    pub async fn run(&self, args: &[&str]) -> Result<String> {
        run_git(&self.repo, args).await
    }

    /// Runs git and returns at most `limit` bytes of its output (whole
    /// lines); git is stopped once the limit is reached.
    pub async fn read_limited(&self, args: &[&str], limit: usize) -> Result<String> {
        use tokio::io::{AsyncBufReadExt, BufReader};
        let mut child = git_command(&self.repo)
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| Error::unavailable(format!("cannot run git: {e}")))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| Error::internal("git's output was not captured"))?;
        let mut reader = BufReader::new(stdout);
        let mut out = Vec::new();
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = reader
                .read_until(b'\n', &mut line)
                .await
                .map_err(|e| Error::unavailable(format!("cannot read git's output: {e}")))?;
            if n == 0 || out.len() + n > limit {
                break;
            }
            out.extend_from_slice(&line);
        }
        drop(reader);
        let _ = child.start_kill();
        let _ = child.wait().await;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// Resolves a revision to a full commit sha.
    pub async fn resolve(&self, rev: &str) -> Result<String> {
        if rev.starts_with('-') {
            return Err(Error::invalid(format!("unknown revision {rev:?}")));
        }
        let spec = format!("{rev}^{{commit}}");
        self.run(&["rev-parse", "--verify", "--quiet", &spec])
            .await
            .map(|s| s.trim().to_string())
            .map_err(|_| {
                Error::invalid(format!(
                    "unknown revision {rev:?} in {}",
                    self.repo.display()
                ))
            })
    }

    pub async fn is_ancestor(&self, ancestor: &str, descendant: &str) -> Result<bool> {
        let out = git_command(&self.repo)
            .args(["merge-base", "--is-ancestor", ancestor, descendant])
            .output()
            .await
            .map_err(|e| Error::unavailable(format!("cannot run git: {e}")))?;
        Ok(out.status.success())
    }

    /// Commits reachable from `bad` and not from `good`, parents before children.
    pub async fn range(
        &self,
        bad: &str,
        good: &str,
        first_parent: bool,
    ) -> Result<Vec<GraphCommit>> {
        let exclude = format!("^{good}");
        let mut args = vec!["rev-list", "--topo-order", "--reverse", "--parents"];
        if first_parent {
            args.push("--first-parent");
        }
        args.extend([bad, exclude.as_str()]);
        let out = self.run(&args).await?;
        Ok(out
            .lines()
            .filter_map(|line| {
                let mut parts = line.split_whitespace().map(str::to_string);
                let sha = parts.next()?;
                Some(GraphCommit {
                    sha,
                    parents: parts.collect(),
                })
            })
            .collect())
    }

    /// The first-parent chain from `rev` backwards, `rev` first, at most `limit` commits.
    pub async fn first_parent_chain(&self, rev: &str, limit: usize) -> Result<Vec<String>> {
        let n = format!("--max-count={limit}");
        let out = self.run(&["rev-list", "--first-parent", &n, rev]).await?;
        Ok(out.lines().map(str::to_string).collect())
    }

    pub async fn commit_info(&self, sha: &str) -> Result<CommitInfo> {
        let out = self
            .run(&["show", "-s", "--format=%H%x00%s%x00%an <%ae>%x00%aI", sha])
            .await?;
        let mut parts = out.trim_end().splitn(4, '\0');
        let mut next = || parts.next().unwrap_or_default().to_string();
        Ok(CommitInfo {
            commit: next(),
            summary: next(),
            author: next(),
            date: same_offset_form(&next()),
        })
    }

    pub async fn parents(&self, sha: &str) -> Result<Vec<String>> {
        let out = self.run(&["rev-list", "--parents", "-n", "1", sha]).await?;
        Ok(out.split_whitespace().skip(1).map(str::to_string).collect())
    }

    /// The reverse of `commit` relative to its first parent, as a diff.
    pub async fn reverse_diff(&self, commit: &str) -> Result<String> {
        let parents = self.parents(commit).await?;
        let Some(parent) = parents.first() else {
            return Err(Error::invalid(format!(
                "{commit} is a root commit and cannot be reverted"
            )));
        };
        self.run(&[
            "diff",
            "--binary",
            "--no-color",
            "--no-ext-diff",
            commit,
            parent,
        ])
        .await
    }

    /// The paths `commit` changed relative to its first parent (all of its
    /// files for a root commit).
    pub async fn changed_paths(&self, commit: &str) -> Result<Vec<String>> {
        let parents = self.parents(commit).await?;
        let out = match parents.first() {
            Some(parent) => {
                self.run(&["diff", "--name-only", "--no-renames", parent, commit])
                    .await?
            }
            None => {
                self.run(&["ls-tree", "-r", "--name-only", "--full-tree", commit])
                    .await?
            }
        };
        Ok(out.lines().map(str::to_string).collect())
    }

    /// Which of `paths` exist as files at `rev`.
    pub async fn existing_files(&self, rev: &str, paths: &[String]) -> Result<Vec<String>> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let mut args = vec!["ls-tree", "-r", "--name-only", "--full-tree", rev, "--"];
        args.extend(paths.iter().map(String::as_str));
        let out = self.run(&args).await?;
        Ok(out
            .lines()
            .filter(|l| paths.iter().any(|p| p == l))
            .map(str::to_string)
            .collect())
    }

    /// The file `path` at `rev`, or `None` when it does not exist there or is not UTF-8.
    pub async fn show_file(&self, rev: &str, path: &str) -> Result<Option<String>> {
        let spec = format!("{rev}:{path}");
        match self.run(&["cat-file", "-e", &spec]).await {
            Ok(_) => {}
            Err(_) => return Ok(None),
        }
        let out = git_command(&self.repo)
            .args(["cat-file", "blob", &spec])
            .output()
            .await
            .map_err(|e| Error::unavailable(format!("cannot run git: {e}")))?;
        if !out.status.success() {
            return Ok(None);
        }
        Ok(String::from_utf8(out.stdout).ok())
    }

    /// Adds a worktree at `path` on `rev`, detached or on `branch` (created,
    /// or reset to `rev` — also when a crashed process left it checked out in
    /// a worktree of its own).
    pub async fn add_worktree(&self, path: &Path, rev: &str, branch: Option<&str>) -> Result<()> {
        let path_str = path.to_string_lossy();
        let _admin = WorktreeAdminLock::acquire_async(&self.repo).await?;
        match branch {
            Some(b) => {
                self.run(&["worktree", "add", "-q", "-f", "-B", b, &path_str, rev])
                    .await?
            }
            None => {
                self.run(&["worktree", "add", "-q", "--detach", &path_str, rev])
                    .await?
            }
        };
        Ok(())
    }

    /// Registers a detached worktree at `rev` without writing its files:
    /// the part of `git worktree add` that must take turns (it races on
    /// `.git/worktrees/`). [`Git::populate_worktree`] writes the files, and
    /// several worktrees can do that at once.
    pub async fn add_unpopulated_worktree(&self, path: &Path, rev: &str) -> Result<()> {
        let path_str = path.to_string_lossy();
        let _admin = WorktreeAdminLock::acquire_async(&self.repo).await?;
        self.run(&[
            "worktree",
            "add",
            "-q",
            "--detach",
            "--no-checkout",
            &path_str,
            rev,
        ])
        .await?;
        Ok(())
    }

    /// Writes the files of a worktree added by
    /// [`Git::add_unpopulated_worktree`] (its index and tree from its HEAD).
    pub async fn populate_worktree(&self, path: &Path) -> Result<()> {
        run_git(path, &["reset", "-q", "--hard"]).await?;
        Ok(())
    }

    pub async fn remove_worktree(&self, path: &Path) -> Result<()> {
        let path_str = path.to_string_lossy();
        let _admin = WorktreeAdminLock::acquire_async(&self.repo).await?;
        let removed = self
            .run(&["worktree", "remove", "--force", "--force", &path_str])
            .await;
        if removed.is_err() {
            let _ = tokio::fs::remove_dir_all(path).await;
        }
        self.run(&["worktree", "prune"]).await?;
        Ok(())
    }

    pub async fn delete_branch(&self, branch: &str) -> Result<()> {
        let _admin = WorktreeAdminLock::acquire_async(&self.repo).await?;
        self.run(&["branch", "-D", "-q", branch]).await.map(|_| ())
    }
}

/// Operations inside one worktree.
#[derive(Debug, Clone)]
pub struct Worktree {
    pub path: PathBuf,
}

/// The error of a bytecode cache that could not be deleted.
fn stale_cache(e: std::io::Error) -> Error {
    Error::internal(format!(
        "cannot delete a Python bytecode cache of a changed file: {e}"
    ))
}

impl Worktree {
    async fn git(&self, args: &[&str]) -> Result<String> {
        run_git(&self.path, args).await
    }

    /// [`Worktree::checkout_keeping`] with no build directory kept.
    pub async fn checkout(&self, rev: &str) -> Result<()> {
        self.checkout_keeping(rev, &[]).await
    }

    /// Checks out `rev` (detached) and removes everything untracked, ignored
    /// files included, except the build directories named in
    /// `keep` (root-relative, such as cargo's `target`) and Python's
    /// bytecode caches of the sources the checkout leaves unchanged
    /// ([`crate::bytecode`]): an incremental build tool rebuilds what the
    /// checkout changed, as it does for `git bisect run` in one tree.
    pub async fn checkout_keeping(&self, rev: &str, keep: &[&str]) -> Result<()> {
        // Every file whose content differs between the worktree as it is
        // (an overlay included) and `rev`.
        let changed = self
            .git(&["diff", "--name-only", "--no-renames", "-z", rev])
            .await?;
        self.git(&["checkout", "-q", "--force", "--detach", rev])
            .await?;
        let mut excludes: Vec<String> = keep.iter().map(|d| format!("--exclude=/{d}")).collect();
        excludes.push(format!("--exclude={}", crate::bytecode::CACHE_DIR));
        // Not quiet: what it removes are untracked sources whose caches go
        // too (a later tracked file of the same name and size must not meet
        // them). A name git still quotes (a quote, a backslash, a control
        // character) is not matched.
        let mut args = vec!["-c", "core.quotePath=false", "clean", "-ffdx"];
        args.extend(excludes.iter().map(String::as_str));
        let removed = self.git(&args).await?;
        let sources: Vec<String> = changed
            .split('\0')
            .chain(removed.lines().filter_map(|l| l.strip_prefix("Removing ")))
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect();
        if !sources.is_empty() {
            let root = self.path.clone();
            tokio::task::spawn_blocking(move || crate::bytecode::forget(&root, &sources))
                .await
                .map_err(|e| Error::internal(format!("forgetting bytecode caches: {e}")))?
                .map_err(stale_cache)?;
        }
        Ok(())
    }

    /// Applies a unified diff; fails without changing anything when it does not apply.
    pub async fn apply(&self, patch: &str) -> Result<()> {
        let file = tempfile::NamedTempFile::new()
            .map_err(|e| Error::internal(format!("temp file: {e}")))?;
        std::fs::write(file.path(), patch)
            .map_err(|e| Error::internal(format!("temp file: {e}")))?;
        let p = file.path().to_string_lossy().to_string();
        self.git(&["apply", "--check", &p]).await?;
        self.git(&["apply", "--index", &p]).await?;
        Ok(())
    }

    /// Applies a unified diff with a 3-way merge against the blobs it was
    /// made from, so hunks whose context moved since still apply; fails
    /// (leaving the worktree as it was) on a real conflict.
    pub async fn apply_3way(&self, patch: &str) -> Result<()> {
        let file = tempfile::NamedTempFile::new()
            .map_err(|e| Error::internal(format!("temp file: {e}")))?;
        std::fs::write(file.path(), patch)
            .map_err(|e| Error::internal(format!("temp file: {e}")))?;
        let p = file.path().to_string_lossy().to_string();
        if self.git(&["apply", "--check", &p]).await.is_ok() {
            self.git(&["apply", "--index", &p]).await?;
            return Ok(());
        }
        match self.git(&["apply", "--3way", "--index", &p]).await {
            Ok(_) => {
                // `--3way` leaves conflict markers and unmerged entries when
                // it cannot merge; that is a failure, not a patch.
                let unmerged = self.git(&["ls-files", "--unmerged"]).await?;
                if unmerged.trim().is_empty() {
                    return Ok(());
                }
                self.git(&["reset", "-q", "--hard"]).await?;
                Err(Error::conflict("the 3-way merge left conflicts"))
            }
            Err(e) => {
                let _ = self.git(&["reset", "-q", "--hard"]).await;
                Err(Error::conflict(format!(
                    "does not apply, even with a 3-way merge: {}",
                    e.message
                )))
            }
        }
    }

    /// Overwrites `paths` with their content at `rev` (the oracle's test
    /// files laid over a probe's source). The next [`Worktree::checkout_keeping`]
    /// undoes it.
    pub async fn overlay(&self, rev: &str, paths: &[String]) -> Result<()> {
        if paths.is_empty() {
            return Ok(());
        }
        let mut args = vec!["checkout", "-q", rev, "--"];
        args.extend(paths.iter().map(String::as_str));
        self.git(&args).await?;
        // The files changed under their caches (see `crate::bytecode`).
        crate::bytecode::forget(&self.path, paths).map_err(stale_cache)
    }

    /// Writes `content` to the repository-relative `path` and stages it.
    pub async fn write_file(&self, path: &str, content: &str) -> Result<()> {
        tracelab_domain::patch::validate(&[tracelab_domain::patch::FilePatch {
            old_path: path.to_string(),
            new_path: path.to_string(),
            header: String::new(),
            hunks: Vec::new(),
            modes: Vec::new(),
        }])?;
        // Refuse to write through a symlink anywhere on the path.
        let mut target = self.path.clone();
        for component in path.split('/') {
            target.push(component);
            let meta = tokio::fs::symlink_metadata(&target).await;
            if meta.as_ref().is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(Error::invalid(format!(
                    "patch refused: {path} goes through a symlink"
                )));
            }
        }
        tokio::fs::write(&target, content)
            .await
            .map_err(|e| Error::internal(format!("cannot write {path}: {e}")))?;
        self.git(&["add", "--", path]).await.map(|_| ())
    }

    /// Commits staged and tracked changes as TraceLab; returns the new sha.
    pub async fn commit_all(&self, message: &str) -> Result<String> {
        self.git(&[
            "-c",
            "user.name=TraceLab",
            "-c",
            "user.email=tracelab@localhost",
            "-c",
            "commit.gpgsign=false",
            "commit",
            "-q",
            "-a",
            "--no-verify",
            "-m",
            message,
        ])
        .await?;
        Ok(self.git(&["rev-parse", "HEAD"]).await?.trim().to_string())
    }

    /// `git revert --no-commit`, against the first parent for merges.
    pub async fn revert_no_commit(&self, commit: &str, is_merge: bool) -> Result<()> {
        let mut args = vec!["revert", "--no-commit"];
        if is_merge {
            args.extend(["-m", "1"]);
        }
        args.push(commit);
        match self.git(&args).await {
            Ok(_) => Ok(()),
            Err(e) => {
                let _ = self.git(&["revert", "--abort"]).await;
                let _ = self.git(&["reset", "-q", "--hard"]).await;
                Err(Error::conflict(format!(
                    "reverting {} does not apply cleanly: {}",
                    &commit[..commit.len().min(12)],
                    e.message
                )))
            }
        }
    }

    pub async fn diff_from(&self, base: &str) -> Result<String> {
        self.git(&[
            "diff",
            "--binary",
            "--no-color",
            "--no-ext-diff",
            base,
            "HEAD",
        ])
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates_read_the_same_from_every_git() {
        assert_eq!(
            same_offset_form("2026-01-01T00:07:00Z"),
            "2026-01-01T00:07:00+00:00"
        );
        assert_eq!(
            same_offset_form("2026-01-01T00:07:00+02:00"),
            "2026-01-01T00:07:00+02:00"
        );
    }
}
