//! The ranking's signals for one query: closeness to the failing path,
//! recency and blame, BM25, embeddings and the spectrum, each a value with
//! the reason people read.

use super::{CALLEE, CALLEE_2, CALLER, CANDIDATES, Locator, MENTIONED, RepoFrame};
use crate::callgraph::reachable;
use crate::error::Result;
use crate::model::SymbolId;
use crate::sbfl::{TestRun, ochiai, rank_functions};
use crate::score::{Component, path_proximity, time_decay};
use crate::vector::{Filter, VectorIndex};

use std::collections::{HashMap, HashSet};

impl Locator {
    /// Symbol-overlap values: how close each symbol is to the failing path.
    pub(super) fn overlap(
        &self,
        frames: &[RepoFrame],
        evidence: &str,
    ) -> HashMap<SymbolId, (f64, String)> {
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

    pub(super) fn frame_proximity(&self, frames: &[RepoFrame], path: &str) -> (f64, String) {
        let mut best = (0.0, String::new());
        for f in frames {
            let v = path_proximity(path, &f.path) * (0.5 + 0.5 * f.weight);
            if v > best.0 {
                best = (v, format!("near frame #{} {}", f.index, f.path));
            }
        }
        best
    }

    pub(super) fn decay_for(&self, symbol: Option<&str>, path: &str) -> (f64, String) {
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

    pub(super) fn available(&self, frames: &[RepoFrame], spectrum: bool) -> Vec<Component> {
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
    pub(super) fn bm25_symbols(&self, query: &[String]) -> Result<HashMap<SymbolId, f64>> {
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

    pub(super) fn embedding_symbols(&self, evidence: &str) -> Result<HashMap<SymbolId, f64>> {
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
    pub(super) fn spectrum_symbols(&self, runs: &[TestRun]) -> HashMap<SymbolId, (f64, String)> {
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
}
