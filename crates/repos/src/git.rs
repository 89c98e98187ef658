//! Running the git CLI for the cache: a scrubbed environment, no prompts,
//! no hooks, a deadline that kills the whole process group, and git's
//! complaints mapped onto error kinds without leaking secrets.
//!
//! Why the CLI and not libgit2: git's own transports speak protocol v2,
//! smart HTTP with credential helpers, and ssh with the system's OpenSSH,
//! without linking OpenSSL into the services.

use crate::url::RepoUrl;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tracelab_domain::{Error, ErrorKind};

/// Variables passed through from the service's environment: what git needs
/// to find programs, its config and a proxy or CA bundle. Everything else
/// (database URLs, cloud credentials, `GIT_DIR`, …) stays out of git and
/// ssh.
const PASSED: &[&str] = &[
    "PATH",
    "HOME",
    "TMPDIR",
    "http_proxy",
    "https_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "no_proxy",
    "NO_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "GIT_SSL_CAINFO",
    "GIT_SSL_CAPATH",
];

/// Options on every git command line (nothing secret).
const OPTIONS: &[&str] = &[
    // A repository's hooks are code from the server's side; never run them.
    "core.hooksPath=/dev/null",
    "protocol.version=2",
    // Mirrors may be owned by another uid (a shared volume).
    "safe.directory=*",
    // Maintenance runs inside the fetch, under its lock and deadline, not
    // as a detached process racing eviction.
    "gc.autoDetach=false",
    "maintenance.autoDetach=false",
    "init.defaultBranch=main",
];

/// The environment every git process starts from (also `tracelab-codehost`'s
/// pushes, with their own options added).
#[derive(Debug, Clone)]
pub struct Git {
    env: Vec<(OsString, OsString)>,
    extra_options: &'static [&'static str],
}

/// How a git process failed.
#[derive(Debug)]
pub enum Failure {
    Start(std::io::Error),
    Timeout,
    Exit(String),
}

impl Git {
    /// Takes [`PASSED`] from this process's environment (and the ssh
    /// agent's socket with `ambient` credentials); `home` stands in when
    /// `HOME` is unset.
    pub fn from_process_env(home: &Path, ambient: bool) -> Self {
        let agent: &[&str] = if ambient { &["SSH_AUTH_SOCK"] } else { &[] };
        let mut env: Vec<(OsString, OsString)> = PASSED
            .iter()
            .chain(agent)
            .filter_map(|k| std::env::var_os(k).map(|v| (OsString::from(k), v)))
            .collect();
        if !env.iter().any(|(k, _)| k == "PATH") {
            env.push(("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()));
        }
        if !env.iter().any(|(k, _)| k == "HOME") {
            env.push(("HOME".into(), home.into()));
        }
        for (k, v) in [
            // English messages, which `error` below reads.
            ("LANG", "C"),
            ("LC_ALL", "C"),
            ("GIT_TERMINAL_PROMPT", "0"),
            // Set and empty: no askpass program, not even core.askPass.
            ("GIT_ASKPASS", ""),
        ] {
            env.push((k.into(), v.into()));
        }
        Self {
            env,
            extra_options: &[],
        }
    }

    /// More `-c` options on every command line, after the cache's own.
    pub fn with_options(mut self, options: &'static [&'static str]) -> Self {
        self.extra_options = options;
        self
    }

    /// Runs `git -C dir args…` and returns its stdout. At `deadline` the
    /// process group (git and its helpers: remote-http, index-pack, ssh) is
    /// killed; so it is when the returned future is dropped.
    pub async fn run(
        &self,
        dir: &Path,
        args: &[&str],
        env: &[(String, String)],
        stdin: Option<Vec<u8>>,
        deadline: Instant,
    ) -> Result<String, Failure> {
        let mut command = tokio::process::Command::new("git");
        command
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        command.envs(env.iter().map(|(k, v)| (k, v)));
        for option in OPTIONS.iter().chain(self.extra_options) {
            command.args(["-c", option]);
        }
        command
            .arg("-C")
            .arg(dir)
            .args(args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(Failure::Start)?;
        // Declared after `child`, so dropped (killing the group) first.
        let mut group = GroupGuard(child.id().map(|id| Pid::from_raw(id as i32)));
        if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
            tokio::spawn(async move {
                let _ = pipe.write_all(&input).await;
            });
        }
        let mut stdout = child.stdout.take().expect("piped stdout");
        let mut stderr = child.stderr.take().expect("piped stderr");
        let finished = tokio::time::timeout_at(deadline.into(), async {
            let (mut out, mut err) = (Vec::new(), Vec::new());
            let (status, _, _) = tokio::join!(
                child.wait(),
                stdout.read_to_end(&mut out),
                stderr.read_to_end(&mut err)
            );
            (status, out, err)
        })
        .await;
        match finished {
            Ok((Ok(status), out, err)) => {
                group.disarm();
                if status.success() {
                    Ok(String::from_utf8_lossy(&out).into_owned())
                } else {
                    Err(Failure::Exit(String::from_utf8_lossy(&err).into_owned()))
                }
            }
            Ok((Err(e), _, _)) => Err(Failure::Start(e)),
            Err(_) => {
                group.kill();
                let _ = child.kill().await;
                Err(Failure::Timeout)
            }
        }
    }
}

/// Kills a process group when dropped, unless disarmed after a clean exit.
struct GroupGuard(Option<Pid>);

impl GroupGuard {
    fn disarm(&mut self) {
        self.0 = None;
    }

