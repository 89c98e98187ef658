//! OTLP logs: an `ExportLogsServiceRequest` — the body of OTLP/HTTP
//! (`application/x-protobuf` or OTLP/JSON `application/json`) and of the
//! gRPC `LogsService/Export` call — decoded with the `opentelemetry-proto`
//! types and mapped onto [`LogRecord`]s: body, severity, attributes,
//! resource attributes (`service.name`), scope name, and valid trace and span
//! ids as lower-case hex. `exception.type`/`message`/`stacktrace` attributes
//! stay attributes; [`crate::parse_log_records`] turns them into an
//! exception with frames.
//!
//! Decoding is all-or-nothing (a damaged protobuf message has no trustworthy
//! part); the body size is the caller's limit ([`crate::RequestLimits`]),
//! nesting is bounded by prost's and serde_json's recursion limits (100 and
//! 128 levels), records beyond `max_records` are counted, not kept.

use crate::parsers::logs::LogRecord;
use crate::{Error, ParseOptions, ParseOutput, Result};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use prost::Message as _;
use serde_json::{Map, Value};

/// How an OTLP body is encoded (from its `Content-Type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtlpEncoding {
    /// `application/x-protobuf` (OTLP/HTTP) or a gRPC message.
    Protobuf,
    /// `application/json` (OTLP/JSON: hex ids, camelCase fields).
    Json,
}

impl OtlpEncoding {
    /// The encoding for a `Content-Type` header value; `None` when it is neither.
    pub fn from_content_type(content_type: &str) -> Option<Self> {
        let essence = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match essence.as_str() {
            "application/x-protobuf" | "application/protobuf" | "application/grpc" => {
                Some(Self::Protobuf)
            }
            "application/json" => Some(Self::Json),
            _ => None,
        }
    }
}

/// The records of one export request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OtlpLogs {
    pub records: Vec<LogRecord>,
    /// Records beyond `max_records`, not converted.
    pub dropped: usize,
}

/// Decodes an export request. A malformed body is `InvalidArgument` with the
/// decoder's reason (the service answers 400; OTLP senders do not retry it).
pub fn decode_logs(body: &[u8], encoding: OtlpEncoding, max_records: usize) -> Result<OtlpLogs> {
    let request = match encoding {
        OtlpEncoding::Protobuf => ExportLogsServiceRequest::decode(body)
            .map_err(|e| Error::InvalidArgument(format!("OTLP logs protobuf: {e}")))?,
        OtlpEncoding::Json => serde_json::from_slice::<ExportLogsServiceRequest>(body)
            .map_err(|e| Error::InvalidArgument(format!("OTLP logs JSON: {e}")))?,
    };
    Ok(records(request, max_records))
}

/// Decodes an export request and parses its records into failures
/// (normalised, signed, redacted like every other input).
pub fn parse_otlp_logs(
    body: &[u8],
    encoding: OtlpEncoding,
    options: &ParseOptions,
) -> Result<ParseOutput> {
    let logs = decode_logs(body, encoding, options.limits.max_records)?;
    let mut out = crate::parse_log_records(&logs.records, options);
    if logs.dropped > 0 {
        out.diagnostics.push(crate::Diagnostic::warning(
            "records_capped",
            format!(
                "request has {} log records; the first {} were read",
                logs.records.len() + logs.dropped,
                logs.records.len()
            ),
        ));
    }
    Ok(out)
}

/// Flattens resource → scope → record, keeping at most `max` records.
pub fn records(request: ExportLogsServiceRequest, max: usize) -> OtlpLogs {
    let mut out = OtlpLogs::default();
    for rl in request.resource_logs {
        let resource = rl
            .resource
            .map(|r| attributes(r.attributes))
            .unwrap_or_default();
        for sl in rl.scope_logs {
            let scope = sl.scope.map(|s| s.name).filter(|n| !n.is_empty());
            for r in sl.log_records {
                if out.records.len() >= max {
                    out.dropped += 1;
                    continue;
                }
                out.records.push(record(r, &resource, scope.as_deref()));
            }
        }
    }
    out
}

fn record(
    r: opentelemetry_proto::tonic::logs::v1::LogRecord,
    resource: &Map<String, Value>,
    scope: Option<&str>,
) -> LogRecord {
    let mut attrs = attributes(r.attributes);
    if let Some(s) = scope {
        attrs
            .entry("otel.scope.name")
            .or_insert_with(|| Value::String(s.to_owned()));
    }
    if !r.event_name.is_empty() {
        attrs
            .entry("event.name")
            .or_insert_with(|| Value::String(r.event_name.clone()));
    }
    // A structured body (a map) is a JSON log line: its message is the body,
    // its other fields are attributes.
    let body = match r.body.and_then(|b| b.value) {
        Some(any_value::Value::KvlistValue(kv)) => {
            let map = attributes(kv.values);
            let from_json = LogRecord::from_json(map);
            for (k, v) in from_json.attributes {
                attrs.entry(k).or_insert(v);
            }
            from_json.body
        }
        Some(any_value::Value::StringValue(s)) => s,
        Some(v) => text(&value(v)),
        None => String::new(),
    };
    let nanos = if r.time_unix_nano != 0 {
        r.time_unix_nano
    } else {
        r.observed_time_unix_nano
    };
    LogRecord {
        timestamp: (nanos != 0).then(|| rfc3339_from_unix_nanos(nanos)),
        severity_text: Some(r.severity_text)
            .filter(|s| !s.is_empty())
            .or_else(|| severity_name(r.severity_number).map(str::to_owned)),
        severity_number: Some(r.severity_number).filter(|n| *n != 0),
        body,
        attributes: attrs,
        resource: resource.clone(),
        trace_id: id_hex(&r.trace_id, 16),
        span_id: id_hex(&r.span_id, 8),
    }
}

