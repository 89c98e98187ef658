//! Experience records (#16) on both stores, one conformance suite: SQLite
//! (in memory and in a file, reopened) and a real PostgreSQL
//! (`TRACELAB_TEST_POSTGRES`).

mod common;

use tracelab_store::SqliteStore;
use tracelab_store::experience::{ExperienceStore, conformance};

#[tokio::test]
async fn sqlite_in_memory() {
    conformance::run(&SqliteStore::in_memory().await.unwrap()).await;
}

#[tokio::test]
async fn sqlite_file_keeps_records_across_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tracelab.db");
    let store = SqliteStore::open(&path).await.unwrap();
    conformance::run(&store).await;
    let before = store.experience(None).await.unwrap();
    drop(store);
    let reopened = SqliteStore::open(&path).await.unwrap();
    assert_eq!(reopened.experience(None).await.unwrap(), before);
}

#[tokio::test]
async fn postgres() {
    let Some((store, _, schema)) = common::pg_store("exp").await else {
        return;
    };
    conformance::run(&store).await;
    // A second run in the same schema: other repositories' records do not
    // change what the first one reads.
    conformance::run(&store).await;
    common::drop_schema(&store, &schema).await;
}
