//! A stage and its notifications are one transaction (#13): the review,
//! the pull request link and (PostgreSQL) the created investigation
//! commit with their webhook and Jira rows, or neither does. Proven by a
//! trigger that makes the notifications insert fail: the stage must roll
//! back with it (with two statements it stayed written and the
//! notifications were lost). Then the rows' life on both stores: claimed
//! with a lease, rendered once, delivered, retried, given up.
//! PostgreSQL from `TRACELAB_TEST_POSTGRES`, one schema per test.

mod common;

use serde_json::json;
use std::time::Duration;
use tracelab_domain::audit::{PullRequestLink, Review};
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::ports::{HandOffStore, InvestigationStore};
use tracelab_domain::state::{InvestigationState, Transition};
use tracelab_store::notifications::NewNotification;
use tracelab_store::{Created, NewInvestigation, OutboxMessage, PgStore, SqliteStore};

fn note(id: &InvestigationId, event: &str, target: &str) -> NewNotification {
    NewNotification {
        key: format!("{id}:{event}:webhook:{target}"),
        investigation_id: id.0.clone(),
        channel: "webhook".into(),
        event: event.into(),
        target: target.into(),
        body: None,
    }
}

fn approve(reviewer: &str) -> Review<'_> {
    Review {
        approve: true,
        reviewer,
        role: "reviewer",
        reason: Some("looks right"),
        forbid_self_approval: false,
    }
}

async fn waiting<S: InvestigationStore>(store: &S) -> InvestigationId {
    use InvestigationState::*;
    let id = InvestigationId::generate();
    store.create(&id, "/repo", "pytest").await.unwrap();
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
            .transition(
                &id,
                &Transition {
                    from: pair[0],
                    to: pair[1],
                    at: time::OffsetDateTime::now_utc(),
                    reason: None,
                },
            )
            .await
            .unwrap();
    }
    id
}

fn link() -> PullRequestLink {
    PullRequestLink {
        url: "https://github.example/acme/shop/pull/7".into(),
        number: 7,
        host: "github".into(),
    }
}

/// What both stores must do; `break_enqueue` makes every later insert
/// into `notifications` fail, `mend` undoes it.
macro_rules! stage_and_notifications_are_one_transaction {
    ($store:expr, $break_enqueue:expr, $mend:expr) => {{
        let store = $store;
        let hooks = ["https://a.example/h", "https://b.example/h"];

        // Committed together.
        let id = waiting(store).await;
        let notes: Vec<_> = hooks.iter().map(|h| note(&id, "approved", h)).collect();
        store
            .review_notifying(&id, &approve("rita"), &notes)
            .await
            .unwrap();
        let stored = store.notifications(&id.0).await.unwrap();
        assert_eq!(stored.len(), 2);
        assert!(stored.iter().all(|n| n.body.is_none() && n.attempts == 0));
        // The pull request's with its link; a second call (the link kept)
        // enqueues nothing more.
        let pr = vec![note(&id, "pull_request_opened", hooks[0])];
        store
            .record_pull_request_notifying(&id, "rita", "reviewer", &link(), &pr)
            .await
            .unwrap();
        let mut again = pr.clone();
        again[0].key.push_str(":again");
        store
            .record_pull_request_notifying(&id, "rita", "reviewer", &link(), &again)
            .await
            .unwrap();
        assert_eq!(store.notifications(&id.0).await.unwrap().len(), 3);

        // A stage refused (not waiting for review): nothing enqueued.
        let refused = store
            .review_notifying(&id, &approve("rita"), &[note(&id, "approved", "x")])
            .await;
        assert!(refused.is_err());
        assert_eq!(store.notifications(&id.0).await.unwrap().len(), 3);

        // The enqueue fails: the review rolls back with it.
        let other = waiting(store).await;
        $break_enqueue(store).await;
        let failed = store
            .review_notifying(
                &other,
                &approve("rita"),
                &[note(&other, "approved", hooks[0])],
            )
            .await;
        assert!(failed.is_err(), "the enqueue failed, so must the stage");
        let state = InvestigationStore::state(store, &other)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(state, InvestigationState::WaitingForReview, "rolled back");
        let audit = store.hand_off(&other).await.unwrap().unwrap().audit;
        assert_eq!(audit.len(), 1, "no approved row: {audit:?}");
        $mend(store).await;
        // And once mended, the same call works (nothing half-done before).
        store
            .review_notifying(
                &other,
                &approve("rita"),
                &[note(&other, "approved", hooks[0])],
            )
            .await
            .unwrap();
        assert_eq!(store.notifications(&other.0).await.unwrap().len(), 1);
    }};
}

