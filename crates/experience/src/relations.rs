//! How hunks relate: the structure that groups a repair's hunks and
//! supports a prerequisite between problems. A port, so the code index's
//! call graph can answer later; [`PathRelations`] answers from file paths
//! and the diff text alone.

use crate::hunks::NetHunk;
use crate::text;
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::LazyLock;
use tracelab_domain::oracle::is_test_path;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RelationKind {
    /// The dependent imports the provider's module or a name it defines.
    Import,
    /// The dependent calls a function the provider changes or defines.
    CallerCallee,
    /// Two changes inside the same function or type.
    SameSymbol,
    /// A test and the source it tests.
    TestSource,
    /// A configuration file and code that reads one of its keys.
    ConfigConsumer,
    /// A dependency manifest or lockfile and code using the package (or the
    /// lockfile and its manifest).
    ManifestCode,
}

impl RelationKind {
    /// Whether the relation means one change needs the other (a
    /// prerequisite between problems can rest on it); a test and its
    /// source, or two edits of one function, only belong together.
    pub fn is_dependency(self) -> bool {
        matches!(
            self,
            RelationKind::Import
                | RelationKind::CallerCallee
                | RelationKind::ConfigConsumer
                | RelationKind::ManifestCode
        )
    }
}

/// The relation port.
pub trait Relations {
    /// How `dependent` depends on (or belongs with) `provider`, if at all.
    fn relation(&self, dependent: &NetHunk, provider: &NetHunk) -> Option<RelationKind>;

    /// Either direction.
    fn related(&self, a: &NetHunk, b: &NetHunk) -> Option<RelationKind> {
        self.relation(a, b).or_else(|| self.relation(b, a))
    }
}

/// Relations from paths and diff text: Python `import`/`from`, Rust
/// `use`/`mod`, test files by name, configuration keys, manifests and
/// lockfiles by name. No code index needed.
#[derive(Debug, Clone, Copy, Default)]
pub struct PathRelations;

static PY_IMPORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:from\s+([\w.]+)\s+import\s+\(?([\w, ]*)|import\s+([\w., ]+))")
        .expect("regex")
});
static RS_USE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(?:pub\s+)?(?:use|mod)\s+([\w:{}, ]+)").expect("regex"));
static CONFIG_KEY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"^\s*"?([A-Za-z_][\w.-]*)"?\s*[=:]"#).expect("regex"));
static REQUIREMENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^\s*"?([A-Za-z][A-Za-z0-9_.-]*)"?\s*(?:[=<>~!:;\[]|$)"#).expect("regex")
});

/// Names an import line brings in: modules and imported names.
fn imported_names(line: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut add = |list: &str| {
        for part in list.split([',', ' ', '.', ':', '{', '}', '(', ')']) {
            let part = part.trim();
            if !part.is_empty() && part != "as" && part != "self" && part != "crate" {
                names.insert(part.to_string());
            }
        }
    };
    if let Some(c) = PY_IMPORT.captures(line) {
        for i in 1..=3 {
            if let Some(m) = c.get(i) {
                add(m.as_str());
            }
        }
    } else if let Some(c) = RS_USE.captures(line) {
        add(&c[1]);
    }
    names
}

fn imports(hunk: &NetHunk) -> BTreeSet<String> {
    hunk.changed_lines()
        .flat_map(|l| imported_names(l))
        .collect()
}

pub(crate) fn is_config(path: &str) -> bool {
    let name = text::file_name(path);
    let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    !is_manifest(path)
        && (matches!(
            ext,
            "ini" | "cfg" | "toml" | "yaml" | "yml" | "json" | "conf" | "env" | "properties"
        ) || name.starts_with('.') && !name.contains('/'))
}

pub(crate) fn is_lockfile(path: &str) -> bool {
    matches!(
        text::file_name(path),
        "Cargo.lock"
            | "poetry.lock"
            | "package-lock.json"
            | "yarn.lock"
            | "pnpm-lock.yaml"
            | "Pipfile.lock"
            | "uv.lock"
            | "go.sum"
            | "Gemfile.lock"
    )
}

pub(crate) fn is_manifest(path: &str) -> bool {
    let name = text::file_name(path);
    is_lockfile(path)
        || matches!(
            name,
            "Cargo.toml"
                | "pyproject.toml"
                | "setup.py"
                | "Pipfile"
                | "package.json"
                | "go.mod"
                | "Gemfile"
        )
        || (name.starts_with("requirements") && name.ends_with(".txt"))
        || path.contains("requirements/") && name.ends_with(".txt")
}

