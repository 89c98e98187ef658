//! Mining in the fleet (#16): the durable consumer `indexer-ci-reports` of
//! ingest's `CiReportRecorded` events keeps each (repository, branch)'s
//! reports in PostgreSQL and, when a report completes a failing → passing
//! sequence (`tracelab_experience::branch::completed`), reads the
//! repository's mirror at each commit of the sequence, builds the history
//! with the code `tracelab experience mine --ci-reports` uses
//! (`tracelab_experience::ci_history`), reconstructs it and stores the
//! records (`put_experience`) — before the message is acked.
//!
//! Redelivery is harmless: a report is kept once by its id, a record once
//! by its id (a hash of repository, workflow, history and problem), and a
//! mining's outcome is rewritten for the same sequence. A payload that does
//! not decode or has no report id is poison (InvalidArgument: dead-lettered
//! with the reason). What cannot be organised — a report without
//! repository, branch or commit, a repository the deployment does not
//! allow, a force-pushed branch, no usable workflow — is logged and, from
//! the sequence on, kept as the mining's notes; nothing is attributed by a
//! guess.

use crate::history_git::Repo;
use std::collections::BTreeSet;
use tracelab_bus::Delivery;
use tracelab_domain::{Error, Result};
use tracelab_experience::branch::{self, BranchReport, Sequence, Verdict};
use tracelab_experience::ci_history::{self, ReportAt, WorkflowAt};
use tracelab_experience::ci_reports::JobReport;
use tracelab_experience::reconstruct::{Note, NoteKind, note};
use tracelab_experience::{Failure, History, PathRelations, Revision};
use tracelab_fleet::events;
use tracelab_fleet::repositories::{self, Repositories};
use tracelab_proto::events::v1::CiReportRecorded;
use tracelab_store::{CiReportRow, ExperienceStore, Mining, PgStore};

/// The durable consumer of CI reports (one per fleet).
pub const DURABLE: &str = "indexer-ci-reports";

/// What the consumer needs: the store and the repositories it may read.
pub struct Miner {
    pub store: PgStore,
    pub sources: Repositories,
    /// Commits of one sequence beyond which it is not mined (a note).
    pub max_commits: usize,
}

/// One delivery: keep the report, mine the sequence it completes.
pub async fn handle(miner: &Miner, delivery: &Delivery) -> Result<()> {
    let event: CiReportRecorded = events::decode(delivery)?;
    if event.report_id.is_empty() {
        return Err(Error::invalid("a CI report event without a report id"));
    }
    if event.repository.is_empty() || event.branch.is_empty() || event.commit.len() < 7 {
        tracing::info!(report = %event.report_id, "CI report names no repository, branch or commit: not mined");
        return Ok(());
    }
    let row = row(&event);
    miner.store.record_ci_report(&row).await?;
    let verdict = Verdict::of(row.has_test_reports, row.failures.len());
    if verdict != Verdict::Passed {
        return Ok(());
    }
    let reports = miner
        .store
        .ci_reports_of_branch(&row.repository, &row.branch)
        .await?;
    let branch_reports: Vec<BranchReport> = reports
        .iter()
        .map(|r| BranchReport {
            commit: r.commit.clone(),
            job: r.job.clone(),
            verdict: Verdict::of(r.has_test_reports, r.failures.len()),
        })
        .collect();
    let Some(sequence) = branch::completed(&branch_reports, &row.commit) else {
        return Ok(());
    };
    let (workflow, records, new, notes) = mine(miner, &row, &sequence, &reports).await?;
    for n in &notes {
        tracing::info!(repository = %row.repository, branch = %row.branch, kind = ?n.kind, note = %n.message, "mining note");
    }
    tracing::info!(
        repository = %row.repository, branch = %row.branch,
        failing = %sequence.failing, passing = %sequence.passing,
        records, new, "mined a completed sequence"
    );
    miner
        .store
        .record_mining(&Mining {
            repository: row.repository.clone(),
            branch: row.branch.clone(),
            failing: sequence.failing.clone(),
            passing: sequence.passing.clone(),
            workflow,
            records,
            notes,
        })
        .await
}

/// The kept form of an event: failures with CI's frame paths.
fn row(event: &CiReportRecorded) -> CiReportRow {
    CiReportRow {
        id: event.report_id.clone(),
        repository: event.repository.clone(),
        branch: event.branch.clone(),
        commit: event.commit.clone(),
        job: Some(event.job.clone())
            .filter(|j| !j.is_empty())
            .unwrap_or_else(|| "job".into()),
        has_test_reports: event.has_test_reports,
        failures: event
            .failures
            .iter()
            .map(|f| Failure {
                test: Some(f.test.clone()).filter(|t| !t.is_empty()),
                error_types: f.error_types.iter().cloned().collect(),
                message: f.message.clone(),
                frames: f
                    .frames
                    .iter()
                    .map(|fr| (fr.file.clone(), fr.line))
                    .collect(),
            })
            .collect(),
    }
}

