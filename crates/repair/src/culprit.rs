//! Edits from the culprit commit, when a search named one: its own changes
//! undone one line at a time inside a suspect function — a line it changed
//! back to its parent's text, a line it added deleted. Where the whole revert
//! (or the function's restore) also undoes work that later commits build on,
//! one of these is often the smallest honest fix. Lines are found by their
//! text at the bad revision (trimmed, exactly once inside the function), so
//! later edits around them do not matter; a line rewritten since is skipped.

use crate::Target;
use crate::operator::{Edit, Operator};

/// One hunk of the culprit in one file: the lines it removed and the lines
/// it added, without their `-`/`+` and newline.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CulpritHunk {
    pub path: String,
    pub removed: Vec<String>,
    pub added: Vec<String>,
}

impl CulpritHunk {
    /// The hunks of a unified diff (`git diff -U0 C^ C`), per file.
    pub fn from_diff(diff: &str) -> Vec<CulpritHunk> {
        let mut hunks = Vec::new();
        let mut path: Option<String> = None;
        let mut current: Option<CulpritHunk> = None;
        for line in diff.lines() {
            if let Some(p) = line.strip_prefix("+++ ") {
                hunks.extend(current.take());
                path = p.strip_prefix("b/").map(str::to_string);
            } else if line.starts_with("--- ") || line.starts_with("diff --git") {
                hunks.extend(current.take());
            } else if line.starts_with("@@") {
                hunks.extend(current.take());
                current = path.clone().map(|path| CulpritHunk {
                    path,
                    ..Default::default()
                });
            } else if let Some(h) = current.as_mut() {
                if let Some(text) = line.strip_prefix('-') {
                    h.removed.push(text.to_string());
                } else if let Some(text) = line.strip_prefix('+') {
                    h.added.push(text.to_string());
                }
            }
        }
        hunks.extend(current);
        hunks
    }
}

/// The culprit's edits that fall inside `target`'s function.
pub(crate) fn edits(target: &Target<'_>, hunks: &[CulpritHunk]) -> Vec<Edit> {
    let lines = Lines::of(target.source);
    let inside = |n: usize| {
        let line = n as u32 + 1;
        (target.start_line..=target.end_line).contains(&line)
    };
    let mut out = Vec::new();
    for hunk in hunks.iter().filter(|h| h.path == target.path) {
        if hunk.removed.len() == hunk.added.len() {
            for (old, new) in hunk.removed.iter().zip(&hunk.added) {
                if old.trim() == new.trim() {
                    continue;
                }
                if let Some(n) = lines.only(new, inside) {
                    out.push(lines.replace(n, old, Operator::RestoreCulpritLine));
                }
            }
        } else if hunk.removed.is_empty() {
            for new in hunk.added.iter().filter(|l| !l.trim().is_empty()) {
                if let Some(n) = lines.only(new, inside) {
                    out.push(lines.delete(n));
                }
            }
        }
    }
    out
}

/// A file's lines with their byte ranges (newline excluded).
struct Lines<'a> {
    source: &'a str,
    spans: Vec<(usize, usize)>,
}

impl<'a> Lines<'a> {
    fn of(source: &'a str) -> Self {
        let mut spans = Vec::new();
        let mut start = 0;
        for (i, c) in source.char_indices() {
            if c == '\n' {
                spans.push((start, i));
                start = i + 1;
            }
        }
        if start < source.len() {
            spans.push((start, source.len()));
        }
        Self { source, spans }
    }

    fn text(&self, n: usize) -> &'a str {
        let (s, e) = self.spans[n];
        &self.source[s..e]
    }

    /// The one line (0-based) whose trimmed text is `wanted`'s, among those
    /// `inside` accepts; `None` when there is none or more than one.
    fn only(&self, wanted: &str, inside: impl Fn(usize) -> bool) -> Option<usize> {
        let wanted = wanted.trim();
        if wanted.is_empty() {
            return None;
        }
        let mut found =
            (0..self.spans.len()).filter(|&n| inside(n) && self.text(n).trim() == wanted);
        let first = found.next()?;
        found.next().is_none().then_some(first)
    }

    /// Line `n`'s text replaced by `old`'s, with line `n`'s indentation;
    /// the edit spans only what differs, so its size compares fairly with
    /// an operator's one-token edit.
    fn replace(&self, n: usize, old: &str, operator: Operator) -> Edit {
        let (start, end) = self.spans[n];
        let current = self.text(n);
        let indent = &current[..current.len() - current.trim_start().len()];
        let wanted = format!("{indent}{}", old.trim());
        let (prefix, suffix) = common_ends(current, &wanted);
        Edit {
            operator,
            start: start + prefix,
            end: end - suffix,
            replacement: wanted[prefix..wanted.len() - suffix].to_string(),
            line: n as u32 + 1,
            description: format!(
                "`{}` back to `{}` (the culprit's parent)",
                current.trim(),
                old.trim()
            ),
        }
    }

    /// Line `n` removed with its newline.
    fn delete(&self, n: usize) -> Edit {
        let (start, end) = self.spans[n];
        let end = (end + 1).min(self.source.len());
        Edit {
            operator: Operator::DeleteCulpritLine,
            start,
            end,
            replacement: String::new(),
            line: n as u32 + 1,
            description: format!("`{}` deleted (the culprit added it)", self.text(n).trim()),
        }
    }
}

