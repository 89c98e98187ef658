//! jest and `node --test` (spec and TAP reporters) output.

use super::traces::js_frame;
use super::{Parsed, first_trace, merge_trace};
use crate::model::{Diagnostic, Failure, FailureKind, Language, Limits};
use regex::Regex;
use std::sync::LazyLock;

static JEST_SUITE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(FAIL|PASS)\s+(\S+)").unwrap());
static JEST_CASE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*● (.+?)\s*$").unwrap());
static CODE_FRAME: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*>?\s*\d+ \|").unwrap());
static CARET_LINE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s+\|\s*\^?\s*$").unwrap());
static ERROR_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^([A-Z]\w*(?:Error|Exception)|Error)(?: \[([A-Z0-9_]+)\])?: ?(.*)$").unwrap()
});

/// Message lines, JS frames and the error type of a jest/node failure body.
fn js_body(body: &[&str]) -> Failure {
    let mut f = Failure::new(FailureKind::TestFailure, Language::Javascript);
    let mut message: Vec<&str> = Vec::new();
    let mut frames = Vec::new();
    let mut in_code = false;
    for l in body {
        if let Some(fr) = js_frame(l) {
            frames.push(fr);
            continue;
        }
        if CODE_FRAME.is_match(l) || (in_code && CARET_LINE.is_match(l)) {
            in_code = true;
            continue;
        }
        in_code = false;
        if frames.is_empty() {
            message.push(l.trim());
        }
    }
    while message.first().is_some_and(|m| m.is_empty()) {
        message.remove(0);
    }
    while message.last().is_some_and(|m| m.is_empty()) {
        message.pop();
    }
    if let Some(c) = message.first().and_then(|m| ERROR_LINE.captures(m)) {
        f.exception_type = Some(c[1].to_owned());
        if let Some(code) = c.get(2) {
            f.context.insert("code".into(), code.as_str().to_owned());
        }
        let mut rest = vec![c.get(3).map_or("", |m| m.as_str())];
        rest.extend(message.iter().skip(1));
        f.message = rest.join("\n").trim().to_owned();
    } else {
        f.message = message.join("\n");
    }
    frames.reverse();
    f.frames = frames;
    f
}

pub(crate) fn parse_jest(lines: &[&str], limits: &Limits, parsed: &mut Parsed) {
    let mut file: Option<String> = None;
    let mut i = 0;
    while i < lines.len() {
        if let Some(c) = JEST_SUITE.captures(lines[i]) {
            file = Some(c[2].to_owned());
            i += 1;
            continue;
        }
        let Some(c) = JEST_CASE.captures(lines[i]) else {
            i += 1;
            continue;
        };
        let title = c[1].to_owned();
        let start = i;
        let mut j = i + 1;
        while j < lines.len()
            && !JEST_CASE.is_match(lines[j])
            && !JEST_SUITE.is_match(lines[j])
            && !lines[j].starts_with("Test Suites:")
            && !lines[j].starts_with("Summary of all failing tests")
        {
            j += 1;
        }
        if parsed.failures.len() <= limits.max_failures {
            let mut f = js_body(&lines[start + 1..j]);
            f.line = Some(start + 1);
            let suite_error = title == "Test suite failed to run";
            if suite_error {
                f.context.insert("outcome".into(), "suite_error".into());
            }
            f.test_id = Some(match (&file, suite_error) {
                (Some(file), true) => file.clone(),
                (Some(file), false) => format!("{file} › {title}"),
                (None, _) => title.clone(),
            });
            // jest repeats failures in "Summary of all failing tests"; keep the first.
            if !parsed.failures.iter().any(|g| g.test_id == f.test_id) {
                parsed.failures.push(f);
            }
        }
        i = j;
    }
    if parsed.failures.is_empty() {
        parsed.diagnostics.push(Diagnostic::info(
            "no_failure_found",
            "jest output without failed tests",
        ));
    }
}

static NODE_FAIL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\s*)✖ (.+?) \([\d.]+m?s\)(?: # .*)?$").unwrap());
static NODE_SUITE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\s*)▶ (.+?)(?: \([\d.]+m?s\))?$").unwrap());
static TAP_NOT_OK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\s*)not ok \d+ - (.+?)(?: # .*)?$").unwrap());
static TAP_SUBTEST: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\s*)# Subtest: (.+)$").unwrap());

fn indent_of(l: &str) -> usize {
    l.len() - l.trim_start().len()
}

