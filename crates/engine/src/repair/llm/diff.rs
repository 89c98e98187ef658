//! Unified diffs as the model's answer, the second format beside
//! SEARCH/REPLACE blocks. The diff is split by the domain's
//! [`patch::parse`](tracelab_domain::patch::parse) and checked by its patch
//! safety rules; each hunk then becomes a SEARCH/REPLACE block (its context
//! and removed lines → its context and added lines), so a hunk is placed by
//! its text — which must occur exactly once in the file — never by the line
//! numbers of its `@@` header, which models often get wrong.

use super::Block;
use tracelab_domain::patch::{self, FilePatch};
use tracelab_domain::{Error, Result};

/// Whether the answer looks like a unified diff (a `diff --git` line or a
/// hunk header).
pub(super) fn looks_like_diff(answer: &str) -> bool {
    answer
        .lines()
        .any(|l| l.starts_with("diff --git ") || l.starts_with("@@ "))
}

/// The file patches of an answer. Code fences are dropped and a diff
/// without `diff --git` lines (only `---`/`+++` headers, as `diff -u`
/// writes them) gets them, so the domain's parser reads it.
pub(super) fn files(answer: &str) -> Result<Vec<FilePatch>> {
    let lines: Vec<&str> = answer
        .lines()
        .filter(|l| !l.trim_start().starts_with("```"))
        .collect();
    let has_git_headers = lines.iter().any(|l| l.starts_with("diff --git "));
    let mut text = String::new();
    for (i, line) in lines.iter().enumerate() {
        if !has_git_headers
            && let Some(old) = line.strip_prefix("--- ")
            && let Some(new) = lines.get(i + 1).and_then(|n| n.strip_prefix("+++ "))
        {
            let name = |p: &str| {
                let p = p.split('\t').next().unwrap_or(p).trim();
                p.strip_prefix("a/")
                    .or_else(|| p.strip_prefix("b/"))
                    .unwrap_or(p)
                    .to_string()
            };
            text.push_str(&format!("diff --git a/{} b/{}\n", name(old), name(new)));
        }
        text.push_str(line);
        text.push('\n');
    }
    let files = patch::parse(&text)?;
    if files.is_empty() {
        return Err(Error::invalid(
            "a diff without file headers (`--- a/path` and `+++ b/path`)",
        ));
    }
    if let Some(f) = files.iter().find(|f| f.hunks.is_empty()) {
        return Err(Error::invalid(format!(
            "the diff for {} has no hunk",
            f.new_path
        )));
    }
    Ok(files)
}

/// Why the diff may not be applied, if it may not: the patch safety rules
/// (outside the repository, `.git/`, symlinks, submodules), then anything
/// but an edit of an existing file (creating, deleting or renaming one).
pub(super) fn refusal(files: &[FilePatch]) -> Option<String> {
    if let Err(e) = patch::validate(files) {
        return Some(e.message);
    }
    files.iter().find_map(|f| {
        if f.old_path == "/dev/null" {
            Some(format!(
                "the diff creates {}; only existing source files may be edited",
                f.new_path
            ))
        } else if f.new_path == "/dev/null" {
            Some(format!(
                "the diff deletes {}; only edits of source files are accepted",
                f.old_path
            ))
        } else if f.old_path != f.new_path {
            Some(format!(
                "the diff renames {} to {}; only edits in place are accepted",
                f.old_path, f.new_path
            ))
        } else {
            None
        }
    })
}

