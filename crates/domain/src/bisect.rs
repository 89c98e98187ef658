//! Culprit search over a commit graph, k probes at a time.
//!
//! The candidates are the commits reachable from the bad revision and not from
//! a good one (`git rev-list BAD ^GOOD`), including merges and their side
//! branches. Assuming the failure, once introduced, is present in every
//! descendant, a probe answers a set question:
//! * bad at `c`: the culprit is `c` or one of its ancestors;
//! * good at `c`: the culprit is none of them;
//! * untestable at `c` (it fails *differently*): nothing is learnt, and `c` is
//!   never probed again — the search routes around it: from then on each
//!   round's probes are chosen for the information they are expected to
//!   give, counting a probe near a broken stretch as likely lost (breakage
//!   spans several commits), so the probes go to the stretch's edges.
//!
//! Each round picks up to `k` probes whose ancestor counts split the remaining
//! candidates into `k + 1` near-equal parts, so a linear history of `N`
//! commits needs about `⌈log_(k+1) N⌉` rounds. The search ends with one
//! candidate (the culprit), or with several that only untestable commits
//! separate (ambiguous, reported as such, like `git bisect skip`).

use crate::error::{Error, Result};

/// A fixed-size bit set over candidate indices.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Self {
        Bits(vec![0; n.div_ceil(64)])
    }
    fn full(n: usize) -> Self {
        let mut b = Self::new(n);
        for i in 0..n {
            b.set(i);
        }
        b
    }
    fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
    fn get(&self, i: usize) -> bool {
        self.0[i / 64] & (1 << (i % 64)) != 0
    }
    fn union_with(&mut self, other: &Bits) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a |= b;
        }
    }
    fn intersect_with(&mut self, other: &Bits) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a &= b;
        }
    }
    fn subtract(&mut self, other: &Bits) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a &= !b;
        }
    }
    fn count_and(&self, other: &Bits) -> usize {
        self.0
            .iter()
            .zip(&other.0)
            .map(|(a, b)| (a & b).count_ones() as usize)
            .sum()
    }
    fn count(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }
    /// The summed weights of the members of `self ∩ other`.
    fn mass(&self, other: &Bits, weights: &[f64]) -> f64 {
        let mut sum = 0.0;
        for (w, (a, b)) in self.0.iter().zip(&other.0).enumerate() {
            let mut word = a & b;
            while word != 0 {
                sum += weights[w * 64 + word.trailing_zeros() as usize];
                word &= word - 1;
            }
        }
        sum
    }
    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.0.len() * 64).filter(|i| self.get(*i))
    }
}

/// Largest candidate window searched as a graph; larger windows should be
/// narrowed by the caller (e.g. to the first-parent chain).
pub const MAX_GRAPH_CANDIDATES: usize = 20_000;

/// Largest window split by prior mass ([`CulpritSearch::with_prior`]): the
/// mass of every candidate's ancestors is summed each round.
pub const MAX_WEIGHTED_CANDIDATES: usize = 4_096;

/// Commit sums a round's choice of probes may take once some probe failed
/// differently ([`CulpritSearch::informative_probes`]), tens of
/// milliseconds (`cargo bench -p tracelab-domain --bench search_rounds`):
/// wider windows weigh fewer, evenly spaced options, never fewer than
/// [`MIN_INFORMATIVE_OPTIONS`].
const INFORMATIVE_CHOICE_BUDGET: usize = 1 << 22;
const MIN_INFORMATIVE_OPTIONS: usize = 32;

/// Rounds of more probes choose them by cuts at targets only (a choice
/// weighs every way the round's probes can fail: `2^k`).
const MAX_INFORMATIVE_ROUND: usize = 8;

/// What a probe at one revision showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeResult {
    Good,
    Bad,
    Untestable,
}

/// How the search ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchOutcome {
    /// Exactly one commit can be the first bad one.
    Culprit(usize),
    /// Several commits remain and none of them can be tested further.
    Ambiguous(Vec<usize>),
}

/// The state of a culprit search over candidate indices `0..n`, given in
/// topological order (every parent before its children); the last is the bad tip.
#[derive(Debug, Clone)]
pub struct CulpritSearch {
    /// Ancestors of each candidate within the candidate set, the commit included.
    ancestors: Vec<Bits>,
    /// Each candidate's parents within the candidates.
    parents: Vec<Vec<usize>>,
    remaining: Bits,
    results: Vec<Option<ProbeResult>>,
    rounds: u32,
    /// Relative prior probability of each candidate being the culprit
    /// ([`CulpritSearch::with_prior`]); `None` splits by counts.
    prior: Option<Vec<f64>>,
}

