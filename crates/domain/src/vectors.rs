//! Embeddings and vector search: the two ports the code index ranks with,
//! and the data they exchange. They live here, beside the other ports, so
//! that an adapter (the sentence model in `tracelab-embed`, Qdrant in
//! `tracelab-vector-qdrant`) builds against this small crate and not the
//! whole index. In-process implementations (`HashingEmbedder`,
//! `ExactCosineIndex`) stay in `tracelab-code-index`.

use crate::error::Result;
use crate::language::Language;
use serde::{Deserialize, Serialize};

/// Turns texts into vectors of `dimension()` floats. Implementations should
/// return L2-normalised vectors; callers compare them by cosine.
pub trait Embedder: Send + Sync {
    /// A stable id (model + version): vectors from different ids never mix.
    fn model_id(&self) -> &str;
    fn dimension(&self) -> usize;
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
}

/// Scales `v` to unit length (a zero vector stays zero).
pub fn normalise(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// What a filter can see of a vector: where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Payload {
    pub path: String,
    pub language: Option<Language>,
    /// Free-form kind (`symbol`, `commit`, `failure`).
    pub kind: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub id: u64,
    pub vector: Vec<f32>,
    pub payload: Payload,
}

/// Hard filters applied before ranking; empty fields match everything.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Filter {
    pub languages: Vec<Language>,
    pub path_prefix: Option<String>,
    pub kind: Option<String>,
}

impl Filter {
    pub fn matches(&self, p: &Payload) -> bool {
        (self.languages.is_empty() || p.language.is_some_and(|l| self.languages.contains(&l)))
            && self
                .path_prefix
                .as_ref()
                .is_none_or(|pre| p.path.starts_with(pre.as_str()))
            && self.kind.as_ref().is_none_or(|k| &p.kind == k)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    pub id: u64,
    /// Cosine similarity in [-1, 1].
    pub score: f32,
}

/// A store of vectors searchable by cosine similarity. Methods take `&self`
/// (stores are shared between tasks); a remote adapter blocks on its client.
pub trait VectorIndex: Send + Sync {
    fn dimension(&self) -> usize;
    /// Inserts or replaces records by id. A record of the wrong dimension
    /// is rejected and nothing is written.
    fn upsert(&self, records: Vec<Record>) -> Result<()>;
    /// Removes ids; returns how many existed.
    fn delete(&self, ids: &[u64]) -> Result<usize>;
    /// The `k` most similar records passing `filter`, best first, ties by id.
    fn search(&self, query: &[f32], k: usize, filter: &Filter) -> Result<Vec<Hit>>;
    fn count(&self) -> Result<usize>;
}

/// The behaviour every `VectorIndex` must have. Call `run` from a test of
/// each implementation; it panics with a message on the first violation.
#[cfg(feature = "testsuite")]
pub mod conformance {
    use super::*;

    fn rec(id: u64, vector: Vec<f32>, path: &str, language: Language) -> Record {
        Record {
            id,
            vector,
            payload: Payload {
                path: path.into(),
                language: Some(language),
                kind: "symbol".into(),
            },
        }
    }

    /// `make(dimension)` returns a new, empty index.
    pub fn run<V: VectorIndex>(make: impl Fn(usize) -> V) {
        empty_index_finds_nothing(&make(3));
        nearest_first_with_cosine_scores(&make(3));
        upsert_replaces_by_id(&make(3));
        delete_removes(&make(3));
        filters_are_hard(&make(3));
        wrong_dimensions_are_rejected(&make(3));
        ties_break_by_id(&make(2));
    }

    fn empty_index_finds_nothing(idx: &impl VectorIndex) {
        assert_eq!(idx.count().unwrap(), 0, "new index is empty");
        assert!(
            idx.search(&[1.0, 0.0, 0.0], 5, &Filter::default())
                .unwrap()
                .is_empty()
        );
    }

    fn nearest_first_with_cosine_scores(idx: &impl VectorIndex) {
        idx.upsert(vec![
            rec(1, vec![1.0, 0.0, 0.0], "a.py", Language::Python),
            rec(2, vec![0.0, 1.0, 0.0], "b.py", Language::Python),
            rec(3, vec![2.0, 2.0, 0.0], "c.py", Language::Python),
            rec(4, vec![-1.0, 0.0, 0.0], "d.py", Language::Python),
        ])
        .unwrap();
        let hits = idx
            .search(&[10.0, 1.0, 0.0], 10, &Filter::default())
            .unwrap();
        let ids: Vec<u64> = hits.iter().map(|h| h.id).collect();
        assert_eq!(
            ids,
            vec![1, 3, 2, 4],
            "ordered by cosine, not by dot product"
        );
        assert!(
            (hits[0].score - 10.0 / 101f32.sqrt()).abs() < 1e-4,
            "cosine score: {}",
            hits[0].score
        );
        assert!(
            (hits[3].score + 10.0 / 101f32.sqrt()).abs() < 1e-4,
            "negative cosine kept"
        );
        assert_eq!(
            idx.search(&[10.0, 1.0, 0.0], 2, &Filter::default())
                .unwrap()
                .len(),
            2,
            "k limits"
        );
        assert!(
            idx.search(&[1.0, 0.0, 0.0], 0, &Filter::default())
                .unwrap()
                .is_empty(),
            "k = 0"
        );
    }

