//! Retry policy of a consumer: how many deliveries a message gets and how
//! long to wait before each redelivery (exponential, computed with `backon`).

use backon::{BackoffBuilder, ExponentialBuilder};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Deliveries a message gets before it is dead-lettered (at least 1).
    pub max_deliveries: u32,
    /// Delay before the second delivery; doubles for each further one.
    pub min_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_deliveries: 5,
            min_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// How long to wait before redelivering a message that failed on its
    /// `delivered`-th delivery (1-based).
    pub fn delay(&self, delivered: u32) -> Duration {
        let n = delivered.saturating_sub(1) as usize;
        ExponentialBuilder::default()
            .with_min_delay(self.min_delay)
            .with_max_delay(self.max_delay)
            .with_factor(2.0)
            .without_max_times()
            .build()
            .nth(n)
            .unwrap_or(self.max_delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_the_cap() {
        let p = RetryPolicy {
            max_deliveries: 10,
            min_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(500),
        };
        let delays: Vec<_> = (1..=5).map(|d| p.delay(d).as_millis()).collect();
        assert_eq!(delays, vec![100, 200, 400, 500, 500]);
    }
}
