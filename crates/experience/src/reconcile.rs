//! Reconciliation: per problem, the endpoint view's candidates against the
//! development view's, each hunk decided by one rule, and prerequisite
//! relations between problems where the structure supports them.
//!
//! The rules (E: endpoint hunks of the problem, D: development hunks, p:
//! the revision where it disappeared):
//! - in E and D: kept, **equivalent** — unless the endpoint has only its
//!   file while the failure points (frame, symbol) at other hunks of the
//!   window it is unrelated to: then **distinct** (unrelated work in the
//!   repairing commit, in a file the failure names);
//! - only in D, when the views share a hunk: kept as **complementary** if
//!   related to a kept hunk, else dropped as **distinct** (unrelated work
//!   that landed in the repairing commit);
//! - only in D, when E is empty or shares nothing with D: kept (CI saw the
//!   problem disappear with it) unless the endpoint attributes it directly
//!   to a problem of another check that disappeared with it too;
//! - only in E, introduced after p: dropped as **conflicting** (CI saw the
//!   problem pass without it);
//! - only in E, present before p: kept as **complementary** with strong
//!   evidence (a frame or a symbol the failure names) or a dependency on a
//!   kept hunk, else dropped as **distinct** (words shared with the message
//!   or the file alone are not enough).

use crate::development::DevelopmentView;
use crate::endpoint::{EndpointView, Evidence};
use crate::hunks::NetHunk;
use crate::problems::Problem;
use crate::relations::{RelationKind, Relations};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Equivalent,
    Complementary,
    Conflicting,
    Distinct,
}

/// One hunk considered for one problem.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    pub hunk: usize,
    pub endpoint: Option<Evidence>,
    pub development: bool,
    pub outcome: Outcome,
    pub kept: bool,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProblemAttribution {
    pub problem: usize,
    /// How the two views relate for this problem as a whole: conflicting
    /// if any decision was, else complementary if any was, else distinct
    /// if unrelated work was dropped, else equivalent.
    pub agreement: Option<Outcome>,
    pub decisions: Vec<Decision>,
    /// The hunks attributed to the problem.
    pub kept: BTreeSet<usize>,
}

/// Repairing `before` is needed for `after`: a hunk of `after`'s repair
/// depends on one of `before`'s, and `before` disappeared no later.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prerequisite {
    pub before: usize,
    pub after: usize,
    pub relation: RelationKind,
    /// `after` was first seen failing only once `before` was gone.
    pub exposed: bool,
}

/// The inputs every rule reads.
pub struct Views<'a> {
    pub hunks: &'a [NetHunk],
    pub problems: &'a [Problem],
    pub endpoint: &'a EndpointView,
    pub development: &'a DevelopmentView,
    pub relations: &'a dyn Relations,
}

impl Views<'_> {
    /// The endpoint links `hunk` directly to a problem of another check
    /// whose window also holds it: it is that problem's repair. (Failures
    /// of one check that disappear together — several tests broken by one
    /// bug — share their repair.)
    fn explained_elsewhere(&self, problem: usize, hunk: usize) -> bool {
        let p = &self.problems[problem];
        (0..self.problems.len()).any(|q| {
            let other = &self.problems[q];
            q != problem
                && (other.job != p.job || other.step != p.step)
                && self.development.attribution[q].contains(&hunk)
                && self.endpoint.link(q, hunk).is_some_and(|e| e.is_direct())
                && !self
                    .endpoint
                    .link(problem, hunk)
                    .is_some_and(|e| e.is_direct())
        })
    }

    fn related_to(
        &self,
        hunk: usize,
        kept: &BTreeSet<usize>,
        dependency_only: bool,
    ) -> Option<RelationKind> {
        kept.iter().find_map(|&k| {
            self.relations
                .related(&self.hunks[hunk], &self.hunks[k])
                .filter(|r| !dependency_only || r.is_dependency())
        })
    }
}

