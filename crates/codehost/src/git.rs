//! Running the git CLI for a push: a scrubbed environment, no prompts, no
//! hooks, and a deadline that kills the whole process group (git,
//! git-remote-http, ssh), as `tracelab-repos` runs its fetches.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use tokio::io::AsyncReadExt;
use tokio::time::Instant;

/// Passed through from the service's environment: what git needs to find
/// programs, its config, a proxy or a CA bundle. Nothing else (database
/// URLs, cloud credentials, `GIT_DIR`, the API token) reaches git or ssh.
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
    // Hooks are code from whoever wrote the repository; a pre-push hook
    // must not run with the push credentials in its environment.
    "core.hooksPath=/dev/null",
    "protocol.version=2",
    // The local repository may belong to another uid (a shared volume).
    "safe.directory=*",
    // Push exactly the one ref asked for: no tags, no submodules, no signing prompt.
    "push.followTags=false",
    "push.recurseSubmodules=no",
    "push.gpgSign=false",
];

/// The environment every git process starts from.
#[derive(Debug, Clone)]
pub(crate) struct Git {
    env: Vec<(OsString, OsString)>,
}

/// How a git process failed.
#[derive(Debug)]
pub(crate) enum Failure {
    Start(std::io::Error),
    Timeout,
    Exit(String),
}

impl Git {
    /// Takes [`PASSED`] from this process's environment, and the ssh
    /// agent's socket with `ambient` credentials.
    pub(crate) fn from_process_env(ambient: bool) -> Self {
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
            env.push(("HOME".into(), std::env::temp_dir().into()));
        }
        for (k, v) in [
            // English messages, which `push::git_error` reads.
            ("LANG", "C"),
            ("LC_ALL", "C"),
            ("GIT_TERMINAL_PROMPT", "0"),
            // Set and empty: no askpass program, not even core.askPass.
            ("GIT_ASKPASS", ""),
        ] {
            env.push((k.into(), v.into()));
        }
        Self { env }
    }

    /// Runs `git -C dir args…` and returns its stdout. At `deadline` (or
    /// when the future is dropped) the process group is killed.
    pub(crate) async fn run(
        &self,
        dir: &Path,
        args: &[&str],
        env: &[(String, String)],
        deadline: Instant,
    ) -> Result<String, Failure> {
        let mut command = tokio::process::Command::new("git");
        command
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .envs(env.iter().map(|(k, v)| (k, v)));
        for option in OPTIONS {
            command.args(["-c", option]);
        }
        command
            .arg("-C")
            .arg(dir)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(Failure::Start)?;
        // Declared after `child`, so dropped (killing the group) first.
        let mut group = GroupGuard(child.id().map(|id| Pid::from_raw(id as i32)));
        let mut stdout = child.stdout.take().expect("piped stdout");
        let mut stderr = child.stderr.take().expect("piped stderr");
        let finished = tokio::time::timeout_at(deadline, async {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn git_sees_a_scrubbed_environment_and_never_prompts() {
        let dir = tempfile::tempdir().unwrap();
        let git = Git::from_process_env(false);
        let deadline = Instant::now() + Duration::from_secs(30);
        let env = git
            .run(dir.path(), &["-c", "alias.e=!env", "e"], &[], deadline)
            .await
            .unwrap();
        for expected in ["LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS="] {
            assert!(env.lines().any(|l| l == expected), "{expected} in {env}");
        }
        assert!(!env.contains("CARGO_"), "{env}");
    }

    #[tokio::test]
    async fn the_deadline_kills_the_whole_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let git = Git::from_process_env(false);
        let marker = dir.path().join("survived");
        let script = format!(
            "alias.hang=!sh -c 'sleep 0.5; touch {}' & sleep 30",
            marker.display()
        );
        let started = Instant::now();
        let result = git
            .run(
                dir.path(),
                &["-c", &script, "hang"],
                &[],
                started + Duration::from_millis(200),
            )
            .await;
        assert!(matches!(result, Err(Failure::Timeout)), "{result:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
        tokio::time::sleep(Duration::from_millis(800)).await;
        assert!(!marker.exists(), "a grandchild outlived the deadline");
    }
}
