//! Admission control, as pure logic: a rate limit per source
//! ([`SourceLimiter`]) and a bounded admission queue ([`Admission`]). Nothing
//! here drops data: every "no" is a [`Rejection`] that says whether and when
//! to retry — [`Rejection::RateLimited`] and [`Rejection::Busy`] carry the
//! wait, which becomes 429 with `Retry-After`, RESOURCE_EXHAUSTED, or the
//! intake queue waiting before it tries again.
//!
//! A request travels: `RequestLimits::check_body` (the library's size
//! limits, before reading it all) → `SourceLimiter::check(source, events)` →
//! `Admission::try_admit(bytes)` → hold the [`Permit`] until the work is
//! stored or published.
//!
//! [`Rejection`]: crate::rejection::Rejection
//! [`Rejection::RateLimited`]: crate::rejection::Rejection::RateLimited
//! [`Rejection::Busy`]: crate::rejection::Rejection::Busy

mod queue;
mod rate;

pub use queue::{Admission, AdmissionConfig, AdmissionStats, Permit};
pub use rate::{RateQuota, SourceLimiter};
