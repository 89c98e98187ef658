//! Admission control for the intake services, as pure logic: size limits per
//! request ([`IntakeLimits`]), a rate limit per source ([`SourceLimiter`])
//! and a bounded admission queue ([`Admission`]). Nothing here drops data:
//! every "no" is a [`Refusal`] that says whether and when to retry, which the
//! service turns into an HTTP status (429 with `Retry-After`, 413, 400), a
//! gRPC status or a JetStream nak with delay.
//!
//! A request travels: `IntakeLimits::check_body` (before reading it all) →
//! `SourceLimiter::check(source, events)` → `Admission::try_admit(bytes)`
//! → hold the [`Permit`] until the work is stored or published.

mod admission;
mod limits;
mod rate;

pub use admission::{Admission, AdmissionConfig, AdmissionStats, Permit};
pub use limits::IntakeLimits;
pub(crate) use limits::check as limits_check;
pub use rate::{RateQuota, SourceLimiter};

use std::time::Duration;

/// Why a request was not accepted, and what the sender should do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The request (or a part of it) is over a size limit; retrying the same
    /// request will not help (HTTP 413).
    TooLarge {
        what: String,
        size: usize,
        limit: usize,
    },
    /// The source sent more than its quota; retry after the wait (HTTP 429).
    RateLimited { retry_after: Duration },
    /// The intake is full; retry after the wait (HTTP 429; JetStream nak with this delay).
    Busy { retry_after: Duration },
    /// The request is malformed or of an unsupported version (HTTP 400).
    Invalid(String),
}

impl Refusal {
    /// The HTTP status a service answers with.
    pub fn http_status(&self) -> u16 {
        match self {
            Refusal::TooLarge { .. } => 413,
            Refusal::Invalid(_) => 400,
            Refusal::RateLimited { .. } | Refusal::Busy { .. } => 429,
        }
    }

    /// How long to wait before retrying; `None` when retrying cannot succeed.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Refusal::TooLarge { .. } | Refusal::Invalid(_) => None,
            Refusal::RateLimited { retry_after } | Refusal::Busy { retry_after } => {
                Some(*retry_after)
            }
        }
    }

    /// The `Retry-After` header value: whole seconds, rounded up, at least 1.
    pub fn retry_after_header(&self) -> Option<String> {
        self.retry_after().map(|d| {
            let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
            secs.max(1).to_string()
        })
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::TooLarge { what, size, limit } => {
                write!(f, "{what} is {size} bytes; the limit is {limit}")
            }
            Refusal::RateLimited { retry_after } => {
                write!(f, "rate limit reached; retry in {retry_after:?}")
            }
            Refusal::Busy { retry_after } => {
                write!(f, "intake is busy; retry in {retry_after:?}")
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
    fn refusals_map_to_http() {
        let r = Refusal::RateLimited {
            retry_after: Duration::from_millis(1200),
        };
        assert_eq!(
            (r.http_status(), r.retry_after_header().as_deref()),
            (429, Some("2"))
        );
        let r = Refusal::Busy {
            retry_after: Duration::from_millis(10),
        };
        assert_eq!(r.retry_after_header().as_deref(), Some("1"));
        let r = Refusal::TooLarge {
            what: "request body".into(),
            size: 10,
            limit: 5,
        };
        assert_eq!((r.http_status(), r.retry_after()), (413, None));
        assert_eq!(r.to_string(), "request body is 10 bytes; the limit is 5");
    }
}
