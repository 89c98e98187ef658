//! The behaviour every [`InvestigationStore`] must have, as one suite that
//! each implementation's tests call (`tests/sqlite.rs`, `tests/postgres.rs`).
//! Each check panics with a message naming the broken rule.

use tracelab_domain::ErrorKind;
use tracelab_domain::experiment::{Experiment, Outcome, RunCounts, Step};
use tracelab_domain::hypothesis::{AgentKind, Hypothesis, HypothesisKind, HypothesisStatus};
use tracelab_domain::ids::{HypothesisId, InvestigationId};
use tracelab_domain::ports::InvestigationStore;
use tracelab_domain::report::Report;
use tracelab_domain::state::{InvestigationState, Transition};
use tracelab_domain::verdict::Verdict;

fn transition(from: InvestigationState, to: InvestigationState) -> Transition {
    Transition {
        from,
        to,
        at: time::OffsetDateTime::now_utc(),
        reason: None,
    }
}

/// A small but complete report for `id`.
pub fn sample_report(id: &InvestigationId) -> Report {
    let mut h = Hypothesis::new(
        HypothesisId::new(id, 1),
        1,
        AgentKind::GitHistory,
        HypothesisKind::Revert,
        "revert abc",
    );
    h.status = HypothesisStatus::Verified;
    h.patch = Some("diff --git a/a b/a\n".into());
    h.experiments.push(Experiment {
        step: Step::Reproduction,
        command: "python3 t.py".into(),
        revision: "abc".into(),
        exit_code: Some(1),
        duration_ms: 12,
        outcome: Outcome::Fail,
        output: "AssertionError".into(),
        sandbox: "local".into(),
        note: None,
        counts: Some(RunCounts {
            runs: 3,
            failures: 3,
            other: 0,
        }),
    });
    Report {
        id: id.clone(),
        state: InvestigationState::WaitingForReview,
        verdict: Verdict::Regression,
        culprit: None,
        flaky: None,
        hypotheses: vec![h.clone()],
        winner: Some(h),
        repository: "/repo".into(),
        test_command: "python3 t.py".into(),
        bad: "abc".into(),
        good: None,
        failure: Some("AssertionError".into()),
        reproduction: None,
        bisect: None,
        suspects: Vec::new(),
        notes: vec![],
        created_at: time::OffsetDateTime::now_utc(),
        duration_ms: 5,
        transitions: vec![],
    }
}

/// Runs every check against `store`, which must be empty.
pub async fn run(store: &dyn InvestigationStore) {
    use InvestigationState::*;
    let id = InvestigationId::generate();
    store
        .create(&id, "/repo", "python3 t.py")
        .await
        .expect("create");
    assert_eq!(
        store.state(&id).await.unwrap(),
        Some(Created),
        "a new investigation is CREATED"
    );
    let dup = store
        .create(&id, "/repo", "x")
        .await
        .expect_err("duplicate create must fail");
    assert_eq!(
        dup.kind,
        ErrorKind::Conflict,
        "duplicate create is a Conflict"
    );

    let path = [
        Created,
        ContextLoading,
        Investigating,
        Verifying,
        Arbitrating,
        WaitingForReview,
    ];
    for pair in path.windows(2) {
        store
            .transition(&id, &transition(pair[0], pair[1]))
            .await
            .expect("legal transition");
    }
    let stale = store
        .transition(&id, &transition(Created, ContextLoading))
        .await
        .expect_err("stale transition");
    assert_eq!(
        stale.kind,
        ErrorKind::Conflict,
        "a transition from a state the investigation is not in is a Conflict"
    );
    let illegal = store
        .transition(&id, &transition(WaitingForReview, Created))
        .await
        .expect_err("illegal transition");
    assert_eq!(
        illegal.kind,
        ErrorKind::Conflict,
        "an illegal transition is a Conflict"
    );
    assert_eq!(
        store.transitions(&id).await.unwrap().len(),
        5,
        "every transition is persisted once"
    );

    let missing = InvestigationId::generate();
    assert!(
        store.get(&missing).await.unwrap().is_none(),
        "unknown ids read as None"
    );
    let err = store
        .transition(&missing, &transition(Created, ContextLoading))
        .await
        .expect_err("unknown id");
    assert_eq!(err.kind, ErrorKind::NotFound);

    let report = sample_report(&id);
    store.save_report(&report).await.expect("save");
    store
        .save_report(&report)
        .await
        .expect("saving again is harmless");
    let back = store.get(&id).await.unwrap().expect("stored report");
    assert_eq!(
        back.hypotheses, report.hypotheses,
        "hypotheses and experiments round-trip"
    );
    assert_eq!(back.verdict, Verdict::Regression);
    assert_eq!(back.transitions.len(), 5);

    store
        .transition(&id, &transition(WaitingForReview, Approved))
        .await
        .expect("approve");
    assert_eq!(
        store.get(&id).await.unwrap().unwrap().state,
        Approved,
        "the state read back follows later transitions"
    );

    let second = InvestigationId::generate();
    store.create(&second, "/other", "pytest").await.unwrap();
    let listed = store.list(10).await.unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].id, second, "newest first");
    assert_eq!(listed[1].verdict, Some(Verdict::Regression));
    assert_eq!(
        store.list(1).await.unwrap().len(),
        1,
        "the limit is honoured"
    );
}
