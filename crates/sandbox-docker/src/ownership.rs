//! Hands a worktree to the container user without giving it `.git`.
//!
//! The engine runs git on the host as root between commands, so files it
//! creates are root-owned; the container runs as an unprivileged uid that must
//! write in the worktree (caches, build output). Every path not yet owned by
//! that uid is `lchown`ed to it — never following symlinks — except `.git`,
//! which stays as it is and is additionally mounted read-only in the container
//! (see `provider.rs`): sandboxed code must never be able to plant git hooks
//! or config that the engine's root git would later obey.
//!
//! A [`Walker`] remembers each directory's change stamp (mtime and ctime):
//! creating, removing or renaming an entry — which is how git writes files —
//! changes its directory's stamps, so on the next walk only changed
//! directories have their files inspected; unchanged ones are only listed to
//! find subdirectories. An owner changed in place, without any directory
//! entry changing, is not noticed by a repeated walk (git never does that).

use std::collections::HashMap;
use std::fs::Metadata;
use std::io;
use std::os::unix::fs::{MetadataExt, lchown};
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

/// Incremental ownership hand-over for one worktree.
#[derive(Debug, Default)]
pub struct Walker {
    seen: HashMap<PathBuf, Stamp>,
}

impl Walker {
    /// Walks `root` and lchowns what is not owned by `uid:gid`, skipping
    /// `.git` at any depth and the files of directories unchanged since the
    /// previous walk. Returns how many paths changed owner.
    pub fn hand_over(&mut self, root: &Path, uid: u32, gid: u32) -> io::Result<usize> {
        let mut changed = 0;
        let mut seen = HashMap::with_capacity(self.seen.len());
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let meta = std::fs::symlink_metadata(&dir)?;
            let unchanged = self.seen.get(&dir) == Some(&stamp(&meta));
            if meta.uid() != uid || meta.gid() != gid {
                lchown(&dir, Some(uid), Some(gid))?;
                changed += 1;
            }
            for entry in std::fs::read_dir(&dir)? {
                let entry = entry?;
                if entry.file_name().eq_ignore_ascii_case(".git") {
                    continue;
                }
                let kind = entry.file_type()?; // from the directory listing: no stat
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
