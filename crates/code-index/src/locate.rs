//! Failure text → suspect files, symbols and commits, ranked by the hybrid
//! score with every component reported. `Locator` is built once per
//! (repository, revision, window) and answers many queries; `locate` is the
//! one-shot function `tracelab locate` calls.

use crate::callgraph::reachable;
use crate::embed::Embedder;
use crate::error::Result;
use crate::evidence::{PathMatcher, parse_frames};
use crate::history::{CommitChanges, blame_lines, commit_changes};
use crate::indexer::{Indexer, default_cache_dir, open_repo, resolve_commit};
use crate::lang::{Language, is_test_path, is_test_symbol};
use crate::lexical::LexicalIndex;
use crate::model::{Symbol, SymbolId};
use crate::sbfl::{TestRun, ochiai, rank_functions};
use crate::score::{Component, Reason, Weights, combine, path_proximity, time_decay};
use crate::snapshot::Snapshot;
use crate::tokenize::tokens;
use crate::vector::{ExactCosineIndex, Filter, Payload, Record, VectorIndex};
use git2::Repository;

mod baseline;
mod commits;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap, HashSet};
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

/// Text a symbol is found by: its name (three times: names matter most),
/// qualified name, signature, doc and, for functions, its body.
fn symbol_text(s: &Symbol, lines: &[&str]) -> String {
    let mut text = format!(
        "{0} {0} {0} {1} {2} {3}",
        s.name,
        s.qualified_name,
        s.signature,
        s.doc.as_deref().unwrap_or("")
    );
    if s.kind.is_callable() {
        let lo = (s.start_line as usize).saturating_sub(1).min(lines.len());
        let hi = (s.end_line as usize).min(lines.len());
        for l in &lines[lo..hi] {
            text.push(' ');
            text.push_str(l);
        }
    }
    text
}

impl Locator {
    /// Indexes `opts.rev` and its history window, and builds the lexical and
    /// vector indices.
    pub fn build(repo: &Repository, indexer: &Indexer, opts: &LocateOptions) -> Result<Self> {
        let (snapshot, _) = indexer.index(repo, opts.rev.as_deref())?;
        Self::from_snapshot(repo, indexer, snapshot, opts)
    }