impl CulpritSearch {
    /// `parents[i]` lists the candidate indices of commit `i`'s parents
    /// (parents outside the window are left out: they are good).
    pub fn new(parents: &[Vec<usize>]) -> Result<Self> {
        let n = parents.len();
        if n == 0 {
            return Err(Error::invalid(
                "no commits between the good and the bad revision",
            ));
        }
        if n > MAX_GRAPH_CANDIDATES {
            return Err(Error::invalid(format!(
                "{n} candidate commits exceed the graph search limit of {MAX_GRAPH_CANDIDATES}"
            )));
        }
        let mut ancestors: Vec<Bits> = Vec::with_capacity(n);
        for (i, ps) in parents.iter().enumerate() {
            let mut bits = Bits::new(n);
            bits.set(i);
            for &p in ps {
                if p >= i {
                    return Err(Error::invalid("candidates are not in topological order"));
                }
                let parent = ancestors[p].clone();
                bits.union_with(&parent);
            }
            ancestors.push(bits);
        }
        let mut results = vec![None; n];
        results[n - 1] = Some(ProbeResult::Bad);
        let mut search = Self {
            ancestors,
            parents: parents.to_vec(),
            remaining: Bits::full(n),
            results,
            rounds: 0,
            prior: None,
        };
        let tip = search.ancestors[n - 1].clone();
        search.remaining.intersect_with(&tip);
        Ok(search)
    }

    /// Splits the candidates by prior probability mass instead of by
    /// count: a candidate the evidence points at gets its own part as soon as
    /// its mass is about a (k+1)-th of what remains, so a right prior ends
    /// the search in a round or two. The answer does not depend on it — the
    /// search still ends only where a good revision's child is bad — only
    /// the number of rounds does, and a wrong prior costs about one round
    /// while it carries at most half the mass. Windows above
    /// [`MAX_WEIGHTED_CANDIDATES`] keep the count split.
    pub fn with_prior(mut self, weights: Vec<f64>) -> Result<Self> {
        if weights.len() != self.len() {
            return Err(Error::invalid(format!(
                "{} prior weights for {} candidates",
                weights.len(),
                self.len()
            )));
        }
        if weights.iter().any(|w| !w.is_finite() || *w <= 0.0) {
            return Err(Error::invalid("prior weights must be positive and finite"));
        }
        if self.len() <= MAX_WEIGHTED_CANDIDATES {
            self.prior = Some(weights);
        }
        Ok(self)
    }

    pub fn len(&self) -> usize {
        self.ancestors.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ancestors.is_empty()
    }
    pub fn remaining(&self) -> usize {
        self.remaining.count()
    }
    pub fn rounds(&self) -> u32 {
        self.rounds
    }
    pub fn result(&self, i: usize) -> Option<ProbeResult> {
        self.results[i]
    }