/// The lockfile a manifest is locked by.
fn locks(lockfile: &str, manifest: &str) -> bool {
    let pairs = [
        ("Cargo.lock", "Cargo.toml"),
        ("poetry.lock", "pyproject.toml"),
        ("uv.lock", "pyproject.toml"),
        ("package-lock.json", "package.json"),
        ("yarn.lock", "package.json"),
        ("pnpm-lock.yaml", "package.json"),
        ("Pipfile.lock", "Pipfile"),
        ("go.sum", "go.mod"),
        ("Gemfile.lock", "Gemfile"),
    ];
    pairs
        .iter()
        .any(|(l, m)| text::file_name(lockfile) == *l && text::file_name(manifest) == *m)
}

/// Package names a manifest hunk's changed lines declare, normalised the
/// way imports spell them (`typing-extensions` → `typing_extensions`).
fn declared_packages(hunk: &NetHunk) -> BTreeSet<String> {
    hunk.changed_lines()
        .filter_map(|l| REQUIREMENT.captures(l).map(|c| c[1].to_string()))
        .map(|p| p.to_ascii_lowercase().replace(['-', '.'], "_"))
        .filter(|p| p.len() >= 2)
        .collect()
}

fn config_keys(hunk: &NetHunk) -> BTreeSet<String> {
    hunk.changed_lines()
        .filter_map(|l| CONFIG_KEY.captures(l).map(|c| c[1].to_string()))
        .flat_map(|k| {
            let mut parts: Vec<String> = k.split(['.', '-']).map(str::to_string).collect();
            parts.push(k.replace('-', "_"));
            parts
        })
        .filter(|k| k.len() >= 4)
        .collect()
}

/// `test_more.py`, `more_test.py`, `more_tests.rs` → `more`.
fn tested_name(path: &str) -> &str {
    let s = text::stem(path);
    s.strip_prefix("test_")
        .or_else(|| s.strip_suffix("_tests"))
        .or_else(|| s.strip_suffix("_test"))
        .unwrap_or(s)
}

impl Relations for PathRelations {
    fn relation(&self, dependent: &NetHunk, provider: &NetHunk) -> Option<RelationKind> {
        if dependent.index == provider.index {
            return None;
        }
        let (d, p) = (dependent, provider);
        if d.path == p.path {
            let same = d.enclosing.is_some() && d.enclosing == p.enclosing;
            return same.then_some(RelationKind::SameSymbol);
        }
        // Lockfile ↔ manifest, manifest ↔ code importing a declared package.
        if is_manifest(&p.path) {
            if is_lockfile(&d.path) && locks(&d.path, &p.path) {
                return Some(RelationKind::ManifestCode);
            }
            let declared = declared_packages(p);
            let imported = imports(d);
            if !is_manifest(&d.path)
                && imported
                    .iter()
                    .any(|i| declared.contains(&i.to_ascii_lowercase()))
            {
                return Some(RelationKind::ManifestCode);
            }
            return None;
        }
        if is_manifest(&d.path) {
            return None;
        }
        if is_config(&p.path) {
            let keys = config_keys(p);
            let ids = d.identifiers();
            let names_file = d
                .changed_lines()
                .any(|l| l.contains(text::file_name(&p.path)));
            let reads_key = keys.iter().any(|k| ids.contains(k));
            return (!is_config(&d.path) && (names_file || reads_key))
                .then_some(RelationKind::ConfigConsumer);
        }
        let provided = p.symbols();
        let imported = imports(d);
        let module = text::module_name(&p.path);
        if module.is_some_and(|m| imported.contains(m))
            || provided.iter().any(|s| imported.contains(s))
        {
            return Some(RelationKind::Import);
        }
        if is_test_path(&d.path) && !is_test_path(&p.path) {
            let named = module.is_some_and(|m| tested_name(&d.path) == m);
            let ids = d.identifiers();
            if named && (provided.is_empty() || provided.iter().any(|s| ids.contains(s))) {
                return Some(RelationKind::TestSource);
            }
            return None;
        }
        let calls = d
            .changed_lines()
            .any(|l| provided.iter().any(|s| l.contains(&format!("{s}("))));
        calls.then_some(RelationKind::CallerCallee)
    }
}

