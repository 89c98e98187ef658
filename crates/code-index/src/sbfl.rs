//! Spectrum-based fault localisation: Ochiai over per-test line coverage,
//! aggregated to functions. A ranking signal of [`crate::locate()`] (the
//! `spectrum` component), so it stays with the ranking; running a suite
//! under coverage and reading its report is `tracelab-coverage`'s.
//!
//! Ochiai(line) = failed(line) / sqrt(total_failed · (failed(line) + passed(line))).

use crate::model::SymbolId;
use crate::snapshot::Snapshot;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};

/// A repository-relative path and a 1-based line.
pub type Line = (String, u32);

/// One test's outcome and the lines it ran: what a coverage run
/// (`tracelab_coverage`) yields and Ochiai ranks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestRun {
    pub name: String,
    pub passed: bool,
    pub covered: BTreeSet<Line>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineScore {
    pub path: String,
    pub line: u32,
    pub score: f64,
    /// Failing tests covering the line.
    pub failed: u32,
    /// Passing tests covering the line.
    pub passed: u32,
}

/// Ochiai suspiciousness of every line covered by a failing test, best
/// first (ties: fewer passing tests, then path and line). Empty when no test
/// failed.
pub fn ochiai(runs: &[TestRun]) -> Vec<LineScore> {
    let total_failed = runs.iter().filter(|r| !r.passed).count() as f64;
    if total_failed == 0.0 {
        return Vec::new();
    }
    let mut counts: HashMap<&Line, (u32, u32)> = HashMap::new();
    for r in runs {
        for l in &r.covered {
            let c = counts.entry(l).or_default();
            if r.passed {
                c.1 += 1;
            } else {
                c.0 += 1;
            }
        }
    }
    let mut out: Vec<LineScore> = counts
        .into_iter()
        .filter(|(_, (f, _))| *f > 0)
        .map(|((path, line), (f, p))| LineScore {
            path: path.clone(),
            line: *line,
            score: f64::from(f) / (total_failed * f64::from(f + p)).sqrt(),
            failed: f,
            passed: p,
        })
        .collect();
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.passed.cmp(&b.passed))
            .then(a.path.cmp(&b.path))
            .then(a.line.cmp(&b.line))
    });
    out
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionScore {
    pub symbol: SymbolId,
    pub score: f64,
    /// The most suspicious line inside the function.
    pub line: u32,
    pub failed: u32,
    pub passed: u32,
}

/// Function suspiciousness: the best line score inside each callable (the
/// innermost callable containing the line), best first.
pub fn rank_functions(snap: &Snapshot, lines: &[LineScore]) -> Vec<FunctionScore> {
    let mut best: HashMap<SymbolId, FunctionScore> = HashMap::new();
    for l in lines {
        let owner = snap
            .symbols_in(&l.path)
            .iter()
            .filter(|s| s.kind.is_callable() && s.contains_line(l.line))
            .min_by_key(|s| s.end_line - s.start_line);
        let Some(s) = owner else { continue };
        let e = best.entry(s.id).or_insert(FunctionScore {
            symbol: s.id,
            score: -1.0,
            line: l.line,
            failed: 0,
            passed: 0,
        });
        if l.score > e.score {
            *e = FunctionScore {
                symbol: s.id,
                score: l.score,
                line: l.line,
                failed: l.failed,
                passed: l.passed,
            };
        }
    }
    let mut out: Vec<FunctionScore> = best.into_values().collect();
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.symbol.cmp(&b.symbol)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str, passed: bool, lines: &[u32]) -> TestRun {
        TestRun {
            name: name.into(),
            passed,
            covered: lines.iter().map(|&l| ("a.py".to_string(), l)).collect(),
        }
    }

    #[test]
    fn ochiai_prefers_lines_only_failing_tests_cover() {
        let runs = [
            run("t1", false, &[1, 2, 3]),
            run("t2", true, &[1, 2]),
            run("t3", true, &[1]),
        ];
        let s = ochiai(&runs);
        assert_eq!(s.iter().map(|l| l.line).collect::<Vec<_>>(), vec![3, 2, 1]);
        assert!((s[0].score - 1.0).abs() < 1e-12);
        assert!((s[1].score - 1.0 / 2f64.sqrt()).abs() < 1e-12);
        assert!((s[2].score - 1.0 / 3f64.sqrt()).abs() < 1e-12);
        assert!(ochiai(&[run("t", true, &[1])]).is_empty());
    }

    #[test]
    fn two_failing_tests() {
        let runs = [
            run("f1", false, &[5, 6]),
            run("f2", false, &[5]),
            run("p", true, &[6]),
        ];
        let s = ochiai(&runs);
        assert_eq!((s[0].line, s[0].failed, s[0].passed), (5, 2, 0));
        assert!((s[1].score - 1.0 / (2.0 * 2.0f64).sqrt()).abs() < 1e-12);
    }
}
