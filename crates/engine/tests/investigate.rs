//! The pipeline end to end on generated repositories, with the local sandbox
//! and a real (in-memory) SQLite store.

use std::sync::Arc;
use std::time::Duration;
use tracelab_domain::bisect::ProbeResult;
use tracelab_domain::experiment::Step;
use tracelab_domain::hypothesis::{HypothesisKind, HypothesisStatus};
use tracelab_domain::ports::InvestigationStore;
use tracelab_domain::state::InvestigationState;
use tracelab_domain::verdict::Verdict;
use tracelab_engine::{Aborted, Engine, EngineConfig, InvestigateRequest, Silent};
use tracelab_sandbox::{LocalConfig, LocalSandboxProvider};
use tracelab_store::SqliteStore;
use tracelab_testkit::scenarios::{self, Scenario};

async fn engine(tweak: impl FnOnce(&mut EngineConfig)) -> (Engine, Arc<SqliteStore>) {
    engine_on(std::env::var("PATH").unwrap(), tweak).await
}

/// Debian's python3 first (pytest is installed for it), whatever version
/// manager the developer's PATH puts first.
const SYSTEM_PATH: &str = "/usr/bin:/bin";

async fn engine_on(
    path: String,
    tweak: impl FnOnce(&mut EngineConfig),
) -> (Engine, Arc<SqliteStore>) {
    let store = Arc::new(SqliteStore::in_memory().await.unwrap());
    let mut config = EngineConfig {
        parallelism: 2,
        command_timeout: Duration::from_secs(30),
        ..Default::default()
    };
    tweak(&mut config);
    // The sandbox checks the same allowlist again (defence in depth).
    let local = LocalConfig {
        path,
        allowlist: config.allowlist.clone(),
    };
    let engine = Engine {
        config,
        store: store.clone(),
        sandboxes: Arc::new(LocalSandboxProvider::new(local)),
        progress: Arc::new(Silent),
    };
    (engine, store)
}

fn request(s: &Scenario) -> InvestigateRequest {
    InvestigateRequest {
        repo: s.repo.path().to_path_buf(),
        test_command: s.test_command.clone(),
        good: None,
        bad: None,
        issue_id: Some("T-1".into()),
    }
}

/// No worktree, and no branch but the ones listed, are left in the repository.
fn assert_clean(s: &Scenario, kept_branches: &[&str]) {
    assert_eq!(
        s.repo.worktrees().len(),
        1,
        "leftover worktrees: {:?}",
        s.repo.worktrees()
    );
    let branches = s.repo.git(&[
        "branch",
        "--list",
        "ai-debug/*",
        "--format=%(refname:short)",
    ]);
    let branches: Vec<&str> = branches.lines().collect();
    assert_eq!(branches, kept_branches, "ai-debug branches");
}

