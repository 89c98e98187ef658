//! The languages TraceLab's code index parses: detection from a path and
//! the prefix of qualified names (`py:`, `rs:`, ...). The tree-sitter
//! grammars live with the index (`tracelab_code_index::lang`).

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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_and_parses_languages() {
        assert_eq!(Language::from_path("a/b.py"), Some(Language::Python));
        assert_eq!(Language::from_path("web/x.tsx"), Some(Language::TypeScript));
        assert_eq!(Language::from_path("README.md"), None);
        assert_eq!(Language::parse("rust"), Some(Language::Rust));
        assert_eq!(Language::parse("ts"), Some(Language::TypeScript));
        assert_eq!(Language::parse("cobol"), None);
        assert_eq!(
            serde_json::to_value(Language::JavaScript).unwrap(),
            "javascript"
        );
    }
}
