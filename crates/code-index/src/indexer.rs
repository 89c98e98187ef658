//! Indexing a commit: walk its tree, parse only blobs the cache has not seen
//! (in parallel, one tree-sitter parser per worker thread), then build the
//! snapshot.

use crate::cache::BlobCache;
use crate::error::{Error, Result};
use crate::extract::parse_file;
use crate::lang::Language;
use crate::model::ParsedFile;
use crate::snapshot::Snapshot;
use git2::{ObjectType, Oid, Repository, TreeWalkMode, TreeWalkResult};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Files larger than this are skipped (generated or vendored, not code a
/// person fixes).
pub const MAX_FILE_BYTES: usize = 1 << 20;

/// What one `index` call did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexSummary {
    pub commit: String,
    /// Source files in the commit's tree, in supported languages.
    pub files: usize,
    /// Files parsed by this call (the rest came from the blob cache).
    pub parsed_files: usize,
    pub cached_files: usize,
    pub parsed_bytes: u64,
    pub symbols: usize,
    /// Calls written in functions. They are resolved into call edges when
    /// the call graph is first used (`Snapshot::edges`), not by indexing.
    pub call_sites: usize,
    pub diagnostics: usize,
    pub elapsed_ms: f64,
    pub cache_dir: Option<PathBuf>,
}

/// Holds the blob cache; index as many commits of as many repositories as
/// you like through one `Indexer`.
#[derive(Debug, Default)]
pub struct Indexer {
    cache: BlobCache,
    cache_dir: Option<PathBuf>,
}

/// The default cache directory of a repository: `<git dir>/tracelab/index`.
pub fn default_cache_dir(repo: &Path) -> Result<PathBuf> {
    let r = Repository::open(repo)?;
    Ok(r.path().join("tracelab").join("index"))
}

/// Opens `repo` (a working tree or bare repository, local only).
pub fn open_repo(repo: &Path) -> Result<Repository> {
    Repository::open(repo).map_err(|e| match e.code() {
        git2::ErrorCode::NotFound => {
            Error::InvalidArgument(format!("{} is not a git repository", repo.display()))
        }
        _ => Error::Git(e),
    })
}

/// Resolves a revision (`HEAD` when `None`) to a commit.
pub fn resolve_commit<'r>(repo: &'r Repository, rev: Option<&str>) -> Result<git2::Commit<'r>> {
    let rev = rev.unwrap_or("HEAD");
    let obj = repo
        .revparse_single(rev)
        .map_err(|e| Error::RevisionNotFound {
            rev: rev.to_string(),
            message: e.message().to_string(),
        })?;
    obj.peel_to_commit().map_err(|e| Error::RevisionNotFound {
        rev: rev.to_string(),
        message: e.message().to_string(),
    })
}

impl Indexer {
    /// An indexer with an in-memory cache only.
    pub fn in_memory() -> Self {
        Self::default()
    }

    /// An indexer whose blob cache lives in `cache_dir` (loaded now, written
    /// by `save`).
    pub fn open(cache_dir: &Path) -> Result<Self> {
        Ok(Self {
            cache: BlobCache::load(cache_dir)?,
            cache_dir: Some(cache_dir.to_path_buf()),
        })
    }

    pub fn cache(&self) -> &BlobCache {
        &self.cache
    }

    pub fn save(&self) -> Result<()> {
        match &self.cache_dir {
            Some(dir) => self.cache.save(dir),
            None => Ok(()),
        }
    }

    /// Indexes the commit `rev` names (HEAD when `None`).
    pub fn index(&self, repo: &Repository, rev: Option<&str>) -> Result<(Snapshot, IndexSummary)> {
        let started = Instant::now();
        let commit = resolve_commit(repo, rev)?;
        let tree = commit.tree()?;
        let mut entries: Vec<(String, Oid, Language)> = Vec::new();
        tree.walk(TreeWalkMode::PreOrder, |dir, entry| {
            if entry.kind() == Some(ObjectType::Tree) {
                let name = entry.name().unwrap_or("");
                let skip = matches!(name, "node_modules" | "vendor" | "third_party" | ".git");
                return if skip {
                    TreeWalkResult::Skip
                } else {
                    TreeWalkResult::Ok
                };
            }
            if entry.kind() != Some(ObjectType::Blob) {
                return TreeWalkResult::Ok;
            }
            let Ok(name) = entry.name() else {
                return TreeWalkResult::Ok;
            };
            if name.ends_with(".min.js") || name.ends_with(".d.ts") {
                return TreeWalkResult::Ok;
            }
            let path = format!("{dir}{name}");
            if let Some(lang) = Language::from_path(&path) {
                entries.push((path, entry.id(), lang));
            }
            TreeWalkResult::Ok
        })?;
        let (parsed, parsed_bytes) = self.parse_blobs(repo, &entries)?;
        let parsed_files = parsed;
        let mut files = Vec::with_capacity(entries.len());
        for (path, oid, _) in &entries {
            let key = oid.to_string();
            if let Some(p) = self.cache.get(&key) {
                files.push((path.clone(), key, p));
            }
        }
        let snap = Snapshot::build(commit.id().to_string(), commit.time().seconds(), files);
        let summary = IndexSummary {
            commit: snap.commit.clone(),
            files: snap.files.len(),
            parsed_files,
            cached_files: snap.files.len().saturating_sub(parsed_files),
            parsed_bytes,
            symbols: snap.symbols.len(),
            call_sites: snap.call_sites(),
            diagnostics: snap.diagnostics.len(),
            elapsed_ms: started.elapsed().as_secs_f64() * 1e3,
            cache_dir: self.cache_dir.clone(),
        };
        Ok((snap, summary))
    }

