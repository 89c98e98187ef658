//! The behaviour every [`InvestigationStore`] must have, as one suite that
//! each implementation's tests call (`tests/sqlite.rs`, `tests/postgres.rs`).
//! Each check panics with a message naming the broken rule.

use tracelab_domain::ErrorKind;
use tracelab_domain::audit::{AuditAction, PullRequestLink, Review};
use tracelab_domain::experiment::{Experiment, Outcome, RunCounts, Step};
use tracelab_domain::hypothesis::{AgentKind, Hypothesis, HypothesisKind, HypothesisStatus};
use tracelab_domain::ids::{HypothesisId, InvestigationId};
use tracelab_domain::ports::{HandOffStore, InvestigationStore};
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

/// An investigation created by `store` (its starter is the store's actor)
/// and moved to WAITING_FOR_REVIEW.
async fn waiting<S: InvestigationStore + ?Sized>(store: &S) -> InvestigationId {
    use InvestigationState::*;
    let id = InvestigationId::generate();
    store.create(&id, "/repo", "pytest").await.expect("create");
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
    id
}

fn review<'a>(approve: bool, reviewer: &'a str, forbid: bool) -> Review<'a> {
    Review {
        approve,
        reviewer,
        role: "reviewer",
        reason: Some("checked the revert"),
        forbid_self_approval: forbid,
    }
}

/// The [`HandOffStore`] rules, against a store whose `create` records the
/// starter `starter` (both stores: `local` unless `acting_as`). Needs no
/// other investigation to exist.
pub async fn run_hand_off<S: InvestigationStore + HandOffStore>(store: &S, starter: &str) {
    use InvestigationState::*;
    let id = waiting(store).await;
    let before = store
        .hand_off(&id)
        .await
        .unwrap()
        .expect("hand-off of a stored id");
    assert_eq!(
        before.started_by.as_deref(),
        Some(starter),
        "create records the starter"
    );
    assert_eq!(before.audit.len(), 1, "one audit row: started");
    assert_eq!(before.audit[0].action, AuditAction::Started);
    assert_eq!(before.audit[0].actor, starter);
    assert!(before.pull_request.is_none() && before.pull_request_error.is_none());

    // The four-eyes rule, when asked for.
    let own = store
        .review(&id, &review(true, starter, true))
        .await
        .expect_err("self-approval is refused when forbidden");
    assert_eq!(own.kind, ErrorKind::PermissionDenied, "{own}");
    assert_eq!(
        store.state(&id).await.unwrap(),
        Some(WaitingForReview),
        "a refused review changes nothing"
    );
    assert_eq!(store.hand_off(&id).await.unwrap().unwrap().audit.len(), 1);

    // A pull request before approval is a Conflict.
    let link = PullRequestLink {
        url: "https://github.com/acme/shop/pull/7".into(),
        number: 7,
        host: "github".into(),
    };
    let early = store
        .record_pull_request(&id, "bob", "reviewer", &link)
        .await
        .expect_err("no pull request before approval");
    assert_eq!(early.kind, ErrorKind::Conflict, "{early}");

    assert_eq!(
        store.review(&id, &review(true, "bob", true)).await.unwrap(),
        Approved
    );
    let again = store
        .review(&id, &review(false, "carol", true))
        .await
        .expect_err("a decided investigation cannot be reviewed again");
    assert_eq!(again.kind, ErrorKind::Conflict, "{again}");
    let transitions = store.transitions(&id).await.unwrap();
    let last = transitions.last().expect("the approval's transition");
    assert_eq!(last.to, Approved);
    assert_eq!(
        last.reason.as_deref(),
        Some("bob: checked the revert"),
        "the transition names the reviewer"
    );

    store
        .record_pull_request_failure(&id, "bob", "reviewer", "GitHub answered 502")
        .await
        .unwrap();
    let failed = store.hand_off(&id).await.unwrap().unwrap();
    assert_eq!(
        failed.pull_request_error.as_deref(),
        Some("GitHub answered 502")
    );
    assert!(failed.pull_request.is_none());

    let stored = store
        .record_pull_request(&id, "bob", "reviewer", &link)
        .await
        .unwrap();
    assert_eq!(stored, link);
    let other = PullRequestLink {
        number: 8,
        url: "https://github.com/acme/shop/pull/8".into(),
        ..link.clone()
    };
    assert_eq!(
        store
            .record_pull_request(&id, "carol", "admin", &other)
            .await
            .unwrap(),
        link,
        "the first pull request stays the investigation's"
    );
    let after = store.hand_off(&id).await.unwrap().unwrap();
    assert_eq!(after.pull_request, Some(link));
    assert!(
        after.pull_request_error.is_none(),
        "an opened pull request clears the last error"
    );
    let actions: Vec<AuditAction> = after.audit.iter().map(|e| e.action).collect();
    assert_eq!(
        actions,
        [
            AuditAction::Started,
            AuditAction::Approved,
            AuditAction::PullRequestFailed,
            AuditAction::PullRequestOpened
        ],
        "one row per recorded decision, oldest first"
    );
    assert_eq!(after.audit[1].actor, "bob");
    assert_eq!(after.audit[1].reason.as_deref(), Some("checked the revert"));
    assert!(after.audit.windows(2).all(|w| w[0].at <= w[1].at));

    // Rejection, and self-review when it is allowed.
    let second = waiting(store).await;
    assert_eq!(
        store
            .review(&second, &review(false, starter, false))
            .await
            .unwrap(),
        Rejected
    );
    let unknown = InvestigationId::generate();
    assert!(store.hand_off(&unknown).await.unwrap().is_none());
    let missing = store
        .review(&unknown, &review(true, "bob", true))
        .await
        .expect_err("unknown id");
    assert_eq!(missing.kind, ErrorKind::NotFound);
}
