//! The file-system half of patch safety, run by the engine before `git apply`.

use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path};
use tracelab_domain::patch;
use tracelab_domain::{Error, Result};

/// Refuses a patch that breaks the domain rules ([`patch::validate`]:
/// relative paths, no `..`, nothing in `.git/`, no symlinks or submodules
/// created) or that, in this worktree, would go through or onto an existing
/// symlink, onto a hard-linked file, or resolve outside the worktree.
pub fn check_patch_paths(worktree: &Path, patch_text: &str) -> Result<()> {
    let files = patch::parse(patch_text)?;
    patch::validate(&files)?;
    let root = worktree.canonicalize().map_err(|e| {
        Error::invalid(format!(
            "worktree {} is not usable: {e}",
            worktree.display()
        ))
    })?;
    for path in patch::touched_paths(&files) {
        check_one(&root, &path)?;
    }
    Ok(())
}

fn check_one(root: &Path, path: &str) -> Result<()> {
    let refuse = |why: &str| Error::invalid(format!("patch refused: {path:?} {why}"));
    let mut current = root.to_path_buf();
    let mut deepest_existing = root.to_path_buf();
    let mut components = Path::new(path).components().peekable();
    while let Some(component) = components.next() {
        match component {
            Component::Normal(name) => current.push(name),
            Component::CurDir => continue,
            _ => return Err(refuse("is not a plain relative path")),
        }
        let meta = match std::fs::symlink_metadata(&current) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
            Err(e) => {
                return Err(Error::internal(format!(
                    "cannot inspect {}: {e}",
                    current.display()
                )));
            }
        };
        if meta.file_type().is_symlink() {
            return Err(refuse("goes through a symlink in the worktree"));
        }
        let last = components.peek().is_none();
        if !last && !meta.is_dir() {
            return Err(refuse("goes through something that is not a directory"));
        }
        if last && meta.is_file() && meta.nlink() > 1 {
            return Err(refuse(
                "is a hard-linked file (it may be shared with a path outside the worktree)",
            ));
        }
        deepest_existing = current.clone();
    }
    let resolved = deepest_existing.canonicalize().map_err(|e| {
        Error::internal(format!(
            "cannot resolve {}: {e}",
            deepest_existing.display()
        ))
    })?;
    if !resolved.starts_with(root) {
        return Err(refuse("resolves outside the worktree"));
    }
    Ok(())
}
