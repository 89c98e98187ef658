//! Similar-issue merging in `PgGroupStore::record_evidence` against a real
//! PostgreSQL: a new exact key joins the most similar group and the merge
//! is recorded (score, matched frames, the evidence's exact key); later
//! sightings follow it; undoing it sends the next sighting to a group of its
//! own for good; a store without merging, or a trace unlike any group, keeps
//! exact keys.

mod common;

use sqlx::Row;
use tracelab_evidence::similar::{FrameToken, SimilarityConfig, StackProfile};
use tracelab_evidence::{GroupKey, GroupStore, Observation, Occurrence, Policy, Trigger};
use tracelab_store::groups::{
    EvidenceOutcome, MergeRecord, MergingGroupStore, NewEvidence, Undo, conformance,
};
use tracelab_store::{PgGroupStore, PgOptions, PgStore};

fn profile(frames: &[&str]) -> StackProfile {
    StackProfile {
        frames: frames
            .iter()
            .map(|k| FrameToken {
                key: (*k).into(),
                in_app: true,
            })
            .collect(),
        exception_type: Some("KeyError".into()),
        message_words: vec!["email".into()],
        missing: Vec::new(),
        raised_in: None,
    }
}

/// Innermost first: the same bug reached from two entry points.
fn checkout(entry: &str) -> StackProfile {
    profile(&["orders.py|checkout", "api.py|handle", entry])
}

fn evidence(id: &str, occ: &Occurrence, profile: StackProfile) -> NewEvidence {
    NewEvidence {
        id: id.into(),
        kind: "ci".into(),
        source: "github".into(),
        repository: None,
        commit: occ.commit.clone(),
        stack_signature: None,
        error_signature: None,
        group_key: occ.key.0.clone(),
        body: serde_json::json!({}),
        received_at: time::OffsetDateTime::from_unix_timestamp(occ.at).unwrap(),
        environment: None,
        profile: Some(profile),
    }
}

async fn record(
    store: &PgGroupStore,
    id: &str,
    key: &str,
    at: i64,
    p: StackProfile,
) -> (GroupKey, Observation, Option<MergeRecord>) {
    let occ = conformance::occurrence(key, at, Some(&format!("c{at}")), Some("feature/x"));
    match store
        .record_evidence(
            &evidence(id, &occ, p),
            &occ,
            &Policy::default(),
            &Trigger::Automatic,
            at,
        )
        .await
        .expect("record evidence")
    {
        EvidenceOutcome::Recorded {
            group,
            observation,
            merged,
            ..
        } => (group.key, observation, merged),
        other => panic!("expected new evidence, got {other:?}"),
    }
}

/// A store on a fresh schema, and a pool on it to read the evidence rows.
async fn store(url: &str, merging: bool) -> (PgGroupStore, sqlx::PgPool) {
    let options = PgOptions {
        schema: Some(common::unique_prefix("gm")),
        ..PgOptions::default()
    };
    let pool = PgStore::connect(url, options.clone())
        .await
        .unwrap()
        .pool()
        .clone();
    let store = PgGroupStore::new(pool.clone());
    let store = if merging {
        store.merging(SimilarityConfig::default())
    } else {
        store
    };
    (store, pool)
}

