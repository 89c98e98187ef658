//! Whole histories: three problems behind each other, a reverted attempt,
//! unrelated work; and the histories that cannot be organised.

use super::*;
use crate::model::{CiRun, Failure, JobRun, Revision, StepRun, StepStatus};
use crate::reconcile::Outcome;
use crate::records::FailureType;
use crate::relations::PathRelations;

/// A zero-context hunk of `path` (what `git diff -U0` prints).
fn hunk(path: &str, at: &str, old: (u32, &[&str]), new: (u32, &[&str])) -> String {
    let mut s = format!(
        "diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -{},{} +{},{} @@ {at}\n",
        old.0,
        old.1.len(),
        new.0,
        new.1.len()
    );
    for l in old.1 {
        s.push_str(&format!("-{l}\n"));
    }
    for l in new.1 {
        s.push_str(&format!("+{l}\n"));
    }
    s
}

fn lint_fix() -> String {
    hunk(
        "pkg/util.py",
        "def report(rows):",
        (
            7,
            &[
                "    return ', '.join(str(r) for r in rows if r is not None and r != '' and not str(r).isspace())",
            ],
        ),
        (
            7,
            &[
                "    kept = [r for r in rows if r is not None and r != '']",
                "    return ', '.join(str(r) for r in kept)",
            ],
        ),
    )
}
fn attempt() -> String {
    hunk(
        "pkg/compat.py",
        "",
        (1, &["from .recipes import fast_pairs"]),
        (1, &["from .more import fast_pairs"]),
    )
}
fn revert() -> String {
    hunk(
        "pkg/compat.py",
        "",
        (1, &["from .more import fast_pairs"]),
        (1, &["from .recipes import fast_pairs"]),
    )
}
fn import_fix() -> String {
    hunk(
        "pkg/recipes.py",
        "def pairwise(items):",
        (30, &[]),
        (
            31,
            &[
                "def fast_pairs(items):",
                "    return list(zip(items, items[1:]))",
            ],
        ),
    )
}
fn unrelated() -> String {
    [
        hunk(
            "README.rst",
            "",
            (1, &["Utilities"]),
            (1, &["Utilities for iterables"]),
        ),
        hunk(
            "pkg/more.py",
            "def last(it):",
            (21, &["    '''Last item.'''"]),
            (21, &["    '''The last item of it.'''"]),
        ),
    ]
    .concat()
}
fn test_fix() -> String {
    hunk(
        "pkg/more.py",
        "def first(it, default=None):",
        (4, &["    if default is not None:"]),
        (4, &["    if default is None:"]),
    )
}

fn step(name: &str, status: StepStatus, failures: Vec<Failure>, exhaustive: bool) -> StepRun {
    StepRun {
        name: name.into(),
        command: if name == "lint" {
            "python3 tools/lint.py".into()
        } else {
            "python3 -m unittest".into()
        },
        status,
        failures,
        exhaustive,
    }
}

fn lint_failure() -> Failure {
    Failure {
        test: None,
        error_types: Default::default(),
        message: "pkg/util.py:7: L001 line too long (104 > 100)".into(),
        frames: vec![("pkg/util.py".into(), 7)],
    }
}
fn import_failure(from: &str) -> Failure {
    Failure {
        test: None,
        error_types: ["ImportError".to_string()].into(),
        message: format!(
            "Traceback (most recent call last):\n  File \"pkg/compat.py\", line 1, in <module>\n    from .{from} import fast_pairs\nImportError: cannot import name 'fast_pairs' from 'pkg.{from}' (pkg/{from}.py)"
        ),
        frames: vec![("pkg/compat.py".into(), 1)],
    }
}
fn test_failure() -> Failure {
    Failure {
        test: Some("tests.test_more.FirstTests.test_empty".into()),
        error_types: ["ValueError".to_string()].into(),
        message: "Traceback (most recent call last):\n  File \"tests/test_more.py\", line 12, in test_empty\n    self.assertIsNone(first([]))\n  File \"pkg/more.py\", line 5, in first\n    raise ValueError('first() on an empty iterable')\nValueError: first() on an empty iterable".into(),
        frames: vec![("tests/test_more.py".into(), 12), ("pkg/more.py".into(), 5)],
    }
}

