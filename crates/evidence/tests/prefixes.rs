//! The prefix layer through `parse`: every corpus case behind every CI
//! prefix shape parses to the same failures as without it; a line that only
//! happens to start with a time is not touched; interleaved jobs keep their
//! input line numbers.

use tracelab_evidence::{ParseOptions, parse};

/// What a CI system or a copy out of a viewer puts in front of line `i` (0-based).
type Prefixer = fn(usize, &str) -> String;

const PREFIXERS: &[(&str, Prefixer)] = &[
    ("github actions", |i, l| {
        format!(
            "2024-05-01T12:{:02}:{:02}.{:07}Z {l}",
            i / 60 % 60,
            i % 60,
            i * 7919 % 10_000_000
        )
    }),
    ("gitlab", |i, l| {
        format!("2024-05-01T12:00:00.{:06}Z 00O {l}", i % 1_000_000)
    }),
    ("jenkins", |i, l| {
        format!("[2024-05-01T12:00:{:02}.{:03}Z] {l}", i % 60, i % 1000)
    }),
    ("jenkins time", |i, l| {
        format!("12:{:02}:{:02} {l}", i / 60 % 60, i % 60)
    }),
    ("obs", |i, l| format!("[{:>5}s] {l}", i / 10)),
    ("gutter", |i, l| format!("{:>5} | {l}", i + 1)),
    ("cat -n", |i, l| format!("{:>6}\t{l}", i + 1)),
    ("job label", |_, l| format!("[build] {l}")),
    ("colours", |_, l| format!("\x1b[32m{l}\x1b[0m")),
    ("crlf", |_, l| format!("{l}\r")),
    ("timestamps and colours", |i, l| {
        format!("2024-05-01T12:00:00.{:07}Z \x1b[2m{l}\x1b[0m", i)
    }),
];

fn corpus() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        // `corpus/real/` is the labelled real corpus (tests/real_corpus.rs).
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, String::from_utf8(std::fs::read(&p).unwrap()).unwrap())
        })
        .collect()
}

fn failures(text: &str) -> serde_json::Value {
    serde_json::to_value(parse(text.as_bytes(), &ParseOptions::default()).failures).unwrap()
}

#[test]
fn every_corpus_case_parses_the_same_behind_every_prefix() {
    let mut checked = 0;
    for (name, text) in corpus() {
        let want = failures(&text);
        for (shape, prefix) in PREFIXERS {
            let body = text.strip_suffix('\n').unwrap_or(&text);
            let prefixed: String = body
                .split('\n')
                .enumerate()
                .map(|(i, l)| prefix(i, l) + "\n")
                .collect();
            assert_eq!(failures(&prefixed), want, "{name} behind {shape} prefixes");
            checked += 1;
        }
    }
    assert!(checked >= 40 * PREFIXERS.len() - 1, "{checked}");
}

#[test]
fn a_line_that_starts_with_a_time_is_not_a_prefix() {
    let text = "Traceback (most recent call last):\n  File \"/app/alarm.py\", line 8, in set_alarm\n    check(at)\nValueError: alarm not set\n07:30:00 is in the past\n";
    let out = parse(text.as_bytes(), &ParseOptions::default());
    assert_eq!(
        out.failures[0].message,
        "alarm not set\n07:30:00 is in the past"
    );
    assert!(out.diagnostics.iter().all(|d| d.code != "prefix_removed"));
}

#[test]
fn interleaved_jobs_keep_their_input_line_numbers() {
    let text = include_str!("corpus/python_and_go_interleaved_jobs.txt");
    let out = parse(text.as_bytes(), &ParseOptions::default());
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(out.failures.len(), 2);
    for f in &out.failures {
        let at = lines[f.line.unwrap() - 1];
        assert!(
            at.ends_with("Traceback (most recent call last):") || at.contains("panic: "),
            "{at}"
        );
        assert!(f.context.contains_key("job"));
    }
    assert!(out.diagnostics.iter().any(|d| d.code == "jobs_interleaved"));
}
