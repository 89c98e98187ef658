//! Failure text → suspect files, symbols and commits, ranked by the hybrid
//! score with every component reported. `Locator` is built once per
//! (repository, revision, window) and answers many queries; `locate` is the
//! one-shot function `tracelab locate` calls.

use crate::embed::Embedder;
use crate::error::Result;
use crate::evidence::{PathMatcher, parse_frames};
use crate::history::{CommitChanges, blame_lines};
use crate::indexer::{Indexer, default_cache_dir, open_repo};
use crate::lang::{Language, is_test_path, is_test_symbol};
use crate::lexical::LexicalIndex;
use crate::model::{Symbol, SymbolId};
use crate::sbfl::TestRun;
use crate::score::{Component, Reason, Weights, combine, time_decay};
use crate::snapshot::Snapshot;
use crate::tokenize::tokens;
use crate::vector::{ExactCosineIndex, Filter, VectorIndex};
use git2::Repository;

mod baseline;
mod build;
mod commits;
mod signals;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Frames further out weigh less: the j-th in-repository frame weighs 0.85^j.
const FRAME_DECAY: f64 = 0.85;
/// A callee of a frame's function is suspect (it ran before the crash and
/// may have returned the bad value), a caller less so.
const CALLEE: f64 = 0.6;
const CALLEE_2: f64 = 0.3;
const CALLER: f64 = 0.3;
/// A definition whose exact name appears in the evidence.
const MENTIONED: f64 = 0.5;
/// Frames whose lines are blamed to find the commits that last changed them.
const BLAMED_FRAMES: usize = 5;
/// Blame of the j-th frame's line weighs 0.5^j: the newest change to the
/// crash line is the classic culprit; outer frames' lines much less so.
const BLAME_DECAY: f64 = 0.5;
/// Blame of a line in a test file: the commit that wrote the test is rarely
/// the culprit.
const TEST_BLAME: f64 = 0.3;
/// A commit touching a suspect symbol (but not the frame line itself).
const TOUCHES: f64 = 0.8;
/// How many lexical / vector hits become candidates.
const CANDIDATES: usize = 300;

#[derive(Clone)]
pub struct LocateOptions {
    /// Revision to locate in (HEAD when `None`).
    pub rev: Option<String>,
    /// Results per list.
    pub top: usize,
    /// Blob cache directory (`<git dir>/tracelab/index` when `None`).
    pub cache_dir: Option<PathBuf>,
    /// Hard filter: languages (all when empty).
    pub languages: Vec<Language>,
    /// Hard filter: path prefix of suspects.
    pub path_prefix: Option<String>,
    /// Revision window: commits after this one (exclusive), e.g. the last
    /// good revision. `None`: the newest `max_commits`.
    pub since_rev: Option<String>,
    pub max_commits: usize,
    /// Whether test files may be suspects (they always seed the failing path).
    pub include_tests: bool,
    /// Whether the history window's test files are parsed for the symbols
    /// their commits touched. Only the commits' ranking reads those (a
    /// commit that changed a failing test function); a caller that wants
    /// suspects alone, without test files among them, skips them: on a
    /// project whose tests change with most commits they were a third or
    /// more of the history's parsing.
    pub test_history: bool,
    pub weights: Weights,
    pub half_life_days: f64,
    pub embedder: Option<Arc<dyn Embedder>>,
    /// Per-test coverage of a suite run (`coverage::collect`): adds the
    /// `spectrum` component to the one-shot [`locate`].
    pub spectrum: Option<Arc<[TestRun]>>,
}

impl std::fmt::Debug for LocateOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocateOptions")
            .field("rev", &self.rev)
            .field("top", &self.top)
            .field("languages", &self.languages)
            .field("path_prefix", &self.path_prefix)
            .field("since_rev", &self.since_rev)
            .field("max_commits", &self.max_commits)
            .field(
                "embedder",
                &self.embedder.as_ref().map(|e| e.model_id().to_string()),
            )
            .field("spectrum_tests", &self.spectrum.as_ref().map(|s| s.len()))
            .finish_non_exhaustive()
    }
}

