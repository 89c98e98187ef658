//! Real backends for tests come from `TRACELAB_TEST_{NATS,POSTGRES,DOCKER}`.
//! Without one a test says why it skipped — unless
//! `TRACELAB_REQUIRE_BACKENDS=1` (CI), where a missing backend fails the test.

/// The setting of `var`, or `None` after printing why the test skips.
/// Panics when the backend is missing and `TRACELAB_REQUIRE_BACKENDS=1`.
pub fn backend(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(value) if !value.is_empty() && value != "0" => Some(value),
        _ if std::env::var("TRACELAB_REQUIRE_BACKENDS").as_deref() == Ok("1") => panic!(
            "{var} is not set but TRACELAB_REQUIRE_BACKENDS=1; start the backends (deploy/local/backends.sh start; eval \"$(deploy/local/backends.sh env)\"; deploy/sandbox/build-base-image.sh)"
        ),
        _ => {
            eprintln!(
                "skipped: {var} is not set (deploy/local/backends.sh start; eval \"$(deploy/local/backends.sh env)\")"
            );
            None
        }
    }
}

/// The stream size limit tests give their topologies (`Topology::
/// with_stream_limit`, `fleet.stream_max_bytes`): JetStream reserves a
/// stream's limit from the server's file store, and the suite creates
/// dozens of topologies on one server.
pub const TEST_STREAM_BYTES: i64 = 16 << 20;

/// A name no other test (or earlier run) uses: for schemas, stream prefixes, labels.
pub fn unique_name(tag: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{tag}{}_{nanos}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}