/// Decides every candidate hunk of `problem`.
pub fn reconcile_problem(views: &Views<'_>, problem: usize) -> ProblemAttribution {
    let p = &views.problems[problem];
    let mut attribution = ProblemAttribution {
        problem,
        agreement: None,
        decisions: Vec::new(),
        kept: BTreeSet::new(),
    };
    let Some(gone) = p.disappeared_at else {
        return attribution;
    };
    let e = views.endpoint.hunks_of(problem);
    let d = views.development.attribution[problem].clone();
    let shared: BTreeSet<usize> = e.intersection(&d).copied().collect();
    let mut decide = |hunk: usize, outcome: Outcome, kept: bool, reason: String| {
        if kept {
            attribution.kept.insert(hunk);
        }
        attribution.decisions.push(Decision {
            hunk,
            endpoint: views.endpoint.link(problem, hunk),
            development: d.contains(&hunk),
            outcome,
            kept,
            reason,
        });
    };
    // Hunks of the repairing commits the failure points at (a frame, a
    // symbol): next to them, a file the failure names says nothing about
    // which other hunks of that file are the repair.
    let pointed: BTreeSet<usize> = shared
        .iter()
        .copied()
        .filter(|&h| {
            views
                .endpoint
                .link(problem, h)
                .is_some_and(|e| e.is_strong())
        })
        .collect();
    let mut kept: BTreeSet<usize> = BTreeSet::new();
    for &h in &shared {
        let file_only = views.endpoint.link(problem, h) == Some(Evidence::File);
        if file_only && !pointed.is_empty() && views.related_to(h, &pointed, false).is_none() {
            decide(
                h,
                Outcome::Distinct,
                false,
                "same commits and a file the failure names, but the failure points at other hunks"
                    .into(),
            );
        } else {
            decide(h, Outcome::Equivalent, true, "both views".into());
            kept.insert(h);
        }
    }
    for &h in d.difference(&e) {
        let (outcome, keep, reason) = if !shared.is_empty() {
            if let Some(r) = views.related_to(h, &kept, false) {
                (
                    Outcome::Complementary,
                    true,
                    format!("same commits, {r:?} relation to the repair"),
                )
            } else {
                (
                    Outcome::Distinct,
                    false,
                    "same commits, unrelated to the repair".into(),
                )
            }
        } else if views.explained_elsewhere(problem, h) {
            (
                Outcome::Distinct,
                false,
                "the repair of another problem that disappeared with it".into(),
            )
        } else if e.is_empty() {
            (
                Outcome::Complementary,
                true,
                "the problem disappeared with it; the failure names nothing".into(),
            )
        } else {
            (
                Outcome::Conflicting,
                true,
                "the problem disappeared with it, not with what the failure names".into(),
            )
        };
        decide(h, outcome, keep, reason);
        if keep {
            kept.insert(h);
        }
    }
    for &h in e.difference(&d) {
        let evidence = views.endpoint.link(problem, h);
        let introduced = views.development.introduced(h);
        let (outcome, keep, reason) = match introduced {
            Some(i) if i > gone => (
                Outcome::Conflicting,
                false,
                "made after the problem had disappeared".to_string(),
            ),
            _ if d.is_empty() => (
                Outcome::Conflicting,
                false,
                "no change survived the commits where the problem disappeared".to_string(),
            ),
            _ if evidence.is_some_and(|e| e.is_strong()) && !shared.is_empty() => (
                Outcome::Complementary,
                true,
                "made earlier, named by the failure".to_string(),
            ),
            _ => match views.related_to(h, &kept, true) {
                Some(r) if !shared.is_empty() => (
                    Outcome::Complementary,
                    true,
                    format!("made earlier, {r:?} dependency of the repair"),
                ),
                _ if shared.is_empty() => (
                    Outcome::Conflicting,
                    false,
                    "the problem disappeared with other changes".to_string(),
                ),
                _ => (
                    Outcome::Distinct,
                    false,
                    "unrelated work in a file the failure names".to_string(),
                ),
            },
        };
        decide(h, outcome, keep, reason);
    }
    attribution.decisions.sort_by_key(|x| x.hunk);
    let any = |o: Outcome| attribution.decisions.iter().any(|x| x.outcome == o);
    attribution.agreement = if attribution.decisions.is_empty() {
        None
    } else if any(Outcome::Conflicting) {
        Some(Outcome::Conflicting)
    } else if any(Outcome::Complementary) {
        Some(Outcome::Complementary)
    } else if any(Outcome::Distinct) {
        Some(Outcome::Distinct)
    } else {
        Some(Outcome::Equivalent)
    };
    attribution
}

