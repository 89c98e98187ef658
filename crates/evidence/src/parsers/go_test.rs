//! `go test` (plain and `-v`) and `go test -json` output.

use super::{Parsed, build_log, merge_trace, traces};
use crate::model::{Diagnostic, Failure, FailureKind, Frame, Language, Limits};
use regex::Regex;
use std::collections::BTreeMap;
use std::sync::LazyLock;

static GO_LOG_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\s*)([\w.\-/]+\.go):(\d+): (.*)$").unwrap());
static GO_FAIL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\s*)--- FAIL: (\S+) \(([\d.]+)s\)$").unwrap());
static GO_RUN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^=== (?:RUN|CONT|PAUSE|NAME)\s+(\S+)$").unwrap());
static GO_PKG: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:FAIL|ok  )\t(\S+)(?:\t| \[)").unwrap());

/// Builds a test failure from a Go test's output lines: a panic if there is
/// one, else the `file.go:N: message` lines written by `t.Error`/`t.Fatal`.
pub(crate) fn failure_from_output(test: &str, lines: &[&str]) -> Option<Failure> {
    if let Some(p) = lines.iter().position(|l| l.starts_with("panic: ")) {
        let trace = traces::scan(&lines[p..], 1, 1).into_iter().next();
        if trace.is_some() {
            return trace;
        }
    }
    let mut f = Failure::new(FailureKind::TestFailure, Language::Go);
    let mut messages: Vec<String> = Vec::new();
    let mut indent = usize::MAX;
    for l in lines {
        if let Some(c) = GO_LOG_LINE.captures(l) {
            if f.frames.is_empty() {
                let func = test.split('/').next().unwrap_or(test);
                f.frames.push(Frame {
                    file: Some(c[2].to_owned()),
                    function: Some(func.to_owned()),
                    line: c[3].parse().ok(),
                    in_app: false,
                });
            }
            indent = c[1].len();
            messages.push(c[4].to_owned());
        } else if indent != usize::MAX
            && l.len() > indent
            && l[..indent].trim().is_empty()
            && l.starts_with(&" ".repeat(indent + 1))
        {
            // Continuation of a multi-line message.
            if let Some(m) = messages.last_mut() {
                m.push('\n');
                m.push_str(l.trim());
            }
        }
    }
    if f.frames.is_empty() {
        return None;
    }
    f.message = messages.join("\n");
    Some(f)
}

fn finish(test: &str, package: Option<&str>, output: &[&str], line: usize) -> Failure {
    let mut f = Failure::new(FailureKind::TestFailure, Language::Go);
    match failure_from_output(test, output) {
        Some(t) => merge_trace(&mut f, t),
        None => {
            f.message = output
                .iter()
                .map(|l| l.trim())
                .filter(|l| !l.is_empty() && !l.starts_with("--- FAIL") && !l.starts_with("=== "))
                .take(20)
                .collect::<Vec<_>>()
                .join("\n");
        }
    }
    f.kind = FailureKind::TestFailure;
    f.line = Some(line);
    f.test_id = Some(match package {
        Some(p) => format!("{p}.{test}"),
        None => test.to_owned(),
    });
    if let Some(p) = package {
        f.context.insert("package".into(), p.to_owned());
        // Qualify the test function like the runtime does, so panics and t.Error agree.
        for fr in &mut f.frames {
            if fr
                .function
                .as_deref()
                .is_some_and(|func| !func.contains('.') && func.starts_with("Test"))
            {
                fr.function = Some(format!("{p}.{}", fr.function.as_deref().unwrap_or("")));
            }
        }
    }
    f
}

/// Drops a parent test whose failure only reflects a failed subtest.
fn leaf_only(failed: &mut Vec<(String, Option<String>, Vec<String>, usize)>) {
    let names: Vec<(String, Option<String>)> = failed
        .iter()
        .map(|(t, p, _, _)| (t.clone(), p.clone()))
        .collect();
    failed.retain(|(t, p, out, _)| {
        let has_child = names
            .iter()
            .any(|(n, np)| np == p && n.starts_with(&format!("{t}/")));
        let own_output = out
            .iter()
            .any(|l| GO_LOG_LINE.is_match(l) || l.starts_with("panic: "));
        !has_child || own_output
    });
}

pub(crate) fn parse_text(lines: &[&str], limits: &Limits, parsed: &mut Parsed) {
    let mut outputs: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    // (test, package, output, line)
    let mut failed: Vec<(String, Option<String>, Vec<String>, usize)> = Vec::new();
    let mut pending_from = 0usize;
    let mut after_fail: Option<(usize, usize)> = None; // (index in failed, indent)
    for (i, l) in lines.iter().enumerate() {
        if let Some(c) = GO_RUN.captures(l) {
            current = Some(c[1].to_owned());
            after_fail = None;
            continue;
        }
        if let Some(c) = GO_FAIL.captures(l) {
            let name = c[2].to_owned();
            let out = outputs.remove(&name).unwrap_or_default();
            failed.push((name, None, out, i + 1));
            after_fail = Some((failed.len() - 1, c[1].len()));
            continue;
        }
        if let Some(c) = GO_PKG.captures(l) {
            for f in &mut failed[pending_from..] {
                f.1 = Some(c[1].to_owned());
            }
            pending_from = failed.len();
            current = None;
            after_fail = None;
            outputs.clear();
            continue;
        }
        if l.starts_with("--- PASS")
            || l.trim_start().starts_with("--- PASS")
            || l.trim_start().starts_with("--- SKIP")
            || *l == "PASS"
            || *l == "FAIL"
        {
            after_fail = None;
            continue;
        }
        // A panic belongs to the test that was running or just failed.
        if l.starts_with("panic: ") || l.starts_with("fatal error: ") {
            let rest: Vec<String> = lines[i..]
                .iter()
                .take(10_000)
                .map(|s| s.to_string())
                .collect();
            let target = after_fail.map(|(k, _)| k).or_else(|| {
                current.as_ref().map(|t| {
                    failed.push((
                        t.clone(),
                        None,
                        outputs.remove(t).unwrap_or_default(),
                        i + 1,
                    ));
                    failed.len() - 1
                })
            });
            if let Some(k) = target {
                failed[k].2.extend(rest);
            } else {
                failed.push(("(package)".into(), None, rest, i + 1));
            }
            after_fail = None;
            current = None;
            continue;
        }
        match (after_fail, &current) {
            (Some((k, indent)), _)
                if l.len() > indent
                    && l.starts_with(&" ".repeat(indent + 1))
                    && failed[k].2.len() < 1000 =>
            {
                failed[k].2.push(l.to_string());
            }
            (Some((_, indent)), _)
                if l.len() > indent && l.starts_with(&" ".repeat(indent + 1)) => {}
            (_, Some(t)) => {
                let o = outputs.entry(t.clone()).or_default();
                if o.len() < 1000 {
                    o.push(l.to_string());
                }
            }
            _ => {}
        }
    }
    leaf_only(&mut failed);
    for (test, pkg, out, line) in failed.into_iter().take(limits.max_failures + 1) {
        let out: Vec<&str> = out.iter().map(String::as_str).collect();
        parsed
            .failures
            .push(finish(&test, pkg.as_deref(), &out, line));
    }
    if parsed.failures.is_empty() {
        build_log::parse(lines, limits, parsed);
    }
}

#[derive(serde::Deserialize)]
struct Event {
    #[serde(rename = "Action")]
    action: String,
    #[serde(rename = "Package", default)]
    package: Option<String>,
    #[serde(rename = "ImportPath", default)]
    import_path: Option<String>,
    #[serde(rename = "Test", default)]
    test: Option<String>,
    #[serde(rename = "Output", default)]
    output: Option<String>,
}

pub(crate) fn parse_json(lines: &[&str], limits: &Limits, parsed: &mut Parsed) {
    type Key = (String, Option<String>);
    let mut outputs: BTreeMap<Key, (String, usize)> = BTreeMap::new();
    let mut failed: Vec<(String, Option<String>, String, usize)> = Vec::new();
    let mut build_output = String::new();
    let mut build_line: Option<usize> = None;
    let mut not_json = 0usize;
    let mut first_bad = None;
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim();
        if t.is_empty() {
            continue;
        }
        if crate::parsers::logs::json_depth(t) > limits.max_json_depth {
            parsed.diagnostics.push(
                Diagnostic::warning(
                    "json_too_deep",
                    format!(
                        "JSON nested deeper than {} levels; line skipped",
                        limits.max_json_depth
                    ),
                )
                .at(i + 1),
            );
            continue;
        }
        let ev: Event = match serde_json::from_str(t) {
            Ok(ev) => ev,
            Err(_) => {
                // Compiler errors go to stderr and are often interleaved.
                not_json += 1;
                first_bad.get_or_insert(i + 1);
                build_line.get_or_insert(i + 1);
                if build_output.len() < 1 << 20 {
                    build_output.push_str(l);
                    build_output.push('\n');
                }
                continue;
            }
        };
        let pkg = ev.package.or(ev.import_path).unwrap_or_default();
        match ev.action.as_str() {
            "output" | "build-output" => {
                let out = ev.output.unwrap_or_default();
                if ev.action == "build-output" {
                    build_line.get_or_insert(i + 1);
                    build_output.push_str(&out);
                    continue;
                }
                let e = outputs
                    .entry((pkg, ev.test))
                    .or_insert_with(|| (String::new(), i + 1));
                if e.0.len() < 256 * 1024 {
                    e.0.push_str(&out);
                }
            }
            "fail" => {
                let key = (pkg.clone(), ev.test.clone());
                let (out, line) = outputs.remove(&key).unwrap_or((String::new(), i + 1));
                match ev.test {
                    Some(t) => failed.push((t, Some(pkg), out, line)),
                    // A package fails on its own when a panic/timeout happened outside a test.
                    None if out.contains("panic: ") || out.contains("fatal error: ") => {
                        failed.push(("(package)".into(), Some(pkg), out, line))
                    }
                    None => {}
                }
            }
            _ => {}
        }
    }
    if not_json > 0 {
        parsed.diagnostics.push(
            Diagnostic::info(
                "non_json_lines",
                format!("{not_json} lines were not go test events (treated as build output)"),
            )
            .at(first_bad.unwrap_or(1)),
        );
    }
    let mut failed4: Vec<(String, Option<String>, Vec<String>, usize)> = failed
        .into_iter()
        .map(|(t, p, o, l)| (t, p, o.lines().map(str::to_owned).collect(), l))
        .collect();
    leaf_only(&mut failed4);
    for (test, pkg, out, line) in failed4.into_iter().take(limits.max_failures + 1) {
        let out: Vec<&str> = out.iter().map(String::as_str).collect();
        let mut f = finish(&test, pkg.as_deref(), &out, line);
        if test == "(package)" {
            f.test_id = pkg.clone();
        }
        parsed.failures.push(f);
    }
    if !build_output.is_empty() {
        let lines: Vec<&str> = build_output.lines().collect();
        let mut sub = Parsed::default();
        build_log::compiler_diagnostics(&lines, limits, &mut sub);
        // Lines inside the build output are not input lines; point at where it starts.
        parsed
            .failures
            .extend(sub.failures.into_iter().map(|mut f| {
                f.line = build_line;
                f
            }));
    }
    if parsed.failures.is_empty() {
        parsed.diagnostics.push(Diagnostic::info(
            "no_failure_found",
            "go test -json stream without failed tests",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_error_lines_become_frame_and_message() {
        let f = failure_from_output(
            "TestAdd/neg",
            &["    calc_test.go:12: got 1", "        want 2"],
        )
        .unwrap();
        assert_eq!(f.frames[0].file.as_deref(), Some("calc_test.go"));
        assert_eq!(f.frames[0].function.as_deref(), Some("TestAdd"));
        assert_eq!(f.message, "got 1\nwant 2");
    }
}
