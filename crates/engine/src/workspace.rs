//! An investigation's scratch space: a temporary directory holding every
//! worktree it creates. Dropping it removes the worktrees and the branches it
//! was not told to keep, synchronously, so an interrupted investigation
//! (Ctrl-C drops the pipeline future) leaves nothing behind.

use crate::git::{Git, Worktree};
use crate::worktree_lock::WorktreeAdminLock;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use tracelab_domain::{Error, Result};

#[derive(Debug)]
pub struct Workspace {
    git: Git,
    root: PathBuf,
    worktrees: Mutex<Vec<PathBuf>>,
    branches: Mutex<Vec<String>>,
    kept_branches: Mutex<Vec<String>>,
    /// `git worktree add` is not safe to run concurrently in one repository
    /// (it races on `.git/worktrees/`), so additions take turns.
    adding: tokio::sync::Mutex<()>,
}

impl Workspace {
    /// Creates `<tmp>/tracelab-<label>-XXXX`.
    pub fn create(git: Git, label: &str) -> Result<Self> {
        let root = tempfile::Builder::new()
            .prefix(&format!("tracelab-{label}-"))
            .tempdir()
            .map_err(|e| Error::internal(format!("cannot create a workspace directory: {e}")))?
            .keep();
        Ok(Self {
            git,
            root,
            worktrees: Mutex::new(Vec::new()),
            branches: Mutex::new(Vec::new()),
            kept_branches: Mutex::new(Vec::new()),
            adding: tokio::sync::Mutex::new(()),
        })
    }

    pub fn git(&self) -> &Git {
        &self.git
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the worktree `name` goes. Its file name is unique to this
    /// workspace: git names a worktree's admin folder after it
    /// (`.git/worktrees/<name>`, `<name>1` when taken), and two workspaces
    /// adding `probe-0` to one repository at once (two investigations, or
    /// the investigator and a verifier) race for the same folder.
    fn worktree_path(&self, name: &str) -> PathBuf {
        let unique = self
            .root
            .file_name()
            .map(|n| {
                n.to_string_lossy()
                    .rsplit('-')
                    .next()
                    .unwrap_or("")
                    .to_string()
            })
            .unwrap_or_default();
        self.root.join(format!("{name}-{unique}"))
    }

    /// A detached worktree named `name` at `rev`. Only its registration
    /// takes turns with other additions; its files are written beside
    /// theirs (a pool's first worktrees would otherwise be checked out one
    /// after the other, `k − 1` checkouts of a large repository lost).
    pub async fn detached(&self, name: &str, rev: &str) -> Result<Worktree> {
        let path = {
            let _turn = self.adding.lock().await;
            let path = self.worktree_path(name);
            self.worktrees.lock().expect("lock").push(path.clone());
            self.git.add_unpopulated_worktree(&path, rev).await?;
            path
        };
        self.git.populate_worktree(&path).await?;
        Ok(Worktree { path })
    }

    /// A worktree on a new branch `branch` starting at `rev`.
    pub async fn on_branch(&self, name: &str, rev: &str, branch: &str) -> Result<Worktree> {
        let _turn = self.adding.lock().await;
        let path = self.worktree_path(name);
        if path.exists() {
            // An earlier attempt in this workspace under the same number
            // (hypotheses proposed again after the re-runs finished).
            self.git.remove_worktree(&path).await?;
        }
        self.worktrees.lock().expect("lock").push(path.clone());
        self.branches.lock().expect("lock").push(branch.to_string());
        match self.git.add_worktree(&path, rev, Some(branch)).await {
            Ok(()) => {}
            Err(e) => {
                // The branch of one hypothesis is only ever used by the one
                // process verifying it; if another worktree holds it, an
                // earlier attempt died (kill -9, lost machine) and left it.
                let Some(stale) = worktree_holding(&e.message) else {
                    return Err(e);
                };
                tracing::warn!(
                    branch,
                    stale,
                    "removing the worktree a crashed attempt left on this branch"
                );
                self.git.remove_worktree(Path::new(stale)).await?;
                self.git.add_worktree(&path, rev, Some(branch)).await?;
            }
        }
        Ok(Worktree { path })
    }

    /// Keeps `branch` when the workspace is cleaned (the winner's, for review).
    pub fn keep_branch(&self, branch: &str) {
        self.kept_branches
            .lock()
            .expect("lock")
            .push(branch.to_string());
    }

    fn git_sync(&self, args: &[&str]) {
        let _ = std::process::Command::new("git")
            .args([
                "-c",
                "safe.directory=*",
                "-c",
                "core.hooksPath=/dev/null",
                "-C",
            ])
            .arg(self.git.path())
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
}

impl Workspace {
    /// Worktrees git still lists under this workspace's root.
    fn registered_here(&self) -> Vec<String> {
        let Ok(out) = std::process::Command::new("git")
            .args(["-c", "safe.directory=*", "-C"])
            .arg(self.git.path())
            .args(["worktree", "list", "--porcelain"])
            .output()
        else {
            return Vec::new();
        };
        let root = self.root.to_string_lossy().to_string();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.strip_prefix("worktree "))
            .filter(|p| p.starts_with(&root))
            .map(str::to_string)
            .collect()
    }
}

/// How long cleanup on drop waits for the worktree lock before going ahead.
const DROP_LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_secs(10);

impl Drop for Workspace {
    fn drop(&mut self) {
        let worktrees = std::mem::take(&mut *self.worktrees.lock().expect("lock"));
        let mut paths: Vec<String> = worktrees
            .iter()
            .map(|p| p.to_string_lossy().to_string())
            .collect();
        // A `git worktree add` interrupted with the investigation (Ctrl-C)
        // may register its worktree just after the first pass: look again
        // for a moment, until nothing under this root is registered.
        for _ in 0..20 {
            // Unlocked only when the repository is gone or the lock stays
            // taken (see `acquire_within`).
            let admin = WorktreeAdminLock::acquire_within(self.git.path(), DROP_LOCK_PATIENCE);
            for path in &paths {
                self.git_sync(&["worktree", "remove", "--force", "--force", path]);
            }
            let _ = std::fs::remove_dir_all(&self.root);
            self.git_sync(&["worktree", "prune"]);
            paths = self.registered_here();
            drop(admin);
            if paths.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let kept = self.kept_branches.lock().expect("lock").clone();
        let _admin = WorktreeAdminLock::acquire_within(self.git.path(), DROP_LOCK_PATIENCE);
        for branch in self
            .branches
            .lock()
            .expect("lock")
            .iter()
            .filter(|b| !kept.contains(b))
        {
            self.git_sync(&["branch", "-D", "-q", branch]);
        }
    }
}

/// The path in git's "cannot force update the branch '…' used by worktree at
/// '<path>'" refusal.
fn worktree_holding(message: &str) -> Option<&str> {
    let rest = message.split("used by worktree at '").nth(1)?;
    rest.split('\'').next().filter(|p| !p.is_empty())
}

#[cfg(test)]
mod tests {
    #[test]
    fn finds_the_worktree_holding_a_branch() {
        let m = "git worktree: fatal: cannot force update the branch 'ai-debug/K-h1' used by worktree at '/tmp/tracelab-x/h1'";
        assert_eq!(super::worktree_holding(m), Some("/tmp/tracelab-x/h1"));
        assert_eq!(super::worktree_holding("fatal: other"), None);
    }
}
