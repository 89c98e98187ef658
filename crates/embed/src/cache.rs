//! A content-hash cache in front of any [`Embedder`]: each text is keyed by
//! sha256 of (model id, text), so a symbol or commit message that did not
//! change is embedded once — per process in a bounded LRU, and across runs
//! in an optional on-disk file ([`disk`]). Repeated texts within one call
//! are embedded once too. Vectors are returned exactly as the wrapped
//! embedder produced them.

pub mod disk;

use crate::error::Result;
use disk::DiskCache;
use lru::LruCache;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tracelab_domain::vectors::Embedder;

/// sha256 of the length-prefixed model id followed by the text.
pub type Key = [u8; 32];

/// Entries kept in memory by default: about 30 MB of 384-float vectors.
pub const DEFAULT_CAPACITY: usize = 20_000;

pub fn key(model_id: &str, text: &str) -> Key {
    let mut h = Sha256::new();
    h.update((model_id.len() as u64).to_le_bytes());
    h.update(model_id.as_bytes());
    h.update(text.as_bytes());
    h.finalize().into()
}

/// Where the vectors of the calls so far came from, counted per text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub memory_hits: u64,
    pub disk_hits: u64,
    /// Texts sent to the wrapped embedder (after removing duplicates).
    pub computed: u64,
}

pub struct CachingEmbedder<E> {
    inner: E,
    id: String,
    memory: Mutex<LruCache<Key, Box<[f32]>>>,
    disk: Option<DiskCache>,
    /// Cleared after the first failed disk write: the cache is an
    /// optimisation, so a full or read-only disk only costs speed.
    disk_writable: AtomicBool,
    memory_hits: AtomicU64,
    disk_hits: AtomicU64,
    computed: AtomicU64,
}

impl<E> std::fmt::Debug for CachingEmbedder<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachingEmbedder")
            .field("model_id", &self.id)
            .field("disk", &self.disk)
            .finish_non_exhaustive()
    }
}

impl<E: Embedder> CachingEmbedder<E> {
    /// An in-memory cache of at most `capacity` vectors (least recently used
    /// go first).
    pub fn new(inner: E, capacity: usize) -> Self {
        let capacity = NonZeroUsize::new(capacity).unwrap_or(NonZeroUsize::MIN);
        Self {
            id: inner.model_id().to_owned(),
            inner,
            memory: Mutex::new(LruCache::new(capacity)),
            disk: None,
            disk_writable: AtomicBool::new(true),
            memory_hits: AtomicU64::new(0),
            disk_hits: AtomicU64::new(0),
            computed: AtomicU64::new(0),
        }
    }

    /// Also keeps every vector in a file under `dir` (one per model id), so
    /// later processes find them.
    pub fn with_disk(mut self, dir: &Path) -> Result<Self> {
        self.disk = Some(DiskCache::open(dir, &self.id, self.inner.dimension())?);
        Ok(self)
    }

    pub fn inner(&self) -> &E {
        &self.inner
    }

    pub fn disk(&self) -> Option<&DiskCache> {
        self.disk.as_ref()
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            memory_hits: self.memory_hits.load(Ordering::Relaxed),
            disk_hits: self.disk_hits.load(Ordering::Relaxed),
            computed: self.computed.load(Ordering::Relaxed),
        }
    }

    fn memory(&self) -> std::sync::MutexGuard<'_, LruCache<Key, Box<[f32]>>> {
        // The LRU is valid between calls, so a poisoned lock is usable.
        self.memory.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Looks `missing` keys up on disk; returns what was found.
    fn read_disk(&self, missing: &[Key]) -> Vec<Option<Vec<f32>>> {
        let Some(disk) = &self.disk else {
            return vec![None; missing.len()];
        };
        disk.get_many(missing).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "embedding cache read failed; recomputing");
            vec![None; missing.len()]
        })
    }

    fn write_disk(&self, entries: &[(Key, &[f32])]) {
        let Some(disk) = &self.disk else { return };
        if !self.disk_writable.load(Ordering::Relaxed) {
            return;
        }
        if let Err(e) = disk.put_many(entries) {
            self.disk_writable.store(false, Ordering::Relaxed);
            tracing::warn!(error = %e, "embedding cache write failed; keeping vectors in memory only");
        }
    }
}

impl<E: Embedder> Embedder for CachingEmbedder<E> {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn dimension(&self) -> usize {
        self.inner.dimension()
    }

