//! Hands a worktree to the container user without giving it `.git`.
//!
//! The engine runs git on the host as root between commands, so files it
//! creates are root-owned; the container runs as an unprivileged uid that must
//! write in the worktree (caches, build output). Every path not yet owned by
//! that uid is `lchown`ed to it — never following symlinks — except `.git`,
//! which stays as it is and is additionally mounted read-only in the container
//! (see `sandbox.rs`): sandboxed code must never be able to plant git hooks or
//! config that the engine's root git would later obey.

use std::io;
use std::os::unix::fs::{MetadataExt, lchown};
use std::path::Path;

/// Walks `root` and lchowns what is not owned by `uid:gid`. Returns how many
/// paths changed. Skips `.git` at any depth.
pub fn hand_over(root: &Path, uid: u32, gid: u32) -> io::Result<usize> {
    let mut changed = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let meta = std::fs::symlink_metadata(&dir)?;
        if meta.uid() != uid || meta.gid() != gid {
            lchown(&dir, Some(uid), Some(gid))?;
            changed += 1;
        }
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            if entry.file_name().eq_ignore_ascii_case(".git") {
                continue;
            }
            let path = entry.path();
            let meta = entry.metadata()?; // does not follow symlinks
            if meta.is_dir() {
                stack.push(path);
            } else if meta.uid() != uid || meta.gid() != gid {
                lchown(&path, Some(uid), Some(gid))?;
                changed += 1;
            }
        }
    }
    Ok(changed)
}
