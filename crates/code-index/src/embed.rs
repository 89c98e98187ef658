//! The in-process [`Embedder`] (the port is `tracelab_domain::vectors`; the
//! sentence model is `tracelab-embed`). `HashingEmbedder` is a
//! deterministic, dependency-free stand-in (signed feature hashing of the
//! lexical tokens) for tests and for exercising the hybrid score's embedding
//! slot. It is not semantic: it will not relate `KeyError` to `lookup`.

use crate::tokenize::for_each_token;
use tracelab_domain::Result;

pub use tracelab_domain::vectors::{Embedder, normalise};

#[derive(Debug, Clone)]
pub struct HashingEmbedder {
    dimension: usize,
    id: String,
}

impl HashingEmbedder {
    pub fn new(dimension: usize) -> Self {
        Self {
            dimension: dimension.max(8),
            id: format!("hashing-fnv1a-{}", dimension.max(8)),
        }
    }

    fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dimension];
        for_each_token(text, |t| {
            let h = fnv1a(t.as_bytes());
            let idx = (h % self.dimension as u64) as usize;
            let sign = if (h >> 63) == 0 { 1.0 } else { -1.0 };
            v[idx] += sign;
        });
        normalise(&mut v);
        v
    }
}

impl Default for HashingEmbedder {
    fn default() -> Self {
        Self::new(256)
    }
}

impl Embedder for HashingEmbedder {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|t| self.embed_one(t)).collect())
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn similar_texts_are_closer() {
        let e = HashingEmbedder::new(128);
        let v = e
            .embed(&["parse config file", "parse the config", "render html page"])
            .unwrap();
        let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
        assert!((dot(&v[0], &v[0]) - 1.0).abs() < 1e-5);
        assert!(dot(&v[0], &v[1]) > dot(&v[0], &v[2]));
        assert_eq!(e.dimension(), 128);
        assert_eq!(e.embed(&[""]).unwrap()[0], vec![0.0; 128]);
    }
}