    fn embed(&self, texts: &[&str]) -> tracelab_domain::Result<Vec<Vec<f32>>> {
        let keys: Vec<Key> = texts.iter().map(|t| key(&self.id, t)).collect();
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        // Unique missing keys in first-seen order, with every position they fill.
        let mut missing: Vec<Key> = Vec::new();
        let mut positions: HashMap<Key, Vec<usize>> = HashMap::new();
        {
            let mut memory = self.memory();
            for (i, k) in keys.iter().enumerate() {
                if let Some(v) = memory.get(k) {
                    out[i] = Some(v.to_vec());
                    self.memory_hits.fetch_add(1, Ordering::Relaxed);
                } else {
                    positions
                        .entry(*k)
                        .or_insert_with(|| {
                            missing.push(*k);
                            Vec::new()
                        })
                        .push(i);
                }
            }
        }
        if missing.is_empty() {
            return Ok(out.into_iter().flatten().collect());
        }

        let fill = |k: &Key, v: Vec<f32>, out: &mut Vec<Option<Vec<f32>>>| {
            let at = &positions[k];
            for &i in &at[1..] {
                out[i] = Some(v.clone());
            }
            self.memory().put(*k, v.clone().into_boxed_slice());
            out[at[0]] = Some(v);
            at.len() as u64
        };

        let mut compute: Vec<Key> = Vec::new();
        for (k, found) in missing.iter().zip(self.read_disk(&missing)) {
            match found {
                Some(v) => {
                    let n = fill(k, v, &mut out);
                    self.disk_hits.fetch_add(n, Ordering::Relaxed);
                }
                None => compute.push(*k),
            }
        }
        if !compute.is_empty() {
            let inputs: Vec<&str> = compute.iter().map(|k| texts[positions[k][0]]).collect();
            let vectors = self.inner.embed(&inputs)?;
            let dimension = self.inner.dimension();
            if vectors.len() != inputs.len() || vectors.iter().any(|v| v.len() != dimension) {
                return Err(tracelab_domain::Error::internal(format!(
                    "{} returned {} vectors for {} texts, or a vector not of dimension {dimension}",
                    self.id,
                    vectors.len(),
                    inputs.len()
                )));
            }
            self.computed
                .fetch_add(inputs.len() as u64, Ordering::Relaxed);
            let entries: Vec<(Key, &[f32])> = compute
                .iter()
                .copied()
                .zip(vectors.iter().map(Vec::as_slice))
                .collect();
            self.write_disk(&entries);
            for (k, v) in compute.iter().zip(vectors) {
                fill(k, v, &mut out);
            }
        }
        Ok(out.into_iter().flatten().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records every text it is asked to embed; the vector encodes the
    /// text's length and first byte so results can be told apart.
    struct Counting {
        calls: Mutex<Vec<Vec<String>>>,
    }

    impl Counting {
        fn new() -> Self {
            Self {
                calls: Mutex::new(Vec::new()),
            }
        }
        fn calls(&self) -> Vec<Vec<String>> {
            self.calls.lock().unwrap().clone()
        }
    }

    impl Embedder for Counting {
        fn model_id(&self) -> &str {
            "counting"
        }
        fn dimension(&self) -> usize {
            2
        }
        fn embed(&self, texts: &[&str]) -> tracelab_domain::Result<Vec<Vec<f32>>> {
            self.calls
                .lock()
                .unwrap()
                .push(texts.iter().map(|t| t.to_string()).collect());
            Ok(texts.iter().map(|t| vector(t)).collect())
        }
    }

    fn vector(t: &str) -> Vec<f32> {
        vec![t.len() as f32, f32::from(t.bytes().next().unwrap_or(0))]
    }

    fn strings(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn repeated_text_is_embedded_once() {
        let c = CachingEmbedder::new(Counting::new(), 10);
        let got = c.embed(&["alpha", "be", "alpha"]).unwrap();
        assert_eq!(got, vec![vector("alpha"), vector("be"), vector("alpha")]);
        let got = c.embed(&["be", "gamma", "alpha", "gamma"]).unwrap();
        assert_eq!(
            got,
            vec![
                vector("be"),
                vector("gamma"),
                vector("alpha"),
                vector("gamma")
            ]
        );
        assert_eq!(
            c.inner().calls(),
            vec![strings(&["alpha", "be"]), strings(&["gamma"])]
        );
        assert_eq!(
            c.stats(),
            CacheStats {
                memory_hits: 2,
                disk_hits: 0,
                computed: 3
            }
        );
        assert_eq!(c.model_id(), "counting");
        assert_eq!(c.dimension(), 2);
    }

    #[test]
    fn a_call_served_from_memory_does_not_reach_the_model() {
        let c = CachingEmbedder::new(Counting::new(), 10);
        c.embed(&["x", "y"]).unwrap();
        c.embed(&["y", "x", "y"]).unwrap();
        assert_eq!(c.inner().calls().len(), 1);
        assert_eq!(c.stats().memory_hits, 3);
    }

    #[test]
    fn least_recently_used_vectors_are_evicted() {
        let c = CachingEmbedder::new(Counting::new(), 2);
        c.embed(&["a", "b"]).unwrap();
        c.embed(&["a"]).unwrap(); // "b" is now the oldest
        c.embed(&["c"]).unwrap(); // evicts "b"
        c.embed(&["a", "b"]).unwrap();
        assert_eq!(
            c.inner().calls(),
            vec![strings(&["a", "b"]), strings(&["c"]), strings(&["b"])]
        );
    }

    #[test]
    fn keys_depend_on_model_and_text() {
        assert_eq!(key("m", "text"), key("m", "text"));
        assert_ne!(key("m", "text"), key("n", "text"));
        assert_ne!(key("m", "text"), key("m", "text "));
        // The length prefix keeps ("ab", "c") apart from ("a", "bc").
        assert_ne!(key("ab", "c"), key("a", "bc"));
    }

    struct Wrong;

    impl Embedder for Wrong {
        fn model_id(&self) -> &str {
            "wrong"
        }
        fn dimension(&self) -> usize {
            3
        }
        fn embed(&self, _: &[&str]) -> tracelab_domain::Result<Vec<Vec<f32>>> {
            Ok(vec![vec![1.0]])
        }
    }

    #[test]
    fn a_misbehaving_embedder_is_an_error_not_a_cached_vector() {
        let c = CachingEmbedder::new(Wrong, 10);
        let err = c.embed(&["a", "b"]).unwrap_err().to_string();
        assert!(err.contains("returned 1 vectors for 2 texts"), "{err}");
        assert_eq!(c.stats().computed, 0);
    }

    #[test]
    fn empty_input_is_empty_output() {
        let c = CachingEmbedder::new(Counting::new(), 10);
        assert!(c.embed(&[]).unwrap().is_empty());
        assert!(c.inner().calls().is_empty());
    }
}