impl Default for LocateOptions {
    fn default() -> Self {
        Self {
            rev: None,
            top: 10,
            cache_dir: None,
            languages: Vec::new(),
            path_prefix: None,
            since_rev: None,
            max_commits: 100,
            include_tests: false,
            test_history: true,
            weights: Weights::default(),
            half_life_days: 14.0,
            embedder: None,
            spectrum: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileLocation {
    pub path: String,
    pub score: f64,
    pub reasons: Vec<Reason>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SymbolLocation {
    /// Qualified name.
    pub symbol: String,
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub score: f64,
    pub reasons: Vec<Reason>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommitLocation {
    pub commit: String,
    pub score: f64,
    pub reasons: Vec<Reason>,
}

/// What `tracelab locate --format json` prints, best first in each list.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Locations {
    pub files: Vec<FileLocation>,
    pub symbols: Vec<SymbolLocation>,
    pub commits: Vec<CommitLocation>,
}

/// An in-repository frame of the evidence.
#[derive(Debug, Clone)]
pub struct RepoFrame {
    /// Position among in-repository frames, innermost = 0.
    pub index: usize,
    pub path: String,
    pub line: Option<u32>,
    pub symbol: Option<SymbolId>,
    pub weight: f64,
}

/// The retrieval engine over one snapshot and its recent history.
pub struct Locator {
    pub snapshot: Snapshot,
    matcher: PathMatcher,
    symbol_bm25: LexicalIndex,
    commits: Vec<CommitChanges>,
    commit_bm25: LexicalIndex,
    by_qname: HashMap<String, SymbolId>,
    /// Callables by name (4+ characters), for names the evidence mentions.
    by_name: HashMap<String, Vec<SymbolId>>,
    symbol_changed: HashMap<String, i64>,
    file_changed: HashMap<String, i64>,
    embedder: Option<Arc<dyn Embedder>>,
    symbol_vectors: Option<ExactCosineIndex>,
    commit_vectors: Option<ExactCosineIndex>,
    opts: LocateOptions,
    /// The git directory, reopened per query for blame (a `Repository` is
    /// not `Sync`); `None` without history.
    git_dir: Option<PathBuf>,
}

impl std::fmt::Debug for Locator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Locator")
            .field("commit", &self.snapshot.commit)
            .field("symbols", &self.snapshot.symbols.len())
            .field("commits", &self.commits.len())
            .finish_non_exhaustive()
    }
}

impl Locator {
    /// The commits of the revision window, newest first, with touched symbols.
    pub fn window(&self) -> &[CommitChanges] {
        &self.commits
    }

    /// The evidence's frames that point into the repository, innermost first.
    pub fn repo_frames(&self, evidence: &str) -> Vec<RepoFrame> {
        let mut out: Vec<RepoFrame> = Vec::new();
        for f in parse_frames(evidence).into_iter().rev() {
            let Some(path) = self.matcher.resolve(&f) else {
                continue;
            };
            let symbol = match f.line {
                Some(l) => self.snapshot.innermost_at(&path, l).map(|s| s.id),
                None => f.function.as_deref().and_then(|func| {
                    let last = func.rsplit(['.', ':']).next().unwrap_or(func);
                    self.snapshot
                        .symbols_in(&path)
                        .iter()
                        .find(|s| s.name == last)
                        .map(|s| s.id)
                }),
            };
            if out.iter().any(|o| o.path == path && o.line == f.line) {
                continue;
            }
            let index = out.len();
            out.push(RepoFrame {
                index,
                path,
                line: f.line,
                symbol,
                weight: FRAME_DECAY.powi(index as i32),
            });
        }
        out
    }

    /// Whether a symbol may be a suspect: the hard filters, and not test
    /// code (a test file or a Rust `mod tests`) unless tests are included.
    pub fn passes(&self, s: &Symbol) -> bool {
        self.passes_filters(&s.path, s.language)
            && (self.opts.include_tests || !is_test_symbol(&s.path, &s.qualified_name))
    }

    fn passes_filters(&self, path: &str, language: Language) -> bool {
        (self.opts.languages.is_empty() || self.opts.languages.contains(&language))
            && self
                .opts
                .path_prefix
                .as_deref()
                .is_none_or(|p| path.starts_with(p))
            && (self.opts.include_tests || !is_test_path(path))
    }

    /// Ranks suspects for a failure's text.
    pub fn locate(&self, evidence: &str) -> Result<Locations> {
        self.locate_with(evidence, None)
    }

    /// Ranks suspects for a failure's text and, when given, the per-test
    /// coverage of a suite run in which it failed (the `spectrum`
    /// component; unavailable when no covered test failed).
    pub fn locate_with(&self, evidence: &str, spectrum: Option<&[TestRun]>) -> Result<Locations> {
        let snap = &self.snapshot;
        let frames = self.repo_frames(evidence);
        let overlap = self.overlap(&frames, evidence);
        let query = tokens(evidence);
        let bm25 = self.bm25_symbols(&query)?;
        let embedding = self.embedding_symbols(evidence)?;
        let sbfl = spectrum.map_or_else(HashMap::new, |runs| self.spectrum_symbols(runs));
        let effective = self
            .opts
            .weights
            .effective(&self.available(&frames, !sbfl.is_empty()));

        let mut candidates: BTreeSet<SymbolId> = BTreeSet::new();
        candidates.extend(overlap.keys());
        candidates.extend(bm25.keys());
        candidates.extend(embedding.keys());
        candidates.extend(sbfl.keys());
        for f in &frames {
            candidates.extend(snap.symbols_in(&f.path).iter().map(|s| s.id));
        }
        let mut symbols = Vec::new();
        let mut per_file: HashMap<String, [(f64, String); 4]> = HashMap::new();
        for id in candidates {
            let s = snap.symbol(id);
            if !s.kind.is_callable() || !self.passes(s) {
                continue;
            }
            let (ov, ov_why) = overlap.get(&id).cloned().unwrap_or((0.0, String::new()));
            let (px, px_why) = self.frame_proximity(&frames, &s.path);
            let b = bm25.get(&id).copied().unwrap_or(0.0);
            let em = embedding.get(&id).copied().unwrap_or(0.0);
            let (td, td_why) = self.decay_for(Some(&s.qualified_name), &s.path);
            let (sp, sp_why) = sbfl.get(&id).cloned().unwrap_or((0.0, String::new()));
            let fe = per_file.entry(s.path.clone()).or_default();
            for (slot, (v, why)) in fe.iter_mut().zip([
                (ov, &ov_why),
                (b, &String::new()),
                (em, &String::new()),
                (sp, &sp_why),
            ]) {
                if v > slot.0 {
                    *slot = (
                        v,
                        format!(
                            "{}{}{}",
                            s.qualified_name,
                            if why.is_empty() { "" } else { ": " },
                            why
                        ),
                    );
                }
            }
            let (score, reasons) = combine(
                &effective,
                vec![
                    (Component::SymbolOverlap, ov, ov_why),
                    (Component::PathProximity, px, px_why),
                    (
                        Component::Bm25,
                        b,
                        format!("{b:.2} of the best lexical match"),
                    ),
                    (Component::Embedding, em, format!("cosine {em:.2}")),
                    (Component::TimeDecay, td, td_why),
                    (Component::Spectrum, sp, sp_why),
                ],
            );
            symbols.push(SymbolLocation {
                symbol: s.qualified_name.clone(),
                path: s.path.clone(),
                start_line: s.start_line,
                end_line: s.end_line,
                score,
                reasons,
            });
        }
        // Frame files without a callable at the frame line (module-level code).
        for f in &frames {
            let lang = snap.file(&f.path).map(|e| e.language);
            if lang.is_some_and(|l| self.passes_filters(&f.path, l)) {
                let fe = per_file.entry(f.path.clone()).or_default();
                if f.weight > fe[0].0 {
                    fe[0] = (
                        f.weight,
                        format!("stack frame #{} is in this file", f.index),
                    );
                }
            }
        }
        let mut files: Vec<FileLocation> = per_file
            .into_iter()
            .map(
                |(path, [(ov, ov_why), (b, b_why), (em, em_why), (sp, sp_why)])| {
                    let (px, px_why) = self.frame_proximity(&frames, &path);
                    let (td, td_why) = self.decay_for(None, &path);
                    let (score, reasons) = combine(
                        &effective,
                        vec![
                            (Component::SymbolOverlap, ov, ov_why),
                            (Component::PathProximity, px, px_why),
                            (Component::Bm25, b, format!("best symbol {b_why}")),
                            (Component::Embedding, em, format!("best symbol {em_why}")),
                            (Component::TimeDecay, td, td_why),
                            (Component::Spectrum, sp, format!("best symbol {sp_why}")),
                        ],
                    );
                    FileLocation {
                        path,
                        score,
                        reasons,
                    }
                },
            )
            .collect();

        let commits = self.rank_commits(&frames, &overlap, &sbfl, &query, evidence, &effective)?;
        let top = self.opts.top;
        sort_and_cut(&mut symbols, top, |s| (s.score, s.symbol.clone()));
        sort_and_cut(&mut files, top, |f| (f.score, f.path.clone()));
        let mut commits = commits;
        sort_and_cut(&mut commits, top, |c| (c.score, c.commit.clone()));
        Ok(Locations {
            files,
            symbols,
            commits,
        })
    }
}

fn sort_and_cut<T>(v: &mut Vec<T>, top: usize, key: impl Fn(&T) -> (f64, String)) {
    v.sort_by(|a, b| {
        let (sa, na) = key(a);
        let (sb, nb) = key(b);
        sb.total_cmp(&sa).then(na.cmp(&nb))
    });
    v.truncate(top);
}

/// Indexes `opts.rev` of `repo` (reusing the blob cache) and ranks suspects
/// for the failure text `evidence`. What `tracelab locate` runs.
pub fn locate(repo: &Path, evidence: &str, opts: &LocateOptions) -> Result<Locations> {
    let r = open_repo(repo)?;
    let cache_dir = match &opts.cache_dir {
        Some(d) => d.clone(),
        None => default_cache_dir(repo)?,
    };
    let indexer = Indexer::open(&cache_dir)?;
    let locator = Locator::build(&r, &indexer, opts)?;
    indexer.save()?;
    locator.locate_with(evidence, opts.spectrum.as_deref())
}
