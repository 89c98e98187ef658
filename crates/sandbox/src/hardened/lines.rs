//! Building the hardened command lines: the `setpriv`, `prlimit` and `env`
//! wrappers, then `bwrap` or `unshare` with its mount script around them.

use super::tools::executable;
use super::{FsView, Hardening, SystemEntry, Variant};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

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
