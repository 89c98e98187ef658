//! Snapshot tests over a corpus of real-world-looking failure outputs, one
//! file per format/dialect under `tests/corpus/`. The file name's prefix
//! says which format detection must find; every file must yield failures.

use tracelab_evidence::{DetectedFormat, ParseOptions, parse};

/// The format each corpus file's name prefix promises.
fn expected_format(name: &str) -> DetectedFormat {
    let table: &[(&str, DetectedFormat)] = &[
        ("junit_", DetectedFormat::JunitXml),
        ("pytest", DetectedFormat::Pytest),
        ("unittest", DetectedFormat::Unittest),
        ("cargo_test", DetectedFormat::CargoTest),
        ("nextest", DetectedFormat::Nextest),
        ("go_test.json", DetectedFormat::GoTestJson),
        ("go_test", DetectedFormat::GoTest),
        ("jest", DetectedFormat::Jest),
        ("node_test", DetectedFormat::NodeTest),
        ("gha_", DetectedFormat::BuildLog),
        ("gitlab_", DetectedFormat::BuildLog),
        ("gradle_", DetectedFormat::BuildLog),
        ("npm_", DetectedFormat::BuildLog),
        ("make_", DetectedFormat::BuildLog),
        ("app_logs", DetectedFormat::JsonLines),
        ("otel_logs", DetectedFormat::JsonLines),
        ("python_", DetectedFormat::Text),
        ("java_", DetectedFormat::Text),
        ("kotlin_", DetectedFormat::Text),
        ("node_uncaught", DetectedFormat::Text),
        ("node_fetch_cause", DetectedFormat::Text),
        ("node_internal", DetectedFormat::Text),
        ("node_events", DetectedFormat::Text),
        ("js_", DetectedFormat::Text),
        ("go_panic", DetectedFormat::Text),
        ("go_goroutine", DetectedFormat::Text),
        ("go_fatal", DetectedFormat::Text),
        ("go_race", DetectedFormat::Text),
        ("rust_", DetectedFormat::Text),
    ];
    table
        .iter()
        .find(|(p, _)| name.starts_with(p))
        .map(|(_, f)| *f)
        .unwrap_or_else(|| panic!("corpus file {name} has no expected format"))
}

/// The one helper every corpus case goes through.
fn check(path: &std::path::Path) {
    // `corpus/real/` is the labelled real corpus (tests/real_corpus.rs).
    if path.is_dir() {
        return;
    }
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let input = std::fs::read(path).unwrap();
    let out = parse(&input, &ParseOptions::default());
    assert_eq!(
        out.format,
        expected_format(&name),
        "{name}: wrong format detected"
    );
    assert!(
        !out.failures.is_empty(),
        "{name}: no failures found: {:#?}",
        out.diagnostics
    );
    for f in &out.failures {
        assert_eq!(
            f.error_signature.len(),
            16,
            "{name}: error signature missing"
        );
    }
    insta::assert_json_snapshot!(out);
}

#[test]
fn corpus() {
    insta::glob!("corpus/*", check);
}
