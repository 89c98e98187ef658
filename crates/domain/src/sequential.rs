//! Sequential classification of a test's behaviour from re-runs.
//!
//! Two Wald SPRTs run side by side on the same outcomes:
//! * *deterministic vs flaky*: H0 `p = 1 - ε` against H1 `p = flaky_max`;
//!   a single pass settles it for "flaky", consecutive failures for "deterministic";
//! * *never fails vs flaky*: H0 `p = ε` against H1 `p = flaky_min`;
//!   a single failure settles it, consecutive passes accept "never fails".
//!
//! Once both say "flaky", runs continue until the 95% Wilson interval of the
//! failure rate is narrow enough, so the reported rate means something. The
//! run cap always wins; a decision made at the cap is marked not confident.

use serde::{Deserialize, Serialize};

/// Tunables; defaults follow DESIGN.md (50 runs, never more than 100).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SequentialConfig {
    /// Probability of calling a test flaky when it is not (and vice versa for β).
    pub alpha: f64,
    pub beta: f64,
    /// Highest failure rate still called flaky; above it, "deterministic" is the alternative.
    pub flaky_max: f64,
    /// Lowest failure rate worth calling flaky; below it, "never fails" is the alternative.
    pub flaky_min: f64,
    /// Half-width of the 95% interval that ends re-runs of a flaky test early.
    pub rate_half_width: f64,
    pub max_runs: u32,
}

impl Default for SequentialConfig {
    fn default() -> Self {
        Self {
            alpha: 0.01,
            beta: 0.01,
            flaky_max: 0.75,
            flaky_min: 0.05,
            rate_half_width: 0.15,
            max_runs: 50,
        }
    }
}

/// Hard cap on re-runs, whatever the configuration says.
pub const MAX_RUNS_CAP: u32 = 100;

impl SequentialConfig {
    pub fn validate(&self) -> crate::Result<()> {
        let in_unit = |x: f64| x > 0.0 && x < 1.0;
        if !(in_unit(self.alpha)
            && in_unit(self.beta)
            && in_unit(self.flaky_max)
            && in_unit(self.flaky_min))
        {
            return Err(crate::Error::invalid(
                "sequential test probabilities must lie strictly between 0 and 1",
            ));
        }
        if self.flaky_min >= self.flaky_max {
            return Err(crate::Error::invalid("flaky_min must be below flaky_max"));
        }
        if self.max_runs == 0 || self.max_runs > MAX_RUNS_CAP {
            return Err(crate::Error::invalid(format!(
                "max_runs must be 1..={MAX_RUNS_CAP}"
            )));
        }
        Ok(())
    }
}

/// What the runs so far say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Behaviour {
    Deterministic,
    Flaky,
    NeverFails,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub behaviour: Behaviour,
    /// False when the run cap forced the decision.
    pub confident: bool,
}

/// Probability floor for "always" and "never", so likelihood ratios stay finite.
const EPSILON: f64 = 1e-3;

/// Feeds outcomes one at a time and says when to stop.
#[derive(Debug, Clone)]
pub struct Classifier {
    config: SequentialConfig,
    runs: u32,
    failures: u32,
    llr_deterministic: f64,
    llr_never: f64,
}

impl Classifier {
    pub fn new(config: SequentialConfig) -> Self {
        Self {
            config,
            runs: 0,
            failures: 0,
            llr_deterministic: 0.0,
            llr_never: 0.0,
        }
    }

    pub fn runs(&self) -> u32 {
        self.runs
    }
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// Records one judged run (`failed` = failed with the signature under investigation).
    pub fn record(&mut self, failed: bool) {
        let c = &self.config;
        self.runs += 1;
        if failed {
            self.failures += 1;
            self.llr_deterministic += (c.flaky_max / (1.0 - EPSILON)).ln();
            self.llr_never += (c.flaky_min / EPSILON).ln();
        } else {
            self.llr_deterministic += ((1.0 - c.flaky_max) / EPSILON).ln();
            self.llr_never += ((1.0 - c.flaky_min) / (1.0 - EPSILON)).ln();
        }
    }

    fn accept_h0(&self) -> f64 {
        (self.config.beta / (1.0 - self.config.alpha)).ln()
    }
    fn accept_h1(&self) -> f64 {
        ((1.0 - self.config.beta) / self.config.alpha).ln()
    }

    /// The decision if the runs so far allow one, else `None` (run again).
    pub fn decision(&self) -> Option<Decision> {
        let max_runs = self.config.max_runs.min(MAX_RUNS_CAP);
        let (lo, hi) = (self.accept_h0(), self.accept_h1());
        if self.llr_deterministic <= lo {
            return Some(Decision {
                behaviour: Behaviour::Deterministic,
                confident: true,
            });
        }
        if self.llr_never <= lo {
            return Some(Decision {
                behaviour: Behaviour::NeverFails,
                confident: true,
            });
        }
        if self.llr_deterministic >= hi && self.llr_never >= hi {
            let (low, high) = wilson_interval(self.failures, self.runs, 1.96);
            if (high - low) / 2.0 <= self.config.rate_half_width {
                return Some(Decision {
                    behaviour: Behaviour::Flaky,
                    confident: true,
                });
            }
        }
        if self.runs >= max_runs {
            let behaviour = if self.failures == self.runs {
                Behaviour::Deterministic
            } else if self.failures == 0 {
                Behaviour::NeverFails
            } else {
                Behaviour::Flaky
            };
            // Seeing both outcomes proves flakiness; only the rate's precision was short.
            let confident = behaviour == Behaviour::Flaky
                && self.llr_deterministic >= hi
                && self.llr_never >= hi;
            return Some(Decision {
                behaviour,
                confident,
            });
        }
        None
    }
}