#[tokio::test]
async fn similar_traces_merge_with_their_reason_and_the_merge_can_be_undone() {
    let Some(url) = common::backend("TRACELAB_TEST_POSTGRES") else {
        return;
    };
    let (s, pool) = store(&url, true).await;
    let (a, b) = ("stack:a:1", "stack:b:1");
    let (g, obs, merged) = record(&s, "ev-1", a, 1_000, checkout("main.py|main")).await;
    assert_eq!((g.0.as_str(), obs, merged), (a, Observation::New, None));

    // Another exact key, the same bug from another entry point: merged into a.
    let (g, obs, merged) = record(&s, "ev-2", b, 2_000, checkout("worker.py|run_job")).await;
    assert_eq!((g.0.as_str(), &obs), (a, &Observation::Recurrence));
    let merged = merged.expect("merged by similarity");
    assert_eq!(
        (merged.exact_key.0.as_str(), merged.group_key.0.as_str()),
        (b, a)
    );
    assert!(
        merged.score >= SimilarityConfig::default().threshold,
        "{merged:?}"
    );
    assert_eq!(
        merged
            .matched
            .iter()
            .map(|m| m.key.as_str())
            .collect::<Vec<_>>(),
        ["orders.py|checkout", "api.py|handle"]
    );
    assert_eq!(
        s.merges(&GroupKey(a.into())).await.unwrap(),
        std::slice::from_ref(&merged)
    );
    assert!(
        s.get(&GroupKey(b.into())).await.unwrap().is_none(),
        "no group of its own"
    );
    let row = sqlx::query("SELECT group_key, exact_key FROM evidence WHERE id = 'ev-2'")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(
        (row.get::<String, _>(0), row.get::<Option<String>, _>(1)),
        (a.to_owned(), Some(b.to_owned())),
        "the evidence keeps its exact key"
    );

    // Seen again: follows the merge, not recorded as a new merge.
    let (g, _, merged_again) = record(&s, "ev-3", b, 3_000, checkout("worker.py|run_job")).await;
    assert_eq!((g.0.as_str(), merged_again), (a, None));
    assert_eq!(s.get(&GroupKey(a.into())).await.unwrap().unwrap().count, 3);

    // Undone: b's two sightings and their evidence rows move to b's own
    // group, with who undid it and why; b is not merged again.
    let undo = Undo::new(3_500, "ana", "another entry point").unwrap();
    let undone = s
        .unmerge(&GroupKey(b.into()), &undo)
        .await
        .unwrap()
        .expect("undone");
    assert_eq!(undone.merge.moved, Some(2));
    assert_eq!(undone.from.count, 1);
    assert_eq!(undone.own.as_ref().map(|g| g.count), Some(2));
    let rows: Vec<(String, String, Option<String>)> =
        sqlx::query_as("SELECT id, group_key, exact_key FROM evidence ORDER BY id")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(
        rows,
        [
            ("ev-1".into(), a.into(), None),
            ("ev-2".into(), b.into(), None),
            ("ev-3".into(), b.into(), None)
        ],
        "the evidence moves with its sightings"
    );
    assert!(
        s.unmerge(&GroupKey(b.into()), &undo)
            .await
            .unwrap()
            .is_none(),
        "nothing left to undo"
    );
    let (g, obs, merged) = record(&s, "ev-4", b, 4_000, checkout("worker.py|run_job")).await;
    assert_eq!(
        (g.0.as_str(), obs, merged),
        (b, Observation::Recurrence, None)
    );
    let (g, _, _) = record(&s, "ev-5", b, 5_000, checkout("worker.py|run_job")).await;
    assert_eq!(g.0, b);
    assert_eq!(s.get(&GroupKey(b.into())).await.unwrap().unwrap().count, 4);
    let history = s.merges(&GroupKey(a.into())).await.unwrap();
    assert_eq!(
        (
            history[0].undone_at,
            history[0].undone_by.as_deref(),
            history[0].undo_reason.as_deref(),
            history[0].moved
        ),
        (
            Some(3_500),
            Some("ana"),
            Some("another entry point"),
            Some(2)
        ),
        "{history:?}"
    );

    // Unlike any group: its own.
    let (g, obs, merged) = record(
        &s,
        "ev-6",
        "stack:c:1",
        6_000,
        profile(&["billing.py|refund", "cli.py|go"]),
    )
    .await;
    assert_eq!(
        (g.0.as_str(), obs, merged),
        ("stack:c:1", Observation::New, None)
    );
}

#[tokio::test]
async fn without_merging_exact_keys_stay_apart() {
    let Some(url) = common::backend("TRACELAB_TEST_POSTGRES") else {
        return;
    };
    let (s, _) = store(&url, false).await;
    record(&s, "ev-1", "stack:a:1", 1_000, checkout("main.py|main")).await;
    let (g, obs, merged) = record(
        &s,
        "ev-2",
        "stack:b:1",
        2_000,
        checkout("worker.py|run_job"),
    )
    .await;
    assert_eq!(
        (g.0.as_str(), obs, merged),
        ("stack:b:1", Observation::New, None)
    );
}