#[tokio::test]
async fn finds_the_culprit_behind_a_range_that_fails_differently_where_git_bisect_run_does_not() {
    let s = scenarios::regression_behind_broken_range();
    let (engine, store) = engine(|_| {}).await;
    let report = engine.investigate(request(&s)).await.unwrap();
    assert_eq!(report.verdict, Verdict::Regression);
    assert_eq!(
        report.culprit.as_ref().unwrap().commit.commit,
        *s.culprit.as_ref().unwrap()
    );
    assert_eq!(report.state, InvestigationState::WaitingForReview);
    let winner = report.winner.as_ref().unwrap();
    assert_eq!(winner.kind, HypothesisKind::Revert);
    assert_eq!(winner.status, HypothesisStatus::Verified);
    assert_eq!(winner.branch.as_deref(), Some("ai-debug/T-1-h1"));
    assert!(
        winner
            .patch
            .as_deref()
            .unwrap()
            .contains("-    if a < 10 and b < 10:")
    );
    let bisect = report.bisect.as_ref().unwrap();
    assert!(
        bisect.untestable.iter().all(|c| s.broken.contains(c)),
        "only broken commits are untestable"
    );
    // The search's judgements, for the timeline: the culprit was probed bad
    // and its parent (or the good end) good; every one sits in the range
    // or outside it, in a round the search ran.
    let culprit = s.culprit.as_deref().unwrap();
    let probed = |rev: &str| bisect.probes.iter().find(|p| p.revision == rev);
    let at_culprit = probed(culprit).expect("the culprit was probed");
    assert_eq!(at_culprit.result, ProbeResult::Bad);
    assert!(
        bisect
            .probes
            .iter()
            .all(|p| p.round <= bisect.rounds && p.position.is_none_or(|i| i < bisect.candidates))
    );
    let judged_good = bisect
        .probes
        .iter()
        .filter(|p| p.result == ProbeResult::Good)
        .filter_map(|p| p.position)
        .max();
    assert!(
        judged_good.is_none_or(|g| g + 1 == at_culprit.position.unwrap()),
        "the last good judgement is the culprit's parent: {:?}",
        bisect.probes
    );
    assert!(
        bisect
            .probes
            .iter()
            .filter(|p| p.result == ProbeResult::Untestable)
            .all(|p| s.broken.contains(&p.revision))
    );
    // The stored report and every transition are there.
    let stored = store.get(&report.id).await.unwrap().unwrap();
    assert_eq!(stored.verdict, Verdict::Regression);
    let states: Vec<_> = stored.transitions.iter().map(|t| t.to).collect();
    assert_eq!(states.last(), Some(&InvestigationState::WaitingForReview));
    assert_eq!(states.len(), 5);
    assert_clean(&s, &["ai-debug/T-1-h1"]);

    // `git bisect run` on exit codes blames the commit that broke the import.
    s.repo.git(&["bisect", "start", &s.head, &s.root]);
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(s.repo.path())
        .args(["bisect", "run", "python3", "test_app.py"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let blamed = text
        .lines()
        .find_map(|l| l.strip_suffix(" is the first bad commit"))
        .expect("bisect names a commit");
    assert_eq!(
        blamed, s.broken[0],
        "git bisect run blames the import break"
    );
    assert_ne!(blamed, s.culprit.as_deref().unwrap());
}

#[tokio::test]
async fn with_an_explicit_good_revision() {
    let s = scenarios::regression_behind_broken_range();
    let (engine, _) = engine(|c| c.parallelism = 3).await;
    let mut req = request(&s);
    req.good = Some(s.root.clone());
    let report = engine.investigate(req).await.unwrap();
    assert_eq!(report.culprit.unwrap().commit.commit, s.culprit.unwrap());
    assert_eq!(report.good.as_deref(), Some(s.root.as_str()));
}

#[tokio::test]
async fn a_flaky_test_is_classified_with_its_rate_and_blames_no_commit() {
    let s = scenarios::flaky(0.3, 10);
    let (engine, _) = engine(|_| {}).await;
    let report = engine.investigate(request(&s)).await.unwrap();
    assert_eq!(report.verdict, Verdict::Flaky);
    assert!(report.culprit.is_none());
    let flaky = report.flaky.unwrap();
    assert!(
        (0.08..=0.6).contains(&flaky.failure_rate),
        "rate {}",
        flaky.failure_rate
    );
    assert!(
        flaky.interval.0 <= 0.3 && 0.3 <= flaky.interval.1 + 0.1,
        "interval {:?}",
        flaky.interval
    );
    assert!(flaky.runs <= 50);
    let winner = report.winner.unwrap();
    assert_eq!(winner.kind, HypothesisKind::Flaky);
    assert_clean(&s, &[]);
}

/// The error a `--good` that fails with the failure gets.
fn assert_good_also_fails(error: &tracelab_domain::Error) {
    assert!(
        error
            .message
            .contains("also fails with the failure under investigation"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn a_good_revision_that_fails_is_a_clear_error() {
    let s = scenarios::regression_behind_broken_range();
    let (engine, store) = engine(|_| {}).await;
    let mut req = request(&s);
    req.good = Some(s.culprit.clone().unwrap());
    let Aborted { id, error } = engine.investigate(req).await.unwrap_err();
    assert_good_also_fails(&error);
    assert_eq!(
        store.state(&id.unwrap()).await.unwrap(),
        Some(InvestigationState::Failed)
    );
    assert_clean(&s, &[]);
}

#[tokio::test]
async fn a_test_passing_at_the_bad_revision_is_not_reproduced() {
    let s = scenarios::passing(4);
    let (engine, _) = engine(|c| c.sequential.max_runs = 10).await;
    let report = engine.investigate(request(&s)).await.unwrap();
    assert_eq!(report.verdict, Verdict::NotReproduced);
    assert!(report.culprit.is_none() && report.winner.is_none());
    assert_clean(&s, &[]);
}

#[tokio::test]
async fn finds_a_culprit_on_a_merged_branch() {
    let s = scenarios::regression_in_merged_branch();
    let (engine, _) = engine(|_| {}).await;
    let report = engine.investigate(request(&s)).await.unwrap();
    assert_eq!(report.verdict, Verdict::Regression);
    // The code-path agent points at the function the culprit broke.
    let top = report.suspects.first().unwrap_or_else(|| {
        panic!(
            "no suspects: {:?}\n{}",
            report.notes,
            report
                .reproduction
                .as_ref()
                .map(|e| format!("{:?}", e.output))
                .unwrap_or_default()
        )
    });
    assert_eq!(
        (top.path.as_str(), top.symbol.as_str()),
        ("app.py", "py:app.add"),
        "{:?}",
        report.suspects
    );
    assert!(!top.reasons.is_empty());
    assert!(report.to_markdown().contains("## Where to look"));
    assert_eq!(report.culprit.unwrap().commit.commit, s.culprit.unwrap());
}

#[tokio::test]
async fn an_order_dependent_test_is_recognised() {
    let s = scenarios::order_dependent();
    let (engine, _) = engine(|_| {}).await;
    let report = engine.investigate(request(&s)).await.unwrap();
    assert_eq!(
        report.verdict,
        Verdict::OrderDependent,
        "{}",
        report.to_markdown()
    );
    let winner = report.winner.unwrap();
    assert_eq!(winner.kind, HypothesisKind::OrderDependent);
    assert!(
        winner
            .summary
            .contains("test_shop.ShopTest.test_b_default_price")
    );
}

#[tokio::test]
async fn a_timezone_dependent_test_is_recognised() {
    let s = scenarios::timezone_dependent(3);
    let (engine, _) = engine(|c| c.sequential.max_runs = 10).await;
    let report = engine.investigate(request(&s)).await.unwrap();
    assert_eq!(
        report.verdict,
        Verdict::EnvironmentDependent,
        "{}",
        report.to_markdown()
    );
    assert!(report.winner.unwrap().summary.contains("TZ="));
}

#[tokio::test]
async fn the_environment_variants_run_the_failing_test_alone_when_it_fails_alone() {
    // A pytest suite where one test expects a time rendered in New York's
    // zone: it fails in the sandbox's zone, alone too, so the variants run
    // it alone rather than the suite (whose other test takes a while).
    let mut repo = tracelab_testkit::FixtureRepo::new();
    let tests = "import time\n\n\ndef test_stamp():\n    stamp = time.strftime(\"%H:%M\", time.localtime(0))\n    assert stamp == \"19:00\", f\"rendered {stamp}\"\n\n\ndef test_slow():\n    time.sleep(0.5)\n";
    repo.commit("Add report time tests", &[("test_time.py", tests)]);
    repo.commit("Notes", &[("NOTES.md", "notes\n")]);
    let (engine, _) = engine_on(SYSTEM_PATH.into(), |c| {
        c.sequential.max_runs = 10;
        c.repair = tracelab_engine::RepairMode::Off;
    })
    .await;
    let report = engine
        .investigate(InvestigateRequest {
            repo: repo.path().to_path_buf(),
            test_command: "python3 -m pytest -q -p no:cacheprovider test_time.py".into(),
            good: None,
            bad: None,
            issue_id: Some("T-1".into()),
        })
        .await
        .unwrap();
    assert_eq!(
        report.verdict,
        Verdict::EnvironmentDependent,
        "{}",
        report.to_markdown()
    );
    let winner = report.winner.clone().unwrap();
    let variant = winner
        .experiments
        .iter()
        .find(|e| e.step == Step::EnvironmentVariant)
        .expect("the variant's runs");
    assert!(
        variant.command.starts_with("TZ=")
            && variant
                .command
                .ends_with("python3 -m pytest -q -p no:cacheprovider test_time.py::test_stamp"),
        "{}",
        variant.command
    );
    let alone = winner
        .experiments
        .iter()
        .find(|e| e.step == Step::Isolation)
        .expect("the run alone in the default environment");
    assert_eq!(alone.outcome, tracelab_domain::experiment::Outcome::Fail);
}

#[tokio::test]
async fn bad_input_gives_one_line_errors() {
    let (engine, _) = engine(|_| {}).await;
    let not_repo = tempfile_dir();
    let req = InvestigateRequest {
        repo: not_repo.clone(),
        test_command: "python3 t.py".into(),
        good: None,
        bad: None,
        issue_id: None,
    };
    let err = engine.investigate(req).await.unwrap_err().error;
    assert!(
        err.message.contains("is not a git repository"),
        "{}",
        err.message
    );

    let s = scenarios::passing(2);
    let mut req = request(&s);
    req.bad = Some("no-such-branch".into());
    let err = engine.investigate(req).await.unwrap_err().error;
    assert_eq!(err.message.lines().count(), 1);
    assert!(
        err.message.contains("unknown revision \"no-such-branch\""),
        "{}",
        err.message
    );

    let mut req = request(&s);
    req.good = Some("--output=/tmp/x".into());
    assert!(
        engine
            .investigate(req)
            .await
            .unwrap_err()
            .error
            .message
            .contains("unknown revision")
    );

    let mut req = request(&s);
    req.test_command = "bash -c 'exit 1'".into();
    assert!(
        engine
            .investigate(req)
            .await
            .unwrap_err()
            .error
            .message
            .contains("not allowlisted")
    );
    std::fs::remove_dir_all(not_repo).unwrap();
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tracelab-not-a-repo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn a_missing_test_program_blocks_the_investigation() {
    let s = scenarios::passing(2);
    let (engine, store) = engine(|c| c.allowlist.programs.push("no-such-runner".into())).await;
    let mut req = request(&s);
    req.test_command = "no-such-runner --all".into();
    let Aborted { id, error } = engine.investigate(req).await.unwrap_err();
    assert!(
        error.message.contains("program not found: no-such-runner"),
        "{}",
        error.message
    );
    assert_eq!(
        store.state(&id.unwrap()).await.unwrap(),
        Some(InvestigationState::Blocked)
    );
    assert_clean(&s, &[]);
}

#[tokio::test]
async fn a_hanging_test_is_killed_and_blocks_with_the_reason() {
    let mut s = scenarios::passing(2);
    s.repo.commit(
        "Hang",
        &[("test_hang.py", "import time\ntime.sleep(600)\n")],
    );
    let (engine, store) = engine(|c| c.command_timeout = Duration::from_secs(1)).await;
    let mut req = request(&s);
    req.test_command = "python3 test_hang.py".into();
    let started = std::time::Instant::now();
    let Aborted { id, error } = engine.investigate(req).await.unwrap_err();
    assert!(
        error.message.contains("timed out after 1 s"),
        "{}",
        error.message
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(
        store.state(&id.unwrap()).await.unwrap(),
        Some(InvestigationState::Blocked)
    );
    assert_clean(&s, &[]);
}

#[tokio::test]
async fn a_regression_that_fails_only_sometimes_is_found_with_a_confidence() {
    let s = scenarios::flaky_regression(12, 8, 0.6);
    let (engine, _) = engine(|c| c.good_miss_probability = 0.001).await;
    let report = engine.investigate(request(&s)).await.unwrap();
    assert_eq!(
        report.verdict,
        Verdict::Regression,
        "{}",
        report.to_markdown()
    );
    assert_eq!(report.culprit.unwrap().commit.commit, s.culprit.unwrap());
    let flaky = report.flaky.expect("the failure rate is reported");
    assert!(flaky.failures > 0 && flaky.failures < flaky.runs);
    let bisect = report.bisect.unwrap();
    assert!(
        bisect.confidence > 0.95 && bisect.confidence < 1.0,
        "confidence {}",
        bisect.confidence
    );
    let winner = report.winner.unwrap();
    let after = winner
        .experiments
        .iter()
        .find(|e| e.step == tracelab_domain::experiment::Step::RegressionAfter)
        .unwrap();
    assert!(
        after.effective_counts().runs >= 5,
        "a flaky failure needs several clean runs after the fix"
    );
}

/// The winner's patch, and the files it touches.
fn patched_files(report: &tracelab_domain::report::Report) -> Vec<String> {
    let patch = report
        .winner
        .as_ref()
        .and_then(|w| w.patch.clone())
        .unwrap_or_default();
    tracelab_domain::patch::parse(&patch)
        .unwrap()
        .into_iter()
        .map(|f| f.new_path)
        .collect()
}

#[tokio::test]
async fn a_culprit_whose_lines_were_rewritten_is_undone_by_the_words_it_wrote() {
    let s = scenarios::regression_rewritten_later(16, 5);
    let (engine, _) = engine(|_| {}).await;
    let report = engine.investigate(request(&s)).await.unwrap();
    assert_eq!(report.verdict, Verdict::Regression);
    let culprit = report.culprit.clone().expect("the culprit is reported");
    assert_eq!(culprit.commit.commit, s.culprit.clone().unwrap());
    assert!(culprit.verified, "{}", culprit.verification);
    let winner = report.winner.clone().unwrap();
    assert_eq!(winner.status, HypothesisStatus::Verified);
    assert!(
        winner.status_reason.contains("placed by the changed lines")
            && winner.status_reason.contains("`-` back to `+`"),
        "{}",
        winner.status_reason
    );
    // Only the culprit's words change; the later rewrite stays.
    let patch = winner.patch.unwrap();
    assert!(
        patch.contains("-    total = a - b\n+    total = a + b\n"),
        "{patch}"
    );
    assert_eq!(patched_files(&report), vec!["app.py"]);
    assert_eq!(
        tracelab_domain::patch::changed_line_count(&patch),
        2,
        "{patch}"
    );
}

#[tokio::test]
async fn a_culprit_whose_revert_conflicts_is_fixed_at_symbol_level() {
    let s = scenarios::carried_regression(24, 6);
    // `git revert` of the culprit conflicts at the bad revision.
    let wt = tempfile::tempdir().unwrap();
    let wt_path = wt.path().join("wt");
    s.repo.git(&[
        "worktree",
        "add",
        "-q",
        "--detach",
        wt_path.to_str().unwrap(),
        &s.head,
    ]);
    let revert = std::process::Command::new("git")
        .arg("-C")
        .arg(&wt_path)
        .args(["revert", "--no-commit", s.culprit.as_deref().unwrap()])
        .output()
        .unwrap();
    assert!(!revert.status.success(), "the textual revert must conflict");
    s.repo
        .git(&["worktree", "remove", "--force", wt_path.to_str().unwrap()]);

    let (engine, _) = engine(|_| {}).await;
    let report = engine.investigate(request(&s)).await.unwrap();
    assert_eq!(report.verdict, Verdict::Regression);
    let culprit = report.culprit.clone().expect("the culprit is reported");
    assert_eq!(culprit.commit.commit, s.culprit.clone().unwrap());
    assert!(culprit.verified, "{}", culprit.verification);
    let winner = report.winner.clone().unwrap();
    assert_eq!(winner.status, HypothesisStatus::Verified);
    assert!(
        winner
            .status_reason
            .contains("symbol-level restore of py:app.add"),
        "{}",
        winner.status_reason
    );
    assert_eq!(patched_files(&report), vec!["app.py"]);
    // The later type hints on `scale` survive; `add` is back to its old body.
    let patch = winner.patch.unwrap();
    assert!(patch.contains("+    return a + b\n"), "{patch}");
    assert!(
        !patch
            .lines()
            .any(|l| (l.starts_with('+') || l.starts_with('-')) && l.contains("scale")),
        "{patch}"
    );
    // Restoring `add` also undid the later type hints on it: the reviewer is told.
    assert!(
        winner.status_reason.contains("later"),
        "{}",
        winner.status_reason
    );
    assert_clean(&s, &["ai-debug/T-1-h1"]);
}

#[tokio::test]
async fn a_fix_never_edits_the_test_that_judges_it() {
    let s = scenarios::culprit_edits_its_test(12, 5);
    let (engine, _) = engine(|_| {}).await;
    let report = engine.investigate(request(&s)).await.unwrap();
    assert_eq!(report.verdict, Verdict::Regression);
    let culprit = report.culprit.clone().unwrap();
    assert_eq!(culprit.commit.commit, s.culprit.clone().unwrap());
    assert!(culprit.verified, "{}", culprit.verification);
    assert_eq!(patched_files(&report), vec!["app.py"]);
    let reason = &report.winner.as_ref().unwrap().status_reason;
    assert!(
        reason.contains("hunks in test files were dropped") && reason.contains("test_app.py"),
        "{reason}"
    );
}

#[tokio::test]
async fn probes_run_the_bad_revisions_test_on_older_sources() {
    let s = scenarios::old_bug_new_test(14, 4);
    let (engine, _) = engine(|_| {}).await;
    let report = engine.investigate(request(&s)).await.unwrap();
    let culprit = report.culprit.clone().unwrap();
    assert_eq!(culprit.commit.commit, s.culprit.clone().unwrap());
    assert!(culprit.verified, "{}", culprit.verification);
    assert_eq!(patched_files(&report), vec!["app.py"]);
    let bisect = report.bisect.unwrap();
    assert_eq!(bisect.oracle_files, vec!["test_app.py"]);
    assert_eq!(
        bisect.oracle,
        tracelab_domain::report::OracleMode::TestsAtBad
    );
}

#[tokio::test]
async fn with_tests_at_revision_a_commit_changing_only_the_test_is_named_but_not_blamed() {
    let s = scenarios::old_bug_new_test(14, 4);
    let (engine, _) = engine(|c| c.tests_at_revision = true).await;
    let report = engine.investigate(request(&s)).await.unwrap();
    // Under each revision's own tests the search ends at the newest commit,
    // which only extends the test: that is where the failure became
    // visible, not a regression. The search's answer stays in the report.
    assert_eq!(report.verdict, Verdict::Deterministic);
    assert!(report.culprit.is_none(), "{:?}", report.culprit);
    let bisect = report.bisect.clone().unwrap();
    assert_eq!(bisect.culprit.as_ref().unwrap().commit, s.head);
    assert!(bisect.culprit_changes_only_tests);
    // No revert is proposed for it (its only change is the oracle), so the
    // hypothesis slot goes to the other agents.
    assert!(
        report
            .hypotheses
            .iter()
            .all(|h| h.kind != HypothesisKind::Revert)
    );
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("changes test files only")),
        "{:?}",
        report.notes
    );
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["bisect"]["culprit_changes_only_tests"], true);
    let md = report.to_markdown();
    assert!(md.contains("changes test files only"), "{md}");
    assert!(!md.contains("## Culprit\n"), "{md}");
}

#[tokio::test]
async fn a_flaky_good_revision_is_measured_not_an_error() {
    let s = scenarios::scheduled_flaky(3, 8);
    let (engine, _) = engine(|_| {}).await;
    let mut req = request(&s);
    req.good = Some(s.root.clone());
    let report = engine.investigate(req).await.unwrap();
    assert_eq!(report.verdict, Verdict::Flaky);
    assert!(report.culprit.is_none());
    let bisect = report.bisect.unwrap();
    let at_good = bisect.good_flaky.expect("the rate at good is reported");
    assert!(at_good.failures > 0 && at_good.runs >= at_good.failures);
    // The same rates at both: the comparison ran both to 50 runs at least,
    // and the rate at bad the report gives counts them all.
    let at_bad = bisect.bad_flaky.expect("the rate at bad is reported");
    assert!(
        at_good.runs >= 50 && at_bad.runs >= 50,
        "{at_good:?} {at_bad:?}"
    );
    assert_eq!(report.flaky, Some(at_bad));
    assert!(
        bisect
            .note
            .unwrap_or_default()
            .contains("predates the good revision"),
    );
}

#[tokio::test]
async fn a_raised_failure_rate_is_a_flakiness_regression_with_its_commit() {
    // Half the runs fail before the culprit, 19 in 20 after it: any two
    // runs at good include a failure, so good is always seen to fail.
    let s = scenarios::flakiness_regression(12, 6, "PF", "PFFFFFFFFFFFFFFFFFFF");
    let (engine, _) = engine(|_| {}).await;
    let mut req = request(&s);
    req.good = Some(s.root.clone());
    let report = engine.investigate(req).await.unwrap();
    assert_eq!(report.verdict, Verdict::FlakinessRegression);
    let culprit = report.culprit.clone().unwrap();
    assert_eq!(culprit.commit.commit, s.culprit.clone().unwrap());
    let bisect = report.bisect.unwrap();
    let (good, bad) = (bisect.good_flaky.unwrap(), report.flaky.unwrap());
    assert!(good.failure_rate < bad.failure_rate, "{good:?} {bad:?}");
    assert_eq!(bisect.bad_flaky, Some(bad));
    // The answer's ends were re-tested before it was believed.
    let note = bisect.note.clone().unwrap_or_default();
    assert!(
        note.contains("re-tested with a test ten times stricter")
            && note.contains("culprit")
            && note.contains("the high rate"),
        "{note}"
    );
    assert!(bisect.confidence >= 0.999, "{}", bisect.confidence);
    assert!(
        bisect
            .probes
            .iter()
            .any(|p| p.revision == culprit.commit.commit && p.round == bisect.rounds),
        "the re-test is in the search's trail: {:?}",
        bisect.probes
    );
    // The revert brings the rate back to one run in two, not to zero: it
    // is judged between the two rates, and verified.
    assert!(culprit.verified, "{}", culprit.verification);
    assert!(
        culprit
            .verification
            .contains("back to the rate before the culprit"),
        "{}",
        culprit.verification
    );
}

/// Progress lines, kept in order.
#[derive(Default)]
struct Recorded(std::sync::Mutex<Vec<String>>);

impl tracelab_engine::Progress for Recorded {
    fn report(&self, line: &str) {
        self.0.lock().unwrap().push(line.to_string());
    }
}

impl Recorded {
    fn position(&self, prefix: &str) -> Option<usize> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .position(|l| l.starts_with(prefix))
    }
}

#[tokio::test]
async fn the_culprit_search_starts_at_the_first_failure() {
    let s = scenarios::carried_regression(16, 7);
    let (mut engine, _) = engine(|_| {}).await;
    let progress = Arc::new(Recorded::default());
    engine.progress = progress.clone();
    let report = engine.investigate(request(&s)).await.unwrap();
    assert_eq!(report.verdict, Verdict::Regression);
    assert_eq!(report.culprit.unwrap().commit.commit, s.culprit.unwrap());
    let search = progress.position("culprit search round").expect("a search");
    let classified = progress
        .position("the failure is Deterministic")
        .expect("a classification");
    assert!(
        search < classified,
        "the search waited for the classification: {:?}",
        progress.0.lock().unwrap()
    );
    // The re-runs stopped early: the revert's 3 clean runs confirm the
    // failure is deterministic, instead of 17 failures in a row. The
    // search's failing probes after the culprit count among the failures in
    // a row, so fewer than 4 runs at bad may do.
    let runs = report.reproduction.clone().unwrap().counts.unwrap();
    assert!(runs.runs == runs.failures && runs.runs <= 4, "{runs:?}");
    let confirmed = report
        .notes
        .iter()
        .find(|n| n.contains("deterministic, confirmed by the fix"))
        .unwrap_or_else(|| panic!("{:?}", report.notes));
    if runs.runs < 4 {
        assert!(
            confirmed.contains("at revisions the search probed after the culprit"),
            "{confirmed}"
        );
    }
    // 3 clean runs of the regression test after the fix: 2 alone and one
    // within the whole test command's clean run (exit code 0).
    let winner = report.winner.unwrap();
    let after: u32 = winner
        .experiments
        .iter()
        .filter(|e| e.step == Step::RegressionAfter)
        .map(|e| e.effective_counts().passes())
        .sum();
    assert_eq!(after, 2, "the fix's clean runs alone");
    let suite = winner
        .experiments
        .iter()
        .find(|e| e.step == Step::ExistingTests)
        .unwrap();
    assert_eq!(suite.exit_code, Some(0), "{suite:?}");
    assert!(
        winner
            .status_reason
            .contains("passed after it (2 runs and once within the existing tests)"),
        "{}",
        winner.status_reason
    );
}

#[tokio::test]
async fn the_searchs_failing_probes_count_among_the_failures_a_fix_confirms() {
    // The culprit is early in a long history: the walk back for a good
    // revision and the search probe many revisions after it, each failing
    // once. Those runs count among the failures in a row, so the re-runs at
    // bad stop without making 4 runs of their own.
    let s = scenarios::carried_regression(40, 3);
    let (mut engine, _) = engine(|_| {}).await;
    let progress = Arc::new(Recorded::default());
    engine.progress = progress.clone();
    let report = engine.investigate(request(&s)).await.unwrap();
    assert_eq!(report.verdict, Verdict::Regression);
    assert_eq!(report.culprit.unwrap().commit.commit, s.culprit.unwrap());
    let runs = report.reproduction.clone().unwrap().counts.unwrap();
    assert!(runs.runs == runs.failures && runs.runs < 4, "{runs:?}");
    let confirmed = report
        .notes
        .iter()
        .find(|n| n.contains("deterministic, confirmed by the fix"))
        .unwrap_or_else(|| panic!("{:?}", report.notes));
    assert!(
        confirmed.contains("at revisions the search probed after the culprit"),
        "{confirmed}"
    );
    let lines = progress.0.lock().unwrap().clone();
    assert!(
        lines.iter().any(|l| l.contains(
            "at revisions the search probed after the culprit) and a culprit: the re-runs stop"
        )),
        "{lines:?}"
    );
}

#[tokio::test]
async fn without_confirmation_by_the_fix_the_sequential_test_decides_alone() {
    let s = scenarios::carried_regression(16, 7);
    let (engine, _) = engine(|c| c.confirm_by_fix_after = 0).await;
    let report = engine.investigate(request(&s)).await.unwrap();
    assert_eq!(report.verdict, Verdict::Regression);
    assert!(report.reproduction.unwrap().counts.unwrap().runs >= 17);
    assert!(
        !report
            .notes
            .iter()
            .any(|n| n.contains("confirmed by the fix")),
        "{:?}",
        report.notes
    );
}

#[tokio::test]
async fn a_culprit_whose_fix_is_rejected_gets_the_full_reproduction() {
    // The revert fixes the failing test and breaks a newer one: no fix
    // confirms the first 4 failures, so the re-runs go on to 17.
    let s = scenarios::regression_later_work_depends_on(10, 3);
    let (engine, _) = engine_on(SYSTEM_PATH.into(), |c| {
        c.repair = tracelab_engine::RepairMode::Off
    })
    .await;
    let report = engine.investigate(request(&s)).await.unwrap();
    assert_eq!(
        report.verdict,
        Verdict::Regression,
        "{}",
        serde_json::to_string_pretty(&report).unwrap()
    );
    let culprit = report.culprit.clone().expect("the culprit is kept");
    assert_eq!(culprit.commit.commit, s.culprit.clone().unwrap());
    assert!(!culprit.verified, "{culprit:?}");
    assert!(report.winner.is_none());
    let runs = report.reproduction.clone().unwrap().counts.unwrap();
    assert!(runs.runs >= 17 && runs.failures == runs.runs, "{runs:?}");
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("for the culprit's fix, which was not verified")),
        "{:?}",
        report.notes
    );
}

#[tokio::test]
async fn an_early_search_on_a_flaky_failure_is_judged_again_with_the_measured_rate() {
    // Never fails before the culprit, one run in two after it: the early
    // search (one pass = good) can misjudge a bad revision; the search under
    // the measured rate must still name the culprit.
    let s = scenarios::flakiness_regression(12, 5, "P", "PF");
    let (mut engine, _) = engine(|_| {}).await;
    let progress = Arc::new(Recorded::default());
    engine.progress = progress.clone();
    let report = engine.investigate(request(&s)).await.unwrap();
    assert_eq!(report.verdict, Verdict::Regression, "{:?}", report.notes);
    assert_eq!(report.culprit.unwrap().commit.commit, s.culprit.unwrap());
    let flaky = report.flaky.expect("the rate is reported");
    assert!((0.3..=0.7).contains(&flaky.failure_rate), "{flaky:?}");
    let classified = progress.position("the failure is Flaky").unwrap();
    let lines = progress.0.lock().unwrap();
    assert!(
        lines[classified..]
            .iter()
            .any(|l| l.starts_with("culprit search round")),
        "the search was not judged again under the flaky model: {lines:?}"
    );
}

#[tokio::test]
async fn a_test_file_the_good_source_cannot_run_falls_back_to_each_revisions_tests() {
    let s = scenarios::test_uses_newer_api(14, 3, 8);
    let (with_good, _) = engine(|_| {}).await;
    let mut req = request(&s);
    req.good = Some(s.root.clone());
    let report = with_good.investigate(req).await.unwrap();
    assert_eq!(report.verdict, Verdict::Regression, "{:?}", report.notes);
    let culprit = report.culprit.clone().unwrap();
    assert_eq!(culprit.commit.commit, s.culprit.clone().unwrap());
    assert!(culprit.verified, "{}", culprit.verification);
    let bisect = report.bisect.clone().unwrap();
    assert_eq!(
        bisect.oracle,
        tracelab_domain::report::OracleMode::TestsAtRevision
    );
    let note = bisect.oracle_note.expect("the fallback is explained");
    assert!(note.contains("test_app.py"), "{note}");
    assert!(report.notes.iter().any(|n| n == &note));
    assert_eq!(patched_files(&report), vec!["app.py".to_string()]);

    // Without --good, a walk back that finds only revisions the test file
    // cannot run on (the API came in commit 1, the bug in commit 2) falls
    // back the same way and judges the root good.
    let early = scenarios::test_uses_newer_api(14, 1, 2);
    let (walking_back, _) = engine(|_| {}).await;
    let report = walking_back.investigate(request(&early)).await.unwrap();
    assert_eq!(
        report.culprit.unwrap().commit.commit,
        early.culprit.clone().unwrap()
    );
    assert!(report.bisect.unwrap().oracle_note.is_some());
}

/// The scenario's commits, oldest first.
fn commits(s: &Scenario) -> Vec<String> {
    s.repo
        .git(&["rev-list", "--reverse", "HEAD"])
        .lines()
        .map(str::to_string)
        .collect()
}

/// The test at `--good` runs beside the first run at bad, with the bad
/// revision's test file laid over it; where that file cannot run on good's
/// source, good's own tests run only if the answer leans on good.
#[tokio::test]
async fn the_good_revision_runs_beside_the_first_run_at_bad() {
    let s = scenarios::test_uses_newer_api(14, 3, 8);
    let (mut engine, _) = engine(|_| {}).await;
    let progress = Arc::new(Recorded::default());
    engine.progress = progress.clone();
    let mut req = request(&s);
    req.good = Some(s.root.clone());
    let report = engine.investigate(req).await.unwrap();
    assert_eq!(report.culprit.unwrap().commit.commit, s.culprit.unwrap());
    // The report says what was not run.
    let note = report.bisect.unwrap().oracle_note.unwrap();
    assert!(note.contains("own tests were not run"), "{note}");
    let lines = progress.0.lock().unwrap().clone();
    let beside = progress
        .position("probing the good revision")
        .unwrap_or_else(|| panic!("{lines:#?}"));
    assert!(lines[beside].contains("test_app.py"), "{}", lines[beside]);
    let first = progress.position("reproduction: ").unwrap();
    assert!(beside < first, "{lines:#?}");
    assert_eq!(
        lines[first],
        "reproduction: 1 runs, 1 failed with the failure under investigation"
    );
    // The culprit's parent was probed good: good's own tests never ran.
    assert!(
        lines
            .iter()
            .any(|l| l.contains("own tests were not run: the answer does not lean on it")),
        "{lines:#?}"
    );
    assert!(
        progress.position("the answer leans on").is_none(),
        "{lines:#?}"
    );
}

#[tokio::test]
async fn an_answer_that_leans_on_the_good_revision_probes_its_own_tests() {
    // The bug (commit 2) is older than the test of the new API (commit 5).
    let s = scenarios::test_uses_newer_api(12, 5, 2);
    let commits = commits(&s);
    assert_eq!(commits[2], s.culprit.clone().unwrap());

    // Good is the culprit's parent: the search blames good's child, which
    // stands once good's own tests pass.
    let (mut first, _) = engine(|_| {}).await;
    let progress = Arc::new(Recorded::default());
    first.progress = progress.clone();
    let mut req = request(&s);
    req.good = Some(commits[1].clone());
    let report = first.investigate(req).await.unwrap();
    let culprit = report
        .culprit
        .clone()
        .unwrap_or_else(|| panic!("{:?}", report.notes));
    assert_eq!(culprit.commit.commit, commits[2]);
    assert!(culprit.verified, "{}", culprit.verification);
    assert!(
        progress
            .position("the answer leans on the good revision")
            .is_some(),
        "{:#?}",
        progress.0.lock().unwrap()
    );

    // Good has the bug already: its own tests fail with the failure. The
    // search alone would blame good's child; the check makes it the error
    // a failing --good gets.
    let (second, _) = engine(|_| {}).await;
    let mut req = request(&s);
    req.good = Some(commits[3].clone());
    let Aborted { error, .. } = second.investigate(req).await.unwrap_err();
    assert_good_also_fails(&error);
}

#[tokio::test]
async fn a_bug_with_no_culprit_is_repaired_by_a_template_and_proven() {
    let s = scenarios::bug_since_the_first_commit(6);
    let (engine, _) = engine_on(SYSTEM_PATH.into(), |_| {}).await;
    let report = engine.investigate(request(&s)).await.unwrap();
    assert_eq!(report.verdict, Verdict::Deterministic);
    assert!(report.culprit.is_none());
    let winner = report.winner.clone().expect("a verified repair");
    assert_eq!(winner.kind, HypothesisKind::Patch);
    assert_eq!(
        winner.status,
        HypothesisStatus::Verified,
        "{}",
        winner.status_reason
    );
    assert_eq!(patched_files(&report), vec!["app.py"]);
    let patch = winner.patch.clone().unwrap();
    assert!(patch.contains("-    end = start + size - 1"), "{patch}");
    // Screening is recorded, and the neighbours in the failing test's file ran.
    let detail = winner.detail.clone().unwrap();
    let screened = detail["screening"]["screened"].as_array().unwrap();
    assert!(!screened.is_empty());
    assert!(screened.iter().any(|c| c["outcome"] == "pass"));
    let neighbours = winner
        .experiments
        .iter()
        .find(|e| {
            e.note
                .as_deref()
                .is_some_and(|n| n.contains("naming the patched function"))
        })
        .expect("the neighbour tests ran");
    assert!(
        neighbours.command.ends_with("test_app.py"),
        "{}",
        neighbours.command
    );
    assert_eq!(
        neighbours.outcome,
        tracelab_domain::experiment::Outcome::Pass
    );
    let md = report.to_markdown();
    assert!(md.contains("Source: repair template `off_by_one`"), "{md}");
    assert!(md.contains("Tests that judged the fix:"), "{md}");
    assert_clean(&s, &["ai-debug/T-1-h1"]);
}

#[tokio::test]
async fn with_repair_off_the_same_bug_is_only_located() {
    let s = scenarios::bug_since_the_first_commit(6);
    let (engine, _) = engine_on(SYSTEM_PATH.into(), |c| {
        c.repair = tracelab_engine::RepairMode::Off
    })
    .await;
    let report = engine.investigate(request(&s)).await.unwrap();
    assert_eq!(report.verdict, Verdict::Deterministic);
    assert!(report.winner.is_none());
    assert!(
        report
            .hypotheses
            .iter()
            .all(|h| h.kind != HypothesisKind::Patch)
    );
    assert!(report.suspects.iter().any(|s| s.symbol.ends_with("window")));
}

#[tokio::test]
async fn a_repair_that_passes_the_failing_test_but_breaks_its_neighbour_is_rejected() {
    let s = scenarios::overfitting_trap(4);
    let (engine, _) = engine_on(SYSTEM_PATH.into(), |_| {}).await;
    let report = engine.investigate(request(&s)).await.unwrap();
    assert_eq!(report.verdict, Verdict::Deterministic);
    assert!(report.winner.is_none(), "{:?}", report.winner);
    let repair = report
        .hypotheses
        .iter()
        .find(|h| h.kind == HypothesisKind::Patch)
        .expect("the screened candidate was tried");
    assert_eq!(
        repair.status,
        HypothesisStatus::Rejected,
        "{}",
        repair.status_reason
    );
    assert!(
        repair.status_reason.contains("existing tests fail"),
        "{}",
        repair.status_reason
    );
    let broken = repair
        .experiments
        .iter()
        .find(|e| {
            e.note
                .as_deref()
                .is_some_and(|n| n.contains("breaks tests beside"))
        })
        .expect("the neighbour run that caught it");
    assert!(
        broken
            .note
            .as_deref()
            .unwrap()
            .contains("test_window_from_the_start"),
        "{:?}",
        broken.note
    );
    assert_clean(&s, &[]);
}

#[tokio::test]
async fn a_culprit_whose_revert_breaks_later_work_is_repaired_after_it() {
    // Both reverts drop what a newer test needs: the repair templates run
    // after them and fix the off-by-one the culprit brought.
    let s = scenarios::regression_entangled_with_later_work(8, 2);
    let (engine, _) = engine_on(SYSTEM_PATH.into(), |_| {}).await;
    let report = engine.investigate(request(&s)).await.unwrap();
    let culprit = report.culprit.clone().expect("the culprit is kept");
    assert_eq!(culprit.commit.commit, s.culprit.clone().unwrap());
    assert!(!culprit.verified, "{culprit:?}");
    let winner = report.winner.clone().expect("a repair wins");
    assert_eq!(winner.kind, HypothesisKind::Patch, "{:?}", report.notes);
    assert_eq!(winner.number, 2);
    assert_eq!(report.verdict, Verdict::Regression, "{:?}", report.notes);
    assert_eq!(patched_files(&report), vec!["app.py".to_string()]);
    // The culprit's own line, undone alone: the smallest honest edit.
    let detail = winner.detail.clone().unwrap_or_default();
    assert_eq!(detail["operator"], "restore_culprit_line", "{detail}");
    let patch = winner.patch.clone().unwrap_or_default();
    assert!(patch.contains("+    end = start + size\n"), "{patch}");
    assert!(
        patch.contains("step=1"),
        "the step parameter stays: {patch}"
    );
}

#[tokio::test]
async fn a_test_file_that_no_longer_collects_is_judged_by_that_file_alone() {
    // The culprit renames `add`, so `tests/test_calc.py` fails at collection
    // (pytest's `ERROR tests/test_calc.py`) while the other test file passes:
    // the regression test is that one file, not the whole command.
    let mut repo = tracelab_testkit::FixtureRepo::new();
    let calc_good = "def add(a, b):\n    return a + b\n";
    let calc_bad = "def plus(a, b):\n    return a + b\n";
    let test_calc = "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n";
    let test_other = "def test_truth():\n    assert True\n";
    let root = repo.commit(
        "Initial calculator",
        &[
            ("calc.py", calc_good),
            ("tests/test_calc.py", test_calc),
            ("tests/test_other.py", test_other),
        ],
    );
    let mut culprit = String::new();
    for i in 1..8 {
        if i == 4 {
            culprit = repo.commit("Rename add to plus", &[("calc.py", calc_bad)]);
        } else {
            let notes = format!("release notes, entry {i}\n");
            repo.commit(&format!("Update notes ({i})"), &[("NOTES.md", &notes)]);
        }
    }
    let test = "python3 -m pytest -q -p no:cacheprovider tests";
    let (engine, _) = engine_on(SYSTEM_PATH.into(), |_| {}).await;
    let report = engine
        .investigate(InvestigateRequest {
            repo: repo.path().to_path_buf(),
            test_command: test.into(),
            good: Some(root),
            bad: None,
            issue_id: Some("T-1".into()),
        })
        .await
        .unwrap();
    assert_eq!(report.verdict, Verdict::Regression, "{:?}", report.notes);
    let found = report.culprit.clone().expect("the culprit");
    assert_eq!(found.commit.commit, culprit);
    let winner = report.winner.clone().expect("the revert wins");
    assert_eq!(winner.status, HypothesisStatus::Verified);
    let isolated = "python3 -m pytest -q -p no:cacheprovider tests/test_calc.py";
    for step in [Step::RegressionBefore, Step::RegressionAfter] {
        let e = winner
            .experiments
            .iter()
            .find(|e| e.step == step)
            .unwrap_or_else(|| panic!("no {step:?}"));
        assert_eq!(e.command, isolated, "{step:?}");
    }
}

#[tokio::test]
async fn re_runs_that_stopped_for_a_fix_that_fails_go_on_and_find_the_failure_flaky() {
    // The failure fails its first runs, the search names the culprit, and
    // the re-runs at bad stop at 4 for the fix; every revert breaks a newer
    // test, so the re-runs go on, see passes, and the failure is flaky: the
    // first revert's result is set aside and the search runs again under
    // the measured rate.
    let s = scenarios::regression_turning_flaky_without_a_fix(10, 3);
    let (mut engine, _) = engine_on(SYSTEM_PATH.into(), |c| {
        c.repair = tracelab_engine::RepairMode::Off
    })
    .await;
    let progress = Arc::new(Recorded::default());
    engine.progress = progress.clone();
    let report = engine.investigate(request(&s)).await.unwrap();
    let lines = progress.0.lock().unwrap().clone();
    let stopped = lines
        .iter()
        .position(|l| l.contains("and a culprit: the re-runs stop"))
        .unwrap_or_else(|| panic!("the re-runs did not stop for the fix: {lines:?}"));
    let finishing = progress
        .position("no verified fix confirms the failures")
        .unwrap_or_else(|| panic!("the re-runs were not finished: {lines:?}"));
    let flaky_at = progress
        .position("the failure is Flaky")
        .unwrap_or_else(|| panic!("the failure was not found flaky: {lines:?}"));
    assert!(stopped < finishing && finishing < flaky_at, "{lines:?}");
    assert!(
        lines[flaky_at..]
            .iter()
            .any(|l| l.starts_with("culprit search round")),
        "the search did not run again under the measured rate: {lines:?}"
    );
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("for the culprit's fix, which was not verified")),
        "{:?}",
        report.notes
    );
    assert!(
        !report
            .notes
            .iter()
            .any(|n| n.contains("confirmed by the fix")),
        "{:?}",
        report.notes
    );
    let flaky = report.flaky.expect("the measured rate is reported");
    assert!(
        flaky.failure_rate > 0.0 && flaky.failure_rate < 1.0,
        "{flaky:?}"
    );
    let culprit = report.culprit.clone().expect("the culprit is kept");
    assert_eq!(culprit.commit.commit, s.culprit.clone().unwrap());
    assert!(!culprit.verified, "{culprit:?}");
    // No fix is verified: what is proven is that the test is flaky at bad.
    let winner = report.winner.clone().expect("the flaky hypothesis");
    assert_eq!(winner.kind, HypothesisKind::Flaky, "{winner:?}");
}

