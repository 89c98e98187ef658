//! Re-runs of one command spread over several sandboxes at once.
//!
//! Works with any [`Sandbox`] (Docker or local): each sandbox pulls the next
//! run number from a shared counter, so a slow container never holds up the
//! others, and results come back in run order.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use tracelab_domain::ports::{CommandResult, CommandSpec, Sandbox};
use tracelab_domain::{Error, Result};

/// Runs `spec` `runs` times over `sandboxes` in parallel (one command at a
/// time per sandbox). Fails with the first sandbox error; a command that
/// fails or is blocked is a result, not an error.
pub async fn run_parallel<S>(
    sandboxes: &[S],
    spec: &CommandSpec,
    runs: usize,
) -> Result<Vec<CommandResult>>
where
    S: AsRef<dyn Sandbox> + Sync,
{
    run_parallel_until(sandboxes, spec, runs, |_| false).await
}

/// Like [`run_parallel`], but stops handing out runs once `stop` returns true
/// for the results so far (in completion order), e.g. when a sequential test
/// has reached its confidence. Runs already started complete and are returned.
pub async fn run_parallel_until<S, F>(
    sandboxes: &[S],
    spec: &CommandSpec,
    runs: usize,
    stop: F,
) -> Result<Vec<CommandResult>>
where
    S: AsRef<dyn Sandbox> + Sync,
    F: Fn(&[CommandResult]) -> bool + Sync,
{
    if sandboxes.is_empty() {
        return Err(Error::invalid("run_parallel needs at least one sandbox"));
    }
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, CommandResult)>> = Mutex::new(Vec::with_capacity(runs));
    let stopped = std::sync::atomic::AtomicBool::new(false);
    let workers = sandboxes.iter().map(|sandbox| {
        let (next, done, stopped, stop) = (&next, &done, &stopped, &stop);
        async move {
            loop {
                if stopped.load(Ordering::SeqCst) {
                    return Ok(());
                }
                let index = next.fetch_add(1, Ordering::SeqCst);
                if index >= runs {
                    return Ok(());
                }
                let result = sandbox.as_ref().exec(spec).await?;
                let mut done = done.lock().expect("results lock");
                done.push((index, result));
                let so_far: Vec<CommandResult> = done.iter().map(|(_, r)| r.clone()).collect();
                if stop(&so_far) {
                    stopped.store(true, Ordering::SeqCst);
                }
            }
        }
    });
    let outcomes: Vec<Result<()>> = futures_util::future::join_all(workers).await;
    outcomes.into_iter().collect::<Result<Vec<()>>>()?;
    let mut done = done.into_inner().expect("results lock");
    done.sort_by_key(|(index, _)| *index);
    Ok(done.into_iter().map(|(_, result)| result).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;
    use std::time::Duration;

    /// Fails every third run; counts how often it ran.
    struct Fake {
        runs: AtomicU32,
    }

    #[async_trait::async_trait]
    impl Sandbox for Fake {
        fn describe(&self) -> String {
            "fake".into()
        }
        async fn exec(&self, _spec: &CommandSpec) -> Result<CommandResult> {
            let n = self.runs.fetch_add(1, Ordering::SeqCst);
            tokio::task::yield_now().await;
            Ok(CommandResult {
                exit_code: Some(i32::from(n % 3 == 2)),
                duration: Duration::ZERO,
                output: String::new(),
                blocked: None,
            })
        }
        async fn close(&self) -> Result<()> {
            Ok(())
        }
    }

    fn fakes(n: usize) -> Vec<Box<dyn Sandbox>> {
        (0..n)
            .map(|_| {
                Box::new(Fake {
                    runs: AtomicU32::new(0),
                }) as Box<dyn Sandbox>
            })
            .collect()
    }

    fn spec() -> CommandSpec {
        CommandSpec {
            argv: vec!["true".into()],
            env: Vec::new(),
            timeout: Duration::from_secs(1),
            output_limit: 10,
        }
    }

    #[tokio::test]
    async fn spreads_all_runs_and_stops_when_asked() {
        let sandboxes = fakes(3);
        let results = run_parallel(&sandboxes, &spec(), 50).await.unwrap();
        assert_eq!(results.len(), 50);
        let failures = results.iter().filter(|r| r.exit_code == Some(1)).count();
        assert!((14..=17).contains(&failures), "{failures}");

        let sandboxes = fakes(2);
        let results = run_parallel_until(&sandboxes, &spec(), 100, |so_far| so_far.len() >= 10)
            .await
            .unwrap();
        assert!((10..=11).contains(&results.len()), "{}", results.len());
        assert!(run_parallel(&fakes(0), &spec(), 1).await.is_err());
    }
}
