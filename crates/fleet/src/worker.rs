//! The consumer loop every service runs: pull a delivery, run the handler
//! while progress-acking so a long job is not redelivered, settle by the
//! handler's result ([`Outcome::from_error`]: ack, nak with backoff, or dead
//! letter), and repeat until shutdown. A shutdown lets the in-flight handler
//! finish (up to the drain time); a bus error re-opens the consumer with
//! backoff instead of ending the service.

use backon::{BackoffBuilder, ExponentialBuilder};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracelab_bus::{Bus, ConsumerSpec, Delivery, Outcome, RetryPolicy};
use tracelab_domain::Result;
use tracelab_service::Shutdown;
use tracing::Instrument;

/// How one worker loop behaves.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// For logs and span names.
    pub name: String,
    /// How long in-flight work may continue after shutdown is requested.
    pub drain: Duration,
}

/// Runs `handler` on every delivery of `spec` until `shutdown`.
pub async fn run<H, Fut>(
    bus: Arc<dyn Bus>,
    spec: ConsumerSpec,
    options: WorkerOptions,
    shutdown: Shutdown,
    handler: H,
) -> Result<()>
where
    H: Fn(Arc<Delivery>) -> Fut,
    Fut: Future<Output = Result<()>>,
{
    let progress_every = (spec.ack_wait / 3).max(Duration::from_millis(200));
    let mut reconnect = ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(200))
        .with_max_delay(Duration::from_secs(5))
        .without_max_times()
        .build();
    'open: while !shutdown.is_requested() {
        let mut consumer = match bus.consumer(spec.clone()).await {
            Ok(c) => c,
            Err(e) => {
                let delay = reconnect.next().unwrap_or(Duration::from_secs(5));
                tracing::warn!(worker = %options.name, error = %e, ?delay, "cannot open consumer; retrying");
                sleep_or_shutdown(delay, &shutdown).await;
                continue;
            }
        };
        let mut sampled: Option<Instant> = None;
        loop {
            if shutdown.is_requested() {
                break 'open;
            }
            if sampled.is_none_or(|at| at.elapsed() >= BACKLOG_EVERY) {
                sampled = Some(Instant::now());
                record_backlog(&mut consumer, &options.name).await;
            }
            let next = tokio::select! {
                next = consumer.next(Duration::from_secs(1)) => next,
                _ = shutdown.requested() => break 'open,
            };
            let delivery = match next {
                Ok(Some(d)) => Arc::new(d),
                Ok(None) => continue,
                Err(e) => {
                    let delay = reconnect.next().unwrap_or(Duration::from_secs(5));
                    tracing::warn!(worker = %options.name, error = %e, ?delay, "consumer failed; re-opening");
                    sleep_or_shutdown(delay, &shutdown).await;
                    continue 'open;
                }
            };
            reconnect = ExponentialBuilder::default()
                .with_min_delay(Duration::from_millis(200))
                .with_max_delay(Duration::from_secs(5))
                .without_max_times()
                .build();
            handle_one(&options, delivery, progress_every, &shutdown, &handler).await;
        }
    }
    tracing::info!(worker = %options.name, "stopped");
    Ok(())
}

/// How often a worker loop samples its consumer's backlog for `/metrics`.
const BACKLOG_EVERY: Duration = Duration::from_secs(5);

/// Sets `tracelab_queue_pending` and `tracelab_queue_ack_pending` for this
/// consumer (what an autoscaler or an alert reads). A failed sample is only
/// logged: the next `next` call finds out whether the bus is gone.
async fn record_backlog(consumer: &mut tracelab_bus::Consumer, name: &str) {
    match consumer.backlog().await {
        Ok(Some(backlog)) => {
            metrics::gauge!("tracelab_queue_pending", "consumer" => name.to_string())
                .set(backlog.pending as f64);
            metrics::gauge!("tracelab_queue_ack_pending", "consumer" => name.to_string())
                .set(backlog.ack_pending as f64);
        }
        Ok(None) => {}
        Err(e) => tracing::debug!(worker = %name, error = %e, "cannot sample the backlog"),
    }
}

