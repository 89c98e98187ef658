//! A branch's CI reports as they arrive, for mining in the fleet: when a
//! failing → passing sequence is complete, and which workflow file the
//! reporting jobs belong to.
//!
//! A job's report is a pass only when it sent test reports and none
//! failed; a report with only a log and no recognised failure says nothing
//! (the job may have failed somewhere no report shows), so it neither
//! opens nor closes a sequence. A sequence closes at a commit where no job
//! failed and every job that failed since the branch last passed has
//! passed — until then the repair may not be complete, and mining would
//! leave its problems unresolved. No IO: the caller keeps the reports.

use crate::reconstruct::{Note, NoteKind, note};
use crate::workflow;
use std::collections::{BTreeMap, BTreeSet};

/// What one job's report says at its commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Only a log without a recognised failure: not seen passing.
    Unobserved,
    Passed,
    Failed,
}

impl Verdict {
    /// A report's verdict from what it carried.
    pub fn of(has_test_reports: bool, failures: usize) -> Self {
        if failures > 0 {
            Verdict::Failed
        } else if has_test_reports {
            Verdict::Passed
        } else {
            Verdict::Unobserved
        }
    }
}

/// One report of a branch, in arrival order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchReport {
    pub commit: String,
    pub job: String,
    pub verdict: Verdict,
}

/// A completed sequence: the first failing commit and the passing one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sequence {
    pub failing: String,
    pub passing: String,
}

/// Each job's verdict at `commit`: a failure in any of its reports (a
/// matrix, a re-run) fails it; else one passing report passes it.
fn jobs_at<'a>(reports: &'a [BranchReport], commit: &str) -> BTreeMap<&'a str, Verdict> {
    let mut jobs: BTreeMap<&str, Verdict> = BTreeMap::new();
    for r in reports.iter().filter(|r| r.commit == commit) {
        let v = jobs.entry(&r.job).or_insert(r.verdict);
        *v = (*v).max(r.verdict);
    }
    jobs
}

/// The failing → passing sequence of `reports` (one branch, in arrival
/// order) that `passing` completes, if it does: walking back from it over
/// commits that failed or were not seen passing, to the last commit where
/// every reporting job passed (or the first report kept).
pub fn completed(reports: &[BranchReport], passing: &str) -> Option<Sequence> {
    let mut commits: Vec<&str> = Vec::new();
    for r in reports {
        if !commits.contains(&r.commit.as_str()) {
            commits.push(&r.commit);
        }
    }
    let at = commits.iter().position(|c| *c == passing)?;
    let closing = jobs_at(reports, passing);
    if closing.values().any(|v| *v == Verdict::Failed) {
        return None;
    }
    let mut failing: Option<&str> = None;
    let mut failed_jobs: BTreeSet<&str> = BTreeSet::new();
    for commit in commits[..at].iter().rev() {
        let jobs = jobs_at(reports, commit);
        let failed: Vec<&str> = jobs
            .iter()
            .filter(|(_, v)| **v == Verdict::Failed)
            .map(|(j, _)| *j)
            .collect();
        if failed.is_empty() {
            if jobs.values().any(|v| *v == Verdict::Passed) {
                // The branch passed here: the sequence starts after it.
                break;
            }
            continue;
        }
        failing = Some(commit);
        failed_jobs.extend(failed);
    }
    let failing = failing?;
    let repaired = failed_jobs
        .iter()
        .all(|job| closing.get(job) == Some(&Verdict::Passed));
    repaired.then(|| Sequence {
        failing: failing.to_string(),
        passing: passing.to_string(),
    })
}

/// Whether `path` is a CI workflow file TraceLab reads: GitHub Actions
/// (directly in `.github/workflows/`, as GitHub reads them) or GitLab CI.
pub fn is_workflow_path(path: &str) -> bool {
    match path.strip_prefix(".github/workflows/") {
        Some(name) => !name.contains('/') && (name.ends_with(".yml") || name.ends_with(".yaml")),
        None => path == ".gitlab-ci.yml",
    }
}

