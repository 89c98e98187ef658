//! The cache directory on disk: where a repository's mirror, lock and lease
//! files live, what a leftover looks like, how big everything is, and which
//! mirrors go when the budget is exceeded.
//!
//! ```text
//! <cache_dir>/
//!   3f2a…c1-shop.git/      the mirror (only ever appears by rename, complete)
//!     tracelab-used        mtime = last use (LRU)
//!     tracelab-fetched     when the last successful fetch finished (ns since epoch)
//!   3f2a…c1-shop.lock      exclusive flock: cloning, fetching, evicting
//!   3f2a…c1-shop.lease     shared flock per live `Mirror`: not evictable
//!   3f2a…c1-shop.tmp-…     a clone in progress, or one cut mid-way
//!   3f2a…c1-shop.del-…     a mirror being deleted
//! ```
//!
//! Lock and lease files are never deleted: deleting a lock file others may
//! be waiting on lets two holders lock two different files.

use crate::url::RepoUrl;
use sha2::{Digest, Sha256};
use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

const USED: &str = "tracelab-used";
const FETCHED: &str = "tracelab-fetched";
const TEMP: &str = ".tmp-";
const DELETED: &str = ".del-";

/// One repository's names in the cache directory.
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    dir: PathBuf,
    stem: String,
    pub mirror: PathBuf,
}

impl Slot {
    /// `<first 16 hex of sha256(key)>-<last path segment, sanitised>`: the
    /// hash makes the name unique per key, the segment makes it readable.
    pub(crate) fn new(dir: &Path, url: &RepoUrl) -> Self {
        let hash = Sha256::digest(url.key().as_bytes());
        let hex: String = hash.iter().take(8).map(|b| format!("{b:02x}")).collect();
        let last = url.segments().last().unwrap_or("repo");
        let mut name: String = last
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        name = name.trim_start_matches('.').to_string();
        if name.is_empty() {
            name = "repo".into();
        }
        let stem = format!("{hex}-{name}");
        Self {
            dir: dir.to_path_buf(),
            mirror: dir.join(format!("{stem}.git")),
            stem,
        }
    }

    pub(crate) fn lock_path(&self) -> PathBuf {
        self.dir.join(format!("{}.lock", self.stem))
    }

    pub(crate) fn lease_path(&self) -> PathBuf {
        self.dir.join(format!("{}.lease", self.stem))
    }

    /// A fresh sibling to clone into before renaming it into place.
    pub(crate) fn temp_path(&self) -> PathBuf {
        self.dir.join(format!("{}{TEMP}{}", self.stem, unique()))
    }

    /// Removes leftovers of cut clones and interrupted deletions. Call with
    /// the repository's lock held (then nobody is cloning it).
    pub(crate) fn sweep(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(rest) = name.strip_prefix(&self.stem)
                && (rest.starts_with(TEMP) || rest.starts_with(DELETED))
            {
                tracing::info!(leftover = %entry.path().display(), "removing a leftover of an interrupted clone or deletion");
                remove(&entry.path());
            }
        }
    }

    /// Deletes the mirror: first renamed aside (so it vanishes at once and
    /// a half-deleted mirror never looks like one), then removed.
    pub(crate) fn discard(&self) {
        let aside = self.dir.join(format!("{}{DELETED}{}", self.stem, unique()));
        if std::fs::rename(&self.mirror, &aside).is_ok() {
            remove(&aside);
        } else {
            remove(&self.mirror);
        }
    }
}

/// Removes a directory tree; what cannot be removed now is swept later.
pub(crate) fn remove(path: &Path) {
    if let Err(e) = std::fs::remove_dir_all(path)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(path = %path.display(), error = %e, "cannot remove");
    }
}

fn unique() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}-{}",
        std::process::id(),
        nanos(SystemTime::now()),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn nanos(t: SystemTime) -> u128 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

fn open(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
}

/// The exclusive lock at `path`, waiting for it (blocking).
pub(crate) fn lock(path: &Path) -> std::io::Result<File> {
    let file = open(path)?;
    file.lock()?;
    Ok(file)
}