fn ci(lint: bool, unit: Option<Failure>, exhaustive: bool) -> Option<CiRun> {
    use StepStatus::*;
    let steps = match (lint, unit) {
        (false, _) => vec![
            step("lint", Failed, vec![lint_failure()], false),
            step("unit", Unreached, vec![], false),
        ],
        (true, Some(f)) => vec![
            step("lint", Passed, vec![], false),
            step("unit", Failed, vec![f], exhaustive),
        ],
        (true, None) => vec![
            step("lint", Passed, vec![], false),
            step("unit", Passed, vec![], true),
        ],
    };
    Some(CiRun {
        jobs: vec![JobRun {
            name: "ci".into(),
            steps,
            needs: vec![],
        }],
    })
}

fn revision(i: usize, diff: String, ci: Option<CiRun>) -> Revision {
    Revision {
        id: format!("c{i}"),
        parent: (i > 0).then(|| format!("c{}", i - 1)),
        summary: format!("commit {i}"),
        diff,
        ci,
    }
}

/// lint (fixed at c1) hides an ImportError (an attempt at c2, reverted at
/// c3, fixed at c4) which hides a failing test (unrelated work at c5, fixed at c6).
fn history() -> History {
    History {
        repository: "example/iters".into(),
        workflow: "ci".into(),
        revisions: vec![
            revision(0, String::new(), ci(false, None, false)),
            revision(
                1,
                lint_fix(),
                ci(true, Some(import_failure("recipes")), false),
            ),
            revision(2, attempt(), ci(true, Some(import_failure("more")), false)),
            revision(
                3,
                revert(),
                ci(true, Some(import_failure("recipes")), false),
            ),
            revision(4, import_fix(), ci(true, Some(test_failure()), true)),
            revision(5, unrelated(), ci(true, Some(test_failure()), true)),
            revision(6, test_fix(), ci(true, None, true)),
        ],
        net_diff: [
            hunk(
                "README.rst",
                "",
                (1, &["Utilities"]),
                (1, &["Utilities for iterables"]),
            ),
            test_fix(),
            hunk(
                "pkg/more.py",
                "def last(it):",
                (21, &["    '''Last item.'''"]),
                (21, &["    '''The last item of it.'''"]),
            ),
            import_fix(),
            lint_fix(),
        ]
        .concat(),
    }
}

/// Net hunks: 0 README, 1 first() fix, 2 last() docstring, 3 fast_pairs, 4 lint.
fn problem<'a>(r: &'a Reconstruction, suffix: &str) -> (usize, &'a Problem) {
    r.problems
        .iter()
        .enumerate()
        .find(|(_, p)| p.key.ends_with(suffix))
        .unwrap_or_else(|| {
            panic!(
                "no problem {suffix}: {:?}",
                r.problems.iter().map(|p| &p.key).collect::<Vec<_>>()
            )
        })
}

#[test]
fn three_problems_each_get_their_own_repair() {
    let r = reconstruct(&history(), &PathRelations);
    assert!(r.organised, "{:?}", r.notes);
    assert_eq!(r.problems.len(), 3);
    let (lint, lp) = problem(&r, "ci/lint");
    let (import, ip) = problem(&r, "ImportError");
    let (test, tp) = problem(&r, "test_empty");
    assert_eq!(
        (lp.disappeared_at, ip.disappeared_at, tp.disappeared_at),
        (Some(1), Some(4), Some(6))
    );
    let kept = |p: usize| r.attributions[p].kept.iter().copied().collect::<Vec<_>>();
    assert_eq!(kept(lint), vec![4]);
    assert_eq!(kept(import), vec![3]);
    assert_eq!(kept(test), vec![1]);
    // Nothing attributes the README or the docstring.
    assert!(
        r.attributions
            .iter()
            .all(|a| !a.kept.contains(&0) && !a.kept.contains(&2))
    );
    assert_eq!(r.records.len(), 3);
}

#[test]
fn the_endpoint_view_alone_takes_unrelated_work_in_the_failing_file() {
    let r = reconstruct(&history(), &PathRelations);
    let (test, _) = problem(&r, "test_empty");
    assert_eq!(r.endpoint.hunks_of(test), [1, 2].into());
    let a = &r.attributions[test];
    assert_eq!(a.agreement, Some(Outcome::Distinct));
    let docstring = a.decisions.iter().find(|d| d.hunk == 2).unwrap();
    assert!(!docstring.kept);
}

