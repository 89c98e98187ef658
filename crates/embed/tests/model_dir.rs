//! Model-folder checks on real (temporary) folders: each broken folder gets
//! an error that names what is wrong. Works without the `candle` feature.

use std::fs;
use std::path::Path;
use tracelab_embed::{Error, ErrorKind, ModelDir};

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// A folder with the files and configs of all-MiniLM-L6-v2 (weights faked:
/// `ModelDir` only checks that they are there).
fn complete(dir: &Path) {
    write(dir, "config.json", "{}");
    write(dir, "tokenizer.json", "{}");
    write(dir, "model.safetensors", "");
    write(
        dir,
        "modules.json",
        r#"[{"path": "", "type": "sentence_transformers.models.Transformer"},
            {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]"#,
    );
    write(
        dir,
        "1_Pooling/config.json",
        r#"{"pooling_mode_mean_tokens": true}"#,
    );
    write(
        dir,
        "sentence_bert_config.json",
        r#"{"max_seq_length": 256}"#,
    );
}

#[test]
fn a_complete_folder_opens() {
    let tmp = tempfile::tempdir().unwrap();
    complete(tmp.path());
    let m = ModelDir::open(tmp.path()).unwrap();
    assert_eq!(m.max_length, 256);
    assert_eq!(m.weights, tmp.path().join("model.safetensors"));
}

#[test]
fn a_missing_folder_says_how_to_fetch_it() {
    let tmp = tempfile::tempdir().unwrap();
    let err = ModelDir::open(tmp.path().join("nope")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert!(
        err.to_string().contains("deploy/models/fetch-minilm.sh"),
        "{err}"
    );
}

#[test]
fn an_incomplete_folder_names_every_missing_file() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "config.json", "{}");
    write(tmp.path(), "pytorch_model.bin", "");
    let err = ModelDir::open(tmp.path()).unwrap_err();
    assert!(matches!(err, Error::ModelDirIncomplete { .. }));
    let msg = err.to_string();
    assert!(msg.contains("tokenizer.json, model.safetensors"), "{msg}");
    assert!(msg.contains("only safetensors"), "{msg}");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
}

#[test]
fn a_missing_pooling_config_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    complete(tmp.path());
    fs::remove_file(tmp.path().join("1_Pooling/config.json")).unwrap();
    let err = ModelDir::open(tmp.path()).unwrap_err().to_string();
    assert!(err.contains("1_Pooling"), "{err}");
}

#[test]
fn cls_pooling_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    complete(tmp.path());
    write(
        tmp.path(),
        "1_Pooling/config.json",
        r#"{"pooling_mode_cls_token": true}"#,
    );
    let err = ModelDir::open(tmp.path()).unwrap_err().to_string();
    assert!(err.contains("only mean pooling"), "{err}");
}

#[test]
fn a_file_is_not_a_folder() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "weights", "");
    let err = ModelDir::open(tmp.path().join("weights"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("is not a folder"), "{err}");
}

#[test]
fn bad_weights_fail_to_load_with_the_folder_named() {
    // With `candle` (always on in tests): the fake weights do not parse.
    // Without it, loading says the feature is off. Either way: an error.
    let tmp = tempfile::tempdir().unwrap();
    complete(tmp.path());
    write(
        tmp.path(),
        "config.json",
        r#"{"vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
            "intermediate_size": 16, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
            "max_position_embeddings": 32, "type_vocab_size": 2, "initializer_range": 0.02,
            "layer_norm_eps": 1e-12, "pad_token_id": 0}"#,
    );
    let err = tracelab_embed::SentenceEmbedder::from_dir(tmp.path(), &Default::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&tmp.path().display().to_string()) || err.contains("`candle` cargo feature"),
        "{err}"
    );
}
