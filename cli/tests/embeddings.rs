//! `tracelab locate --embeddings [MODEL_DIR]`: the folder comes from the flag
//! or TRACELAB_MODEL_DIR, and a missing one is a one-line error saying how
//! to fetch the model (in builds with and without the `embeddings` feature).

use std::process::{Command, Output};

fn locate(dir: &std::path::Path, extra: &[&str], model_env: Option<&str>) -> Output {
    let evidence = dir.join("failure.txt");
    std::fs::write(&evidence, "AssertionError: add(2, 2) returned <5>\n").unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tracelab"));
    cmd.args(["locate", "--repo", dir.to_str().unwrap(), "--evidence"])
        .arg(&evidence)
        .args(extra)
        .env("HOME", dir)
        .env_remove("TRACELAB_MODEL_DIR");
    if let Some(v) = model_env {
        cmd.env("TRACELAB_MODEL_DIR", v);
    }
    cmd.output().unwrap()
}

#[test]
fn a_missing_model_folder_says_how_to_fetch_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-model");
    let out = locate(
        dir.path(),
        &["--embeddings", missing.to_str().unwrap()],
        None,
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no-model") && err.contains("deploy/models/fetch-minilm.sh"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn without_a_value_the_folder_comes_from_the_environment_then_home() {
    let dir = tempfile::tempdir().unwrap();
    let out = locate(
        dir.path(),
        &["--embeddings"],
        Some("/nonexistent/env-model"),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("/nonexistent/env-model"),
        "{err}"
    );

    let out = locate(dir.path(), &["--embeddings"], None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains(".cache/tracelab/models/all-MiniLM-L6-v2"),
        "{err}"
    );
}
