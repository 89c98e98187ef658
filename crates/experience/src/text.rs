//! Small text helpers shared by the views: identifiers, path names.

use regex::Regex;
use std::collections::BTreeSet;
use std::sync::LazyLock;

static IDENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z_][A-Za-z0-9_]*").expect("regex"));

/// Words too common in code and failure output to link anything.
const STOP: &[&str] = &[
    "self",
    "None",
    "True",
    "False",
    "return",
    "import",
    "from",
    "class",
    "def",
    "pass",
    "raise",
    "assert",
    "with",
    "while",
    "else",
    "elif",
    "break",
    "continue",
    "lambda",
    "yield",
    "async",
    "await",
    "print",
    "line",
    "File",
    "file",
    "Traceback",
    "most",
    "recent",
    "call",
    "last",
    "Error",
    "error",
    "test",
    "tests",
    "assertEqual",
    "assertTrue",
    "assertFalse",
    "assertRaises",
    "args",
    "kwargs",
    "list",
    "dict",
    "tuple",
    "str",
    "int",
    "len",
    "range",
    "object",
    "type",
    "value",
    "values",
    "result",
    "expected",
    "actual",
    "module",
    "named",
    "the",
    "that",
    "this",
    "than",
    "have",
    "should",
    "must",
    "fn",
    "let",
    "mut",
    "pub",
    "use",
    "impl",
    "struct",
    "enum",
    "match",
    "Some",
    "Ok",
    "Err",
    "unwrap",
    "failed",
    "FAILED",
    "FAIL",
    "ERROR",
    "main",
    "cannot",
    "name",
    "lines",
    "long",
    "missing",
];

/// Identifiers of at least four characters that are not common words.
pub fn identifiers(text: &str) -> BTreeSet<String> {
    IDENT
        .find_iter(text)
        .map(|m| m.as_str())
        .filter(|w| w.len() >= 4 && !STOP.contains(w))
        .map(str::to_string)
        .collect()
}

/// A line worth comparing across commits: trimmed, with some substance
/// (closing brackets and `pass` occur everywhere).
pub fn meaningful(line: &str) -> Option<String> {
    let t = line.trim();
    let letters = t.chars().filter(|c| c.is_alphanumeric()).count();
    (letters >= 3).then(|| t.to_string())
}

/// The file name of a path.
pub fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The file name without its extension (`tests/test_more.py` → `test_more`).
pub fn stem(path: &str) -> &str {
    let name = file_name(path);
    name.split_once('.').map(|(s, _)| s).unwrap_or(name)
}

/// The module a source file defines, as code imports it: the stem, or the
/// folder for `__init__.py` / `mod.rs` / `lib.rs`.
pub fn module_name(path: &str) -> Option<&str> {
    let s = stem(path);
    if matches!(s, "__init__" | "mod" | "lib" | "main") {
        let mut parts = path.rsplit('/');
        parts.next();
        return parts.next();
    }
    (!s.is_empty()).then_some(s)
}

/// Whether `mentioned` (from failure output, maybe absolute or `./`-prefixed)
/// names the repository file `path`.
pub fn names_path(mentioned: &str, path: &str) -> bool {
    let m = mentioned.trim_start_matches("./");
    m == path || m.ends_with(&format!("/{path}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_names_follow_the_import_system() {
        assert_eq!(module_name("pkg/recipes.py"), Some("recipes"));
        assert_eq!(module_name("pkg/__init__.py"), Some("pkg"));
        assert_eq!(module_name("src/eval/mod.rs"), Some("eval"));
        assert_eq!(stem("tests/test_more.py"), "test_more");
    }

    #[test]
    fn paths_match_on_component_boundaries() {
        assert!(names_path("/tmp/wt/pkg/m.py", "pkg/m.py"));
        assert!(names_path("./pkg/m.py", "pkg/m.py"));
        assert!(!names_path("/tmp/wt/otherpkg/m.py", "pkg/m.py"));
    }

    #[test]
    fn identifiers_skip_common_words() {
        let ids = identifiers("if default is not _marker: return first(iterable)");
        assert!(ids.contains("default") && ids.contains("_marker") && ids.contains("first"));
        assert!(!ids.contains("return") && !ids.contains("if"));
    }
}
