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

    /// Lowers the run cap (never raises it): a slow test gets fewer re-runs.
    pub fn limit_runs(&mut self, max_runs: u32) {
        self.config.max_runs = self.config.max_runs.min(max_runs.max(1));
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

/// The most likely a flaky failure that a fix does not change produces
/// `failures` failures in a row before the fix and `passes` passes after it:
/// `max p^f (1-p)^n` over flaky rates `p <= flaky_max` (the rates the
/// sequential test calls flaky). A small value means the runs together rule
/// out "the test is flaky and the fix did nothing".
pub fn flaky_unfixed_likelihood(failures: u32, passes: u32, flaky_max: f64) -> f64 {
    let (f, n) = (f64::from(failures), f64::from(passes));
    let p = if failures + passes == 0 {
        flaky_max
    } else {
        (f / (f + n)).min(flaky_max)
    };
    p.powf(f) * (1.0 - p).powf(n)
}

/// Passes after a fix that, with `failures` failures in a row before it,
/// bring [`flaky_unfixed_likelihood`] down to the sequential test's `alpha`;
/// `None` when more than `cap` would be needed. This is what lets the
/// re-runs at the bad revision stop after a few failures once a culprit is
/// known: the fix's verification supplies the rest of the evidence (4
/// failures and 3 passes: at most 0.0084, against 17 failures alone at
/// `alpha = 0.01`).
pub fn passes_to_confirm(failures: u32, config: &SequentialConfig, cap: u32) -> Option<u32> {
    (1..=cap).find(|&n| flaky_unfixed_likelihood(failures, n, config.flaky_max) <= config.alpha)
}

/// Re-runs a test of mean duration `mean_ms` gets when `slots` run at once
/// and the re-runs may take `budget_ms` of wall time: at least `floor`, at
/// most `cap`. In the spirit of Datadog's early flake detection (10 retries
/// under 5 s, 5 under 30 s, 3 under 5 min): a slow test is re-run less, and
/// a decision at the lowered cap is reported as not confident.
pub fn runs_for_duration(mean_ms: u64, slots: usize, budget_ms: u64, floor: u32, cap: u32) -> u32 {
    let per_run = mean_ms.max(1);
    let affordable = budget_ms.saturating_mul(slots.max(1) as u64) / per_run;
    (affordable.min(u64::from(u32::MAX)) as u32).clamp(floor.min(cap), cap)
}

/// Which of two known failure rates a revision shows: the rate before a
/// flakiness regression (`low`) or after it (`high`). A Wald SPRT between the
/// two, in the spirit of flake-aware culprit finding: a failure at a
/// revision before the culprit is expected and is not proof of the bug.
#[derive(Debug, Clone, Copy)]
pub struct RateTest {
    low: f64,
    high: f64,
    upper: f64,
    lower: f64,
    llr: f64,
    runs: u32,
    cap: u32,
}

/// The failure rate at which a [`RateTest`] between `low` and `high`
/// drifts to neither side: a revision failing more often leans high, less
/// often low. It lies between the two, nearer `high` than their midpoint
/// when `low` is large (0.238 and 0.383 meet at 0.307).
pub fn indifference_rate(low: f64, high: f64) -> f64 {
    let low = low.clamp(EPSILON, 1.0 - EPSILON);
    let high = high.clamp(EPSILON, 1.0 - EPSILON).max(low + EPSILON);
    let pass = ((1.0 - low) / (1.0 - high)).ln();
    pass / ((high / low).ln() + pass)
}

/// The low rate of a flake-aware search's [`RateTest`] from the rates
/// measured at good (`good_rate`, with its 95% interval's upper end
/// `good_upper`) and at bad (`bad_rate`, the test's high rate): the rate
/// whose test against `bad_rate` is indifferent at the midpoint of the two
/// measured rates, so a revision failing at either rate is told apart with
/// the same margin; never above `good_upper` (a good measured 0/50 may
/// still fail one run in 15, which must not make a revision bad).
///
/// Taking the midpoint itself as the low rate put the indifference near
/// three quarters of the way to the bad rate: boltons' flaky case measured
/// 3/32 at good and 18/47 at bad, the test ran between 0.238 and 0.383,
/// indifferent at 0.307, and the true raised rate, 0.30, looked low.
pub fn background_rate(good_rate: f64, good_upper: f64, bad_rate: f64) -> f64 {
    let midpoint = (good_rate + bad_rate) / 2.0;
    // indifference_rate(p, bad_rate) rises with p from 0 to above p: the
    // low rate indifferent at the midpoint lies below it.
    let (mut below, mut above) = (0.0, midpoint);
    for _ in 0..60 {
        let p = (below + above) / 2.0;
        if indifference_rate(p, bad_rate) < midpoint {
            below = p;
        } else {
            above = p;
        }
    }
    good_upper.min((below + above) / 2.0)
}

/// What a [`RateTest`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateDecision {
    Low,
    High,
}

