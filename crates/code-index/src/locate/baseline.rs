//! The localisation benchmark's baselines, on the same index and filters:
//! the innermost in-repository frame, and BM25 alone.

use super::*;

impl Locator {
    /// Baseline: the symbols of the in-repository frames, innermost first.
    pub fn baseline_innermost_frame(&self, evidence: &str) -> (Vec<String>, Vec<String>) {
        let frames = self.repo_frames(evidence);
        let mut files = Vec::new();
        let mut symbols = Vec::new();
        for f in &frames {
            if !files.contains(&f.path) {
                files.push(f.path.clone());
            }
            if let Some(id) = f.symbol {
                let q = self.snapshot.symbol(id).qualified_name.clone();
                if !symbols.contains(&q) {
                    symbols.push(q);
                }
            }
        }
        (files, symbols)
    }

    /// Baseline: BM25 alone over callables (same filters), with files ranked
    /// by their best symbol.
    pub fn baseline_bm25(&self, evidence: &str) -> Result<(Vec<String>, Vec<String>)> {
        let hits = self.symbol_bm25.search(&tokens(evidence), CANDIDATES * 4)?;
        let mut files = Vec::new();
        let mut symbols = Vec::new();
        for h in hits {
            let s = self.snapshot.symbol(h.doc);
            if !s.kind.is_callable() || !self.passes(s) {
                continue;
            }
            if !files.contains(&s.path) {
                files.push(s.path.clone());
            }
            symbols.push(s.qualified_name.clone());
        }
        Ok((files, symbols))
    }
}
