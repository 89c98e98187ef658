//! A BM25 (Okapi, k1 = 1.2, b = 0.75) inverted index over token bags. Small
//! and exact: postings per term, document lengths, and a dense score
//! accumulator per query. See docs/code-index.md for why not tantivy (yet).

use std::collections::HashMap;

const K1: f32 = 1.2;
const B: f32 = 0.75;

#[derive(Debug, Default, Clone)]
pub struct Bm25Index {
    postings: HashMap<String, Vec<(u32, u32)>>,
    doc_len: Vec<u32>,
    total_len: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub doc: u32,
    pub score: f32,
}

impl Bm25Index {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a document (its tokens, repeated tokens count); returns its id,
    /// which is the number of documents added before it.
    pub fn add<'a>(&mut self, tokens: impl IntoIterator<Item = &'a str>) -> u32 {
        let doc = self.doc_len.len() as u32;
        let mut tf: HashMap<&str, u32> = HashMap::new();
        let mut len = 0;
        for t in tokens {
            *tf.entry(t).or_default() += 1;
            len += 1;
        }
        for (t, n) in tf {
            match self.postings.get_mut(t) {
                Some(p) => p.push((doc, n)),
                None => {
                    self.postings.insert(t.to_string(), vec![(doc, n)]);
                }
            }
        }
        self.doc_len.push(len);
        self.total_len += u64::from(len);
        doc
    }

    pub fn len(&self) -> usize {
        self.doc_len.len()
    }

    pub fn is_empty(&self) -> bool {
        self.doc_len.is_empty()
    }

    pub fn idf(&self, term: &str) -> f32 {
        let n = self.doc_len.len() as f32;
        let df = self.postings.get(term).map_or(0, Vec::len) as f32;
        ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
    }

    /// Every document matching at least one query term with its BM25 score,
    /// best first. Query terms count once each.
    pub fn search(&self, query: &[String], limit: usize) -> Vec<Hit> {
        let mut terms: Vec<&str> = query.iter().map(String::as_str).collect();
        terms.sort_unstable();
        terms.dedup();
        let n = self.doc_len.len();
        if n == 0 {
            return Vec::new();
        }
        let avg = self.total_len as f32 / n as f32;
        let mut acc = vec![0f32; n];
        let mut touched = Vec::new();
        for t in terms {
            let Some(postings) = self.postings.get(t) else {
                continue;
            };
            let idf = self.idf(t);
            for &(doc, tf) in postings {
                let tf = tf as f32;
                let norm = K1 * (1.0 - B + B * self.doc_len[doc as usize] as f32 / avg.max(1.0));
                let slot = &mut acc[doc as usize];
                if *slot == 0.0 {
                    touched.push(doc);
                }
                *slot += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        let mut hits: Vec<Hit> = touched
            .into_iter()
            .map(|doc| Hit {
                doc,
                score: acc[doc as usize],
            })
            .collect();
        let by_score = |a: &Hit, b: &Hit| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc));
        if hits.len() > limit {
            hits.select_nth_unstable_by(limit, by_score);
            hits.truncate(limit);
        }
        hits.sort_unstable_by(by_score);
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn ranks_rare_terms_and_short_documents_higher() {
        let mut idx = Bm25Index::new();
        idx.add(["parse", "config", "file"]);
        idx.add(["parse", "parse", "header"]);
        idx.add([
            "render", "page", "file", "file", "file", "file", "file", "file",
        ]);
        let hits = idx.search(&q("config"), 10);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].doc, 0);
        let hits = idx.search(&q("parse header"), 10);
        assert_eq!(hits[0].doc, 1);
        let hits = idx.search(&q("file"), 10);
        assert_eq!(hits.iter().map(|h| h.doc).collect::<Vec<_>>(), vec![2, 0]);
        assert!(idx.idf("config") > idx.idf("parse"));
        assert_eq!(idx.search(&q("file parse"), 1).len(), 1);
        assert!(idx.search(&q("absent"), 10).is_empty());
    }
}
