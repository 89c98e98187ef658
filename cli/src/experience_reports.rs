//! `tracelab experience mine --ci-reports DIR [--workflow PATH]`: the
//! history's CI observations from reports CI already sent (`tracelab
//! report`'s JSON, one per file) instead of re-running commands.
//!
//! Each report is parsed by `tracelab_ingest` (JUnit, runner output, the
//! log tail) into failures, placed on its commit of the first-parent line
//! `--from..--to`, and, with the workflow file read at that commit, on its
//! job and step (`tracelab_experience::ci_reports`). What cannot be placed
//! — a report without a commit or off the line (a force-push, another
//! branch), a workflow missing or unparseable at a commit — is a note, and
//! that commit counts as unobserved: nothing is attributed by a guess.

use anyhow::Context as _;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use tracelab_engine::git::Git;
use tracelab_experience::ci_reports::{self, JobReport};
use tracelab_experience::reconstruct::{Note, NoteKind, note};
use tracelab_experience::{Failure, History, Revision, workflow};
use tracelab_ingest::ParseOptions;
use tracelab_ingest::ci::{CiFailureReport, parse_ci_report};

/// The history `from..to` (`ids`: the first-parent commits with their
/// parents, `from` first) observed through the reports in `dir`.
pub(super) async fn history(
    git: &Git,
    from: &str,
    to: &str,
    ids: &[(String, Option<String>)],
    dir: &Path,
    workflow_path: Option<&str>,
) -> anyhow::Result<(History, Vec<Note>)> {
    let mut notes = Vec::new();
    let mut by_commit: BTreeMap<usize, Vec<(String, CiFailureReport)>> = BTreeMap::new();
    for (file, report) in read_reports(dir)? {
        let Some(commit) = report.commit.as_deref().filter(|c| c.len() >= 7) else {
            notes.push(note(
                NoteKind::CiInput,
                format!("report {file} names no commit: not used"),
            ));
            continue;
        };
        match ids.iter().position(|(sha, _)| sha.starts_with(commit)) {
            Some(i) => by_commit.entry(i).or_default().push((file, report)),
            None => notes.push(note(
                NoteKind::CiInput,
                format!(
                    "report {file}: commit {commit} is not on the first-parent line from --from to --to (force-pushed, another branch, or outside the range): not used"
                ),
            )),
        }
    }
    if by_commit.is_empty() {
        notes.push(note(
            NoteKind::CiInput,
            format!(
                "no report in {} is about a commit of the range",
                dir.display()
            ),
        ));
    }
    let mut revisions = Vec::new();
    let mut previous: Option<&str> = None;
    for (i, (sha, parent)) in ids.iter().enumerate() {
        let ci = match by_commit.get(&i) {
            None => None,
            Some(reports) => observe(git, sha, reports, workflow_path, &mut notes).await?,
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

/// The CI run at `sha` from its reports, placed with the workflow as it
/// was at that commit.
async fn observe(
    git: &Git,
    sha: &str,
    reports: &[(String, CiFailureReport)],
    workflow_path: Option<&str>,
    notes: &mut Vec<Note>,
) -> anyhow::Result<Option<tracelab_experience::CiRun>> {
    let short = &sha[..sha.len().min(12)];
    let workflow = match workflow_path {
        None => None,
        Some(path) => {
            let parsed = match git.show_file(sha, path).await? {
                None => Err(format!("{path} does not exist at {short}")),
                Some(text) => {
                    workflow::parse(path, &text).map_err(|why| format!("{path} at {short}: {why}"))
                }
            };
            match parsed {
                Ok(w) => Some(w),
                Err(why) => {
                    notes.push(note(
                        NoteKind::CiInput,
                        format!("{why}; the reports of {short} are not used"),
                    ));
                    return Ok(None);
                }
            }
        }
    };
    let files = repository_files(git, sha).await?;
    let jobs: Vec<JobReport> = reports.iter().map(|(_, r)| job_report(r, &files)).collect();
    let (run, placed) = ci_reports::observe(workflow.as_ref(), &jobs);
    notes.extend(
        placed
            .into_iter()
            .map(|n| note(NoteKind::CiInput, format!("{short}: {n}"))),
    );
    Ok(run)
}

async fn repository_files(git: &Git, sha: &str) -> anyhow::Result<BTreeSet<String>> {
    Ok(git
        .run(&["ls-tree", "-r", "--name-only", sha])
        .await?
        .lines()
        .map(str::to_string)
        .collect())
}

/// One report's job and failures, frames made repository-relative.
fn job_report(report: &CiFailureReport, files: &BTreeSet<String>) -> JobReport {
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
                        .filter_map(|fr| {
                            Some((in_repository(fr.file.as_deref()?, files)?, fr.line?))
                        })
                        .collect(),
                }
            })
            .collect(),
    }
}

/// The repository file a CI path names: the path itself, or its longest
/// tail that is one (`/home/runner/work/shop/shop/app/cart.py` → `app/cart.py`).
fn in_repository(path: &str, files: &BTreeSet<String>) -> Option<String> {
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
}
