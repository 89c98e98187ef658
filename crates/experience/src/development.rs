//! The development view: the commits walked forward. For each hunk of the
//! net diff, the commits that introduced and revised it; edits that did
//! not survive (attempts, reverts) are net-zero and dropped; a problem is
//! attributed the surviving hunks changed in the commits between its last
//! failure and its first pass. It knows *when*, but not *why*: unrelated
//! work landing in the same commit looks like part of the repair.

use crate::hunks::{self, NetHunk};
use crate::problems::Problem;
use crate::text;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitTrace {
    /// The revision this commit produced (index into the history).
    pub revision: usize,
    pub id: String,
    /// Net hunks it introduced or revised.
    pub contributes: BTreeSet<usize>,
    /// Its hunks that left nothing in the net diff.
    pub net_zero: usize,
    /// Problems that were failing before it and passed right after it
    /// (their window ends here).
    pub disappeared: Vec<usize>,
    /// Files it changed as binaries.
    pub binary: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HunkHistory {
    pub hunk: usize,
    /// The first commit (revision index) that contributed to it.
    pub introduced: Option<usize>,
    /// Later commits that changed it again.
    pub revised: Vec<usize>,
}

/// An edit whose added lines did not survive to the passing revision and
/// that was reverted (or left nothing at all): a failed attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    pub path: String,
    pub introduced: usize,
    /// The commit that removed its lines again, when one did.
    pub reverted: Option<usize>,
    pub lines: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DevelopmentView {
    pub commits: Vec<CommitTrace>,
    pub hunks: Vec<HunkHistory>,
    pub attempts: Vec<Attempt>,
    /// Per problem, the net hunks changed in its window.
    pub attribution: Vec<BTreeSet<usize>>,
}

impl DevelopmentView {
    pub fn introduced(&self, hunk: usize) -> Option<usize> {
        self.hunks.get(hunk).and_then(|h| h.introduced)
    }

    /// Commits (revision indices) that changed `hunk`.
    pub fn touched_by(&self, hunk: usize) -> Vec<usize> {
        self.hunks
            .get(hunk)
            .map(|h| {
                h.introduced
                    .iter()
                    .chain(h.revised.iter())
                    .copied()
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn lines(ls: &[String]) -> BTreeSet<String> {
    ls.iter().filter_map(|l| text::meaningful(l)).collect()
}

/// Whether a commit's hunk left something in the net hunk: a line it added
/// survives, or a line it removed is removed by the net diff too.
fn contributes(commit: &NetHunk, net: &NetHunk) -> bool {
    commit.path == net.path
        && (!lines(&commit.added).is_disjoint(&lines(&net.added))
            || !lines(&commit.removed).is_disjoint(&lines(&net.removed)))
}

/// Builds the development view from each revision's diff (index 0 has none).
pub fn development_view(
    revisions: &[(String, String)],
    net: &[NetHunk],
    problems: &[Problem],
) -> DevelopmentView {
    let mut view = DevelopmentView {
        hunks: net
            .iter()
            .map(|h| HunkHistory {
                hunk: h.index,
                introduced: None,
                revised: Vec::new(),
            })
            .collect(),
        ..Default::default()
    };
    let parsed: Vec<hunks::Split> = revisions
        .iter()
        .map(|(_, diff)| hunks::split(diff).unwrap_or_default())
        .collect();
    let net_added: BTreeSet<String> = net.iter().flat_map(|h| lines(&h.added)).collect();
    let net_removed: BTreeSet<String> = net.iter().flat_map(|h| lines(&h.removed)).collect();
    for (i, ((id, _), split)) in revisions.iter().zip(&parsed).enumerate().skip(1) {
        let mut trace = CommitTrace {
            revision: i,
            id: id.clone(),
            contributes: BTreeSet::new(),
            net_zero: 0,
            disappeared: problems
                .iter()
                .enumerate()
                .filter(|(_, p)| p.disappeared_at == Some(i))
                .map(|(k, _)| k)
                .collect(),
            binary: split.binary.clone(),
        };
        for ch in &split.hunks {
            let hit: Vec<usize> = net
                .iter()
                .filter(|n| contributes(ch, n))
                .map(|n| n.index)
                .collect();
            if hit.is_empty() {
                trace.net_zero += 1;
            }
            for &n in &hit {
                trace.contributes.insert(n);
                let history = &mut view.hunks[n];
                match history.introduced {
                    None => history.introduced = Some(i),
                    Some(first) if first != i && !history.revised.contains(&i) => {
                        history.revised.push(i)
                    }
                    Some(_) => {}
                }
            }
            let added = lines(&ch.added);
            // A revert restores lines the failing revision or an earlier
            // commit had: not an attempt of its own.
            let restores = added.is_subset(&net_removed)
                || parsed[1..i].iter().any(|earlier| {
                    earlier
                        .hunks
                        .iter()
                        .any(|e| e.path == ch.path && added.is_subset(&lines(&e.removed)))
                });
            if !added.is_empty() && added.is_disjoint(&net_added) && !restores {
                // Reverted: a later commit removes its lines and adds back
                // at most what it had removed.
                let reverted = parsed
                    .iter()
                    .enumerate()
                    .skip(i + 1)
                    .find(|(_, later)| {
                        later.hunks.iter().any(|l| {
                            l.path == ch.path
                                && !lines(&l.removed).is_disjoint(&added)
                                && lines(&l.added).is_subset(&lines(&ch.removed))
                        })
                    })
                    .map(|(j, _)| j);
                // An edit later rewritten into the repair is its first
                // version (in the hunk's history), not an attempt.
                if reverted.is_some() || hit.is_empty() {
                    view.attempts.push(Attempt {
                        path: ch.path.clone(),
                        introduced: i,
                        reverted,
                        lines: added.len(),
                    });
                }
            }
        }
        view.commits.push(trace);
    }
    view.attribution = problems
        .iter()
        .map(|p| {
            if p.disappeared_at.is_none() {
                return BTreeSet::new();
            }
            let window = p.window();
            view.commits
                .iter()
                .filter(|c| window.contains(&c.revision))
                .flat_map(|c| c.contributes.iter().copied())
                .collect()
        })
        .collect();
    view
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problems::Status;
    use crate::relations::tests::diff;

    fn problem(statuses: &[Status]) -> Problem {
        let last_failed = statuses.iter().rposition(|s| *s == Status::Failed).unwrap();
        Problem {
            key: "ci/unit: t".into(),
            job: "ci".into(),
            step: "unit".into(),
            command: "c".into(),
            test: None,
            error_types: BTreeSet::new(),
            message: String::new(),
            frames: vec![],
            files: BTreeSet::new(),
            statuses: statuses.to_vec(),
            first_failed: 0,
            last_failed,
            disappeared_at: statuses
                .iter()
                .enumerate()
                .skip(last_failed + 1)
                .find(|(_, s)| **s == Status::Passed)
                .map(|(i, _)| i),
        }
    }

    #[test]
    fn attempts_and_reverts_are_net_zero_and_the_fix_is_attributed() {
        use Status::*;
        // r1: a wrong attempt; r2: its revert; r3: the fix; r4: a revision of the fix.
        let revisions = vec![
            ("r0".to_string(), String::new()),
            (
                "r1".into(),
                diff(
                    "m.py",
                    "",
                    &["    return a - b"],
                    &["    return abs(a - b) + 1"],
                ),
            ),
            (
                "r2".into(),
                diff(
                    "m.py",
                    "",
                    &["    return abs(a - b) + 1"],
                    &["    return a - b"],
                ),
            ),
            (
                "r3".into(),
                diff("m.py", "", &["    return a - b"], &["    return a + b"]),
            ),
            (
                "r4".into(),
                diff(
                    "m.py",
                    "",
                    &["    return a + b"],
                    &["    return b + a  # commutative"],
                ),
            ),
        ];
        let net = hunks::split(&diff(
            "m.py",
            "",
            &["    return a - b"],
            &["    return b + a  # commutative"],
        ))
        .unwrap()
        .hunks;
        let p = problem(&[Failed, Failed, Failed, Passed, Passed]);
        let view = development_view(&revisions, &net, std::slice::from_ref(&p));
        // The attempt removed the original line the net diff removes: it
        // counts as touching the hunk; its own lines did not survive.
        assert_eq!(view.hunks[0].introduced, Some(1));
        assert_eq!(view.hunks[0].revised, vec![3, 4]);
        assert_eq!(view.commits[1].net_zero, 1, "the revert leaves nothing");
        assert_eq!(
            view.attempts
                .iter()
                .map(|a| (a.introduced, a.reverted))
                .collect::<Vec<_>>(),
            vec![(1, Some(2))],
            "the revert restores the original and r3 is the fix's first version"
        );
        assert_eq!(view.commits[2].disappeared, vec![0]);
        assert_eq!(view.attribution[0], BTreeSet::from([0]));
    }

    #[test]
    fn a_window_of_several_commits_takes_all_their_surviving_hunks() {
        use Status::*;
        let revisions = vec![
            ("r0".to_string(), String::new()),
            ("r1".into(), diff("a.py", "", &[], &["import extra_tools"])),
            (
                "r2".into(),
                diff("b.py", "", &[], &["value = compute_total()"]),
            ),
        ];
        let net = hunks::split(
            &[
                diff("a.py", "", &[], &["import extra_tools"]),
                diff("b.py", "", &[], &["value = compute_total()"]),
            ]
            .concat(),
        )
        .unwrap()
        .hunks;
        let p = problem(&[Failed, Unreached, Passed]);
        let view = development_view(&revisions, &net, std::slice::from_ref(&p));
        assert_eq!(view.attribution[0], BTreeSet::from([0, 1]));
    }
}
