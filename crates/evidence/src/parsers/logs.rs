//! Production logs: JSON lines, and [`LogRecord`], the shape an OTLP logs
//! intake maps each `LogRecord` protobuf onto (body, severity, attributes,
//! resource, trace_id/span_id) before calling [`crate::parse_log_records`].

use super::{Parsed, first_trace, merge_trace, traces};
use crate::model::{Diagnostic, Failure, FailureKind, Language, Limits};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One log record, whatever its transport (JSON line, OTLP, JetStream message).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LogRecord {
    pub timestamp: Option<String>,
    /// Severity as text (`ERROR`, `error`, `fatal`).
    pub severity_text: Option<String>,
    /// OTLP severity number (17–24 are ERROR and FATAL).
    pub severity_number: Option<i32>,
    /// The message.
    pub body: String,
    /// Record attributes (OTLP `attributes`, or the JSON line's other fields).
    pub attributes: Map<String, Value>,
    /// Resource attributes (`service.name`, ...).
    pub resource: Map<String, Value>,
    /// W3C trace id (hex), kept for correlation.
    pub trace_id: Option<String>,
    pub span_id: Option<String>,
}

const LEVEL_KEYS: &[&str] = &[
    "level",
    "severity",
    "levelname",
    "log.level",
    "severity_text",
    "severityText",
    "lvl",
    "loglevel",
    "log_level",
    "@l",
];
const MESSAGE_KEYS: &[&str] = &[
    "message", "msg", "body", "@message", "@m", "@mt", "log", "text", "event",
];
const TIME_KEYS: &[&str] = &[
    "timestamp",
    "time",
    "ts",
    "@timestamp",
    "@t",
    "datetime",
    "asctime",
];
const TRACE_KEYS: &[&str] = &[
    "trace_id",
    "traceId",
    "traceid",
    "trace.id",
    "dd.trace_id",
    "logging.googleapis.com/trace",
    "otelTraceID",
];
const SPAN_KEYS: &[&str] = &[
    "span_id",
    "spanId",
    "spanid",
    "span.id",
    "dd.span_id",
    "logging.googleapis.com/spanId",
    "otelSpanID",
];
const SERVICE_KEYS: &[&str] = &[
    "service",
    "service.name",
    "service_name",
    "app",
    "application",
    "dd.service",
];
/// The deployed version (OTel `service.version`); never a bare `version`,
/// which log shippers use for their own schema (`@version`).
const SERVICE_VERSION_KEYS: &[&str] = &[
    "service.version",
    "service_version",
    "app.version",
    "app_version",
    "dd.version",
];
/// The deployed revision: OTel's VCS attributes and common field names.
const REVISION_KEYS: &[&str] = &[
    "vcs.revision",
    "vcs.ref.head.revision",
    "vcs.repository.ref.revision",
    "git.commit.sha",
    "git.sha",
    "git_commit",
    "git_sha",
    "commit_sha",
    "revision",
];
const LOGGER_KEYS: &[&str] = &[
    "logger",
    "logger_name",
    "loggerName",
    "name",
    "log.logger",
    "caller",
];

/// Looks a key up directly, then as a dotted path (`error.stack` in `{"error":{"stack":..}}`).
fn get<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if let Some(v) = map.get(key) {
        return Some(v);
    }
    let (head, rest) = key.split_once('.')?;
    match map.get(head)? {
        Value::Object(inner) => get(inner, rest),
        _ => None,
    }
}

fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn first_text(map: &Map<String, Value>, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|k| get(map, k).and_then(as_text))
        .filter(|s| !s.is_empty())
}