/// Connected components of `hunks` under `relations`, each sorted, in
/// order of their first hunk.
pub fn groups(hunks: &[NetHunk], relations: &dyn Relations) -> Vec<Vec<usize>> {
    let n = hunks.len();
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for a in 0..n {
        for b in (a + 1)..n {
            if relations.related(&hunks[a], &hunks[b]).is_some() {
                let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
                parent[ra.max(rb)] = ra.min(rb);
            }
        }
    }
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut roots: Vec<usize> = Vec::new();
    for i in 0..n {
        let r = root(&mut parent, i);
        match roots.iter().position(|x| *x == r) {
            Some(k) => out[k].push(i),
            None => {
                roots.push(r);
                out.push(vec![i]);
            }
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::hunks::split;

    /// A one-hunk diff of `path` adding `added` lines (and removing `removed`).
    pub fn diff(path: &str, at: &str, removed: &[&str], added: &[&str]) -> String {
        let mut s = format!(
            "diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,{} +1,{} @@ {at}\n",
            removed.len(),
            added.len()
        );
        for l in removed {
            s.push_str(&format!("-{l}\n"));
        }
        for l in added {
            s.push_str(&format!("+{l}\n"));
        }
        s
    }

    fn hunks(diffs: &[String]) -> Vec<NetHunk> {
        split(&diffs.concat()).unwrap().hunks
    }

    #[test]
    fn python_imports_relate_to_the_module_and_the_names_it_defines() {
        let h = hunks(&[
            diff(
                "pkg/compat.py",
                "",
                &[],
                &["from .recipes import fast_pairs"],
            ),
            diff(
                "pkg/recipes.py",
                "",
                &[],
                &["def fast_pairs(xs):", "    return xs"],
            ),
            diff("pkg/other.py", "", &[], &["import recipes"]),
        ]);
        let r = PathRelations;
        assert_eq!(r.relation(&h[0], &h[1]), Some(RelationKind::Import));
        assert_eq!(r.relation(&h[2], &h[1]), Some(RelationKind::Import));
        assert_eq!(r.relation(&h[1], &h[0]), None);
    }

    #[test]
    fn rust_use_relates_to_the_module() {
        let h = hunks(&[
            diff("src/main.rs", "", &[], &["use crate::eval::matches;"]),
            diff("src/eval.rs", "", &[], &["pub fn matches() {}"]),
        ]);
        assert_eq!(
            PathRelations.relation(&h[0], &h[1]),
            Some(RelationKind::Import)
        );
    }

    #[test]
    fn tests_relate_to_their_source_by_name_and_symbol() {
        let h = hunks(&[
            diff(
                "tests/test_more.py",
                "",
                &[],
                &["        self.assertEqual(first([1]), 1)"],
            ),
            diff(
                "pkg/more.py",
                "def first(it):",
                &["    x = 1"],
                &["    x = 2"],
            ),
            diff(
                "tests/test_recipes.py",
                "",
                &[],
                &["        self.assertEqual(first([1]), 1)"],
            ),
        ]);
        assert_eq!(
            PathRelations.related(&h[0], &h[1]),
            Some(RelationKind::TestSource)
        );
        assert_eq!(PathRelations.related(&h[2], &h[1]), None);
    }

    #[test]
    fn config_keys_relate_to_the_code_reading_them() {
        let h = hunks(&[
            diff(
                "ci/settings.toml",
                "",
                &["timeout = \"30s\""],
                &["timeout_seconds = 30"],
            ),
            diff(
                "tools/run.py",
                "",
                &[],
                &["    limit = cfg['timeout_seconds']"],
            ),
        ]);
        assert_eq!(
            PathRelations.related(&h[0], &h[1]),
            Some(RelationKind::ConfigConsumer)
        );
    }

    #[test]
    fn manifests_relate_to_imports_and_lockfiles() {
        let h = hunks(&[
            diff("requirements.txt", "", &[], &["typing-extensions==4.9.0"]),
            diff(
                "pkg/types.py",
                "",
                &[],
                &["from typing_extensions import Self"],
            ),
            diff("Cargo.toml", "", &[], &["serde = \"1\""]),
            diff("Cargo.lock", "", &[], &["name = \"serde\""]),
            diff("pkg/unrelated.py", "", &[], &["import json"]),
        ]);
        let r = PathRelations;
        assert_eq!(r.relation(&h[1], &h[0]), Some(RelationKind::ManifestCode));
        assert_eq!(r.relation(&h[3], &h[2]), Some(RelationKind::ManifestCode));
        assert_eq!(r.related(&h[4], &h[0]), None);
    }

    #[test]
    fn same_function_edits_group_and_others_stay_apart() {
        let both = format!(
            "{}@@ -20,1 +20,1 @@ def first(it):\n-    y = 1\n+    y = 2\n@@ -90,1 +90,1 @@ def last(it):\n-    z = 1\n+    z = 2\n",
            diff(
                "pkg/more.py",
                "def first(it):",
                &["    x = 1"],
                &["    x = 2"]
            )
        );
        let h = split(&both).unwrap().hunks;
        assert_eq!(h.len(), 3);
        assert_eq!(groups(&h, &PathRelations), vec![vec![0, 1], vec![2]]);
    }
}
