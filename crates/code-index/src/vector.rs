//! The in-process [`VectorIndex`] (exact cosine); the port and its
//! conformance suite are `tracelab_domain::vectors`, which the Qdrant adapter
//! runs too, so the two cannot drift.

use std::collections::HashMap;
use std::sync::RwLock;
use tracelab_domain::{Error, Result};

pub use tracelab_domain::vectors::{Filter, Hit, Payload, Record, VectorIndex};

#[derive(Debug)]
struct Entry {
    id: u64,
    vector: Vec<f32>,
    payload: Payload,
}

/// Exact (brute-force) cosine search in memory: fine to a few million
/// vectors of small dimension; the embedded mode's default.
#[derive(Debug)]
pub struct ExactCosineIndex {
    dimension: usize,
    inner: RwLock<(Vec<Entry>, HashMap<u64, usize>)>,
}

impl ExactCosineIndex {
    pub fn new(dimension: usize) -> Self {
        Self {
            dimension,
            inner: RwLock::new((Vec::new(), HashMap::new())),
        }
    }
}

fn unit(v: &[f32]) -> Vec<f32> {
    let mut v = v.to_vec();
    crate::embed::normalise(&mut v);
    v
}

impl VectorIndex for ExactCosineIndex {
    fn dimension(&self) -> usize {
        self.dimension
    }

    fn upsert(&self, records: Vec<Record>) -> Result<()> {
        if let Some(bad) = records.iter().find(|r| r.vector.len() != self.dimension) {
            return Err(Error::invalid(format!(
                "vector {} has dimension {}, index has {}",
                bad.id,
                bad.vector.len(),
                self.dimension
            )));
        }
        let mut guard = self.inner.write().unwrap_or_else(|e| e.into_inner());
        let (entries, by_id) = &mut *guard;
        for r in records {
            let e = Entry {
                id: r.id,
                vector: unit(&r.vector),
                payload: r.payload,
            };
            match by_id.get(&r.id) {
                Some(&i) => entries[i] = e,
                None => {
                    by_id.insert(r.id, entries.len());
                    entries.push(e);
                }
            }
        }
        Ok(())
    }

    fn delete(&self, ids: &[u64]) -> Result<usize> {
        let mut guard = self.inner.write().unwrap_or_else(|e| e.into_inner());
        let (entries, by_id) = &mut *guard;
        let mut n = 0;
        for id in ids {
            if let Some(i) = by_id.remove(id) {
                entries.swap_remove(i);
                if i < entries.len() {
                    by_id.insert(entries[i].id, i);
                }
                n += 1;
            }
        }
        Ok(n)
    }

    fn search(&self, query: &[f32], k: usize, filter: &Filter) -> Result<Vec<Hit>> {
        if query.len() != self.dimension {
            return Err(Error::invalid(format!(
                "query has dimension {}, index has {}",
                query.len(),
                self.dimension
            )));
        }
        let q = unit(query);
        let guard = self.inner.read().unwrap_or_else(|e| e.into_inner());
        let mut hits: Vec<Hit> = guard
            .0
            .iter()
            .filter(|e| filter.matches(&e.payload))
            .map(|e| Hit {
                id: e.id,
                score: e.vector.iter().zip(&q).map(|(a, b)| a * b).sum(),
            })
            .collect();
        let order = |a: &Hit, b: &Hit| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id));
        if hits.len() > k && k > 0 {
            hits.select_nth_unstable_by(k, order);
        }
        hits.truncate(k);
        hits.sort_unstable_by(order);
        Ok(hits)
    }

    fn count(&self) -> Result<usize> {
        Ok(self.inner.read().unwrap_or_else(|e| e.into_inner()).0.len())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn exact_cosine_index_conforms() {
        tracelab_domain::vectors::conformance::run(super::ExactCosineIndex::new);
    }
}
