//! Build and CI logs: compiler diagnostics, failing steps, test failures
//! reported by Maven/Gradle, stack traces, and the failure-relevant region.
//!
//! Steps are recognised from GitHub Actions groups (`##[group]Run ...`),
//! GitLab sections and `$ command` echoes, Gradle tasks and Maven plugin
//! executions; the region of a failure is the lines around it, within its step.

use super::{Parsed, traces};
use crate::model::{Diagnostic, Failure, FailureKind, Frame, Language, Limits, Region};
use regex::Regex;
use std::sync::LazyLock;

/// Compiler diagnostics reported per log, at most.
const MAX_DIAGNOSTICS: usize = 50;
const REGION_BEFORE: usize = 5;
const REGION_AFTER: usize = 25;
const REGION_BYTES: usize = 8 * 1024;

static TIMESTAMP: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z ").unwrap());
static STEP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:##\[group\](.+)|section_start:\d+:([\w.-]+)(?:\[[^\]]*\])?.*|\$ (.+)|> Task (:\S+)(?: FAILED)?|\[INFO\] --- (.+?) ---)$").unwrap()
});
static RUSTC: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(error|warning)(?:\[(E\d{4})\])?: (.+)$").unwrap());
static RUSTC_LOC: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*--> (.+?):(\d+):(\d+)$").unwrap());
static GCC_LIKE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(\S+?):(\d+):(?:(\d+):)? (?:fatal )?error: (.+?)(?:\s+\[([\w-]+)\])?$").unwrap()
});
static GO_BUILD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\S+\.go):(\d+):(\d+): (.+)$").unwrap());
static TSC: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\S+?)\((\d+),(\d+)\): error (TS\d+): (.+)$").unwrap());
static MAVEN_JAVAC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\[ERROR\] (?:COMPILATION ERROR : )?(\S+\.(?:java|kt|scala)):\[(\d+),(\d+)\] (.+)$",
    )
    .unwrap()
});
static JAVAC: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\S+\.java):(\d+): error: (.+)$").unwrap());
static KOTLINC: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^e: (?:file://)?(\S+\.kts?):(\d+):(\d+):? (.+)$").unwrap());
static MAVEN_TEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\[ERROR\] (?:Tests run:.*?in )?([\w.$]+)\.([\w$\[\]]+)(?:\(\))?\s+(?:--\s+)?Time elapsed:.*<<< (FAILURE|ERROR)!$").unwrap()
});
static GRADLE_TEST: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^([\w.$]+) > (.+?) FAILED$").unwrap());
static GRADLE_EXC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s+([\w.$]+(?:Error|Exception|Failure|Throwable)\w*)(?:: (.*?))?(?: at (\S+?):(\d+))?$",
    )
    .unwrap()
});
static ERROR_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(?:##\[error\]|error\b|\[ERROR\]|FAILURE: |BUILD FAILED|npm ERR!|npm error|make(?:\[\d+\])?: \*\*\*|ERROR: Job failed|fatal:|FAILED\b|\S+: command not found)").unwrap()
});

fn lang_of(file: &str) -> Language {
    match file.rsplit('.').next().unwrap_or("") {
        "rs" => Language::Rust,
        "py" | "pyi" => Language::Python,
        "go" => Language::Go,
        "java" | "kt" | "kts" | "scala" | "groovy" => Language::Java,
        "js" | "ts" | "tsx" | "jsx" | "mjs" | "cjs" => Language::Javascript,
        "c" | "h" | "cc" | "cpp" | "cxx" | "hpp" | "m" => Language::C,
        _ => Language::Unknown,
    }
}

fn diag(file: &str, line: &str, code: Option<&str>, message: &str, at: usize) -> Failure {
    let mut f = Failure::new(FailureKind::BuildError, lang_of(file));
    f.exception_type = Some(code.map_or_else(|| "error".to_owned(), str::to_owned));
    f.message = message.trim().to_owned();
    f.frames.push(Frame {
        file: Some(file.to_owned()),
        function: None,
        line: line.parse().ok(),
        in_app: false,
    });
    f.line = Some(at);
    f
}

/// Compiler and type-checker diagnostics (errors only) with their locations.
pub(crate) fn compiler_diagnostics(lines: &[&str], limits: &Limits, parsed: &mut Parsed) {
    let cap = MAX_DIAGNOSTICS.min(limits.max_failures + 1);
    let mut found = 0;
    for (i, l) in lines.iter().enumerate() {
        if found >= cap {
            parsed.diagnostics.push(Diagnostic::info(
                "diagnostics_capped",
                format!("only the first {cap} compiler errors are reported"),
            ));
            break;
        }
        let f = if let Some(c) = RUSTC.captures(l) {
            if &c[1] != "error" {
                continue;
            }
            let loc = lines
                .iter()
                .skip(i + 1)
                .take(2)
                .find_map(|n| RUSTC_LOC.captures(n));
            match loc {
                Some(loc) => {
                    let mut f = diag(&loc[1], &loc[2], c.get(2).map(|m| m.as_str()), &c[3], i + 1);
                    f.language = Language::Rust;
                    f
                }
                None => continue,
            }
        } else if let Some(c) = TSC.captures(l) {
            diag(&c[1], &c[2], Some(&c[4]), &c[5], i + 1)
        } else if let Some(c) = MAVEN_JAVAC.captures(l) {
            diag(&c[1], &c[2], None, &c[4], i + 1)
        } else if let Some(c) = JAVAC.captures(l) {
            diag(&c[1], &c[2], None, &c[3], i + 1)
        } else if let Some(c) = KOTLINC.captures(l) {
            diag(&c[1], &c[2], None, &c[4], i + 1)
        } else if let Some(c) = GCC_LIKE.captures(l) {
            diag(&c[1], &c[2], c.get(5).map(|m| m.as_str()), &c[4], i + 1)
        } else if let Some(c) = GO_BUILD.captures(l) {
            diag(&c[1], &c[2], None, &c[4], i + 1)
        } else {
            continue;
        };
        found += 1;
        parsed.failures.push(f);
    }
}

