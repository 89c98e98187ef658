//! Supported languages (`tracelab_domain::Language`: detection from a path,
//! the prefix of qualified names) and their tree-sitter grammars.

pub use tracelab_domain::Language;

/// The tree-sitter grammar of `language` (TSX by the path's extension).
pub(crate) fn grammar(language: Language, path: &str) -> tree_sitter::Language {
    match language {
        Language::Python => tree_sitter_python::LANGUAGE.into(),
        Language::Rust => tree_sitter_rust::LANGUAGE.into(),
        Language::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
        Language::TypeScript if path.ends_with(".tsx") => {
            tree_sitter_typescript::LANGUAGE_TSX.into()
        }
        Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        Language::Go => tree_sitter_go::LANGUAGE.into(),
        Language::Java => tree_sitter_java::LANGUAGE.into(),
    }
}

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