    fn upsert_replaces_by_id(idx: &impl VectorIndex) {
        idx.upsert(vec![rec(7, vec![1.0, 0.0, 0.0], "a.py", Language::Python)])
            .unwrap();
        idx.upsert(vec![rec(7, vec![0.0, 0.0, 1.0], "z.py", Language::Go)])
            .unwrap();
        assert_eq!(idx.count().unwrap(), 1, "same id replaces");
        let hits = idx.search(&[0.0, 0.0, 1.0], 1, &Filter::default()).unwrap();
        assert_eq!((hits[0].id, (hits[0].score * 1000.0).round()), (7, 1000.0));
        let go = Filter {
            languages: vec![Language::Go],
            ..Filter::default()
        };
        assert_eq!(
            idx.search(&[0.0, 0.0, 1.0], 1, &go).unwrap().len(),
            1,
            "payload replaced too"
        );
    }

    fn delete_removes(idx: &impl VectorIndex) {
        idx.upsert(
            (1..=5)
                .map(|i| rec(i, vec![i as f32, 1.0, 0.0], "a.py", Language::Python))
                .collect(),
        )
        .unwrap();
        assert_eq!(
            idx.delete(&[2, 4, 99]).unwrap(),
            2,
            "counts existing ids only"
        );
        assert_eq!(idx.count().unwrap(), 3);
        let ids: Vec<u64> = idx
            .search(&[1.0, 0.0, 0.0], 10, &Filter::default())
            .unwrap()
            .iter()
            .map(|h| h.id)
            .collect();
        assert_eq!(ids, vec![5, 3, 1]);
    }

    fn filters_are_hard(idx: &impl VectorIndex) {
        idx.upsert(vec![
            rec(1, vec![1.0, 0.0, 0.0], "src/a.py", Language::Python),
            rec(2, vec![0.9, 0.1, 0.0], "src/b.go", Language::Go),
            rec(3, vec![0.0, 1.0, 0.0], "lib/c.py", Language::Python),
        ])
        .unwrap();
        let py = Filter {
            languages: vec![Language::Python],
            ..Filter::default()
        };
        let ids: Vec<u64> = idx
            .search(&[1.0, 0.0, 0.0], 10, &py)
            .unwrap()
            .iter()
            .map(|h| h.id)
            .collect();
        assert_eq!(ids, vec![1, 3], "language filter");
        let lib = Filter {
            path_prefix: Some("lib/".into()),
            ..Filter::default()
        };
        let ids: Vec<u64> = idx
            .search(&[1.0, 0.0, 0.0], 10, &lib)
            .unwrap()
            .iter()
            .map(|h| h.id)
            .collect();
        assert_eq!(ids, vec![3], "path prefix filter even when far");
        let none = Filter {
            kind: Some("commit".into()),
            ..Filter::default()
        };
        assert!(
            idx.search(&[1.0, 0.0, 0.0], 10, &none).unwrap().is_empty(),
            "kind filter"
        );
    }

    fn wrong_dimensions_are_rejected(idx: &impl VectorIndex) {
        assert_eq!(idx.dimension(), 3);
        let bad = vec![
            rec(1, vec![1.0, 0.0, 0.0], "a", Language::Rust),
            rec(2, vec![1.0], "b", Language::Rust),
        ];
        assert!(idx.upsert(bad).is_err(), "bad dimension in a batch");
        assert_eq!(idx.count().unwrap(), 0, "a rejected batch writes nothing");
        assert!(
            idx.search(&[1.0], 1, &Filter::default()).is_err(),
            "query dimension checked"
        );
    }

    fn ties_break_by_id(idx: &impl VectorIndex) {
        idx.upsert(vec![
            rec(9, vec![1.0, 1.0], "a", Language::Java),
            rec(3, vec![2.0, 2.0], "b", Language::Java),
            rec(5, vec![1.0, 1.0], "c", Language::Java),
        ])
        .unwrap();
        let ids: Vec<u64> = idx
            .search(&[1.0, 1.0], 3, &Filter::default())
            .unwrap()
            .iter()
            .map(|h| h.id)
            .collect();
        assert_eq!(ids, vec![3, 5, 9], "equal scores ordered by id");
    }
}
