//! Supported languages (`tracelab_domain::Language`: detection from a path,
//! the prefix of qualified names; their grammars are `tracelab_syntax`'s)
//! and which paths and symbols are test code.

pub use tracelab_domain::Language;

/// Whether a path is test code (a hard filter on suspects: tests seed the
/// failing path but are rarely what a fix changes). The same rule as the
/// oracle's: what a runner collects as a test, or test data.
pub use tracelab_domain::oracle::is_test_path;

/// Whether a symbol is test code: in a test file, or (Rust) inside an
/// inline `mod tests`.
pub fn is_test_symbol(path: &str, qualified_name: &str) -> bool {
    is_test_path(path)
        || (qualified_name.starts_with("rs:")
            && qualified_name
                .split("::")
                .any(|c| c == "tests" || c == "test"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_tests() {
        assert!(is_test_path("tests/test_app.py"));
        assert!(is_test_path("pkg/store_test.go"));
        assert!(is_test_path("src/math.test.js"));
        assert!(is_test_path("src/test/java/FooTest.java"));
        assert!(!is_test_path("src/latest/contest.py"));
        assert!(is_test_symbol("src/lib.rs", "rs:crate::tests::adds"));
        assert!(!is_test_symbol("src/lib.rs", "rs:crate::attest::adds"));
    }
}
