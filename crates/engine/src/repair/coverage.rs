//! Neighbour tests by coverage: the tests that run the patched function,
//! wherever they are. A fix that passes the failing test and its file can
//! still break a test elsewhere that reaches the function through a caller
//! and never names it (so `git grep` does not find it); such a test is in
//! the function's coverage. Before the first attempt the whole Python suite
//! runs once at the bad revision under coverage.py (`dynamic_context =
//! test_function`, `tracelab_coverage::suite`), in the hypothesis's
//! own sandbox; each attempt then adds the tests that covered a line of the
//! patched function (the innermost function around each changed region,
//! from the tree-sitter parse of the file) to its neighbour tests. Bounded:
//! the suite run gets the command timeout (at most [`SUITE_TIMEOUT`]) and
//! an attempt adds at most [`COVERING_TESTS`] tests. Without coverage.py,
//! with another runner, or when the test command already runs the whole
//! suite (contract step 4 then runs every test), the selection is by name
//! only and the report says why.

use crate::context::Context;
use crate::git::Worktree;
use crate::verify::worktree_reset;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tracelab_code_index::extract::parse_file;
use tracelab_code_index::sbfl::TestRun;
use tracelab_code_index::snapshot::file_symbols;
use tracelab_coverage::{PythonCommand, collect};
use tracelab_domain::Language;
use tracelab_domain::Result;
use tracelab_domain::ports::Sandbox;
use tracelab_domain::runner::Runner;

/// The suite under coverage runs once per repair hypothesis, at most this
/// long (and never longer than the command timeout).
pub(super) const SUITE_TIMEOUT: Duration = Duration::from_secs(120);
/// Tests added to one attempt's neighbour tests at most (by name order).
pub(super) const COVERING_TESTS: usize = 40;

/// The suite's per-test coverage at the bad revision.
pub(super) struct Coverage {
    runs: Vec<TestRun>,
    /// The pytest node id of each coverage context name that maps to a
    /// test file of the repository.
    ids: BTreeMap<String, String>,
}

/// Runs the suite under coverage in `sandbox` on `worktree` (reset to the
/// bad revision before and after), or says why coverage is not used.
pub(super) async fn suite_coverage(
    ctx: &Context,
    worktree: &Worktree,
    sandbox: &dyn Sandbox,
) -> Result<std::result::Result<Coverage, String>> {
    if ctx.test.runner != Runner::Pytest {
        return Ok(Err(
            "coverage selects neighbour tests for pytest only".into()
        ));
    }
    let command = match PythonCommand::parse(&ctx.test.argv) {
        Ok(c) => c,
        Err(e) => return Ok(Err(e.to_string())),
    };
    if command.selection.is_empty() {
        return Ok(Err(
            "the test command runs the whole suite, which the contract's existing-tests step runs"
                .into(),
        ));
    }
    worktree_reset(worktree, &ctx.bad).await?;
    let timeout = ctx.config.command_timeout.min(SUITE_TIMEOUT);
    let collected = collect(sandbox, &worktree.path, &command.whole_suite(), timeout).await;
    worktree_reset(worktree, &ctx.bad).await?;
    let spectrum = match collected {
        Ok(s) => s,
        Err(e) => return Ok(Err(format!("no coverage: {e}"))),
    };
    let listing = ctx
        .pool
        .workspace()
        .git()
        .run(&["ls-tree", "-r", "--name-only", &ctx.bad])
        .await?;
    let files: Vec<&str> = listing.lines().filter(|f| f.ends_with(".py")).collect();
    let ids = spectrum
        .runs
        .iter()
        .filter_map(|r| Some((r.name.clone(), node_id(&r.name, &files)?)))
        .collect();
    Ok(Ok(Coverage {
        runs: spectrum.runs,
        ids,
    }))
}

impl Coverage {
    /// The node ids of the tests that covered a line of `regions` (path,
    /// first and last line at the bad revision), sorted, at most
    /// [`COVERING_TESTS`], and how many more there were.
    pub(super) fn covering(&self, regions: &[(String, u32, u32)]) -> (Vec<String>, usize) {
        let ids: BTreeSet<&String> = self
            .runs
            .iter()
            .filter(|r| {
                r.covered.iter().any(|(path, line)| {
                    regions
                        .iter()
                        .any(|(p, a, b)| p == path && a <= line && line <= b)
                })
            })
            .filter_map(|r| self.ids.get(&r.name))
            .collect();
        let more = ids.len().saturating_sub(COVERING_TESTS);
        (
            ids.into_iter().take(COVERING_TESTS).cloned().collect(),
            more,
        )
    }

    /// The node ids of the tests that already failed at the bad revision.
    pub(super) fn failing_before(&self) -> BTreeSet<String> {
        self.runs
            .iter()
            .filter(|r| !r.passed)
            .filter_map(|r| self.ids.get(&r.name).cloned())
            .collect()
    }
}

/// A coverage context name (`tests.test_b.Case.test_x`, or `test_b.test_x`
/// when pytest put the test's directory on `sys.path`) as a pytest node id
/// (`tests/test_b.py::Case::test_x`): the longest module prefix that names
/// a test file of the repository, by its path or a suffix of it; `None`
/// when none does or several files fit.
fn node_id(name: &str, files: &[&str]) -> Option<String> {
    let parts: Vec<&str> = name.split('.').collect();
    for k in (1..parts.len()).rev() {
        let module = format!("{}.py", parts[..k].join("/"));
        let fits: Vec<&&str> = files
            .iter()
            .filter(|f| **f == module || f.ends_with(&format!("/{module}")))
            .collect();
        match fits.as_slice() {
            [] => continue,
            [file] => return Some(format!("{file}::{}", parts[k..].join("::"))),
            _ => return None,
        }
    }
    None
}

