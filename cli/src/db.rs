//! Where the embedded store is when `--db` does not say, and who acts on
//! it: shared by the commands, `parse` and `experience`, which open the same
//! store.

use std::path::PathBuf;

/// `$XDG_DATA_HOME/tracelab/tracelab.db`, else under `~/.local/share`, else
/// the temporary folder.
pub(crate) fn default_db() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("tracelab/tracelab.db")
}

/// `$USER` (or `$LOGNAME`), else `local`: who the store records as acting.
pub(crate) fn os_user() -> String {
    ["USER", "LOGNAME"]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .map(|u| u.trim().to_string())
        .find(|u| !u.is_empty())
        .unwrap_or_else(|| "local".into())
}