impl LogRecord {
    /// Maps a JSON log line (logrus, zap, pino, bunyan, structlog,
    /// python-json-logger, logstash, ECS, OTel JSON) onto a record.
    pub fn from_json(mut map: Map<String, Value>) -> Self {
        let mut r = LogRecord {
            timestamp: first_text(&map, TIME_KEYS),
            severity_text: first_text(&map, LEVEL_KEYS),
            severity_number: map
                .get("severity_number")
                .or_else(|| map.get("severityNumber"))
                .and_then(Value::as_i64)
                .map(|n| n as i32),
            body: first_text(&map, MESSAGE_KEYS).unwrap_or_default(),
            trace_id: first_text(&map, TRACE_KEYS),
            span_id: first_text(&map, SPAN_KEYS),
            ..LogRecord::default()
        };
        // pino/bunyan: numeric levels (50 error, 60 fatal).
        if let Some(n) = map.get("level").and_then(Value::as_i64) {
            r.severity_text = Some(match n {
                n if n >= 60 => "fatal".into(),
                n if n >= 50 => "error".into(),
                n if n >= 40 => "warn".into(),
                _ => "info".into(),
            });
        }
        if let Some(Value::Object(res)) = map.remove("resource") {
            r.resource = res;
        }
        if let Some(Value::Object(attrs)) = map.remove("attributes") {
            r.attributes = attrs;
        }
        for (k, v) in map {
            r.attributes.entry(k).or_insert(v);
        }
        r
    }

    /// Whether the record is at error level or above.
    pub fn is_error(&self) -> bool {
        if self.severity_number.is_some_and(|n| n >= 17) {
            return true;
        }
        self.severity_text.as_deref().is_some_and(|s| {
            matches!(
                s.to_ascii_lowercase().as_str(),
                "error"
                    | "err"
                    | "fatal"
                    | "critical"
                    | "crit"
                    | "alert"
                    | "emerg"
                    | "emergency"
                    | "panic"
                    | "severe"
                    | "dpanic"
                    | "e"
                    | "f"
            )
        })
    }
}

const STACK_KEYS: &[&str] = &[
    "exception.stacktrace",
    "exc_info",
    "stack_trace",
    "stacktrace",
    "stack",
    "err.stack",
    "error.stack",
    "error.stack_trace",
    "exception",
    "exception.stack",
    "traceback",
    "error.stacktrace",
    "throwable",
];
const ERROR_TYPE_KEYS: &[&str] = &[
    "exception.type",
    "error.type",
    "err.type",
    "error.kind",
    "exc_type",
    "exception.class",
];
const ERROR_MESSAGE_KEYS: &[&str] = &[
    "exception.message",
    "error.message",
    "err.message",
    "error",
    "err",
];

/// Turns one record into a failure when it is an error or carries an exception.
pub fn failure_from_record(record: &LogRecord) -> Option<Failure> {
    let attrs = &record.attributes;
    let stack = STACK_KEYS.iter().find_map(|k| match get(attrs, k)? {
        Value::String(s) if s.contains('\n') || s.contains("Traceback") => Some(s.clone()),
        // logstash/ECS put structured exceptions in objects.
        Value::Object(o) => first_text(o, &["stacktrace", "stack_trace", "stack"]),
        _ => None,
    });
    let err_type = first_text(attrs, ERROR_TYPE_KEYS);
    if !record.is_error() && stack.is_none() && err_type.is_none() {
        return None;
    }
    let mut f = Failure::new(FailureKind::LogError, Language::Unknown);
    let body_trace = if record.body.contains('\n') {
        first_trace(&record.body)
    } else {
        None
    };
    let trace = stack
        .as_deref()
        .and_then(|s| first_trace(s).or_else(|| go_stack(s)))
        .or(body_trace);
    match trace {
        Some(t) => merge_trace(&mut f, t),
        None => {
            f.message = record.body.clone();
        }
    }
    f.kind = FailureKind::LogError;
    if let Some(t) = err_type {
        f.exception_type = Some(t);
    }
    if f.message.is_empty() {
        f.message = first_text(attrs, ERROR_MESSAGE_KEYS).unwrap_or_else(|| record.body.clone());
    }
    // The log message is context when the exception has its own.
    if !record.body.is_empty() && record.body != f.message && !record.body.contains('\n') {
        f.context.insert("log_message".into(), record.body.clone());
    }
    let ctx = &mut f.context;
    if let Some(t) = &record.trace_id {
        ctx.insert("trace_id".into(), t.clone());
    }
    if let Some(s) = &record.span_id {
        ctx.insert("span_id".into(), s.clone());
    }
    if let Some(ts) = &record.timestamp {
        ctx.insert("timestamp".into(), ts.clone());
    }
    if let Some(l) = &record.severity_text {
        ctx.insert("level".into(), l.clone());
    }
    if let Some(s) =
        first_text(&record.resource, &["service.name"]).or_else(|| first_text(attrs, SERVICE_KEYS))
    {
        ctx.insert("service".into(), s);
    }
    if let Some(s) = first_text(attrs, LOGGER_KEYS) {
        ctx.insert("logger".into(), s);
    }
    // What was deployed: production errors start investigations on it.
    for (name, keys) in [
        ("service.version", SERVICE_VERSION_KEYS),
        ("vcs.revision", REVISION_KEYS),
    ] {
        let v = first_text(&record.resource, keys).or_else(|| first_text(attrs, keys));
        if let Some(v) = v.filter(|v| is_revision_like(v)) {
            ctx.insert(name.into(), v);
        }
    }
    Some(f)
}

