//! One worktree administrator per repository at a time, across processes.
//!
//! git's worktree administration is not safe against itself: `git worktree
//! add` writes `.git/worktrees/<name>/` file by file, while another `add -B`,
//! `branch -D`, `worktree list` or `worktree prune` on the same repository
//! reads every worktree's admin folder and dies on a half-written one
//! (`fatal: failed to read .git/worktrees/probe-0-…/commondir: Success`,
//! seen when a policy-started and a requested investigation of one
//! repository started together). Every such command TraceLab runs holds
//! this lock: an advisory file lock (`flock`) in the repository's common git
//! folder, so the investigator and the verifiers, separate processes in the
//! fleet, exclude each other too. The lock is released when the guard drops
//! (or the process dies).

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use tracelab_domain::{Error, Result};

/// The lock file's name inside the common git folder.
const LOCK_FILE: &str = "tracelab-worktrees.lock";

/// Held while a worktree-administering git command runs.
#[derive(Debug)]
pub struct WorktreeAdminLock {
    _file: File,
}

impl WorktreeAdminLock {
    /// Waits for the lock of the repository at `repo` (blocking).
    pub fn acquire(repo: &Path) -> Result<Self> {
        let (path, file) = open(repo)?;
        file.lock().map_err(|e| {
            Error::unavailable(format!("cannot lock {}: {e}", path.display())).with_source(e)
        })?;
        Ok(Self { _file: file })
    }

    /// The lock if it can be had within `patience`, else `None`. For
    /// `Drop` code, which runs on an async runtime's thread: waiting there
    /// without bound could stall the task that holds the lock (a worker
    /// blocked in `Drop` cannot poll it), so cleanup goes ahead unlocked
    /// after a while instead of deadlocking.
    pub fn acquire_within(repo: &Path, patience: std::time::Duration) -> Option<Self> {
        let (_, file) = open(repo).ok()?;
        let deadline = std::time::Instant::now() + patience;
        loop {
            match file.try_lock() {
                Ok(()) => return Some(Self { _file: file }),
                Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(_) => return None,
            }
        }
    }

    /// [`acquire`](Self::acquire) off the async runtime's threads.
    pub async fn acquire_async(repo: &Path) -> Result<Self> {
        let repo = repo.to_path_buf();
        tokio::task::spawn_blocking(move || Self::acquire(&repo))
            .await
            .map_err(|e| Error::internal(format!("worktree lock task stopped: {e}")))?
    }
}

/// The lock file of the repository at `repo`, opened (created if missing).
fn open(repo: &Path) -> Result<(PathBuf, File)> {
    let path = common_dir(repo)?.join(LOCK_FILE);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| {
            Error::unavailable(format!("cannot open {}: {e}", path.display())).with_source(e)
        })?;
    Ok((path, file))
}

/// The repository's common git folder (`.git` of the main worktree, or the
/// bare repository itself).
fn common_dir(repo: &Path) -> Result<PathBuf> {
    let out = std::process::Command::new("git")
        .args(["-c", "safe.directory=*", "-C"])
        .arg(repo)
        .args(["rev-parse", "--git-common-dir"])
        .output()
        .map_err(|e| Error::unavailable(format!("cannot run git: {e}")).with_source(e))?;
    if !out.status.success() {
        return Err(Error::invalid(format!(
            "{} is not a git repository",
            repo.display()
        )));
    }
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    Ok(if dir.is_absolute() {
        dir
    } else {
        repo.join(dir)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn holders_exclude_each_other() {
        let repo = tracelab_testkit::FixtureRepo::new();
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (path, inside, most) =
                    (repo.path().to_path_buf(), inside.clone(), most.clone());
                std::thread::spawn(move || {
                    for _ in 0..5 {
                        // Separate opens, as separate processes would.
                        let _guard = WorktreeAdminLock::acquire(&path).unwrap();
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(2));
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(most.load(Ordering::SeqCst), 1, "one holder at a time");
        assert!(repo.path().join(".git").join(LOCK_FILE).exists());
    }

    #[test]
    fn bounded_waits_give_up_while_held_and_succeed_when_free() {
        let repo = tracelab_testkit::FixtureRepo::new();
        let short = std::time::Duration::from_millis(50);
        let held = WorktreeAdminLock::acquire(repo.path()).unwrap();
        assert!(WorktreeAdminLock::acquire_within(repo.path(), short).is_none());
        drop(held);
        assert!(WorktreeAdminLock::acquire_within(repo.path(), short).is_some());
    }
}