#[tokio::test]
async fn a_culprit_file_rewritten_since_is_left_out_of_its_revert_and_named() {
    // The culprit changes a module constant and the CI workflow; a later
    // commit rewrites the workflow, so the whole revert conflicts and the
    // workflow's lines are nowhere to be found. The constant's line is
    // reverted alone, the workflow is named as left as it is, and the
    // contract verifies the result.
    let mut repo = tracelab_testkit::FixtureRepo::new();
    let app =
        |offset: u32| format!("OFFSET = {offset}\n\n\ndef add(a, b):\n    return a + b + OFFSET\n");
    let test_app = "from app import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n";
    let ci = "name: ci\non: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - run: pytest\n";
    repo.commit(
        "Adder",
        &[
            ("app.py", &app(0)),
            ("test_app.py", test_app),
            (".github/workflows/ci.yml", ci),
        ],
    );
    let mut culprit = String::new();
    for i in 1..8 {
        if i == 3 {
            let linted = format!("{ci}      - run: flake8\n");
            culprit = repo.commit(
                "Calibrate the adder; lint in CI",
                &[("app.py", &app(1)), (".github/workflows/ci.yml", &linted)],
            );
        } else if i == 5 {
            let rewritten = "name: checks\non: [push, pull_request]\njobs:\n  all:\n    runs-on: ubuntu-24.04\n    steps:\n      - run: make check\n";
            repo.commit("Rewrite CI", &[(".github/workflows/ci.yml", rewritten)]);
        } else {
            let notes = format!("release notes, entry {i}\n");
            repo.commit(&format!("Update notes ({i})"), &[("NOTES.md", &notes)]);
        }
    }
    let (engine, _) = engine_on(SYSTEM_PATH.into(), |c| {
        c.repair = tracelab_engine::RepairMode::Off
    })
    .await;
    let report = engine
        .investigate(InvestigateRequest {
            repo: repo.path().to_path_buf(),
            test_command: "python3 -m pytest -q -p no:cacheprovider test_app.py".into(),
            good: None,
            bad: None,
            issue_id: Some("T-1".into()),
        })
        .await
        .unwrap();
    assert_eq!(report.verdict, Verdict::Regression, "{:?}", report.notes);
    assert_eq!(report.culprit.clone().unwrap().commit.commit, culprit);
    let winner = report.winner.clone().expect("the partial revert wins");
    assert_eq!(winner.status, HypothesisStatus::Verified);
    assert_eq!(patched_files(&report), vec!["app.py".to_string()]);
    assert!(
        winner
            .status_reason
            .contains("not reverted, left as at the bad revision: .github/workflows/ci.yml"),
        "{}",
        winner.status_reason
    );
}