pub(crate) fn parse(raw_lines: &[&str], limits: &Limits, parsed: &mut Parsed) {
    let lines: Vec<&str> = raw_lines
        .iter()
        .map(|l| {
            if l.as_bytes().first().is_some_and(u8::is_ascii_digit) {
                TIMESTAMP.find(l).map_or(*l, |m| &l[m.end()..])
            } else {
                l
            }
        })
        .collect();
    // Step boundaries.
    let mut steps: Vec<(usize, String)> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let candidate = [
            "##[group]",
            "section_start:",
            "$ ",
            "> Task ",
            "[INFO] --- ",
        ]
        .iter()
        .any(|p| l.starts_with(p));
        if candidate && let Some(c) = STEP.captures(l) {
            let name = (1..=5).find_map(|g| c.get(g)).map_or("", |m| m.as_str());
            steps.push((i, name.trim().to_owned()));
        }
    }
    compiler_diagnostics(&lines, limits, parsed);
    // Test failures reported by Maven Surefire and Gradle in the console.
    let mut consumed: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < lines.len() && parsed.failures.len() <= limits.max_failures {
        let l = lines[i];
        if let Some(c) = MAVEN_TEST.captures(l) {
            let mut f = Failure::new(FailureKind::TestFailure, Language::Java);
            f.test_id = Some(format!("{}.{}", &c[1], &c[2]));
            f.line = Some(i + 1);
            if &c[3] == "ERROR" {
                f.context.insert("outcome".into(), "error".into());
            }
            if let Some((t, next)) = lines.get(i + 1).and_then(|_| traces::try_at(&lines, i + 1)) {
                super::merge_trace(&mut f, t);
                consumed.push((i + 1, next));
                i = next;
            } else {
                i += 1;
            }
            parsed.failures.push(f);
            continue;
        }
        if let Some(c) = GRADLE_TEST.captures(l) {
            let mut f = Failure::new(FailureKind::TestFailure, Language::Java);
            f.test_id = Some(format!("{}.{}", &c[1], c[2].trim_end_matches("()")));
            f.line = Some(i + 1);
            let mut next = i + 1;
            if let Some((t, n)) = traces::try_at(&lines, i + 1) {
                super::merge_trace(&mut f, t);
                consumed.push((i + 1, n));
                next = n;
            } else if let Some(e) = lines.get(i + 1).and_then(|n| GRADLE_EXC.captures(n)) {
                f.exception_type = Some(e[1].to_owned());
                f.message = e.get(2).map_or(String::new(), |m| m.as_str().to_owned());
                if let (Some(file), Some(line)) = (e.get(3), e.get(4)) {
                    // Gradle names only the file of the innermost frame, not its function.
                    f.frames.push(Frame {
                        file: Some(file.as_str().to_owned()),
                        function: None,
                        line: line.as_str().parse().ok(),
                        in_app: false,
                    });
                }
                next = i + 2;
            }
            parsed.failures.push(f);
            i = next;
            continue;
        }
        i += 1;
    }
    // Stack traces anywhere else in the log.
    let mut start = 0;
    let mut ranges = consumed.clone();
    ranges.push((lines.len(), lines.len()));
    ranges.sort();
    for (a, b) in ranges {
        if a > start {
            let found = traces::scan(
                &lines[start..a],
                start + 1,
                limits.max_failures + 1 - parsed.failures.len().min(limits.max_failures + 1),
            );
            parsed.failures.extend(found);
        }
        start = start.max(b);
    }
    // Nothing specific: the first error line is the failure.
    let first_error = lines
        .iter()
        .position(|l| ERROR_LINE.is_match(l.trim_start()));
    if parsed.failures.is_empty() {
        match first_error {
            Some(i) => {
                let mut f = Failure::new(FailureKind::BuildError, Language::Unknown);
                f.message = lines[i].trim().trim_start_matches("##[error]").to_owned();
                f.line = Some(i + 1);
                parsed.failures.push(f);
            }
            None => parsed.diagnostics.push(Diagnostic::info(
                "no_failure_found",
                "no error line, compiler diagnostic or stack trace found in the log",
            )),
        }
    }
    // Regions: each build error gets the lines around it, inside its step.
    for f in parsed.failures.iter_mut() {
        let Some(at) = f.line else { continue };
        let idx = at.saturating_sub(1).min(lines.len().saturating_sub(1));
        let step = steps.iter().rev().find(|(s, _)| *s <= idx);
        let step_start = step.map_or(0, |(s, _)| *s + 1);
        let step_end = steps
            .iter()
            .find(|(s, _)| *s > idx)
            .map_or(lines.len(), |(s, _)| *s);
        let start = idx.saturating_sub(REGION_BEFORE).max(step_start.min(idx));
        let end = (idx + REGION_AFTER)
            .min(step_end)
            .max(idx + 1)
            .min(lines.len());
        let excerpt =
            crate::input::truncate_str(&lines[start..end].join("\n"), REGION_BYTES).to_owned();
        if let Some((_, name)) = step {
            f.context.insert("step".into(), name.clone());
        }
        if f.kind == FailureKind::BuildError
            || f.region.is_none() && f.kind != FailureKind::Exception
        {
            f.region = Some(Region {
                step: step.map(|(_, n)| n.clone()),
                start_line: start + 1,
                end_line: end,
                excerpt,
            });
        }
    }
}
