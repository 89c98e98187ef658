//! Warm state per repository: its `Indexer` (the blob cache, loaded from
//! disk once and kept in memory) and the last few `Locator`s built from it.
//!
//! Concurrency: the library's cache writes a snapshot through a temporary
//! file named by process id, so two threads of one process saving the same
//! cache directory at once could interleave their writes. Every index and
//! locator build of a repository therefore runs under that repository's
//! lock; queries on a built locator run outside it, in parallel. Other
//! processes (the CLI) writing the same directory stay safe: their temporary
//! files have other names, renames are atomic and log appends are one write
//! each — at worst a blob is parsed again.
//!
//! Every function here blocks; callers run them through [`crate::work`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tonic::Status;
use tracelab_code_index::callgraph::{Neighbourhood, neighbourhood};
use tracelab_code_index::indexer::{open_repo, resolve_commit};
use tracelab_code_index::{
    IndexSummary, Indexer, Language, LocateOptions, Locations, Locator, Snapshot, default_cache_dir,
};

/// Locators kept per repository (each holds a snapshot and its search indices).
const LOCATORS_PER_REPOSITORY: usize = 4;
/// Call-graph hops a neighbourhood may span.
pub const MAX_DEPTH: u32 = 5;

/// A code-index error as a gRPC status with its message.
pub fn status(e: tracelab_code_index::Error) -> Status {
    tracelab_service::grpc::status_of(e.kind(), e.to_string())
}

/// `Locate`'s hard filters (applied before ranking). Part of a warm
/// locator's key: a locator is built for one set of filters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Filters {
    /// Suspects in these languages only; empty = all.
    pub languages: Vec<Language>,
    /// Suspects under this path only.
    pub path_prefix: Option<String>,
    /// Commits after this revision only (e.g. the last good one).
    pub since_rev: Option<String>,
    /// Newest commits considered; 0 = the library's default.
    pub max_commits: usize,
    /// Whether test files may be suspects.
    pub include_tests: bool,
}

type LocatorKey = (String, usize, Filters);

#[derive(Default)]
struct Warm {
    /// Opened on first use.
    indexer: Option<Indexer>,
    /// Most recently used last; keyed by (commit, top, filters).
    locators: Vec<(LocatorKey, Arc<Locator>)>,
}

/// The warm state of every repository the service has seen.
#[derive(Default)]
pub struct Repositories {
    /// Empty: the library's default (`<git dir>/tracelab/index`).
    cache_root: Option<PathBuf>,
    repos: Mutex<HashMap<PathBuf, Arc<Mutex<Warm>>>>,
}

impl std::fmt::Debug for Repositories {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repositories")
            .field("cache_root", &self.cache_root)
            .finish_non_exhaustive()
    }
}

