//! Running one command: a `docker exec` as the container user, its output
//! read into a bounded capture until the wall-clock limit, its exit code
//! read once the stream has ended, and what the result says about it
//! (timeout, memory-limit kill, a program Docker could not start).

use crate::config::Ownership;
use crate::config::WORKDIR;
use crate::environment::{environment, hand_over};
use crate::error::{docker as docker_error, is_conflict};
use crate::sandbox::{Inner, State};
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use futures_util::StreamExt;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio::sync::OwnedMutexGuard;
use tracelab_domain::ports::{CommandResult, CommandSpec};
use tracelab_domain::{Error, ErrorKind, Result};
use tracelab_sandbox::CappedOutput;

/// Limit for the sandbox's own short housekeeping execs (kill, counters).
const HOUSEKEEPING_TIMEOUT: Duration = Duration::from_secs(10);

/// "timed out after 2 s", "timed out after 0.5 s".
pub(crate) fn seconds(duration: Duration) -> String {
    if duration.subsec_millis() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

/// Recognises Docker's own report that it could not start the program.
pub(crate) fn start_failure(exit_code: i64, output: &str, program: &str) -> Option<String> {
    if !(exit_code == 126 || exit_code == 127) || !output.contains("OCI runtime exec failed") {
        return None;
    }
    let lower = output.to_ascii_lowercase();
    Some(
        if lower.contains("executable file not found")
            || lower.contains("no such file or directory")
        {
            format!("program {program:?} not found in the sandbox image")
        } else if lower.contains("permission denied") {
            format!("program {program:?} is not executable in the sandbox")
        } else {
            format!(
                "could not start {program:?}: {}",
                output.lines().next().unwrap_or_default().trim()
            )
        },
    )
}

/// Kills the command if its future is dropped before it finished, and keeps
/// the sandbox locked until that is done.
struct Running {
    inner: Arc<Inner>,
    lock: Option<OwnedMutexGuard<State>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let Some(lock) = self.lock.take() else { return };
        let inner = self.inner.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                inner.kill_commands().await;
                inner.wait_current_exec().await;
                drop(lock);
            });
        }
    }
}

impl Running {
    fn state(&mut self) -> &mut State {
        self.lock.as_mut().expect("lock held while running")
    }

    fn finish(mut self) {
        self.lock.take();
    }
}

/// Output and exit status of an exec.
struct Finished {
    output: String,
    exit_code: Option<i64>,
    timed_out: bool,
    duration: Duration,
}

impl Inner {
    /// Creates and starts an exec; restarts the container once if it had stopped.
    async fn start_exec(
        &self,
        argv: &[String],
        env: Vec<String>,
        (uid, gid): (u32, u32),
    ) -> Result<(String, StartExecResults)> {
        let options = CreateExecOptions {
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            attach_stdin: Some(false),
            tty: Some(false),
            cmd: Some(argv.to_vec()),
            env: Some(env),
            user: Some(format!("{uid}:{gid}")),
            working_dir: Some(WORKDIR.to_string()),
            ..Default::default()
        };
        let created = match self
            .docker
            .create_exec(&self.container_id, options.clone())
            .await
        {
            Ok(created) => created,
            Err(error) if !self.closed.load(Ordering::SeqCst) && is_conflict(&error) => {
                tracing::warn!(container = %self.container_id, "sandbox container was not running; restarting it");
                self.restart().await?;
                self.docker
                    .create_exec(&self.container_id, options)
                    .await
                    .map_err(|e| docker_error("create exec", e))?
            }
            Err(error) => return Err(self.gone_or(docker_error("create exec", error))),
        };
        let started = self
            .docker
            .start_exec(
                &created.id,
                Some(StartExecOptions {
                    detach: false,
                    tty: false,
                    output_capacity: Some(64 * 1024),
                }),
            )
            .await
            .map_err(|e| docker_error("start exec", e))?;
        Ok((created.id, started))
    }

    pub(crate) fn gone_or(&self, error: Error) -> Error {
        if self.closed.load(Ordering::SeqCst) {
            Error::conflict(format!("sandbox {} is closed", self.label))
        } else {
            error
        }
    }