/// Claim, render once, fail with a retry, deliver; and given up.
macro_rules! a_notification_lives_its_life {
    ($store:expr) => {{
        let store = $store;
        let id = waiting(store).await;
        store
            .review_notifying(&id, &approve("rita"), &[note(&id, "approved", "h1")])
            .await
            .unwrap();
        let fresh = NewNotification {
            body: Some(json!({"ready": true})),
            ..note(&id, "decided", "h2")
        };
        assert!(store.enqueue_notification(&fresh).await.unwrap());
        assert!(!store.enqueue_notification(&fresh).await.unwrap(), "same key");

        let lease = Duration::from_secs(60);
        let claimed = store.claim_notifications(16, lease).await.unwrap();
        let mine: Vec<_> = claimed.iter().filter(|n| n.investigation_id == id.0).collect();
        assert_eq!(mine.len(), 2);
        assert_eq!(mine[1].body, Some(json!({"ready": true})));
        assert!(
            store.claim_notifications(16, lease).await.unwrap().iter().all(|n| n.investigation_id != id.0),
            "leased rows are not claimed twice"
        );
        let first = mine[0].seq;
        let body = store
            .notification_rendered(first, &json!({"n": 1}))
            .await
            .unwrap();
        assert_eq!(body, json!({"n": 1}));
        let kept = store
            .notification_rendered(first, &json!({"n": 2}))
            .await
            .unwrap();
        assert_eq!(kept, json!({"n": 1}), "rendered once, the same bytes after");
        store
            .notification_failed(first, "HTTP 500", Some(Duration::ZERO))
            .await
            .unwrap();
        store
            .notification_failed(mine[1].seq, "HTTP 404", None)
            .await
            .unwrap();
        let due = store.claim_notifications(16, lease).await.unwrap();
        let again: Vec<_> = due.iter().filter(|n| n.investigation_id == id.0).collect();
        assert_eq!(again.len(), 1, "the retry is due, the given up one is not");
        assert_eq!(again[0].attempts, 1);
        assert_eq!(again[0].last_error.as_deref(), Some("HTTP 500"));
        store.notification_delivered(first).await.unwrap();
        let all = store.notifications(&id.0).await.unwrap();
        assert!(all[0].delivered_at.is_some() && all[0].last_error.is_none());
        assert!(all[1].given_up_at.is_some());
        assert_eq!(all[0].attempts, 2);
    }};
}

#[tokio::test]
async fn sqlite_stage_and_notifications_are_one_transaction() {
    let store = SqliteStore::in_memory().await.unwrap();
    stage_and_notifications_are_one_transaction!(
        &store,
        |s: &SqliteStore| {
            let pool = s.pool().clone();
            async move {
                sqlx::query(
                    "CREATE TRIGGER refuse BEFORE INSERT ON notifications \
                     BEGIN SELECT RAISE(ABORT, 'notifications refused'); END",
                )
                .execute(&pool)
                .await
                .unwrap();
            }
        },
        |s: &SqliteStore| {
            let pool = s.pool().clone();
            async move {
                sqlx::query("DROP TRIGGER refuse")
                    .execute(&pool)
                    .await
                    .unwrap();
            }
        }
    );
}

#[tokio::test]
async fn sqlite_notifications_are_claimed_rendered_and_settled() {
    let store = SqliteStore::in_memory().await.unwrap();
    a_notification_lives_its_life!(&store);
}

async fn pg_break(s: &PgStore) {
    for sql in [
        "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN RAISE EXCEPTION 'notifications refused'; END $$",
        "CREATE TRIGGER refuse BEFORE INSERT ON notifications \
         FOR EACH ROW EXECUTE FUNCTION refuse()",
    ] {
        sqlx::query(sql).execute(s.pool()).await.unwrap();
    }
}

async fn pg_mend(s: &PgStore) {
    for sql in [
        "DROP TRIGGER refuse ON notifications",
        "DROP FUNCTION refuse()",
    ] {
        sqlx::query(sql).execute(s.pool()).await.unwrap();
    }
}

#[tokio::test]
async fn postgres_stage_and_notifications_are_one_transaction() {
    let Some((store, _, schema)) = common::pg_store("notify_tx").await else {
        return;
    };
    stage_and_notifications_are_one_transaction!(&store, pg_break, pg_mend);

    // `created`: the investigation, its outbox event and its notifications.
    let request = json!({"repository": "/repo"});
    let create = |id: &InvestigationId| {
        let id = id.clone();
        let request = request.clone();
        let store = &store;
        async move {
            let announce = OutboxMessage {
                id: format!("{id}.requested"),
                subject: format!("t.investigations.{id}.requested"),
                payload: b"requested".to_vec(),
            };
            store
                .create_requested_notifying(
                    &NewInvestigation {
                        id: &id,
                        repository: "/repo",
                        test_command: "pytest -q",
                        request: &request,
                        evidence: &[],
                        dedupe_key: None,
                        announce: &announce,
                        started_by: "ci",
                        role: "reviewer",
                    },
                    &[note(&id, "created", "https://a.example/h")],
                )
                .await
        }
    };
    let id = InvestigationId::generate();
    assert_eq!(create(&id).await.unwrap(), Created::New);
    assert_eq!(store.notifications(&id.0).await.unwrap().len(), 1);
    pg_break(&store).await;
    let lost = InvestigationId::generate();
    assert!(create(&lost).await.is_err());
    assert!(
        store.investigation(&lost).await.unwrap().is_none(),
        "no investigation without its notifications"
    );
    pg_mend(&store).await;
    common::drop_schema(&store, &schema).await;
}

#[tokio::test]
async fn postgres_notifications_are_claimed_rendered_and_settled() {
    let Some((store, _, schema)) = common::pg_store("notify_life").await else {
        return;
    };
    a_notification_lives_its_life!(&store);
    common::drop_schema(&store, &schema).await;
}