/// Bytes `a` and `b` share at their start and, after that, at their end
/// (at character boundaries).
fn common_ends(a: &str, b: &str) -> (usize, usize) {
    let prefix: usize = a
        .chars()
        .zip(b.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x.len_utf8())
        .sum();
    let suffix: usize = a[prefix..]
        .chars()
        .rev()
        .zip(b[prefix..].chars().rev())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x.len_utf8())
        .sum();
    (prefix, suffix)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "diff --git a/app.py b/app.py
--- a/app.py
+++ b/app.py
@@ -1,3 +1,3 @@
-def window(xs, start, size):
-    end = start + size
-    return xs[start:end]
+def window(xs, start, size, step=1):
+    end = start + size - 1
+    return xs[start:end:step]
@@ -9,0 +10 @@
+    log(\"closing\")
";

    #[test]
    fn a_diff_gives_its_hunks_per_file() {
        let hunks = CulpritHunk::from_diff(DIFF);
        assert_eq!(hunks.len(), 2);
        assert_eq!(hunks[0].path, "app.py");
        assert_eq!(hunks[0].removed.len(), 3);
        assert_eq!(hunks[1].removed, Vec::<String>::new());
        assert_eq!(hunks[1].added, vec!["    log(\"closing\")".to_string()]);
    }

    fn target(source: &str) -> Target<'_> {
        Target {
            path: "app.py",
            source,
            symbol: "window",
            start_line: 1,
            end_line: source.lines().count() as u32,
            score: 1.0,
            hot_lines: &[],
        }
    }

    #[test]
    fn each_changed_line_goes_back_alone_where_it_still_stands() {
        // Later work re-indented nothing but rewrote the return line.
        let source = "def window(xs, start, size, step=1):\n    end = start + size - 1\n    return list(xs[start:end:step])\n";
        let edits = edits(&target(source), &CulpritHunk::from_diff(DIFF));
        let described: Vec<_> = edits.iter().map(|e| e.description.as_str()).collect();
        assert_eq!(
            described,
            vec![
                "`def window(xs, start, size, step=1):` back to `def window(xs, start, size):` (the culprit's parent)",
                "`end = start + size - 1` back to `end = start + size` (the culprit's parent)",
            ]
        );
        // Only what differs is replaced.
        let e = &edits[1];
        assert_eq!(&source[e.start..e.end], " - 1");
        assert_eq!(e.replacement, "");
        let e = &edits[0];
        assert_eq!(&source[e.start..e.end], ", step=1");
        assert_eq!(e.replacement, "");
    }

    #[test]
    fn an_added_line_is_deleted_only_where_it_is_unique() {
        let hunks = CulpritHunk::from_diff(DIFF);
        let once = "def close():\n    flush()\n    log(\"closing\")\n";
        let edits = edits(&target(once), &hunks[1..]);
        assert_eq!(edits.len(), 1);
        assert_eq!(edits[0].operator, Operator::DeleteCulpritLine);
        assert_eq!(edits[0].start, once.find("    log").unwrap());
        let twice = "def close():\n    log(\"closing\")\n    log(\"closing\")\n";
        assert!(super::edits(&target(twice), &hunks[1..]).is_empty());
    }

    #[test]
    fn lines_outside_the_function_are_left_alone() {
        let source = "x = 1\ndef f():\n    end = start + size - 1\n";
        let mut t = target(source);
        t.start_line = 1;
        t.end_line = 1;
        assert!(edits(&t, &CulpritHunk::from_diff(DIFF)).is_empty());
    }
}