/// The short name of an OTLP severity number's range (1–4 TRACE … 21–24 FATAL).
fn severity_name(n: i32) -> Option<&'static str> {
    Some(match n {
        1..=4 => "TRACE",
        5..=8 => "DEBUG",
        9..=12 => "INFO",
        13..=16 => "WARN",
        17..=20 => "ERROR",
        21..=24 => "FATAL",
        _ => return None,
    })
}

/// A valid id (right length, not all zeros) as lower-case hex.
fn id_hex(bytes: &[u8], len: usize) -> Option<String> {
    if bytes.len() != len || bytes.iter().all(|b| *b == 0) {
        return None;
    }
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn attributes(kvs: Vec<KeyValue>) -> Map<String, Value> {
    kvs.into_iter()
        .filter(|kv| !kv.key.is_empty())
        .map(|kv| {
            (
                kv.key,
                kv.value.and_then(|v| v.value).map_or(Value::Null, value),
            )
        })
        .collect()
}

fn any(v: AnyValue) -> Value {
    v.value.map_or(Value::Null, value)
}

/// An OTLP value as JSON (bytes as hex; non-finite doubles as text).
fn value(v: any_value::Value) -> Value {
    use any_value::Value as V;
    match v {
        V::StringValue(s) => Value::String(s),
        V::BoolValue(b) => Value::Bool(b),
        V::IntValue(i) => Value::from(i),
        V::DoubleValue(d) => serde_json::Number::from_f64(d)
            .map_or_else(|| Value::String(d.to_string()), Value::Number),
        V::ArrayValue(a) => Value::Array(a.values.into_iter().map(any).collect()),
        V::KvlistValue(kv) => Value::Object(attributes(kv.values)),
        V::BytesValue(b) => Value::String(b.iter().map(|x| format!("{x:02x}")).collect()),
        // A profiling-only string-table reference: no meaning in logs.
        V::StringValueStrindex(_) => Value::Null,
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// `2024-05-14T18:10:00.123456789Z` from nanoseconds since the Unix epoch.
fn rfc3339_from_unix_nanos(nanos: u64) -> String {
    let secs = nanos / 1_000_000_000;
    let sub = nanos % 1_000_000_000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    let frac = if sub == 0 {
        String::new()
    } else {
        format!(".{sub:09}").trim_end_matches('0').to_owned()
    };
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}{frac}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(rfc3339_from_unix_nanos(1), "1970-01-01T00:00:00.000000001Z");
        assert_eq!(
            rfc3339_from_unix_nanos(1_715_710_200_000_000_000),
            "2024-05-14T18:10:00Z"
        );
        assert_eq!(
            rfc3339_from_unix_nanos(951_782_400_500_000_000),
            "2000-02-29T00:00:00.5Z"
        );
        assert_eq!(
            rfc3339_from_unix_nanos(u64::MAX),
            "2554-07-21T23:34:33.709551615Z"
        );
    }

    #[test]
    fn ids_must_be_valid() {
        assert_eq!(id_hex(&[0; 16], 16), None);
        assert_eq!(id_hex(&[1; 8], 16), None);
        assert_eq!(id_hex(&[0xab; 8], 8).as_deref(), Some("abababababababab"));
    }

    #[test]
    fn content_types() {
        use OtlpEncoding::*;
        assert_eq!(
            OtlpEncoding::from_content_type("application/x-protobuf"),
            Some(Protobuf)
        );
        assert_eq!(
            OtlpEncoding::from_content_type("Application/JSON; charset=utf-8"),
            Some(Json)
        );
        assert_eq!(OtlpEncoding::from_content_type("text/plain"), None);
    }

    #[test]
    fn garbage_is_a_clear_error() {
        for enc in [OtlpEncoding::Protobuf, OtlpEncoding::Json] {
            let err = decode_logs(b"\xff\xff\xff\xff\x0f", enc, 10).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument, "{err}");
            assert!(err.to_string().contains("OTLP logs"), "{err}");
        }
        assert_eq!(
            decode_logs(b"", OtlpEncoding::Protobuf, 10).unwrap(),
            OtlpLogs::default()
        );
    }
}
