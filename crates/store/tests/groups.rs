//! One failure-group conformance suite, three stores: in memory (the
//! reference), SQLite (embedded) and PostgreSQL (`TRACELAB_TEST_POSTGRES`,
//! one schema per test).

mod common;

use std::sync::Arc;
use tracelab_evidence::similar::SimilarityConfig;
use tracelab_evidence::{GroupKey, GroupStore, InMemoryGroupStore};
use tracelab_store::groups::conformance;
use tracelab_store::{PgGroupStore, PgOptions, SqliteGroupStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn in_memory_group_store_conforms() {
    conformance::run(Arc::new(InMemoryGroupStore::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_group_store_conforms() {
    conformance::run(Arc::new(SqliteGroupStore::in_memory().await.unwrap())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_file_group_store_conforms_and_persists() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tracelab.db");
    let store = SqliteGroupStore::open(&path).await.unwrap();
    conformance::run(Arc::new(store.clone())).await;
    let before = store.list(1000).await.unwrap();
    drop(store);
    let reopened = SqliteGroupStore::open(&path).await.unwrap();
    assert_eq!(
        reopened.list(1000).await.unwrap(),
        before,
        "groups survive reopening"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_group_store_merges_similar_issues() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteGroupStore::open(&dir.path().join("tracelab.db"))
        .await
        .unwrap()
        .merging(SimilarityConfig::default());
    conformance::merges(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_group_store_merges_similar_issues() {
    let Some(url) = common::backend("TRACELAB_TEST_POSTGRES") else {
        return;
    };
    let schema = common::unique_prefix("gms");
    let options = PgOptions {
        schema: Some(schema.clone()),
        ..PgOptions::default()
    };
    let store = PgGroupStore::connect(&url, options)
        .await
        .expect("connect and migrate")
        .merging(SimilarityConfig::default());
    conformance::merges(&store).await;
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
        .execute(store_pool(&url, &schema).await.pool())
        .await
        .expect("drop the test schema");
}

async fn store_pool(url: &str, schema: &str) -> tracelab_store::PgStore {
    tracelab_store::PgStore::connect(
        url,
        PgOptions {
            schema: Some(schema.to_owned()),
            ..PgOptions::default()
        },
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_group_store_conforms() {
    let Some(url) = common::backend("TRACELAB_TEST_POSTGRES") else {
        return;
    };
    let schema = common::unique_prefix("g");
    let options = PgOptions {
        schema: Some(schema.clone()),
        max_connections: 6,
        ..PgOptions::default()
    };
    let store = PgGroupStore::connect(&url, options.clone())
        .await
        .expect("connect and migrate");
    conformance::run(Arc::new(store.clone())).await;
    // A second pool on the same schema reads the same groups.
    let again = PgGroupStore::connect(&url, options).await.unwrap();
    assert_eq!(
        again.list(1000).await.unwrap(),
        store.list(1000).await.unwrap()
    );
    let pool = tracelab_store::PgStore::connect(
        &url,
        PgOptions {
            schema: Some(schema.clone()),
            ..PgOptions::default()
        },
    )
    .await
    .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
        .execute(pool.pool())
        .await
        .expect("drop the test schema");
}

#[tokio::test]
async fn corrupt_rows_are_internal_errors_not_panics() {
    let store = tracelab_store::SqliteStore::in_memory().await.unwrap();
    sqlx::query(
        "INSERT INTO failure_groups (group_key, title, kind, language, first_seen, last_seen, count, commits, branches, test_ids, status, regressions, version) \
         VALUES ('k', 't', 'no_such_kind', 'python', 1, 1, 1, '[]', '[]', '[]', 'open', 0, 1)",
    )
    .execute(store.pool())
    .await
    .unwrap();
    let groups = SqliteGroupStore::new(&store);
    let err = groups.get(&GroupKey("k".into())).await.unwrap_err();
    assert_eq!(err.kind(), tracelab_evidence::ErrorKind::Internal, "{err}");
    assert!(err.to_string().contains("no_such_kind"), "{err}");
}