/// The lines an edit changed in each file (one region from the first to
/// the last differing line of the old text), widened to the innermost
/// function around it: the tests of the patched *function* are the
/// neighbours, not only those of the changed line.
pub(super) fn patched_regions(
    edits: &[(String, Option<String>, String)],
) -> Vec<(String, u32, u32)> {
    let mut out = Vec::new();
    for (path, old, new) in edits {
        let Some(old) = old else { continue };
        let Some((first, last)) = changed_lines(old, new) else {
            continue;
        };
        let mut region = (first, last);
        if let Some(language) = Language::from_path(path) {
            let parsed = parse_file(language, path, old.as_bytes());
            if let Some(f) = file_symbols(path, &parsed)
                .into_iter()
                .filter(|s| s.kind.is_callable())
                .filter(|s| s.start_line <= first && last <= s.end_line)
                .min_by_key(|s| s.end_line - s.start_line)
            {
                region = (f.start_line, f.end_line);
            }
        }
        out.push((path.clone(), region.0, region.1));
    }
    out
}

/// The first and last line (1-based) of `old` that `new` does not keep,
/// by the common prefix and suffix; a pure insertion is the line before
/// and after it. `None` when nothing changed.
fn changed_lines(old: &str, new: &str) -> Option<(u32, u32)> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    if a == b {
        return None;
    }
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let first = prefix + 1;
    let last = a.len() - suffix;
    if last < first {
        // Only added lines: the lines around the insertion.
        let at = prefix.max(1) as u32;
        return Some((at, (prefix + 1).min(a.len().max(1)) as u32));
    }
    Some((first as u32, last as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_names_become_node_ids() {
        let files = [
            "app.py",
            "tests/test_b.py",
            "tests/unit/test_c.py",
            "a/test_d.py",
            "b/test_d.py",
        ];
        for (name, id) in [
            ("test_b.test_label", Some("tests/test_b.py::test_label")),
            (
                "tests.test_b.test_label",
                Some("tests/test_b.py::test_label"),
            ),
            (
                "unit.test_c.Case.test_x",
                Some("tests/unit/test_c.py::Case::test_x"),
            ),
            // Two files fit: the test is not guessed.
            ("test_d.test_y", None),
            ("missing.test_z", None),
            ("test_b", None),
        ] {
            assert_eq!(node_id(name, &files).as_deref(), id, "{name}");
        }
    }

    #[test]
    fn changed_lines_are_found_by_prefix_and_suffix() {
        let old = "a\nb\nc\nd\n";
        assert_eq!(changed_lines(old, old), None);
        assert_eq!(changed_lines(old, "a\nB\nc\nd\n"), Some((2, 2)));
        assert_eq!(changed_lines(old, "a\nB\nC\nd\n"), Some((2, 3)));
        assert_eq!(changed_lines(old, "a\nd\n"), Some((2, 3)));
        assert_eq!(changed_lines(old, "a\nb\nx\nc\nd\n"), Some((2, 3)));
    }

    #[test]
    fn a_region_widens_to_the_innermost_function() {
        let old = "def offset(n):\n    return n + 1\n\n\ndef label(n):\n    return 'item-%d' % offset(n)\n";
        let new = old.replace("n + 1", "n + 2");
        let regions = patched_regions(&[("app.py".into(), Some(old.into()), new)]);
        assert_eq!(regions, vec![("app.py".to_string(), 1, 2)]);
    }

    #[test]
    fn covering_tests_are_selected_by_line_capped_and_mapped() {
        let run = |name: &str, passed: bool, lines: &[u32]| TestRun {
            name: name.into(),
            passed,
            covered: lines.iter().map(|l| ("app.py".to_string(), *l)).collect(),
        };
        let mut runs = vec![
            run("test_a.test_offset", false, &[1, 2]),
            run("test_b.test_label", true, &[2, 5, 6]),
            run("test_b.test_other", true, &[9]),
        ];
        for i in 0..COVERING_TESTS + 3 {
            runs.push(run(&format!("test_many.test_{i:03}"), true, &[2]));
        }
        let files = ["test_a.py", "test_b.py", "test_many.py"];
        let ids = runs
            .iter()
            .filter_map(|r| Some((r.name.clone(), node_id(&r.name, &files)?)))
            .collect();
        let c = Coverage { runs, ids };
        let (found, more) = c.covering(&[("app.py".into(), 1, 2)]);
        assert_eq!(found.len(), COVERING_TESTS);
        assert_eq!(more, 5);
        assert_eq!(found[0], "test_a.py::test_offset");
        assert_eq!(found[1], "test_b.py::test_label");
        assert!(!found.contains(&"test_b.py::test_other".to_string()));
        assert_eq!(
            c.failing_before(),
            BTreeSet::from(["test_a.py::test_offset".to_string()])
        );
        assert!(c.covering(&[("other.py".into(), 1, 9)]).0.is_empty());
    }
}
