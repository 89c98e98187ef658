//! Supported languages: detection from a path, the tree-sitter grammar, and
//! the prefix of qualified names (`py:`, `rs:`, ...).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    Python,
    Rust,
    JavaScript,
    TypeScript,
    Go,
    Java,
}

impl Language {
    pub const ALL: [Language; 6] = [
        Language::Python,
        Language::Rust,
        Language::JavaScript,
        Language::TypeScript,
        Language::Go,
        Language::Java,
    ];

    /// The language of a repository path, from its extension.
    pub fn from_path(path: &str) -> Option<Language> {
        let ext = path.rsplit_once('.')?.1;
        Some(match ext {
            "py" | "pyi" => Language::Python,
            "rs" => Language::Rust,
            "js" | "mjs" | "cjs" | "jsx" => Language::JavaScript,
            "ts" | "tsx" | "mts" | "cts" => Language::TypeScript,
            "go" => Language::Go,
            "java" => Language::Java,
            _ => return None,
        })
    }

    /// The prefix of qualified names, e.g. `py` in `py:pkg.mod.f`.
    pub fn prefix(self) -> &'static str {
        match self {
            Language::Python => "py",
            Language::Rust => "rs",
            Language::JavaScript => "js",
            Language::TypeScript => "ts",
            Language::Go => "go",
            Language::Java => "java",
        }
    }

    /// Parses a language name as written in filters (`python`, `py`, `rust`, ...).
    pub fn parse(name: &str) -> Option<Language> {
        let n = name.to_ascii_lowercase();
        Language::ALL
            .into_iter()
            .find(|l| l.prefix() == n || format!("{l:?}").eq_ignore_ascii_case(&n))
    }

    pub(crate) fn grammar(self, path: &str) -> tree_sitter::Language {
        match self {
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
}

/// Whether a path looks like test code (used as a hard filter on suspects:
/// tests seed the failing path but are rarely what a fix changes).
pub fn is_test_path(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    path.split('/')
        .any(|c| matches!(c, "test" | "tests" | "__tests__" | "testing" | "spec"))
        || file.starts_with("test_")
        || file.ends_with("_test.py")
        || file.ends_with("_test.go")
        || file.contains(".test.")
        || file.contains(".spec.")
        || (file.ends_with(".java")
            && (file.ends_with("Test.java") || file.ends_with("Tests.java")))
        || file == "conftest.py"
}

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
    fn detects_languages_and_tests() {
        assert_eq!(Language::from_path("a/b.py"), Some(Language::Python));
        assert_eq!(Language::from_path("web/x.tsx"), Some(Language::TypeScript));
        assert_eq!(Language::from_path("README.md"), None);
        assert_eq!(Language::parse("rust"), Some(Language::Rust));
        assert_eq!(Language::parse("ts"), Some(Language::TypeScript));
        assert!(is_test_path("tests/test_app.py"));
        assert!(is_test_path("pkg/store_test.go"));
        assert!(is_test_path("src/math.test.js"));
        assert!(is_test_path("src/test/java/FooTest.java"));
        assert!(!is_test_path("src/latest/contest.py"));
        assert!(is_test_symbol("src/lib.rs", "rs:crate::tests::adds"));
        assert!(!is_test_symbol("src/lib.rs", "rs:crate::attest::adds"));
    }
}
