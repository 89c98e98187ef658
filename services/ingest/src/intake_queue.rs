//! The intake queue: CI systems publish a `CiFailureReport` on
//! `<prefix>.intake.ci-failures` or JSON lines on `<prefix>.intake.logs`
//! (optional headers: `Content-Encoding: gzip`, `Content-Type` as for
//! `/v1/logs`, `X-TraceLab-Source`; the source is `jetstream` otherwise).
//! The durable consumer `ingest` on the work queue runs [`handle`]; its
//! result settles the message through `tracelab_fleet::worker`. Rate limited
//! or busy: the handler waits for the refusal's `retry_after` and tries
//! again (back-pressure: the consumer pulls nothing meanwhile); a backend
//! down → Unavailable → nak with the retry policy's backoff; invalid or too
//! large → InvalidArgument → dead letter with the reason. A redelivered
//! message has the same content, hence the same evidence ids: stored and
//! counted once.

use crate::auth::SOURCE_HEADER;
use crate::body;
use crate::rejection::Rejection;
use crate::submission::{Ingest, Input, Submission};
use tracelab_bus::Delivery;
use tracelab_domain::{Error, Result};

/// The subject tokens after `<prefix>.intake.`.
pub const CI_FAILURES: &str = "ci-failures";
pub const LOGS: &str = "logs";

fn header<'a>(delivery: &'a Delivery, name: &str) -> Option<&'a str> {
    delivery
        .message
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Submits, waiting out rate limits and a full admission queue instead of
/// refusing: a consumer pulls at its own pace, so waiting here (the worker
/// keeps the message alive with progress acks) is back-pressure on the
/// stream, and nothing reaches the dead-letter subject only for being early.
async fn submit_when_admitted(
    ingest: &Ingest,
    submission: Submission,
) -> std::result::Result<crate::submission::Summary, Rejection> {
    loop {
        match ingest.submit(submission.clone()).await {
            Err(Rejection::RateLimited { retry_after } | Rejection::Busy { retry_after }) => {
                tracing::debug!(?retry_after, source = %submission.source, "intake waits for admission");
                tokio::time::sleep(retry_after).await;
            }
            other => return other,
        }
    }
}

pub async fn handle(ingest: &Ingest, delivery: &Delivery) -> Result<()> {
    let message = &delivery.message;
    let kind = message.subject.rsplit('.').next().unwrap_or_default();
    let limit = ingest.limits().max_body_bytes;
    let submitted = async {
        let body = body::decode(
            header(delivery, "content-encoding"),
            message.payload.clone(),
            limit,
        )?;
        let input = match kind {
            CI_FAILURES => Input::CiReport,
            LOGS => Input::Logs(body::log_encoding(header(delivery, "content-type"), &body)?),
            other => {
                return Err(Error::invalid(format!(
                    "intake subject {} ends in {other:?}; publish on .intake.{CI_FAILURES} or .intake.{LOGS}",
                    message.subject
                ))
                .into());
            }
        };
        let source = header(delivery, SOURCE_HEADER)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .unwrap_or("jetstream")
            .chars()
            .take(128)
            .collect();
        let submission = Submission {
            input,
            source,
            channel: "intake",
            body,
        };
        submit_when_admitted(ingest, submission).await
    };
    // The reason goes to the dead letter's headers and the logs: redacted,
    // since a parse error may quote the raw input.
    let summary = submitted.await.map_err(|r| {
        let mut error = r.into_error();
        error.message = ingest.redact(&error.message);
        error
    })?;
    tracing::info!(
        subject = %message.subject,
        failures = summary.failures,
        stored = summary.stored,
        "intake message ingested"
    );
    Ok(())
}
