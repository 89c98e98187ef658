//! The PostgreSQL store against a real server (`TRACELAB_TEST_POSTGRES`).
//! Each test works in its own schema, so tests run in parallel.

mod common;

use tracelab_domain::ErrorKind;
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::state::{InvestigationState, Transition};
use tracelab_store::{InvestigationStore, PgOptions, PgStore, conformance, record_once};

struct Fixture {
    url: String,
    schema: String,
    store: PgStore,
}

async fn fixture() -> Option<Fixture> {
    let (store, url, schema) = common::pg_store("t").await?;
    Some(Fixture { url, schema, store })
}

impl Fixture {
    async fn drop_schema(self) {
        common::drop_schema(&self.store, &self.schema).await
    }
}

#[tokio::test]
async fn postgres_store_conforms() {
    let Some(f) = fixture().await else { return };
    conformance::run(&f.store).await;
    // A second connection finds the schema migrated and the data there.
    let options = PgOptions {
        schema: Some(f.schema.clone()),
        ..PgOptions::default()
    };
    let again = PgStore::connect(&f.url, options).await.expect("reconnect");
    assert_eq!(again.list(10).await.unwrap().len(), 2);
    f.drop_schema().await;
}

#[tokio::test]
async fn concurrent_transitions_have_one_winner() {
    let Some(f) = fixture().await else { return };
    let id = InvestigationId::generate();
    f.store.create(&id, "/repo", "pytest").await.unwrap();
    let t = Transition {
        from: InvestigationState::Created,
        to: InvestigationState::ContextLoading,
        at: time::OffsetDateTime::now_utc(),
        reason: None,
    };
    let attempts = (0..8).map(|_| {
        let store = f.store.clone();
        let (id, t) = (id.clone(), t.clone());
        tokio::spawn(async move { store.transition(&id, &t).await })
    });
    let mut won = 0;
    for attempt in attempts {
        match attempt.await.unwrap() {
            Ok(()) => won += 1,
            Err(e) => assert_eq!(e.kind, ErrorKind::Conflict, "{e}"),
        }
    }
    assert_eq!(
        won, 1,
        "compare-and-set lets exactly one transition through"
    );
    assert_eq!(f.store.transitions(&id).await.unwrap().len(), 1);
    f.drop_schema().await;
}

async fn decisions(store: &PgStore) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM decisions WHERE actor = 'bot'")
        .fetch_one(store.pool())
        .await
        .unwrap()
}

/// What a consumer does with one message: record it, write its result, commit.
async fn handle(
    store: &PgStore,
    consumer: &str,
    message_id: &str,
    investigation: &InvestigationId,
) -> bool {
    let mut tx = store.begin().await.unwrap();
    let first = record_once(&mut tx, consumer, message_id).await.unwrap();
    if first {
        sqlx::query("INSERT INTO decisions (investigation_id, actor, role, action) VALUES ($1, 'bot', 'reviewer', 'approved')")
            .bind(&investigation.0)
            .execute(&mut *tx)
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    first
}

#[tokio::test]
async fn a_redelivered_message_is_a_no_op() {
    let Some(f) = fixture().await else { return };
    let id = InvestigationId::generate();
    f.store.create(&id, "/repo", "pytest").await.unwrap();

    assert!(
        handle(&f.store, "arbiter", "m1", &id).await,
        "first delivery does the work"
    );
    assert!(
        !handle(&f.store, "arbiter", "m1", &id).await,
        "redelivery is recognised"
    );
    assert_eq!(decisions(&f.store).await, 1, "results written once");
    assert!(
        handle(&f.store, "auditor", "m1", &id).await,
        "progress is per consumer"
    );

    // A rolled-back transaction takes the progress with it: the retry does the work.
    let mut tx = f.store.begin().await.unwrap();
    assert!(record_once(&mut tx, "arbiter", "m2").await.unwrap());
    tx.rollback().await.unwrap();
    assert!(handle(&f.store, "arbiter", "m2", &id).await);

    // Two deliveries of one message at once: the second waits for the first and skips.
    let mut first = f.store.begin().await.unwrap();
    assert!(record_once(&mut first, "arbiter", "m3").await.unwrap());
    let racing = tokio::spawn({
        let store = f.store.clone();
        let id = id.clone();
        async move { handle(&store, "arbiter", "m3", &id).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(
        !racing.is_finished(),
        "the duplicate waits on the first transaction"
    );
    first.commit().await.unwrap();
    assert!(!racing.await.unwrap(), "and then sees it processed");
    assert_eq!(decisions(&f.store).await, 3);
    f.drop_schema().await;
}

#[tokio::test]
async fn bad_urls_and_schemas_are_invalid_arguments() {
    let Some(f) = fixture().await else { return };
    let err = PgStore::connect("mysql://x", PgOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument, "{err}");
    let options = PgOptions {
        schema: Some("x; DROP TABLE y".into()),
        ..PgOptions::default()
    };
    let err = PgStore::connect(&f.url, options).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument, "{err}");
    f.drop_schema().await;
}
