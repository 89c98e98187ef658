//! OTLP logs: the OTLP/JSON sample is decoded, mapped and parsed (snapshot);
//! the same request encoded as protobuf gives the same result; damaged or
//! hostile bodies are clear errors.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use prost::Message as _;
use tracelab_evidence::otlp::{OtlpEncoding, decode_logs};
use tracelab_evidence::{ErrorKind, ParseOptions, parse_otlp_logs};

fn sample_json() -> Vec<u8> {
    std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/otlp/export_logs.json"
    ))
    .unwrap()
}

/// The JSON sample re-encoded as OTLP protobuf.
fn sample_protobuf() -> Vec<u8> {
    let request: ExportLogsServiceRequest = serde_json::from_slice(&sample_json()).unwrap();
    request.encode_to_vec()
}

#[test]
fn otlp_json_records_are_mapped() {
    let logs = decode_logs(&sample_json(), OtlpEncoding::Json, 1000).unwrap();
    assert_eq!(logs.dropped, 0);
    insta::assert_json_snapshot!("otlp_json_records", logs.records);
}

#[test]
fn otlp_json_failures() {
    let out =
        parse_otlp_logs(&sample_json(), OtlpEncoding::Json, &ParseOptions::default()).unwrap();
    insta::assert_json_snapshot!("otlp_json_failures", out);
    let f = &out.failures;
    assert_eq!(f.len(), 3, "the INFO and WARN records are not failures");
    assert_eq!(
        f[0].exception_type.as_deref(),
        Some("java.lang.IllegalStateException")
    );
    assert_eq!(f[0].context["service"], "checkout");
    assert_eq!(f[0].context["trace_id"], "0af7651916cd43dd8448eb211c80319c");
    assert_eq!(f[0].context["span_id"], "00f067aa0ba902b7");
    assert!(f[0].frames.len() >= 3 && f[0].stack_signature.is_some());
    assert_eq!(
        f[1].exception_type.as_deref(),
        Some("billing.errors.CardDeclined")
    );
    assert!(
        !f[1].context.contains_key("trace_id"),
        "an all-zero trace id is no trace id"
    );
    assert!(f[1].message.contains("<card:"), "{}", f[1].message);
    assert_eq!(f[2].message, "ledger write timed out");
    let text = serde_json::to_string(&out).unwrap();
    for planted in [
        "ann@example.com",
        "4111 1111 1111 1111",
        "eyJhbGciOiJIUzI1NiJ9",
    ] {
        assert!(!text.contains(planted), "{planted} leaked");
    }
}

#[test]
fn protobuf_and_json_agree() {
    let opts = ParseOptions::default();
    let from_json = parse_otlp_logs(&sample_json(), OtlpEncoding::Json, &opts).unwrap();
    let from_pb = parse_otlp_logs(&sample_protobuf(), OtlpEncoding::Protobuf, &opts).unwrap();
    assert_eq!(
        serde_json::to_value(&from_pb).unwrap(),
        serde_json::to_value(&from_json).unwrap()
    );
}

#[test]
fn records_over_the_cap_are_counted() {
    let logs = decode_logs(&sample_protobuf(), OtlpEncoding::Protobuf, 2).unwrap();
    assert_eq!((logs.records.len(), logs.dropped), (2, 3));
    let opts = ParseOptions {
        limits: tracelab_evidence::Limits {
            max_records: 1,
            ..Default::default()
        },
        ..ParseOptions::default()
    };
    let out = parse_otlp_logs(&sample_protobuf(), OtlpEncoding::Protobuf, &opts).unwrap();
    assert!(
        out.diagnostics.iter().any(|d| d.code == "records_capped"),
        "{:?}",
        out.diagnostics
    );
}

fn varint(mut n: usize, out: &mut Vec<u8>) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// `tag` (length-delimited) wrapping `inner`.
fn field(tag: u8, inner: &[u8]) -> Vec<u8> {
    let mut v = vec![(tag << 3) | 2];
    varint(inner.len(), &mut v);
    v.extend_from_slice(inner);
    v
}

#[test]
fn deeply_nested_values_are_refused_without_overflowing_the_stack() {
    // AnyValue{array{values:[AnyValue{array{...}}]}} 10,000 levels deep, as a log body.
    let mut value = field(1, b"x"); // AnyValue.string_value
    for _ in 0..10_000 {
        value = field(5, &field(1, &value)); // AnyValue.array_value(ArrayValue.values)
    }
    let request = field(1, &field(2, &field(2, &field(5, &value))));
    let err = decode_logs(&request, OtlpEncoding::Protobuf, 10).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.to_string().contains("recursion"), "{err}");

    let deep_json = format!(
        r#"{{"resourceLogs":[{{"scopeLogs":[{{"logRecords":[{{"body":{}"x"{}}}]}}]}}]}}"#,
        r#"{"arrayValue":{"values":["#.repeat(5_000),
        "]}}".repeat(5_000)
    );
    let err = decode_logs(deep_json.as_bytes(), OtlpEncoding::Json, 10).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
}

#[test]
fn wrong_json_shapes_are_clear_errors() {
    for body in [
        &b"\"text\""[..],
        b"{\"resourceLogs\": 3}",
        b"{",
        b"\xff\xfe",
    ] {
        let err = decode_logs(body, OtlpEncoding::Json, 10).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("invalid argument: OTLP logs JSON"),
            "{err}"
        );
    }
    // Unknown fields are ignored, as OTLP/JSON requires.
    let logs = decode_logs(br#"{"resourceLogs":[],"future":1}"#, OtlpEncoding::Json, 10).unwrap();
    assert!(logs.records.is_empty());
}
