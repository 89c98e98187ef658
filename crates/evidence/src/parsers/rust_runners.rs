//! `cargo test` (libtest) and `cargo nextest run` terminal output.

use super::{Parsed, first_trace, merge_trace};
use crate::model::{Diagnostic, Failure, FailureKind, Language, Limits};
use regex::Regex;
use std::collections::BTreeMap;
use std::sync::LazyLock;

static CARGO_SECTION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^---- (.+) stdout ----$").unwrap());
static CARGO_FAILED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^test (.+?)(?: - should panic(?: with [^.]*)?)? \.\.\. FAILED$").unwrap()
});
static CARGO_RUNNING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*Running (?:unittests |tests/|benches/)?\S*? ?\((?:[^)]*/)?deps/([\w-]+?)-[0-9a-f]+(?:\.exe)?\)$").unwrap()
});

fn panic_failure(name: &str, body: &str, line: usize) -> Failure {
    let mut f = Failure::new(FailureKind::TestFailure, Language::Rust);
    f.test_id = Some(name.to_owned());
    f.line = Some(line);
    match first_trace(body) {
        Some(t) => merge_trace(&mut f, t),
        None => {
            f.message = body.trim().lines().next().unwrap_or("").to_owned();
        }
    }
    f
}

pub(crate) fn parse_cargo_test(lines: &[&str], limits: &Limits, parsed: &mut Parsed) {
    let mut binary: Option<String> = None;
    let mut seen: BTreeMap<(Option<String>, String), usize> = BTreeMap::new();
    let mut failed: Vec<(Option<String>, String, usize)> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        if let Some(c) = CARGO_RUNNING.captures(l) {
            binary = Some(c[1].replace('-', "_"));
        } else if let Some(c) = CARGO_FAILED.captures(l) {
            failed.push((binary.clone(), c[1].to_owned(), i + 1));
        } else if let Some(c) = CARGO_SECTION.captures(l) {
            let name = c[1].to_owned();
            let mut j = i + 1;
            while j < lines.len()
                && !CARGO_SECTION.is_match(lines[j])
                && lines[j] != "failures:"
                && !lines[j].starts_with("test result:")
            {
                j += 1;
            }
            if parsed.failures.len() <= limits.max_failures {
                let mut f = panic_failure(&name, &lines[i + 1..j].join("\n"), i + 1);
                if let Some(b) = &binary {
                    f.context.insert("binary".into(), b.clone());
                }
                seen.insert((binary.clone(), name), parsed.failures.len());
                parsed.failures.push(f);
            }
            i = j;
            continue;
        }
        i += 1;
    }
    // Tests reported FAILED without captured output (e.g. `--nocapture`, should_panic).
    for (bin, name, line) in failed {
        if seen.contains_key(&(bin.clone(), name.clone()))
            || parsed.failures.len() > limits.max_failures
        {
            continue;
        }
        let mut f = Failure::new(FailureKind::TestFailure, Language::Rust);
        f.test_id = Some(name);
        f.line = Some(line);
        f.message = "test failed (no captured output)".into();
        if let Some(b) = bin {
            f.context.insert("binary".into(), b);
        }
        parsed.failures.push(f);
    }
    if parsed.failures.is_empty() {
        parsed.diagnostics.push(Diagnostic::info(
            "no_failure_found",
            "cargo test output without failed tests",
        ));
    }
}

static NEXTEST_STATUS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s+(PASS|FAIL|SIGSEGV|SIGABRT|SIGKILL|TIMEOUT|LEAK|LEAK-FAIL|FLAKY|TRY \d+ FAIL|ABORT|SKIP) \[\s*[\d.]+s\] (?:\([\d/ ]+\) )?(\S+) (.+?)\s*$").unwrap()
});
static NEXTEST_OUTPUT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:──── |--- )STD(?:OUT|ERR):\s+(\S+) (.+?)(?: ---)?\s*$").unwrap()
});
static NEXTEST_INDENTED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s+(?:stdout|stderr|output) ─+$").unwrap());

pub(crate) fn parse_nextest(lines: &[&str], limits: &Limits, parsed: &mut Parsed) {
    // (binary, test) -> collected output and first line.
    let mut order: Vec<(String, String)> = Vec::new();
    let mut outputs: BTreeMap<(String, String), (String, usize, String)> = BTreeMap::new();
    let mut current: Option<(String, String)> = None;
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        if let Some(c) = NEXTEST_STATUS.captures(l) {
            let key = (c[2].to_owned(), c[3].to_owned());
            let status = c[1].to_owned();
            current = None;
            if status != "PASS"
                && status != "SKIP"
                && status != "FLAKY"
                && !status.starts_with("TRY")
            {
                if !outputs.contains_key(&key) {
                    order.push(key.clone());
                    outputs.insert(key.clone(), (String::new(), i + 1, status));
                }
                current = Some(key);
            }
        } else if let Some(c) = NEXTEST_OUTPUT.captures(l) {
            let key = (c[1].to_owned(), c[2].to_owned());
            if !outputs.contains_key(&key) {
                order.push(key.clone());
                outputs.insert(key.clone(), (String::new(), i + 1, "FAIL".into()));
            }
            current = Some(key);
        } else if NEXTEST_INDENTED.is_match(l) {
            // Newer nextest indents captured output under the status line.
        } else if l.starts_with("────────────")
            || l.trim_start().starts_with("Summary [")
            || l.trim_start().starts_with("Cancelling")
        {
            current = None;
        } else if let Some(k) = &current
            && let Some(out) = outputs.get_mut(k)
            && out.0.len() < 256 * 1024
        {
            out.0.push_str(l.strip_prefix("    ").unwrap_or(l));
            out.0.push('\n');
        }
        i += 1;
    }
    for key in order {
        if parsed.failures.len() > limits.max_failures {
            break;
        }
        let Some((body, line, status)) = outputs.remove(&key) else {
            continue;
        };
        let mut f = panic_failure(&key.1, &body, line);
        if f.exception_type.is_none() {
            // No panic: the process died (signal, timeout) or failed silently.
            f.message = if status == "FAIL" {
                "test failed without a panic message".into()
            } else {
                format!("test process ended with {status}")
            };
        }
        f.context.insert("binary".into(), key.0);
        if status != "FAIL" {
            f.context.insert("status".into(), status.clone());
            if f.exception_type.is_none() {
                f.exception_type = Some(status);
            }
        }
        parsed.failures.push(f);
    }
    if parsed.failures.is_empty() {
        parsed.diagnostics.push(Diagnostic::info(
            "no_failure_found",
            "nextest output without failed tests",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn should_panic_failures_are_not_counted_twice() {
        let out = "running 1 test\ntest t::p - should panic ... FAILED\n\nfailures:\n\n---- t::p stdout ----\nnote: test did not panic as expected at src/lib.rs:10:5\n\nfailures:\n    t::p\n";
        let lines: Vec<&str> = out.lines().collect();
        let mut parsed = Parsed::default();
        parse_cargo_test(&lines, &Limits::default(), &mut parsed);
        assert_eq!(parsed.failures.len(), 1);
        assert_eq!(parsed.failures[0].test_id.as_deref(), Some("t::p"));
    }
}