/// Prerequisites between repaired problems, only where a dependency
/// relation between their hunks supports one.
pub fn prerequisites(views: &Views<'_>, attributions: &[ProblemAttribution]) -> Vec<Prerequisite> {
    let mut out = Vec::new();
    for a in attributions {
        for b in attributions {
            let (pa, pb) = (&views.problems[a.problem], &views.problems[b.problem]);
            let (Some(ga), Some(gb)) = (pa.disappeared_at, pb.disappeared_at) else {
                continue;
            };
            if a.problem == b.problem || ga > gb {
                continue;
            }
            let relation = b.kept.difference(&a.kept).find_map(|&hb| {
                a.kept.iter().find_map(|&ha| {
                    views
                        .relations
                        .relation(&views.hunks[hb], &views.hunks[ha])
                        .filter(|r| r.is_dependency())
                })
            });
            if let Some(relation) = relation {
                out.push(Prerequisite {
                    before: a.problem,
                    after: b.problem,
                    relation,
                    exposed: pb.first_failed >= ga,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::development::HunkHistory;
    use crate::endpoint::EndpointLink;
    use crate::hunks::split;
    use crate::problems::Status;
    use crate::relations::PathRelations;
    use crate::relations::tests::diff;

    fn problem(key: &str, last_failed: usize, gone: usize) -> Problem {
        Problem {
            key: key.into(),
            job: "ci".into(),
            step: "unit".into(),
            command: "c".into(),
            test: None,
            error_types: BTreeSet::new(),
            message: String::new(),
            frames: vec![],
            files: BTreeSet::new(),
            statuses: vec![Status::Failed; gone],
            first_failed: 0,
            last_failed,
            disappeared_at: Some(gone),
        }
    }

    /// Hunks: 0 the repair (recipes), 1 its caller, 2 an unrelated README
    /// edit, 3 a later cosmetic edit in the failing file, 4 a config key.
    fn hunks() -> Vec<NetHunk> {
        split(
            &[
                diff(
                    "pkg/recipes.py",
                    "",
                    &[],
                    &["def fast_pairs(xs):", "    return xs"],
                ),
                diff("pkg/api.py", "", &[], &["    return fast_pairs(values)"]),
                diff("README.rst", "", &["old words"], &["new words"]),
                diff(
                    "pkg/more.py",
                    "def last(it):",
                    &["    '''Last.'''"],
                    &["    '''The last.'''"],
                ),
                diff(
                    "ci/settings.toml",
                    "",
                    &["retries = \"x\""],
                    &["retries = 3"],
                ),
            ]
            .concat(),
        )
        .unwrap()
        .hunks
    }

    fn dev(introduced: &[usize], attribution: Vec<BTreeSet<usize>>) -> DevelopmentView {
        DevelopmentView {
            hunks: introduced
                .iter()
                .enumerate()
                .map(|(h, &i)| HunkHistory {
                    hunk: h,
                    introduced: Some(i),
                    revised: vec![],
                })
                .collect(),
            attribution,
            ..Default::default()
        }
    }

    fn endpoint(links: &[(usize, usize, Evidence)]) -> EndpointView {
        EndpointView {
            groups: vec![],
            links: links
                .iter()
                .map(|&(problem, hunk, evidence)| EndpointLink {
                    problem,
                    hunk,
                    evidence,
                })
                .collect(),
        }
    }

    fn run(
        problems: &[Problem],
        endpoint: &EndpointView,
        development: &DevelopmentView,
    ) -> Vec<ProblemAttribution> {
        let hunks = hunks();
        let views = Views {
            hunks: &hunks,
            problems,
            endpoint,
            development,
            relations: &PathRelations,
        };
        (0..problems.len())
            .map(|p| reconcile_problem(&views, p))
            .collect()
    }

    #[test]
    fn equivalent_when_both_views_name_the_same_hunks() {
        let problems = [problem("a", 1, 2)];
        let e = endpoint(&[(0, 0, Evidence::Symbol)]);
        let d = dev(&[2, 3, 3, 3, 3], vec![BTreeSet::from([0])]);
        let a = &run(&problems, &e, &d)[0];
        assert_eq!(a.agreement, Some(Outcome::Equivalent));
        assert_eq!(a.kept, BTreeSet::from([0]));
    }

    #[test]
    fn complementary_when_each_view_adds_a_related_hunk() {
        let problems = [problem("a", 2, 3)];
        // The endpoint sees the definition and (earlier) caller; development
        // saw only the definition land when the problem disappeared.
        let e = endpoint(&[(0, 0, Evidence::Symbol), (0, 1, Evidence::Message)]);
        let d = dev(&[3, 1, 4, 4, 4], vec![BTreeSet::from([0])]);
        let a = &run(&problems, &e, &d)[0];
        assert_eq!(a.agreement, Some(Outcome::Complementary));
        assert_eq!(a.kept, BTreeSet::from([0, 1]));
    }

    #[test]
    fn conflicting_evidence_keeps_what_ci_supports() {
        let problems = [problem("a", 1, 2)];
        // The endpoint links a cosmetic edit in the failing file made after
        // the problem was gone, and nothing the development view saw.
        let e = endpoint(&[(0, 3, Evidence::File)]);
        let d = dev(&[2, 4, 4, 5, 4], vec![BTreeSet::from([0])]);
        let a = &run(&problems, &e, &d)[0];
        assert_eq!(a.agreement, Some(Outcome::Conflicting));
        assert_eq!(a.kept, BTreeSet::from([0]));
        let late = a.decisions.iter().find(|x| x.hunk == 3).unwrap();
        assert!(!late.kept && late.outcome == Outcome::Conflicting);
    }

    #[test]
    fn distinct_work_in_the_repairing_commit_is_dropped() {
        let problems = [problem("a", 1, 2)];
        let e = endpoint(&[(0, 0, Evidence::Symbol), (0, 3, Evidence::File)]);
        // The README edit was committed with the repair; the cosmetic edit
        // in the failing file was made before it.
        let d = dev(&[2, 4, 2, 1, 4], vec![BTreeSet::from([0, 2])]);
        let a = &run(&problems, &e, &d)[0];
        assert_eq!(a.agreement, Some(Outcome::Distinct));
        assert_eq!(a.kept, BTreeSet::from([0]));
        assert!(
            a.decisions
                .iter()
                .all(|x| x.kept || x.outcome == Outcome::Distinct)
        );
    }

    #[test]
    fn a_file_named_by_the_failure_does_not_keep_other_work_of_the_repairing_commit() {
        let problems = [problem("a", 1, 2)];
        // The repair (hunk 0) is on the failing path; a cosmetic edit in a
        // file the failure also names (hunk 3) landed in the same commit.
        let e = endpoint(&[(0, 0, Evidence::Frame), (0, 3, Evidence::File)]);
        let d = dev(&[2, 4, 4, 2, 4], vec![BTreeSet::from([0, 3])]);
        let a = &run(&problems, &e, &d)[0];
        assert_eq!(a.kept, BTreeSet::from([0]));
        assert_eq!(a.agreement, Some(Outcome::Distinct));
        // Without anything the failure points at, the file is all there is.
        let e = endpoint(&[(0, 0, Evidence::File), (0, 3, Evidence::File)]);
        let a = &run(&problems, &e, &d)[0];
        assert_eq!(a.kept, BTreeSet::from([0, 3]));
    }

    #[test]
    fn a_repair_of_another_problem_in_the_same_commit_is_not_taken() {
        // Problem 0 (config) names nothing; problem 1 names fast_pairs.
        // Both disappeared at r2, where hunks 0 and 4 landed.
        let mut config = problem("config", 1, 2);
        config.step = "check-config".into();
        let problems = [config, problem("import", 1, 2)];
        let e = endpoint(&[(1, 0, Evidence::Symbol)]);
        let d = dev(
            &[2, 4, 4, 4, 2],
            vec![BTreeSet::from([0, 4]), BTreeSet::from([0, 4])],
        );
        let a = run(&problems, &e, &d);
        assert_eq!(a[0].kept, BTreeSet::from([4]));
        assert_eq!(a[1].kept, BTreeSet::from([0]));
    }

    #[test]
    fn failures_of_one_check_that_disappear_together_share_their_repair() {
        // Two tests broken by one bug: only one traceback passes through it.
        let problems = [
            problem("unit: t.test_a", 1, 2),
            problem("unit: t.test_b", 1, 2),
        ];
        let e = endpoint(&[(0, 0, Evidence::Frame)]);
        let d = dev(
            &[2, 4, 4, 4, 4],
            vec![BTreeSet::from([0]), BTreeSet::from([0])],
        );
        let a = run(&problems, &e, &d);
        assert_eq!(a[0].kept, BTreeSet::from([0]));
        assert_eq!(a[1].kept, BTreeSet::from([0]));
    }

    #[test]
    fn words_shared_with_the_message_do_not_keep_an_earlier_edit() {
        let problems = [problem("a", 2, 3)];
        // Hunk 2 (README) shares a word with the message and was made
        // before the repair; hunk 3 sits in the function the failure names.
        let e = endpoint(&[
            (0, 0, Evidence::Symbol),
            (0, 2, Evidence::Message),
            (0, 3, Evidence::Symbol),
        ]);
        let d = dev(&[3, 4, 1, 1, 4], vec![BTreeSet::from([0])]);
        let a = &run(&problems, &e, &d)[0];
        assert_eq!(a.kept, BTreeSet::from([0, 3]));
    }

    #[test]
    fn no_attribution_for_a_problem_that_did_not_disappear() {
        let mut p = problem("a", 1, 2);
        p.disappeared_at = None;
        let e = endpoint(&[(0, 0, Evidence::Frame)]);
        let d = dev(&[1, 1, 1, 1, 1], vec![BTreeSet::new()]);
        let a = &run(&[p], &e, &d)[0];
        assert!(a.kept.is_empty() && a.agreement.is_none());
    }

    #[test]
    fn prerequisites_need_a_dependency_and_the_order() {
        let hunks = hunks();
        let problems = [problem("import", 1, 2), problem("caller", 2, 3)];
        let e = endpoint(&[]);
        let d = dev(
            &[2, 3, 4, 4, 4],
            vec![BTreeSet::from([0]), BTreeSet::from([1])],
        );
        let views = Views {
            hunks: &hunks,
            problems: &problems,
            endpoint: &e,
            development: &d,
            relations: &PathRelations,
        };
        let attributions: Vec<_> = (0..2).map(|p| reconcile_problem(&views, p)).collect();
        let pre = prerequisites(&views, &attributions);
        assert_eq!(pre.len(), 1);
        assert_eq!((pre[0].before, pre[0].after), (0, 1));
        assert_eq!(pre[0].relation, RelationKind::CallerCallee);
        // No structural relation, no prerequisite, whatever the order.
        let d2 = dev(
            &[2, 3, 3, 4, 4],
            vec![BTreeSet::from([0]), BTreeSet::from([2])],
        );
        let views = Views {
            development: &d2,
            ..views
        };
        let attributions: Vec<_> = (0..2).map(|p| reconcile_problem(&views, p)).collect();
        assert!(prerequisites(&views, &attributions).is_empty());
    }
}
