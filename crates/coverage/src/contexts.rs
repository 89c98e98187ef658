//! coverage.py's per-test contexts (`coverage run --context=...` / pytest-cov
//! `--cov-context=test`, then `coverage json --show-contexts`), joined with
//! the runner's outcomes into the [`TestRun`]s Ochiai ranks
//! (`tracelab_code_index::sbfl`).

use crate::error::{Error, Result};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use tracelab_code_index::sbfl::{Line, TestRun};

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
    use tracelab_code_index::sbfl::ochiai;

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
