//! History with git2 (local repositories only): commits, diffs split into
//! hunks mapped to the symbols they touch on the old and the new side,
//! per-file and per-symbol change history, and blame for stack-frame lines.

use crate::error::Result;
use crate::indexer::{Indexer, resolve_commit};
use crate::lang::Language;
use crate::model::SymbolKind;
use crate::snapshot::file_symbols;
use git2::{Commit, DiffFindOptions, DiffOptions, Oid, Repository, Sort};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::Path;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitInfo {
    pub sha: String,
    pub author: String,
    pub email: String,
    /// Seconds since the epoch (author time).
    pub time: i64,
    pub message: String,
    pub parents: Vec<String>,
}

impl CommitInfo {
    pub fn from_commit(c: &Commit<'_>) -> Self {
        let author = c.author();
        CommitInfo {
            sha: c.id().to_string(),
            author: author.name().unwrap_or("").to_string(),
            email: author.email().unwrap_or("").to_string(),
            time: author.when().seconds(),
            message: c.message().unwrap_or("").to_string(),
            parents: c.parent_ids().map(|p| p.to_string()).collect(),
        }
    }

    pub fn summary(&self) -> &str {
        self.message.lines().next().unwrap_or("")
    }
}

/// A symbol a hunk touched, as it was on that side of the diff.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TouchedSymbol {
    pub qualified_name: String,
    pub kind: SymbolKind,
    pub start_line: u32,
    pub end_line: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hunk {
    pub old_start: u32,
    pub old_lines: u32,
    pub new_start: u32,
    pub new_lines: u32,
    /// Symbols containing a removed line (old side).
    pub old_symbols: Vec<TouchedSymbol>,
    /// Symbols containing an added line (new side).
    pub new_symbols: Vec<TouchedSymbol>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    pub old_path: Option<String>,
    pub new_path: Option<String>,
    /// `added`, `deleted`, `modified`, `renamed`, ...
    pub status: String,
    pub hunks: Vec<Hunk>,
}

