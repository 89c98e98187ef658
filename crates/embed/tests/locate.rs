//! The real embedder where it is used: `tracelab_code_index::locate` with
//! all-MiniLM-L6-v2 behind the content-hash cache puts an embedding
//! component into the ranking, and a second query over the same revision
//! embeds nothing again. Needs `TRACELAB_TEST_MODEL_DIR` (as reference.rs).

use std::sync::Arc;
use tracelab_code_index::score::Component;
use tracelab_code_index::{LocateOptions, locate};
use tracelab_embed::{CachingEmbedder, Options, SentenceEmbedder};
use tracelab_testkit::backends::backend;
use tracelab_testkit::scenarios;

const EVIDENCE: &str = "Traceback (most recent call last):\n  File \"/ci/work/test_app.py\", line 11, in <module>\n    test_add()\n  File \"/ci/work/test_app.py\", line 7, in test_add\n    assert result == 4, f\"add(2, 2) returned {fmt(result)}\"\nAssertionError: add(2, 2) returned <5>\n";

#[test]
fn locate_ranks_with_real_embeddings_and_reuses_them() {
    let Some(dir) = backend("TRACELAB_TEST_MODEL_DIR") else {
        return;
    };
    let s = scenarios::regression_behind_broken_range();
    let cache = tempfile::tempdir().unwrap();
    let model = SentenceEmbedder::from_dir(&dir, &Options::default()).unwrap();
    let embedder = Arc::new(
        CachingEmbedder::new(model, 10_000)
            .with_disk(cache.path())
            .unwrap(),
    );
    let opts = LocateOptions {
        top: 3,
        cache_dir: Some(cache.path().join("index")),
        embedder: Some(embedder.clone()),
        ..LocateOptions::default()
    };
    let found = locate(s.repo.path(), EVIDENCE, &opts).unwrap();
    assert_eq!(found.symbols[0].symbol, "py:app.add");
    let embedding = found.symbols[0]
        .reasons
        .iter()
        .find(|r| r.component == Component::Embedding)
        .expect("an embedding component");
    assert!(
        embedding.value > 0.0 && embedding.weight > 0.0,
        "{embedding:?}"
    );

    let computed = embedder.stats().computed;
    assert!(computed > 0);
    let again = locate(s.repo.path(), EVIDENCE, &opts).unwrap();
    let names = |l: &tracelab_code_index::Locations| {
        l.symbols
            .iter()
            .map(|s| s.symbol.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&again), names(&found));
    assert_eq!(
        embedder.stats().computed,
        computed,
        "the second run hits the cache"
    );
}
