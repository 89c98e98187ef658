//! The probe journal: a second process of the same investigation (the
//! fleet's redelivery after an investigator died) resumes from what the
//! first one journaled — the failure's classification and the culprit
//! search's judgements — instead of running them again. Counted through the fixture's own side channel (each test run
//! appends `<folder> <pid> <revision>` to a file), not through the engine.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tracelab_domain::bisect::ProbeResult;
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::journal::{MemoryJournal, ProbeJournal};
use tracelab_engine::phases::{propose, reproduce};
use tracelab_engine::session::{Session, prepare};
use tracelab_engine::{EngineConfig, InvestigateRequest, Silent};
use tracelab_sandbox::{LocalConfig, LocalSandboxProvider};
use tracelab_testkit::scenarios;

/// Runs at the bad revision in `probe-…` worktrees: the reproduction's
/// re-runs and the test-behaviour checks.
fn runs_at_bad(log: &Path, bad: &str) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|line| {
            let mut parts = line.split(' ');
            let folder = parts.next().unwrap_or_default();
            folder.starts_with("probe-") && parts.nth(1) == Some(bad)
        })
        .count()
}

/// Revisions the search probed (runs in `probe-…` worktrees, other than
/// the re-runs at the bad revision), one entry per run.
fn probe_runs(log: &Path, bad: &str) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            let mut parts = line.split(' ');
            let folder = parts.next()?;
            let revision = parts.nth(1)?;
            (folder.starts_with("probe-") && revision != bad).then(|| revision.to_string())
        })
        .collect()
}

/// One process's attempt: reproduce and propose, as the fleet's investigator does.
async fn attempt(
    s: &scenarios::Scenario,
    id: &InvestigationId,
    journal: Arc<dyn ProbeJournal>,
    good: Option<&str>,
) -> Option<String> {
    let config = EngineConfig {
        parallelism: 2,
        command_timeout: Duration::from_secs(30),
        ..Default::default()
    };
    let request = InvestigateRequest {
        repo: s.repo.path().to_path_buf(),
        test_command: s.test_command.clone(),
        good: good.map(str::to_string),
        bad: None,
        issue_id: Some("J-1".into()),
    };
    let sandboxes = Arc::new(LocalSandboxProvider::new(LocalConfig {
        path: "/usr/bin:/bin".into(),
        allowlist: config.allowlist.clone(),
    }));
    let prepared = prepare(&config, &request).await.unwrap();
    let good = prepared.good.clone();
    let session = Session::open(
        id.clone(),
        request.issue_id.clone(),
        prepared,
        config,
        sandboxes,
        Arc::new(Silent),
    )
    .unwrap()
    .with_journal(journal)
    .await
    .unwrap();
    let reproduction = reproduce(&session.ctx, good.as_deref()).await.unwrap();
    let (_, proposal) = propose(&session.ctx, reproduction, good).await.unwrap();
    session.close(None).await;
    proposal.revert.map(|r| r.culprit)
}

#[tokio::test]
async fn a_second_attempt_does_not_probe_again_what_the_first_journaled() {
    resumes(false).await;
}

/// With `--good`, no good revision is looked for: the search's own rounds
/// are journaled and resumed.
#[tokio::test]
async fn with_a_given_good_revision_the_search_rounds_resume_too() {
    resumes(true).await;
}

async fn resumes(given_good: bool) {
    let side = tempfile::tempdir().unwrap();
    let log = side.path().join("runs.log");
    let s = scenarios::linear_regression_logged(24, 9, 0.0, &log);
    let journal = Arc::new(MemoryJournal::default());
    let id = InvestigationId::generate();

    let good = given_good.then_some(s.root.as_str());
    let first = attempt(&s, &id, journal.clone(), good).await;
    assert_eq!(first, s.culprit);
    let first_runs = probe_runs(&log, &s.head);
    let first_at_bad = runs_at_bad(&log, &s.head);
    let journaled = journal.load(&id).await.unwrap();
    let reusable: BTreeSet<String> = journaled
        .iter()
        .filter(|p| p.result != ProbeResult::Good)
        .map(|p| p.revision.clone())
        .collect();
    assert!(
        !reusable.is_empty(),
        "the first search journaled no bad revision: {journaled:?}"
    );

    std::fs::write(&log, "").unwrap();
    let second = attempt(&s, &id, journal.clone(), good).await;
    assert_eq!(
        second, s.culprit,
        "the resumed search names the same culprit"
    );
    let second_runs = probe_runs(&log, &s.head);
    // The classification was journaled: its re-runs (a deterministic failure
    // needs 17 in a row) are not made again; only the environment checks
    // run at bad.
    let second_at_bad = runs_at_bad(&log, &s.head);
    assert!(
        second_at_bad + 17 <= first_at_bad,
        "runs at bad: first attempt {first_at_bad}, second {second_at_bad}"
    );
    let again: Vec<&String> = second_runs
        .iter()
        .filter(|r| reusable.contains(*r))
        .collect();
    assert!(
        again.is_empty(),
        "journaled bad revisions were probed again: {again:?}"
    );
    assert!(
        second_runs.len() < first_runs.len(),
        "the second attempt ran {} probe runs, the first {}",
        second_runs.len(),
        first_runs.len()
    );

    // Another investigation of the same repository starts from nothing.
    std::fs::write(&log, "").unwrap();
    let other = attempt(&s, &InvestigationId::generate(), journal, good).await;
    assert_eq!(other, s.culprit);
    assert_eq!(probe_runs(&log, &s.head).len(), first_runs.len());
}
