//! Latency percentiles from an HDR histogram, so a long run keeps constant
//! memory and the tail (p99, max) is exact to three significant digits.

use hdrhistogram::Histogram;
use serde::Serialize;
use std::time::Duration;

/// Records durations in microseconds, from 1 µs to one hour.
#[derive(Debug, Clone)]
pub struct Recorder {
    histogram: Histogram<u64>,
}

impl Default for Recorder {
    fn default() -> Self {
        Self {
            histogram: Histogram::new_with_bounds(1, 3_600_000_000, 3)
                .expect("static histogram bounds are valid"),
        }
    }
}

impl Recorder {
    pub fn record(&mut self, d: Duration) {
        let micros = (d.as_micros() as u64).clamp(1, self.histogram.high());
        // Clamped into the histogram's range above, so this cannot fail.
        let _ = self.histogram.record(micros);
    }

    pub fn summary(&self) -> Summary {
        let h = &self.histogram;
        if h.is_empty() {
            return Summary::default();
        }
        let ms = |micros: u64| micros as f64 / 1000.0;
        Summary {
            count: h.len(),
            mean_ms: h.mean() / 1000.0,
            p50_ms: ms(h.value_at_quantile(0.50)),
            p90_ms: ms(h.value_at_quantile(0.90)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            max_ms: ms(h.max()),
        }
    }
}

/// Percentiles in milliseconds; all zero when nothing was recorded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Summary {
    pub count: u64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.count == 0 {
            return write!(f, "no samples");
        }
        write!(
            f,
            "p50 {} · p90 {} · p99 {} · max {} (n={})",
            human(self.p50_ms),
            human(self.p90_ms),
            human(self.p99_ms),
            human(self.max_ms),
            self.count
        )
    }
}

/// `850 ms`, `12.4 s`: milliseconds below ten seconds, seconds above.
pub fn human(ms: f64) -> String {
    if ms < 10_000.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{:.1} s", ms / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_one_to_a_hundred_ms() {
        let mut r = Recorder::default();
        for ms in 1..=100 {
            r.record(Duration::from_millis(ms));
        }
        let s = r.summary();
        assert_eq!(s.count, 100);
        // Three significant digits: within 0.1 % of the exact value.
        let near = |got: f64, want: f64| (got - want).abs() <= want * 0.001 + 0.001;
        assert!(near(s.p50_ms, 50.0), "{s:?}");
        assert!(near(s.p90_ms, 90.0), "{s:?}");
        assert!(near(s.p99_ms, 99.0), "{s:?}");
        assert!(near(s.max_ms, 100.0), "{s:?}");
        assert!(near(s.mean_ms, 50.5), "{s:?}");
    }

    #[test]
    fn empty_and_out_of_range() {
        assert_eq!(Recorder::default().summary(), Summary::default());
        assert_eq!(Summary::default().to_string(), "no samples");
        let mut r = Recorder::default();
        r.record(Duration::ZERO);
        r.record(Duration::from_secs(7200));
        let s = r.summary();
        assert_eq!(s.count, 2);
        assert!(s.max_ms >= 3_599_000.0, "{s:?}");
    }

    #[test]
    fn human_units() {
        assert_eq!(human(850.0), "850.0 ms");
        assert_eq!(human(12_400.0), "12.4 s");
    }
}
