//! The hand-off port on both stores (reviews, the four-eyes rule, the pull
//! request) and the audit log's append-only triggers, proven with UPDATE,
//! DELETE (and, on PostgreSQL, TRUNCATE) statements the databases refuse.
//! PostgreSQL from `TRACELAB_TEST_POSTGRES`, one schema per test.

mod common;

use tracelab_domain::ids::InvestigationId;
use tracelab_store::{InvestigationStore, PgStore, SqliteStore, conformance};

#[tokio::test]
async fn sqlite_hand_off_conforms() {
    let store = SqliteStore::in_memory().await.unwrap();
    conformance::run_hand_off(&store, "local").await;
    let alice = store.acting_as("alice");
    conformance::run_hand_off(&alice, "alice").await;
}

#[tokio::test]
async fn postgres_hand_off_conforms() {
    let Some((store, _, schema)) = common::pg_store("audit").await else {
        return;
    };
    conformance::run_hand_off(&store, "local").await;
    conformance::run_hand_off(&store.acting_as("alice"), "alice").await;
    common::drop_schema(&store, &schema).await;
}

/// What the database answers to `sql`, as text (`ok` when it ran).
async fn pg_answer(store: &PgStore, sql: &str, id: &InvestigationId) -> String {
    match sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
        .bind(&id.0)
        .execute(store.pool())
        .await
    {
        Ok(_) => "ok".into(),
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn postgres_refuses_updates_and_deletes_of_the_audit_log() {
    let Some((store, _, schema)) = common::pg_store("audit").await else {
        return;
    };
    let id = InvestigationId::generate();
    store.create(&id, "/repo", "pytest").await.unwrap();
    let count = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM decisions WHERE investigation_id = $1")
            .bind(&id.0)
            .fetch_one(store.pool())
            .await
            .unwrap()
    };
    assert_eq!(count().await, 1, "create wrote the started row");
    for sql in [
        "UPDATE decisions SET actor = 'mallory' WHERE investigation_id = $1",
        "UPDATE decisions SET reason = 'rewritten', action = 'approved' WHERE investigation_id = $1",
        "DELETE FROM decisions WHERE investigation_id = $1",
    ] {
        let answer = pg_answer(&store, sql, &id).await;
        assert!(
            answer.contains("append-only"),
            "{sql} must be refused, the database said: {answer}"
        );
    }
    let truncated = sqlx::query("TRUNCATE decisions")
        .execute(store.pool())
        .await
        .expect_err("TRUNCATE must be refused");
    assert!(truncated.to_string().contains("append-only"), "{truncated}");
    // Deleting the investigation would take its audit rows: refused too.
    let answer = pg_answer(&store, "DELETE FROM investigations WHERE id = $1", &id).await;
    assert_ne!(answer, "ok", "an investigation with audit rows stays");
    assert_eq!(count().await, 1, "the row is untouched");
    let actor: String =
        sqlx::query_scalar("SELECT actor FROM decisions WHERE investigation_id = $1")
            .bind(&id.0)
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert_eq!(actor, "local");
    common::drop_schema(&store, &schema).await;
}

#[tokio::test]
async fn sqlite_refuses_updates_and_deletes_of_the_audit_log() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("t.db")).await.unwrap();
    let id = InvestigationId::generate();
    store.create(&id, "/repo", "pytest").await.unwrap();
    for sql in [
        "UPDATE decisions SET actor = 'mallory' WHERE investigation_id = ?",
        "DELETE FROM decisions WHERE investigation_id = ?",
        "DELETE FROM investigations WHERE id = ?",
    ] {
        let refused = sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
            .bind(&id.0)
            .execute(store.pool())
            .await
            .expect_err(sql);
        let said = refused.to_string();
        assert!(
            said.contains("append-only") || said.contains("FOREIGN KEY"),
            "{sql}: {said}"
        );
    }
    let rows: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM decisions WHERE investigation_id = ? AND actor = 'local'",
    )
    .bind(&id.0)
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert_eq!(rows, 1);
}
