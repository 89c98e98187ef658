//! The hardened mode of the local sandbox: namespaces, a separate uid and
//! resource limits, from tools Debian ships, as far as the kernel allows.
//!
//! A hardened command line is built from up to four layers, outermost first:
//!
//! 1. a namespace tool: `bwrap` (bubblewrap: new network, PID, IPC, UTS and
//!    mount namespaces; a new root holding only the system folders read-only,
//!    the worktree read-write with its `.git` read-only, a private `/tmp`),
//!    or, without it, `unshare` (the same namespaces, but the host's file
//!    system stays visible minus masked paths, via a small `sh` mount script);
//!    or neither when the kernel refuses namespaces (many Kubernetes pods);
//! 2. `setpriv`: when the service runs as root, the command runs as a separate
//!    unprivileged uid:gid without capabilities or supplementary groups and
//!    with `no_new_privs`;
//! 3. `prlimit`: CPU time, address space, processes, open files, file size,
//!    no core dumps;
//! 4. the command's own argv.
//!
//! The workspace forbids `unsafe`, so there is no `pre_exec`: every step is an
//! external program. What actually works is found once, by [`Hardening::detect`]
//! running the candidate lines with `true`, and reported as [`Guarantees`]:
//! nothing is claimed that a probe did not show.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
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
    fn name(self) -> &'static str {
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
    fn prlimit_args(&self) -> Vec<String> {
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

    fn summary(&self) -> String {
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

/// Absolute paths of the external programs the hardened lines use.
#[derive(Debug, Clone, Default)]
struct Tools {
    bwrap: Option<PathBuf>,
    unshare: Option<PathBuf>,
    setpriv: Option<PathBuf>,
    prlimit: Option<PathBuf>,
    sh: Option<PathBuf>,
    mount: Option<PathBuf>,
    /// iproute2, to bring loopback up under `unshare`.
    ip: Option<PathBuf>,
    /// coreutils `env`, to give the spec's variables to the command alone.
    env: Option<PathBuf>,
    truth: Option<PathBuf>,
}

fn executable(path: &Path) -> bool {
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn find_tool(dirs: &[PathBuf], name: &str) -> Option<PathBuf> {
    dirs.iter().map(|d| d.join(name)).find(|p| executable(p))
}

/// The variant of a mechanism that the probe found working.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    /// bwrap as root: no user namespace, `setpriv` switches uid inside.
    BwrapRoot,
    /// bwrap as an unprivileged user: its own user namespace, optionally
    /// forbidding further ones.
    BwrapUser { disable_userns: bool },
    /// unshare as root, the mount script, then `setpriv`.
    UnshareRoot,
    /// unshare as an unprivileged user: root of a user namespace for the
    /// mount script, then a nested user namespace as the service's uid, in
    /// which the masks are locked and cannot be unmounted.
    UnshareUser,
    /// No namespaces.
    Bare,
}

/// System folders bound read-only under bwrap: a real folder is bound, a
/// merged-/usr symlink (`/bin -> usr/bin`) recreated.
#[derive(Debug, Clone)]
enum SystemEntry {
    Bind(PathBuf),
    Symlink { target: PathBuf, at: PathBuf },
}

/// The detected hardening: which lines work here and what they guarantee.
#[derive(Debug)]
pub(crate) struct Hardening {
    config: HardenedConfig,
    tools: Tools,
    variant: Variant,
    /// The service runs as root: commands switch to `config.user`.
    root: bool,
    /// Canonical hidden paths (the home folder of the service user added).
    hidden: Vec<PathBuf>,
    system: Vec<SystemEntry>,
    guarantees: Guarantees,
}

/// The mount script run by `sh` inside `unshare`'s namespaces (as root of
/// them): positional arguments are `mount`, `ip` (or empty), the worktree,
/// the home folder, the hidden paths, `--`, then the rest of the command
/// line. Nothing is interpolated into the script itself. A new network
/// namespace starts with loopback down (bubblewrap brings it up itself), so
/// `ip` brings it up for tests that listen on localhost.
///
/// The worktree and home are first bound aside onto a fresh `/dev/shm`, so
/// masking an ancestor of them (a hidden home folder, `/tmp`) does not hide
/// them, and moved back last. The final `cd` matters: a working directory
/// inherited from before the mounts would still reach, through `..`, what
/// the masks cover. The command is not `exec`ed: `sh` stays the namespace's
/// init, because an init ignores signals it has no handler for, which would
/// make a test's `kill(getpid(), SIGTERM)` a no-op. As under bubblewrap, a
/// command killed by signal N then ends with exit status 128+N.
const UNSHARE_SCRIPT: &str = r#"set -eu
m=$1 ip=$2 wt=$3 home=$4
shift 4
if [ -n "$ip" ]; then $ip link set lo up; fi
$m -t tmpfs -o nosuid,nodev,mode=1777 tmpfs /dev/shm
mkdir /dev/shm/.tl-wt /dev/shm/.tl-home
$m --bind "$wt" /dev/shm/.tl-wt
$m --bind "$home" /dev/shm/.tl-home
while [ "$1" != -- ]; do
  if [ -d "$1" ]; then
    $m -t tmpfs -o nosuid,nodev,mode=755,size=64k tmpfs "$1"
  elif [ -e "$1" ]; then
    $m --bind /dev/null "$1"
  fi
  shift
done
shift
for d in /tmp /var/tmp; do
  if [ -d "$d" ] && [ ! -L "$d" ]; then $m -t tmpfs -o nosuid,nodev,mode=1777 tmpfs "$d"; fi
done
if [ -d /run ] && [ ! -L /run ]; then $m -t tmpfs -o nosuid,nodev,mode=755 tmpfs /run; fi
mkdir -p "$wt" "$home"
$m --move /dev/shm/.tl-wt "$wt"
$m --move /dev/shm/.tl-home "$home"
rmdir /dev/shm/.tl-wt /dev/shm/.tl-home
if [ -e "$wt/.git" ] && [ ! -L "$wt/.git" ]; then
  $m --bind "$wt/.git" "$wt/.git"
  $m -o remount,bind,ro "$wt/.git"
fi
cd "$wt"
unset OLDPWD PWD
set +e
"$@"
exit $?
"#;

fn os(s: impl Into<OsString>) -> OsString {
    s.into()
}

impl Hardening {
    /// Finds the tools, probes each configured mechanism with `true` and
    /// keeps the first that works. `path` is the `PATH` commands get.
    pub(crate) fn detect(config: HardenedConfig, path: &str) -> Result<Self> {
        config.validate()?;
        let dirs = &config.tool_dirs;
        let tools = Tools {
            bwrap: find_tool(dirs, "bwrap"),
            unshare: find_tool(dirs, "unshare"),
            setpriv: find_tool(dirs, "setpriv"),
            prlimit: find_tool(dirs, "prlimit"),
            sh: find_tool(dirs, "sh"),
            mount: find_tool(dirs, "mount"),
            ip: find_tool(dirs, "ip"),
            env: find_tool(dirs, "env"),
            truth: find_tool(dirs, "true"),
        };
        let root = nix::unistd::geteuid().is_root();
        let mut not_in_force = Vec::new();
        let Some(truth) = tools.truth.clone() else {
            return Err(Error::unavailable(
                "hardened sandbox: no `true` program in the tool folders to probe with",
            ));
        };
        if tools.env.is_none() {
            return Err(Error::unavailable(
                "hardened sandbox: no `env` program (coreutils) in the tool folders",
            ));
        }
        if root && tools.setpriv.is_none() {
            return Err(Error::unavailable(
                "hardened sandbox: the service runs as root and `setpriv` (util-linux) is missing, \
                 so commands would run as root; refusing",
            ));
        }
        let mut hidden: Vec<PathBuf> = config.hidden_paths.clone();
        if let Ok(Some(user)) = nix::unistd::User::from_uid(nix::unistd::geteuid())
            && user.dir != Path::new("/")
        {
            hidden.push(user.dir);
        }
        let mut canonical: Vec<PathBuf> = Vec::new();
        for p in hidden {
            for q in [std::fs::canonicalize(&p).ok(), Some(p)]
                .into_iter()
                .flatten()
            {
                if !canonical.contains(&q) {
                    canonical.push(q);
                }
            }
        }
        let mut system = vec![SystemEntry::Bind("/usr".into())];
        for p in ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"] {
            let p = PathBuf::from(p);
            match std::fs::symlink_metadata(&p) {
                Ok(m) if m.file_type().is_symlink() => {
                    if let Ok(target) = std::fs::read_link(&p) {
                        system.push(SystemEntry::Symlink { target, at: p });
                    }
                }
                Ok(m) if m.is_dir() => system.push(SystemEntry::Bind(p)),
                _ => {}
            }
        }
        system.push(SystemEntry::Bind("/etc".into()));

        let mut hardening = Self {
            config,
            tools,
            variant: Variant::Bare,
            root,
            hidden: canonical,
            system,
            guarantees: Guarantees::none(),
        };

        // Probe in a throwaway worktree and home shaped like the real ones.
        let probe = tempfile::Builder::new()
            .prefix("tracelab-probe-")
            .tempdir()
            .map_err(|e| Error::internal(format!("cannot create probe folder: {e}")))?;
        let (wt, home) = (probe.path().join("wt"), probe.path().join("home"));
        for d in [&wt, &home] {
            std::fs::create_dir(d)
                .map_err(|e| Error::internal(format!("cannot create probe folder: {e}")))?;
            if root {
                let (uid, gid) = hardening.config.user;
                std::os::unix::fs::lchown(d, Some(uid), Some(gid))
                    .map_err(|e| Error::internal(format!("cannot chown probe folder: {e}")))?;
            }
        }
        let argv = [truth.display().to_string()];

        let mut chosen = None;
        for mechanism in hardening.config.mechanisms.clone() {
            let (tool, package) = match mechanism {
                Mechanism::Bwrap => (&hardening.tools.bwrap, "bubblewrap"),
                Mechanism::Unshare => (&hardening.tools.unshare, "util-linux"),
            };
            if tool.is_none() {
                not_in_force.push(format!(
                    "{}: not installed (Debian package {package})",
                    mechanism.name()
                ));
                continue;
            }
            if mechanism == Mechanism::Unshare
                && (hardening.tools.sh.is_none() || hardening.tools.mount.is_none())
            {
                not_in_force.push("unshare: `sh` or `mount` missing".into());
                continue;
            }
            let variants: &[Variant] = match (mechanism, root) {
                (Mechanism::Bwrap, true) => &[Variant::BwrapRoot],
                (Mechanism::Bwrap, false) => &[
                    Variant::BwrapUser {
                        disable_userns: true,
                    },
                    Variant::BwrapUser {
                        disable_userns: false,
                    },
                ],
                (Mechanism::Unshare, true) => &[Variant::UnshareRoot],
                (Mechanism::Unshare, false) => &[Variant::UnshareUser],
            };
            let mut last_error = String::new();
            for &variant in variants {
                hardening.variant = variant;
                match hardening.probe(&wt, &home, &argv, path) {
                    Ok(()) => {
                        chosen = Some((mechanism, variant));
                        break;
                    }
                    Err(e) => last_error = e,
                }
            }
            if chosen.is_some() {
                break;
            }
            not_in_force.push(format!("{}: refused here ({last_error})", mechanism.name()));
        }
        let mechanism = chosen.map(|(m, _)| m);
        hardening.variant = chosen.map_or(Variant::Bare, |(_, v)| v);
        if chosen.is_none() {
            if hardening.config.require_namespaces {
                return Err(Error::unavailable(format!(
                    "hardened sandbox: namespaces are required but no mechanism works: {}",
                    not_in_force.join("; ")
                )));
            }
            if let Err(e) = hardening.probe(&wt, &home, &argv, path) {
                return Err(Error::unavailable(format!(
                    "hardened sandbox: even the uid switch and limits fail here: {e}"
                )));
            }
        }
        drop(probe);

        // What follows from the choice; phrased as facts, not hopes.
        let ns = mechanism.is_some();
        if !ns {
            not_in_force.push(
                "no network namespace: commands can reach the network and the host's ports".into(),
            );
            not_in_force.push(
                "no PID namespace: the host's processes are visible in /proc, and a process that leaves the process group (setsid) survives the kill".into(),
            );
            not_in_force.push(
                "no mount namespace: the host's files are visible as far as file permissions allow; hidden paths are NOT hidden; /tmp is shared".into(),
            );
        }
        if !root && hardening.tools.prlimit.is_some() && !ns {
            not_in_force.push(
                "the process limit counts every process of the service's uid, the service's own included".into(),
            );
        }
        if hardening.tools.prlimit.is_none() {
            not_in_force.push("no resource limits: `prlimit` (util-linux) is missing".into());
        }
        if !root && !ns {
            not_in_force.push(
                "commands run as the service's own uid: they can read its files and /proc/<pid>/environ and write .git".into(),
            );
        }
        if root && hardening.tools.prlimit.is_some() {
            not_in_force.push(format!(
                "the process limit is shared by all concurrent commands of uid {}",
                hardening.config.user.0
            ));
        }
        not_in_force.push("the kernel is shared with the host (no seccomp filter beyond no_new_privs; a kernel exploit escapes)".into());
        not_in_force.push("no memory or CPU-share cgroup: memory is bounded only per process through the address-space limit".into());
        not_in_force.push("no disk quota: the worktree's file system can be filled, one file at a time up to the file-size limit".into());
        let unshared = matches!(
            hardening.variant,
            Variant::UnshareRoot | Variant::UnshareUser
        );
        if unshared && hardening.tools.ip.is_none() {
            not_in_force.push(
                "loopback is down under unshare (iproute2's `ip` is missing): tests that listen on localhost fail".into(),
            );
        }
        if unshared {
            not_in_force.push(
                "under unshare the host's file system stays visible, and writable where file permissions allow, apart from the masked paths".into(),
            );
        }

        hardening.guarantees = Guarantees {
            mechanism,
            hardened: true,
            user: root.then_some(hardening.config.user),
            user_namespace: matches!(
                hardening.variant,
                Variant::BwrapUser { .. } | Variant::UnshareUser
            ),
            limits: hardening
                .tools
                .prlimit
                .is_some()
                .then(|| hardening.config.limits.clone()),
            network: ns,
            processes: ns,
            ipc_uts: ns,
            filesystem: match mechanism {
                Some(Mechanism::Bwrap) => FsView::Minimal,
                Some(Mechanism::Unshare) => FsView::HostMasked,
                None => FsView::Host,
            },
            hidden_paths: ns,
            // A read-only mount under either mechanism; without one, root's
            // ownership keeps `.git` out of reach of the command uid (the
            // hand-over skips it and leaves the top folder root's, sticky).
            git_read_only: ns || root,
            not_in_force,
        };
        Ok(hardening)
    }

    pub(crate) fn guarantees(&self) -> &Guarantees {
        &self.guarantees
    }

    /// The uid:gid the worktree and home must belong to, when commands switch to it.
    pub(crate) fn owner(&self) -> Option<(u32, u32)> {
        self.root.then_some(self.config.user)
    }

    /// Runs `argv` (the probe program) through the current variant.
    fn probe(
        &self,
        wt: &Path,
        home: &Path,
        argv: &[String],
        path: &str,
    ) -> std::result::Result<(), String> {
        let line = self.line(wt, home, argv, &[]);
        let mut child = Command::new(&line[0])
            .args(&line[1..])
            .current_dir(wt)
            .env_clear()
            .env("PATH", path)
            .env("HOME", home)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", line[0].to_string_lossy()))?;
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err("the probe did not finish within 10 s".into());
                }
                Err(e) => return Err(format!("waiting for the probe failed: {e}")),
            }
        };
        if status.success() {
            return Ok(());
        }
        let mut stderr = String::new();
        if let Some(mut err) = child.stderr.take() {
            use std::io::Read;
            let _ = err.read_to_string(&mut stderr);
        }
        let first = stderr.lines().next().unwrap_or("").trim().to_string();
        Err(if first.is_empty() {
            format!("exit status {status}")
        } else {
            first
        })
    }

    /// `setpriv` + `prlimit` + `env` + argv: what runs inside the namespaces.
    ///
    /// The wrappers run with the fixed environment only; the spec's own
    /// variables are set by `env` as the very last step, after the uid switch
    /// and the limits, so a variable such as `LD_PRELOAD` (a repro pack's
    /// environment is outside input) never reaches a privileged wrapper.
    fn inner(&self, argv: &[String], env: &[(String, String)]) -> Vec<OsString> {
        let mut line = Vec::new();
        if let Some(setpriv) = &self.tools.setpriv {
            line.push(os(setpriv));
            if self.root {
                let (uid, gid) = self.config.user;
                line.extend([
                    os(format!("--reuid={uid}")),
                    os(format!("--regid={gid}")),
                    os("--clear-groups"),
                    os("--inh-caps=-all"),
                    os("--bounding-set=-all"),
                ]);
            }
            line.push(os("--no-new-privs"));
        }
        if let Some(prlimit) = &self.tools.prlimit {
            line.push(os(prlimit));
            line.extend(self.config.limits.prlimit_args().into_iter().map(os));
            line.push(os("--"));
        }
        if !env.is_empty() {
            line.push(os(self.tools.env.as_ref().expect("detected")));
            line.push(os("--"));
            line.extend(env.iter().map(|(k, v)| os(format!("{k}={v}"))));
        }
        line.extend(argv.iter().map(os));
        line
    }

    /// The whole command line; element 0 is the program to spawn. `env` is
    /// the spec's variables, for the command alone (see [`Self::inner`]).
    pub(crate) fn line(
        &self,
        worktree: &Path,
        home: &Path,
        argv: &[String],
        env: &[(String, String)],
    ) -> Vec<OsString> {
        let inner = self.inner(argv, env);
        match self.variant {
            Variant::Bare => inner,
            Variant::BwrapRoot | Variant::BwrapUser { .. } => {
                self.bwrap_line(worktree, home, inner)
            }
            Variant::UnshareRoot | Variant::UnshareUser => self.unshare_line(worktree, home, inner),
        }
    }

    fn bwrap_line(&self, worktree: &Path, home: &Path, inner: Vec<OsString>) -> Vec<OsString> {
        let bwrap = self.tools.bwrap.as_ref().expect("probed");
        let mut line = vec![os(bwrap)];
        match self.variant {
            // As root bwrap creates the namespaces with its own capabilities;
            // no user namespace, so `setpriv` can switch to a real host uid.
            Variant::BwrapRoot => {}
            Variant::BwrapUser { disable_userns } => {
                line.push(os("--unshare-user"));
                if disable_userns {
                    line.push(os("--disable-userns"));
                }
            }
            _ => unreachable!("bwrap variant"),
        }
        for flag in [
            "--unshare-ipc",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--die-with-parent",
            "--new-session",
            "--hostname",
            "tracelab-sandbox",
        ] {
            line.push(os(flag));
        }
        let mut bound: Vec<PathBuf> = Vec::new();
        for entry in &self.system {
            match entry {
                SystemEntry::Bind(p) => {
                    line.extend([os("--ro-bind"), os(p), os(p)]);
                    bound.push(p.clone());
                }
                SystemEntry::Symlink { target, at } => {
                    line.extend([os("--symlink"), os(target), os(at)]);
                }
            }
        }
        for p in &self.config.read_only_paths {
            line.extend([os("--ro-bind-try"), os(p), os(p)]);
            bound.push(p.clone());
        }
        line.extend([
            os("--proc"),
            os("/proc"),
            os("--dev"),
            os("/dev"),
            os("--tmpfs"),
            os("/tmp"),
        ]);
        // Only hidden paths inside a bound folder are visible at all.
        for p in &self.hidden {
            if !bound.iter().any(|b| p.starts_with(b)) {
                continue;
            }
            match std::fs::symlink_metadata(p) {
                Ok(m) if m.is_dir() => line.extend([os("--tmpfs"), os(p)]),
                Ok(m) if m.file_type().is_symlink() => {}
                Ok(_) => line.extend([os("--ro-bind"), os("/dev/null"), os(p)]),
                Err(_) => {}
            }
        }
        // The folders above the worktree and the home exist only as mount
        // points in the new root; bubblewrap would create them with the
        // host's (private) modes, and an interpreter opening its script by
        // absolute path must pass through them: search-only for everyone.
        for mount in [worktree, home] {
            for dir in passage_to(mount, &bound) {
                line.extend([os("--perms"), os("0711"), os("--dir"), os(&dir)]);
            }
        }
        line.extend([os("--bind"), os(worktree), os(worktree)]);
        line.extend([os("--bind"), os(home), os(home)]);
        let git = worktree.join(".git");
        // Read-only, and as a mount point it cannot be renamed or replaced.
        // Never through a symlink: a command of a worktree without `.git`
        // could plant `.git -> ~/.ssh` to have the next run bind it in.
        if git
            .symlink_metadata()
            .is_ok_and(|m| !m.file_type().is_symlink())
        {
            line.extend([os("--ro-bind"), os(&git), os(&git)]);
        }
        line.extend([os("--chdir"), os(worktree), os("--")]);
        line.extend(inner);
        line
    }

    fn unshare_line(&self, worktree: &Path, home: &Path, inner: Vec<OsString>) -> Vec<OsString> {
        let unshare = self.tools.unshare.as_ref().expect("probed");
        let mut line = vec![os(unshare)];
        if self.variant == Variant::UnshareUser {
            line.push(os("--map-root-user"));
        }
        for flag in [
            "--net",
            "--pid",
            "--ipc",
            "--uts",
            "--mount-proc",
            "--kill-child",
            "--",
        ] {
            line.push(os(flag));
        }
        line.push(os(self.tools.sh.as_ref().expect("probed")));
        line.extend([os("-c"), os(UNSHARE_SCRIPT), os("sh")]);
        line.push(os(self.tools.mount.as_ref().expect("probed")));
        line.push(self.tools.ip.as_ref().map_or_else(OsString::new, os));
        line.extend([os(worktree), os(home)]);
        line.extend(self.hidden.iter().map(os));
        line.push(os("--"));
        if self.variant == Variant::UnshareUser {
            // Mounts made in this user namespace could be undone by its root;
            // in a nested one they are locked, and the command is not root.
            let uid = nix::unistd::geteuid().as_raw();
            let gid = nix::unistd::getegid().as_raw();
            line.extend([
                os(unshare),
                os("--user"),
                os("--mount"),
                os(format!("--map-user={uid}")),
                os(format!("--map-group={gid}")),
                os("--"),
            ]);
        }
        line.extend(inner);
        line
    }

    /// Whether a program found at `path` on the host is reachable inside.
    fn visible(&self, path: &Path, worktree: &Path, home: &Path) -> bool {
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if path.starts_with(worktree) || path.starts_with(home) {
            return true;
        }
        match self.guarantees.filesystem {
            FsView::Host => true,
            FsView::HostMasked => {
                !self.hidden.iter().any(|h| path.starts_with(h))
                    && !["/tmp", "/var/tmp", "/dev/shm", "/run"]
                        .iter()
                        .any(|t| path.starts_with(t))
            }
            FsView::Minimal => {
                !self.hidden.iter().any(|h| path.starts_with(h))
                    && self
                        .system
                        .iter()
                        .filter_map(|e| match e {
                            SystemEntry::Bind(p) => Some(p),
                            SystemEntry::Symlink { .. } => None,
                        })
                        .chain(&self.config.read_only_paths)
                        .any(|b| path.starts_with(b))
            }
        }
    }

    /// Whether `program` (argv[0]) can be found inside with `path` as `PATH`:
    /// a name is looked up like `execvp` would; a path is left to the command.
    pub(crate) fn resolves(&self, program: &str, path: &str, worktree: &Path, home: &Path) -> bool {
        if program.as_bytes().contains(&b'/') {
            return true;
        }
        path.split(':')
            .filter(|d| !d.is_empty())
            .map(|d| Path::new(d).join(program))
            .any(|p| executable(&p) && self.visible(&p, worktree, home))
    }
}

