//! Backend gating shared by these tests lives in `tracelab-testkit`.

#![allow(unused_imports, dead_code)]

pub use tracelab_testkit::backends::{backend, unique_name as unique_prefix};

use tracelab_store::{PgOptions, PgStore};

/// A store in a schema of its own on `TRACELAB_TEST_POSTGRES` (migrated):
/// `(store, url, schema)`, or `None` when the backend is not set.
pub async fn pg_store(tag: &str) -> Option<(PgStore, String, String)> {
    let url = backend("TRACELAB_TEST_POSTGRES")?;
    let schema = unique_prefix(tag);
    let options = PgOptions {
        schema: Some(schema.clone()),
        max_connections: 4,
        ..PgOptions::default()
    };
    let store = PgStore::connect(&url, options)
        .await
        .expect("connect and migrate");
    Some((store, url, schema))
}

/// Drops a test's schema with everything in it.
pub async fn drop_schema(store: &PgStore, schema: &str) {
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
        .execute(store.pool())
        .await
        .expect("drop the test schema");
}
