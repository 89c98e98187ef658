//! Real backends come from `TRACELAB_TEST_*`; without one a test says why it
//! skipped — unless `TRACELAB_REQUIRE_BACKENDS=1` (CI), where that fails.

#![allow(dead_code)]

pub fn backend(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(value) if !value.is_empty() => Some(value),
        _ if std::env::var("TRACELAB_REQUIRE_BACKENDS").as_deref() == Ok("1") => panic!(
            "{var} is not set but TRACELAB_REQUIRE_BACKENDS=1; run deploy/local/backends.sh start and eval \"$(deploy/local/backends.sh env)\""
        ),
        _ => {
            eprintln!(
                "skipped: {var} is not set (deploy/local/backends.sh start; eval \"$(deploy/local/backends.sh env)\")"
            );
            None
        }
    }
}

/// A topology prefix no other test (or earlier run) uses.
pub fn unique_prefix(tag: &str) -> String {
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