impl RateTest {
    /// `alpha` and `beta` are the error probabilities of calling a revision
    /// high when it is low and low when it is high; `cap` ends the test.
    pub fn new(low: f64, high: f64, alpha: f64, beta: f64, cap: u32) -> Self {
        let low = low.clamp(EPSILON, 1.0 - EPSILON);
        let high = high.clamp(EPSILON, 1.0 - EPSILON).max(low + EPSILON);
        Self {
            low,
            high,
            upper: ((1.0 - beta) / alpha).ln(),
            lower: (beta / (1.0 - alpha)).ln(),
            llr: 0.0,
            runs: 0,
            cap: cap.max(1),
        }
    }

    pub fn record(&mut self, failed: bool) {
        self.runs += 1;
        self.llr += if failed {
            (self.high / self.low).ln()
        } else {
            ((1.0 - self.high) / (1.0 - self.low)).ln()
        };
    }

    pub fn runs(&self) -> u32 {
        self.runs
    }

    /// The decision once a boundary is crossed, or at the cap (then by the
    /// sign of the evidence, with `confident` false).
    pub fn decision(&self) -> Option<(RateDecision, bool)> {
        if self.llr >= self.upper {
            Some((RateDecision::High, true))
        } else if self.llr <= self.lower {
            Some((RateDecision::Low, true))
        } else if self.runs >= self.cap {
            let d = if self.llr > 0.0 {
                RateDecision::High
            } else {
                RateDecision::Low
            };
            Some((d, false))
        } else {
            None
        }
    }
}