#[test]
fn the_development_view_sees_the_attempt_and_its_revert_as_net_zero() {
    let r = reconstruct(&history(), &PathRelations);
    let d = &r.development;
    assert_eq!(d.commits[1].net_zero, 1);
    assert_eq!(d.commits[2].net_zero, 1);
    assert_eq!(d.attempts.len(), 1);
    assert_eq!(
        (d.attempts[0].introduced, d.attempts[0].reverted),
        (2, Some(3))
    );
    assert_eq!(d.hunks[3].introduced, Some(4));
    let (import, _) = problem(&r, "ImportError");
    assert_eq!(d.attribution[import], [3].into());
    assert_eq!(d.commits[3].disappeared, vec![import]);
}

#[test]
fn a_hidden_problem_is_not_a_prerequisite_without_a_structural_relation() {
    let r = reconstruct(&history(), &PathRelations);
    let (_, tp) = problem(&r, "test_empty");
    assert_eq!(tp.first_failed, 4, "exposed by the import repair");
    assert!(r.prerequisites.is_empty());
}

#[test]
fn records_carry_three_levels() {
    let r = reconstruct(&history(), &PathRelations);
    let rec = r
        .records
        .iter()
        .find(|x| x.problem.ends_with("test_empty"))
        .unwrap();
    assert_eq!(rec.concrete.failure_type, FailureType::TestFailure);
    assert_eq!(rec.concrete.files, vec!["pkg/more.py"]);
    assert!(rec.concrete.patch.contains("+    if default is None:"));
    assert!(!rec.concrete.patch.contains("last item"));
    assert_eq!(rec.concrete.validation, "python3 -m unittest");
    assert_eq!(rec.concrete.fixed_at, "c6");
    assert_eq!(rec.concrete.supporting_commits, vec!["c6"]);
    assert_eq!(rec.strategy.actions.len(), 1);
    let l3 = serde_json::to_string(&rec.pattern).unwrap();
    for name in [
        "first",
        "pkg",
        "more",
        "FirstTests",
        "test_empty",
        "iters",
        "default",
    ] {
        assert!(!l3.contains(name), "L3 names {name}: {l3}");
    }
    let kinds: Vec<FailureType> = r.records.iter().map(|x| x.concrete.failure_type).collect();
    assert!(kinds.contains(&FailureType::Lint) && kinds.contains(&FailureType::ImportError));
    let import = r
        .records
        .iter()
        .find(|x| x.problem.ends_with("ImportError"))
        .unwrap();
    assert_eq!(
        import.strategy.failed_attempts, 0,
        "the attempt was on another file"
    );
}

#[test]
fn a_history_that_is_not_linear_is_not_organised() {
    let mut h = history();
    h.revisions[3].parent = Some("elsewhere".into());
    let r = reconstruct(&h, &PathRelations);
    assert!(!r.organised);
    assert_eq!(r.notes[0].kind, NoteKind::NotLinear);
    assert!(r.records.is_empty() && r.attributions.is_empty());
}

#[test]
fn a_history_without_observations_is_not_organised() {
    let mut h = history();
    for rev in &mut h.revisions {
        rev.ci = None;
    }
    let r = reconstruct(&h, &PathRelations);
    assert!(!r.organised);
    assert_eq!(r.notes[0].kind, NoteKind::NoObservations);
    assert!(r.records.is_empty());
}

#[test]
fn a_binary_change_in_a_window_attributes_nothing_to_that_problem() {
    let mut h = history();
    let binary = "diff --git a/data/table.bin b/data/table.bin\nindex 1..2 100644\nBinary files a/data/table.bin and b/data/table.bin differ\n";
    h.revisions[4].diff.push_str(binary);
    h.net_diff.push_str(binary);
    let r = reconstruct(&h, &PathRelations);
    assert!(r.organised);
    assert!(
        r.notes
            .iter()
            .filter(|n| n.kind == NoteKind::Binary)
            .count()
            >= 2
    );
    assert!(
        r.records
            .iter()
            .all(|x| !x.problem.ends_with("ImportError"))
    );
    assert_eq!(r.records.len(), 2);
}

#[test]
fn an_unresolved_problem_gets_a_note_and_no_record() {
    let mut h = history();
    h.revisions[6].ci = ci(true, Some(test_failure()), true);
    let r = reconstruct(&h, &PathRelations);
    assert!(r.notes.iter().any(|n| n.kind == NoteKind::Unresolved));
    assert!(r.records.iter().all(|x| !x.problem.ends_with("test_empty")));
}
