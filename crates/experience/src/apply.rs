//! Re-applying an L1 record's hunks to a file's text. The engine uses this
//! twice: on the file as it was at the record's failing revision (exact, to
//! make the "theirs" side of a 3-way merge with the file under
//! investigation), and — when that revision is gone — on the file under
//! investigation itself, each hunk placed where its old lines are now
//! (moved code keeps its repair; a hunk whose old lines are not there, or
//! are there more than once, is refused rather than guessed).

use tracelab_domain::patch::{FilePatch, parse};

/// One file of a record's patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub path: String,
    /// The file does not exist before the patch.
    pub created: bool,
    /// The file does not exist after it.
    pub deleted: bool,
    patch: FilePatch,
}

/// The files of a record's patch; `Err` for a patch that does not parse
/// or changes a binary file.
pub fn files(patch: &str) -> Result<Vec<FileChange>, String> {
    let files = parse(patch).map_err(|e| e.message)?;
    files
        .into_iter()
        .map(|f| {
            if f.header.contains("Binary files") || f.header.contains("GIT binary patch") {
                return Err(format!("{} is a binary change", f.new_path));
            }
            let created = f.old_path == "/dev/null";
            let deleted = f.new_path == "/dev/null";
            let path = if deleted {
                f.old_path.clone()
            } else {
                f.new_path.clone()
            };
            Ok(FileChange {
                path,
                created,
                deleted,
                patch: f,
            })
        })
        .collect()
}

impl FileChange {
    /// The first line the change touches, after it.
    pub fn first_line(&self) -> u32 {
        self.patch.hunks.first().map_or(1, |h| h.new_start.max(1))
    }
}

struct Lines {
    old: Vec<String>,
    new: Vec<String>,
    old_start: usize,
}

fn hunk_lines(text: &str, old_start: u32) -> Lines {
    let mut old = Vec::new();
    let mut new = Vec::new();
    for line in text.split_inclusive('\n').skip(1) {
        let body = line.get(1..).unwrap_or("").to_string();
        match line.as_bytes().first() {
            Some(b' ') => {
                old.push(body.clone());
                new.push(body);
            }
            Some(b'-') => old.push(body),
            Some(b'+') => new.push(body),
            // "\ No newline at end of file": the previous line has none.
            Some(b'\\') => {
                for side in [&mut old, &mut new] {
                    if let Some(last) = side.last_mut()
                        && last.ends_with('\n')
                    {
                        last.pop();
                    }
                }
            }
            _ => {}
        }
    }
    // `@@ -5,0 …` inserts after line 5; otherwise the hunk starts at line 5.
    let old_start = if old.is_empty() {
        old_start as usize
    } else {
        old_start.saturating_sub(1) as usize
    };
    Lines {
        old,
        new,
        old_start,
    }
}

/// How the hunks were placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Every hunk at the line the patch says (after earlier hunks' shifts).
    Exact,
    /// At least one hunk found at another line by its old lines.
    Moved,
}

/// `change` applied to `text`: the new text, how it was placed, and the
/// hunks (1-based) that were there already. `Err` names the hunk that does
/// not fit.
pub fn apply(text: &str, change: &FileChange) -> Result<Applied, String> {
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
    let mut shift: i64 = 0;
    let mut placement = Placement::Exact;
    let mut already = Vec::new();
    // Lines already written by an earlier hunk are not searched again.
    let mut floor = 0usize;
    for (n, hunk) in change.patch.hunks.iter().enumerate() {
        let h = hunk_lines(&hunk.text, hunk.old_start);
        let expected = ((h.old_start as i64 + shift).max(0) as usize).max(floor);
        let at = if fits(&lines, expected, &h.old) {
            expected
        } else {
            let found = places(&lines, floor, &h.old);
            match found.as_slice() {
                [one] if !h.old.is_empty() => {
                    placement = Placement::Moved;
                    *one
                }
                [] if h.new != h.old => {
                    // Its result is in the file, once: this part of the
                    // repair was made already (a record may hold a hunk of
                    // another repair the code has since received).
                    let [done] = places(&lines, floor, &h.new)[..] else {
                        return Err(format!(
                            "hunk {} of {} does not fit: its old lines are not in the file",
                            n + 1,
                            change.path
                        ));
                    };
                    already.push(n + 1);
                    shift += h.new.len() as i64 - h.old.len() as i64;
                    floor = done + h.new.len();
                    continue;
                }
                [] | [_] => {
                    return Err(format!(
                        "hunk {} of {} does not fit: its old lines are not in the file",
                        n + 1,
                        change.path
                    ));
                }
                _ => {
                    return Err(format!(
                        "hunk {} of {} fits at {} places",
                        n + 1,
                        change.path,
                        found.len()
                    ));
                }
            }
        };
        let added = h.new.len();
        let removed = h.old.len();
        lines.splice(at..at + removed, h.new);
        shift += added as i64 - removed as i64;
        floor = at + added;
    }
    Ok(Applied {
        text: lines.concat(),
        placement,
        already,
    })
}