impl FileChange {
    pub fn path(&self) -> &str {
        self.new_path
            .as_deref()
            .or(self.old_path.as_deref())
            .unwrap_or("")
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitChanges {
    pub commit: CommitInfo,
    pub files: Vec<FileChange>,
}

impl CommitChanges {
    /// Qualified names touched on either side.
    pub fn touched_symbols(&self) -> BTreeSet<String> {
        self.touched(|_| true)
    }

    /// Functions and methods touched on either side: what a fix "changes".
    pub fn touched_callables(&self) -> BTreeSet<String> {
        self.touched(|s| s.kind.is_callable())
    }

    fn touched(&self, keep: impl Fn(&TouchedSymbol) -> bool) -> BTreeSet<String> {
        self.files
            .iter()
            .flat_map(|f| &f.hunks)
            .flat_map(|h| h.old_symbols.iter().chain(&h.new_symbols))
            .filter(|s| keep(s))
            .map(|s| s.qualified_name.clone())
            .collect()
    }

    pub fn paths(&self) -> BTreeSet<String> {
        self.files.iter().map(|f| f.path().to_string()).collect()
    }
}

/// Commits reachable from `rev` (HEAD when `None`), newest first, at most
/// `limit`, none older than `since` (seconds since the epoch).
pub fn commits(
    repo: &Repository,
    rev: Option<&str>,
    limit: usize,
    since: Option<i64>,
) -> Result<Vec<CommitInfo>> {
    let head = resolve_commit(repo, rev)?;
    let mut walk = repo.revwalk()?;
    walk.set_sorting(Sort::TOPOLOGICAL | Sort::TIME)?;
    walk.push(head.id())?;
    let mut out = Vec::new();
    for oid in walk {
        if out.len() >= limit {
            break;
        }
        let c = repo.find_commit(oid?)?;
        if since.is_some_and(|s| c.time().seconds() < s) {
            continue;
        }
        out.push(CommitInfo::from_commit(&c));
    }
    Ok(out)
}

/// Both sides of every file the `commits` changed against their first
/// parents, in a language the index reads: the blobs [`commit_changes`]
/// parses, listed without parsing them so they can be parsed together
/// (and in parallel) first.
pub fn changed_blobs(repo: &Repository, commits: &[Oid]) -> Result<Vec<(String, Oid, Language)>> {
    let mut out = Vec::new();
    for oid in commits {
        let commit = repo.find_commit(*oid)?;
        let tree = commit.tree()?;
        let parent_tree = match commit.parent(0) {
            Ok(p) => Some(p.tree()?),
            Err(_) => None,
        };
        let diff = repo.diff_tree_to_tree(parent_tree.as_ref(), Some(&tree), None)?;
        for delta in diff.deltas() {
            for side in [delta.old_file(), delta.new_file()] {
                let (Some(path), false) = (side.path().map(path_string), side.id().is_zero())
                else {
                    continue;
                };
                if let Some(language) = Language::from_path(&path) {
                    out.push((path, side.id(), language));
                }
            }
        }
    }
    Ok(out)
}

/// The changes of commit `rev` against its first parent (the empty tree for
/// a root commit), restricted to `paths` when given, with touched symbols.
pub fn commit_changes(
    repo: &Repository,
    indexer: &Indexer,
    rev: &str,
    paths: Option<&[&str]>,
) -> Result<CommitChanges> {
    commit_changes_where(repo, indexer, rev, paths, |_| true)
}

/// [`commit_changes`] with the touched symbols of the files `symbols_of`
/// accepts only (the others keep their hunks, with no symbols, and are not
/// parsed).
pub fn commit_changes_where(
    repo: &Repository,
    indexer: &Indexer,
    rev: &str,
    paths: Option<&[&str]>,
    symbols_of: impl Fn(&str) -> bool,
) -> Result<CommitChanges> {
    let commit = resolve_commit(repo, Some(rev))?;
    let tree = commit.tree()?;
    let parent_tree = match commit.parent(0) {
        Ok(p) => Some(p.tree()?),
        Err(_) => None,
    };
    let mut opts = DiffOptions::new();
    opts.context_lines(0);
    for p in paths.unwrap_or(&[]) {
        opts.pathspec(*p);
    }
    let mut diff = repo.diff_tree_to_tree(parent_tree.as_ref(), Some(&tree), Some(&mut opts))?;
    if paths.is_none() {
        diff.find_similar(Some(DiffFindOptions::new().renames(true)))?;
    }
    let mut files = Vec::new();
    for idx in 0..diff.deltas().len() {
        let Some(delta) = diff.get_delta(idx) else {
            continue;
        };
        let old_path = delta.old_file().path().map(path_string);
        let new_path = delta.new_file().path().map(path_string);
        let status = format!("{:?}", delta.status()).to_lowercase();
        let old_wanted = old_path.as_deref().filter(|p| symbols_of(p));
        let new_wanted = new_path.as_deref().filter(|p| symbols_of(p));
        let old_syms = side_symbols(repo, indexer, delta.old_file().id(), old_wanted)?;
        let new_syms = side_symbols(repo, indexer, delta.new_file().id(), new_wanted)?;
        let mut hunks = Vec::new();
        if let Some(patch) = git2::Patch::from_diff(&diff, idx)? {
            for h in 0..patch.num_hunks() {
                let (hunk, n) = patch.hunk(h)?;
                let (mut removed, mut added) = (Vec::new(), Vec::new());
                for l in 0..n {
                    let line = patch.line_in_hunk(h, l)?;
                    match line.origin() {
                        '-' => removed.extend(line.old_lineno()),
                        '+' => added.extend(line.new_lineno()),
                        _ => {}
                    }
                }
                hunks.push(Hunk {
                    old_start: hunk.old_start(),
                    old_lines: hunk.old_lines(),
                    new_start: hunk.new_start(),
                    new_lines: hunk.new_lines(),
                    old_symbols: touching(&old_syms, &removed),
                    new_symbols: touching(&new_syms, &added),
                });
            }
        }
        files.push(FileChange {
            old_path,
            new_path,
            status,
            hunks,
        });
    }
    Ok(CommitChanges {
        commit: CommitInfo::from_commit(&commit),
        files,
    })
}

fn path_string(p: &Path) -> String {
    p.to_string_lossy().replace('\\', "/")
}

fn side_symbols(
    repo: &Repository,
    indexer: &Indexer,
    oid: Oid,
    path: Option<&str>,
) -> Result<Vec<crate::model::Symbol>> {
    let Some(path) = path else {
        return Ok(Vec::new());
    };
    if oid.is_zero() {
        return Ok(Vec::new());
    }
    Ok(match indexer.parsed_blob(repo, oid, path)? {
        Some(parsed) => file_symbols(path, &parsed),
        None => Vec::new(),
    })
}

fn touching(symbols: &[crate::model::Symbol], lines: &[u32]) -> Vec<TouchedSymbol> {
    symbols
        .iter()
        .filter(|s| s.kind != SymbolKind::Impl && lines.iter().any(|&l| s.contains_line(l)))
        .map(|s| TouchedSymbol {
            qualified_name: s.qualified_name.clone(),
            kind: s.kind,
            start_line: s.start_line,
            end_line: s.end_line,
        })
        .collect()
}

/// Commits (newest first, at most `limit`) whose first-parent diff changes
/// the file at `path` (added, modified or deleted there).
pub fn file_history(
    repo: &Repository,
    rev: Option<&str>,
    path: &str,
    limit: usize,
) -> Result<Vec<CommitInfo>> {
    let head = resolve_commit(repo, rev)?;
    let mut walk = repo.revwalk()?;
    walk.set_sorting(Sort::TOPOLOGICAL | Sort::TIME)?;
    walk.push(head.id())?;
    let p = Path::new(path);
    let mut out = Vec::new();
    for oid in walk {
        if out.len() >= limit {
            break;
        }
        let c = repo.find_commit(oid?)?;
        let here = c.tree()?.get_path(p).ok().map(|e| e.id());
        let before = match c.parent(0) {
            Ok(parent) => parent.tree()?.get_path(p).ok().map(|e| e.id()),
            Err(_) => None,
        };
        if here != before {
            out.push(CommitInfo::from_commit(&c));
        }
    }
    Ok(out)
}

/// Commits (newest first) that touched the symbol `qualified_name` defined
/// in `path`, with the symbol's extent on the new side (old side for a
/// deletion).
pub fn symbol_history(
    repo: &Repository,
    indexer: &Indexer,
    rev: Option<&str>,
    path: &str,
    qualified_name: &str,
    limit: usize,
) -> Result<Vec<(CommitInfo, TouchedSymbol)>> {
    let mut out = Vec::new();
    for c in file_history(repo, rev, path, usize::MAX)? {
        if out.len() >= limit {
            break;
        }
        let changes = commit_changes(repo, indexer, &c.sha, Some(&[path]))?;
        let hit = changes
            .files
            .iter()
            .flat_map(|f| &f.hunks)
            .flat_map(|h| h.new_symbols.iter().chain(&h.old_symbols))
            .find(|s| s.qualified_name == qualified_name)
            .cloned();
        if let Some(s) = hit {
            out.push((changes.commit, s));
        }
    }
    Ok(out)
}

/// Who last changed a line, as `git blame` at `rev` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlameLine {
    pub line: u32,
    pub commit: String,
    pub author: String,
    pub time: i64,
    pub summary: String,
    /// The line's number in that commit.
    pub original_line: u32,
}

/// Blame for the given lines of `path` at `rev` (lines past the end are
/// skipped): the lines of a stack frame.
pub fn blame_lines(
    repo: &Repository,
    rev: Option<&str>,
    path: &str,
    lines: &[u32],
) -> Result<Vec<BlameLine>> {
    let head = resolve_commit(repo, rev)?;
    let (Some(&lo), Some(&hi)) = (lines.iter().min(), lines.iter().max()) else {
        return Ok(Vec::new());
    };
    let mut opts = git2::BlameOptions::new();
    opts.newest_commit(head.id())
        .min_line(lo.max(1) as usize)
        .max_line(hi.max(1) as usize);
    let blame = match repo.blame_file(Path::new(path), Some(&mut opts)) {
        Ok(b) => b,
        // Lines past the end of the file make libgit2 refuse the range.
        Err(e)
            if e.code() == git2::ErrorCode::Invalid || e.class() == git2::ErrorClass::Invalid =>
        {
            return Ok(Vec::new());
        }
        Err(e) => return Err(e.into()),
    };
    let mut out = Vec::new();
    for &line in lines {
        let Some(h) = blame.get_line(line as usize) else {
            continue;
        };
        let commit = repo.find_commit(h.final_commit_id())?;
        let info = CommitInfo::from_commit(&commit);
        out.push(BlameLine {
            line,
            commit: info.sha.clone(),
            author: info.author.clone(),
            time: info.time,
            summary: info.summary().to_string(),
            original_line: (h.orig_start_line() + (line as usize - h.final_start_line())) as u32,
        });
    }
    Ok(out)
}
