//! The OTLP seam: records built by an intake (not parsed from text).

use serde_json::json;
use tracelab_evidence::{FailureKind, Language, LogRecord, ParseOptions, parse_log_records};

#[test]
fn otlp_records_keep_correlation_ids_and_are_redacted() {
    let error = LogRecord {
        timestamp: Some("2024-05-14T18:10:00Z".into()),
        severity_text: None,
        severity_number: Some(17),
        body: "checkout failed for ann@example.com".into(),
        attributes: json!({
            "exception.type": "TypeError",
            "exception.message": "Cannot read properties of null (reading 'total')",
            "exception.stacktrace": "TypeError: Cannot read properties of null (reading 'total')\n    at orderSummary (/srv/app/src/orders/summary.js:17:22)\n    at /srv/app/node_modules/express/lib/router/layer.js:95:5",
            "http.request.header.authorization": "Bearer abc.def.ghi"
        })
        .as_object()
        .unwrap()
        .clone(),
        resource: json!({"service.name": "web", "service.version": "1.4.2", "vcs.ref.head.revision": "9fceb02d0ae598e95dc970b74767f19372d61af8"})
            .as_object()
            .unwrap()
            .clone(),
        trace_id: Some("0af7651916cd43dd8448eb211c80319c".into()),
        span_id: Some("b7ad6b7169203331".into()),
    };
    let info = LogRecord {
        severity_number: Some(9),
        body: "ok".into(),
        ..LogRecord::default()
    };
    let out = parse_log_records(&[info, error], &ParseOptions::default());
    assert_eq!(out.failures.len(), 1);
    let f = &out.failures[0];
    assert_eq!(
        (f.kind, f.language),
        (FailureKind::LogError, Language::Javascript)
    );
    assert_eq!(f.exception_type.as_deref(), Some("TypeError"));
    assert_eq!(f.line, Some(2));
    assert_eq!(f.context["trace_id"], "0af7651916cd43dd8448eb211c80319c");
    assert_eq!(f.context["span_id"], "b7ad6b7169203331");
    assert_eq!(f.context["service"], "web");
    assert_eq!(f.context["service.version"], "1.4.2");
    assert_eq!(
        f.context["vcs.revision"],
        "9fceb02d0ae598e95dc970b74767f19372d61af8"
    );
    assert!(
        f.context["log_message"].starts_with("checkout failed for <email:"),
        "{:?}",
        f.context
    );
    assert!(f.stack_signature.is_some());
    assert_eq!(f.frames.iter().filter(|fr| fr.in_app).count(), 1);
}

#[test]
fn json_log_fields_name_the_deployed_version_and_revision() {
    let r = LogRecord::from_json(
        serde_json::from_str(
            r#"{"level":"error","msg":"boom","@version":"1","app_version":"2.0.0-rc1","git_sha":"9fceb02","error":{"type":"ValueError","message":"bad"}}"#,
        )
        .unwrap(),
    );
    let out = parse_log_records(&[r], &ParseOptions::default());
    let f = &out.failures[0];
    assert_eq!(
        f.context["service.version"], "2.0.0-rc1",
        "not the shipper's @version"
    );
    assert_eq!(f.context["vcs.revision"], "9fceb02");
    let r = LogRecord::from_json(
        serde_json::from_str(
            r#"{"level":"error","msg":"boom","revision":"not a revision at all"}"#,
        )
        .unwrap(),
    );
    let out = parse_log_records(&[r], &ParseOptions::default());
    assert!(!out.failures[0].context.contains_key("vcs.revision"));
}
