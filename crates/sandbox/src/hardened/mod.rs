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

mod config;
mod guarantees;
mod lines;
#[cfg(test)]
mod tests;
mod tools;

pub use config::{FsView, HardenedConfig, Isolation, Limits, Mechanism};
pub use guarantees::Guarantees;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tools::{Tools, find_tool};
use tracelab_domain::{Error, Result};

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
}