    /// Runs argv to the end of its output or `limit`, whichever comes first.
    /// On the limit, with `kill_on_timeout`, the user's processes are killed
    /// (restart as a fallback); housekeeping execs just give up.
    async fn run(
        &self,
        argv: &[String],
        env: Vec<String>,
        user: (u32, u32),
        limit: Duration,
        output_limit: usize,
        kill_on_timeout: bool,
    ) -> Result<Finished> {
        let started_at = Instant::now();
        let (exec_id, started) = self.start_exec(argv, env, user).await?;
        if kill_on_timeout {
            *self.current_exec.lock().expect("current exec lock") = Some(exec_id.clone());
        }
        let StartExecResults::Attached { mut output, input } = started else {
            return Err(Error::internal("docker started the exec detached"));
        };
        drop(input);
        let mut capture = CappedOutput::new(output_limit);
        // A limit too large to represent means "no limit" in practice: a year.
        let deadline = started_at
            .checked_add(limit)
            .unwrap_or_else(|| started_at + Duration::from_secs(365 * 24 * 3600));
        let deadline = tokio::time::Instant::from_std(deadline);
        let mut timed_out = false;
        let mut stream_error = None;
        loop {
            match tokio::time::timeout_at(deadline, output.next()).await {
                Ok(Some(Ok(chunk))) => capture.push(&chunk.into_bytes()),
                Ok(Some(Err(error))) => {
                    stream_error = Some(error);
                    break;
                }
                Ok(None) => break,
                Err(_) => {
                    timed_out = true;
                    break;
                }
            }
        }
        let duration = started_at.elapsed();
        if timed_out && !kill_on_timeout {
            return Ok(Finished {
                output: capture.into_string(),
                exit_code: None,
                timed_out,
                duration,
            });
        }
        if timed_out {
            self.kill_commands().await;
            // The stream ends once no process holds its pipes any more.
            let grace = tokio::time::Instant::now() + self.config.kill_grace;
            loop {
                match tokio::time::timeout_at(grace, output.next()).await {
                    Ok(Some(Ok(chunk))) => capture.push(&chunk.into_bytes()),
                    Ok(Some(Err(_)) | None) => break,
                    Err(_) => {
                        tracing::warn!(container = %self.container_id, "output did not end after kill; restarting");
                        drop(output);
                        self.restart().await?;
                        break;
                    }
                }
            }
            return Ok(Finished {
                output: capture.into_string(),
                exit_code: None,
                timed_out,
                duration,
            });
        }
        drop(output);
        if let Some(error) = stream_error {
            return Err(self.gone_or(docker_error("read exec output", error)));
        }
        let exit_code = self.exit_code(&exec_id).await?;
        Ok(Finished {
            output: capture.into_string(),
            exit_code,
            timed_out,
            duration,
        })
    }

    /// Reads the exit code once the exec has stopped running. Its output
    /// has ended, so the process is exiting; a loaded engine can take a
    /// while to say so, hence a deadline rather than a number of polls.
    async fn exit_code(&self, exec_id: &str) -> Result<Option<i64>> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        let mut pause = Duration::from_millis(5);
        loop {
            let inspect = self
                .docker
                .inspect_exec(exec_id)
                .await
                .map_err(|e| self.gone_or(docker_error("inspect exec", e)))?;
            if inspect.running != Some(true) {
                return Ok(inspect.exit_code);
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(200));
        }
    }

    /// A short housekeeping command as `uid`; returns its exit code and output.
    pub(crate) async fn housekeeping(
        &self,
        argv: &[&str],
        user: (u32, u32),
    ) -> Result<(Option<i64>, String)> {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let finished = self
            .run(
                &argv,
                environment(&[]),
                user,
                HOUSEKEEPING_TIMEOUT,
                4096,
                false,
            )
            .await?;
        if finished.timed_out {
            return Err(Error::new(
                ErrorKind::Timeout,
                format!("sandbox housekeeping {argv:?} timed out"),
            ));
        }
        Ok((finished.exit_code, finished.output))
    }

    pub(crate) async fn exec(self: &Arc<Self>, spec: &CommandSpec) -> Result<CommandResult> {
        let lock = self.state.clone().lock_owned().await;
        if self.closed.load(Ordering::SeqCst) {
            return Err(Error::conflict(format!("sandbox {} is closed", self.label)));
        }
        let mut running = Running {
            inner: self.clone(),
            lock: Some(lock),
        };
        if self.config.ownership == Ownership::ChownBeforeEachExec {
            let walker = std::mem::take(&mut running.state().walker);
            running.state().walker = hand_over(walker, &self.worktree, self.config.user).await?;
        }
        let finished = self
            .run(
                &spec.argv,
                environment(&spec.env),
                self.config.user,
                spec.timeout,
                spec.output_limit,
                true,
            )
            .await?;
        let program = spec.argv[0].as_str();
        let mut result = CommandResult {
            exit_code: finished.exit_code.map(|c| c as i32),
            duration: finished.duration,
            output: finished.output,
            blocked: None,
        };
        if finished.timed_out {
            result.blocked = Some(format!("timed out after {}", seconds(spec.timeout)));
            running.finish();
            return Ok(result);
        }
        // Anything the command left behind goes before the next one starts.
        self.sweep_leftovers().await;
        match finished.exit_code {
            None => {
                result.blocked =
                    Some("exit status unavailable: the sandbox lost track of the command".into())
            }
            Some(code) => {
                if let Some(reason) = start_failure(code, &result.output, program) {
                    result.exit_code = None;
                    result.blocked = Some(reason);
                } else if code == 137 {
                    let before = running.state().oom_kills;
                    let after = self.read_oom_kills().await;
                    running.state().oom_kills = after;
                    let oom = match (before, after) {
                        // A restarted container starts a new cgroup whose counter is lower.
                        (Some(b), Some(a)) => a > b || (a < b && a > 0),
                        _ => self.container_oom_killed().await,
                    };
                    if oom {
                        result.exit_code = None;
                        result.blocked = Some(format!(
                            "killed: memory limit {} MiB exceeded (exit status 137)",
                            self.config.memory_mib
                        ));
                    }
                }
            }
        }
        running.finish();
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(crate) fn recognises_programs_docker_cannot_start() {
        let missing = "OCI runtime exec failed: exec failed: container_linux.go:380: starting container process caused: exec: \"cargo\": executable file not found in $PATH: unknown\r\n";
        assert_eq!(
            start_failure(126, missing, "cargo").unwrap(),
            "program \"cargo\" not found in the sandbox image"
        );
        assert!(start_failure(1, missing, "cargo").is_none());
        assert!(start_failure(127, "python3: can't open file", "python3").is_none());
        assert_eq!(seconds(Duration::from_secs(3)), "3 s");
        assert_eq!(seconds(Duration::from_millis(1500)), "1.5 s");
    }
}
