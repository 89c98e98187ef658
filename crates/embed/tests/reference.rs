//! The candle embedder against sentence-transformers: every vector of
//! `reference/minilm-reference.json` (written by `reference/make_reference.py`
//! with PyTorch) must come out with cosine ≥ 0.9999. Needs the model folder
//! in `TRACELAB_TEST_MODEL_DIR` (`deploy/models/fetch-minilm.sh` prints it);
//! skips without it, and fails without it in CI.

use serde::Deserialize;
use tracelab_embed::{Embedder, Options, SentenceEmbedder};
use tracelab_testkit::backends::backend;

#[derive(Deserialize)]
struct Fixture {
    max_seq_length: usize,
    dimension: usize,
    texts: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    text: String,
    tokens: usize,
    vector: Vec<f32>,
}

fn fixture() -> Fixture {
    serde_json::from_str(include_str!("../reference/minilm-reference.json")).unwrap()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
}

#[test]
fn vectors_match_sentence_transformers() {
    let Some(dir) = backend("TRACELAB_TEST_MODEL_DIR") else {
        return;
    };
    let fixture = fixture();
    // Batches of 8 over length-sorted texts: padding is exercised too.
    let embedder = SentenceEmbedder::from_dir(
        &dir,
        &Options {
            batch_size: 8,
            max_length: None,
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(embedder.dimension(), fixture.dimension);
    assert_eq!(embedder.max_length(), fixture.max_seq_length);
    assert!(
        embedder.model_id().starts_with("sbert-mean-384d-256tok@"),
        "{}",
        embedder.model_id()
    );

    let texts: Vec<&str> = fixture.texts.iter().map(|e| e.text.as_str()).collect();
    let got = embedder.embed(&texts).unwrap();
    assert_eq!(got.len(), texts.len());
    let mut worst = (f64::INFINITY, "");
    let mut max_diff = 0f32;
    for (entry, v) in fixture.texts.iter().zip(&got) {
        max_diff = v
            .iter()
            .zip(&entry.vector)
            .map(|(a, b)| (a - b).abs())
            .fold(max_diff, f32::max);
        assert_eq!(
            embedder.token_count(&entry.text).unwrap(),
            entry.tokens,
            "tokens of {:?}",
            entry.text
        );
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!(
            (norm - 1.0).abs() < 1e-4,
            "norm {norm} for {:?}",
            entry.text
        );
        let c = cosine(v, &entry.vector);
        if c < worst.0 {
            worst = (c, &entry.text);
        }
        assert!(c >= 0.9999, "cosine {c} < 0.9999 for {:?}", entry.text);
    }
    eprintln!(
        "sentence-transformers vs candle: lowest cosine 1 - {:.1e} ({:?}), largest component difference {max_diff:.1e}",
        1.0 - worst.0,
        worst.1
    );

    // One text at a time (no padding) gives the same vectors as the batches.
    let single = SentenceEmbedder::from_dir(
        &dir,
        &Options {
            batch_size: 1,
            max_length: None,
        },
    )
    .unwrap();
    for (i, text) in texts.iter().enumerate().step_by(7) {
        let alone = single.embed(&[text]).unwrap().remove(0);
        assert!(
            cosine(&alone, &got[i]) > 0.99999,
            "{text:?} differs alone and in a batch"
        );
    }
}

#[test]
fn the_fixture_covers_truncation_and_awkward_input() {
    let f = fixture();
    assert!(f.texts.len() >= 30);
    assert!(
        f.texts.iter().any(|e| e.tokens == f.max_seq_length),
        "a text longer than the limit"
    );
    assert!(f.texts.iter().any(|e| e.text.is_empty()));
    assert!(f.texts.iter().all(|e| e.vector.len() == f.dimension));
}
