//! Ranking the commits of the revision window: blame of the frames' lines,
//! touched suspects (discounted by how much else the commit touched),
//! proximity of the changed files, BM25 and embedding of the message, age.

use super::*;

impl Locator {
    pub(super) fn rank_commits(
        &self,
        frames: &[RepoFrame],
        overlap: &HashMap<SymbolId, (f64, String)>,
        sbfl: &HashMap<SymbolId, (f64, String)>,
        query: &[String],
        evidence: &str,
        effective: &[(Component, f64)],
    ) -> Result<Vec<CommitLocation>> {
        let hits = self.commit_bm25.search(query, self.commits.len())?;
        let max = hits.first().map_or(1.0, |h| h.score).max(1e-9);
        let bm25: HashMap<u32, f64> = hits
            .into_iter()
            .map(|h| (h.doc, f64::from(h.score / max)))
            .collect();
        let embedding: HashMap<u64, f64> = match (&self.embedder, &self.commit_vectors) {
            (Some(e), Some(idx)) => {
                let q = e.embed(&[evidence])?.remove(0);
                idx.search(&q, self.commits.len(), &Filter::default())?
                    .into_iter()
                    .map(|h| (h.id, f64::from(h.score.max(0.0))))
                    .collect()
            }
            _ => HashMap::new(),
        };
        // The commit that last changed a frame's line is the strongest link.
        let mut blamed: HashMap<String, (f64, String)> = HashMap::new();
        if let (false, Some(git_dir)) = (self.commits.is_empty(), &self.git_dir) {
            let repo = Repository::open(git_dir)?;
            for f in frames.iter().take(BLAMED_FRAMES) {
                let Some(line) = f.line else { continue };
                for b in blame_lines(&repo, Some(&self.snapshot.commit), &f.path, &[line])? {
                    let test = if is_test_path(&f.path) {
                        TEST_BLAME
                    } else {
                        1.0
                    };
                    let v = test * BLAME_DECAY.powi(f.index as i32);
                    let e = blamed.entry(b.commit).or_insert((0.0, String::new()));
                    if v > e.0 {
                        *e = (
                            v,
                            format!("last changed {}:{line}, stack frame #{}", f.path, f.index),
                        );
                    }
                }
            }
        }
        let mut out = Vec::new();
        for (i, c) in self.commits.iter().enumerate() {
            let mut ov = blamed
                .get(&c.commit.sha)
                .cloned()
                .unwrap_or((0.0, String::new()));
            let touched = c.touched_callables();
            // A commit that touches many functions says less about each.
            let specificity = 1.0 / (1.0 + (touched.len().max(1) as f64).ln());
            let mut sp = (0.0, String::new());
            for name in &touched {
                let Some(id) = self.by_qname.get(name) else {
                    continue;
                };
                if let Some((v, why)) = sbfl.get(id)
                    && *v > sp.0
                {
                    sp = (*v, format!("touches {name} ({why})"));
                }
                if let Some((v, why)) = overlap.get(id)
                    && TOUCHES * specificity * *v > ov.0
                {
                    let n = touched.len();
                    ov = (
                        TOUCHES * specificity * *v,
                        format!("touches {name} (one of {n} functions; {why})"),
                    );
                }
            }
            let mut px = (0.0, String::new());
            for p in c.paths() {
                let v = self.frame_proximity(frames, &p);
                if v.0 > px.0 {
                    px = (v.0, format!("changes {p}, {}", v.1));
                }
            }
            let b = bm25.get(&(i as u32)).copied().unwrap_or(0.0);
            let em = embedding.get(&(i as u64)).copied().unwrap_or(0.0);
            let age = self.snapshot.time - c.commit.time;
            let td = time_decay(age, self.opts.half_life_days);
            let (score, reasons) = combine(
                effective,
                vec![
                    (Component::SymbolOverlap, ov.0, ov.1),
                    (Component::PathProximity, px.0, px.1),
                    (
                        Component::Bm25,
                        b,
                        format!(
                            "message and touched names: {b:.2} of the best; \"{}\"",
                            c.commit.summary()
                        ),
                    ),
                    (Component::Embedding, em, format!("cosine {em:.2}")),
                    (
                        Component::TimeDecay,
                        td,
                        format!("{:.1} days before the revision", age as f64 / 86_400.0),
                    ),
                    (Component::Spectrum, sp.0, sp.1),
                ],
            );
            out.push(CommitLocation {
                commit: c.commit.sha.clone(),
                score,
                reasons,
            });
        }
        Ok(out)
    }
}
