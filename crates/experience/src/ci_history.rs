//! A history's CI observations from the reports CI sent, shared by
//! `tracelab experience mine --ci-reports` and the fleet's indexer (which
//! mines a branch once its sequence completes): reports placed on the
//! commits of a first-parent line, and each observed commit's run built
//! from its reports and the workflow file as it was at that commit.
//!
//! No IO: the caller reads git (the line, each observed commit's files and
//! workflow text) and hands the results in, in two steps — [`place`] says
//! which commits were observed, [`observe_at`] builds the run of one. What
//! cannot be placed (a report without a commit or off the line: a
//! force-push, another branch; a workflow missing or unparseable at a
//! commit) is a note, and that commit counts as unobserved: nothing is
//! attributed by a guess.

use crate::ci_reports::{self, JobReport};
use crate::model::CiRun;
use crate::reconstruct::{Note, NoteKind, note};
use crate::workflow;
use std::collections::{BTreeMap, BTreeSet};

/// One report as it arrived: where it came from (a file name, a message
/// id), the commit it names and its job with failures whose frames still
/// carry CI's paths (made repository-relative by [`observe_at`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportAt {
    pub label: String,
    pub commit: Option<String>,
    pub report: JobReport,
}

/// The reports placed on `line` (the first-parent commits, full shas, the
/// failing one first), by index into `line`, with notes for the rest.
/// A report's commit may be abbreviated (at least 7 characters).
pub fn place(
    line: &[String],
    reports: Vec<ReportAt>,
) -> (BTreeMap<usize, Vec<ReportAt>>, Vec<Note>) {
    let mut notes = Vec::new();
    let mut placed: BTreeMap<usize, Vec<ReportAt>> = BTreeMap::new();
    for report in reports {
        let Some(commit) = report.commit.clone().filter(|c| c.len() >= 7) else {
            notes.push(note(
                NoteKind::CiInput,
                format!("report {} names no commit: not used", report.label),
            ));
            continue;
        };
        match line.iter().position(|sha| sha.starts_with(&commit)) {
            Some(i) => placed.entry(i).or_default().push(report),
            None => notes.push(note(
                NoteKind::CiInput,
                format!(
                    "report {}: commit {commit} is not on the first-parent line of the history (force-pushed, another branch, or outside the range): not used",
                    report.label
                ),
            )),
        }
    }
    if placed.is_empty() {
        notes.push(note(
            NoteKind::CiInput,
            "no report is about a commit of the history",
        ));
    }
    (placed, notes)
}

/// The workflow file as the caller found it at one commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkflowAt<'a> {
    /// No workflow is known: each report is one job with one step.
    NotGiven,
    /// The file does not exist at that commit.
    Missing {
        path: &'a str,
    },
    Text {
        path: &'a str,
        text: &'a str,
    },
}

/// The CI run at `sha` from its `reports`, placed with the workflow as it
/// was there and with frames made repository-relative against `files` (the
/// paths of the commit's tree). `None` (with a note) when the workflow is
/// missing or does not parse, or no report could be placed.
pub fn observe_at(
    sha: &str,
    workflow: WorkflowAt<'_>,
    files: &BTreeSet<String>,
    reports: &[ReportAt],
) -> (Option<CiRun>, Vec<Note>) {
    let short = &sha[..sha.len().min(12)];
    let parsed = match workflow {
        WorkflowAt::NotGiven => None,
        WorkflowAt::Missing { path } => {
            let why =
                format!("{path} does not exist at {short}; the reports of {short} are not used");
            return (None, vec![note(NoteKind::CiInput, why)]);
        }
        WorkflowAt::Text { path, text } => match workflow::parse(path, text) {
            Ok(w) => Some(w),
            Err(why) => {
                let why = format!("{path} at {short}: {why}; the reports of {short} are not used");
                return (None, vec![note(NoteKind::CiInput, why)]);
            }
        },
    };
    let jobs: Vec<JobReport> = reports
        .iter()
        .map(|r| in_repository_report(&r.report, files))
        .collect();
    let (run, placed) = ci_reports::observe(parsed.as_ref(), &jobs);
    let notes = placed
        .into_iter()
        .map(|n| note(NoteKind::CiInput, format!("{short}: {n}")))
        .collect();
    (run, notes)
}

