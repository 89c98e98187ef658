//! Input format detection from content (never from file names).

use crate::model::DetectedFormat;
use regex::Regex;
use std::sync::LazyLock;

/// How much of the start and of the end of the text detection looks at.
const SAMPLE: usize = 256 * 1024;

static PYTEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^=+ (?:test session starts|FAILURES|ERRORS|short test summary info) =+$|^(?:FAILED|ERROR) [\w/.\-]+\.py::").unwrap()
});
static UNITTEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^(?:FAIL|ERROR): \S+ \([\w.]+\)(?: [\[(].*)?$[\r\n]+^-{50,}$").unwrap()
});
static NEXTEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^\s+Starting \d+ tests? across \d+ binar|^\s+(?:FAIL|SIGSEGV|SIGABRT|TIMEOUT|PASS) \[\s*[\d.]+s\] ").unwrap()
});
static CARGO_TEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^running \d+ tests?$|^test result: (?:ok|FAILED)\. ").unwrap()
});
static GO_TEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^(?:=== RUN\s|\s*--- FAIL: \S+ \(|FAIL\t\S+|ok  \t\S+)").unwrap()
});
static JEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^\s*(?:FAIL|PASS) {1,2}\S+\.(?:[cm]?[jt]sx?)\b|^Test Suites: .*\btotal$")
        .unwrap()
});
static NODE_TEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^\s*✖ .+ \([\d.]+m?s\)$|^# (?:fail|tests) \d+$|^TAP version \d+$|^ℹ fail \d+$")
        .unwrap()
});
static BUILD_LOG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?m)^(?:\d{4}-\d{2}-\d{2}T\S+\s)?(?:##\[(?:error|group)\]|error(?:\[E\d{4}\])?: |\[ERROR\] |FAILURE: Build failed|BUILD FAILED|npm ERR!|npm error |make(?:\[\d+\])?: \*\*\*|section_start:\d+:|ERROR: Job failed|> Task :\S+ FAILED)|^\S+?:\d+:\d+: (?:fatal )?error: |^\S+\(\d+,\d+\): error TS\d+|^\S+\.java:\d+: error: ",
    )
    .unwrap()
});

/// Detects the format of decoded text.
pub fn detect(text: &str) -> DetectedFormat {
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        return DetectedFormat::Empty;
    }
    if trimmed.starts_with('<') {
        let head = crate::input::truncate_str(trimmed, 4096);
        if head.contains("<testsuite") || head.contains("<testcase") {
            return DetectedFormat::JunitXml;
        }
    }
    if let Some(f) = detect_json(trimmed) {
        return f;
    }
    let sample = sample(text);
    let checks: [(&Regex, DetectedFormat); 8] = [
        (&PYTEST, DetectedFormat::Pytest),
        (&UNITTEST, DetectedFormat::Unittest),
        (&NEXTEST, DetectedFormat::Nextest),
        (&CARGO_TEST, DetectedFormat::CargoTest),
        (&JEST, DetectedFormat::Jest),
        (&NODE_TEST, DetectedFormat::NodeTest),
        (&GO_TEST, DetectedFormat::GoTest),
        (&BUILD_LOG, DetectedFormat::BuildLog),
    ];
    for (re, fmt) in checks {
        if sample.iter().any(|s| re.is_match(s)) {
            return fmt;
        }
    }
    DetectedFormat::Text
}

fn sample(text: &str) -> Vec<&str> {
    if text.len() <= 2 * SAMPLE {
        return vec![text];
    }
    let head = crate::input::truncate_str(text, SAMPLE);
    let mut start = text.len() - SAMPLE;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    vec![head, &text[start..]]
}

/// JSON lines or `go test -json`, judged on the first non-empty lines.
fn detect_json(text: &str) -> Option<DetectedFormat> {
    let mut objects = 0;
    let mut others = 0;
    let mut go = 0;
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(20)
    {
        if line.starts_with('{') && line.ends_with('}') && line.len() < 1 << 20 {
            match serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(line) {
                Ok(m) => {
                    objects += 1;
                    if m.contains_key("Action")
                        && (m.contains_key("Package") || m.contains_key("Test"))
                    {
                        go += 1;
                    }
                }
                // Too deep or malformed but object-shaped: still JSON lines.
                Err(_) => objects += 1,
            }
        } else {
            others += 1;
        }
    }
    if objects == 0 || objects < others {
        return None;
    }
    Some(if go * 2 >= objects {
        DetectedFormat::GoTestJson
    } else {
        DetectedFormat::JsonLines
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_formats() {
        assert_eq!(detect("  \n"), DetectedFormat::Empty);
        assert_eq!(
            detect("<?xml version=\"1.0\"?>\n<testsuites>"),
            DetectedFormat::JunitXml
        );
        assert_eq!(
            detect("{\"Action\":\"run\",\"Package\":\"x\"}\n"),
            DetectedFormat::GoTestJson
        );
        assert_eq!(
            detect("{\"level\":\"error\",\"msg\":\"x\"}\n{\"level\":\"info\"}"),
            DetectedFormat::JsonLines
        );
        assert_eq!(
            detect("running 2 tests\ntest a ... FAILED\n"),
            DetectedFormat::CargoTest
        );
        assert_eq!(
            detect("=== RUN   TestX\n--- FAIL: TestX (0.00s)\n"),
            DetectedFormat::GoTest
        );
        assert_eq!(
            detect("src/main.rs:1:1: error: x\n"),
            DetectedFormat::BuildLog
        );
        assert_eq!(detect("hello\nworld\n"), DetectedFormat::Text);
        // A unittest subtest's block, with its message or its parameters.
        let dashes = "-".repeat(70);
        for header in [
            "FAIL: test_a (m.T.test_a)",
            "FAIL: test_a (m.T.test_a) [msg]",
            "FAIL: test_a (m.T.test_a) (i=1)",
        ] {
            assert_eq!(
                detect(&format!("{header}\n{dashes}\n")),
                DetectedFormat::Unittest,
                "{header}"
            );
        }
    }
}
