//! The one language vocabulary: the language a source file is written in
//! (the code index parses six of them; the grammars live in
//! `tracelab-syntax`) and the runtime a failure came from (the evidence
//! parsers also tell C and say `Unknown` when they cannot tell). Detection
//! from a path and the prefix of qualified names (`py:`, `rs:`, ...).

use serde::{Deserialize, Serialize};

/// A language. Serialised in lowercase (`javascript`, `unknown`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    Python,
    Rust,
    Javascript,
    Typescript,
    Go,
    Java,
    /// Native code in a failure (a C/C++ crash or compiler error); not indexed.
    C,
    /// A failure whose language the parser could not tell; never indexed.
    Unknown,
}

impl Language {
    /// The languages the code index parses (those with a grammar).
    pub const INDEXED: [Language; 6] = [
        Language::Python,
        Language::Rust,
        Language::Javascript,
        Language::Typescript,
        Language::Go,
        Language::Java,
    ];

    /// Whether the code index parses this language.
    pub fn is_indexed(self) -> bool {
        Language::INDEXED.contains(&self)
    }

    /// The language of a repository path, from its extension.
    pub fn from_path(path: &str) -> Option<Language> {
        let ext = path.rsplit_once('.')?.1;
        Some(match ext {
            "py" | "pyi" => Language::Python,
            "rs" => Language::Rust,
            "js" | "mjs" | "cjs" | "jsx" => Language::Javascript,
            "ts" | "tsx" | "mts" | "cts" => Language::Typescript,
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
            Language::Javascript => "js",
            Language::Typescript => "ts",
            Language::Go => "go",
            Language::Java => "java",
            Language::C => "c",
            Language::Unknown => "unknown",
        }
    }

    /// Parses an indexed language's name as written in filters (`python`,
    /// `py`, `rust`, ...).
    pub fn parse(name: &str) -> Option<Language> {
        let n = name.to_ascii_lowercase();
        Language::INDEXED
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
        assert_eq!(Language::from_path("web/x.tsx"), Some(Language::Typescript));
        assert_eq!(Language::from_path("README.md"), None);
        assert_eq!(Language::parse("rust"), Some(Language::Rust));
        assert_eq!(Language::parse("ts"), Some(Language::Typescript));
        assert_eq!(Language::parse("cobol"), None);
        assert_eq!(Language::parse("unknown"), None);
        assert!(!Language::C.is_indexed() && Language::Go.is_indexed());
        assert_eq!(
            serde_json::to_value(Language::Javascript).unwrap(),
            "javascript"
        );
        assert_eq!(serde_json::to_value(Language::Unknown).unwrap(), "unknown");
    }
}
