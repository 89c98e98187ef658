//! The tree-sitter grammar of each language TraceLab parses
//! (`tracelab_domain::Language`), and parsers built from them.
//!
//! The index (symbols, call sites, symbol-level restores) and the repair
//! templates must read a file with the same grammar, or a symbol the index
//! found would not be where the repair looks for it; this crate is the one
//! table both use.

pub use tracelab_domain::Language;
pub use tree_sitter;

/// The tree-sitter grammar of `language`, `None` for a language the index
/// does not parse (C, Unknown); TypeScript's TSX dialect is chosen by the
/// path's extension.
pub fn grammar(language: Language, path: &str) -> Option<tree_sitter::Language> {
    Some(match language {
        Language::Python => tree_sitter_python::LANGUAGE.into(),
        Language::Rust => tree_sitter_rust::LANGUAGE.into(),
        Language::Javascript => tree_sitter_javascript::LANGUAGE.into(),
        Language::Typescript if path.ends_with(".tsx") => {
            tree_sitter_typescript::LANGUAGE_TSX.into()
        }
        Language::Typescript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        Language::Go => tree_sitter_go::LANGUAGE.into(),
        Language::Java => tree_sitter_java::LANGUAGE.into(),
        Language::C | Language::Unknown => return None,
    })
}

/// A parser for `language` (and `path`'s dialect), or `None` when the
/// grammar's ABI does not match the tree-sitter runtime (a build mistake
/// callers report instead of panicking on).
pub fn parser(language: Language, path: &str) -> Option<tree_sitter::Parser> {
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&grammar(language, path)?).ok()?;
    Some(parser)
}

/// `text` parsed as `path` in `language`; `None` when no parser could be
/// built or parsing was cancelled.
pub fn parse(language: Language, path: &str, text: &str) -> Option<tree_sitter::Tree> {
    parser(language, path)?.parse(text, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_language_parses_a_function() {
        let samples = [
            (Language::Python, "a.py", "def f(x):\n    return x + 1\n"),
            (Language::Rust, "a.rs", "fn f(x: u8) -> u8 { x + 1 }\n"),
            (
                Language::Javascript,
                "a.js",
                "function f(x) { return x + 1; }\n",
            ),
            (
                Language::Typescript,
                "a.ts",
                "function f(x: number): number { return x + 1; }\n",
            ),
            (
                Language::Typescript,
                "a.tsx",
                "const A = () => <div>{1}</div>;\n",
            ),
            (
                Language::Go,
                "a.go",
                "package a\nfunc f(x int) int { return x + 1 }\n",
            ),
            (
                Language::Java,
                "A.java",
                "class A { int f(int x) { return x + 1; } }\n",
            ),
        ];
        for (language, path, text) in samples {
            let tree = parse(language, path, text).expect("a parser");
            assert!(
                !tree.root_node().has_error(),
                "{path}: {}",
                tree.root_node().to_sexp()
            );
        }
        // The TSX dialect matters: JSX is an error in plain TypeScript.
        let jsx = "const A = () => <div>{1}</div>;\n";
        assert!(
            parse(Language::Typescript, "a.ts", jsx)
                .unwrap()
                .root_node()
                .has_error()
        );
    }
}