/// The workflow file (of `candidates`: path and text at the passing commit)
/// whose jobs include every job in `jobs`; `None` with a note when none or
/// several do, and the history is then mined with one step per job.
pub fn choose_workflow<'a>(
    candidates: &'a [(String, String)],
    jobs: &BTreeSet<String>,
) -> (Option<&'a str>, Vec<Note>) {
    let mut notes = Vec::new();
    let mut matching = Vec::new();
    for (path, text) in candidates {
        match workflow::parse(path, text) {
            Ok(w) if jobs.iter().all(|j| w.job(j).is_some()) => matching.push(path.as_str()),
            Ok(_) => {}
            Err(why) => notes.push(note(
                NoteKind::CiInput,
                format!("{path} does not parse ({why}): not used"),
            )),
        }
    }
    let names = jobs.iter().cloned().collect::<Vec<_>>().join(", ");
    match matching.as_slice() {
        [one] => (Some(*one), notes),
        [] => {
            notes.push(note(
                NoteKind::CiInput,
                format!(
                    "no workflow file at the passing commit has the jobs {names}: each report is one job with one step"
                ),
            ));
            (None, notes)
        }
        several => {
            notes.push(note(
                NoteKind::CiInput,
                format!(
                    "{} workflow files have the jobs {names} ({}): each report is one job with one step",
                    several.len(),
                    several.join(", ")
                ),
            ));
            (None, notes)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(commit: &str, job: &str, verdict: Verdict) -> BranchReport {
        BranchReport {
            commit: commit.into(),
            job: job.into(),
            verdict,
        }
    }
    use Verdict::{Failed, Passed, Unobserved};

    fn seq(failing: &str, passing: &str) -> Option<Sequence> {
        Some(Sequence {
            failing: failing.into(),
            passing: passing.into(),
        })
    }

    #[test]
    fn a_passing_report_closes_the_sequence_from_its_first_failure() {
        let reports = [
            r("c0", "test", Passed),
            r("c1", "test", Failed),
            r("c2", "test", Failed),
            r("c3", "test", Passed),
        ];
        assert_eq!(completed(&reports, "c3"), seq("c1", "c3"));
        // A failing commit or one never seen passing closes nothing.
        assert_eq!(completed(&reports, "c2"), None);
        assert_eq!(completed(&reports, "c0"), None);
        assert_eq!(completed(&reports, "unknown"), None);
    }

    #[test]
    fn a_report_without_test_reports_is_unobserved_not_passing() {
        assert_eq!(Verdict::of(false, 0), Unobserved);
        assert_eq!(Verdict::of(true, 0), Passed);
        assert_eq!(Verdict::of(false, 2), Failed);
        // Only a log at c2: not a pass, so it neither closes the sequence
        // nor cuts it short when c3 passes.
        let reports = [
            r("c1", "test", Failed),
            r("c2", "test", Unobserved),
            r("c3", "test", Passed),
        ];
        assert_eq!(completed(&reports, "c2"), None);
        assert_eq!(completed(&reports, "c3"), seq("c1", "c3"));
    }

    #[test]
    fn every_job_that_failed_must_pass_before_the_sequence_closes() {
        let mut reports = vec![
            r("c1", "lint", Failed),
            r("c1", "test", Failed),
            r("c2", "lint", Passed),
        ];
        assert_eq!(completed(&reports, "c2"), None, "test not seen passing yet");
        reports.push(r("c2", "test", Passed));
        assert_eq!(completed(&reports, "c2"), seq("c1", "c2"));
        // A matrix leg failing at the closing commit fails its job there.
        reports.push(r("c2", "test", Failed));
        assert_eq!(completed(&reports, "c2"), None);
    }

    #[test]
    fn the_sequence_starts_after_the_last_passing_commit() {
        let reports = [
            r("c1", "test", Failed),
            r("c2", "test", Passed),
            r("c3", "test", Failed),
            r("c4", "test", Failed),
            r("c5", "test", Passed),
        ];
        assert_eq!(completed(&reports, "c5"), seq("c3", "c5"));
        assert_eq!(completed(&reports, "c2"), seq("c1", "c2"));
    }

    #[test]
    fn the_workflow_is_the_one_file_with_every_reporting_job() {
        let ci = (
            ".github/workflows/ci.yml".to_string(),
            "jobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - run: python -m unittest\n".to_string(),
        );
        let docs = (
            ".github/workflows/docs.yml".to_string(),
            "jobs:\n  docs:\n    runs-on: ubuntu-latest\n    steps:\n      - run: make docs\n"
                .to_string(),
        );
        let jobs: BTreeSet<String> = ["test".to_string()].into();
        let candidates = vec![ci.clone(), docs.clone()];
        let (chosen, notes) = choose_workflow(&candidates, &jobs);
        assert_eq!(chosen, Some(".github/workflows/ci.yml"));
        assert!(notes.is_empty(), "{notes:?}");

        let twice = vec![
            ci.clone(),
            (".github/workflows/copy.yml".into(), ci.1.clone()),
        ];
        let (chosen, notes) = choose_workflow(&twice, &jobs);
        assert_eq!(chosen, None);
        assert!(notes[0].message.contains("2 workflow files"), "{notes:?}");

        let only_docs = [docs];
        let (chosen, notes) = choose_workflow(&only_docs, &jobs);
        assert_eq!(chosen, None);
        assert!(notes[0].message.contains("no workflow file"), "{notes:?}");

        assert!(is_workflow_path(".github/workflows/ci.yml"));
        assert!(is_workflow_path(".gitlab-ci.yml"));
        assert!(!is_workflow_path("ci.yml"));
        assert!(!is_workflow_path(".github/workflows/templates/ci.yml"));
    }
}