/// One SEARCH/REPLACE block per hunk, in order. A hunk's body ends at the
/// first line that is not context, removal, addition or a `\ No newline`
/// marker (prose after the diff); an empty line counts as an empty context
/// line, since editors and models drop the space of one.
pub(super) fn blocks(files: &[FilePatch]) -> Result<Vec<Block>> {
    let mut out = Vec::new();
    for f in files {
        for (n, hunk) in f.hunks.iter().enumerate() {
            let mut old = Vec::new();
            let mut new = Vec::new();
            let mut changed = false;
            let mut body: Vec<&str> = hunk
                .text
                .lines()
                .skip(1)
                .take_while(|l| l.is_empty() || l.starts_with([' ', '-', '+', '\\']))
                .collect();
            while body.last().is_some_and(|l| l.is_empty()) {
                body.pop();
            }
            for line in body {
                if let Some(text) = line.strip_prefix('-') {
                    old.push(text);
                    changed = true;
                } else if let Some(text) = line.strip_prefix('+') {
                    new.push(text);
                    changed = true;
                } else if !line.starts_with('\\') {
                    let text = line.strip_prefix(' ').unwrap_or(line);
                    old.push(text);
                    new.push(text);
                }
            }
            if !changed {
                return Err(Error::invalid(format!(
                    "hunk {} of {} changes nothing",
                    n + 1,
                    f.new_path
                )));
            }
            if old.iter().all(|l| l.trim().is_empty()) {
                return Err(Error::invalid(format!(
                    "hunk {} of {} has no context or removed line to place it by",
                    n + 1,
                    f.new_path
                )));
            }
            out.push(Block {
                path: f.new_path.clone(),
                search: old.join("\n"),
                replace: new.join("\n"),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIX: &str = "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1,4 +1,4 @@\n def window(xs, start, size):\n-    end = size\n+    end = start + size\n     return xs[start:end]\n";

    fn parsed(answer: &str) -> Vec<Block> {
        let files = files(answer).unwrap();
        assert_eq!(refusal(&files), None);
        blocks(&files).unwrap()
    }

    #[test]
    fn a_git_diff_becomes_one_block_per_hunk() {
        assert_eq!(
            parsed(FIX),
            vec![Block {
                path: "app.py".into(),
                search: "def window(xs, start, size):\n    end = size\n    return xs[start:end]"
                    .into(),
                replace:
                    "def window(xs, start, size):\n    end = start + size\n    return xs[start:end]"
                        .into(),
            }]
        );
    }

    #[test]
    fn fences_prose_and_plain_headers_are_read() {
        let answer = "The end is off by the start.\n\n```diff\n--- app.py\n+++ app.py\n@@ -2,2 +2,2 @@\n-    end = size\n+    end = start + size\n\n     return xs[start:end]\n```\nThis keeps the neighbours passing.\n";
        let blocks = parsed(answer);
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].path, "app.py");
        // The empty line is an empty context line; the prose is not a line.
        assert_eq!(
            blocks[0].search,
            "    end = size\n\n    return xs[start:end]"
        );
        assert_eq!(
            blocks[0].replace,
            "    end = start + size\n\n    return xs[start:end]"
        );
    }

    #[test]
    fn two_files_and_two_hunks_keep_their_order() {
        let answer = "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n@@ -9 +9 @@\n-y = 1\n+y = 2\n--- a/lib/b.py\n+++ b/lib/b.py\n@@ -3,1 +3,2 @@\n z = 0\n+z += 1\n\\ No newline at end of file\n";
        let blocks = parsed(answer);
        let paths: Vec<&str> = blocks.iter().map(|b| b.path.as_str()).collect();
        assert_eq!(paths, ["a.py", "a.py", "lib/b.py"]);
        assert_eq!(blocks[2].search, "z = 0");
        assert_eq!(blocks[2].replace, "z = 0\nz += 1");
    }

    #[test]
    fn hostile_diffs_are_refused_by_the_safety_rules() {
        for (answer, why) in [
            (
                "--- a/../outside.py\n+++ b/../outside.py\n@@ -1 +1 @@\n-x\n+y\n",
                "leaves the repository",
            ),
            (
                "diff --git a/.git/config b/.git/config\n--- a/.git/config\n+++ b/.git/config\n@@ -1 +1,2 @@\n [core]\n+\thooksPath = /tmp\n",
                ".git",
            ),
            (
                "--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-root\n+toor\n",
                "not relative",
            ),
            (
                "diff --git a/app.py b/app.py\nnew file mode 120000\n--- /dev/null\n+++ b/app.py\n@@ -0,0 +1 @@\n+/etc/passwd\n",
                "symlink",
            ),
            (
                "--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+import os\n",
                "creates new.py",
            ),
            (
                "--- a/app.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x = 1\n",
                "deletes app.py",
            ),
            (
                "diff --git a/app.py b/lib.py\nrename from app.py\nrename to lib.py\n--- a/app.py\n+++ b/lib.py\n@@ -1 +1 @@\n-x\n+y\n",
                "renames app.py",
            ),
        ] {
            let files = files(answer).unwrap();
            let refused = refusal(&files).unwrap_or_else(|| panic!("accepted: {answer}"));
            assert!(refused.contains(why), "{refused} for {answer}");
        }
    }

    #[test]
    fn malformed_diffs_are_unparsable() {
        for answer in [
            // No file header.
            "@@ -1 +1 @@\n-x\n+y\n",
            // A header without a hunk.
            "--- a/app.py\n+++ b/app.py\nthe end is wrong\n",
            // A broken hunk header.
            "--- a/app.py\n+++ b/app.py\n@@ one two @@\n-x\n+y\n",
            // A hunk that changes nothing.
            "--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n x = 1\n",
            // A pure insertion cannot be placed.
            "--- a/app.py\n+++ b/app.py\n@@ -0,0 +1 @@\n+import os\n",
            // Cut off right after the hunk header.
            "--- a/app.py\n+++ b/app.py\n@@ -1,3 +1,3 @@\n",
        ] {
            let result = files(answer).and_then(|f| blocks(&f));
            assert!(result.is_err(), "accepted: {answer}");
        }
        assert!(looks_like_diff("@@ -1 +1 @@\n"));
        assert!(!looks_like_diff(
            "app.py\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n"
        ));
    }
}
