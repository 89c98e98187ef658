//! CPU work that should take only the cores the test runs leave idle.
//!
//! On a small machine the code index (seconds of tree-sitter parsing for a
//! large module's history) ran beside the fix's verification at the same
//! priority and slowed its test runs, which are the longer chain: the
//! verdict waited for both. At a lower priority the index fills the gaps
//! between the runs instead, and still gets every core once they end.

/// The nice value background work runs at (0 is normal, 19 the lowest).
const NICENESS: i32 = 10;

/// Runs `work` on a thread of its own at a lower CPU priority, with the
/// data-parallel (rayon) work inside it on a pool of such threads: the
/// process's global pool keeps its priority. Where the priority cannot be
/// lowered the work runs as it would have.
pub async fn run<T: Send + 'static>(
    name: &str,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let (done, result) = tokio::sync::oneshot::channel();
    let thread_name = name.to_string();
    std::thread::Builder::new()
        .name(thread_name.clone())
        .spawn(move || {
            lower_priority();
            let pool = rayon::ThreadPoolBuilder::new()
                .thread_name(move |i| format!("{thread_name}-{i}"))
                .start_handler(|_| lower_priority())
                .build();
            let out = match pool {
                Ok(pool) => pool.install(work),
                Err(_) => work(),
            };
            let _ = done.send(out);
        })
        .map_err(|e| format!("cannot start {name}: {e}"))?;
    result
        .await
        .map_err(|_| format!("{name} stopped before it finished"))
}

/// Lowers the calling thread's priority (on Linux a thread's nice value is
/// its own, and threads it starts inherit it).
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{getpriority_process, setpriority_process};
        let thread = Some(rustix::thread::gettid());
        // Never raised: a process started at a lower priority keeps it.
        let lowered = getpriority_process(thread).map_or(NICENESS, |now| now.max(NICENESS));
        if let Err(e) = setpriority_process(thread, lowered) {
            tracing::debug!(error = %e, "background work keeps its priority");
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[tokio::test]
    async fn background_work_runs_at_a_lower_priority_and_returns_its_result() {
        let own = || rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap();
        let before = own();
        let (sum, nice) = super::run("background-test", || {
            use rayon::prelude::*;
            let sum: u64 = (1..=1000u64).into_par_iter().sum();
            let nice = rustix::process::getpriority_process(Some(rustix::thread::gettid()));
            (sum, nice.ok())
        })
        .await
        .unwrap();
        assert_eq!(sum, 500_500);
        assert!(nice.is_some_and(|n| n >= super::NICENESS), "{nice:?}");
        assert!(nice.is_some_and(|n| n >= before), "never raised: {nice:?}");
        assert_eq!(own(), before, "the caller's own thread keeps its priority");
    }
}
