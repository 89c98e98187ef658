//! What is in force for hardened commands, and its description.

#[cfg(doc)]
use super::Isolation;
use super::{FsView, Limits, Mechanism};
use std::fmt::Write as _;

/// What is in force for hardened commands, as probed at provider creation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guarantees {
    /// `None` for [`Isolation::None`] or when no namespace tool works.
    pub mechanism: Option<Mechanism>,
    /// Whether hardening was asked for at all.
    pub hardened: bool,
    /// uid:gid commands run as on the host when it differs from the service's.
    pub user: Option<(u32, u32)>,
    /// Commands run in a user namespace of their own (unprivileged service).
    pub user_namespace: bool,
    /// Resource limits applied to every command.
    pub limits: Option<Limits>,
    /// A network namespace with only loopback: no call out, no host ports.
    pub network: bool,
    /// A PID namespace with its own `/proc`: the service's processes (and
    /// their environments) are invisible; killing its init kills all of it.
    pub processes: bool,
    /// Own IPC (System V, POSIX queues) and UTS (hostname) namespaces.
    pub ipc_uts: bool,
    pub filesystem: FsView,
    /// Hidden paths are not visible to commands.
    pub hidden_paths: bool,
    /// `.git` of the worktree can be neither written nor replaced by
    /// commands: a read-only mount, or (without namespaces) root's ownership
    /// in a sticky top folder while commands run as another uid.
    pub git_read_only: bool,
    /// What is known *not* to be in force, one sentence each.
    pub not_in_force: Vec<String>,
}

impl Guarantees {
    /// What [`Isolation::None`] guarantees: nothing beyond the fixed environment and limits on time and output.
    pub fn none() -> Self {
        Self {
            mechanism: None,
            hardened: false,
            user: None,
            user_namespace: false,
            limits: None,
            network: false,
            processes: false,
            ipc_uts: false,
            filesystem: FsView::Host,
            hidden_paths: false,
            git_read_only: false,
            not_in_force: vec![
                "no isolation: commands run as the service's user with its network, files and processes visible (Isolation::None)".into(),
            ],
        }
    }

    /// The short name stored with every experiment: `local`, `local+bwrap`,
    /// `local+unshare` or `local+limits`.
    pub fn label(&self) -> String {
        match (self.hardened, self.mechanism) {
            (false, _) => "local".into(),
            (true, Some(m)) => format!("local+{}", m.name()),
            (true, None) => "local+limits".into(),
        }
    }

    /// One paragraph: what is in force, then what is not.
    pub fn describe(&self) -> String {
        let mut s = self.label();
        if !self.hardened {
            let _ = write!(s, ": NOT in force: {}", self.not_in_force.join("; "));
            return s;
        }
        let mut on = Vec::new();
        if self.network {
            on.push("network namespace (loopback only)".to_string());
        }
        if self.processes {
            on.push("PID namespace with its own /proc".to_string());
        }
        if self.ipc_uts {
            on.push("IPC and UTS namespaces".to_string());
        }
        match self.filesystem {
            FsView::Minimal => on.push(
                "new root: system folders read-only, worktree and home read-write, private /tmp"
                    .to_string(),
            ),
            FsView::HostMasked => {
                on.push("mount namespace: private /tmp, /var/tmp, /dev/shm and /run".to_string())
            }
            FsView::Host => {}
        }
        if self.hidden_paths {
            on.push("hidden paths masked".to_string());
        }
        if self.git_read_only {
            on.push(match (self.mechanism, self.user) {
                (None, Some((uid, _))) => {
                    format!(".git not writable (it stays root's; commands run as uid {uid})")
                }
                _ => ".git mounted read-only".to_string(),
            });
        }
        if let Some((uid, gid)) = self.user {
            on.push(format!(
                "runs as uid {uid} gid {gid} without capabilities, no_new_privs"
            ));
        }
        if self.user_namespace {
            on.push("own user namespace".to_string());
        }
        if let Some(l) = &self.limits {
            on.push(format!("limits: {}", l.summary()));
        }
        let _ = write!(s, ": in force: {}", on.join("; "));
        if !self.not_in_force.is_empty() {
            let _ = write!(s, ". NOT in force: {}", self.not_in_force.join("; "));
        }
        s
    }
}