/// FNV-1a: a name for a repository's cache folder that is stable across
/// builds (std's hasher is not).
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Repositories {
    pub fn new(cache_root: Option<PathBuf>) -> Self {
        Self {
            cache_root,
            repos: Mutex::default(),
        }
    }

    /// Where `repo`'s blob cache lives.
    pub fn cache_dir(&self, repo: &Path) -> Result<PathBuf, Status> {
        match &self.cache_root {
            None => default_cache_dir(repo).map_err(status),
            Some(root) => {
                let name = repo
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let hash = fnv(repo.as_os_str().as_encoded_bytes());
                Ok(root.join(format!("{name}-{hash:016x}")))
            }
        }
    }

    fn warm(&self, repo: &Path) -> Arc<Mutex<Warm>> {
        lock(&self.repos)
            .entry(repo.to_path_buf())
            .or_default()
            .clone()
    }

    fn indexer<'w>(&self, warm: &'w mut Warm, repo: &Path) -> Result<&'w Indexer, Status> {
        if warm.indexer.is_none() {
            let dir = self.cache_dir(repo)?;
            warm.indexer = Some(Indexer::open(&dir).map_err(status)?);
        }
        Ok(warm.indexer.as_ref().expect("opened above"))
    }

    /// Indexes `rev` (HEAD when `None`) and saves the blob cache.
    pub fn index(&self, repo: &Path, rev: Option<&str>) -> Result<IndexSummary, Status> {
        let git = open_repo(repo).map_err(status)?;
        let warm = self.warm(repo);
        let mut warm = lock(&warm);
        let indexer = self.indexer(&mut warm, repo)?;
        let (_, summary) = indexer.index(&git, rev).map_err(status)?;
        indexer.save().map_err(status)?;
        Ok(summary)
    }

    /// The locator of `rev` for `top` results, built (and the cache saved)
    /// when it is not warm yet. Options are `LocateOptions::default()` with
    /// `rev` and `top`, exactly what `tracelab locate` uses.
    pub fn locator(
        &self,
        repo: &Path,
        rev: Option<&str>,
        top: usize,
        filters: &Filters,
    ) -> Result<Arc<Locator>, Status> {
        let git = open_repo(repo).map_err(status)?;
        let commit = resolve_commit(&git, rev).map_err(status)?.id().to_string();
        if let Some(since) = &filters.since_rev {
            resolve_commit(&git, Some(since)).map_err(status)?;
        }
        let key = (commit.clone(), top, filters.clone());
        let warm = self.warm(repo);
        let mut warm = lock(&warm);
        if let Some(i) = warm.locators.iter().position(|(k, _)| *k == key) {
            let entry = warm.locators.remove(i);
            let locator = entry.1.clone();
            warm.locators.push(entry);
            return Ok(locator);
        }
        let defaults = LocateOptions::default();
        let opts = LocateOptions {
            rev: Some(commit),
            top,
            languages: filters.languages.clone(),
            path_prefix: filters.path_prefix.clone(),
            since_rev: filters.since_rev.clone(),
            max_commits: match filters.max_commits {
                0 => defaults.max_commits,
                n => n,
            },
            include_tests: filters.include_tests,
            ..defaults
        };
        let indexer = self.indexer(&mut warm, repo)?;
        let locator = Arc::new(Locator::build(&git, indexer, &opts).map_err(status)?);
        indexer.save().map_err(status)?;
        if warm.locators.len() >= LOCATORS_PER_REPOSITORY {
            warm.locators.remove(0);
        }
        warm.locators.push((key, locator.clone()));
        Ok(locator)
    }

    /// `tracelab locate` on the warm locator.
    pub fn locate(
        &self,
        repo: &Path,
        evidence: &str,
        rev: Option<&str>,
        top: usize,
        filters: &Filters,
    ) -> Result<Locations, Status> {
        let locator = self.locator(repo, rev, top, filters)?;
        locator.locate(evidence).map_err(status)
    }

    /// The snapshot of `rev`: a warm locator's when there is one, else indexed now.
    fn snapshot<R>(
        &self,
        repo: &Path,
        rev: Option<&str>,
        read: impl FnOnce(&Snapshot) -> R,
    ) -> Result<R, Status> {
        let git = open_repo(repo).map_err(status)?;
        let commit = resolve_commit(&git, rev).map_err(status)?.id().to_string();
        let warm = self.warm(repo);
        let mut warm = lock(&warm);
        if let Some((_, l)) = warm
            .locators
            .iter()
            .rev()
            .find(|((c, _, _), _)| *c == commit)
        {
            return Ok(read(&l.snapshot));
        }
        let indexer = self.indexer(&mut warm, repo)?;
        let (snapshot, _) = indexer.index(&git, Some(&commit)).map_err(status)?;
        indexer.save().map_err(status)?;
        Ok(read(&snapshot))
    }

    /// Callers and callees of `symbol` (a qualified name, or a plain name
    /// that names one symbol) up to `depth` hops; also the commit.
    pub fn neighbourhood(
        &self,
        repo: &Path,
        rev: Option<&str>,
        symbol: &str,
        depth: u32,
    ) -> Result<(String, Neighbourhood), Status> {
        if symbol.trim().is_empty() {
            return Err(Status::invalid_argument("symbol is empty"));
        }
        if depth > MAX_DEPTH {
            return Err(Status::invalid_argument(format!(
                "depth {depth} is more than {MAX_DEPTH}"
            )));
        }
        let depth = depth.max(1);
        self.snapshot(repo, rev, |snap| {
            let id = match snap.by_qualified_name(symbol) {
                Some(s) => s.id,
                None => {
                    let named: Vec<_> = snap.symbols.iter().filter(|s| s.name == symbol).collect();
                    match named.as_slice() {
                        [one] => one.id,
                        [] => {
                            return Err(Status::not_found(format!(
                                "no symbol {symbol:?} at {}",
                                snap.commit
                            )));
                        }
                        many => {
                            let names: Vec<&str> = many
                                .iter()
                                .take(10)
                                .map(|s| s.qualified_name.as_str())
                                .collect();
                            return Err(Status::invalid_argument(format!(
                                "{symbol:?} names {} symbols; give the qualified name: {}",
                                many.len(),
                                names.join(", ")
                            )));
                        }
                    }
                }
            };
            Ok((snap.commit.clone(), neighbourhood(snap, id, depth)))
        })?
    }
}
