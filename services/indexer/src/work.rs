//! Indexing and locating are blocking CPU work: they run on tokio's blocking
//! threads, at most `concurrency` at once, and not at all when the caller's
//! gRPC deadline (`grpc-timeout`) passed while they waited for a slot.

use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tonic::Status;

#[derive(Debug, Clone)]
pub struct Workers {
    permits: Arc<Semaphore>,
}

/// A `grpc-timeout` value (`<digits><H|M|S|m|u|n>`, at most 8 digits).
pub fn parse_grpc_timeout(value: &str) -> Option<Duration> {
    if value.len() < 2 || value.len() > 9 {
        return None;
    }
    let (digits, unit) = value.split_at(value.len() - 1);
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// When the caller stops waiting, from the request's `grpc-timeout`.
pub fn deadline<T>(request: &tonic::Request<T>) -> Option<Instant> {
    request
        .metadata()
        .get("grpc-timeout")
        .and_then(|v| v.to_str().ok())
        .and_then(parse_grpc_timeout)
        .map(|d| Instant::now() + d)
}

fn expired() -> Status {
    Status::deadline_exceeded("the request's deadline passed before its work could start")
}

impl Workers {
    pub fn new(concurrency: usize) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(concurrency.max(1))),
        }
    }

    /// Runs `job` on a blocking thread once a slot is free, inside the current span.
    pub async fn run<T, F>(&self, deadline: Option<Instant>, job: F) -> Result<T, Status>
    where
        T: Send + 'static,
        F: FnOnce() -> Result<T, Status> + Send + 'static,
    {
        let acquire = self.permits.clone().acquire_owned();
        let permit = match deadline {
            Some(d) => tokio::time::timeout_at(d, acquire)
                .await
                .map_err(|_| expired())?,
            None => acquire.await,
        }
        .map_err(|_| Status::unavailable("the indexer is shutting down"))?;
        let span = tracing::Span::current();
        let deadline = deadline.map(Instant::into_std);
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let _entered = span.enter();
            if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                return Err(expired());
            }
            job()
        })
        .await
        .map_err(|e| Status::internal(format!("indexing task failed: {e}")))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeouts_parse() {
        assert_eq!(parse_grpc_timeout("5S"), Some(Duration::from_secs(5)));
        assert_eq!(parse_grpc_timeout("250m"), Some(Duration::from_millis(250)));
        assert_eq!(parse_grpc_timeout("2H"), Some(Duration::from_secs(7200)));
        assert_eq!(parse_grpc_timeout("S"), None);
        assert_eq!(parse_grpc_timeout("5x"), None);
        assert_eq!(parse_grpc_timeout("123456789S"), None);
    }

    #[tokio::test]
    async fn a_deadline_that_passes_while_waiting_skips_the_work() {
        let workers = Workers::new(1);
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let busy = {
            let workers = workers.clone();
            tokio::spawn(async move {
                workers
                    .run(None, move || {
                        wait.recv().ok();
                        Ok(1)
                    })
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = ran.clone();
        let late = workers
            .run(
                Some(Instant::now() + Duration::from_millis(30)),
                move || {
                    flag.store(true, std::sync::atomic::Ordering::SeqCst);
                    Ok(2)
                },
            )
            .await;
        assert_eq!(late.unwrap_err().code(), tonic::Code::DeadlineExceeded);
        assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
        release.send(()).unwrap();
        assert_eq!(busy.await.unwrap().unwrap(), 1);
        assert_eq!(workers.run(None, || Ok(3)).await.unwrap(), 3);
    }
}