#[tokio::test]
async fn the_failure_points_the_search_at_the_commit_that_changed_what_the_test_calls() {
    // 40 commits, all editing app.py; the failing test calls `add`, which
    // commit 29 broke: with two probes a round, the suspect and its parent
    // are probed together and the search ends in one round.
    let s = scenarios::regression_the_test_names(40, 29, None);
    let (engine, _) = engine_on(SYSTEM_PATH.into(), |c| c.parallelism = 2).await;
    let mut req = request(&s);
    req.good = Some(s.root.clone());
    let report = engine.investigate(req).await.unwrap();
    let culprit = s.culprit.as_deref().unwrap();
    assert_eq!(report.culprit.as_ref().unwrap().commit.commit, culprit);
    let bisect = report.bisect.as_ref().unwrap();
    assert_eq!(
        bisect.pointed_at[0].commit, culprit,
        "{:?}",
        bisect.pointed_at
    );
    assert!(bisect.pointed_at[0].share > 0.9, "{:?}", bisect.pointed_at);
    let search_rounds: Vec<u32> = bisect
        .probes
        .iter()
        .filter(|p| p.position.is_some() && !p.reused)
        .map(|p| p.round)
        .collect();
    assert!(
        search_rounds.iter().all(|r| *r == search_rounds[0]),
        "one round of the search: {:?}",
        bisect.probes
    );
    assert!(
        report.to_markdown().contains("pointed at"),
        "{}",
        report.to_markdown()
    );
    // No second round at bad: the first round's one failure there (good
    // ran on the other slot), the culprit's failing probe and the
    // verification's two runs of `test_add` alone at bad (narrower than the
    // test command; side by side on the pool's two slots) make the 4
    // failures in a row the fix's clean runs confirm.
    let runs = report.reproduction.clone().unwrap().counts.unwrap();
    assert_eq!((runs.runs, runs.failures), (1, 1), "{runs:?}");
    assert!(
        report.notes.iter().any(|n| n.contains(
            "confirmed by the fix: 4 failures in a row (1 at the bad revision, 1 at revisions the search probed after the culprit, 2 of the regression test alone at the bad revision before the fix)"
        )),
        "{:?}",
        report.notes
    );
    let winner = report.winner.as_ref().unwrap();
    let before: Vec<_> = winner
        .experiments
        .iter()
        .filter(|e| e.step == Step::RegressionBefore)
        .collect();
    assert_eq!(before.len(), 1, "{before:?}");
    assert!(
        before[0].command.contains("test_app.py::test_add"),
        "{before:?}"
    );
    let counts = before[0].effective_counts();
    assert_eq!((counts.runs, counts.failures), (2, 2), "{counts:?}");
}

