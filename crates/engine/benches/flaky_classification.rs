//! How many re-runs the sequential classifier needs to reach a verdict, and
//! how often it is wrong, against the fixed budget of 50 runs.
//!
//! The runs are simulated (a Bernoulli failure per run), so the numbers are
//! properties of the procedure, not of a machine.
//!
//!     cargo bench -p tracelab-engine --bench flaky_classification

use tracelab_domain::sequential::{Behaviour, Classifier, SequentialConfig, classify_fixed};

const TRIALS: u32 = 20_000;

fn simulate(rate: f64, config: SequentialConfig, rng: &mut fastrand::Rng) -> (u32, Behaviour) {
    let mut c = Classifier::new(config);
    loop {
        if let Some(d) = c.decision() {
            return (c.runs(), d.behaviour);
        }
        c.record(rng.f64() < rate);
    }
}

fn main() {
    let mut rng = fastrand::Rng::with_seed(7);
    println!(
        "{TRIALS} simulated investigations per row; a verdict other than the truth counts as a misclassification\n"
    );
    println!("| failure rate | truth | procedure | mean runs | p95 runs | misclassified |");
    println!("|---|---|---|---|---|---|");
    for rate in [0.3, 0.1, 0.05, 1.0] {
        let truth = if rate >= 1.0 {
            Behaviour::Deterministic
        } else {
            Behaviour::Flaky
        };
        let procedures: [(&str, Option<SequentialConfig>); 3] = [
            ("fixed 50", None),
            (
                "sequential, cap 50 (default)",
                Some(SequentialConfig::default()),
            ),
            (
                "sequential, cap 100",
                Some(SequentialConfig {
                    max_runs: 100,
                    ..Default::default()
                }),
            ),
        ];
        for (name, config) in procedures {
            let mut runs: Vec<u32> = Vec::with_capacity(TRIALS as usize);
            let mut wrong = 0;
            for _ in 0..TRIALS {
                let (n, verdict) = match config {
                    None => {
                        let outcomes: Vec<bool> = (0..50).map(|_| rng.f64() < rate).collect();
                        (50, classify_fixed(&outcomes))
                    }
                    Some(c) => simulate(rate, c, &mut rng),
                };
                runs.push(n);
                if verdict != truth {
                    wrong += 1;
                }
            }
            runs.sort_unstable();
            let mean = runs.iter().map(|&r| f64::from(r)).sum::<f64>() / f64::from(TRIALS);
            let p95 = runs[(runs.len() * 95) / 100];
            println!(
                "| {rate} | {truth:?} | {name} | {mean:.1} | {p95} | {:.2}% |",
                100.0 * f64::from(wrong) / f64::from(TRIALS)
            );
        }
    }
}
