//! Unified diffs as produced by `git diff`: split into files and hunks,
//! filtered, and checked against the patch safety rules.
//!
//! Safety (DESIGN.md): a patch may not touch paths outside the repository,
//! anything under `.git/`, or create symlinks. Whether an existing path goes
//! through a symlink needs the file system and is checked by the engine.

use crate::error::{Error, Result};

/// One file's part of a multi-file diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    /// Paths as they appear after `a/` and `b/` (`/dev/null` for creation/deletion).
    pub old_path: String,
    pub new_path: String,
    /// Header lines up to the first hunk (`diff --git`, `index`, modes, `---`, `+++`).
    pub header: String,
    pub hunks: Vec<Hunk>,
    /// File modes declared in the header (`new file mode 120000` = symlink).
    pub modes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    pub old_start: u32,
    pub old_len: u32,
    pub new_start: u32,
    pub new_len: u32,
    /// The `@@` line and its body.
    pub text: String,
}

fn parse_range(s: &str) -> (u32, u32) {
    let s = &s[1..];
    match s.split_once(',') {
        Some((a, b)) => (a.parse().unwrap_or(0), b.parse().unwrap_or(0)),
        None => (s.parse().unwrap_or(0), 1),
    }
}

fn strip_prefix(path: &str) -> String {
    let path = path.split('\t').next().unwrap_or(path);
    let path = path.trim_matches('"');
    path.strip_prefix("a/")
        .or_else(|| path.strip_prefix("b/"))
        .unwrap_or(path)
        .to_string()
}

/// Splits a `git diff` into file patches. Text before the first `diff --git` is ignored.
pub fn parse(diff: &str) -> Result<Vec<FilePatch>> {
    let mut files: Vec<FilePatch> = Vec::new();
    for line in diff.split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            let rest = rest.trim_end();
            let (a, b) = rest
                .split_once(" b/")
                .map(|(a, b)| (strip_prefix(a), b.to_string()))
                .ok_or_else(|| {
                    Error::invalid(format!("malformed diff header: {}", line.trim_end()))
                })?;
            files.push(FilePatch {
                old_path: a,
                new_path: b,
                header: line.to_string(),
                hunks: Vec::new(),
                modes: Vec::new(),
            });
            continue;
        }
        let Some(file) = files.last_mut() else {
            continue;
        };
        if line.starts_with("@@") {
            let mut parts = line.split_whitespace().skip(1);
            let old = parts
                .next()
                .filter(|p| p.starts_with('-'))
                .ok_or_else(|| Error::invalid("malformed hunk header"))?;
            let new = parts
                .next()
                .filter(|p| p.starts_with('+'))
                .ok_or_else(|| Error::invalid("malformed hunk header"))?;
            let (old_start, old_len) = parse_range(old);
            let (new_start, new_len) = parse_range(new);
            file.hunks.push(Hunk {
                old_start,
                old_len,
                new_start,
                new_len,
                text: line.to_string(),
            });
        } else if let Some(hunk) = file.hunks.last_mut() {
            hunk.text.push_str(line);
        } else {
            if let Some(p) = line.strip_prefix("--- ") {
                file.old_path = strip_prefix(p.trim_end());
            } else if let Some(p) = line.strip_prefix("+++ ") {
                file.new_path = strip_prefix(p.trim_end());
            } else if let Some(p) = line.strip_prefix("rename to ") {
                file.new_path = p.trim_end().to_string();
            } else if let Some(p) = line.strip_prefix("rename from ") {
                file.old_path = p.trim_end().to_string();
            }
            for key in [
                "new file mode ",
                "old mode ",
                "new mode ",
                "deleted file mode ",
            ] {
                if let Some(mode) = line.strip_prefix(key) {
                    file.modes.push(mode.trim_end().to_string());
                }
            }
            file.header.push_str(line);
        }
    }
    Ok(files)
}

/// Renders file patches back into a diff `git apply` accepts.
pub fn render(files: &[FilePatch]) -> String {
    let mut out = String::new();
    for f in files {
        out.push_str(&f.header);
        for h in &f.hunks {
            out.push_str(&h.text);
        }
    }
    out
}

