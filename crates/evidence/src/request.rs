//! Bounds on one request that brings evidence (a CI failure report, a log
//! batch, an OTLP export) and why a request is refused. Both sides need
//! them: [`CiFailureReport::check`](crate::CiFailureReport::check) holds a
//! report to [`RequestLimits`], and `tracelab report` trims what it sends to
//! the same defaults so a report it sends always passes. Admission control
//! (rate per source, the in-flight bound) is the ingest service's, not this
//! library's.

use serde::{Deserialize, Serialize};

/// Bounds on one request. Defaults suit CI reports and log batches;
/// `tracelab report` trims what it sends to the same defaults.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RequestLimits {
    /// Whole request body (JSON, protobuf), in bytes.
    pub max_body_bytes: usize,
    /// Test report files in one CI failure report.
    pub max_report_files: usize,
    /// Bytes of one report file's content.
    pub max_file_bytes: usize,
    /// Bytes of the log tail.
    pub max_log_bytes: usize,
    /// Environment variable names in the fingerprint.
    pub max_env_names: usize,
    /// Bytes of a short field (commit, branch, job id, path, version string).
    pub max_field_bytes: usize,
}

impl Default for RequestLimits {
    fn default() -> Self {
        Self {
            max_body_bytes: 32 << 20,
            max_report_files: 64,
            max_file_bytes: 8 << 20,
            max_log_bytes: 1 << 20,
            max_env_names: 1000,
            max_field_bytes: 4096,
        }
    }
}

impl RequestLimits {
    /// Refuses a body of `len` bytes over `max_body_bytes`.
    pub fn check_body(&self, len: usize) -> Result<(), Refusal> {
        check_size("request body", len, self.max_body_bytes)
    }
}

/// `TooLarge` when `size > limit`.
pub fn check_size(what: &str, size: usize, limit: usize) -> Result<(), Refusal> {
    if size > limit {
        return Err(Refusal::TooLarge {
            what: what.to_owned(),
            size,
            limit,
        });
    }
    Ok(())
}

/// Why a request was refused; sending the same request again cannot succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The request (or a part of it) is over a size limit (HTTP 413).
    TooLarge {
        what: String,
        size: usize,
        limit: usize,
    },
    /// The request is malformed or of an unsupported version (HTTP 400).
    Invalid(String),
}

impl Refusal {
    /// The HTTP status a service answers with.
    pub fn http_status(&self) -> u16 {
        match self {
            Refusal::TooLarge { .. } => 413,
            Refusal::Invalid(_) => 400,
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::TooLarge { what, size, limit } => {
                write!(f, "{what} is {size} bytes; the limit is {limit}")
            }
            Refusal::Invalid(why) => write!(f, "invalid request: {why}"),
        }
    }
}

impl std::error::Error for Refusal {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_limit() {
        let l = RequestLimits {
            max_body_bytes: 10,
            ..RequestLimits::default()
        };
        assert!(l.check_body(10).is_ok());
        assert_eq!(l.check_body(11).unwrap_err().http_status(), 413);
    }

    #[test]
    fn refusals_say_what_and_map_to_http() {
        let r = Refusal::TooLarge {
            what: "request body".into(),
            size: 10,
            limit: 5,
        };
        assert_eq!(r.http_status(), 413);
        assert_eq!(r.to_string(), "request body is 10 bytes; the limit is 5");
        let r = Refusal::Invalid("schema 2".into());
        assert_eq!(r.http_status(), 400);
        assert_eq!(r.to_string(), "invalid request: schema 2");
    }
}
