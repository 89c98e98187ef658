//! The net diff's hunks with what the views need to know about each: its
//! lines, the symbols it sits in or defines, its file's header (to render
//! an attributed patch back), parsed with [`tracelab_domain::patch`].

use crate::text;
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::LazyLock;
use tracelab_domain::patch::{self, FilePatch};

static DEFINITION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^\s*(?:async\s+)?def\s+(\w+)",
        r"|^\s*class\s+(\w+)",
        r"|^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(\w+)",
        r"|^\s*(?:pub(?:\([^)]*\))?\s+)?(?:struct|enum|trait|mod)\s+(\w+)",
        r"|^\s*(?:export\s+)?(?:async\s+)?function\s+(\w+)",
        r"|^func\s+(?:\([^)]*\)\s*)?(\w+)",
    ))
    .expect("regex")
});

/// The name a line defines (`def f`, `class C`, `fn f`, `struct S`, …).
pub fn defined_name(line: &str) -> Option<String> {
    let c = DEFINITION.captures(line)?;
    (1..c.len()).find_map(|i| c.get(i).map(|m| m.as_str().to_string()))
}

/// One hunk of the net diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetHunk {
    pub index: usize,
    /// The file after the change (before it, for a deletion).
    pub path: String,
    pub old_start: u32,
    pub old_len: u32,
    pub new_start: u32,
    pub new_len: u32,
    /// Changed lines without their `+`/`-`.
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// The function or type the change sits in (from the `@@` line or the
    /// nearest definition above the first change).
    pub enclosing: Option<String>,
    /// Names the changed lines define.
    pub defines: BTreeSet<String>,
    /// The file's diff header and the hunk's text, to render it back.
    #[serde(skip)]
    pub file_header: String,
    #[serde(skip)]
    pub text: String,
}

impl NetHunk {
    /// The names the hunk belongs to: where it sits and what it defines.
    pub fn symbols(&self) -> BTreeSet<String> {
        let mut s = self.defines.clone();
        s.extend(self.enclosing.clone());
        s
    }

    /// Added and removed lines.
    pub fn changed_lines(&self) -> impl Iterator<Item = &String> {
        self.added.iter().chain(self.removed.iter())
    }

    /// Identifiers in the changed lines.
    pub fn identifiers(&self) -> BTreeSet<String> {
        self.changed_lines()
            .flat_map(|l| text::identifiers(l))
            .collect()
    }

    /// Whether the hunk covers `line` of the old (failing) revision.
    pub fn covers_old_line(&self, line: u32) -> bool {
        let end = self.old_start + self.old_len.max(1);
        line >= self.old_start && line < end
    }
}

/// A parsed net diff: text hunks, and the files that changed as binaries
/// (which nothing can attribute).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Split {
    pub hunks: Vec<NetHunk>,
    pub binary: Vec<String>,
}

/// Whether a file patch is a binary change.
pub fn is_binary(file: &FilePatch) -> bool {
    file.header.contains("Binary files ") || file.header.contains("GIT binary patch")
}

/// The path a file patch is about.
pub fn file_path(file: &FilePatch) -> &str {
    if file.new_path == "/dev/null" {
        &file.old_path
    } else {
        &file.new_path
    }
}

/// Splits a unified diff into hunks.
pub fn split(diff: &str) -> tracelab_domain::Result<Split> {
    let files = patch::parse(diff)?;
    let mut out = Split::default();
    for file in &files {
        if is_binary(file) {
            out.binary.push(file_path(file).to_string());
            continue;
        }
        for h in &file.hunks {
            out.hunks.push(net_hunk(out.hunks.len(), file, h));
        }
    }
    Ok(out)
}

