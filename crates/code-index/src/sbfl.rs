//! Spectrum-based fault localisation: Ochiai over per-test line coverage,
//! aggregated to functions, plus a parser for coverage.py's JSON report with
//! per-test contexts (`coverage run --context=...` / pytest-cov
//! `--cov-context=test`, then `coverage json --show-contexts`).
//!
//! Ochiai(line) = failed(line) / sqrt(total_failed · (failed(line) + passed(line))).

use crate::error::{Error, Result};
use crate::model::SymbolId;
use crate::snapshot::Snapshot;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A repository-relative path and a 1-based line.
pub type Line = (String, u32);

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

#[derive(Deserialize)]
struct CoverageJson {
    files: BTreeMap<String, CoverageFile>,
}

#[derive(Deserialize)]
struct CoverageFile {
    #[serde(default)]
    contexts: Option<BTreeMap<String, Vec<String>>>,
}

/// Per-test covered lines from `coverage json --show-contexts` output. The
/// `|run`, `|setup`, `|teardown` suffixes pytest-cov adds are dropped, and
/// the empty context (code run at import time, by no test) is ignored.
pub fn parse_coverage_py_json(json: &str) -> Result<BTreeMap<String, BTreeSet<Line>>> {
    let report: CoverageJson =
        serde_json::from_str(json).map_err(|e| Error::Coverage(e.to_string()))?;
    let mut out: BTreeMap<String, BTreeSet<Line>> = BTreeMap::new();
    let mut any_contexts = false;
    for (path, file) in report.files {
        let Some(contexts) = file.contexts else {
            continue;
        };
        any_contexts = true;
        let path = path.replace('\\', "/").trim_start_matches("./").to_string();
        for (line, names) in contexts {
            let line: u32 = line
                .parse()
                .map_err(|_| Error::Coverage(format!("line {line:?} in {path}")))?;
            for name in names {
                let test = name.rsplit_once('|').map_or(name.as_str(), |(t, _)| t);
                if test.is_empty() {
                    continue;
                }
                out.entry(test.to_string())
                    .or_default()
                    .insert((path.clone(), line));
            }
        }
    }
    if !any_contexts {
        return Err(Error::Coverage(
            "no per-test contexts: run coverage with --context/--cov-context=test and `coverage json --show-contexts`".into(),
        ));
    }
    Ok(out)
}

/// Whether two test names denote the same test: equal, or one is the other
/// with leading packages (`test_cart.T.test_a` ~ `tests.test_cart.T.test_a`).
/// Separators are `.`, `/` and `::`, so `test_a` never matches `my_test_a`.
pub fn same_test(a: &str, b: &str) -> bool {
    let norm = |s: &str| {
        s.replace(".py::", "::")
            .replace("::", ".")
            .replace('/', ".")
    };
    let (a, b) = (norm(a), norm(b));
    let (long, short) = if a.len() >= b.len() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    long == short
        || (long.ends_with(short.as_str()) && long.as_bytes()[long.len() - short.len() - 1] == b'.')
}

/// Joins per-test coverage with outcomes: a test fails when its name is in
/// `failing` (by [`same_test`], so runner ids and coverage context names
/// of the same test match).
pub fn runs_from_coverage(
    coverage: BTreeMap<String, BTreeSet<Line>>,
    failing: &BTreeSet<String>,
) -> Vec<TestRun> {
    coverage
        .into_iter()
        .map(|(name, covered)| {
            let passed = !failing.iter().any(|f| same_test(f, &name));
            TestRun {
                name,
                passed,
                covered,
            }
        })
        .collect()
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

    #[test]
    fn parses_coverage_py_contexts() {
        let json = r#"{"meta": {"format": 3, "show_contexts": true},
            "files": {"pkg/a.py": {"executed_lines": [1, 2, 3],
                "contexts": {"1": [""], "2": ["tests/test_a.py::test_x|run", "tests/test_a.py::test_y|run"], "3": ["tests/test_a.py::test_y|run"]}}},
            "totals": {}}"#;
        let cov = parse_coverage_py_json(json).unwrap();
        assert_eq!(cov.len(), 2);
        assert_eq!(cov["tests/test_a.py::test_y"].len(), 2);
        let failing = BTreeSet::from(["tests/test_a.py::test_y".to_string()]);
        let runs = runs_from_coverage(cov, &failing);
        assert_eq!(runs.iter().filter(|r| !r.passed).count(), 1);
        let top = &ochiai(&runs)[0];
        assert_eq!((top.path.as_str(), top.line), ("pkg/a.py", 3));
        assert!(parse_coverage_py_json(r#"{"files": {"a.py": {"executed_lines": [1]}}}"#).is_err());
        assert!(parse_coverage_py_json("not json").is_err());
    }

    #[test]
    fn test_names_match_on_separators_only() {
        assert!(same_test("tests.test_cart.T.test_a", "test_cart.T.test_a"));
        assert!(same_test(
            "tests/test_a.py::test_y",
            "tests/test_a.py::test_y"
        ));
        assert!(same_test(
            "tests/test_a.py::T::test_y",
            "tests.test_a.T.test_y"
        ));
        assert!(same_test("t.test_a", "t.test_a"));
        assert!(!same_test("t.my_test_a", "test_a"));
        assert!(!same_test("t.test_a", "t.test_ab"));
    }
}