#[tokio::test]
async fn a_misleading_focus_costs_rounds_never_the_answer() {
    // Commit 8 edits `add` harmlessly, commit 31 breaks it: the failure
    // points at both, and the search still ends at the one whose parent passes.
    let s = scenarios::regression_the_test_names(40, 31, Some(8));
    let (engine, _) = engine_on(SYSTEM_PATH.into(), |c| c.parallelism = 2).await;
    let mut req = request(&s);
    req.good = Some(s.root.clone());
    let report = engine.investigate(req).await.unwrap();
    let culprit = s.culprit.as_deref().unwrap();
    assert_eq!(report.culprit.as_ref().unwrap().commit.commit, culprit);
    let bisect = report.bisect.as_ref().unwrap();
    assert_eq!(bisect.pointed_at.len(), 2, "{:?}", bisect.pointed_at);
    assert!(bisect.pointed_at.iter().any(|p| p.commit == culprit));
    assert_eq!(bisect.confidence, 1.0);
}

#[tokio::test]
async fn judgements_that_contradict_each_other_are_searched_again_with_the_stricter_test() {
    // Half the runs fail before the culprit (3), 19 in 20 after it; but
    // commits 6 to 10 pass their first 4 runs (counted across the pool's
    // sandboxes): enough for the rate test to say "low" there, a probe
    // judged good beside an earlier one judged bad (3 to 5 lucky runs all
    // do). The search starts again with the stricter test, and the lucky
    // commits' later runs fail.
    let s = scenarios::flakiness_regression_with_luck(12, 3, 6, 4, ("PF", "PFFFFFFFFFFFFFFFFFFF"));
    let (engine, _) = engine(|_| {}).await;
    let mut req = request(&s);
    req.good = Some(s.root.clone());
    let report = engine.investigate(req).await.unwrap();
    assert_eq!(
        report.verdict,
        Verdict::FlakinessRegression,
        "{:?}",
        report.notes
    );
    let culprit = report.culprit.clone().unwrap();
    assert_eq!(culprit.commit.commit, s.culprit.clone().unwrap());
    let bisect = report.bisect.unwrap();
    let note = bisect.note.clone().unwrap_or_default();
    eprintln!("note: {note}\nprobes: {:?}", bisect.probes);
    assert!(
        note.contains("judgements contradicted each other"),
        "{note}"
    );
}
