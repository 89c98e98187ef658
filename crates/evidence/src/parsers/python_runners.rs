//! pytest and unittest terminal output.

use super::{Parsed, first_trace, merge_trace};
use crate::model::{Diagnostic, Failure, FailureKind, Frame, Language, Limits};
use regex::Regex;
use std::sync::LazyLock;

static PYTEST_BANNER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^=+ (.+?) =+$").unwrap());
static PYTEST_SECTION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^_{3,} (.+?) _{3,}$").unwrap());
static PYTEST_SUMMARY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(FAILED|ERROR) (\S+?)(?: - (.*))?$").unwrap());
static PYTEST_LOCATION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\S[^:]*?\.py):(\d+):(?: (?:in (\S+)|(.*)))?$").unwrap());
static PYTEST_DEF: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[> ]?\s*(?:async )?def (\w+)\(").unwrap());
static PY_EXC_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Failed|Failure|Iteration)|(?:[A-Za-z_]\w*\.)*[A-Z]\w*Error)(?::\s?(.*))?$").unwrap()
});

/// Parses a pytest failure representation (`--tb=long|short|line`): the
/// entries' locations become frames, `E` lines the message.
pub(crate) fn pytest_repr(body: &str) -> Option<Failure> {
    let mut frames = Vec::new();
    let mut last_def: Option<String> = None;
    let mut e_lines: Vec<&str> = Vec::new();
    let mut final_type: Option<String> = None;
    for line in body.lines() {
        if line.starts_with("_ _ _") {
            last_def = None;
            continue;
        }
        if let Some(c) = PYTEST_DEF.captures(line) {
            last_def = Some(c[1].to_owned());
            continue;
        }
        if let Some(rest) = line.strip_prefix('E')
            && (rest.is_empty() || rest.starts_with(' '))
        {
            e_lines.push(rest.trim_start());
            continue;
        }
        if let Some(c) = PYTEST_LOCATION.captures(line) {
            let function = c
                .get(3)
                .map(|m| m.as_str().to_owned())
                .or_else(|| last_def.take());
            frames.push(Frame {
                file: Some(c[1].to_owned()),
                function,
                line: c[2].parse().ok(),
                in_app: false,
            });
            final_type = c
                .get(4)
                .map(|m| m.as_str().trim().to_owned())
                .filter(|s| !s.is_empty());
        }
    }
    if frames.is_empty() && e_lines.is_empty() {
        return None;
    }
    let mut f = Failure::new(FailureKind::Exception, Language::Python);
    let first = e_lines.first().copied().unwrap_or("");
    // The last location line names the exception class (`src/x.py:4: InvalidOperation`),
    // which also identifies class names that do not end in `Error`.
    let named = final_type.as_deref().filter(|t| {
        t.chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
    });
    let qualified = named.and_then(|t| {
        let (head, rest) = first.split_once(": ").unwrap_or((first, ""));
        (head == t || head.ends_with(&format!(".{t}"))).then(|| (head.to_owned(), rest))
    });
    if let Some((ty, rest)) = qualified {
        f.exception_type = Some(ty);
        let mut msg = vec![rest];
        msg.extend(e_lines.iter().skip(1));
        f.message = msg.join("\n");
    } else if let Some(c) = PY_EXC_LINE.captures(first) {
        f.exception_type = Some(c[1].to_owned());
        let mut msg = vec![c.get(2).map_or("", |m| m.as_str())];
        msg.extend(e_lines.iter().skip(1));
        f.message = msg.join("\n");
    } else {
        // `--tb=line` and plain asserts: the type is on the location line.
        match final_type.as_deref().and_then(|t| PY_EXC_LINE.captures(t)) {
            Some(c) => {
                f.exception_type = Some(c[1].to_owned());
                if e_lines.is_empty() {
                    f.message = c.get(2).map_or(String::new(), |m| m.as_str().to_owned());
                }
            }
            None => f.exception_type = named.map(str::to_owned),
        }
        if !e_lines.is_empty() {
            f.message = e_lines.join("\n");
        }
    }
    f.frames = frames;
    Some(f)
}

