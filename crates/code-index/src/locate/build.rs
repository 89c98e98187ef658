//! Building a [`Locator`]: the index of one revision and its history
//! window, and the lexical and vector indices over its symbols.

use super::{LocateOptions, Locator};
use crate::error::Result;
use crate::evidence::PathMatcher;
use crate::history::{CommitChanges, changed_blobs, commit_changes_where};
use crate::indexer::{Indexer, resolve_commit};
use crate::lang::is_test_path;
use crate::lexical::LexicalIndex;
use crate::model::{Symbol, SymbolId};
use crate::snapshot::Snapshot;
use crate::vector::{ExactCosineIndex, Payload, Record, VectorIndex};
use git2::Repository;

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

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
        let window = walk
            .take(opts.max_commits)
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let symbols_of = |path: &str| opts.test_history || !is_test_path(path);
        // The window's files are parsed together first, on every core: one
        // by one, a long history of a large file took seconds.
        let mut blobs = changed_blobs(repo, &window)?;
        blobs.retain(|(path, _, _)| symbols_of(path));
        indexer.parse_blobs(repo, &blobs)?;
        let mut commits = Vec::with_capacity(window.len());
        for oid in window {
            let rev = oid.to_string();
            commits.push(commit_changes_where(repo, indexer, &rev, None, symbols_of)?);
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
}
