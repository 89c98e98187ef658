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