/// Why a patch was refused.
fn check_path(path: &str) -> Result<()> {
    if path == "/dev/null" {
        return Ok(());
    }
    if path.is_empty() || path.starts_with('/') || path.starts_with('\\') || path.contains('\0') {
        return Err(Error::invalid(format!(
            "patch refused: path {path:?} is not relative to the repository"
        )));
    }
    for component in path.split(['/', '\\']) {
        if component == ".." {
            return Err(Error::invalid(format!(
                "patch refused: path {path:?} leaves the repository"
            )));
        }
        if component.eq_ignore_ascii_case(".git") {
            return Err(Error::invalid(format!(
                "patch refused: path {path:?} is inside .git"
            )));
        }
    }
    Ok(())
}

/// Checks the rules that need no file system: relative paths, no `..`,
/// nothing under `.git/`, no symlinks created, and at least one file.
pub fn validate(files: &[FilePatch]) -> Result<()> {
    if files.is_empty() {
        return Err(Error::invalid("patch refused: it changes no file"));
    }
    for f in files {
        check_path(&f.old_path)?;
        check_path(&f.new_path)?;
        if f.modes.iter().any(|m| m.starts_with("120")) {
            return Err(Error::invalid(format!(
                "patch refused: {} would be a symlink",
                f.new_path
            )));
        }
        if f.modes.iter().any(|m| m.starts_with("160")) {
            return Err(Error::invalid(format!(
                "patch refused: {} changes a submodule",
                f.new_path
            )));
        }
    }
    Ok(())
}

/// Every path a patch reads or writes, for the file-system checks.
pub fn touched_paths(files: &[FilePatch]) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for f in files {
        for p in [&f.old_path, &f.new_path] {
            if p != "/dev/null" && !paths.contains(p) {
                paths.push(p.clone());
            }
        }
    }
    paths
}

/// Lines added plus removed.
pub fn changed_line_count(diff: &str) -> usize {
    diff.lines()
        .filter(|l| {
            (l.starts_with('+') && !l.starts_with("+++"))
                || (l.starts_with('-') && !l.starts_with("---"))
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_FILES: &str = "diff --git a/app.py b/app.py\nindex 1..2 100644\n--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a + b + 1\n+    return a + b\n@@ -10 +10 @@\n-x = 1\n+x = 2\ndiff --git a/README b/README\n--- a/README\n+++ b/README\n@@ -1 +1 @@\n-a\n+b\n";

    #[test]
    fn parses_files_and_hunks() {
        let files = parse(TWO_FILES).unwrap();
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].new_path, "app.py");
        assert_eq!(files[0].hunks.len(), 2);
        assert_eq!(
            (files[0].hunks[1].old_start, files[0].hunks[1].old_len),
            (10, 1)
        );
        assert_eq!(render(&files), TWO_FILES);
        assert_eq!(changed_line_count(TWO_FILES), 6);
    }

    #[test]
    fn accepts_ordinary_patches() {
        assert!(validate(&parse(TWO_FILES).unwrap()).is_ok());
    }

    fn refused(diff: &str) -> String {
        validate(&parse(diff).unwrap()).unwrap_err().message
    }

    #[test]
    fn refuses_hostile_patches() {
        let git_dir = "diff --git a/.git/hooks/pre-commit b/.git/hooks/pre-commit\nnew file mode 100755\n--- /dev/null\n+++ b/.git/hooks/pre-commit\n@@ -0,0 +1 @@\n+curl evil\n";
        assert!(refused(git_dir).contains(".git"));
        let escape = "diff --git a/../etc/passwd b/../etc/passwd\n--- a/../etc/passwd\n+++ b/../etc/passwd\n@@ -1 +1 @@\n-a\n+b\n";
        assert!(refused(escape).contains("leaves the repository"));
        let symlink = "diff --git a/link b/link\nnew file mode 120000\n--- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n+/etc/shadow\n\\ No newline at end of file\n";
        assert!(refused(symlink).contains("symlink"));
        let absolute = "diff --git a/x b/x\n--- a/x\n+++ /etc/x\n@@ -1 +1 @@\n-a\n+b\n";
        assert!(refused(absolute).contains("not relative"));
        let nested_git = "diff --git a/sub/.GIT/config b/sub/.GIT/config\n--- a/sub/.GIT/config\n+++ b/sub/.GIT/config\n@@ -1 +1 @@\n-a\n+b\n";
        assert!(refused(nested_git).contains(".git"));
        assert!(refused("no diff here").contains("changes no file"));
    }

    #[test]
    fn renames_are_checked_on_both_sides() {
        let rename = "diff --git a/a.py b/a.py\nsimilarity index 100%\nrename from a.py\nrename to ../a.py\n";
        assert!(refused(rename).contains("leaves the repository"));
    }
}
