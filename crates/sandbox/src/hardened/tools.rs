//! Finding the external programs the hardened lines use.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Absolute paths of the external programs the hardened lines use.
#[derive(Debug, Clone, Default)]
pub(super) struct Tools {
    pub(super) bwrap: Option<PathBuf>,
    pub(super) unshare: Option<PathBuf>,
    pub(super) setpriv: Option<PathBuf>,
    pub(super) prlimit: Option<PathBuf>,
    pub(super) sh: Option<PathBuf>,
    pub(super) mount: Option<PathBuf>,
    /// iproute2, to bring loopback up under `unshare`.
    pub(super) ip: Option<PathBuf>,
    /// coreutils `env`, to give the spec's variables to the command alone.
    pub(super) env: Option<PathBuf>,
    pub(super) truth: Option<PathBuf>,
}

pub(super) fn executable(path: &Path) -> bool {
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

pub(super) fn find_tool(dirs: &[PathBuf], name: &str) -> Option<PathBuf> {
    dirs.iter().map(|d| d.join(name)).find(|p| executable(p))
}