    /// Candidates that can still be probed: remaining, never tested, not untestable.
    fn probeable(&self) -> impl Iterator<Item = usize> + '_ {
        self.remaining.iter().filter(|&i| self.results[i].is_none())
    }

    /// Up to `k` probes for the next round, or none when the search has ended.
    pub fn next_probes(&mut self, k: usize) -> Vec<usize> {
        if self.outcome().is_some() {
            return Vec::new();
        }
        if let Some(prior) = &self.prior {
            let chosen = self.weighted_probes(k, prior);
            if !chosen.is_empty() {
                self.rounds += 1;
                return chosen;
            }
        }
        let risk = self.untestable_risk();
        if k <= MAX_INFORMATIVE_ROUND && self.probeable().any(|i| risk[i] > 0.0) {
            let weights = vec![1.0; self.len()];
            let chosen = self.informative_probes(k, &weights, &risk, Vec::new());
            if !chosen.is_empty() {
                self.rounds += 1;
                return chosen;
            }
        }
        let n = self.remaining();
        let mut weighted: Vec<(usize, usize)> = self
            .probeable()
            .map(|i| (i, self.ancestors[i].count_and(&self.remaining)))
            .collect();
        if weighted.is_empty() {
            return Vec::new();
        }
        weighted.sort_by_key(|&(i, w)| (w, i));
        let k = k.max(1).min(weighted.len());
        let mut chosen: Vec<usize> = Vec::with_capacity(k);
        for target in split_targets(n, k) {
            // The probe whose "bad" answer leaves `target` candidates, away
            // from commits that failed differently.
            let open: Vec<(usize, f64)> = weighted
                .iter()
                .filter(|(i, _)| !chosen.contains(i))
                .map(|&(i, w)| (i, w.abs_diff(target) as f64))
                .collect();
            if let Some(i) = safest_near_target(&open, &risk, n as f64 / (4 * (k + 1)) as f64) {
                chosen.push(i);
            }
        }
        chosen.sort_unstable();
        self.rounds += 1;
        chosen
    }

    /// The probes for a round under a prior. A suspect holding at least a
    /// (k+1)-th of the remaining mass is isolated: it and its parents are
    /// probed together (bad at the suspect and good at its parents ends the
    /// search), when they fit in the round. The other probes (all of them
    /// otherwise) cut the remaining mass at `1/(k+1), 2/(k+1), …`, the
    /// counterpart of [`split_targets`] by mass.
    fn weighted_probes(&self, k: usize, prior: &[f64]) -> Vec<usize> {
        let total = self.remaining.mass(&self.remaining, prior);
        let below: Vec<(usize, f64)> = self
            .probeable()
            .map(|i| (i, self.ancestors[i].mass(&self.remaining, prior)))
            // A probe that every remaining candidate precedes tells nothing.
            .filter(|&(_, m)| m < total * (1.0 - 1e-9))
            .collect();
        let k = k.max(1).min(below.len());
        let mut chosen: Vec<usize> = Vec::with_capacity(k);
        let suspect = self
            .remaining
            .iter()
            .max_by(|a, b| prior[*a].total_cmp(&prior[*b]).then(b.cmp(a)));
        if let Some(s) = suspect.filter(|&s| prior[s] * (k + 1) as f64 >= total) {
            let isolating: Vec<usize> = std::iter::once(s)
                .chain(self.parents[s].iter().copied())
                .filter(|c| below.iter().any(|(i, _)| i == c))
                .collect();
            if !isolating.is_empty() && isolating.len() <= k {
                chosen = isolating;
            }
        }
        let risk = self.untestable_risk();
        if k <= MAX_INFORMATIVE_ROUND && below.iter().any(|&(i, _)| risk[i] > 0.0) {
            return self.informative_probes(k, prior, &risk, chosen);
        }
        for j in 1..=k {
            if chosen.len() == k {
                break;
            }
            let target = total * j as f64 / (k + 1) as f64;
            let open: Vec<(usize, f64)> = below
                .iter()
                .filter(|(i, _)| !chosen.contains(i))
                .map(|&(i, m)| (i, (m - target).abs()))
                .collect();
            let best = safest_near_target(&open, &risk, total / (4 * (k + 1)) as f64);
            if let Some(i) = best {
                chosen.push(i);
            }
        }
        chosen.sort_unstable();
        chosen
    }

    /// The probes for a round once a probe failed differently: added one
    /// at a time to `chosen`, each the one that most raises the information
    /// the round is expected to give (the entropy of how its answers split
    /// the remaining `weights`), counting each probe as lost with its
    /// `risk` of failing differently too. A cut at a target
    /// ([`safest_near_target`]) only trades a little cut for a little risk;
    /// this steps over a broken stretch when every commit near the target
    /// lies in it, and probes just outside it, where the answer says
    /// whether the culprit is before, in or after it
    /// (`untestable_windows_cost_fewer_rounds`). Windows without failed
    /// probes keep the cuts at targets, which bound the worst case.
    fn informative_probes(
        &self,
        k: usize,
        weights: &[f64],
        risk: &[f64],
        mut chosen: Vec<usize>,
    ) -> Vec<usize> {
        let remaining: Vec<usize> = self.remaining.iter().collect();
        let mass: Vec<f64> = remaining.iter().map(|&c| weights[c]).collect();
        let total: f64 = mass.iter().sum();
        let mut open: Vec<usize> = self
            .probeable()
            // A probe that every remaining candidate precedes tells nothing.
            .filter(|&i| self.ancestors[i].count_and(&self.remaining) < remaining.len())
            .filter(|i| risk[*i] < 1.0 && !chosen.contains(i))
            .collect();
        // Each evaluation sums the remaining commits once per way the
        // round's probes can fail: thin a wide window's options evenly
        // (they are in topological order) to bound a round's choice.
        let per_option = remaining.len() << k;
        let options = (INFORMATIVE_CHOICE_BUDGET / per_option.max(1)).max(MIN_INFORMATIVE_OPTIONS);
        let step = open.len().div_ceil(options).max(1);
        if step > 1 {
            open = open.into_iter().step_by(step).collect();
        }
        // Which of the round's probes each remaining commit would make bad
        // (bit j: the j-th chosen probe descends from it).
        let mut answers: Vec<usize> = remaining
            .iter()
            .map(|&c| {
                chosen
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| self.ancestors[**p].get(c))
                    .fold(0, |bits, (j, _)| bits | 1 << j)
            })
            .collect();
        let mut with_option = answers.clone();
        while chosen.len() < k.max(1) {
            let bit = 1 << chosen.len();
            let mut risks: Vec<f64> = chosen.iter().map(|&p| risk[p]).collect();
            risks.push(0.0);
            let mut best: Option<(usize, f64)> = None;
            for &i in open.iter().filter(|i| !chosen.contains(i)) {
                for ((to, from), &c) in with_option.iter_mut().zip(&answers).zip(&remaining) {
                    *to = if self.ancestors[i].get(c) {
                        from | bit
                    } else {
                        *from
                    };
                }
                *risks.last_mut().expect("the option's risk") = risk[i];
                let information = expected_information(&with_option, &mass, total, &risks);
                let better = best.is_none_or(|(b, best)| {
                    information
                        .total_cmp(&best)
                        .then(risk[b].total_cmp(&risk[i]))
                        .then(b.cmp(&i))
                        .is_gt()
                });
                if better {
                    best = Some((i, information));
                }
            }
            match best {
                Some((i, information)) if information > 1e-12 => {
                    for (to, &c) in answers.iter_mut().zip(&remaining) {
                        if self.ancestors[i].get(c) {
                            *to |= bit;
                        }
                    }
                    chosen.push(i);
                }
                _ => break,
            }
        }
        chosen.sort_unstable();
        chosen
    }

    /// How likely each candidate is to fail differently too, judged by
    /// the commits that already did: a build or a test collection breaks
    /// for a stretch of commits, not for one. Along the candidates'
    /// topological order, a commit between two untestable ones with no
    /// tested commit between them almost surely is untestable (risk 1);
    /// beside a stretch of `len` known commits the risk falls as
    /// `exp(-d / len)` at distance `d` (longer stretches reach further),
    /// and it is 0 from the nearest tested commit on: the stretch ends
    /// before it. The probes weigh their answers by it
    /// ([`CulpritSearch::informative_probes`]), so the search steps over a
    /// broken stretch instead of probing it commit by commit.
    fn untestable_risk(&self) -> Vec<f64> {
        let n = self.results.len();
        let mut risk = vec![0.0; n];
        let tested =
            |i: &usize| matches!(self.results[*i], Some(ProbeResult::Good | ProbeResult::Bad));
        // Stretches of untestable commits with no tested commit between.
        let mut stretches: Vec<(usize, usize)> = Vec::new();
        let mut open: Option<(usize, usize)> = None;
        for (i, result) in self.results.iter().enumerate() {
            match result {
                Some(ProbeResult::Untestable) => {
                    open = Some(open.map_or((i, i), |(a, _)| (a, i)));
                }
                Some(_) => stretches.extend(open.take()),
                None => {}
            }
        }
        stretches.extend(open);
        for (a, b) in stretches {
            let len = (b - a + 1) as f64;
            let before = (0..a).rev().find(tested);
            let after = (b + 1..n).find(tested);
            // A tested commit `gap` away bounds the stretch: it ends before.
            let beside = |d: usize, gap: Option<usize>| {
                if gap.is_some_and(|gap| d >= gap) {
                    0.0
                } else {
                    (-(d as f64) / len).exp()
                }
            };
            for (i, r) in risk.iter_mut().enumerate() {
                let here = if i < a {
                    beside(a - i, before.map(|t| a - t))
                } else if i > b {
                    beside(i - b, after.map(|t| t - b))
                } else {
                    1.0
                };
                *r = f64::max(*r, here);
            }
        }
        risk
    }

    /// Applies one probe's result.
    pub fn record(&mut self, i: usize, result: ProbeResult) -> Result<()> {
        self.results[i] = Some(result);
        match result {
            ProbeResult::Bad => {
                let anc = self.ancestors[i].clone();
                self.remaining.intersect_with(&anc);
            }
            ProbeResult::Good => {
                let anc = self.ancestors[i].clone();
                self.remaining.subtract(&anc);
            }
            ProbeResult::Untestable => {}
        }
        if self.remaining.count() == 0 {
            return Err(Error::conflict(
                "probe results contradict each other (a good revision descends from a bad one): the failure may be flaky or come and go",
            ));
        }
        Ok(())
    }

    /// The end of the search, once reached.
    pub fn outcome(&self) -> Option<SearchOutcome> {
        let remaining: Vec<usize> = self.remaining.iter().collect();
        if remaining.len() == 1 {
            return Some(SearchOutcome::Culprit(remaining[0]));
        }
        if self.probeable().next().is_none() {
            // Only untestable commits (and the bad ones above them) are left.
            // Keep the bad ones that are minimal among the remaining: any
            // remaining bad commit whose remaining ancestors are all untestable.
            return Some(SearchOutcome::Ambiguous(remaining));
        }
        None
    }
}