/// Classifies a fixed sequence the naive way: run exactly `n` times, then look.
pub fn classify_fixed(outcomes: &[bool]) -> Behaviour {
    let failures = outcomes.iter().filter(|f| **f).count();
    if failures == outcomes.len() {
        Behaviour::Deterministic
    } else if failures == 0 {
        Behaviour::NeverFails
    } else {
        Behaviour::Flaky
    }
}

/// Wilson score interval for a binomial proportion.
pub fn wilson_interval(successes: u32, trials: u32, z: f64) -> (f64, f64) {
    if trials == 0 {
        return (0.0, 1.0);
    }
    let n = f64::from(trials);
    let p = f64::from(successes) / n;
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = z * ((p * (1.0 - p) / n) + z2 / (4.0 * n * n)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// Passes needed at one revision before calling it good, when the test fails
/// with rate `failure_rate` where the bug is present: `(1-p)^r <= miss`.
pub fn passes_to_trust(failure_rate: f64, miss: f64, cap: u32) -> u32 {
    if failure_rate >= 1.0 - EPSILON {
        return 1;
    }
    if failure_rate <= 0.0 {
        return cap;
    }
    let r = (miss.ln() / (1.0 - failure_rate).ln()).ceil();
    (r as u32).clamp(1, cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(seq: impl IntoIterator<Item = bool>) -> (Option<Decision>, u32) {
        let mut c = Classifier::new(SequentialConfig::default());
        for failed in seq {
            if c.decision().is_some() {
                break;
            }
            c.record(failed);
        }
        (c.decision(), c.runs())
    }

    #[test]
    fn consecutive_failures_accept_deterministic_well_before_the_cap() {
        let (decision, runs) = run(std::iter::repeat_n(true, 100));
        assert_eq!(
            decision.unwrap(),
            Decision {
                behaviour: Behaviour::Deterministic,
                confident: true
            }
        );
        assert!(runs < 25, "took {runs} runs");
    }

    #[test]
    fn two_failures_and_a_pass_prove_flakiness() {
        let mut c = Classifier::new(SequentialConfig::default());
        c.record(true);
        c.record(false);
        assert!(
            c.llr_deterministic >= c.accept_h1(),
            "one pass rules out deterministic"
        );
        c.record(true);
        assert!(c.llr_deterministic >= c.accept_h1());
        assert!(c.llr_never >= c.accept_h1());
    }

    #[test]
    fn only_passes_end_at_the_cap_unconfident_with_default_budget() {
        let (decision, runs) = run(std::iter::repeat_n(false, 100));
        assert_eq!(runs, 50);
        assert_eq!(
            decision.unwrap(),
            Decision {
                behaviour: Behaviour::NeverFails,
                confident: false
            }
        );
    }

    #[test]
    fn only_passes_reach_confidence_with_a_larger_budget() {
        let mut c = Classifier::new(SequentialConfig {
            max_runs: 100,
            ..Default::default()
        });
        while c.decision().is_none() {
            c.record(false);
        }
        assert_eq!(c.decision().unwrap().behaviour, Behaviour::NeverFails);
        assert!(c.decision().unwrap().confident);
        assert!(c.runs() < 100);
    }

    #[test]
    fn alternating_outcomes_are_flaky_once_the_rate_is_precise() {
        let (decision, runs) = run((0..100).map(|i| i % 2 == 0));
        assert_eq!(decision.unwrap().behaviour, Behaviour::Flaky);
        assert!(decision.unwrap().confident);
        assert!(runs <= 50);
    }

    #[test]
    fn wilson_interval_contains_the_estimate() {
        let (lo, hi) = wilson_interval(15, 50, 1.96);
        assert!(lo < 0.3 && 0.3 < hi);
        assert!(lo > 0.17 && hi < 0.45, "({lo}, {hi})");
        assert_eq!(wilson_interval(0, 0, 1.96), (0.0, 1.0));
    }

    #[test]
    fn passes_to_trust_grows_as_the_rate_falls() {
        assert_eq!(passes_to_trust(1.0, 0.01, 100), 1);
        assert_eq!(passes_to_trust(0.5, 0.01, 100), 7);
        assert_eq!(passes_to_trust(0.3, 0.01, 100), 13);
        assert_eq!(passes_to_trust(0.001, 0.01, 20), 20);
    }

    #[test]
    fn config_validation_names_the_problem() {
        assert!(SequentialConfig::default().validate().is_ok());
        let bad = SequentialConfig {
            max_runs: 101,
            ..Default::default()
        };
        assert!(bad.validate().unwrap_err().message.contains("max_runs"));
    }
}