/// `report` with each frame's path made repository-relative; frames
/// outside the repository (the standard library, site-packages) dropped.
fn in_repository_report(report: &JobReport, files: &BTreeSet<String>) -> JobReport {
    let mut report = report.clone();
    for failure in &mut report.failures {
        failure.frames = failure
            .frames
            .iter()
            .filter_map(|(path, line)| Some((in_repository(path, files)?, *line)))
            .collect();
    }
    report
}

/// The repository file a CI path names: the path itself, or its longest
/// tail that is one (`/home/runner/work/shop/shop/app/cart.py` → `app/cart.py`).
pub fn in_repository(path: &str, files: &BTreeSet<String>) -> Option<String> {
    let mut rest = path.trim_start_matches("./");
    loop {
        if files.contains(rest) {
            return Some(rest.to_string());
        }
        rest = rest.split_once('/')?.1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Failure, StepStatus};

    fn report(label: &str, commit: Option<&str>, failures: Vec<Failure>) -> ReportAt {
        ReportAt {
            label: label.into(),
            commit: commit.map(String::from),
            report: JobReport {
                job: "test".into(),
                has_test_reports: true,
                failures,
            },
        }
    }

    #[test]
    fn a_ci_path_is_the_repository_file_it_ends_with() {
        let files: BTreeSet<String> = ["app/cart.py".to_string(), "cart.py".to_string()].into();
        assert_eq!(
            in_repository("/home/runner/work/shop/shop/app/cart.py", &files).as_deref(),
            Some("app/cart.py")
        );
        assert_eq!(
            in_repository("./cart.py", &files).as_deref(),
            Some("cart.py")
        );
        assert_eq!(in_repository("/usr/lib/python3/json.py", &files), None);
    }

    #[test]
    fn reports_off_the_line_or_without_a_commit_are_notes() {
        let line = vec!["aaaaaaa111".to_string(), "bbbbbbb222".to_string()];
        let (placed, notes) = place(
            &line,
            vec![
                report("a.json", Some("aaaaaaa"), vec![]),
                report("b.json", Some("bbbbbbb222"), vec![]),
                report("forced.json", Some("ccccccc333"), vec![]),
                report("none.json", None, vec![]),
                report("short.json", Some("aaa"), vec![]),
            ],
        );
        assert_eq!(placed.keys().copied().collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(notes[0].message.contains("forced.json"));
        assert!(notes[0].message.contains("force-pushed"));
        assert!(notes[1].message.contains("none.json names no commit"));
    }

    #[test]
    fn frames_become_repository_files_and_a_bad_workflow_leaves_the_commit_unobserved() {
        let files: BTreeSet<String> = ["app/cart.py".to_string()].into();
        let failing = Failure {
            test: Some("tests.test_cart.CartTest.test_total".into()),
            frames: vec![
                ("/home/runner/work/shop/shop/app/cart.py".into(), 12),
                ("/usr/lib/python3.11/unittest/case.py".into(), 57),
            ],
            ..Failure::default()
        };
        let reports = vec![report("r", Some("abcdef1"), vec![failing])];
        let (run, notes) = observe_at("abcdef1234", WorkflowAt::NotGiven, &files, &reports);
        assert!(notes.is_empty(), "{notes:?}");
        let step = &run.expect("observed").jobs[0].steps[0];
        assert_eq!(step.status, StepStatus::Failed);
        assert_eq!(
            step.failures[0].frames,
            vec![("app/cart.py".to_string(), 12)]
        );

        let (run, notes) = observe_at(
            "abcdef1234",
            WorkflowAt::Missing {
                path: ".github/workflows/ci.yml",
            },
            &files,
            &reports,
        );
        assert_eq!(run, None);
        assert!(notes[0].message.contains("does not exist at abcdef1234"));
        let (run, notes) = observe_at(
            "abcdef1234",
            WorkflowAt::Text {
                path: ".github/workflows/ci.yml",
                text: "jobs: [",
            },
            &files,
            &reports,
        );
        assert_eq!(run, None);
        assert!(notes[0].message.contains("are not used"), "{notes:?}");
    }
}