/// Of `open` probes (index, distance of its cut from the target), the
/// least likely to be untestable (`risk`) among those whose cut is within
/// `slack` of the best one's; ties go to the better cut, then the lower
/// index. The slack (a quarter of a part of the round's split) bounds
/// what stepping away from a broken stretch costs: every cut still leaves
/// at most a part and a quarter, so the search stays logarithmic (half a
/// part saved a few more rounds on average and lost more in the worst
/// case, a whole part lost on both: `untestable_windows_cost_fewer_rounds`).
fn safest_near_target(open: &[(usize, f64)], risk: &[f64], slack: f64) -> Option<usize> {
    let best = open.iter().map(|&(_, d)| d).min_by(f64::total_cmp)?;
    open.iter()
        .filter(|&&(_, d)| d <= best + slack)
        .min_by(|a, b| {
            risk[a.0]
                .total_cmp(&risk[b.0])
                .then(a.1.total_cmp(&b.1))
                .then(a.0.cmp(&b.0))
        })
        .map(|&(i, _)| i)
}

/// The entropy of a round's answers over the remaining commits (`mass`,
/// summing to `total`), averaged over which probes fail differently,
/// independently, each with its `risk`. `answers[c]` has bit `j` set when
/// the `j`-th probe would be bad were commit `c` the culprit.
fn expected_information(answers: &[usize], mass: &[f64], total: f64, risk: &[f64]) -> f64 {
    let mut parts = vec![0.0; 1 << risk.len()];
    let mut expected = 0.0;
    for answered in 0..1usize << risk.len() {
        let chance: f64 = risk
            .iter()
            .enumerate()
            .map(|(j, r)| if answered >> j & 1 == 1 { 1.0 - r } else { *r })
            .product();
        if chance <= 0.0 {
            continue;
        }
        parts.fill(0.0);
        for (bits, m) in answers.iter().zip(mass) {
            parts[bits & answered] += m;
        }
        let entropy: f64 = parts
            .iter()
            .filter(|&&m| m > 0.0)
            .map(|&m| -(m / total) * (m / total).ln())
            .sum();
        expected += chance * entropy;
    }
    expected
}