/// The result of [`apply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub text: String,
    pub placement: Placement,
    /// Hunks (1-based) whose result the file had already; skipped.
    pub already: Vec<usize>,
}

/// Where `wanted` stands in `lines`, from `floor` on.
fn places(lines: &[String], floor: usize, wanted: &[String]) -> Vec<usize> {
    if wanted.is_empty() {
        return Vec::new();
    }
    (floor..=lines.len().saturating_sub(wanted.len()))
        .filter(|&i| fits(lines, i, wanted))
        .collect()
}

fn fits(lines: &[String], at: usize, old: &[String]) -> bool {
    at + old.len() <= lines.len() && lines[at..at + old.len()] == *old
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &str = "diff --git a/app.py b/app.py\nindex 1..2 100644\n--- a/app.py\n+++ b/app.py\n@@ -2,3 +2,3 @@ def window(items, start, size):\n     # the slice\n-    end = size\n+    end = start + size\n     return items[start:end]\n";

    const BASE: &str = "def window(items, start, size):\n    # the slice\n    end = size\n    return items[start:end]\n";

    #[test]
    fn applies_at_the_recorded_lines() {
        let f = &files(PATCH).unwrap()[0];
        let Applied {
            text: out,
            placement,
            ..
        } = apply(BASE, f).unwrap();
        assert_eq!(placement, Placement::Exact);
        assert!(out.contains("end = start + size\n"));
        assert!(!out.contains("end = size\n"));
    }

    #[test]
    fn moved_code_keeps_its_repair() {
        let f = &files(PATCH).unwrap()[0];
        let moved = format!("import os\n\n\ndef other():\n    pass\n\n{BASE}");
        let Applied {
            text: out,
            placement,
            ..
        } = apply(&moved, f).unwrap();
        assert_eq!(placement, Placement::Moved);
        assert!(out.starts_with("import os\n"));
        assert!(out.contains("    end = start + size\n    return"));
    }

    #[test]
    fn a_hunk_that_is_not_there_or_twice_is_refused() {
        let f = &files(PATCH).unwrap()[0];
        let gone = BASE.replace("end = size", "end = len(items)");
        assert!(apply(&gone, f).unwrap_err().contains("does not fit"));
        // Not at the recorded line, and twice elsewhere: no guess.
        let twice = format!("import os\n{BASE}\n{BASE}");
        assert!(apply(&twice, f).unwrap_err().contains("2 places"));
    }

    #[test]
    fn a_hunk_whose_result_is_there_already_is_skipped() {
        let two = "diff --git a/app.py b/app.py\nindex 1..2 100644\n--- a/app.py\n+++ b/app.py\n@@ -2,3 +2,3 @@ def window(items, start, size):\n     # the slice\n-    end = size\n+    end = start + size\n     return items[start:end]\n@@ -6,2 +6,5 @@ def total(xs):\n     return sum(xs)\n+\n+def mean(xs):\n+    return total(xs) / len(xs)\n";
        let f = &files(two).unwrap()[0];
        let base = format!("{BASE}\ndef total(xs):\n    return sum(xs)\n");
        // The first hunk's repair was made since; the second is still missing.
        let current = base.replace("end = size", "end = start + size");
        let applied = apply(&current, f).unwrap();
        assert_eq!(applied.already, vec![1]);
        assert!(
            applied
                .text
                .ends_with("def mean(xs):\n    return total(xs) / len(xs)\n")
        );
        assert_eq!(applied.text.matches("end = start + size").count(), 1);
        // Neither the old lines nor the result: still refused.
        let other = base.replace("end = size", "end = len(items)");
        assert!(apply(&other, f).unwrap_err().contains("hunk 1"));
    }

    #[test]
    fn creation_and_binary_are_recognised() {
        let created = "diff --git a/new.py b/new.py\nnew file mode 100644\nindex 0..1\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+x = 1\n+y = 2\n";
        let f = &files(created).unwrap()[0];
        assert!(f.created);
        assert_eq!(apply("", f).unwrap().text, "x = 1\ny = 2\n");
        let binary = "diff --git a/logo.png b/logo.png\nindex 1..2 100644\nBinary files a/logo.png and b/logo.png differ\n";
        assert!(files(binary).unwrap_err().contains("binary"));
    }
}
