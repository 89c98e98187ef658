//! The fleet's hand-offs on a real PostgreSQL (`TRACELAB_TEST_POSTGRES`):
//! the windows a crash or a race used to leave open — an event lost between
//! a commit and its publish, a late verifier overwriting what a decision was
//! based on, two investigations started for one failure.

mod common;

use serde_json::json;
use std::time::Duration;
use tracelab_domain::ErrorKind;
use tracelab_domain::hypothesis::{AgentKind, Hypothesis, HypothesisKind, HypothesisStatus};
use tracelab_domain::ids::{HypothesisId, InvestigationId};
use tracelab_domain::state::InvestigationState;
use tracelab_store::conformance::sample_report;
use tracelab_store::{
    Created, InvestigationStore, NewInvestigation, OutboxMessage, PgStore, ProposalRecord, Recorded,
};

async fn store() -> Option<(PgStore, String)> {
    let (store, _, schema) = common::pg_store("p").await?;
    Some((store, schema))
}

async fn drop_schema(store: &PgStore, schema: &str) {
    common::drop_schema(store, schema).await
}

fn event(id: &InvestigationId, step: &str) -> OutboxMessage {
    OutboxMessage {
        id: format!("{id}.{step}"),
        subject: format!("t.investigations.{id}.{step}"),
        payload: step.as_bytes().to_vec(),
    }
}

async fn create(store: &PgStore, id: &InvestigationId, key: Option<&str>) -> Created {
    let request = json!({"repository": "/repo"});
    store
        .create_requested(&NewInvestigation {
            id,
            repository: "/repo",
            test_command: "python3 -m pytest -q t.py",
            request: &request,
            evidence: &[],
            dedupe_key: key,
            announce: &event(id, "requested"),
            started_by: "ci",
            role: "reviewer",
        })
        .await
        .unwrap()
}

/// An investigation in VERIFYING with one PENDING revert hypothesis.
async fn verifying(store: &PgStore) -> (InvestigationId, Hypothesis) {
    use InvestigationState::{ContextLoading, Investigating};
    let id = InvestigationId::generate();
    assert_eq!(create(store, &id, None).await, Created::New);
    store
        .advance(&id, InvestigationState::Created, ContextLoading, None)
        .await
        .unwrap();
    store
        .advance(&id, ContextLoading, Investigating, None)
        .await
        .unwrap();
    let h = Hypothesis::new(
        HypothesisId::new(&id, 1),
        1,
        AgentKind::GitHistory,
        HypothesisKind::Revert,
        "revert abc",
    );
    let record = ProposalRecord {
        classification: json!({}),
        proposal: json!({}),
        bad: "abc".into(),
        test_command: "python3 -m pytest -q t.py".into(),
        deadline: time::OffsetDateTime::now_utc(),
    };
    assert!(
        store
            .save_proposal(&id, &record, std::slice::from_ref(&h))
            .await
            .unwrap()
    );
    (id, h)
}

/// The report an arbiter makes at the deadline: `h` unverified, BLOCKED.
fn overdue_report(id: &InvestigationId, h: &Hypothesis) -> tracelab_domain::report::Report {
    let mut blocked = h.clone();
    blocked.status = HypothesisStatus::Blocked;
    blocked.status_reason = "no verifier finished it before the verification deadline".into();
    let mut report = sample_report(id);
    report.hypotheses = vec![blocked];
    report.winner = None;
    report
}

#[tokio::test]
async fn the_requested_event_is_stored_with_the_investigation_until_it_is_sent() {
    let Some((store, schema)) = store().await else {
        return;
    };
    let id = InvestigationId::generate();
    assert_eq!(create(&store, &id, None).await, Created::New);
    // Committed together: a crash now leaves the event for the relay.
    assert_eq!(store.outbox_len().await.unwrap(), 1);
    // Not yet due: its writer publishes it right after the commit.
    assert!(
        store
            .outbox_due(Duration::from_secs(60), 10)
            .await
            .unwrap()
            .is_empty()
    );
    let due = store.outbox_due(Duration::ZERO, 10).await.unwrap();
    assert_eq!(due, vec![event(&id, "requested")]);
    store.outbox_sent(&due[0].id).await.unwrap();
    assert_eq!(store.outbox_len().await.unwrap(), 0);
    drop_schema(&store, &schema).await;
}

