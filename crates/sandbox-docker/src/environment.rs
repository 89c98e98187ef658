//! What a command finds in the container: a fixed minimal environment and
//! a worktree handed to its uid.

use crate::ownership;
use std::path::Path;
use tracelab_domain::{Error, Result};

/// The environment every command starts from; the spec's variables go on top.
pub const BASE_ENV: [(&str, &str); 4] = [
    (
        "PATH",
        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    ),
    ("HOME", "/tmp"),
    ("LANG", "C.UTF-8"),
    ("TZ", "UTC"),
];

/// The fixed environment with `extra` applied on top (same key replaces).
pub fn environment(extra: &[(String, String)]) -> Vec<String> {
    let mut env: Vec<(String, String)> = BASE_ENV
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    for (key, value) in extra {
        match env.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value.clone(),
            None => env.push((key.clone(), value.clone())),
        }
    }
    env.into_iter().map(|(k, v)| format!("{k}={v}")).collect()
}

/// Runs an ownership walk off the async threads and gives the walker back.
pub(crate) async fn hand_over(
    mut walker: ownership::Walker,
    root: &Path,
    (uid, gid): (u32, u32),
) -> Result<ownership::Walker> {
    let root = root.to_path_buf();
    tokio::task::spawn_blocking(move || walker.hand_over(&root, uid, gid).map(|_| walker))
        .await
        .map_err(|e| Error::internal(format!("worktree ownership task failed: {e}")))?
        .map_err(|e| Error::internal(format!("cannot hand the worktree to uid {uid}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_is_fixed_then_extended() {
        let env = environment(&[
            ("TZ".into(), "Europe/Paris".into()),
            ("SEED".into(), "1".into()),
        ]);
        assert_eq!(
            env,
            [
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "HOME=/tmp",
                "LANG=C.UTF-8",
                "TZ=Europe/Paris",
                "SEED=1"
            ]
        );
    }
}