pub(crate) fn parse_node_test(lines: &[&str], limits: &Limits, parsed: &mut Parsed) {
    let mut suites: Vec<(usize, String)> = Vec::new();
    let mut i = 0;
    while i < lines.len() && parsed.failures.len() <= limits.max_failures {
        let l = lines[i];
        if let Some(c) = NODE_SUITE.captures(l) {
            let ind = c[1].len();
            suites.retain(|(d, _)| *d < ind);
            suites.push((ind, c[2].to_owned()));
            i += 1;
            continue;
        }
        if l.trim_start().starts_with("✖ failing tests:") {
            break; // The recap repeats what was already read.
        }
        if let Some(c) = NODE_FAIL.captures(l) {
            let ind = c[1].len();
            suites.retain(|(d, _)| *d < ind);
            let mut j = i + 1;
            while j < lines.len() && (lines[j].trim().is_empty() || indent_of(lines[j]) > ind) {
                j += 1;
            }
            let body: Vec<&str> = lines[i + 1..j].to_vec();
            // A suite fails when a child does; its body is just the children.
            let child_failed = body.iter().any(|b| NODE_FAIL.is_match(b));
            if !child_failed {
                let text = body.join("\n");
                let mut f = match first_trace(&dedent(&text)) {
                    Some(t) => {
                        let mut f = Failure::new(FailureKind::TestFailure, Language::Javascript);
                        merge_trace(&mut f, t);
                        f
                    }
                    None => js_body(&body),
                };
                f.kind = FailureKind::TestFailure;
                f.line = Some(i + 1);
                f.test_id = Some(test_path(&suites, &c[2]));
                parsed.failures.push(f);
            }
            i += 1;
            continue;
        }
        if let Some(c) = TAP_SUBTEST.captures(l) {
            let ind = c[1].len();
            suites.retain(|(d, _)| *d < ind);
            i += 1;
            continue;
        }
        if let Some(c) = TAP_NOT_OK.captures(l) {
            let ind = c[1].len();
            let title = c[2].to_owned();
            let (f, next) = tap_failure(lines, i + 1, ind);
            if let Some(mut f) = f
                && f.context
                    .get("failure_type")
                    .is_none_or(|t| t != "subtestsFailed")
            {
                f.line = Some(i + 1);
                f.test_id = Some(test_path(&suites, &title));
                parsed.failures.push(f);
            }
            i = next;
            continue;
        }
        i += 1;
    }
    if parsed.failures.is_empty() {
        parsed.diagnostics.push(Diagnostic::info(
            "no_failure_found",
            "node test output without failed tests",
        ));
    }
}

fn dedent(text: &str) -> String {
    let min = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(indent_of)
        .min()
        .unwrap_or(0);
    text.lines()
        .map(|l| {
            if l.len() >= min {
                &l[min..]
            } else {
                l.trim_start()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn test_path(suites: &[(usize, String)], title: &str) -> String {
    let mut parts: Vec<&str> = suites.iter().map(|(_, s)| s.as_str()).collect();
    parts.push(title);
    parts.join(" > ")
}

/// Reads the YAML diagnostic block after `not ok`: error, name, code, stack.
fn tap_failure(lines: &[&str], mut i: usize, ind: usize) -> (Option<Failure>, usize) {
    if lines.get(i).is_none_or(|l| l.trim() != "---") {
        let mut f = Failure::new(FailureKind::TestFailure, Language::Javascript);
        f.message = "test failed".into();
        return (Some(f), i);
    }
    i += 1;
    let mut f = Failure::new(FailureKind::TestFailure, Language::Javascript);
    let mut key: Option<String> = None;
    let mut block: Vec<&str> = Vec::new();
    let flush = |key: &Option<String>, block: &mut Vec<&str>, f: &mut Failure| {
        if let Some(k) = key {
            let text = block.join("\n");
            match k.as_str() {
                "error" => f.message = text.trim().to_owned(),
                "stack" => {
                    let mut frames: Vec<_> = block
                        .iter()
                        .filter_map(|l| js_frame(&format!("    at {}", l.trim())))
                        .collect();
                    frames.reverse();
                    f.frames = frames;
                }
                _ => {}
            }
        }
        block.clear();
    };
    while i < lines.len() {
        let l = lines[i];
        let t = l.trim();
        if t == "..." && indent_of(l) <= ind + 2 {
            i += 1;
            break;
        }
        let inner = indent_of(l);
        if inner == ind + 2 && t.contains(':') && !t.starts_with('-') {
            flush(&key, &mut block, &mut f);
            let (k, v) = t.split_once(':').unwrap_or((t, ""));
            let v = v.trim();
            key = None;
            match k {
                "error" | "stack" if v == "|-" || v == "|" || v == ">-" => key = Some(k.to_owned()),
                "error" => f.message = v.trim_matches('\'').to_owned(),
                "name" => f.exception_type = Some(v.trim_matches('\'').to_owned()),
                "code" => {
                    f.context
                        .insert("code".into(), v.trim_matches('\'').to_owned());
                }
                "failureType" => {
                    f.context
                        .insert("failure_type".into(), v.trim_matches('\'').to_owned());
                }
                _ => {}
            }
        } else if key.is_some() {
            block.push(l);
        }
        i += 1;
    }
    flush(&key, &mut block, &mut f);
    (Some(f), i)
}