/// The exclusive lock at `path` if nobody holds it (or a shared one) now.
fn try_lock(path: &Path) -> Option<File> {
    let file = open(path).ok()?;
    match file.try_lock() {
        Ok(()) => Some(file),
        Err(TryLockError::WouldBlock | TryLockError::Error(_)) => None,
    }
}

/// A shared lock at `path`: held by each live `Mirror` so that no process
/// evicts it. Only evictors take it exclusively, and they hold the
/// repository's lock, which the caller holds, so this does not wait.
pub(crate) fn lease(path: &Path) -> std::io::Result<File> {
    let file = open(path)?;
    file.lock_shared()?;
    Ok(file)
}

/// Records a use of the mirror (for LRU eviction).
pub(crate) fn touch_used(mirror: &Path) {
    let stamp = || {
        let file = open(&mirror.join(USED))?;
        file.set_modified(SystemTime::now())
    };
    if let Err(e) = stamp() {
        tracing::debug!(mirror = %mirror.display(), error = %e, "cannot record the mirror's use");
    }
}

fn last_used(mirror: &Path) -> SystemTime {
    std::fs::metadata(mirror.join(USED))
        .or_else(|_| std::fs::metadata(mirror))
        .and_then(|m| m.modified())
        .unwrap_or(UNIX_EPOCH)
}

/// Records that a fetch into `mirror` finished successfully now.
pub(crate) fn mark_fetched(mirror: &Path) {
    let _ = std::fs::write(mirror.join(FETCHED), nanos(SystemTime::now()).to_string());
}

/// Whether a fetch into `mirror` finished at or after `since`: a caller
/// that waited for that fetch shares its result instead of fetching again.
/// Written as content, not mtime: file times come from a coarse clock.
pub(crate) fn fetched_since(mirror: &Path, since: SystemTime) -> bool {
    std::fs::read_to_string(mirror.join(FETCHED))
        .ok()
        .and_then(|s| s.trim().parse::<u128>().ok())
        .is_some_and(|at| at >= nanos(since))
}

/// Bytes of the files under `path` (symlinks not followed).
pub(crate) fn size(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    std::fs::read_dir(path)
        .map(|entries| entries.flatten().map(|e| size(&e.path())).sum())
        .unwrap_or(0)
}

/// Bytes of everything in the cache directory.
pub(crate) fn used_bytes(dir: &Path) -> u64 {
    size(dir)
}

/// Removes leftovers (`.tmp-`, `.del-`) of repositories nobody holds the
/// lock of: at start-up, a crashed process's cut clones.
pub(crate) fn sweep_all(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let stem = name
            .split_once(TEMP)
            .or_else(|| name.split_once(DELETED))
            .map(|(stem, _)| stem);
        if let Some(stem) = stem
            && let Some(_held) = try_lock(&dir.join(format!("{stem}.lock")))
        {
            remove(&entry.path());
        }
    }
}

/// Evicts least-recently-used mirrors until everything fits in `budget`,
/// skipping `keep`, mirrors being fetched (lock held) and mirrors in use
/// (a lease held, in any process). Returns the evicted mirrors.
pub(crate) fn evict(dir: &Path, budget: u64, keep: &Path) -> Vec<PathBuf> {
    let mut total = used_bytes(dir);
    if total <= budget {
        return Vec::new();
    }
    let mut mirrors: Vec<(SystemTime, PathBuf)> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "git") && p != keep)
                .map(|p| (last_used(&p), p))
                .collect()
        })
        .unwrap_or_default();
    mirrors.sort();
    let mut evicted = Vec::new();
    for (_, mirror) in mirrors {
        if total <= budget {
            break;
        }
        let stem = mirror.file_stem().unwrap_or_default().to_string_lossy();
        let Some(_lock) = try_lock(&dir.join(format!("{stem}.lock"))) else {
            continue;
        };
        let Some(_lease) = try_lock(&dir.join(format!("{stem}.lease"))) else {
            continue;
        };
        let bytes = size(&mirror);
        let slot = Slot {
            dir: dir.to_path_buf(),
            stem: stem.into_owned(),
            mirror: mirror.clone(),
        };
        slot.discard();
        total = total.saturating_sub(bytes);
        evicted.push(mirror);
    }
    evicted
}
