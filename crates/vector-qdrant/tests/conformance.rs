//! The vector port's conformance suite against a real Qdrant server, when
//! `TRACELAB_TEST_QDRANT_URL` names one (gRPC, e.g. `http://127.0.0.1:6334`).
//! CI has no Qdrant, so without the variable the test prints why it skipped
//! and passes — deliberately not `tracelab_testkit::backends::backend`,
//! which fails under `TRACELAB_REQUIRE_BACKENDS=1`.

use std::time::Duration;
use tracelab_domain::ErrorKind;
use tracelab_domain::vectors::{Filter, Hit, Record, VectorIndex, conformance};
use tracelab_vector_qdrant::{QdrantConfig, QdrantIndex};

const VAR: &str = "TRACELAB_TEST_QDRANT_URL";

fn server() -> Option<String> {
    match std::env::var(VAR) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            eprintln!(
                "skipped: {VAR} is not set; point it at a Qdrant gRPC port to run the suite (docs/code-index.md)"
            );
            None
        }
    }
}

/// A collection that is deleted when the test is done with it.
struct Temporary(QdrantIndex);

impl Drop for Temporary {
    fn drop(&mut self) {
        if let Err(e) = self.0.drop_collection() {
            eprintln!("could not delete {}: {e}", self.0.collection());
        }
    }
}

impl VectorIndex for Temporary {
    fn dimension(&self) -> usize {
        self.0.dimension()
    }
    fn upsert(&self, records: Vec<Record>) -> tracelab_domain::Result<()> {
        self.0.upsert(records)
    }
    fn delete(&self, ids: &[u64]) -> tracelab_domain::Result<usize> {
        self.0.delete(ids)
    }
    fn search(&self, q: &[f32], k: usize, f: &Filter) -> tracelab_domain::Result<Vec<Hit>> {
        self.0.search(q, k, f)
    }
    fn count(&self) -> tracelab_domain::Result<usize> {
        self.0.count()
    }
}

fn fresh(url: &str, dimension: usize) -> Temporary {
    let name = tracelab_testkit::backends::unique_name("tracelab_conformance_");
    let mut config = QdrantConfig::new(url, name);
    config.exact = true;
    Temporary(QdrantIndex::connect(config, dimension).expect("connect to Qdrant"))
}

#[test]
fn qdrant_index_conforms() {
    let Some(url) = server() else { return };
    conformance::run(|dimension| fresh(&url, dimension));
}

#[test]
fn reopening_with_another_dimension_is_a_conflict() {
    let Some(url) = server() else { return };
    let first = fresh(&url, 3);
    let again = QdrantIndex::connect(QdrantConfig::new(&url, first.0.collection()), 4);
    assert_eq!(again.unwrap_err().kind, ErrorKind::Conflict);
    let same = QdrantIndex::connect(QdrantConfig::new(&url, first.0.collection()), 3).unwrap();
    assert_eq!(same.count().unwrap(), 0);
}

/// Runs without a server: a closed port is a clear `Unavailable` error,
/// from a plain thread and from inside an async runtime alike.
#[test]
fn unreachable_server_is_unavailable_not_a_panic() {
    // Port 9 (discard) on loopback: nothing listens there in CI or here.
    let mut config = QdrantConfig::new("http://127.0.0.1:9", "nowhere");
    config.timeout = Duration::from_secs(3);
    let err = QdrantIndex::connect(config.clone(), 8).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Unavailable, "{err}");
    assert!(err.to_string().contains("127.0.0.1:9"), "{err}");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let err = rt.block_on(async { QdrantIndex::connect(config, 8).unwrap_err() });
    assert_eq!(err.kind, ErrorKind::Unavailable);
    let bad = QdrantIndex::connect(QdrantConfig::new("http://127.0.0.1:9", "x"), 0);
    assert_eq!(bad.unwrap_err().kind, ErrorKind::InvalidArgument);
}
