//! Fixture repositories built with the `git` CLI in temporary directories.
//!
//! [`FixtureRepo`] is the low-level builder (commit files, branch, merge);
//! [`scenarios`] builds the histories TraceLab's tests and benchmarks need:
//! a regression behind a range where the test fails differently, a flaky test,
//! merges, long linear histories with slow tests.

pub mod backends;
pub mod git_server;
pub mod http_recorder;
pub mod ports;
pub mod scenarios;
pub mod secrets;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs git in `dir` and returns trimmed stdout; panics on failure (tests only).
pub fn git(dir: &Path, args: &[&str]) -> String {
    git_with(dir, args, &[])
}

/// [`git`] with extra environment variables: the one place tests run git.
fn git_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A git repository in a temporary directory, removed on drop.
#[derive(Debug)]
pub struct FixtureRepo {
    dir: tempfile::TempDir,
    /// Unix time of the first commit's clock, before its step.
    start: i64,
    /// Seconds the clock moves per commit or merge.
    step: i64,
    /// Seconds since `start`.
    tick: i64,
}

impl FixtureRepo {
    /// An empty repository on branch `main` with a fixed identity; commits
    /// are a minute apart from 2026-01-01.
    pub fn new() -> Self {
        Self::with_clock(1_767_225_600, 60)
    }

    /// [`FixtureRepo::new`] whose commits are dated `start + step`,
    /// `start + 2 * step`, … (Unix seconds): for tests and benchmarks where
    /// commit times matter (history windows, recency, days between commits).
    pub fn with_clock(start: i64, step: i64) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("tracelab-fixture-")
            .tempdir()
            .expect("temp dir");
        let repo = Self {
            dir,
            start,
            step,
            tick: 0,
        };
        repo.git(&["init", "-q", "-b", "main"]);
        repo.git(&["config", "user.name", "Fixture Author"]);
        repo.git(&["config", "user.email", "author@example.com"]);
        repo.git(&["config", "commit.gpgsign", "false"]);
        repo
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Keeps the directory after the fixture is dropped (for `tracelab demo --keep`).
    pub fn into_path(self) -> PathBuf {
        self.dir.keep()
    }

    /// The clock's current date in git's raw format.
    fn date(&self) -> String {
        format!("{} +0000", self.start + self.tick)
    }

    /// Runs git in the repository, dated by the fixture's clock, and returns
    /// trimmed stdout; panics on failure (fixtures only).
    pub fn git(&self, args: &[&str]) -> String {
        let date = self.date();
        git_with(
            self.path(),
            args,
            &[("GIT_AUTHOR_DATE", &date), ("GIT_COMMITTER_DATE", &date)],
        )
    }

    /// Writes one file (creating directories) without committing it.
    pub fn write(&self, path: &str, content: &str) {
        let full = self.path().join(path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(full, content).expect("write fixture file");
    }

    /// Writes files (creating directories), stages everything, commits, returns the sha.
    pub fn commit(&mut self, message: &str, files: &[(&str, &str)]) -> String {
        for (path, content) in files {
            self.write(path, content);
        }
        self.commit_staged(message)
    }

    /// Removes files and commits.
    pub fn remove(&mut self, message: &str, paths: &[&str]) -> String {
        for path in paths {
            std::fs::remove_file(self.path().join(path)).expect("remove fixture file");
        }
        self.commit_staged(message)
    }

    fn commit_staged(&mut self, message: &str) -> String {
        self.tick += self.step;
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
        self.head()
    }

    pub fn head(&self) -> String {
        self.git(&["rev-parse", "HEAD"])
    }

    pub fn checkout(&self, branch: &str) {
        self.git(&["checkout", "-q", branch]);
    }

    pub fn branch(&self, name: &str) {
        self.git(&["checkout", "-q", "-b", name]);
    }

    /// Merges `branch` into the current branch with a merge commit; returns its sha.
    pub fn merge(&mut self, branch: &str, message: &str) -> String {
        self.tick += self.step;
        self.git(&["merge", "-q", "--no-ff", "-m", message, branch]);
        self.head()
    }

    /// Worktrees git knows about, the main one included.
    pub fn worktrees(&self) -> Vec<String> {
        self.git(&["worktree", "list", "--porcelain"])
            .lines()
            .filter_map(|l| l.strip_prefix("worktree ").map(str::to_string))
            .collect()
    }
}

impl Default for FixtureRepo {
    fn default() -> Self {
        Self::new()
    }
}
