//! Size limits per request. Checked before parsing (and, for the body
//! length, before reading the body when a `Content-Length` is known), so an
//! oversized request costs no memory.

use super::Refusal;
use serde::{Deserialize, Serialize};

/// Bounds on one intake request. Defaults suit CI reports and log batches;
/// `tracelab report` trims what it sends to the same defaults.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct IntakeLimits {
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

impl Default for IntakeLimits {
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

impl IntakeLimits {
    /// Refuses a body of `len` bytes over `max_body_bytes`.
    pub fn check_body(&self, len: usize) -> Result<(), Refusal> {
        check("request body", len, self.max_body_bytes)
    }
}

/// `TooLarge` when `size > limit`.
pub(crate) fn check(what: &str, size: usize, limit: usize) -> Result<(), Refusal> {
    if size > limit {
        return Err(Refusal::TooLarge {
            what: what.to_owned(),
            size,
            limit,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_limit() {
        let l = IntakeLimits {
            max_body_bytes: 10,
            ..IntakeLimits::default()
        };
        assert!(l.check_body(10).is_ok());
        assert_eq!(l.check_body(11).unwrap_err().http_status(), 413);
    }
}
