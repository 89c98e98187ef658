//! The settings of the hardened mode: the isolation asked for, the namespace
//! mechanisms, the resource limits and the file-system views.

use std::path::PathBuf;
use tracelab_domain::{Error, Result};

/// How the local sandbox isolates its commands.
#[derive(Debug, Clone, Default)]
pub enum Isolation {
    /// Commands run as the service's user, seeing its files, network and
    /// processes: a fixed environment, a wall-clock limit and output caps only.
    #[default]
    None,
    /// Namespaces, a separate uid and resource limits, as far as the host allows.
    Hardened(HardenedConfig),
}

/// A tool that creates the namespaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    /// bubblewrap (`bwrap`, Debian package `bubblewrap`): a new root holding
    /// only what is bound into it.
    Bwrap,
    /// util-linux `unshare`: the same namespaces over the host's file system,
    /// with hidden paths and the temporary folders masked by mounts.
    Unshare,
}

impl Mechanism {
    pub(super) fn name(self) -> &'static str {
        match self {
            Mechanism::Bwrap => "bwrap",
            Mechanism::Unshare => "unshare",
        }
    }
}

/// Resource limits (`setrlimit` through `prlimit`); `None` leaves one unset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// CPU time of each process (`RLIMIT_CPU`), seconds.
    pub cpu_seconds: Option<u64>,
    /// Virtual address space of each process (`RLIMIT_AS`), bytes. Not a
    /// memory limit: runtimes that reserve large address ranges (the JVM,
    /// V8) may need more.
    pub address_space_bytes: Option<u64>,
    /// Processes and threads of the command's real uid (`RLIMIT_NPROC`). It
    /// counts *every* process of that uid, so it bounds a fork bomb well only
    /// when commands run as their own uid (the service is root) or in their
    /// own user namespace; commands of concurrent sandboxes share it.
    pub processes: Option<u64>,
    /// Open file descriptors per process (`RLIMIT_NOFILE`).
    pub open_files: Option<u64>,
    /// Largest file a process may write (`RLIMIT_FSIZE`), bytes: a bound on
    /// each file, not a disk quota.
    pub file_size_bytes: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            cpu_seconds: Some(600),
            address_space_bytes: Some(4 << 30),
            processes: Some(256),
            open_files: Some(1024),
            file_size_bytes: Some(1 << 30),
        }
    }
}

impl Limits {
    pub(super) fn prlimit_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        let mut push = |flag: &str, value: Option<u64>| {
            if let Some(v) = value {
                args.push(format!("--{flag}={v}"));
            }
        };
        push("cpu", self.cpu_seconds);
        push("as", self.address_space_bytes);
        push("nproc", self.processes);
        push("nofile", self.open_files);
        push("fsize", self.file_size_bytes);
        args.push("--core=0".into());
        args
    }

    pub(super) fn summary(&self) -> String {
        fn bytes(b: u64) -> String {
            if b >= 1 << 30 && b.is_multiple_of(1 << 30) {
                format!("{} GiB", b >> 30)
            } else if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
                format!("{} MiB", b >> 20)
            } else {
                format!("{b} B")
            }
        }
        let mut parts = Vec::new();
        if let Some(v) = self.cpu_seconds {
            parts.push(format!("cpu {v} s"));
        }
        if let Some(v) = self.address_space_bytes {
            parts.push(format!("address space {}", bytes(v)));
        }
        if let Some(v) = self.processes {
            parts.push(format!("processes {v}"));
        }
        if let Some(v) = self.open_files {
            parts.push(format!("open files {v}"));
        }
        if let Some(v) = self.file_size_bytes {
            parts.push(format!("file size {}", bytes(v)));
        }
        parts.push("no core dumps".into());
        parts.join(", ")
    }
}

/// Settings of [`Isolation::Hardened`].
#[derive(Debug, Clone)]
pub struct HardenedConfig {
    /// Namespace tools to try, in order; the first whose probe succeeds is
    /// used. Empty: no namespaces (uid switch and limits only).
    pub mechanisms: Vec<Mechanism>,
    /// uid:gid commands run as when the service runs as root. Ignored
    /// otherwise (an unprivileged service cannot switch uid; its commands
    /// run as its own uid, in a user namespace where one is available).
    pub user: (u32, u32),
    pub limits: Limits,
    /// Paths the command must not see: the service's settings and secrets.
    /// Under `bwrap` only system folders are bound, so these matter where they
    /// lie inside one (e.g. `/etc/tracelab`); under `unshare` each one that
    /// exists is covered by an empty tmpfs (a folder) or `/dev/null` (a file).
    /// The service user's home folder (from the password database) is added
    /// at detection. The worktree stays visible even when inside one of them.
    pub hidden_paths: Vec<PathBuf>,
    /// Further folders bound read-only under `bwrap`, for toolchains outside
    /// the system folders (`/opt/...`). The system folders are always bound:
    /// `/usr`, `/bin`, `/sbin`, `/lib*`, and `/etc` minus hidden paths.
    pub read_only_paths: Vec<PathBuf>,
    /// Where to look for `bwrap`, `unshare`, `setpriv`, `prlimit`, `sh`,
    /// `mount` and `true` (this crate never reads the environment).
    pub tool_dirs: Vec<PathBuf>,
    /// Fail at provider creation unless a namespace mechanism works
    /// (instead of warning and running with the uid switch and limits only).
    pub require_namespaces: bool,
}

impl Default for HardenedConfig {
    fn default() -> Self {
        Self {
            mechanisms: vec![Mechanism::Bwrap, Mechanism::Unshare],
            user: (10001, 10001),
            limits: Limits::default(),
            hidden_paths: ["/etc/tracelab", "/run/secrets", "/var/run/secrets"]
                .into_iter()
                .map(PathBuf::from)
                .collect(),
            read_only_paths: Vec::new(),
            tool_dirs: ["/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin"]
                .into_iter()
                .map(PathBuf::from)
                .collect(),
            require_namespaces: false,
        }
    }
}

impl HardenedConfig {
    pub fn validate(&self) -> Result<()> {
        if self.user.0 == 0 || self.user.1 == 0 {
            return Err(Error::invalid(
                "hardened sandbox: the command user must not be root (uid or gid 0)",
            ));
        }
        if let Some(p) = self
            .hidden_paths
            .iter()
            .chain(&self.read_only_paths)
            .find(|p| !p.is_absolute())
        {
            return Err(Error::invalid(format!(
                "hardened sandbox: {} must be an absolute path",
                p.display()
            )));
        }
        let l = &self.limits;
        for (name, v, min) in [
            ("cpu_seconds", l.cpu_seconds, 1),
            ("address_space_bytes", l.address_space_bytes, 64 << 20),
            ("processes", l.processes, 8),
            ("open_files", l.open_files, 32),
            ("file_size_bytes", l.file_size_bytes, 4096),
        ] {
            if v.is_some_and(|v| v < min) {
                return Err(Error::invalid(format!(
                    "hardened sandbox: limit {name} below {min} leaves too little to run anything"
                )));
            }
        }
        Ok(())
    }
}

/// What a command's file-system view is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsView {
    /// The host's whole file system, limited only by file permissions.
    Host,
    /// The host's file system minus the hidden paths, with private `/tmp`,
    /// `/var/tmp`, `/dev/shm` and `/run` (`unshare`).
    HostMasked,
    /// A new root: system folders read-only, the worktree and the sandbox's
    /// home read-write, a private `/tmp`, nothing else (`bwrap`).
    Minimal,
}
