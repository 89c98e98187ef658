//! Groups resolve when an investigation's fix is approved and reopen as a
//! regression when the failure returns (`PgGroupStore::resolve_investigation`),
//! against a real PostgreSQL.

mod common;

use tracelab_evidence::{GroupKey, GroupStatus, GroupStore, Observation, Policy, Trigger};
use tracelab_store::groups::{EvidenceOutcome, NewEvidence, conformance};
use tracelab_store::{PgGroupStore, PgOptions, PgStore};

async fn record(store: &PgGroupStore, id: &str, key: &str, at: i64) -> Observation {
    let occ = conformance::occurrence(key, at, Some(&format!("c{at}")), Some("feature/x"));
    let row = NewEvidence {
        id: id.into(),
        kind: "ci".into(),
        source: "github".into(),
        repository: None,
        commit: occ.commit.clone(),
        stack_signature: None,
        error_signature: None,
        group_key: key.into(),
        body: serde_json::json!({}),
        received_at: time::OffsetDateTime::from_unix_timestamp(at).unwrap(),
        environment: None,
        profile: None,
    };
    match store
        .record_evidence(&row, &occ, &Policy::default(), &Trigger::Automatic, at)
        .await
        .unwrap()
    {
        EvidenceOutcome::Recorded { observation, .. } => observation,
        other => panic!("expected new evidence, got {other:?}"),
    }
}

#[tokio::test]
async fn an_approved_fix_resolves_its_groups_and_a_return_is_a_regression() {
    let Some(url) = common::backend("TRACELAB_TEST_POSTGRES") else {
        return;
    };
    let options = PgOptions {
        schema: Some(common::unique_prefix("grs")),
        ..PgOptions::default()
    };
    let pool = PgStore::connect(&url, options)
        .await
        .unwrap()
        .pool()
        .clone();
    let store = PgGroupStore::new(pool.clone());
    record(&store, "e1", "stack:a", 100).await;
    record(&store, "e2", "stack:b", 110).await;
    record(&store, "e3", "stack:other", 120).await;
    sqlx::query(
        "INSERT INTO investigations (id, repository, test_command, state, created_at, updated_at) \
         VALUES ('inv-1', 'r', 't', 'APPROVED', now(), now())",
    )
    .execute(&pool)
    .await
    .unwrap();
    for e in ["e1", "e2"] {
        sqlx::query("INSERT INTO investigation_evidence (investigation_id, evidence_id) VALUES ('inv-1', $1)")
            .bind(e)
            .execute(&pool)
            .await
            .unwrap();
    }
    let resolved = store
        .resolve_investigation("inv-1", 200, Some("fix1".into()))
        .await
        .unwrap();
    let keys: Vec<&str> = resolved.iter().map(|g| g.key.0.as_str()).collect();
    assert_eq!(
        keys,
        ["stack:a", "stack:b"],
        "the investigation's groups only"
    );
    for key in ["stack:a", "stack:b"] {
        let g = store.get(&GroupKey(key.into())).await.unwrap().unwrap();
        assert_eq!(
            g.status,
            GroupStatus::Resolved {
                at: 200,
                commit: Some("fix1".into())
            }
        );
        assert_eq!(
            store.resolved_by(&g.key).await.unwrap().as_deref(),
            Some("inv-1")
        );
    }
    let other = store
        .get(&GroupKey("stack:other".into()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(other.status, GroupStatus::Open, "not the investigation's");
    // A repeat resolves nothing more and moves nothing.
    assert!(
        store
            .resolve_investigation("inv-1", 250, None)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .resolve_investigation("inv-none", 250, None)
            .await
            .unwrap()
            .is_empty()
    );

    // A late report of an older run: still resolved. The failure back later: a regression.
    assert_eq!(
        record(&store, "e4", "stack:a", 150).await,
        Observation::Recurrence
    );
    assert_eq!(
        record(&store, "e5", "stack:a", 300).await,
        Observation::Regression {
            resolved_at: 200,
            resolved_in: Some("fix1".into())
        }
    );
    let g = store
        .get(&GroupKey("stack:a".into()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((g.status, g.regressions), (GroupStatus::Open, 1));
}