/// `spec` with the delivery settings every consuming service has: how long
/// a message may go without an ack or progress before it is redelivered,
/// and how many deliveries it gets before it is dead-lettered.
pub fn with_delivery(
    spec: ConsumerSpec,
    ack_wait_seconds: u64,
    max_deliveries: u32,
) -> ConsumerSpec {
    spec.ack_wait(Duration::from_secs(ack_wait_seconds.max(1)))
        .retry(RetryPolicy {
            max_deliveries: max_deliveries.max(1),
            ..RetryPolicy::default()
        })
}

/// Runs `concurrency` worker loops on one consumer (they share its
/// deliveries) and waits for all of them: a service's whole consumer side.
pub async fn run_pool<H, Fut>(
    concurrency: usize,
    bus: Arc<dyn Bus>,
    spec: ConsumerSpec,
    options: WorkerOptions,
    shutdown: Shutdown,
    handler: H,
) -> anyhow::Result<()>
where
    H: Fn(Arc<Delivery>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<()>> + Send + 'static,
{
    let workers: Vec<_> = (0..concurrency.max(1))
        .map(|_| {
            tokio::spawn(run(
                bus.clone(),
                spec.clone(),
                options.clone(),
                shutdown.clone(),
                handler.clone(),
            ))
        })
        .collect();
    for w in workers {
        w.await??;
    }
    Ok(())
}

async fn sleep_or_shutdown(delay: Duration, shutdown: &Shutdown) {
    tokio::select! {
        _ = tokio::time::sleep(delay) => {}
        _ = shutdown.requested() => {}
    }
}

async fn handle_one<H, Fut>(
    options: &WorkerOptions,
    delivery: Arc<Delivery>,
    progress_every: Duration,
    shutdown: &Shutdown,
    handler: &H,
) where
    H: Fn(Arc<Delivery>) -> Fut,
    Fut: Future<Output = Result<()>>,
{
    let span = tracing::info_span!(
        "handle",
        worker = %options.name,
        subject = %delivery.message.subject,
        id = %delivery.message.id,
        delivered = delivery.delivered
    );
    tracelab_service::telemetry::continue_trace(&span, delivery.message.traceparent.as_deref());
    let mut work = Box::pin(handler(delivery.clone()).instrument(span.clone()));
    let mut ticker = tokio::time::interval(progress_every);
    ticker.tick().await;
    let mut drain_deadline: Option<tokio::time::Instant> = None;
    let result = loop {
        let drain = async {
            match drain_deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            result = &mut work => break Some(result),
            _ = ticker.tick() => {
                if let Err(e) = delivery.progress().await {
                    tracing::warn!(parent: &span, error = %e, "progress ack failed");
                }
            }
            _ = shutdown.requested(), if drain_deadline.is_none() => {
                drain_deadline = Some(tokio::time::Instant::now() + options.drain);
                tracing::info!(parent: &span, drain = ?options.drain, "draining the job in flight");
            }
            _ = drain => break None,
        }
    };
    drop(work); // releases the handler's clone of the delivery
    let Some(result) = result else {
        tracing::warn!(parent: &span, "drain time over; the message will be redelivered");
        return;
    };
    let outcome = Outcome::from_result(&result);
    let settled = match &outcome {
        Outcome::Ack => "ack",
        Outcome::Retry { .. } => "retry",
        Outcome::Reject { .. } => "reject",
    };
    metrics::counter!("tracelab_messages_total", "consumer" => options.name.clone(), "outcome" => settled)
        .increment(1);
    if delivery.delivered > 1 {
        metrics::counter!("tracelab_redeliveries_total", "consumer" => options.name.clone())
            .increment(1);
    }
    if let Err(e) = &result {
        tracing::warn!(parent: &span, error = %e, ?outcome, "handler failed");
    }
    // Only this task holds the delivery now (unless the handler spawned work that kept it).
    match Arc::try_unwrap(delivery) {
        Ok(d) => {
            if let Err(e) = d.settle(outcome).await {
                tracing::warn!(parent: &span, error = %e, "could not settle; it will be redelivered");
            }
        }
        Err(_) => {
            tracing::error!(parent: &span, "the handler kept its delivery; leaving it to redelivery")
        }
    }
}
