//! `tracelab experience mine --ci-reports DIR [--workflow PATH]`: the
//! history's CI observations from reports CI already sent (`tracelab
//! report`'s JSON, one per file) instead of re-running commands.
//!
//! Each report is parsed by `tracelab_evidence` (JUnit, runner output, the
//! log tail) into failures, placed on its commit of the first-parent line
//! `--from..--to`, and, with the workflow file read at that commit, on its
//! job and step (`tracelab_experience::ci_reports`). What cannot be placed
//! — a report without a commit or off the line (a force-push, another
//! branch), a workflow missing or unparseable at a commit — is a note, and
//! that commit counts as unobserved: nothing is attributed by a guess.

use anyhow::Context as _;
use std::collections::BTreeSet;
use std::path::Path;
use tracelab_engine::git::Git;
use tracelab_evidence::ParseOptions;
use tracelab_evidence::ci::{CiFailureReport, parse_ci_report};
use tracelab_experience::ci_history::{self, ReportAt, WorkflowAt};
use tracelab_experience::ci_reports::JobReport;
use tracelab_experience::reconstruct::Note;
use tracelab_experience::{Failure, History, Revision};

/// The history `from..to` (`ids`: the first-parent commits with their
/// parents, `from` first) observed through the reports in `dir`. Placing
/// and observing are `tracelab_experience::ci_history`'s, which the
/// fleet's indexer shares; this reads the files and git.
pub(super) async fn history(
    git: &Git,
    from: &str,
    to: &str,
    ids: &[(String, Option<String>)],
    dir: &Path,
    workflow_path: Option<&str>,
) -> anyhow::Result<(History, Vec<Note>)> {
    let reports = read_reports(dir)?
        .into_iter()
        .map(|(file, report)| ReportAt {
            label: file,
            commit: report.commit.clone(),
            report: job_report(&report),
        })
        .collect();
    let line: Vec<String> = ids.iter().map(|(sha, _)| sha.clone()).collect();
    let (by_commit, mut notes) = ci_history::place(&line, reports);
    let mut revisions = Vec::new();
    let mut previous: Option<&str> = None;
    for (i, (sha, parent)) in ids.iter().enumerate() {
        let ci = match by_commit.get(&i) {
            None => None,
            Some(reports) => {
                let text = match workflow_path {
                    Some(path) => git.show_file(sha, path).await?,
                    None => None,
                };
                let workflow = match (workflow_path, text.as_deref()) {
                    (None, _) => WorkflowAt::NotGiven,
                    (Some(path), None) => WorkflowAt::Missing { path },
                    (Some(path), Some(text)) => WorkflowAt::Text { path, text },
                };
                let files = repository_files(git, sha).await?;
                let (run, placed) = ci_history::observe_at(sha, workflow, &files, reports);
                notes.extend(placed);
                run
            }
        };
        let diff = match previous {
            Some(prev) => super::diff(git, prev, sha).await?,
            None => String::new(),
        };
        revisions.push(Revision {
            id: sha.clone(),
            parent: parent.clone(),
            summary: git.commit_info(sha).await?.summary,
            diff,
            ci,
        });
        previous = Some(sha);
    }
    let history = History {
        repository: git.path().display().to_string(),
        workflow: workflow_path.unwrap_or("ci reports").to_string(),
        net_diff: super::diff(git, from, to).await?,
        revisions,
    };
    Ok((history, notes))
}

/// Every `*.json` file of `dir` as a report, in name order; a file that is
/// not one is an error naming it.
fn read_reports(dir: &Path) -> anyhow::Result<Vec<(String, CiFailureReport)>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read --ci-reports {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let report = serde_json::from_str(&text).with_context(|| {
                format!("{} is not a `tracelab report` payload", path.display())
            })?;
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            Ok((name, report))
        })
        .collect()
}

async fn repository_files(git: &Git, sha: &str) -> anyhow::Result<BTreeSet<String>> {
    Ok(git
        .run(&["ls-tree", "-r", "--name-only", sha])
        .await?
        .lines()
        .map(str::to_string)
        .collect())
}

/// One report's job and failures, frames as CI printed them (the shared
/// observer makes them repository-relative).
fn job_report(report: &CiFailureReport) -> JobReport {
    let parsed = parse_ci_report(report, &ParseOptions::default());
    JobReport {
        job: report.job.name.clone().unwrap_or_else(|| "job".into()),
        has_test_reports: !report.reports.is_empty(),
        failures: parsed
            .failures
            .iter()
            .map(|f| {
                let mut error_types: BTreeSet<String> = f.exception_type.iter().cloned().collect();
                error_types.extend(f.causes.iter().filter_map(|c| c.exception_type.clone()));
                Failure {
                    test: f.test_id.clone(),
                    error_types,
                    message: f.message.clone(),
                    frames: f
                        .frames
                        .iter()
                        .chain(f.causes.iter().flat_map(|c| &c.frames))
                        .filter_map(|fr| Some((fr.file.clone()?, fr.line?)))
                        .collect(),
                }
            })
            .collect(),
    }
}
