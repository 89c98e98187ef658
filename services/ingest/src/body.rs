//! Request bodies before parsing: `Content-Encoding` (gzip, decompressed
//! with the body limit applied to the *decompressed* size, so a gzip bomb is
//! a 413 and never more than `limit + 1` bytes of memory), and which parser a
//! `/v1/logs` body goes to.
//!
//! `/v1/logs` content types:
//!
//! | Content-Type | read as |
//! |---|---|
//! | `application/x-protobuf`, `application/protobuf` | OTLP `ExportLogsServiceRequest` (protobuf) |
//! | `application/json` whose body is one object with `resourceLogs` | OTLP/JSON |
//! | `application/json` otherwise, `application/x-ndjson`, `application/jsonl`, `application/json-lines`, `text/plain`, none | JSON lines |
//! | anything else | 415 |

use crate::rejection::Rejection;
use bytes::Bytes;
use std::io::Read;
use tracelab_evidence::OtlpEncoding;
use tracelab_evidence::Refusal;

/// How a `/v1/logs` body is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogEncoding {
    JsonLines,
    Otlp(OtlpEncoding),
}

/// Decodes `Content-Encoding` (none, `identity`, `gzip`, `x-gzip`).
pub fn decode(encoding: Option<&str>, body: Bytes, limit: usize) -> Result<Bytes, Rejection> {
    let encoding = encoding.map(|e| e.trim().to_ascii_lowercase());
    match encoding.as_deref() {
        None | Some("") | Some("identity") => Ok(body),
        Some("gzip") | Some("x-gzip") => gunzip(&body, limit),
        Some(other) => Err(Rejection::Unsupported(format!(
            "Content-Encoding {other:?} is not supported; send gzip or no encoding"
        ))),
    }
}

/// Decompresses at most `limit` bytes; more is a 413.
pub fn gunzip(compressed: &[u8], limit: usize) -> Result<Bytes, Rejection> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(compressed)
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| Refusal::Invalid(format!("the gzip body cannot be decompressed: {e}")))?;
    if out.len() > limit {
        return Err(Refusal::TooLarge {
            what: "the decompressed request body (at least)".into(),
            size: out.len(),
            limit,
        }
        .into());
    }
    Ok(Bytes::from(out))
}

/// The parser for a `/v1/logs` body (table above).
pub fn log_encoding(content_type: Option<&str>, body: &[u8]) -> Result<LogEncoding, Rejection> {
    let essence = content_type
        .and_then(|c| c.split(';').next())
        .map(|c| c.trim().to_ascii_lowercase())
        .unwrap_or_default();
    match essence.as_str() {
        ""
        | "application/x-ndjson"
        | "application/jsonl"
        | "application/json-lines"
        | "application/x-jsonlines"
        | "text/plain" => Ok(LogEncoding::JsonLines),
        "application/json" if is_otlp_json(body) => Ok(LogEncoding::Otlp(OtlpEncoding::Json)),
        "application/json" => Ok(LogEncoding::JsonLines),
        other => match OtlpEncoding::from_content_type(other) {
            Some(OtlpEncoding::Protobuf) => Ok(LogEncoding::Otlp(OtlpEncoding::Protobuf)),
            _ => Err(Rejection::Unsupported(format!(
                "Content-Type {other:?} is not read by /v1/logs; send application/x-ndjson (JSON lines), application/x-protobuf or application/json (OTLP)"
            ))),
        },
    }
}

/// One JSON object with a `resourceLogs` member: what OTLP/HTTP JSON exporters send.
fn is_otlp_json(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(rename = "resourceLogs", alias = "resource_logs", default)]
        resource_logs: Option<serde::de::IgnoredAny>,
    }
    let trimmed = body.trim_ascii_start();
    trimmed.starts_with(b"{")
        && serde_json::from_slice::<Probe>(trimmed).is_ok_and(|p| p.resource_logs.is_some())
}

/// Non-empty lines: what a JSON lines body costs against the rate limit.
pub fn line_count(body: &[u8]) -> u32 {
    let n = body
        .split(|b| *b == b'\n')
        .filter(|l| !l.trim_ascii().is_empty())
        .count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A JSON lines body must have at least one JSON value; otherwise the first
/// line's error is the answer (a 400 that says what is wrong).
pub fn check_json_lines(body: &[u8]) -> Result<(), Rejection> {
    let mut first_error = None;
    for (i, line) in body.split(|b| *b == b'\n').enumerate() {
        let line = line.trim_ascii();
        if line.is_empty() {
            continue;
        }
        match serde_json::from_slice::<serde::de::IgnoredAny>(line) {
            Ok(_) => return Ok(()),
            Err(e) if first_error.is_none() => first_error = Some(format!("line {}: {e}", i + 1)),
            Err(_) => {}
        }
    }
    Err(Refusal::Invalid(match first_error {
        Some(e) => format!("the body has no JSON log line ({e})"),
        None => "the body is empty".into(),
    })
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn gzip_within_the_limit_and_a_bomb_beyond_it() {
        let small = gz(b"{\"msg\":\"x\"}\n");
        assert_eq!(
            &decode(Some("gzip"), small.into(), 100).unwrap()[..],
            b"{\"msg\":\"x\"}\n"
        );
        let bomb = gz(&vec![b'a'; 10_000]);
        let e = decode(Some("GZIP"), bomb.into(), 1000).unwrap_err();
        assert_eq!(e.http_status(), 413, "{e}");
        let e = decode(Some("gzip"), Bytes::from_static(b"not gzip"), 10).unwrap_err();
        assert_eq!(e.http_status(), 400, "{e}");
        let e = decode(Some("br"), Bytes::new(), 10).unwrap_err();
        assert_eq!(e.http_status(), 415, "{e}");
    }

    #[test]
    fn content_types_pick_the_parser() {
        let otlp = br#"{"resourceLogs":[]}"#;
        let line = br#"{"level":"error","msg":"x"}"#;
        let check = |ct: Option<&str>, body: &[u8], expected: LogEncoding| {
            assert_eq!(log_encoding(ct, body).unwrap(), expected, "{ct:?}");
        };
        check(None, line, LogEncoding::JsonLines);
        check(Some("application/x-ndjson"), otlp, LogEncoding::JsonLines);
        check(Some("application/json"), line, LogEncoding::JsonLines);
        check(
            Some("application/json; charset=utf-8"),
            otlp,
            LogEncoding::Otlp(OtlpEncoding::Json),
        );
        check(
            Some("application/x-protobuf"),
            b"",
            LogEncoding::Otlp(OtlpEncoding::Protobuf),
        );
        assert_eq!(
            log_encoding(Some("image/png"), b"")
                .unwrap_err()
                .http_status(),
            415
        );
    }

    #[test]
    fn json_lines_need_one_json_line() {
        assert!(check_json_lines(b"garbage\n{\"a\":1}\n").is_ok());
        let e = check_json_lines(b"{\"a\": \n").unwrap_err();
        assert!(e.to_string().contains("line 1: EOF"), "{e}");
        assert_eq!(line_count(b"a\n\n b \n"), 2);
    }
}