/// Where `k` probes should cut `n` candidates, as cumulative group sizes.
///
/// Equal parts minimise the worst case; this keeps the worst case (every
/// group at most `(k+1)^(R-1)` for the `R` rounds `n` needs) but makes as many
/// groups as possible small enough to finish a round earlier, which lowers
/// the expected number of rounds (1,000 commits, k = 4: 4.5 instead of 5).
pub fn split_targets(n: usize, k: usize) -> Vec<usize> {
    let parts = k + 1;
    let rounds = rounds_for_linear(n, k);
    if rounds <= 1 {
        return (1..=k).map(|i| i.min(n)).collect();
    }
    let cap = parts.pow(rounds - 1);
    let small = parts.pow(rounds - 2);
    // The most small groups such that the big ones can still hold the rest.
    let smalls = (0..parts)
        .rev()
        .find(|&m| m * small + (parts - m) * cap >= n)
        .unwrap_or(0);
    let bigs = parts - smalls;
    let rest = n.saturating_sub(smalls * small);
    let mut sizes: Vec<usize> = vec![small; smalls];
    sizes.extend((0..bigs).map(|i| rest / bigs + usize::from(i < rest % bigs)));
    if smalls == parts {
        // Everything fits in small groups: split evenly instead.
        sizes = (0..parts)
            .map(|i| n / parts + usize::from(i < n % parts))
            .collect();
    }
    sizes
        .iter()
        .scan(0, |sum, g| {
            *sum += g;
            Some(*sum)
        })
        .take(k)
        .collect()
}