    /// Parses the blobs of `entries` the cache does not hold, in parallel;
    /// returns how many were parsed and their total size.
    pub(crate) fn parse_blobs(
        &self,
        repo: &Repository,
        entries: &[(String, Oid, Language)],
    ) -> Result<(usize, u64)> {
        let mut todo: Vec<(String, &str, Language, Vec<u8>)> = Vec::new();
        let mut queued = std::collections::HashSet::new();
        for (path, oid, lang) in entries {
            let key = oid.to_string();
            if self.cache.get(&key).is_some() || !queued.insert(*oid) {
                continue;
            }
            // Reading is cheap next to parsing; git2's Repository is not Sync,
            // so blobs are read here and parsed in parallel below.
            let blob = repo.find_blob(*oid)?;
            let content = blob.content();
            if content.len() > MAX_FILE_BYTES {
                self.cache
                    .insert(key, Arc::new(too_large(*lang, content.len())));
                continue;
            }
            todo.push((key, path.as_str(), *lang, content.to_vec()));
        }
        let bytes: u64 = todo.iter().map(|t| t.3.len() as u64).sum();
        let parse = |(key, path, lang, content): (String, &str, Language, Vec<u8>)| {
            (key, parse_file(lang, path, &content))
        };
        // A handful of files (an incremental update) parse faster inline
        // than after waking the thread pool.
        let results: Vec<(String, ParsedFile)> = if todo.len() <= 2 {
            todo.into_iter().map(parse).collect()
        } else {
            todo.into_par_iter().map(parse).collect()
        };
        let n = results.len();
        self.cache.count_parse(n as u64);
        for (key, parsed) in results {
            self.cache.insert(key, Arc::new(parsed));
        }
        Ok((n, bytes))
    }

    /// The parse of one blob (from the cache, or parsed now and cached).
    pub fn parsed_blob(
        &self,
        repo: &Repository,
        oid: Oid,
        path: &str,
    ) -> Result<Option<Arc<ParsedFile>>> {
        let Some(lang) = Language::from_path(path) else {
            return Ok(None);
        };
        let key = oid.to_string();
        if let Some(p) = self.cache.get(&key) {
            return Ok(Some(p));
        }
        let blob = repo.find_blob(oid)?;
        let content = blob.content();
        if content.len() > MAX_FILE_BYTES {
            let parsed = Arc::new(too_large(lang, content.len()));
            self.cache.insert(key, parsed.clone());
            return Ok(Some(parsed));
        }
        let parsed = Arc::new(parse_file(lang, path, content));
        self.cache.count_parse(1);
        self.cache.insert(key, parsed.clone());
        Ok(Some(parsed))
    }
}

/// What a file above [`MAX_FILE_BYTES`] is indexed as: no symbols, and a
/// diagnostic saying why.
fn too_large(language: Language, bytes: usize) -> ParsedFile {
    ParsedFile {
        language,
        module_hint: None,
        defs: Vec::new(),
        imports: Vec::new(),
        diagnostics: vec![crate::model::Diagnostic {
            line: 1,
            message: format!("skipped: {bytes} bytes"),
        }],
        lines: 0,
    }
}

/// Indexes `rev` (HEAD when `None`) of the repository at `repo`, with the
/// blob cache in `cache_dir` (created if missing). What `tracelab index` runs.
pub fn index_repository(repo: &Path, rev: Option<&str>, cache_dir: &Path) -> Result<IndexSummary> {
    let r = open_repo(repo)?;
    let indexer = Indexer::open(cache_dir)?;
    let (_, summary) = indexer.index(&r, rev)?;
    indexer.save()?;
    Ok(summary)
}
