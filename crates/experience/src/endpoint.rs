//! The endpoint view: the net diff's hunks, grouped by their relations,
//! linked to the problems whose frames, symbols, messages or files they
//! touch. It sees what survived to the passing revision but not when, so
//! unrelated work in a failing file looks like part of the repair.

use crate::hunks::NetHunk;
use crate::problems::Problem;
use crate::relations::{self, RelationKind, Relations};
use crate::text;
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::LazyLock;
use tracelab_domain::oracle::is_test_path;

/// Why a hunk is linked to a problem, strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "relation")]
pub enum Evidence {
    /// It changes a line a frame of the failure points at.
    Frame,
    /// It sits in or defines a function the failure names.
    Symbol,
    /// Its changed lines name something the error message names.
    Message,
    /// Its file is named in the failure.
    File,
    /// It is related to a linked hunk.
    Group(RelationKind),
}

impl Evidence {
    /// Evidence about the hunk itself, not only its file or its neighbours.
    pub fn is_direct(self) -> bool {
        matches!(self, Evidence::Frame | Evidence::Symbol | Evidence::Message)
    }

    /// Evidence that points at the code itself (a line on the failing
    /// path, a function the failure names), not at words it shares with
    /// the message.
    pub fn is_strong(self) -> bool {
        matches!(self, Evidence::Frame | Evidence::Symbol)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointLink {
    pub problem: usize,
    pub hunk: usize,
    pub evidence: Evidence,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointView {
    /// Related hunks (indices into the net hunks).
    pub groups: Vec<Vec<usize>>,
    pub links: Vec<EndpointLink>,
}

impl EndpointView {
    /// The hunks the endpoint view attributes to `problem`.
    pub fn hunks_of(&self, problem: usize) -> BTreeSet<usize> {
        self.links
            .iter()
            .filter(|l| l.problem == problem)
            .map(|l| l.hunk)
            .collect()
    }

    pub fn link(&self, problem: usize, hunk: usize) -> Option<Evidence> {
        self.links
            .iter()
            .find(|l| l.problem == problem && l.hunk == hunk)
            .map(|l| l.evidence)
    }
}

static PY_FUNCTION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"File "[^"]+", line \d+, in (\w+)"#).expect("regex"));
static PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"[\w./-]+\.(?:py|rs|go|js|ts|java|rb|toml|ini|cfg|txt|ya?ml|json|lock|md|rst)\b(?::\d+)*",
    )
    .expect("regex")
});
static LINT_LINE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\S+:\d+:").expect("regex"));
static QUOTED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"['"`]([^'"`\s]{2,})['"`]"#).expect("regex"));

/// What a failure names, for linking.
#[derive(Debug, Default)]
struct Named {
    /// Functions on the traceback.
    functions: BTreeSet<String>,
    /// Identifiers and quoted names of the error lines (paths left out).
    tokens: BTreeSet<String>,
    /// Files named anywhere.
    paths: BTreeSet<String>,
    /// Modules the failing test is named after (`test_recipes` → `recipes`):
    /// the source under test.
    tested: BTreeSet<String>,
}

/// The modules a test id names through its test files or modules
/// (`tests.test_recipes.TailTests.test_x`, `tests/test_more.py::t`).
fn tested_modules(test: &str) -> BTreeSet<String> {
    test.split(['.', '/', ':'])
        .filter_map(|part| {
            part.strip_prefix("test_")
                .or_else(|| part.strip_suffix("_test"))
                .filter(|m| !m.is_empty() && part != "test_py")
        })
        .filter(|m| !m.starts_with(char::is_uppercase))
        .map(str::to_string)
        .collect()
}

fn named(problem: &Problem) -> Named {
    let message = &problem.message;
    let mut n = Named {
        functions: PY_FUNCTION
            .captures_iter(message)
            .map(|c| c[1].to_string())
            .filter(|f| f != "<module>")
            .collect(),
        paths: problem.files.clone(),
        tested: problem
            .test
            .as_deref()
            .map(tested_modules)
            .unwrap_or_default(),
        ..Default::default()
    };
    for m in PATH.find_iter(message) {
        let path = m.as_str().split(':').next().unwrap_or(m.as_str());
        n.paths.insert(path.to_string());
    }
    let lines: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let error_line = |l: &&str| {
        problem.error_types.iter().any(|t| l.contains(t.as_str()))
            || LINT_LINE.is_match(l)
            || l.starts_with("E ")
    };
    let mut chosen: Vec<&str> = lines.iter().copied().filter(error_line).collect();
    chosen.extend(lines.last());
    for line in chosen {
        for q in QUOTED.captures_iter(line) {
            let quoted = &q[1];
            if quoted.contains('.') && !quoted.contains(' ') && PATH.find(quoted).is_none() {
                // A dotted module (`pkg.recipes`) names a file, not code in it.
                n.paths.insert(format!("{}.py", quoted.replace('.', "/")));
            } else if quoted.len() >= 3 {
                n.tokens.insert(quoted.to_string());
            }
        }
        let bare = QUOTED.replace_all(line, " ");
        let without_paths = PATH.replace_all(&bare, " ");
        n.tokens.extend(text::identifiers(&without_paths));
    }
    for t in &problem.error_types {
        n.tokens.remove(t);
    }
    n
}

/// The strongest direct evidence linking `hunk` to a failure.
fn evidence(hunk: &NetHunk, frames: &[(String, u32)], named: &Named) -> Option<Evidence> {
    if frames
        .iter()
        .any(|(path, line)| text::names_path(path, &hunk.path) && hunk.covers_old_line(*line))
    {
        return Some(Evidence::Frame);
    }
    let symbols = hunk.symbols();
    if symbols
        .iter()
        .any(|s| named.functions.contains(s) || named.tokens.contains(s))
    {
        return Some(Evidence::Symbol);
    }
    if hunk.identifiers().iter().any(|i| named.tokens.contains(i)) {
        return Some(Evidence::Message);
    }
    if named.paths.iter().any(|p| text::names_path(p, &hunk.path)) {
        return Some(Evidence::File);
    }
    let under_test = text::module_name(&hunk.path).is_some_and(|m| named.tested.contains(m));
    if under_test && !is_test_path(&hunk.path) {
        return Some(Evidence::File);
    }
    None
}

/// Builds the endpoint view. `frames[p]` are problem `p`'s frames with
/// their lines mapped to the failing (first) revision.
pub fn endpoint_view(
    hunks: &[NetHunk],
    problems: &[Problem],
    frames: &[Vec<(String, u32)>],
    relations: &dyn Relations,
) -> EndpointView {
    let groups = relations::groups(hunks, relations);
    let mut links = Vec::new();
    for (p, problem) in problems.iter().enumerate() {
        let named = named(problem);
        let direct: Vec<(usize, Evidence)> = hunks
            .iter()
            .filter_map(|h| evidence(h, &frames[p], &named).map(|e| (h.index, e)))
            .collect();
        for (h, e) in &direct {
            links.push(EndpointLink {
                problem: p,
                hunk: *h,
                evidence: *e,
            });
        }
        for group in &groups {
            let linked: Vec<usize> = group
                .iter()
                .copied()
                .filter(|h| direct.iter().any(|(d, _)| d == h))
                .collect();
            if linked.is_empty() {
                continue;
            }
            for &h in group {
                if linked.contains(&h) {
                    continue;
                }
                let kind = linked
                    .iter()
                    .find_map(|&l| relations.related(&hunks[h], &hunks[l]))
                    .or_else(|| {
                        group
                            .iter()
                            .find_map(|&o| relations.related(&hunks[h], &hunks[o]))
                    });
                if let Some(kind) = kind {
                    links.push(EndpointLink {
                        problem: p,
                        hunk: h,
                        evidence: Evidence::Group(kind),
                    });
                }
            }
        }
    }
    EndpointView { groups, links }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hunks::split;
    use crate::problems::Status;
    use crate::relations::PathRelations;
    use crate::relations::tests::diff;

    pub(crate) fn problem(
        key: &str,
        types: &[&str],
        message: &str,
        frames: &[(&str, u32)],
    ) -> Problem {
        Problem {
            key: key.into(),
            job: "ci".into(),
            step: "unit".into(),
            command: "python3 -m unittest".into(),
            test: None,
            error_types: types.iter().map(|t| t.to_string()).collect(),
            message: message.into(),
            frames: frames.iter().map(|(f, l)| (f.to_string(), *l)).collect(),
            files: frames.iter().map(|(f, _)| f.to_string()).collect(),
            statuses: vec![Status::Failed, Status::Passed],
            first_failed: 0,
            last_failed: 0,
            disappeared_at: Some(1),
        }
    }

    #[test]
    fn links_by_frame_symbol_message_file_and_group() {
        let net = [
            // 0: the line a frame points at.
            "diff --git a/pkg/more.py b/pkg/more.py\n--- a/pkg/more.py\n+++ b/pkg/more.py\n@@ -10,3 +10,3 @@ def first(it, default=None):\n     try:\n-        if default is not None:\n+        if default is None:\n             raise ValueError\n@@ -80,1 +80,1 @@ def last(it):\n-    '''Last item.'''\n+    '''The last item.'''\n".to_string(),
            // 2: defines the name an ImportError names.
            diff("pkg/recipes.py", "", &[], &["def fast_pairs(xs):", "    return xs"]),
            // 3: imports it (grouped with 2).
            diff("pkg/compat.py", "", &[], &["from .recipes import fast_pairs, slow_pairs"]),
            // 4: unrelated.
            diff("README.rst", "", &["old"], &["new words"]),
        ]
        .concat();
        let hunks = split(&net).unwrap().hunks;
        let test_failure = problem(
            "ci/unit: t.FirstTests.test_default",
            &["ValueError"],
            "Traceback (most recent call last):\n  File \"pkg/more.py\", line 11, in first\n    raise ValueError\nValueError: first() was called on an empty iterable\n",
            &[("pkg/more.py", 11)],
        );
        let import = problem(
            "ci/unit: ImportError",
            &["ImportError"],
            "ImportError: cannot import name 'fast_pairs' from 'pkg.recipes' (pkg/recipes.py)\n",
            &[],
        );
        let problems = [test_failure, import];
        let frames: Vec<_> = problems.iter().map(|p| p.frames.clone()).collect();
        let view = endpoint_view(&hunks, &problems, &frames, &PathRelations);
        assert_eq!(view.link(0, 0), Some(Evidence::Frame));
        // Same file, another function: only the file links it.
        assert_eq!(view.link(0, 1), Some(Evidence::File));
        assert_eq!(view.link(1, 2), Some(Evidence::Symbol));
        assert_eq!(view.link(1, 3), Some(Evidence::Message));
        assert_eq!(view.hunks_of(0), BTreeSet::from([0, 1]));
        assert!(!view.hunks_of(1).contains(&4) && !view.hunks_of(0).contains(&4));
    }

    #[test]
    fn the_source_a_failing_test_is_named_after_is_its_file() {
        assert_eq!(
            tested_modules("tests.test_recipes.TailTests.test_sized"),
            BTreeSet::from(["recipes".to_string(), "sized".to_string()])
        );
        assert_eq!(
            tested_modules("tests/test_more.py::FirstTests::test_x"),
            BTreeSet::from(["more".to_string(), "x".to_string()])
        );
        let net = [
            diff(
                "pkg/recipes.py",
                "def tail(n, it):",
                &["    x = 1"],
                &["    x = 2"],
            ),
            diff("docs/index.rst", "", &["Old"], &["New title"]),
        ]
        .concat();
        let hunks = split(&net).unwrap().hunks;
        let mut p = problem(
            "ci/unit: t",
            &["AssertionError"],
            "AssertionError: 1 != 2",
            &[],
        );
        p.test = Some("tests.test_recipes.TailTests.test_sized".into());
        let view = endpoint_view(&hunks, &[p], &[vec![]], &PathRelations);
        assert_eq!(view.link(0, 0), Some(Evidence::File));
        assert_eq!(view.link(0, 1), None);
    }

    #[test]
    fn a_hunk_related_to_a_linked_one_joins_through_its_group() {
        let net = [
            diff(
                "pkg/recipes.py",
                "",
                &[],
                &["def fast_pairs(xs):", "    return xs"],
            ),
            diff("pkg/api.py", "", &[], &["    return fast_pairs(values)"]),
        ]
        .concat();
        let hunks = split(&net).unwrap().hunks;
        let p = problem(
            "ci/unit: NameError",
            &["NameError"],
            "NameError: name 'fast_pairs' is not defined\n",
            &[],
        );
        let frames = vec![vec![]];
        let view = endpoint_view(&hunks, std::slice::from_ref(&p), &frames, &PathRelations);
        assert_eq!(view.link(0, 0), Some(Evidence::Symbol));
        // The caller names it too: direct; a pure caller elsewhere would be Group.
        assert!(view.link(0, 1).is_some());
        assert_eq!(view.groups, vec![vec![0, 1]]);
    }
}
