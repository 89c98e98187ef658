//! A bounded admission queue: work is admitted while fewer than `max_items`
//! items and `max_bytes` bytes are in flight (queued or being processed);
//! beyond that the caller is told to retry later instead of the work being
//! dropped or buffered without bound. The service holds the [`Permit`] with
//! the work (in its channel, through parsing, until stored or published);
//! dropping it frees the room.

use crate::rejection::Rejection;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tracelab_evidence::request::check_size;

/// Bounds of the queue and the retry hint given when it is full.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AdmissionConfig {
    pub max_items: usize,
    pub max_bytes: usize,
    /// `Retry-After` when full: about the time the queue takes to drain.
    pub retry_after: Duration,
}

impl Default for AdmissionConfig {
    fn default() -> Self {
        Self {
            max_items: 1024,
            max_bytes: 256 << 20,
            retry_after: Duration::from_secs(2),
        }
    }
}

/// Counts for metrics (queue depth, refusals).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct AdmissionStats {
    pub items: usize,
    pub bytes: usize,
    pub admitted: u64,
    pub refused: u64,
}

#[derive(Debug, Default)]
struct InFlight {
    items: usize,
    bytes: usize,
}

#[derive(Debug)]
struct Inner {
    config: AdmissionConfig,
    in_flight: Mutex<InFlight>,
    admitted: AtomicU64,
    refused: AtomicU64,
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, InFlight> {
        // The counters stay consistent under a panic elsewhere: keep going.
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// A cheap-to-clone handle on one admission queue.
#[derive(Debug, Clone)]
pub struct Admission {
    inner: Arc<Inner>,
}

/// Room for one admitted item; dropping it frees the room.
#[derive(Debug)]
pub struct Permit {
    inner: Arc<Inner>,
    bytes: usize,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut f = self.inner.lock();
        f.items -= 1;
        f.bytes -= self.bytes;
    }
}

impl Permit {
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Admission {
    pub fn new(config: AdmissionConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                config,
                in_flight: Mutex::new(InFlight::default()),
                admitted: AtomicU64::new(0),
                refused: AtomicU64::new(0),
            }),
        }
    }

    /// Admits an item of `bytes` bytes, or says why not: too large when it
    /// could never fit, `Busy` with the retry hint when the queue is full.
    pub fn try_admit(&self, bytes: usize) -> Result<Permit, Rejection> {
        let cfg = &self.inner.config;
        check_size("the request", bytes, cfg.max_bytes)?;
        let mut f = self.inner.lock();
        if f.items >= cfg.max_items || f.bytes + bytes > cfg.max_bytes {
            drop(f);
            self.inner.refused.fetch_add(1, Ordering::Relaxed);
            return Err(Rejection::Busy {
                retry_after: cfg.retry_after,
            });
        }
        f.items += 1;
        f.bytes += bytes;
        drop(f);
        self.inner.admitted.fetch_add(1, Ordering::Relaxed);
        Ok(Permit {
            inner: self.inner.clone(),
            bytes,
        })
    }

    pub fn stats(&self) -> AdmissionStats {
        let f = self.inner.lock();
        AdmissionStats {
            items: f.items,
            bytes: f.bytes,
            admitted: self.inner.admitted.load(Ordering::Relaxed),
            refused: self.inner.refused.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracelab_evidence::Refusal;

    fn admission(max_items: usize, max_bytes: usize) -> Admission {
        Admission::new(AdmissionConfig {
            max_items,
            max_bytes,
            retry_after: Duration::from_secs(3),
        })
    }

    #[test]
    fn full_by_items_says_retry_later_and_frees_on_drop() {
        let a = admission(2, 1000);
        let p1 = a.try_admit(10).unwrap();
        let _p2 = a.try_admit(10).unwrap();
        let refused = a.try_admit(10).unwrap_err();
        assert!(
            matches!(refused, Rejection::Busy { retry_after } if retry_after == Duration::from_secs(3)),
            "{refused:?}"
        );
        drop(p1);
        let _p3 = a.try_admit(10).unwrap();
        assert_eq!(
            a.stats(),
            AdmissionStats {
                items: 2,
                bytes: 20,
                admitted: 3,
                refused: 1
            }
        );
    }

    #[test]
    fn full_by_bytes_and_never_fitting_items() {
        let a = admission(100, 100);
        let p = a.try_admit(80).unwrap();
        assert!(matches!(a.try_admit(30), Err(Rejection::Busy { .. })));
        assert!(matches!(
            a.try_admit(101),
            Err(Rejection::Refused(Refusal::TooLarge {
                size: 101,
                limit: 100,
                ..
            }))
        ));
        drop(p);
        a.try_admit(100).unwrap();
    }

    #[test]
    fn concurrent_admissions_never_exceed_the_bound() {
        let a = admission(8, usize::MAX);
        let peak = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        std::thread::scope(|s| {
            for _ in 0..4 {
                let (a, peak) = (a.clone(), peak.clone());
                s.spawn(move || {
                    let mut held = Vec::new();
                    for i in 0..2000 {
                        if let Ok(p) = a.try_admit(1) {
                            held.push(p);
                        }
                        peak.fetch_max(a.stats().items, Ordering::Relaxed);
                        if i % 3 == 0 {
                            held.clear();
                        }
                    }
                });
            }
        });
        assert!(peak.load(Ordering::Relaxed) <= 8);
        assert_eq!(a.stats().items, 0, "every permit was returned");
    }
}