    pub fn from_snapshot(
        repo: &Repository,
        indexer: &Indexer,
        snapshot: Snapshot,
        opts: &LocateOptions,
    ) -> Result<Self> {
        let mut texts: Vec<String> = Vec::with_capacity(snapshot.symbols.len());
        for f in &snapshot.files {
            let blob = repo.find_blob(git2::Oid::from_str(&f.blob)?)?;
            let content = String::from_utf8_lossy(blob.content());
            let lines: Vec<&str> = content.lines().collect();
            for s in &snapshot.symbols[f.symbols.start as usize..f.symbols.end as usize] {
                texts.push(symbol_text(s, &lines));
            }
        }
        let head = resolve_commit(repo, opts.rev.as_deref())?;
        let mut walk = repo.revwalk()?;
        walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::TIME)?;
        walk.push(head.id())?;
        if let Some(base) = &opts.since_rev {
            walk.hide(resolve_commit(repo, Some(base))?.id())?;
        }
        let mut commits = Vec::new();
        for oid in walk.take(opts.max_commits) {
            commits.push(commit_changes(repo, indexer, &oid?.to_string(), None)?);
        }
        Self::assemble(
            snapshot,
            texts,
            commits,
            Some(repo.path().to_path_buf()),
            opts,
        )
    }

    /// A locator without git: no history window, no blame. `texts[i]` is
    /// what symbol `i` is found by (name, signature, doc, body). For
    /// synthetic benchmarks and callers that hold code outside git.
    pub fn without_history(
        snapshot: Snapshot,
        texts: Vec<String>,
        opts: &LocateOptions,
    ) -> Result<Self> {
        Self::assemble(snapshot, texts, Vec::new(), None, opts)
    }

    fn assemble(
        snapshot: Snapshot,
        texts: Vec<String>,
        commits: Vec<CommitChanges>,
        git_dir: Option<PathBuf>,
        opts: &LocateOptions,
    ) -> Result<Self> {
        if texts.len() != snapshot.symbols.len() {
            return Err(crate::Error::InvalidArgument(format!(
                "{} texts for {} symbols",
                texts.len(),
                snapshot.symbols.len()
            )));
        }
        let symbol_bm25 = LexicalIndex::build(&texts)?;
        let mut symbol_changed = HashMap::new();
        let mut file_changed = HashMap::new();
        let mut commit_texts = Vec::new();
        for c in &commits {
            let touched = c.touched_symbols();
            let paths = c.paths();
            // Message plus the short names of what it touched (qualified
            // names and paths would make big commits match everything).
            let short: BTreeSet<&str> = touched
                .iter()
                .map(|q| q.rsplit(['.', ':', '#']).next().unwrap_or(q))
                .collect();
            let text = format!(
                "{} {}",
                c.commit.message,
                short.into_iter().collect::<Vec<_>>().join(" ")
            );
            for s in touched {
                symbol_changed.entry(s).or_insert(c.commit.time);
            }
            for p in paths {
                file_changed.entry(p).or_insert(c.commit.time);
            }
            commit_texts.push(text);
        }
        let commit_bm25 = LexicalIndex::build(&commit_texts)?;
        let (symbol_vectors, commit_vectors) = match &opts.embedder {
            Some(e) => {
                let sv = ExactCosineIndex::new(e.dimension());
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                let vectors = e.embed(&refs)?;
                sv.upsert(
                    vectors
                        .into_iter()
                        .zip(&snapshot.symbols)
                        .map(|(vector, s)| Record {
                            id: u64::from(s.id),
                            vector,
                            payload: Payload {
                                path: s.path.clone(),
                                language: Some(s.language),
                                kind: "symbol".into(),
                            },
                        })
                        .collect(),
                )?;
                let cv = ExactCosineIndex::new(e.dimension());
                let refs: Vec<&str> = commit_texts.iter().map(String::as_str).collect();
                let vectors = e.embed(&refs)?;
                cv.upsert(
                    vectors
                        .into_iter()
                        .enumerate()
                        .map(|(i, vector)| Record {
                            id: i as u64,
                            vector,
                            payload: Payload {
                                kind: "commit".into(),
                                ..Payload::default()
                            },
                        })
                        .collect(),
                )?;
                (Some(sv), Some(cv))
            }
            None => (None, None),
        };
        let matcher = PathMatcher::new(snapshot.files.iter().map(|f| f.path.as_str()));
        let by_qname = snapshot
            .symbols
            .iter()
            .map(|s| (s.qualified_name.clone(), s.id))
            .collect();
        let mut by_name: HashMap<String, Vec<SymbolId>> = HashMap::new();
        for s in snapshot
            .symbols
            .iter()
            .filter(|s| s.kind.is_callable() && s.name.len() >= 4)
        {
            by_name.entry(s.name.clone()).or_default().push(s.id);
        }
        Ok(Self {
            snapshot,
            matcher,
            symbol_bm25,
            commits,
            commit_bm25,
            by_qname,
            by_name,
            symbol_changed,
            file_changed,
            embedder: opts.embedder.clone(),
            symbol_vectors,
            commit_vectors,
            opts: opts.clone(),
            git_dir,
        })
    }

    /// The commits of the revision window, newest first, with touched symbols.
    pub fn window(&self) -> &[CommitChanges] {
        &self.commits
    }

    /// The evidence's frames that point into the repository, innermost first.
    pub fn repo_frames(&self, evidence: &str) -> Vec<RepoFrame> {
        let mut out: Vec<RepoFrame> = Vec::new();
        for f in parse_frames(evidence) {
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

    /// Symbol-overlap values: how close each symbol is to the failing path.
    fn overlap(&self, frames: &[RepoFrame], evidence: &str) -> HashMap<SymbolId, (f64, String)> {
        let mut out: HashMap<SymbolId, (f64, String)> = HashMap::new();
        let mut put = |id: SymbolId, v: f64, why: String| {
            let e = out.entry(id).or_insert((0.0, String::new()));
            if v > e.0 {
                *e = (v, why);
            }
        };
        let snap = &self.snapshot;
        for f in frames {
            let Some(id) = f.symbol else { continue };
            let here = format!(
                "{}:{}",
                f.path,
                f.line.map_or(String::from("?"), |l| l.to_string())
            );
            put(id, f.weight, format!("stack frame #{} at {here}", f.index));
            let name = &snap.symbol(id).qualified_name;
            for (n, d, line) in reachable(id, 2, |s| snap.callees(s)) {
                let v = if d == 1 { CALLEE } else { CALLEE_2 } * f.weight;
                put(
                    n,
                    v,
                    format!(
                        "callee ({d} hop) of frame #{} {name}, call at line {line}",
                        f.index
                    ),
                );
            }
            for (n, _, line) in reachable(id, 1, |s| snap.callers(s)) {
                put(
                    n,
                    CALLER * f.weight,
                    format!("caller of frame #{} {name} (line {line})", f.index),
                );
            }
        }
        let mentioned: HashSet<&str> = evidence
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| w.len() >= 4)
            .collect();
        for word in mentioned {
            for &id in self.by_name.get(word).into_iter().flatten() {
                put(id, MENTIONED, format!("`{word}` is named in the evidence"));
                // What a named function calls ran too: a weak seed.
                for &(n, line) in snap.callees(id) {
                    put(
                        n,
                        MENTIONED * CALLEE,
                        format!("called by `{word}` (named in the evidence), line {line}"),
                    );
                }
            }
        }
        out
    }

    fn frame_proximity(&self, frames: &[RepoFrame], path: &str) -> (f64, String) {
        let mut best = (0.0, String::new());
        for f in frames {
            let v = path_proximity(path, &f.path) * (0.5 + 0.5 * f.weight);
            if v > best.0 {
                best = (v, format!("near frame #{} {}", f.index, f.path));
            }
        }
        best
    }

    fn decay_for(&self, symbol: Option<&str>, path: &str) -> (f64, String) {
        let head = self.snapshot.time;
        let half = self.opts.half_life_days;
        if let Some(t) = symbol.and_then(|s| self.symbol_changed.get(s)) {
            let days = (head - t) as f64 / 86_400.0;
            return (
                time_decay(head - t, half),
                format!("symbol changed {days:.1} days before the revision"),
            );
        }
        if let Some(t) = self.file_changed.get(path) {
            let days = (head - t) as f64 / 86_400.0;
            return (
                0.5 * time_decay(head - t, half),
                format!("file changed {days:.1} days before the revision"),
            );
        }
        (0.0, "not changed in the revision window".into())
    }

    fn available(&self, frames: &[RepoFrame], spectrum: bool) -> Vec<Component> {
        let mut c = vec![Component::SymbolOverlap];
        if spectrum {
            c.push(Component::Spectrum);
        }
        if !frames.is_empty() {
            c.push(Component::PathProximity);
        }
        c.push(Component::Bm25);
        if self.embedder.is_some() {
            c.push(Component::Embedding);
        }
        if !self.commits.is_empty() {
            c.push(Component::TimeDecay);
        }
        c
    }

    /// BM25 of the evidence against symbols: normalised scores and a hint of
    /// the matched terms' weight, for candidates passing the filters.
    fn bm25_symbols(&self, query: &[String]) -> Result<HashMap<SymbolId, f64>> {
        let hits = self.symbol_bm25.search(query, CANDIDATES * 4)?;
        let hits: Vec<_> = hits
            .into_iter()
            .filter(|h| {
                let s = self.snapshot.symbol(h.doc);
                s.kind.is_callable() && self.passes(s)
            })
            .take(CANDIDATES)
            .collect();
        let max = hits.first().map_or(1.0, |h| h.score).max(1e-9);
        Ok(hits
            .into_iter()
            .map(|h| (h.doc, f64::from(h.score / max)))
            .collect())
    }

    fn embedding_symbols(&self, evidence: &str) -> Result<HashMap<SymbolId, f64>> {
        let (Some(e), Some(idx)) = (&self.embedder, &self.symbol_vectors) else {
            return Ok(HashMap::new());
        };
        let q = e.embed(&[evidence])?.remove(0);
        let filter = Filter {
            languages: self.opts.languages.clone(),
            path_prefix: self.opts.path_prefix.clone(),
            kind: None,
        };
        let hits = idx.search(&q, CANDIDATES, &filter)?;
        Ok(hits
            .into_iter()
            .map(|h| (h.id as SymbolId, f64::from(h.score.max(0.0))))
            .collect())
    }

    /// Ochiai per callable from per-test coverage, with a readable reason;
    /// empty when no test failed (nothing to be suspicious of).
    fn spectrum_symbols(&self, runs: &[TestRun]) -> HashMap<SymbolId, (f64, String)> {
        let failed = runs.iter().filter(|r| !r.passed).count();
        rank_functions(&self.snapshot, &ochiai(runs))
            .into_iter()
            .map(|f| {
                let why = format!(
                    "Ochiai {:.2} at line {}: run by {}/{failed} failing and {} passing tests",
                    f.score, f.line, f.failed, f.passed
                );
                (f.symbol, (f.score, why))
            })
            .collect()
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