/// Mines `sequence`: the workflow used, how many records the history gave
/// and how many of them were new, and the notes. Errors only for what a
/// retry may cure (git, the store).
async fn mine(
    miner: &Miner,
    closing: &CiReportRow,
    sequence: &Sequence,
    reports: &[CiReportRow],
) -> Result<(String, usize, usize, Vec<Note>)> {
    let unorganised = |why: String| {
        Ok((
            "ci reports".to_string(),
            0,
            0,
            vec![note(NoteKind::CiInput, why)],
        ))
    };
    let repository = match miner.sources.admit(&closing.repository) {
        Ok(r) => r,
        Err(e) => {
            return unorganised(format!(
                "repository {} is not readable here: {e}",
                closing.repository
            ));
        }
    };
    let checkout = match miner
        .sources
        .checkout(&repository, &[&sequence.failing, &sequence.passing])
        .await
    {
        Ok(c) => c,
        Err(e) if repositories::is_final(&e) => {
            return unorganised(format!(
                "cannot read {repository} at the sequence's commits: {e}"
            ));
        }
        Err(e) => return Err(e),
    };
    let git = Repo::new(&checkout.path);
    let (failing, passing) = (&checkout.resolved[0], &checkout.resolved[1]);
    if !git.is_ancestor(failing, passing).await? {
        return unorganised(format!(
            "{} is not an ancestor of {}: the branch was force-pushed, nothing is attributed",
            short(failing),
            short(passing)
        ));
    }
    let chain = git.first_parent_line(failing, passing).await?;
    if chain.first().map(|(_, parent)| parent) != Some(failing) {
        return unorganised(format!(
            "{} is not on the first-parent line of {}: not a linear history",
            short(failing),
            short(passing)
        ));
    }
    if chain.len() > miner.max_commits {
        return unorganised(format!(
            "{} commits from {} to {}, more than {}: not mined",
            chain.len(),
            short(failing),
            short(passing),
            miner.max_commits
        ));
    }
    let mut ids = vec![(failing.clone(), None)];
    ids.extend(chain.into_iter().map(|(sha, parent)| (sha, Some(parent))));
    let line: Vec<String> = ids.iter().map(|(sha, _)| sha.clone()).collect();
    let (placed, mut notes) = ci_history::place(&line, in_window(reports, sequence));
    let jobs: BTreeSet<String> = placed
        .values()
        .flatten()
        .map(|r| r.report.job.clone())
        .collect();
    let candidates = workflow_candidates(&git, passing).await?;
    let (workflow_path, chosen) = branch::choose_workflow(&candidates, &jobs);
    let workflow_path = workflow_path.map(str::to_string);
    notes.extend(chosen);
    let mut revisions = Vec::new();
    let mut previous: Option<&str> = None;
    for (i, (sha, parent)) in ids.iter().enumerate() {
        let ci = match placed.get(&i) {
            None => None,
            Some(at) => {
                let text = match &workflow_path {
                    Some(path) => git.show(sha, path).await?,
                    None => None,
                };
                let workflow = match (&workflow_path, &text) {
                    (None, _) => WorkflowAt::NotGiven,
                    (Some(path), None) => WorkflowAt::Missing { path },
                    (Some(path), Some(text)) => WorkflowAt::Text { path, text },
                };
                let files = git.files(sha).await?;
                let (run, observed) = ci_history::observe_at(sha, workflow, &files, at);
                notes.extend(observed);
                run
            }
        };
        let diff = match previous {
            Some(prev) => git.diff(prev, sha).await?,
            None => String::new(),
        };
        revisions.push(Revision {
            id: sha.clone(),
            parent: parent.clone(),
            summary: git.summary(sha).await?,
            diff,
            ci,
        });
        previous = Some(sha);
    }
    let workflow = workflow_path.unwrap_or_else(|| "ci reports".into());
    let history = History {
        repository,
        workflow: workflow.clone(),
        net_diff: git.diff(failing, passing).await?,
        revisions,
    };
    let mut reconstruction = tracelab_experience::reconstruct(&history, &PathRelations);
    notes.append(&mut reconstruction.notes);
    let new = miner.store.put_experience(&reconstruction.records).await?;
    Ok((workflow, reconstruction.records.len(), new, notes))
}

/// The reports that arrived from the first about the failing commit to the
/// last about the passing one: the sequence's, force-pushed attempts
/// included (placing them notes them off the line).
fn in_window(reports: &[CiReportRow], sequence: &Sequence) -> Vec<ReportAt> {
    let start = reports.iter().position(|r| r.commit == sequence.failing);
    let end = reports.iter().rposition(|r| r.commit == sequence.passing);
    let (Some(start), Some(end)) = (start, end) else {
        return Vec::new();
    };
    reports[start..=end]
        .iter()
        .map(|r| ReportAt {
            label: r.id.clone(),
            commit: Some(r.commit.clone()),
            report: JobReport {
                job: r.job.clone(),
                has_test_reports: r.has_test_reports,
                failures: r.failures.clone(),
            },
        })
        .collect()
}

/// The workflow files at `sha` with their text.
async fn workflow_candidates(git: &Repo, sha: &str) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for path in git.files(sha).await? {
        if branch::is_workflow_path(&path)
            && let Some(text) = git.show(sha, &path).await?
        {
            out.push((path, text));
        }
    }
    Ok(out)
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}