fn net_hunk(index: usize, file: &FilePatch, h: &patch::Hunk) -> NetHunk {
    let mut lines = h.text.lines();
    let at = lines.next().unwrap_or("");
    let trailer = at.splitn(3, "@@").nth(2).unwrap_or("").trim();
    let mut enclosing = defined_name(trailer);
    let (mut added, mut removed) = (Vec::new(), Vec::new());
    let mut changed = false;
    for line in lines {
        if let Some(l) = line.strip_prefix('+') {
            added.push(l.to_string());
            changed = true;
        } else if let Some(l) = line.strip_prefix('-') {
            removed.push(l.to_string());
            changed = true;
        } else if !changed && let Some(name) = defined_name(line.strip_prefix(' ').unwrap_or(line))
        {
            enclosing = Some(name);
        }
    }
    let defines = added
        .iter()
        .chain(removed.iter())
        .filter_map(|l| defined_name(l))
        .collect();
    NetHunk {
        index,
        path: file_path(file).to_string(),
        old_start: h.old_start,
        old_len: h.old_len,
        new_start: h.new_start,
        new_len: h.new_len,
        added,
        removed,
        enclosing,
        defines,
        file_header: file.header.clone(),
        text: h.text.clone(),
    }
}

/// Renders hunks back into a patch (file headers once, in order).
pub fn render(hunks: &[&NetHunk]) -> String {
    let mut out = String::new();
    let mut last_header: Option<&str> = None;
    for h in hunks {
        if last_header != Some(h.file_header.as_str()) {
            out.push_str(&h.file_header);
            last_header = Some(&h.file_header);
        }
        out.push_str(&h.text);
    }
    out
}

/// Maps `line` of `path` after `files` (one commit's diff) to the line it
/// was before it, approximately inside a changed hunk. Returns the old path
/// too (renames).
pub fn line_before(files: &[FilePatch], path: &str, line: u32) -> (String, u32) {
    let Some(file) = files.iter().find(|f| f.new_path == path) else {
        return (path.to_string(), line);
    };
    let old_path = if file.old_path == "/dev/null" {
        path.to_string()
    } else {
        file.old_path.clone()
    };
    let mut offset: i64 = 0;
    for h in &file.hunks {
        if line < h.new_start {
            break;
        }
        if line < h.new_start + h.new_len {
            let inside = (line - h.new_start).min(h.old_len.saturating_sub(1));
            return (old_path, h.old_start + inside);
        }
        // The first line after each side of the hunk (an empty side's
        // start is the line before it).
        let next = |start: u32, len: u32| i64::from(start + len + u32::from(len == 0));
        offset = next(h.old_start, h.old_len) - next(h.new_start, h.new_len);
    }
    (old_path, (i64::from(line) + offset).max(1) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "diff --git a/pkg/more.py b/pkg/more.py\n--- a/pkg/more.py\n+++ b/pkg/more.py\n@@ -10,4 +10,4 @@ def first(iterable, default=_marker):\n     try:\n-        if default is not _marker:\n+        if default is _marker:\n             raise ValueError\n@@ -40,0 +41,3 @@ def last(iterable):\n+\n+def fast_pairs(items):\n+    return zip(items, items[1:])\ndiff --git a/logo.png b/logo.png\nindex 1..2 100644\nBinary files a/logo.png and b/logo.png differ\n";

    #[test]
    fn hunks_know_their_symbols_and_lines() {
        let split = split(DIFF).unwrap();
        assert_eq!(split.binary, vec!["logo.png"]);
        assert_eq!(split.hunks.len(), 2);
        let a = &split.hunks[0];
        assert_eq!(a.enclosing.as_deref(), Some("first"));
        assert_eq!(a.removed, vec!["        if default is not _marker:"]);
        assert!(a.covers_old_line(11) && !a.covers_old_line(14));
        let b = &split.hunks[1];
        assert_eq!(b.defines.iter().collect::<Vec<_>>(), vec!["fast_pairs"]);
        assert!(render(&[a, b]).starts_with("diff --git a/pkg/more.py"));
        assert_eq!(render(&[a, b]).matches("diff --git").count(), 1);
    }

    #[test]
    fn lines_map_back_through_a_commit() {
        let files = patch::parse(DIFF).unwrap();
        // Before the first hunk: unchanged.
        assert_eq!(line_before(&files, "pkg/more.py", 5).1, 5);
        // After the insertion of three lines at 41: three lines earlier.
        assert_eq!(line_before(&files, "pkg/more.py", 50).1, 47);
        // Inside the first hunk.
        assert_eq!(line_before(&files, "pkg/more.py", 11).1, 11);
    }
}