#[tokio::test]
async fn a_verification_after_the_deadline_decision_is_kept_apart_as_late() {
    let Some((store, schema)) = store().await else {
        return;
    };
    let (id, h) = verifying(&store).await;
    let report = overdue_report(&id, &h);
    assert!(
        store
            .save_decision(&report, std::slice::from_ref(&h.id), &event(&id, "decided"))
            .await
            .unwrap()
    );
    // The row says what the decision said, and the decided event waits in
    // the outbox with the requested one.
    let stored = store.hypothesis(&h.id).await.unwrap().unwrap();
    assert_eq!(stored.status, HypothesisStatus::Blocked);
    assert_eq!(store.outbox_len().await.unwrap(), 2);

    // A verifier finishes after the deadline.
    let mut late = h.clone();
    late.status = HypothesisStatus::Verified;
    late.patch = Some("diff --git a/app.py b/app.py\n".into());
    let recorded = store
        .record_verification("verifier", "job-1", &late, "verifier-1", None)
        .await
        .unwrap();
    assert_eq!(recorded, Recorded::Late);
    let stored = store.hypothesis(&h.id).await.unwrap().unwrap();
    assert_eq!(stored.status, HypothesisStatus::Blocked, "not overwritten");
    assert_eq!(stored.patch, None);
    assert_eq!(store.late_verifications(&h.id).await.unwrap(), 1);
    // Its redelivery changes nothing.
    let again = store
        .record_verification("verifier", "job-1", &late, "verifier-1", None)
        .await
        .unwrap();
    assert_eq!(again, Recorded::AlreadyRecorded);
    assert_eq!(store.late_verifications(&h.id).await.unwrap(), 1);
    let state = InvestigationStore::state(&store, &id).await.unwrap();
    assert_eq!(state, Some(InvestigationState::WaitingForReview));
    drop_schema(&store, &schema).await;
}

#[tokio::test]
async fn a_result_stored_while_the_arbiter_decides_makes_the_decision_conflict() {
    let Some((store, schema)) = store().await else {
        return;
    };
    let (id, h) = verifying(&store).await;
    // The arbiter read h as PENDING; a verifier stores it before the save.
    let mut verified = h.clone();
    verified.status = HypothesisStatus::Verified;
    let recorded = store
        .record_verification("verifier", "job-1", &verified, "verifier-1", None)
        .await
        .unwrap();
    assert_eq!(recorded, Recorded::Stored);
    let err = store
        .save_decision(
            &overdue_report(&id, &h),
            std::slice::from_ref(&h.id),
            &event(&id, "decided"),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Conflict, "{err}");
    // Nothing of the stale decision was kept.
    let state = InvestigationStore::state(&store, &id).await.unwrap();
    assert_eq!(state, Some(InvestigationState::Verifying));
    let stored = store.hypothesis(&h.id).await.unwrap().unwrap();
    assert_eq!(stored.status, HypothesisStatus::Verified);
    assert_eq!(store.outbox_len().await.unwrap(), 1, "only `requested`");
    drop_schema(&store, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_dedupe_key_starts_one_investigation_however_many_race() {
    let Some((store, schema)) = store().await else {
        return;
    };
    let ids: Vec<InvestigationId> = (0..6).map(|_| InvestigationId::generate()).collect();
    let key = "group-policy:py:abc@0123abc";
    let mut racing = tokio::task::JoinSet::new();
    for (i, id) in ids.iter().enumerate() {
        let (store, id) = (store.clone(), id.clone());
        racing.spawn(async move { (i, create(&store, &id, Some(key)).await) });
    }
    let mut outcomes = racing.join_all().await;
    outcomes.sort_by_key(|(i, _)| *i);
    let outcomes: Vec<Created> = outcomes.into_iter().map(|(_, c)| c).collect();
    let new: Vec<usize> = outcomes
        .iter()
        .enumerate()
        .filter(|(_, c)| **c == Created::New)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(new.len(), 1, "{outcomes:?}");
    let winner = &ids[new[0]];
    for c in &outcomes {
        if let Created::Existing(existing) = c {
            assert_eq!(existing, winner);
        }
    }
    assert_eq!(store.outbox_len().await.unwrap(), 1, "one requested event");
    // Another key is another investigation.
    let other = InvestigationId::generate();
    assert_eq!(
        create(&store, &other, Some("group-policy:py:abc@4567def")).await,
        Created::New
    );
    drop_schema(&store, &schema).await;
}

#[tokio::test]
async fn a_follow_up_is_proposed_with_the_result_that_calls_for_it() {
    let Some((store, schema)) = store().await else {
        return;
    };
    let (id, h) = verifying(&store).await;
    let mut rejected = h.clone();
    rejected.status = HypothesisStatus::Rejected;
    let mut repair = h.clone();
    repair.number = h.number + 1;
    repair.id = tracelab_domain::ids::HypothesisId::new(&id, repair.number);
    repair.status = HypothesisStatus::Pending;
    let recorded = store
        .record_verification("verifier", "job-1", &rejected, "verifier-1", Some(&repair))
        .await
        .unwrap();
    assert_eq!(recorded, Recorded::Stored);
    let follow_up = store.hypothesis(&repair.id).await.unwrap().unwrap();
    assert_eq!(follow_up.status, HypothesisStatus::Pending);
    // The arbiter sees the investigation still waiting: the repair is pending.
    let input = store.arbitration_input(&id).await.unwrap().unwrap();
    let pending: Vec<_> = input
        .hypotheses
        .iter()
        .filter(|h| h.status == HypothesisStatus::Pending)
        .map(|h| h.number)
        .collect();
    assert_eq!(pending, vec![repair.number]);
    // A redelivery proposes nothing twice.
    let again = store
        .record_verification("verifier", "job-1", &rejected, "verifier-1", Some(&repair))
        .await
        .unwrap();
    assert_eq!(again, Recorded::AlreadyRecorded);
    let input = store.arbitration_input(&id).await.unwrap().unwrap();
    assert_eq!(input.hypotheses.len(), 2);
    drop_schema(&store, &schema).await;
}