/// Rounds a k-ary search needs on a linear history of `n` candidates in the worst case.
pub fn rounds_for_linear(n: usize, k: usize) -> u32 {
    let mut remaining = n;
    let mut rounds = 0;
    while remaining > 1 {
        remaining = remaining.div_ceil(k + 1);
        rounds += 1;
    }
    rounds
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linear(n: usize) -> Vec<Vec<usize>> {
        (0..n)
            .map(|i| if i == 0 { vec![] } else { vec![i - 1] })
            .collect()
    }

    /// Runs the search with an oracle: commits at or after `culprit` (descendants) are bad,
    /// indices in `untestable` fail differently.
    fn run(
        parents: &[Vec<usize>],
        k: usize,
        is_bad: impl Fn(usize) -> bool,
        untestable: &[usize],
    ) -> (SearchOutcome, u32, usize) {
        run_with(parents, k, is_bad, untestable, None)
    }

    /// [`run`] under a prior, when given.
    fn run_with(
        parents: &[Vec<usize>],
        k: usize,
        is_bad: impl Fn(usize) -> bool,
        untestable: &[usize],
        prior: Option<Vec<f64>>,
    ) -> (SearchOutcome, u32, usize) {
        let mut s = CulpritSearch::new(parents).unwrap();
        if let Some(prior) = prior {
            s = s.with_prior(prior).unwrap();
        }
        let mut probes = 0;
        loop {
            if let Some(outcome) = s.outcome() {
                return (outcome, s.rounds(), probes);
            }
            let round = s.next_probes(k);
            assert!(!round.is_empty(), "search stalled");
            for i in round {
                probes += 1;
                let r = if untestable.contains(&i) {
                    ProbeResult::Untestable
                } else if is_bad(i) {
                    ProbeResult::Bad
                } else {
                    ProbeResult::Good
                };
                s.record(i, r).unwrap();
            }
        }
    }

    #[test]
    fn finds_every_culprit_in_a_linear_history() {
        for k in [1, 2, 4] {
            for culprit in 0..40 {
                let (outcome, rounds, _) = run(&linear(40), k, |i| i >= culprit, &[]);
                assert_eq!(outcome, SearchOutcome::Culprit(culprit), "k={k}");
                assert!(
                    rounds <= rounds_for_linear(40, k),
                    "k={k} culprit={culprit} rounds={rounds}"
                );
            }
        }
    }

    #[test]
    fn k_ary_needs_log_base_k_plus_one_rounds() {
        assert_eq!(rounds_for_linear(1000, 1), 10);
        assert_eq!(rounds_for_linear(1000, 4), 5);
        assert_eq!(rounds_for_linear(100, 4), 3);
        let (_, rounds, _) = run(&linear(1000), 4, |i| i >= 617, &[]);
        assert!(rounds <= 5);
    }

    #[test]
    fn split_targets_keep_the_worst_case_and_favour_early_finishes() {
        assert_eq!(split_targets(1000, 4), vec![125, 250, 375, 500]);
        assert_eq!(split_targets(100, 4), vec![5, 29, 53, 77]);
        assert_eq!(split_targets(3, 4), vec![1, 2, 3, 3]);
        for n in 2..300 {
            for k in 1..6 {
                let t = split_targets(n, k);
                assert_eq!(t.len(), k);
                assert!(t.windows(2).all(|w| w[0] <= w[1]));
                let mut bounds = vec![0];
                bounds.extend(&t);
                bounds.push(n);
                let cap = (k + 1).pow(rounds_for_linear(n, k).saturating_sub(1));
                assert!(
                    bounds.windows(2).all(|w| w[1] - w[0] <= cap.max(1)),
                    "n={n} k={k} {t:?}"
                );
            }
        }
    }

    #[test]
    fn expected_rounds_drop_below_the_equal_split() {
        let total: u32 = (0..1000)
            .step_by(7)
            .map(|culprit| run(&linear(1000), 4, |i| i >= culprit, &[]).1)
            .sum();
        let mean = f64::from(total) / 143.0;
        assert!(mean < 4.8, "mean rounds {mean}");
    }

    /// Rounds of a search over a linear history with `prior`, checked right.
    fn rounds_with_prior(n: usize, k: usize, culprit: usize, prior: Vec<f64>) -> u32 {
        let (outcome, rounds, _) = run_with(&linear(n), k, |i| i >= culprit, &[], Some(prior));
        assert_eq!(outcome, SearchOutcome::Culprit(culprit));
        rounds
    }

    /// Half the mass on `suspect`, the rest spread evenly.
    fn pointing_at(n: usize, suspect: usize) -> Vec<f64> {
        let mut w = vec![1.0; n];
        w[suspect] += n as f64;
        w
    }

    #[test]
    fn a_right_prior_finds_the_culprit_in_one_or_two_rounds() {
        let n = 121;
        for k in [1, 2, 4] {
            for culprit in 0..n - 1 {
                let rounds = rounds_with_prior(n, k, culprit, pointing_at(n, culprit));
                let most = if k == 1 { 3 } else { 2 };
                assert!(rounds <= most, "k={k} culprit={culprit}: {rounds} rounds");
            }
        }
        // k = 2: the suspect's parent and the suspect in the same round.
        let mut s = CulpritSearch::new(&linear(n))
            .unwrap()
            .with_prior(pointing_at(n, 77))
            .unwrap();
        assert_eq!(s.next_probes(2), vec![76, 77]);
    }

    #[test]
    fn a_wrong_prior_costs_at_most_one_round_and_never_the_answer() {
        let n = 121;
        for k in [1, 2, 4] {
            let worst = rounds_for_linear(n, k);
            let (mut with_wrong, mut uniform) = (0, 0);
            for culprit in 0..n - 1 {
                let suspect = (culprit * 37 + 11) % (n - 1);
                let suspect = if suspect == culprit {
                    (suspect + 1) % (n - 1)
                } else {
                    suspect
                };
                let rounds = rounds_with_prior(n, k, culprit, pointing_at(n, suspect));
                assert!(
                    rounds <= worst + 1,
                    "k={k} culprit={culprit}: {rounds} rounds"
                );
                with_wrong += rounds;
                uniform += run(&linear(n), k, |i| i >= culprit, &[]).1;
            }
            assert!(
                with_wrong <= uniform + (n as u32 - 1),
                "k={k}: {with_wrong} rounds against {uniform} without a prior"
            );
        }
    }

    #[test]
    fn a_prior_spread_over_a_few_suspects_still_helps() {
        let n = 121;
        let k = 2;
        let (mut guided, mut uniform) = (0, 0);
        for culprit in (3..n - 1).step_by(5) {
            // The culprit among three suspects of equal weight.
            let mut w = vec![1.0; n];
            for s in [culprit, culprit / 2, (culprit + 40) % (n - 1)] {
                w[s] += n as f64 / 3.0;
            }
            guided += rounds_with_prior(n, k, culprit, w);
            uniform += run(&linear(n), k, |i| i >= culprit, &[]).1;
        }
        assert!(guided < uniform, "{guided} rounds against {uniform}");
    }

    #[test]
    fn a_prior_must_fit_the_candidates() {
        let s = CulpritSearch::new(&linear(5)).unwrap();
        assert!(s.clone().with_prior(vec![1.0; 4]).is_err());
        assert!(s.clone().with_prior(vec![1.0, 0.0, 1.0, 1.0, 1.0]).is_err());
        assert!(s.with_prior(vec![1.0, f64::NAN, 1.0, 1.0, 1.0]).is_err());
    }

    #[test]
    fn routes_around_untestable_commits() {
        // Commits 3..=11 fail differently (an import error); the culprit is 15.
        let untestable: Vec<usize> = (3..=11).collect();
        let (outcome, _, _) = run(&linear(20), 2, |i| i >= 15, &untestable);
        assert_eq!(outcome, SearchOutcome::Culprit(15));
    }

    /// Rounds over every culprit outside a `len`-commit untestable window
    /// of a 121-commit history, for windows starting at every 8th commit,
    /// with `prior(culprit)` when given.
    fn rounds_around_windows(
        len: usize,
        k: usize,
        prior: impl Fn(usize) -> Option<Vec<f64>>,
    ) -> (u32, u32) {
        let (mut total, mut worst) = (0, 0);
        for start in (0..121 - len).step_by(8) {
            let window: Vec<usize> = (start..start + len).collect();
            for culprit in (0..121).filter(|c| !window.contains(c) && *c != start + len) {
                let (outcome, rounds, _) =
                    run_with(&linear(121), k, |i| i >= culprit, &window, prior(culprit));
                assert_eq!(outcome, SearchOutcome::Culprit(culprit), "window {start}");
                total += rounds;
                worst = worst.max(rounds);
            }
        }
        (total, worst)
    }

    #[test]
    fn untestable_windows_cost_fewer_rounds() {
        // The same cases (total rounds, worst case) before probes stepped
        // away from untestable stretches: (7367, 12) without a prior,
        // (8751, 11) with a wrong one, (1512, 1) with a right one; with
        // cuts near targets that trade a little cut for less risk:
        // (7209, 11), (8231, 11), (1512, 1).
        let plain = rounds_around_windows(12, 2, |_| None);
        let right = rounds_around_windows(12, 2, |c| Some(pointing_at(121, c)));
        let wrong = rounds_around_windows(12, 2, |c| Some(pointing_at(121, (c + 40) % 120)));
        eprintln!("untestable windows: no prior {plain:?}, right {right:?}, wrong {wrong:?}");
        assert!(plain.0 < 7150 && plain.1 <= 8, "{plain:?}");
        assert!(wrong.0 < 8250 && wrong.1 <= 8, "{wrong:?}");
        assert_eq!(right, (1512, 1));
        // A stretch twice as long, no prior: with cuts near targets, the
        // probes walked into it commit by commit, (7113, 17).
        let long = rounds_around_windows(24, 2, |_| None);
        eprintln!("24-commit windows: {long:?}");
        assert!(long.0 < 6300 && long.1 <= 9, "{long:?}");
    }

    #[test]
    fn probes_step_over_a_broken_stretch_to_its_edges() {
        // itoa's build-error window in the real-history benchmark: the
        // culprit is within 69..=85, and 74 and 80 failed to build with no
        // tested commit between them. Cuts near the targets probed 78,
        // inside the stretch; the probes go outside it instead, one on
        // each side, where the answers tell before, in or after it.
        let mut s = CulpritSearch::new(&linear(121)).unwrap();
        s.record(68, ProbeResult::Good).unwrap();
        s.record(85, ProbeResult::Bad).unwrap();
        s.record(74, ProbeResult::Untestable).unwrap();
        s.record(80, ProbeResult::Untestable).unwrap();
        let round = s.next_probes(2);
        assert!(round[0] < 74 && round[1] > 80, "{round:?}");
    }

    #[test]
    fn the_neighbours_of_untestable_commits_are_risky_up_to_a_tested_one() {
        let mut s = CulpritSearch::new(&linear(12)).unwrap();
        s.record(4, ProbeResult::Untestable).unwrap();
        s.record(6, ProbeResult::Untestable).unwrap();
        s.record(8, ProbeResult::Good).unwrap();
        let risk = s.untestable_risk();
        assert_eq!(risk[5], 1.0, "between two untestable commits");
        assert!((risk[3] - (-1.0f64 / 3.0).exp()).abs() < 1e-12, "{risk:?}");
        assert!(risk[2] < risk[3] && risk[7] > 0.0, "{risk:?}");
        assert_eq!(
            (risk[8], risk[9]),
            (0.0, 0.0),
            "the stretch ends before a tested commit"
        );
    }

    #[test]
    fn culprit_hidden_among_untestable_commits_is_ambiguous() {
        let untestable: Vec<usize> = (3..=11).collect();
        let (outcome, _, _) = run(&linear(20), 2, |i| i >= 7, &untestable);
        match outcome {
            SearchOutcome::Ambiguous(set) => {
                assert!(set.contains(&7));
                assert!(
                    set.contains(&12),
                    "the first testable bad commit stays a candidate: {set:?}"
                );
            }
            other => panic!("expected ambiguity, got {other:?}"),
        }
    }

    /// `0 - 1 - 2 ------- 6 (merge of 2 and 5) - 7`, with `3 - 4 - 5`
    /// branching off 1.
    fn merged_side_branch() -> Vec<Vec<usize>> {
        vec![
            vec![],
            vec![0],
            vec![1],
            vec![1],
            vec![3],
            vec![4],
            vec![2, 5],
            vec![6],
        ]
    }

    #[test]
    fn finds_a_culprit_on_a_merged_side_branch() {
        let parents = merged_side_branch();
        // The culprit is 4 on the side branch: bad are 4, 5 and everything after the merge.
        let bad = |i: usize| [4, 5, 6, 7].contains(&i);
        for k in [1, 2, 3] {
            let (outcome, _, _) = run(&parents, k, bad, &[]);
            assert_eq!(outcome, SearchOutcome::Culprit(4), "k={k}");
        }
    }

    #[test]
    fn a_merge_can_itself_be_the_culprit() {
        let parents = merged_side_branch();
        let (outcome, _, _) = run(&parents, 2, |i| i >= 6, &[]);
        assert_eq!(outcome, SearchOutcome::Culprit(6));
    }

    #[test]
    fn a_prior_guides_the_search_through_merges() {
        let parents = merged_side_branch();
        let bad = |i: usize| [4, 5, 6, 7].contains(&i);
        for suspect in 0..7 {
            let mut w = vec![1.0; 8];
            w[suspect] += 8.0;
            let mut s = CulpritSearch::new(&parents).unwrap().with_prior(w).unwrap();
            while s.outcome().is_none() {
                for i in s.next_probes(2) {
                    let r = if bad(i) {
                        ProbeResult::Bad
                    } else {
                        ProbeResult::Good
                    };
                    s.record(i, r).unwrap();
                }
            }
            assert_eq!(
                s.outcome(),
                Some(SearchOutcome::Culprit(4)),
                "suspect {suspect}"
            );
        }
    }

    #[test]
    fn contradictions_are_reported() {
        let mut s = CulpritSearch::new(&linear(10)).unwrap();
        s.record(5, ProbeResult::Bad).unwrap();
        let err = s.record(5, ProbeResult::Good).unwrap_err();
        assert!(err.message.contains("contradict"));
    }

    #[test]
    fn rejects_bad_input() {
        assert!(CulpritSearch::new(&[]).is_err());
        assert!(CulpritSearch::new(&[vec![], vec![1]]).is_err());
    }
}
