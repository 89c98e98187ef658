//! The on-disk layer of the embedding cache, on real files: vectors survive
//! the process, a crash-cut record is dropped, another model's file is
//! refused. The embedder is a counting fake: this is about the cache logic.

use std::sync::atomic::{AtomicUsize, Ordering};
use tracelab_embed::cache::disk::DiskCache;
use tracelab_embed::{CacheStats, CachingEmbedder, Embedder};

struct Counting {
    id: &'static str,
    texts: AtomicUsize,
}

impl Counting {
    fn new(id: &'static str) -> Self {
        Self {
            id,
            texts: AtomicUsize::new(0),
        }
    }
}

impl Embedder for Counting {
    fn model_id(&self) -> &str {
        self.id
    }
    fn dimension(&self) -> usize {
        3
    }
    fn embed(&self, texts: &[&str]) -> tracelab_domain::Result<Vec<Vec<f32>>> {
        self.texts.fetch_add(texts.len(), Ordering::Relaxed);
        Ok(texts
            .iter()
            .map(|t| vec![t.len() as f32, 0.5, -1.25])
            .collect())
    }
}

#[test]
fn vectors_survive_a_new_process() {
    let tmp = tempfile::tempdir().unwrap();
    let first = CachingEmbedder::new(Counting::new("m1"), 100)
        .with_disk(tmp.path())
        .unwrap();
    let v1 = first.embed(&["alpha", "beta"]).unwrap();
    drop(first);

    let second = CachingEmbedder::new(Counting::new("m1"), 100)
        .with_disk(tmp.path())
        .unwrap();
    assert_eq!(second.disk().unwrap().len(), 2);
    let v2 = second.embed(&["beta", "alpha", "gamma"]).unwrap();
    assert_eq!(v2[0], v1[1]);
    assert_eq!(v2[1], v1[0]);
    assert_eq!(v2[2], vec![5.0, 0.5, -1.25]);
    assert_eq!(second.inner().texts.load(Ordering::Relaxed), 1);
    assert_eq!(
        second.stats(),
        CacheStats {
            memory_hits: 0,
            disk_hits: 2,
            computed: 1
        }
    );
    // Now in memory: no disk read, no model call.
    second.embed(&["alpha"]).unwrap();
    assert_eq!(second.stats().memory_hits, 1);
}

#[test]
fn models_do_not_share_vectors() {
    let tmp = tempfile::tempdir().unwrap();
    let a = CachingEmbedder::new(Counting::new("model-a"), 100)
        .with_disk(tmp.path())
        .unwrap();
    a.embed(&["same text"]).unwrap();
    let b = CachingEmbedder::new(Counting::new("model-b"), 100)
        .with_disk(tmp.path())
        .unwrap();
    b.embed(&["same text"]).unwrap();
    assert_eq!(b.inner().texts.load(Ordering::Relaxed), 1);
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 2);
}

#[test]
fn a_record_cut_short_is_dropped_and_the_file_stays_usable() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = DiskCache::open(tmp.path(), "m", 3).unwrap();
    let k1 = tracelab_embed::cache::key("m", "one");
    let k2 = tracelab_embed::cache::key("m", "two");
    cache
        .put_many(&[(k1, &[1.0, 2.0, 3.0]), (k2, &[4.0, 5.0, 6.0])])
        .unwrap();
    let path = cache.path().to_path_buf();
    drop(cache);
    // A crash in the middle of the second record.
    let len = std::fs::metadata(&path).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len - 5)
        .unwrap();

    let cache = DiskCache::open(tmp.path(), "m", 3).unwrap();
    assert_eq!(cache.len(), 1);
    assert_eq!(
        cache.get_many(&[k1, k2]).unwrap(),
        vec![Some(vec![1.0, 2.0, 3.0]), None]
    );
    cache.put_many(&[(k2, &[7.0, 8.0, 9.0])]).unwrap();
    drop(cache);
    let cache = DiskCache::open(tmp.path(), "m", 3).unwrap();
    assert_eq!(
        cache.get_many(&[k2, k1]).unwrap(),
        vec![Some(vec![7.0, 8.0, 9.0]), Some(vec![1.0, 2.0, 3.0])]
    );
}

#[test]
fn a_foreign_file_is_refused_with_its_path() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = DiskCache::open(tmp.path(), "m", 3).unwrap();
    let path = cache.path().to_path_buf();
    drop(cache);
    std::fs::write(&path, b"not an embedding cache at all").unwrap();
    let err = DiskCache::open(tmp.path(), "m", 3).unwrap_err().to_string();
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(err.contains("delete it"), "{err}");
}

#[test]
fn duplicates_and_wrong_sizes() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = DiskCache::open(tmp.path(), "m", 2).unwrap();
    let k = tracelab_embed::cache::key("m", "x");
    cache
        .put_many(&[(k, &[1.0, 2.0]), (k, &[1.0, 2.0])])
        .unwrap();
    cache.put_many(&[(k, &[1.0, 2.0])]).unwrap();
    assert_eq!(cache.len(), 1);
    let header = 8 + 4 + 4 + 1;
    assert_eq!(
        std::fs::metadata(cache.path()).unwrap().len(),
        header + 32 + 8
    );
    let err = cache.put_many(&[(k, &[1.0])]).unwrap_err().to_string();
    assert!(err.contains("dimension 2"), "{err}");
}