    fn kill(&mut self) {
        if let Some(pgid) = self.0.take() {
            // ESRCH (already gone) is fine.
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The error of a git command that talked to the server for `url`, by
/// what git printed. `secret` (a password) is scrubbed from anything
/// quoted; messages name the URL, which never holds credentials.
pub(crate) fn network_error(
    what: &str,
    url: &RepoUrl,
    failure: Failure,
    secret: Option<&str>,
    timeout: Duration,
) -> Error {
    let stderr = match failure {
        Failure::Start(e) => {
            return Error::unavailable(format!("cannot run git for {url}: {e}")).with_source(e);
        }
        Failure::Timeout => {
            return Error::timeout(format!(
                "{what} {url} took longer than {} s (fleet.repositories.fetch_timeout_seconds); stopped",
                timeout.as_secs()
            ));
        }
        Failure::Exit(stderr) => stderr,
    };
    let last = last_line(&stderr, secret);
    let (kind, message) = match complaint(&stderr) {
        Complaint::NoCredentials => (
            ErrorKind::PermissionDenied,
            format!(
                "the git server asked for credentials for {url}, and none are configured for it (fleet.repositories.credentials)"
            ),
        ),
        Complaint::HostKey => (
            ErrorKind::PermissionDenied,
            format!("the SSH host key of {url} is not the one pinned in known_hosts"),
        ),
        Complaint::NotFound => (
            ErrorKind::NotFound,
            format!(
                "{url}: the git server has no such repository (or hides it from these credentials)"
            ),
        ),
        Complaint::Refused => (
            ErrorKind::PermissionDenied,
            format!("the git server refused the credentials for {url}"),
        ),
        Complaint::Unreachable => (
            ErrorKind::Unavailable,
            format!("{url} cannot be reached: {last}"),
        ),
        Complaint::Other => (ErrorKind::Internal, format!("{what} {url} failed: {last}")),
    };
    Error::new(kind, message)
}

/// What a git command that talked to a server complained about, read from
/// its stderr (English: the runner sets `LC_ALL=C`). Shared by fetches and
/// by `tracelab-codehost`'s pushes, which word their own messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Complaint {
    /// It wanted a user name or password and had none.
    NoCredentials,
    /// The SSH host key is not the pinned one.
    HostKey,
    /// No such repository (or hidden from these credentials).
    NotFound,
    /// The credentials were refused.
    Refused,
    /// The server could not be reached or dropped the connection.
    Unreachable,
    Other,
}

pub fn complaint(stderr: &str) -> Complaint {
    let said = stderr.to_ascii_lowercase();
    let any = |needles: &[&str]| needles.iter().any(|n| said.contains(n));
    if any(&["could not read username", "could not read password"]) {
        Complaint::NoCredentials
    } else if any(&["host key verification failed"]) {
        Complaint::HostKey
    } else if any(&[
        "repository not found",
        "does not appear to be a git repository",
        "repository not exported",
        "no such repository",
        "returned error: 404",
        "not found",
    ]) {
        Complaint::NotFound
    } else if any(&[
        "authentication failed",
        "returned error: 401",
        "returned error: 403",
        "permission denied",
        "access denied",
        "invalid username or password",
    ]) {
        Complaint::Refused
    } else if any(&[
        "could not resolve host",
        "could not resolve hostname",
        "connection refused",
        "connection timed out",
        "operation timed out",
        "couldn't connect",
        "failed to connect",
        "unable to connect",
        "unable to access",
        "connection reset",
        "network is unreachable",
        "no route to host",
        "returned error: 5",
        "remote end hung up",
        "early eof",
    ]) {
        Complaint::Unreachable
    } else {
        Complaint::Other
    }
}

/// The last non-empty line git printed, short, without `secret`.
pub fn last_line(stderr: &str, secret: Option<&str>) -> String {
    let mut line = stderr
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("git printed nothing")
        .to_string();
    if let Some(secret) = secret.filter(|s| !s.is_empty()) {
        line = line.replace(secret, "***");
    }
    if line.len() > 300 {
        let mut end = 300;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        line.truncate(end);
        line.push('…');
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(stderr: &str) -> (ErrorKind, String) {
        let url = RepoUrl::parse("https://git.example.com/acme/shop").unwrap();
        let e = network_error(
            "fetching",
            &url,
            Failure::Exit(stderr.into()),
            Some("hunter2"),
            Duration::from_secs(1),
        );
        (e.kind, e.message)
    }

    #[test]
    fn stderr_maps_to_kinds() {
        use ErrorKind::*;
        let table = [
            (
                "fatal: could not read Username for 'https://x': terminal prompts disabled",
                PermissionDenied,
            ),
            (
                "remote: Invalid username or password.\nfatal: Authentication failed for 'https://x/'",
                PermissionDenied,
            ),
            (
                "fatal: unable to access 'https://x/': The requested URL returned error: 403",
                PermissionDenied,
            ),
            (
                "git@x: Permission denied (publickey).\nfatal: Could not read from remote repository.",
                PermissionDenied,
            ),
            (
                "Host key verification failed.\nfatal: Could not read from remote repository.",
                PermissionDenied,
            ),
            (
                "remote: Repository not found.\nfatal: repository 'https://x/' not found",
                NotFound,
            ),
            (
                "fatal: remote error: access denied or repository not exported: /x",
                NotFound,
            ),
            (
                "fatal: '/x' does not appear to be a git repository",
                NotFound,
            ),
            (
                "fatal: unable to access 'https://x/': Could not resolve host: x",
                Unavailable,
            ),
            (
                "fatal: unable to connect to 127.0.0.1:\n127.0.0.1[0: 127.0.0.1]: errno=Connection refused",
                Unavailable,
            ),
            (
                "fatal: unable to access 'https://x/': The requested URL returned error: 502",
                Unavailable,
            ),
            ("fatal: bad object refs/remotes/origin/main", Internal),
        ];
        for (stderr, expected) in table {
            assert_eq!(kind(stderr).0, expected, "{stderr}");
        }
    }

    #[tokio::test]
    async fn git_sees_a_scrubbed_environment_and_never_prompts() {
        let dir = tempfile::tempdir().unwrap();
        let git = Git::from_process_env(dir.path(), false);
        let deadline = Instant::now() + Duration::from_secs(30);
        let extra = [("GIT_ALLOW_PROTOCOL".to_string(), "https".to_string())];
        let env = git
            .run(
                dir.path(),
                &["-c", "alias.e=!env", "e"],
                &extra,
                None,
                deadline,
            )
            .await
            .unwrap();
        for expected in [
            "LC_ALL=C",
            "GIT_TERMINAL_PROMPT=0",
            "GIT_ASKPASS=",
            "GIT_ALLOW_PROTOCOL=https",
        ] {
            assert!(env.lines().any(|l| l == expected), "{expected} in {env}");
        }
        // cargo sets these for the test process; git must not inherit them.
        assert!(!env.contains("CARGO_"), "{env}");
    }

    #[tokio::test]
    async fn the_deadline_kills_the_whole_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let git = Git::from_process_env(dir.path(), false);
        let marker = dir.path().join("survived");
        let script = format!("!sh -c 'sleep 0.5; touch {}' & sleep 30", marker.display());
        let started = Instant::now();
        let alias = format!("alias.hang={script}");
        let result = git
            .run(
                dir.path(),
                &["-c", &alias, "hang"],
                &[],
                None,
                started + Duration::from_millis(200),
            )
            .await;
        assert!(matches!(result, Err(Failure::Timeout)), "{result:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(800));
        assert!(!marker.exists(), "a grandchild outlived the deadline");
    }

    #[test]
    fn secrets_are_scrubbed_from_quoted_lines() {
        let (_, message) = kind("error: something about hunter2 went wrong");
        assert!(!message.contains("hunter2"), "{message}");
        assert!(message.contains("***"));
    }
}
