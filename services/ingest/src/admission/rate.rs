//! A rate limit per source (a CI project, a service, a token): GCRA from
//! `governor`, one bucket per source key, `cost` events per check. A refused
//! check says exactly when the source may send again.

use crate::rejection::Rejection;
use governor::clock::{Clock, DefaultClock};
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};
use serde::{Deserialize, Serialize};
use std::num::NonZeroU32;
use std::time::Duration;
use tracelab_domain::{Error, Result};
use tracelab_evidence::Refusal;

/// Events per second per source, and how many may arrive at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateQuota {
    pub per_second: u32,
    pub burst: u32,
}

impl Default for RateQuota {
    fn default() -> Self {
        Self {
            per_second: 100,
            burst: 1000,
        }
    }
}

/// Per-source rate limiter. Memory grows with the number of distinct
/// sources seen recently; call [`SourceLimiter::forget_idle`] now and then
/// (sources whose bucket is full again are forgotten — that loses nothing).
pub struct SourceLimiter<C: Clock = DefaultClock> {
    limiter: RateLimiter<String, DefaultKeyedStateStore<String>, C, NoOpMiddleware<C::Instant>>,
    burst: NonZeroU32,
    max_sources: usize,
}

impl<C: Clock> std::fmt::Debug for SourceLimiter<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceLimiter")
            .field("sources", &self.limiter.len())
            .field("burst", &self.burst)
            .finish()
    }
}

impl SourceLimiter {
    /// A limiter on the monotonic clock, tracking at most `max_sources` busy sources.
    pub fn new(quota: RateQuota, max_sources: usize) -> Result<Self> {
        Self::with_clock(quota, max_sources, DefaultClock::default())
    }
}

impl<C: Clock> SourceLimiter<C> {
    /// A limiter on `clock` (tests pass `governor::clock::FakeRelativeClock`).
    pub fn with_clock(quota: RateQuota, max_sources: usize, clock: C) -> Result<Self> {
        let invalid = || {
            Error::invalid(format!(
                "rate quota {}/s with burst {}: both must be at least 1",
                quota.per_second, quota.burst
            ))
        };
        let rate = NonZeroU32::new(quota.per_second).ok_or_else(invalid)?;
        let burst = NonZeroU32::new(quota.burst).ok_or_else(invalid)?;
        let q = Quota::per_second(rate).allow_burst(burst);
        Ok(Self {
            limiter: RateLimiter::new(q, DefaultKeyedStateStore::default(), clock),
            burst,
            max_sources: max_sources.max(1),
        })
    }

    /// Charges `cost` events (0 counts as 1) to `source`. Refuses with the
    /// wait until they fit; a cost above the burst can never fit and is
    /// too large (send smaller batches).
    pub fn check(&self, source: &str, cost: u32) -> std::result::Result<(), Rejection> {
        let n = NonZeroU32::new(cost).unwrap_or(NonZeroU32::MIN);
        let key = source.to_owned();
        if self.limiter.len() >= self.max_sources {
            self.forget_idle();
            if self.limiter.len() >= self.max_sources {
                // Too many sources are busy at once: the whole intake is overloaded.
                return Err(Rejection::Busy {
                    retry_after: Duration::from_secs(1),
                });
            }
        }
        match self.limiter.check_key_n(&key, n) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(not_until)) => Err(Rejection::RateLimited {
                retry_after: not_until.wait_time_from(self.limiter.clock().now()),
            }),
            Err(_) => Err(Refusal::TooLarge {
                what: format!("a batch of {cost} events"),
                size: cost as usize,
                limit: self.burst.get() as usize,
            }
            .into()),
        }
    }

    /// Forgets sources whose bucket has refilled (they would be allowed a full burst anyway).
    pub fn forget_idle(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }

    /// Sources currently tracked.
    pub fn sources(&self) -> usize {
        self.limiter.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use governor::clock::FakeRelativeClock;

    fn limiter(
        per_second: u32,
        burst: u32,
        max_sources: usize,
    ) -> (SourceLimiter<FakeRelativeClock>, FakeRelativeClock) {
        let clock = FakeRelativeClock::default();
        let l =
            SourceLimiter::with_clock(RateQuota { per_second, burst }, max_sources, clock.clone())
                .unwrap();
        (l, clock)
    }

    #[test]
    fn burst_then_refill_per_source() {
        let (l, clock) = limiter(10, 5, 100);
        for _ in 0..5 {
            l.check("ci/a", 1).unwrap();
        }
        let refused = l.check("ci/a", 1).unwrap_err();
        assert!(
            matches!(refused, Rejection::RateLimited { retry_after } if retry_after == Duration::from_millis(100)),
            "{refused:?}"
        );
        // Another source has its own bucket.
        l.check("ci/b", 5).unwrap();
        clock.advance(Duration::from_millis(100));
        l.check("ci/a", 1).unwrap();
        assert!(l.check("ci/a", 1).is_err());
    }

    #[test]
    fn batches_are_charged_by_size() {
        let (l, clock) = limiter(10, 10, 100);
        l.check("svc", 8).unwrap();
        let Rejection::RateLimited { retry_after } = l.check("svc", 5).unwrap_err() else {
            panic!("expected a rate limit")
        };
        assert_eq!(retry_after, Duration::from_millis(300));
        clock.advance(retry_after);
        l.check("svc", 5).unwrap();
        let too_big = l.check("svc", 11).unwrap_err();
        assert_eq!(too_big.http_status().as_u16(), 413, "{too_big}");
        assert!(l.check("other", 0).is_ok(), "a zero cost counts as one");
    }

    #[test]
    fn idle_sources_are_forgotten_and_the_table_is_bounded() {
        let (l, clock) = limiter(1, 1, 3);
        for s in ["a", "b", "c"] {
            l.check(s, 1).unwrap();
        }
        assert!(
            matches!(l.check("d", 1), Err(Rejection::Busy { retry_after }) if retry_after == Duration::from_secs(1)),
            "a fourth busy source is refused, not tracked"
        );
        clock.advance(Duration::from_secs(2));
        l.check("d", 1).unwrap();
        assert_eq!(l.sources(), 1, "refilled sources were forgotten");
    }

    #[test]
    fn zero_quota_is_invalid() {
        let err = SourceLimiter::new(
            RateQuota {
                per_second: 0,
                burst: 1,
            },
            10,
        )
        .unwrap_err();
        assert_eq!(err.kind, tracelab_domain::ErrorKind::InvalidArgument);
    }
}
