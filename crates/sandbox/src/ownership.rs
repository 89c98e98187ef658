//! Hands a worktree to the sandbox uid without giving it `.git`: the one
//! walker both sandboxes use (the local runner's hardened mode and the
//! Docker sandbox, `tracelab-sandbox-docker`).
//!
//! The engine runs git as root between commands, so files it creates are
//! root-owned, while commands run as an unprivileged uid that must write in
//! the worktree (caches, build output). Before every command, each path not
//! yet owned by that uid is `lchown`ed to it — never following symlinks —
//! except `.git` at any depth, which stays root's: sandboxed code must never
//! plant hooks or config that the engine's root git would obey (both
//! sandboxes also mount it read-only where they can).
//!
//! [`Top::Sticky`] keeps the worktree's top folder root's, group-writable
//! for the command gid with the sticky bit (`1775`), so commands can create
//! and remove their own entries there but cannot rename or delete root's
//! `.git` to put one of their own in its place — which matters where no
//! read-only mount of `.git` exists (the local runner without namespaces).
//!
//! A [`Walker`] remembers each directory's change stamp (mtime and ctime):
//! git writes files by creating and renaming entries, which changes their
//! directory's stamps, so a repeated walk only inspects the files of changed
//! directories; unchanged ones are only listed to find subdirectories. An
//! owner changed in place, without any directory entry changing, is not
//! noticed by a repeated walk (git never does that).

use std::collections::HashMap;
use std::fs::Metadata;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt, lchown};
use std::path::{Path, PathBuf};

type Stamp = (i64, i64, i64, i64);

fn stamp(meta: &Metadata) -> Stamp {
    (
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec(),
    )
}

/// What happens to the worktree's top folder itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Top {
    /// Handed over like everything else (a read-only mount protects `.git`).
    #[default]
    Owned,
    /// Stays its owner's; group = the command gid, mode `1775`.
    Sticky,
}

/// Incremental ownership hand-over for one worktree.
#[derive(Debug, Default)]
pub struct Walker {
    top: Top,
    seen: HashMap<PathBuf, Stamp>,
}

impl Walker {
    pub fn new(top: Top) -> Self {
        Self {
            top,
            seen: HashMap::new(),
        }
    }

    /// Walks `root` and lchowns what is not owned by `uid:gid`, skipping
    /// `.git` at any depth and the files of directories unchanged since the
    /// previous walk. Returns how many paths changed owner or mode.
    pub fn hand_over(&mut self, root: &Path, uid: u32, gid: u32) -> io::Result<usize> {
        let mut changed = 0;
        let mut seen = HashMap::with_capacity(self.seen.len());
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let meta = std::fs::symlink_metadata(&dir)?;
            let unchanged = self.seen.get(&dir) == Some(&stamp(&meta));
            if dir == root && self.top == Top::Sticky {
                let mode = (meta.mode() & 0o755) | 0o1070;
                if meta.gid() != gid {
                    lchown(&dir, None, Some(gid))?;
                    changed += 1;
                }
                if meta.mode() & 0o7777 != mode {
                    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode))?;
                    changed += 1;
                }
            } else if meta.uid() != uid || meta.gid() != gid {
                lchown(&dir, Some(uid), Some(gid))?;
                changed += 1;
            }
            for entry in std::fs::read_dir(&dir)? {
                let entry = entry?;
                if entry.file_name().eq_ignore_ascii_case(".git") {
                    continue;
                }
                let kind = entry.file_type()?; // from the listing: a symlink is not a dir
                if kind.is_dir() {
                    stack.push(entry.path());
                    continue;
                }
                if unchanged {
                    continue;
                }
                let meta = entry.metadata()?; // lstat: does not follow symlinks
                if meta.uid() != uid || meta.gid() != gid {
                    lchown(entry.path(), Some(uid), Some(gid))?;
                    changed += 1;
                }
            }
            // Stamp after our own changes, so they do not count as new ones.
            seen.insert(dir.clone(), stamp(&std::fs::symlink_metadata(&dir)?));
        }
        self.seen = seen;
        Ok(changed)
    }
}

/// One full walk (no memory of earlier walks); see [`Walker::hand_over`].
pub fn hand_over(root: &Path, uid: u32, gid: u32) -> io::Result<usize> {
    Walker::default().hand_over(root, uid, gid)
}

/// Lets other users *pass through* every folder above `worktree` (adds the
/// search bit `o+x`, never read or write), so a command running under the
/// sandbox uid can reach the worktree by its absolute path — interpreters
/// open their script by it (`python3 test.py` opens `/tmp/…/test.py`).
/// Temporary folders are created `0700`, which would stop it there. Only
/// folders this process owns are changed; the walk stops at the first one it
/// does not own. Returns how many folders changed.
pub fn let_others_traverse(worktree: &Path) -> io::Result<usize> {
    let me = std::fs::metadata(worktree)?.uid();
    let mut changed = 0;
    for dir in worktree.ancestors().skip(1) {
        let meta = std::fs::symlink_metadata(dir)?;
        if meta.uid() != me {
            break;
        }
        let mode = meta.mode() & 0o7777;
        if mode & 0o001 == 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode | 0o001))?;
            changed += 1;
        }
    }
    Ok(changed)
}
