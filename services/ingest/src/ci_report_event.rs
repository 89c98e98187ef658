//! `CiReportRecorded`: one event per CI report ingest admits, passing ones
//! too (#16). `EvidenceRecorded` is one per failure, so a job that passed
//! sends none and a consumer cannot tell a repaired branch from a silent
//! one; this event says what the job saw at its commit — its name, whether
//! test reports were sent, and every failure parsed from it — so the
//! indexer can see a failing → passing sequence complete and mine it.
//!
//! Published on `<prefix>.evidence.ci-report` after the report's evidence
//! rows are stored, with message id `<report id>.ci-report`: the report id
//! is derived from the source and the body, so a retried request or a
//! redelivered intake message publishes the same message (de-duplicated).

use crate::evidence;
use tracelab_bus::Bus;
use tracelab_domain::Result;
use tracelab_evidence::{CiFailureReport, Failure};
use tracelab_fleet::events;
use tracelab_proto::events::v1::{CiReportRecorded, ReportedFailure, ReportedFrame};

/// `cr-` and 32 hex digits, from the (redacted) source and the body's digest.
pub fn report_id(source: &str, digest: &[u8; 32]) -> String {
    let id = evidence::evidence_id("ci-report", source, digest, 0);
    format!("cr-{}", id.trim_start_matches("ev-"))
}

/// The event for `report` (its metadata already redacted) with the
/// failures parsed from it.
pub fn event(
    report: &CiFailureReport,
    failures: &[Failure],
    source: &str,
    digest: &[u8; 32],
    received_at_unix_ms: i64,
) -> CiReportRecorded {
    CiReportRecorded {
        report_id: report_id(source, digest),
        source: source.to_owned(),
        repository: report.repository.clone().unwrap_or_default(),
        branch: report.branch.clone().unwrap_or_default(),
        commit: report.commit.clone().unwrap_or_default(),
        job: report.job.name.clone().unwrap_or_default(),
        provider: report.job.provider.clone().unwrap_or_default(),
        has_test_reports: !report.reports.is_empty(),
        failures: failures.iter().map(reported).collect(),
        received_at_unix_ms,
    }
}

/// A failure in the terms a history is mined in: the test, the error
/// types of it and its causes, the message, and the frames of the whole
/// chain with a file and a line.
fn reported(f: &Failure) -> ReportedFailure {
    let mut error_types: Vec<String> = f.exception_type.iter().cloned().collect();
    for t in f.causes.iter().filter_map(|c| c.exception_type.clone()) {
        if !error_types.contains(&t) {
            error_types.push(t);
        }
    }
    ReportedFailure {
        test: f.test_id.clone().unwrap_or_default(),
        error_types,
        message: f.message.clone(),
        frames: f
            .frames
            .iter()
            .chain(f.causes.iter().flat_map(|c| &c.frames))
            .filter_map(|fr| {
                Some(ReportedFrame {
                    file: fr.file.clone()?,
                    line: fr.line?,
                })
            })
            .collect(),
    }
}

/// Publishes `event` on the CI report subject.
pub async fn publish(bus: &dyn Bus, event: &CiReportRecorded) -> Result<()> {
    events::publish(
        bus,
        bus.topology().ci_reports(),
        format!("{}.ci-report", event.report_id),
        event,
    )
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracelab_evidence::{FailureKind, Frame, Language, ParseOptions, parse_ci_report};

    #[test]
    fn a_passing_report_is_an_event_without_failures_and_ids_follow_the_body() {
        let report: CiFailureReport = serde_json::from_value(serde_json::json!({
            "schema": 1,
            "repository": "https://example.com/shop.git",
            "commit": "abcdef1234567",
            "branch": "fix",
            "job": {"name": "test", "provider": "github_actions"},
            "reports": [{"path": "report.xml", "content":
                "<testsuite tests=\"1\" failures=\"0\"><testcase classname=\"t\" name=\"ok\"/></testsuite>"}]
        }))
        .expect("report");
        let parsed = parse_ci_report(&report, &ParseOptions::default());
        let d = evidence::content_digest(b"body");
        let e = event(&report, &parsed.failures, "ci", &d, 7);
        assert_eq!(e.job, "test");
        assert_eq!(e.branch, "fix");
        assert!(e.has_test_reports);
        assert!(e.failures.is_empty(), "{:?}", e.failures);
        assert!(e.report_id.starts_with("cr-") && e.report_id.len() == 35);
        assert_eq!(e.report_id, report_id("ci", &d));
        assert_ne!(e.report_id, report_id("other", &d));
        assert_ne!(
            e.report_id,
            report_id("ci", &evidence::content_digest(b"x"))
        );
    }

    #[test]
    fn a_failure_keeps_its_test_error_types_and_framed_lines() {
        let mut f = Failure::new(FailureKind::TestFailure, Language::Python);
        f.test_id = Some("tests.test_cart.CartTest.test_total".into());
        f.exception_type = Some("AssertionError".into());
        f.message = "AssertionError: 3 != 4".into();
        f.frames = vec![
            Frame {
                file: Some("/home/runner/work/shop/shop/app/cart.py".into()),
                function: Some("total".into()),
                line: Some(12),
                in_app: true,
            },
            Frame {
                file: None,
                function: Some("<module>".into()),
                line: Some(3),
                in_app: true,
            },
        ];
        let r = reported(&f);
        assert_eq!(r.test, "tests.test_cart.CartTest.test_total");
        assert_eq!(r.error_types, vec!["AssertionError".to_string()]);
        assert_eq!(r.frames.len(), 1);
        assert_eq!(r.frames[0].line, 12);
    }
}