/// A pytest node id: a Python file, then `::` and the test's names.
fn is_node_id(id: &str) -> bool {
    let file = id.split("::").next().unwrap_or(id);
    file.ends_with(".py") && !file.contains(':')
}

struct Summary {
    outcome: String,
    nodeid: String,
    message: Option<String>,
}

pub(crate) fn parse_pytest(lines: &[&str], limits: &Limits, parsed: &mut Parsed) {
    // Sections and summary lines pasted without pytest's banners (a CI
    // log's excerpt, `--tb=short` output cut above FAILURES) are read too:
    // until a banner says where it is, a `____ name ____` line is a failure
    // section, and outside the failure sections a `FAILED id` line whose id
    // is a node id (`path.py`, `path.py::test`) is a summary line.
    let mut seen_banner = false;
    let mut in_failures = false;
    let mut sections: Vec<(String, usize, usize)> = Vec::new();
    let mut summaries: Vec<Summary> = Vec::new();
    let mut in_summary = false;
    for (i, line) in lines.iter().enumerate() {
        if let Some(c) = PYTEST_BANNER.captures(line) {
            seen_banner = true;
            let title = &c[1];
            in_failures = title == "FAILURES" || title == "ERRORS";
            in_summary = title == "short test summary info";
            if let Some(last) = sections.last_mut()
                && last.2 == usize::MAX
            {
                last.2 = i;
            }
            continue;
        }
        if (in_failures || !seen_banner)
            && let Some(c) = PYTEST_SECTION.captures(line)
        {
            if let Some(last) = sections.last_mut()
                && last.2 == usize::MAX
            {
                last.2 = i;
            }
            sections.push((c[1].to_owned(), i, usize::MAX));
            continue;
        }
        if let Some(c) = PYTEST_SUMMARY.captures(line)
            && (in_summary || (!in_failures && is_node_id(&c[2])))
        {
            summaries.push(Summary {
                outcome: c[1].to_owned(),
                nodeid: c[2].to_owned(),
                message: c.get(3).map(|m| m.as_str().to_owned()),
            });
        }
    }
    if let Some(last) = sections.last_mut()
        && last.2 == usize::MAX
    {
        last.2 = lines.len();
    }
    let mut used = vec![false; summaries.len()];
    for (title, start, end) in sections {
        if parsed.failures.len() > limits.max_failures {
            break;
        }
        let body = lines[start + 1..end].join("\n");
        let mut f = Failure::new(FailureKind::TestFailure, Language::Python);
        f.line = Some(start + 1);
        let trace = first_trace(&body)
            .filter(|t| t.language == Language::Python)
            .or_else(|| pytest_repr(&body));
        match trace {
            Some(t) => merge_trace(&mut f, t),
            None => {
                f.message = body.trim().lines().last().unwrap_or("").to_owned();
                parsed.diagnostics.push(
                    Diagnostic::warning(
                        "unrecognised_section",
                        format!("pytest section `{title}` has no traceback"),
                    )
                    .at(start + 1),
                );
            }
        }
        let (phase, name) = match title.split_once(" at ") {
            Some(("ERROR", rest)) => (
                Some(rest.split(' ').next().unwrap_or("").to_owned()),
                rest.split(" of ").nth(1).unwrap_or(rest).to_owned(),
            ),
            _ => (
                None,
                title.trim_start_matches("ERROR collecting ").to_owned(),
            ),
        };
        if let Some(p) = phase {
            f.context.insert("phase".into(), p);
        }
        let wanted = name.replace('.', "::");
        let found = summaries.iter().enumerate().find(|(k, s)| {
            !used[*k] && (s.nodeid.ends_with(&format!("::{wanted}")) || s.nodeid == name)
        });
        f.test_id = Some(match found {
            Some((k, s)) => {
                used[k] = true;
                s.nodeid.clone()
            }
            None if name.ends_with(".py") => name.clone(),
            None => {
                let file = f.frames.first().and_then(|fr| fr.file.clone());
                match file {
                    Some(file) => format!("{file}::{wanted}"),
                    None => wanted,
                }
            }
        });
        parsed.failures.push(f);
    }
    // Failures named only in the summary (`--tb=no`, or sections cut off).
    for (k, s) in summaries.into_iter().enumerate() {
        if used[k] || parsed.failures.len() > limits.max_failures {
            continue;
        }
        let mut f = Failure::new(FailureKind::TestFailure, Language::Python);
        f.test_id = Some(s.nodeid);
        if s.outcome == "ERROR" {
            f.context.insert("outcome".into(), "error".into());
        }
        let msg = s.message.unwrap_or_default();
        match PY_EXC_LINE.captures(&msg) {
            Some(c) => {
                f.exception_type = Some(c[1].to_owned());
                f.message = c.get(2).map_or(String::new(), |m| m.as_str().to_owned());
            }
            None => f.message = msg,
        }
        parsed.failures.push(f);
    }
    if parsed.failures.is_empty() {
        parsed.diagnostics.push(Diagnostic::info(
            "no_failure_found",
            "pytest output without failures",
        ));
    }
}