/// Whether the failure rate `b` (failures `fb` of `nb`) is significantly
/// higher than `a` (`fa` of `na`): a one-sided two-proportion z-test at
/// `z` (2.33 for 1%). Small samples make it conservative, which is the safe
/// side: "the flakiness predates good" rather than a made-up regression.
pub fn rate_higher(fa: u32, na: u32, fb: u32, nb: u32, z: f64) -> bool {
    if na == 0 || nb == 0 {
        return false;
    }
    let (pa, pb) = (f64::from(fa) / f64::from(na), f64::from(fb) / f64::from(nb));
    let pooled = f64::from(fa + fb) / f64::from(na + nb);
    let se = (pooled * (1.0 - pooled) * (1.0 / f64::from(na) + 1.0 / f64::from(nb))).sqrt();
    if se == 0.0 {
        return pb > pa;
    }
    (pb - pa) / se >= z
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_searchs_low_rate_makes_its_test_decide_at_the_midpoint() {
        // boltons' flaky case: 3/32 at good (95% interval up to 0.242),
        // 18/47 at bad; the commit raised the rate from 0.05 to 0.30.
        let (good, bad) = (3.0 / 32.0, 18.0 / 47.0);
        let midpoint = (good + bad) / 2.0;
        assert!(indifference_rate(midpoint, bad) > 0.30, "the old low rate");
        let low = background_rate(good, 0.242, bad);
        assert!(
            (indifference_rate(low, bad) - midpoint).abs() < 1e-6,
            "{low}"
        );
        assert!(low > good && low < midpoint, "{low}");
        // At the true rates the test now leans the right way.
        let drift =
            |rate: f64| rate * (bad / low).ln() + (1.0 - rate) * ((1.0 - bad) / (1.0 - low)).ln();
        assert!(drift(0.30) > 0.0 && drift(0.05) < 0.0);
        // Never above good's interval: a clean good measured in few runs.
        assert_eq!(background_rate(0.0, 0.03, 0.4), 0.03);
        for (g, b) in [(0.0, 0.4), (0.05, 0.3), (0.1, 0.9), (0.01, 0.05)] {
            let low = background_rate(g, 1.0, b);
            assert!(
                (indifference_rate(low, b) - (g + b) / 2.0).abs() < 1e-6,
                "{g} {b}"
            );
        }
    }

    #[test]
    fn rate_test_separates_a_raised_rate() {
        let decide = |pattern: &[bool]| {
            let mut t = RateTest::new(0.05, 0.4, 0.01, 0.01, 60);
            for &f in pattern.iter().cycle() {
                if t.decision().is_some() {
                    break;
                }
                t.record(f);
            }
            (t.decision().unwrap(), t.runs())
        };
        // 2 failures in 5: the high rate, quickly.
        let (d, runs) = decide(&[true, false, false, true, false]);
        assert_eq!(d, (RateDecision::High, true));
        assert!(runs <= 10, "{runs}");
        // An occasional failure (1 in 20) is the low rate.
        let mut low = vec![false; 19];
        low.push(true);
        let (d, runs) = decide(&low);
        assert_eq!(d, (RateDecision::Low, true));
        assert!(runs <= 20, "{runs}");
    }

    #[test]
    fn rate_test_decides_at_the_cap_without_confidence() {
        let mut t = RateTest::new(0.2, 0.3, 0.01, 0.01, 4);
        for f in [true, false, false, true] {
            t.record(f);
        }
        assert_eq!(t.decision().map(|d| d.1), Some(false));
    }

    #[test]
    fn slow_tests_get_fewer_reruns() {
        // 0.5 s test, 2 slots, 120 s: the configured cap stands.
        assert_eq!(runs_for_duration(500, 2, 120_000, 5, 50), 50);
        // 10 s test: 24 runs fit in two minutes on two slots.
        assert_eq!(runs_for_duration(10_000, 2, 120_000, 5, 50), 24);
        // 5 minute test: the floor.
        assert_eq!(runs_for_duration(300_000, 2, 120_000, 5, 50), 5);
        let mut c = Classifier::new(SequentialConfig::default());
        c.limit_runs(5);
        for _ in 0..5 {
            c.record(true);
        }
        let d = c.decision().unwrap();
        assert_eq!(d.behaviour, Behaviour::Deterministic);
        assert!(!d.confident, "a decision at a lowered cap is not confident");
    }

    #[test]
    fn a_fix_that_passes_confirms_a_few_failures() {
        let config = SequentialConfig::default();
        // 4 failures in a row and 3 passes after the fix: at most 0.0084
        // under "flaky (p = 4/7) and the fix did nothing".
        assert_eq!(passes_to_confirm(4, &config, 10), Some(3));
        let bound = flaky_unfixed_likelihood(4, 3, config.flaky_max);
        assert!((bound - 0.00839).abs() < 1e-4, "{bound}");
        assert_eq!(passes_to_confirm(3, &config, 10), Some(4));
        // One failure proves little: too many passes would be needed.
        assert_eq!(passes_to_confirm(1, &config, 10), None);
        // The rate is capped at flaky_max: many failures and no pass are
        // judged at p = 0.75, not at the unconstrained maximum near 1.
        let capped = flaky_unfixed_likelihood(17, 0, config.flaky_max);
        assert!((capped - 0.75f64.powi(17)).abs() < 1e-12);
        assert!(flaky_unfixed_likelihood(4, 2, config.flaky_max) > config.alpha);
    }

    #[test]
    fn rate_comparison() {
        assert!(rate_higher(2, 50, 20, 50, 2.33));
        assert!(!rate_higher(14, 50, 16, 50, 2.33));
        assert!(!rate_higher(0, 0, 5, 10, 2.33));
        assert!(rate_higher(0, 40, 12, 40, 2.33));
    }

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
