use tracelab_store::{SqliteStore, conformance};

#[tokio::test]
async fn in_memory_store_conforms() {
    conformance::run(&SqliteStore::in_memory().await.unwrap()).await;
}

#[tokio::test]
async fn file_store_conforms_and_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/tracelab.db");
    let store = SqliteStore::open(&path).await.unwrap();
    conformance::run(&store).await;
    drop(store);
    let reopened = SqliteStore::open(&path).await.unwrap();
    use tracelab_store::InvestigationStore;
    assert_eq!(reopened.list(10).await.unwrap().len(), 2);
}

#[tokio::test]
async fn unopenable_path_is_a_clear_error() {
    let err = SqliteStore::open(std::path::Path::new("/proc/forbidden/x.db"))
        .await
        .unwrap_err();
    assert!(err.message.contains("/proc/forbidden"), "{}", err.message);
}