static UNITTEST_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(FAIL|ERROR|UNEXPECTED SUCCESS): (\S+) \(([^)]*)\)(?: (\[.*\]|\(.*\)|\[.*\] \(.*\)))?$",
    )
    .unwrap()
});

pub(crate) fn parse_unittest(lines: &[&str], limits: &Limits, parsed: &mut Parsed) {
    let is_rule = |l: &str, c: char| l.len() >= 50 && l.chars().all(|x| x == c);
    let mut i = 0;
    while i < lines.len() {
        if !(is_rule(lines[i], '=')
            && lines
                .get(i + 1)
                .is_some_and(|l| UNITTEST_HEADER.is_match(l)))
        {
            i += 1;
            continue;
        }
        if parsed.failures.len() > limits.max_failures {
            break;
        }
        let c = UNITTEST_HEADER
            .captures(lines[i + 1])
            .expect("checked above");
        let (outcome, name, paren) = (&c[1], &c[2], &c[3]);
        let mut test_id = if paren.ends_with(&format!(".{name}")) || paren == name {
            paren.to_owned()
        } else {
            format!("{paren}.{name}")
        };
        if let Some(params) = c.get(4) {
            test_id.push(' ');
            test_id.push_str(params.as_str());
        }
        let start = i + 1;
        // Skip an optional docstring line up to the dashed rule.
        let mut j = i + 2;
        while j < lines.len() && j < i + 5 && !is_rule(lines[j], '-') {
            j += 1;
        }
        // A cut input may end inside the header: no body then.
        let body_start = (j + 1).min(lines.len());
        let mut k = body_start;
        while k < lines.len()
            && !is_rule(lines[k], '=')
            && !(is_rule(lines[k], '-') && lines.get(k + 1).is_some_and(|l| l.starts_with("Ran ")))
        {
            k += 1;
        }
        let body = lines[body_start.min(k)..k].join("\n");
        let mut f = Failure::new(FailureKind::TestFailure, Language::Python);
        f.line = Some(start + 1);
        f.test_id = Some(test_id);
        if outcome != "FAIL" {
            f.context
                .insert("outcome".into(), outcome.to_ascii_lowercase());
        }
        match first_trace(&body) {
            Some(t) => merge_trace(&mut f, t),
            None => f.message = body.trim().to_owned(),
        }
        parsed.failures.push(f);
        i = k;
    }
    if parsed.failures.is_empty() {
        parsed.diagnostics.push(Diagnostic::info(
            "no_failure_found",
            "unittest output without FAIL or ERROR sections",
        ));
    }
}
