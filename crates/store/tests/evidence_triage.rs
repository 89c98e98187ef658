//! `PgGroupStore::record_evidence`: the evidence row, the group count and
//! the policy's mark in one transaction, against a real PostgreSQL. A retry
//! of the same evidence id changes nothing but hands back the suggestion
//! the policy made, so a lost publish can be repeated.

mod common;

use tracelab_evidence::{Decision, GroupStore, Observation, Occurrence, Policy, Trigger};
use tracelab_store::groups::conformance;
use tracelab_store::{EvidenceOutcome, NewEvidence, PgGroupStore, PgOptions, Suggested};

fn occurrence(at: i64, commit: &str) -> Occurrence {
    conformance::occurrence(
        "stack:0123456789abcdef:aaaaaaaa",
        at,
        Some(commit),
        Some("main"),
    )
    .in_test("tests/test_x.py::test_a")
}

fn evidence(id: &str, occ: &Occurrence) -> NewEvidence {
    NewEvidence {
        id: id.into(),
        kind: "ci".into(),
        source: "github".into(),
        repository: Some("https://github.com/acme/shop".into()),
        commit: occ.commit.clone(),
        stack_signature: Some("0123456789abcdef".into()),
        error_signature: Some("fedcba9876543210".into()),
        group_key: occ.key.0.clone(),
        body: serde_json::json!({"test_id": occ.test_id, "language": "python"}),
        received_at: time::OffsetDateTime::from_unix_timestamp(occ.at).unwrap(),
        environment: Some(serde_json::json!({"os": "linux", "arch": "x86_64"})),
        profile: None,
    }
}

fn recorded(outcome: EvidenceOutcome) -> (tracelab_evidence::FailureGroup, Observation, Decision) {
    match outcome {
        EvidenceOutcome::Recorded {
            group,
            observation,
            decision,
            merged: None,
        } => (*group, observation, decision),
        other => panic!("expected new evidence, got {other:?}"),
    }
}

#[tokio::test]
async fn evidence_and_its_group_are_recorded_together_and_once() {
    let Some(url) = common::backend("TRACELAB_TEST_POSTGRES") else {
        return;
    };
    let options = PgOptions {
        schema: Some(common::unique_prefix("gev")),
        ..PgOptions::default()
    };
    let store = PgGroupStore::connect(&url, options).await.unwrap();
    let policy = Policy::default();
    let first = occurrence(1_000, "c1");

    // New on a protected branch: stored, counted, and marked for investigation.
    let (group, observation, decision) = recorded(
        store
            .record_evidence(
                &evidence("ev-1", &first),
                &first,
                &policy,
                &Trigger::Automatic,
                1_000,
            )
            .await
            .unwrap(),
    );
    assert_eq!(observation, Observation::New);
    let decision_first = decision.clone();
    assert!(
        matches!(decision, Decision::Investigate { .. }),
        "{decision:?}"
    );
    let stored = store.get(&first.key).await.unwrap().unwrap();
    assert_eq!(stored, group, "the mark is committed with the count");
    assert_eq!(stored.count, 1);

    // The same evidence again (a client retry, a redelivery): nothing changes.
    let again = store
        .record_evidence(
            &evidence("ev-1", &first),
            &first,
            &policy,
            &Trigger::Automatic,
            1_005,
        )
        .await
        .unwrap();
    let Decision::Investigate { reason } = &decision_first else {
        unreachable!()
    };
    assert_eq!(
        again,
        EvidenceOutcome::Seen {
            suggested: Some(Suggested {
                reason: reason.clone(),
                count: 1
            }),
            group_key: first.key.clone(),
        },
        "a retry gets the suggestion back to publish again"
    );
    assert_eq!(store.get(&first.key).await.unwrap().unwrap(), stored);

    // New evidence of the same group: a recurrence, investigated recently, so skipped.
    let second = occurrence(2_000, "c2");
    let (group, observation, decision) = recorded(
        store
            .record_evidence(
                &evidence("ev-2", &second),
                &second,
                &policy,
                &Trigger::Automatic,
                2_000,
            )
            .await
            .unwrap(),
    );
    assert_eq!(observation, Observation::Recurrence);
    assert!(matches!(decision, Decision::Skip { .. }), "{decision:?}");
    assert_eq!(group.count, 2);
    assert_eq!(store.get(&first.key).await.unwrap().unwrap().count, 2);
}