/// A version or revision is one short token (`1.4.2`, `9fceb02`, `v2.0.0-rc1`).
fn is_revision_like(v: &str) -> bool {
    (1..=100).contains(&v.len()) && !v.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// zap/Go stack fields: `pkg.fn\n\t/path/file.go:12\n...` without a goroutine header.
fn go_stack(s: &str) -> Option<Failure> {
    let lines: Vec<&str> = s.lines().collect();
    let (frames, _) = traces::go_frames(&lines, 0);
    if frames.is_empty() {
        return None;
    }
    let mut f = Failure::new(FailureKind::LogError, Language::Go);
    f.frames = frames.into_iter().rev().collect();
    Some(f)
}

/// Maximum nesting depth of a JSON text, counted without parsing (strings skipped).
pub(crate) fn json_depth(s: &str) -> usize {
    let mut depth = 0usize;
    let mut max = 0usize;
    let mut in_str = false;
    let mut escaped = false;
    for b in s.bytes() {
        if in_str {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'{' | b'[' => {
                depth += 1;
                max = max.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

pub(crate) fn parse_json_lines(lines: &[&str], limits: &Limits, parsed: &mut Parsed) {
    let mut invalid = 0usize;
    let mut first_invalid = None;
    let mut plain: Vec<(usize, &str)> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim();
        if t.is_empty() {
            continue;
        }
        if parsed.failures.len() > limits.max_failures {
            break;
        }
        if !t.starts_with('{') {
            plain.push((i, l));
            continue;
        }
        let depth = json_depth(t);
        if depth > limits.max_json_depth {
            parsed.diagnostics.push(
                Diagnostic::warning(
                    "json_too_deep",
                    format!(
                        "JSON nested {depth} levels deep (limit {}); line skipped",
                        limits.max_json_depth
                    ),
                )
                .at(i + 1),
            );
            continue;
        }
        match serde_json::from_str::<Map<String, Value>>(t) {
            Ok(map) => {
                if let Some(mut f) = failure_from_record(&LogRecord::from_json(map)) {
                    f.line = Some(i + 1);
                    parsed.failures.push(f);
                }
            }
            Err(_) => {
                invalid += 1;
                first_invalid.get_or_insert(i + 1);
            }
        }
    }
    if invalid > 0 {
        parsed.diagnostics.push(
            Diagnostic::warning(
                "invalid_json",
                format!("{invalid} lines are not valid JSON objects"),
            )
            .at(first_invalid.unwrap_or(1)),
        );
    }
    // Plain lines between JSON records (a crash printed to stderr) may hold traces.
    if !plain.is_empty() {
        let text: Vec<&str> = plain.iter().map(|(_, l)| *l).collect();
        for mut f in traces::scan(&text, 1, limits.max_failures + 1) {
            f.line = f.line.and_then(|n| plain.get(n - 1)).map(|(i, _)| i + 1);
            parsed.failures.push(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_ignores_strings() {
        assert_eq!(json_depth(r#"{"a":[{"b":"[[[["}]}"#), 3);
        assert_eq!(json_depth(&"[".repeat(100_000)), 100_000);
    }

    #[test]
    fn numeric_levels_and_otel_severity() {
        let r = LogRecord::from_json(serde_json::from_str(r#"{"level":50,"msg":"boom"}"#).unwrap());
        assert!(r.is_error());
        let r = LogRecord {
            severity_number: Some(17),
            ..LogRecord::default()
        };
        assert!(r.is_error());
        let r =
            LogRecord::from_json(serde_json::from_str(r#"{"level":"info","msg":"ok"}"#).unwrap());
        assert!(!r.is_error());
    }
}