/// `OsStr` bytes, for tests.
#[cfg(test)]
fn strings(line: &[OsString]) -> Vec<String> {
    line.iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect()
}

/// The folders bubblewrap has to create above `mount`, shallowest first:
/// every ancestor below `/` that is neither bound from the host nor `/tmp`
/// (a fresh tmpfs) nor inside either.
fn passage_to(mount: &Path, bound: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = mount
        .ancestors()
        .skip(1)
        .filter(|a| a.parent().is_some())
        .filter(|a| *a != Path::new("/tmp"))
        .filter(|a| !bound.iter().any(|b| a.starts_with(b) || b.starts_with(a)))
        .map(Path::to_path_buf)
        .collect();
    dirs.reverse();
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hardening(variant: Variant, root: bool) -> Hardening {
        let bin = |n: &str| Some(PathBuf::from(format!("/usr/bin/{n}")));
        Hardening {
            config: HardenedConfig {
                hidden_paths: vec!["/etc/tracelab".into()],
                ..HardenedConfig::default()
            },
            tools: Tools {
                bwrap: bin("bwrap"),
                unshare: bin("unshare"),
                setpriv: bin("setpriv"),
                prlimit: bin("prlimit"),
                sh: bin("sh"),
                mount: bin("mount"),
                ip: Some(PathBuf::from("/usr/sbin/ip")),
                env: bin("env"),
                truth: bin("true"),
            },
            variant,
            root,
            hidden: vec!["/etc/tracelab".into(), "/root".into()],
            system: vec![
                SystemEntry::Bind("/usr".into()),
                SystemEntry::Symlink {
                    target: "usr/bin".into(),
                    at: "/bin".into(),
                },
                SystemEntry::Bind("/etc".into()),
            ],
            guarantees: Guarantees::none(),
        }
    }

    const ARGV: [&str; 3] = ["python3", "-m", "pytest"];

    fn line(h: &Hardening) -> String {
        let argv: Vec<String> = ARGV.iter().map(|s| s.to_string()).collect();
        strings(&h.line(Path::new("/w/t"), Path::new("/h"), &argv, &[])).join(" ")
    }

    #[test]
    fn the_specs_variables_reach_only_the_command() {
        let h = hardening(Variant::BwrapRoot, true);
        let argv: Vec<String> = ARGV.iter().map(|s| s.to_string()).collect();
        let env = [("LD_PRELOAD".to_string(), "./evil.so".to_string())];
        let l = strings(&h.line(Path::new("/w/t"), Path::new("/h"), &argv, &env)).join(" ");
        assert!(
            l.ends_with("--core=0 -- /usr/bin/env -- LD_PRELOAD=./evil.so python3 -m pytest"),
            "{l}"
        );
    }

    const INNER_ROOT: &str = "/usr/bin/setpriv --reuid=10001 --regid=10001 --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs \
        /usr/bin/prlimit --cpu=600 --as=4294967296 --nproc=256 --nofile=1024 --fsize=1073741824 --core=0 -- python3 -m pytest";

    #[test]
    fn bare_line_switches_uid_and_limits() {
        assert_eq!(line(&hardening(Variant::Bare, true)), INNER_ROOT);
        assert_eq!(
            line(&hardening(Variant::Bare, false)),
            "/usr/bin/setpriv --no-new-privs /usr/bin/prlimit --cpu=600 --as=4294967296 --nproc=256 --nofile=1024 --fsize=1073741824 --core=0 -- python3 -m pytest"
        );
    }

    #[test]
    fn bwrap_line_binds_system_folders_worktree_and_git_read_only() {
        let l = line(&hardening(Variant::BwrapRoot, true));
        assert!(
            l.starts_with(
                "/usr/bin/bwrap --unshare-ipc --unshare-pid --unshare-net --unshare-uts --unshare-cgroup-try \
                 --die-with-parent --new-session --hostname tracelab-sandbox \
                 --ro-bind /usr /usr --symlink usr/bin /bin --ro-bind /etc /etc \
                 --proc /proc --dev /dev --tmpfs /tmp"
            ),
            "{l}"
        );
        assert!(
            l.ends_with(&format!(
                "--bind /w/t /w/t --bind /h /h --chdir /w/t -- {INNER_ROOT}"
            )),
            "{l}"
        );
        let user = line(&hardening(
            Variant::BwrapUser {
                disable_userns: true,
            },
            false,
        ));
        assert!(
            user.starts_with("/usr/bin/bwrap --unshare-user --disable-userns --unshare-ipc"),
            "{user}"
        );
    }

    #[test]
    fn unshare_line_passes_paths_as_arguments_not_script_text() {
        let l = line(&hardening(Variant::UnshareRoot, true));
        assert!(
            l.starts_with(
                "/usr/bin/unshare --net --pid --ipc --uts --mount-proc --kill-child -- /usr/bin/sh -c set -eu"
            ),
            "{l}"
        );
        assert!(
            l.ends_with(&format!(
                "sh /usr/bin/mount /usr/sbin/ip /w/t /h /etc/tracelab /root -- {INNER_ROOT}"
            )),
            "{l}"
        );
        let user = line(&hardening(Variant::UnshareUser, false));
        assert!(
            user.starts_with("/usr/bin/unshare --map-root-user --net"),
            "{user}"
        );
        assert!(
            user.contains("-- /usr/bin/unshare --user --mount --map-user="),
            "{user}"
        );
    }

    #[test]
    fn limits_can_be_left_unset_and_are_validated() {
        let limits = Limits {
            cpu_seconds: None,
            address_space_bytes: None,
            ..Limits::default()
        };
        assert_eq!(
            limits.prlimit_args(),
            [
                "--nproc=256",
                "--nofile=1024",
                "--fsize=1073741824",
                "--core=0"
            ]
        );
        assert_eq!(
            Limits::default().summary(),
            "cpu 600 s, address space 4 GiB, processes 256, open files 1024, file size 1 GiB, no core dumps"
        );
        let root_user = HardenedConfig {
            user: (0, 0),
            ..HardenedConfig::default()
        };
        assert!(root_user.validate().is_err());
        let relative = HardenedConfig {
            hidden_paths: vec!["etc/x".into()],
            ..HardenedConfig::default()
        };
        assert!(relative.validate().is_err());
        let tiny = HardenedConfig {
            limits: Limits {
                processes: Some(1),
                ..Limits::default()
            },
            ..HardenedConfig::default()
        };
        assert!(tiny.validate().is_err());
        assert!(HardenedConfig::default().validate().is_ok());
    }
}
