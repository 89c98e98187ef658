//! Rounds of the culprit search with and without a prior
//! (`CulpritSearch::with_prior`), over every culprit of linear windows, with
//! and without a stretch of commits that fail differently (a build-error
//! window), and the time one round's choice of probes takes. Numbers, not
//! assertions:
//! `cargo bench -p tracelab-domain --bench search_rounds`.

use std::time::Instant;
use tracelab_domain::bisect::{CulpritSearch, ProbeResult};

fn linear(n: usize) -> Vec<Vec<usize>> {
    (0..n)
        .map(|i| if i == 0 { vec![] } else { vec![i - 1] })
        .collect()
}

fn rounds(n: usize, k: usize, culprit: usize, prior: Option<Vec<f64>>) -> u32 {
    rounds_around(n, k, culprit, prior, 0..0)
}

/// Rounds to the culprit when the commits of `broken` fail differently.
fn rounds_around(
    n: usize,
    k: usize,
    culprit: usize,
    prior: Option<Vec<f64>>,
    broken: std::ops::Range<usize>,
) -> u32 {
    let mut s = CulpritSearch::new(&linear(n)).expect("a linear window");
    if let Some(p) = prior {
        s = s.with_prior(p).expect("a valid prior");
    }
    while s.outcome().is_none() {
        let round = s.next_probes(k);
        assert!(!round.is_empty(), "the search stalled");
        for i in round {
            let r = if broken.contains(&i) {
                ProbeResult::Untestable
            } else if i >= culprit {
                ProbeResult::Bad
            } else {
                ProbeResult::Good
            };
            s.record(i, r).expect("consistent answers");
        }
    }
    s.rounds()
}

/// The prior `suspicion::commit_prior` builds: a third of the mass spread
/// evenly, two thirds over the `suspects` by their shares of the evidence.
fn prior(n: usize, suspects: &[(usize, f64)]) -> Vec<f64> {
    let mut w = vec![1.0 / 3.0; n];
    for &(s, share) in suspects {
        w[s] += 2.0 / 3.0 * n as f64 * share;
    }
    w
}

fn main() {
    println!(
        "| window | k | no prior: mean / max | right (all the evidence on the culprit) | culprit with 1/3 of the evidence | wrong (all on another commit) | wrong (half each on two others) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for n in [121usize, 1000] {
        for k in [1usize, 2, 4] {
            let culprits: Vec<usize> = (0..n - 1).step_by(if n > 200 { 7 } else { 1 }).collect();
            let stats = |f: &dyn Fn(usize) -> Option<Vec<f64>>| {
                let r: Vec<u32> = culprits.iter().map(|&c| rounds(n, k, c, f(c))).collect();
                let mean = r.iter().sum::<u32>() as f64 / r.len() as f64;
                format!("{mean:.2} / {}", r.iter().max().unwrap_or(&0))
            };
            // Suspects other than the culprit, spread over the window.
            let other = |c: usize, a: usize, b: usize| {
                let s = (c * a + b) % (n - 1);
                if s == c { (s + 1) % (n - 1) } else { s }
            };
            println!(
                "| {n} | {k} | {} | {} | {} | {} | {} |",
                stats(&|_| None),
                stats(&|c| Some(prior(n, &[(c, 1.0)]))),
                stats(&|c| Some(prior(
                    n,
                    &[
                        (c, 1.0 / 3.0),
                        (other(c, 53, 29), 1.0 / 3.0),
                        (other(c, 37, 11), 1.0 / 3.0)
                    ]
                ))),
                stats(&|c| Some(prior(n, &[(other(c, 37, 11), 1.0)]))),
                stats(&|c| Some(prior(
                    n,
                    &[(other(c, 37, 11), 0.5), (other(c, 53, 29), 0.5)]
                ))),
            );
        }
    }
    println!();
    println!(
        "| window | broken stretch | k | no prior: mean / max | wrong prior (all on another commit): mean / max |"
    );
    println!("|---|---|---|---|---|");
    for len in [4usize, 12, 24] {
        for k in [1usize, 2, 4] {
            let n = 121;
            let stats = |wrong: bool| {
                let mut r: Vec<u32> = Vec::new();
                for start in (0..n - len).step_by(5) {
                    let broken = start..start + len;
                    // A culprit just after the stretch is ambiguous: left out.
                    for c in (0..n - 1).filter(|c| !broken.contains(c) && *c != start + len) {
                        let p = wrong.then(|| prior(n, &[((c + 40) % (n - 1), 1.0)]));
                        r.push(rounds_around(n, k, c, p, broken.clone()));
                    }
                }
                let mean = r.iter().sum::<u32>() as f64 / r.len() as f64;
                format!("{mean:.2} / {}", r.iter().max().unwrap_or(&0))
            };
            println!("| {n} | {len} | {k} | {} | {} |", stats(false), stats(true));
        }
    }
    println!();
    for n in [121usize, 1000, 4096, 20_000] {
        for k in [2usize, 4] {
            // Two probes of a stretch in the middle failed differently.
            let mut s = CulpritSearch::new(&linear(n)).expect("a linear window");
            s.record(n / 2, ProbeResult::Untestable).expect("a probe");
            s.record(n / 2 + 3, ProbeResult::Untestable)
                .expect("a probe");
            let t = Instant::now();
            let round = s.next_probes(k);
            println!(
                "a round's probes beside a broken stretch, {n} candidates, k = {k}: {:?} ({round:?})",
                t.elapsed()
            );
        }
    }
    for n in [121usize, 1000, 4096] {
        let mut plain = CulpritSearch::new(&linear(n)).expect("a linear window");
        let mut weighted = plain
            .clone()
            .with_prior(prior(n, &[(n / 3, 1.0)]))
            .expect("a valid prior");
        let t = Instant::now();
        let a = plain.next_probes(2);
        let by_count = t.elapsed();
        let t = Instant::now();
        let b = weighted.next_probes(2);
        let by_mass = t.elapsed();
        println!(
            "first round's probes, {n} candidates, k = 2: by count {:?} ({a:?}), by mass {:?} ({b:?})",
            by_count, by_mass
        );
    }
}
