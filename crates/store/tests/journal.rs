//! The probe journal on a real PostgreSQL (`TRACELAB_TEST_POSTGRES`): what a
//! redelivered investigation resumes its culprit search from.

mod common;

use tracelab_domain::bisect::ProbeResult;
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::journal::{JournaledProbe, ProbeJournal};
use tracelab_domain::report::OracleMode;
use tracelab_store::InvestigationStore;

fn probe(revision: &str, oracle: OracleMode, result: ProbeResult, runs: u32) -> JournaledProbe {
    JournaledProbe {
        revision: revision.into(),
        oracle,
        result,
        runs,
        passes: if result == ProbeResult::Good { runs } else { 0 },
    }
}

#[tokio::test]
async fn judgements_are_kept_per_revision_and_oracle_and_a_later_one_replaces_an_earlier() {
    let Some((store, _, schema)) = common::pg_store("j").await else {
        return;
    };
    let id = InvestigationId::generate();
    store.create(&id, "/repo", "python3 t.py").await.unwrap();
    let other = InvestigationId::generate();
    store.create(&other, "/repo", "python3 t.py").await.unwrap();
    assert!(store.load(&id).await.unwrap().is_empty());

    let at_bad = OracleMode::TestsAtBad;
    store
        .record(&id, &probe("a1", at_bad, ProbeResult::Good, 1))
        .await
        .unwrap();
    store
        .record(&id, &probe("b2", at_bad, ProbeResult::Bad, 1))
        .await
        .unwrap();
    store
        .record(
            &id,
            &probe(
                "b2",
                OracleMode::TestsAtRevision,
                ProbeResult::Untestable,
                1,
            ),
        )
        .await
        .unwrap();
    store
        .record(&other, &probe("a1", at_bad, ProbeResult::Bad, 1))
        .await
        .unwrap();
    // The same revision judged again under the same oracle (a good probed
    // again under a stricter model): the later judgement stands.
    store
        .record(&id, &probe("a1", at_bad, ProbeResult::Good, 7))
        .await
        .unwrap();

    let mut loaded = store.load(&id).await.unwrap();
    loaded.sort_by(|x, y| (&x.revision, x.oracle as u8).cmp(&(&y.revision, y.oracle as u8)));
    assert_eq!(
        loaded,
        vec![
            probe("a1", at_bad, ProbeResult::Good, 7),
            probe("b2", at_bad, ProbeResult::Bad, 1),
            probe(
                "b2",
                OracleMode::TestsAtRevision,
                ProbeResult::Untestable,
                1
            ),
        ]
    );
    assert_eq!(
        store.load(&other).await.unwrap(),
        vec![probe("a1", at_bad, ProbeResult::Bad, 1)]
    );

    // A judgement of an investigation that is not stored is refused.
    let unknown = InvestigationId::generate();
    assert!(
        store
            .record(&unknown, &probe("c3", at_bad, ProbeResult::Bad, 1))
            .await
            .is_err()
    );

    // The classification: none until recorded, the later one stands.
    assert_eq!(store.classification(&id).await.unwrap(), None);
    let first = serde_json::json!({"decision": {"behaviour": "deterministic"}, "runs": 18});
    store.record_classification(&id, &first).await.unwrap();
    let second = serde_json::json!({"decision": {"behaviour": "flaky"}, "runs": 40});
    store.record_classification(&id, &second).await.unwrap();
    assert_eq!(store.classification(&id).await.unwrap(), Some(second));
    assert_eq!(store.classification(&other).await.unwrap(), None);
    common::drop_schema(&store, &schema).await;
}
