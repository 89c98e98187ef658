//! Stack-trace recognisers for Python, Java/Kotlin, JavaScript/Node, Go and
//! Rust, and a scanner that finds them anywhere in text.
//!
//! Each recogniser looks at line `i` and either declines cheaply or returns
//! the failure it read and the index of the first line after it. Frames are
//! returned innermost LAST (Java, JS, Go and Rust print innermost first, so
//! they are reversed). Frames are raw here; `pipeline` normalises them.

use crate::model::{Cause, Failure, FailureKind, Frame, Language};
use regex::Regex;
use std::borrow::Cow;
use std::sync::LazyLock;

/// Lines of message kept after an exception header, at most.
const MAX_MESSAGE_LINES: usize = 30;

fn frame(file: Option<&str>, function: Option<&str>, line: Option<u32>) -> Frame {
    Frame {
        file: file.filter(|f| !f.is_empty()).map(str::to_owned),
        function: function.filter(|f| !f.is_empty()).map(str::to_owned),
        line,
        in_app: false,
    }
}

/// Finds every stack trace in `lines`; `base` is the 1-based number of `lines[0]`.
pub(crate) fn scan(lines: &[&str], base: usize, max: usize) -> Vec<Failure> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() && out.len() < max {
        match try_at(lines, i) {
            Some((mut f, next)) => {
                f.line = Some(base + i);
                out.push(f);
                i = next.max(i + 1);
            }
            None => i += 1,
        }
    }
    out
}

/// Tries every recogniser at line `i`.
pub(crate) fn try_at(lines: &[&str], i: usize) -> Option<(Failure, usize)> {
    let line = lines[i];
    // A plain traceback or an exception group, either possibly chained.
    if line.contains("Traceback (most recent call last):") {
        return python(lines, i);
    }
    if line.trim_start().starts_with("File \"")
        && let Some(r) = python_syntax_error(lines, i).or_else(|| python_headerless(lines, i))
    {
        return Some(r);
    }
    if line.starts_with("thread '") || line.starts_with("thread '<unnamed>'") {
        return rust_panic(lines, i);
    }
    if line.starts_with("panic: ") || line.starts_with("fatal error: ") || GO_SIGNAL.is_match(line)
    {
        return go_panic(lines, i);
    }
    if line.starts_with("goroutine ") && GO_GOROUTINE.is_match(line) {
        return go_headerless(lines, i);
    }
    if line.trim_end() == "WARNING: DATA RACE" {
        return go_race(lines, i);
    }
    if line.starts_with("Error: ")
        && let Some(r) = rust_error(lines, i)
    {
        return Some(r);
    }
    // Java and JS headers are only worth a regex when a frame follows soon.
    let frame_follows = lines[i + 1..]
        .iter()
        .take(MAX_MESSAGE_LINES)
        .any(|l| l.trim_start().starts_with("at "));
    if frame_follows && !line.trim_start().starts_with("at ") {
        if let Some(r) = java(lines, i) {
            return Some(r);
        }
        if let Some(r) = javascript(lines, i) {
            return Some(r);
        }
    }
    // Firefox and Safari print `fn@url:line:col` frames, no `at`.
    if lines
        .get(i + 1)
        .is_some_and(|n| n.contains('@') && gecko_frame(n).is_some())
        && let Some(r) = javascript_gecko(lines, i)
    {
        return Some(r);
    }
    None
}

// ---------------------------------------------------------------- Python

static PY_FRAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"^\s*File "([^"]*)", line (\d+)(?:, in (.+))?$"#).unwrap());
static PY_EXC: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^([A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*)(?::\s?(.*))?$").unwrap());
const PY_CONTEXT: &str = "During handling of the above exception, another exception occurred:";
const PY_CAUSE: &str = "The above exception was the direct cause of the following exception:";

struct Exc {
    relation: String,
    exception_type: Option<String>,
    message: String,
    frames: Vec<Frame>,
    /// An exception group's sub-exceptions (and their chains), as causes.
    subs: Vec<Cause>,
}

fn strip<'a>(line: &'a str, prefix: &str) -> &'a str {
    line.strip_prefix(prefix).unwrap_or(line)
}

/// A Python traceback chain: tracebacks and exception groups joined by
/// `During handling of the above exception…` / `The above exception was the
/// direct cause…`, oldest first as Python prints them.
fn python(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
    let pos = lines[start].find("Traceback (most recent call last):")?;
    // A log prefix (`app_1 | `, `2024-01-01 ERROR `) repeated on every line
    // is removed; an exception group's `  + ` box is not a prefix.
    let prefix: String = {
        let p = &lines[start][..pos];
        if lines[start].contains(PY_GROUP) {
            String::new()
        } else if p.trim().is_empty() || lines.get(start + 1).is_some_and(|l| l.starts_with(p)) {
            p.to_owned()
        } else {
            String::new()
        }
    };
    let mut chain: Vec<Exc> = Vec::new();
    let mut relation = String::new();
    let mut i = start;
    loop {
        // At a "Traceback" line: an exception group's box, or a plain traceback.
        let exc = if strip(lines[i], &prefix).contains(PY_GROUP) {
            let (g, next) = python_group(lines, i)?;
            i = next;
            Exc {
                relation: std::mem::take(&mut relation),
                exception_type: g.exception_type,
                message: g.message,
                frames: g.frames,
                subs: g.causes,
            }
        } else {
            let (mut exc, next) = python_traceback(lines, i, &prefix);
            exc.relation = std::mem::take(&mut relation);
            i = next;
            exc
        };
        chain.push(exc);
        // Chained exception?
        let mut j = i;
        while j < lines.len() && strip(lines[j], &prefix).trim().is_empty() && j < i + 3 {
            j += 1;
        }
        let marker = lines.get(j).map(|l| strip(l, &prefix).trim());
        let rel = match marker {
            Some(PY_CONTEXT) => "context",
            Some(PY_CAUSE) => "cause",
            _ => break,
        };
        let mut k = j + 1;
        while k < lines.len() && strip(lines[k], &prefix).trim().is_empty() && k < j + 3 {
            k += 1;
        }
        if !lines
            .get(k)
            .is_some_and(|l| l.contains("Traceback (most recent call last):"))
        {
            break;
        }
        relation = rel.to_owned();
        i = k;
    }
    // Python prints the chain oldest first; the last one is what was raised.
    let mut primary = chain.pop()?;
    let mut f = Failure::new(FailureKind::Exception, Language::Python);
    f.exception_type = primary.exception_type.take();
    f.message = primary.message;
    f.frames = primary.frames;
    // A group's own sub-exceptions are nearest to it.
    f.causes = primary.subs;
    // Relations describe how each older exception relates to the newer one.
    let mut rel_to_newer = primary.relation;
    for e in chain.into_iter().rev() {
        f.causes.push(Cause {
            relation: rel_to_newer,
            exception_type: e.exception_type,
            message: e.message,
            frames: e.frames,
        });
        f.causes.extend(e.subs);
        rel_to_newer = e.relation;
    }
    Some((f, i))
}

/// One plain traceback from its `Traceback` line at `start`: frames, then
/// the exception line and its message lines. Returns it and the next line.
fn python_traceback(lines: &[&str], start: usize, prefix: &str) -> (Exc, usize) {
    let mut i = start + 1;
    let mut frames = Vec::new();
    while i < lines.len() {
        let l = strip(lines[i], prefix);
        if let Some(c) = PY_FRAME.captures(l) {
            frames.push(frame(
                Some(&c[1]),
                c.get(3).map(|m| m.as_str()),
                c[2].parse().ok(),
            ));
            i += 1;
        } else if l.starts_with(' ') || l.starts_with('\t') {
            // Source line, caret line, `[Previous line repeated N more times]`.
            i += 1;
        } else {
            break;
        }
    }
    let (exception_type, mut message) = match lines.get(i).map(|l| strip(l, prefix)) {
        Some(l) if !l.trim().is_empty() => {
            i += 1;
            match PY_EXC.captures(l) {
                Some(c) => (
                    Some(c[1].to_owned()),
                    c.get(2).map_or(String::new(), |m| m.as_str().to_owned()),
                ),
                None => (None, l.to_owned()),
            }
        }
        _ => (None, String::new()),
    };
    // Multi-line messages end at a blank line or the next traceback.
    let mut extra = 0;
    while i < lines.len() && extra < MAX_MESSAGE_LINES {
        let l = strip(lines[i], prefix);
        if l.trim().is_empty()
            || l.contains("Traceback (most recent call last):")
            || l == PY_CONTEXT
            || l == PY_CAUSE
        {
            break;
        }
        // The next log record usually starts with a timestamp or level; stop there.
        if LOG_RECORD_START.is_match(l) {
            break;
        }
        message.push('\n');
        message.push_str(l);
        i += 1;
        extra += 1;
    }
    let exc = Exc {
        relation: String::new(),
        exception_type,
        message,
        frames,
        subs: Vec::new(),
    };
    (exc, i)
}

const PY_GROUP: &str = "Exception Group Traceback (most recent call last):";

/// Python 3.11+ exception groups: a boxed traceback (`| ` margins) for the
/// group, then one box per sub-exception separated by `+---- N ----` rules.
/// The group is the failure; sub-exceptions become causes (`sub_exception`),
/// nested groups are read recursively.
fn python_group(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
    let mut segments: Vec<Vec<String>> =
        vec![vec!["Traceback (most recent call last):".to_owned()]];
    let mut i = start + 1;
    while i < lines.len() {
        let t = lines[i].trim_start();
        if !(t.starts_with('|') || t.starts_with('+')) {
            break;
        }
        if t.starts_with('+') && t.contains("----") {
            // `+-+---- 1 ----` or `+---- 2 ----` opens a sub-exception; a bare rule closes.
            if t.trim_matches(|c| c == '+' || c == '-' || c == ' ')
                .parse::<u32>()
                .is_ok()
            {
                segments.push(Vec::new());
            }
            i += 1;
            continue;
        }
        let content = &t[1..];
        segments
            .last_mut()?
            .push(content.strip_prefix(' ').unwrap_or(content).to_owned());
        i += 1;
    }
    let mut parsed = segments.iter().map(|seg| {
        let refs: Vec<&str> = seg.iter().map(String::as_str).collect();
        match refs.first() {
            // A nested group, a chain inside the box: `python` reads both.
            Some(_) => python(&refs, 0).map(|(f, _)| f),
            None => None,
        }
    });
    let mut f = parsed.next()??;
    for sub in parsed.flatten() {
        f.causes.push(Cause {
            relation: "sub_exception".into(),
            exception_type: sub.exception_type,
            message: sub.message,
            frames: sub.frames,
        });
        f.causes.extend(sub.causes);
    }
    Some((f, i))
}

/// A traceback pasted without its `Traceback (most recent call last):` line
/// (people copy from the first frame they think matters). Read like a
/// traceback when the frames end in an exception line; the indentation of
/// the first frame says how much of every line is margin (`  File` is the
/// standard two spaces).
fn python_headerless(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
    let first = PY_FRAME.captures(lines[start])?;
    first.get(3)?;
    let indent = lines[start].len() - lines[start].trim_start().len();
    let prefix = " ".repeat(indent.saturating_sub(2));
    let prefix = if lines[start].starts_with(&prefix) {
        prefix
    } else {
        String::new()
    };
    // `python_traceback` starts reading after its header line.
    let mut shifted: Vec<&str> = Vec::with_capacity(lines.len() - start + 1);
    shifted.push("Traceback (most recent call last):");
    shifted.extend_from_slice(&lines[start..]);
    let (exc, next) = python_traceback(&shifted, 0, &prefix);
    let ty = exc.exception_type?;
    if exc.frames.is_empty() {
        return None;
    }
    let mut f = Failure::new(FailureKind::Exception, Language::Python);
    f.exception_type = Some(ty);
    f.message = exc.message;
    f.frames = exc.frames;
    f.context.insert("header".into(), "missing".into());
    Some((f, start + next - 1))
}

/// A syntax error reported while compiling the main script: a bare
/// `File "x.py", line N` (no function), the source, a caret, then the error.
fn python_syntax_error(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
    let c = PY_FRAME.captures(lines[start])?;
    if c.get(3).is_some() {
        return None;
    }
    let end = (start + 6).min(lines.len());
    let at =
        (start + 1..end).find(|&j| !lines[j].starts_with(' ') && !lines[j].starts_with('\t'))?;
    let e = PY_EXC.captures(lines[at])?;
    let ty = e[1].to_owned();
    if !matches!(ty.as_str(), "SyntaxError" | "IndentationError" | "TabError") {
        return None;
    }
    let mut f = Failure::new(FailureKind::Exception, Language::Python);
    f.exception_type = Some(ty);
    f.message = e.get(2).map_or(String::new(), |m| m.as_str().to_owned());
    f.frames.push(frame(Some(&c[1]), None, c[2].parse().ok()));
    Some((f, at + 1))
}

static LOG_RECORD_START: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}|\[?(?:DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL|FATAL)\b|##\[)").unwrap()
});

// ---------------------------------------------------------------- Java / Kotlin

static JAVA_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"^\s*(?:Exception in thread "[^"]*"\s+|Caused by:\s+|Suppressed:\s+|\[CIRCULAR REFERENCE:\s*|e:\s+)?((?:[a-zA-Z_$][\w$]*\.)+[a-zA-Z_$][\w$]*)(?::\s?(.*))?$"#,
    )
    .unwrap()
});
static JAVA_FRAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*at\s+([\w$.<>@/\[\]-]+?)\(([^()]*)\)(?:\s*~?\[[^\]]*\])?\s*$").unwrap()
});
static JAVA_MORE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*\.\.\. \d+ (?:more|common frames omitted)\s*$").unwrap());

fn java_frame(line: &str) -> Option<Frame> {
    let c = JAVA_FRAME.captures(line)?;
    let full = &c[1];
    // `java.base/java.lang.Thread.run`, `app//com.acme.X.y`, `java.base@17/...`.
    let func = full.rsplit('/').next().unwrap_or(full);
    if !func.contains('.') {
        return None;
    }
    let loc = &c[2];
    let (file_name, line) = match loc.rsplit_once(':') {
        Some((f, l)) => (Some(f), l.trim().parse().ok()),
        None if loc.ends_with(".java")
            || loc.ends_with(".kt")
            || loc.ends_with(".scala")
            || loc.ends_with(".groovy") =>
        {
            (Some(loc), None)
        }
        None => (None, None),
    };
    // The class's package gives the path: com.acme.Foo$Inner -> com/acme/Foo.java.
    let class = func.rsplit_once('.').map_or(func, |(c, _)| c);
    let package: Vec<&str> = class
        .split('.')
        .take_while(|s| s.chars().next().is_some_and(|ch| ch.is_ascii_lowercase()))
        .collect();
    let file = file_name.map(|name| {
        if package.is_empty() || package.len() == class.split('.').count() {
            name.to_owned()
        } else {
            format!("{}/{}", package.join("/"), name)
        }
    });
    Some(frame(file.as_deref(), Some(func), line))
}

fn java_header(line: &str) -> Option<(String, String)> {
    let c = JAVA_HEADER.captures(line)?;
    let ty = c[1].to_owned();
    // A dotted name whose last part is not capitalised is a path or a call, not a class.
    let last = ty.rsplit('.').next().unwrap_or("");
    if !last
        .chars()
        .next()
        .is_some_and(|ch| ch.is_ascii_uppercase())
    {
        return None;
    }
    Some((
        ty,
        c.get(2).map_or(String::new(), |m| m.as_str().to_owned()),
    ))
}

fn java(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
    let (ty, msg) = java_header(lines[start])?;
    let mut i = start + 1;
    let mut message = msg;
    // Message lines up to the first frame.
    let mut extra = 0;
    while i < lines.len() && java_frame(lines[i]).is_none() {
        if extra >= MAX_MESSAGE_LINES || JS_FRAME.is_match(lines[i]) {
            return None;
        }
        message.push('\n');
        message.push_str(lines[i]);
        i += 1;
        extra += 1;
    }
    if i >= lines.len() {
        return None;
    }
    let mut chain = vec![Exc {
        relation: String::new(),
        exception_type: Some(ty),
        message,
        frames: Vec::new(),
        subs: Vec::new(),
    }];
    while i < lines.len() {
        let l = lines[i];
        if let Some(fr) = java_frame(l) {
            chain
                .last_mut()
                .expect("chain starts non-empty")
                .frames
                .push(fr);
            i += 1;
        } else if JAVA_MORE.is_match(l) {
            i += 1;
        } else if let Some(rest) = l
            .trim_start()
            .strip_prefix("Caused by:")
            .or_else(|| l.trim_start().strip_prefix("Suppressed:"))
        {
            let relation = if l.trim_start().starts_with("Caused") {
                "cause"
            } else {
                "suppressed"
            };
            let (t, m) =
                java_header(rest.trim_start()).unwrap_or((String::new(), rest.trim().to_owned()));
            let mut message = m;
            i += 1;
            let mut extra = 0;
            while i < lines.len()
                && java_frame(lines[i]).is_none()
                && !JAVA_MORE.is_match(lines[i])
                && extra < MAX_MESSAGE_LINES
            {
                let t = lines[i].trim_start();
                if t.starts_with("Caused by:") || t.starts_with("Suppressed:") || t.is_empty() {
                    break;
                }
                message.push('\n');
                message.push_str(lines[i]);
                i += 1;
                extra += 1;
            }
            chain.push(Exc {
                relation: relation.into(),
                exception_type: (!t.is_empty()).then_some(t),
                message,
                frames: Vec::new(),
                subs: Vec::new(),
            });
        } else {
            break;
        }
    }
    let mut chain = chain.into_iter();
    let first = chain.next()?;
    let mut f = Failure::new(FailureKind::Exception, Language::Java);
    f.exception_type = first.exception_type;
    f.message = first.message;
    f.frames = first.frames.into_iter().rev().collect();
    for e in chain {
        f.causes.push(Cause {
            relation: e.relation,
            exception_type: e.exception_type,
            message: e.message,
            frames: e.frames.into_iter().rev().collect(),
        });
    }
    Some((f, i))
}

// ---------------------------------------------------------------- JavaScript / Node

static JS_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:Uncaught\s+)?(?:\[\w+\]:\s+)?([A-Z][\w$.]*|[a-z][\w$]*Error)(?:\s\[([A-Z0-9_]+)\])?(?::\s?(.*))?$").unwrap()
});
pub(crate) static JS_FRAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s*at (?:(.+?) \((.+)\)|(?:async )?((?:[a-zA-Z]+:)?[^\s()]+:\d+(?::\d+)?))(?: \{)?\s*$",
    )
    .unwrap()
});

/// Parses one `    at fn (file:line:col)` line.
pub(crate) fn js_frame(line: &str) -> Option<Frame> {
    let c = JS_FRAME.captures(line)?;
    let (func, loc) = match (c.get(1), c.get(2), c.get(3)) {
        (Some(f), Some(l), _) => (Some(f.as_str()), l.as_str()),
        (_, _, Some(l)) => (None, l.as_str()),
        _ => return None,
    };
    let (file, line_no) = split_js_location(loc);
    if file.is_none() && func.is_none() {
        return None;
    }
    Some(frame(file, func.or(Some("<anonymous>")), line_no))
}

fn split_js_location(loc: &str) -> (Option<&str>, Option<u32>) {
    let loc = loc.trim();
    if loc == "<anonymous>" || loc == "native" || loc.starts_with("index ") {
        return (Some(loc).filter(|l| *l == "<anonymous>"), None);
    }
    let mut parts = loc.rsplitn(3, ':');
    let a = parts.next();
    let b = parts.next();
    let c = parts.next();
    match (a, b, c) {
        (Some(col), Some(line), Some(file))
            if col.parse::<u32>().is_ok() && line.parse::<u32>().is_ok() =>
        {
            (Some(file), line.parse().ok())
        }
        (Some(line), Some(_), _) if line.parse::<u32>().is_ok() => {
            let file = &loc[..loc.len() - line.len() - 1];
            (Some(file), line.parse().ok())
        }
        _ => (Some(loc), None),
    }
}

fn javascript(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
    let c = JS_HEADER.captures(lines[start])?;
    let ty = c[1].to_owned();
    if !(ty.ends_with("Error")
        || ty.ends_with("Exception")
        || ty == "Error"
        || ty.contains("Rejection")
        || c.get(2).is_some())
    {
        return None;
    }
    let mut message = c.get(3).map_or(String::new(), |m| m.as_str().to_owned());
    let mut i = start + 1;
    let mut extra = 0;
    while i < lines.len() && js_frame(lines[i]).is_none() {
        if extra >= MAX_MESSAGE_LINES || java_frame(lines[i]).is_some() {
            return None;
        }
        message.push('\n');
        message.push_str(lines[i]);
        i += 1;
        extra += 1;
    }
    let mut frames = Vec::new();
    while i < lines.len() {
        if let Some(fr) = js_frame(lines[i]) {
            frames.push(fr);
            i += 1;
        } else if lines[i].trim() == "..." || lines[i].trim_start().starts_with("... ") {
            i += 1;
        } else {
            break;
        }
    }
    if frames.is_empty() {
        return None;
    }
    let mut f = Failure::new(FailureKind::Exception, Language::Javascript);
    f.exception_type = Some(ty);
    f.message = message.trim_end().to_owned();
    if let Some(code) = c.get(2) {
        f.context.insert("code".into(), code.as_str().to_owned());
    }
    frames.reverse();
    f.frames = frames;
    // Node prints `error.cause` inside the error's property block:
    // `    at ... {\n  [cause]: Error: inner\n      at ...`; the block ends at `}`.
    if lines[i - 1].trim_end().ends_with('{') {
        let mut depth = 1usize;
        while i < lines.len() && depth > 0 && i < start + 400 {
            let l = lines[i].trim();
            if let Some(rest) = l.strip_prefix("[cause]: ") {
                let (t, m) = match JS_HEADER.captures(rest) {
                    Some(h) => (
                        Some(h[1].to_owned()),
                        h.get(3).map_or(String::new(), |m| m.as_str().to_owned()),
                    ),
                    None => (None, rest.to_owned()),
                };
                let mut cf = Vec::new();
                i += 1;
                while i < lines.len() {
                    match js_frame(lines[i]) {
                        Some(fr) => {
                            cf.push(fr);
                            i += 1;
                        }
                        None => break,
                    }
                }
                if lines[i - 1].trim_end().ends_with('{') {
                    depth += 1;
                }
                cf.reverse();
                f.causes.push(Cause {
                    relation: "cause".into(),
                    exception_type: t,
                    message: m,
                    frames: cf,
                });
                continue;
            }
            if l.ends_with('{') {
                depth += 1;
            } else if l.starts_with('}') {
                depth -= 1;
            }
            i += 1;
        }
    }
    Some((f, i))
}

/// A Firefox / Safari (SpiderMonkey, JavaScriptCore) frame:
/// `renderProfile@http://host/src/a.js:14:23`, `async*load@…`, `@…` (an
/// anonymous function), `global code@…`, `dispatchEvent@[native code]`.
static GECKO_FRAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*((?:[^@\s]*)|(?:global|eval|module) code)@(.+?)(?::(\d+):(\d+))?\s*$").unwrap()
});

fn gecko_frame(line: &str) -> Option<Frame> {
    let c = GECKO_FRAME.captures(line)?;
    let loc = &c[2];
    let native = loc == "[native code]";
    if c.get(3).is_none() && !native {
        return None;
    }
    // Firefox marks an async boundary with `async*`; an anonymous function has no name.
    let func = c[1].trim_start_matches("async*");
    let func = if func.is_empty() { "<anonymous>" } else { func };
    Some(frame(
        (!native).then_some(loc),
        Some(func),
        c.get(3).and_then(|m| m.as_str().parse().ok()),
    ))
}

/// A Firefox / Safari error: the header line (as V8's), then `fn@url` frames.
fn javascript_gecko(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
    let c = JS_HEADER.captures(lines[start])?;
    let ty = c[1].to_owned();
    if !(ty.ends_with("Error") || ty.ends_with("Exception") || ty.contains("Rejection")) {
        return None;
    }
    let mut frames = Vec::new();
    let mut i = start + 1;
    while i < lines.len() {
        match gecko_frame(lines[i]) {
            Some(fr) => frames.push(fr),
            None => break,
        }
        i += 1;
    }
    if frames.is_empty() {
        return None;
    }
    let mut f = Failure::new(FailureKind::Exception, Language::Javascript);
    f.exception_type = Some(ty);
    f.message = c
        .get(3)
        .map_or(String::new(), |m| m.as_str().trim_end().to_owned());
    frames.reverse();
    f.frames = frames;
    Some((f, i))
}

// ---------------------------------------------------------------- Go

static GO_SIGNAL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^SIG[A-Z]+: [a-z ]+$").unwrap());
static GO_GOROUTINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^goroutine \d+(?: gp=\S+ m=\S+(?: mp=\S+)?)? \[([^\]]*)\]:$").unwrap()
});
/// `pkg.(*T).Method(0x1, {0x2, 0x3})` -> `pkg.(*T).Method`.
fn go_strip_args(line: &str) -> &str {
    let line = line.trim();
    if !line.ends_with(')') {
        return line;
    }
    let mut depth = 0i32;
    for (idx, ch) in line.char_indices().rev() {
        match ch {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    return &line[..idx];
                }
            }
            _ => {}
        }
    }
    line
}

/// A Go source location line: `\t/path/file.go:12 +0x1d`. The indentation
/// is optional: pasting into an issue or a chat often loses the tab.
static GO_LOCATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(\S.*?\.(?:go|s|c)):(\d+)(?: \+0x[0-9a-f]+)?(?: fp=\S+ sp=\S+(?: pc=\S+)?)?$")
        .unwrap()
});

/// Lines a wrapped argument list of one frame may span, at most.
const GO_MAX_WRAPPED: usize = 8;

/// Whether a function line's parentheses are still open (its argument list
/// continues on the next line).
fn go_args_open(s: &str) -> bool {
    let mut depth = 0i32;
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
    }
    depth > 0
}

/// Reads `function\n\tfile:line +0x..` pairs of one goroutine (innermost
/// first). A function's argument list may wrap over several lines, and the
/// location's tab may be missing.
pub(crate) fn go_frames(lines: &[&str], mut i: usize) -> (Vec<Frame>, usize) {
    let mut frames = Vec::new();
    while i < lines.len() {
        let l = lines[i];
        if l.trim().is_empty() {
            break;
        }
        if l.trim() == "...additional frames elided..." {
            i += 1;
            continue;
        }
        if l.starts_with('\t') || l.starts_with(' ') || GO_LOCATION.is_match(l) {
            break;
        }
        // The function, with its argument list joined when it wraps.
        let mut func = Cow::Borrowed(l.trim());
        let mut j = i;
        while go_args_open(&func) && j + 1 < lines.len() && j < i + GO_MAX_WRAPPED {
            j += 1;
            let next = lines[j].trim();
            if next.is_empty() || GO_LOCATION.is_match(lines[j]) {
                j -= 1;
                break;
            }
            func.to_mut().push(' ');
            func.to_mut().push_str(next);
        }
        let Some(c) = lines.get(j + 1).and_then(|n| GO_LOCATION.captures(n)) else {
            break;
        };
        // `created by` names the goroutine's creator, not a caller.
        if !func.starts_with("created by ") {
            frames.push(frame(
                Some(&c[1]),
                Some(go_strip_args(&func)),
                c[2].parse().ok(),
            ));
        }
        i = j + 2;
    }
    (frames, i)
}

/// A goroutine dump copied without its `panic:` / `fatal error:` line: the
/// first goroutine is the one that failed; the kind of failure is unknown,
/// so it is called a panic (what a running goroutine's dump usually is).
fn go_headerless(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
    let (frames, _) = go_frames(lines, start + 1);
    if frames.is_empty() {
        return None;
    }
    let mut f = Failure::new(FailureKind::Exception, Language::Go);
    f.exception_type = Some("panic".into());
    f.context.insert("header".into(), "missing".into());
    let (f, next) = go_goroutines(f, lines, start);
    Some((f, next))
}

/// The race detector's report: the racing access and the previous one, each
/// with its stack, and where the goroutines were created. The failure's frames
/// are the first access's; the others become causes.
fn go_race(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
    let mut f = Failure::new(FailureKind::Exception, Language::Go);
    f.exception_type = Some("data race".into());
    let mut i = start + 1;
    let mut first = true;
    while i < lines.len() && i < start + 2000 {
        let l = lines[i].trim_end();
        if l.starts_with("==================") {
            i += 1;
            break;
        }
        let Some(head) = l.strip_suffix(':').filter(|h| {
            h.contains(" by goroutine ")
                || h.contains(" by main goroutine")
                || h.ends_with(" created at")
        }) else {
            if l.trim().is_empty() {
                i += 1;
                continue;
            }
            break;
        };
        let (frames, next) = go_race_frames(lines, i + 1);
        let frames: Vec<Frame> = frames.into_iter().rev().collect();
        if first {
            f.message = head.to_owned();
            f.frames = frames;
            first = false;
        } else {
            f.causes.push(Cause {
                relation: if head.ends_with(" created at") {
                    "goroutine_created".into()
                } else {
                    "previous_access".into()
                },
                exception_type: None,
                message: head.to_owned(),
                frames,
            });
        }
        i = next.max(i + 1);
    }
    if first {
        return None;
    }
    Some((f, i))
}

/// A race report's stack: `  pkg.fn()` then `      /path/file.go:12 +0x44`.
fn go_race_frames(lines: &[&str], mut i: usize) -> (Vec<Frame>, usize) {
    let mut frames = Vec::new();
    while i + 1 < lines.len() {
        let func = lines[i].trim();
        if func.is_empty() || GO_LOCATION.is_match(lines[i]) {
            break;
        }
        let Some(c) = GO_LOCATION.captures(lines[i + 1]) else {
            break;
        };
        frames.push(frame(
            Some(&c[1]),
            Some(go_strip_args(func)),
            c[2].parse().ok(),
        ));
        i += 2;
    }
    (frames, i)
}

fn go_panic(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
    let head = lines[start];
    let (ty, msg) = if let Some(m) = head.strip_prefix("panic: ") {
        let m = m
            .trim_end_matches(" [recovered]")
            .trim_end_matches(" [recovered, repanicked]");
        match m.strip_prefix("runtime error: ") {
            Some(r) => ("runtime error", r.to_owned()),
            None => ("panic", m.to_owned()),
        }
    } else if let Some(m) = head.strip_prefix("fatal error: ") {
        ("fatal error", m.to_owned())
    } else {
        let (sig, rest) = head.split_once(": ")?;
        (sig, rest.to_owned())
    };
    let ty = ty.to_owned();
    // Find the first goroutine header within a few lines.
    let mut i = start + 1;
    let mut context = Vec::new();
    while i < lines.len() && i < start + 40 && !GO_GOROUTINE.is_match(lines[i]) {
        let l = lines[i].trim();
        if l.starts_with("--- FAIL") || l.starts_with("FAIL") || l.starts_with("exit status") {
            break;
        }
        if !l.is_empty() && !l.starts_with("panic: ") {
            context.push(l.to_owned());
        }
        i += 1;
    }
    let mut f = Failure::new(FailureKind::Exception, Language::Go);
    f.exception_type = Some(ty);
    f.message = msg;
    if let Some(sig) = context.iter().find(|l| l.starts_with("[signal ")) {
        f.context
            .insert("signal".into(), sig.trim_matches(['[', ']']).to_owned());
    }
    if i >= lines.len() || !GO_GOROUTINE.is_match(lines[i]) {
        // A panic without a goroutine dump (GOTRACEBACK=none, or cut off).
        return Some((f, start + 1));
    }
    Some(go_goroutines(f, lines, i))
}

/// Reads the dump from the goroutine header at `at`: the first goroutine's
/// frames (the one that failed), then counts the others.
fn go_goroutines(mut f: Failure, lines: &[&str], at: usize) -> (Failure, usize) {
    if let Some(c) = GO_GOROUTINE.captures(lines[at]) {
        f.context.insert("goroutine_state".into(), c[1].to_owned());
    }
    let (frames, mut next) = go_frames(lines, at + 1);
    f.frames = frames.into_iter().rev().collect();
    // Further goroutines of a dump: counted, not kept (the first is the one that failed).
    let mut goroutines = 1;
    loop {
        let mut j = next;
        while j < lines.len() && lines[j].trim().is_empty() {
            j += 1;
        }
        if j < lines.len() && GO_GOROUTINE.is_match(lines[j]) {
            goroutines += 1;
            next = go_frames(lines, j + 1).1.max(j + 1);
        } else {
            break;
        }
    }
    if goroutines > 1 {
        f.context
            .insert("goroutines".into(), goroutines.to_string());
    }
    (f, next)
}

// ---------------------------------------------------------------- Rust

static RUST_PANIC_NEW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^thread '([^']*)' (?:\(\d+\) )?panicked at (.+?):(\d+):(\d+):$").unwrap()
});
static RUST_PANIC_OLD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^thread '([^']*)' (?:\(\d+\) )?panicked at '(.*)', (.+?):(\d+)(?::(\d+))?$")
        .unwrap()
});
static RUST_BT_FRAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*\d+:\s+(?:0x[0-9a-f]+ - )?(.+?)\s*$").unwrap());
static RUST_BT_AT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s+at (.+?):(\d+)(?::(\d+))?\s*$").unwrap());

fn rust_backtrace(lines: &[&str], mut i: usize) -> (Vec<Frame>, usize) {
    let mut frames = Vec::new();
    while i < lines.len() {
        if let Some(c) = RUST_BT_AT.captures(lines[i]) {
            if let Some(last) = frames.last_mut() {
                let last: &mut Frame = last;
                if last.file.is_none() {
                    last.file = Some(c[1].to_owned());
                    last.line = c[2].parse().ok();
                }
            }
            i += 1;
        } else if let Some(c) = RUST_BT_FRAME.captures(lines[i]) {
            frames.push(frame(None, Some(&c[1]), None));
            i += 1;
        } else {
            break;
        }
    }
    frames.reverse();
    (frames, i)
}

fn rust_panic(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
    let head = lines[start];
    let mut f = Failure::new(FailureKind::Exception, Language::Rust);
    f.exception_type = Some("panic".into());
    let mut i = start + 1;
    let location;
    if let Some(c) = RUST_PANIC_NEW.captures(head) {
        f.context.insert("thread".into(), c[1].to_owned());
        f.context
            .insert("location".into(), format!("{}:{}:{}", &c[2], &c[3], &c[4]));
        location = frame(Some(&c[2]), None, c[3].parse().ok());
        let mut msg = Vec::new();
        while i < lines.len() && msg.len() < MAX_MESSAGE_LINES {
            let l = lines[i];
            if l.starts_with("note: ")
                || l.starts_with("stack backtrace:")
                || l.starts_with("thread '")
                || l.trim().is_empty()
            {
                break;
            }
            msg.push(l);
            i += 1;
        }
        f.message = msg.join("\n");
    } else if let Some(c) = RUST_PANIC_OLD.captures(head) {
        f.context.insert("thread".into(), c[1].to_owned());
        // Rust before 1.42 printed no column (`src/term/mod.rs:634`).
        let location_text = match c.get(5) {
            Some(col) => format!("{}:{}:{}", &c[3], &c[4], col.as_str()),
            None => format!("{}:{}", &c[3], &c[4]),
        };
        f.context.insert("location".into(), location_text);
        location = frame(Some(&c[3]), None, c[4].parse().ok());
        f.message = c[2].to_owned();
    } else {
        return None;
    }
    // Notes, then maybe a backtrace.
    while i < lines.len()
        && (lines[i].starts_with("note: ") || lines[i].trim().is_empty())
        && i < start + MAX_MESSAGE_LINES + 4
    {
        if lines[i].trim().is_empty()
            && !lines
                .get(i + 1)
                .is_some_and(|l| l.starts_with("stack backtrace:"))
        {
            break;
        }
        i += 1;
    }
    if lines
        .get(i)
        .is_some_and(|l| l.starts_with("stack backtrace:"))
    {
        let (frames, next) = rust_backtrace(lines, i + 1);
        f.frames = frames;
        i = next;
        if lines
            .get(i)
            .is_some_and(|l| l.starts_with("note: Some details are omitted"))
        {
            i += 1;
        }
    }
    if f.frames.is_empty() {
        f.frames.push(location);
    }
    Some((f, i))
}

static RUST_CAUSE_ITEM: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s+(?:\d+: )?(.+)$").unwrap());

/// `Error: msg` printed by `main` returning `Err` (anyhow/eyre), with `Caused by:`.
fn rust_error(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
    let msg = lines[start].strip_prefix("Error: ")?;
    let mut i = start + 1;
    while i < lines.len() && lines[i].trim().is_empty() && i < start + 3 {
        i += 1;
    }
    let l = lines.get(i)?;
    if *l != "Caused by:" && *l != "Stack backtrace:" {
        return None;
    }
    let mut f = Failure::new(FailureKind::Exception, Language::Rust);
    f.exception_type = Some("Error".into());
    f.message = msg.to_owned();
    if *l == "Caused by:" {
        i += 1;
        while i < lines.len() {
            match RUST_CAUSE_ITEM.captures(lines[i]) {
                Some(c) => {
                    f.causes.push(Cause {
                        relation: "cause".into(),
                        exception_type: None,
                        message: c[1].to_owned(),
                        frames: Vec::new(),
                    });
                    i += 1;
                }
                None => break,
            }
        }
    }
    while i < lines.len() && lines[i].trim().is_empty() && i < start + 40 {
        i += 1;
    }
    if lines.get(i).is_some_and(|l| *l == "Stack backtrace:") {
        let (frames, next) = rust_backtrace(lines, i + 1);
        f.frames = frames;
        i = next;
    }
    Some((f, i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Failure {
        let lines: Vec<&str> = text.lines().collect();
        let mut v = scan(&lines, 1, 10);
        assert_eq!(v.len(), 1, "{v:#?}");
        v.remove(0)
    }

    #[test]
    fn python_chain() {
        let f = one(
            "Traceback (most recent call last):\n  File \"/app/a.py\", line 3, in load\n    d[k]\nKeyError: 'x'\n\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n  File \"/app/a.py\", line 9, in main\n    load()\nValueError: bad config\n",
        );
        assert_eq!(f.exception_type.as_deref(), Some("ValueError"));
        assert_eq!(f.causes[0].exception_type.as_deref(), Some("KeyError"));
        assert_eq!(f.causes[0].relation, "context");
        assert_eq!(f.frames[0].function.as_deref(), Some("main"));
    }

    #[test]
    fn python_syntax_error_without_traceback() {
        let f = one(
            "  File \"/app/x.py\", line 3\n    def f(:\n          ^\nSyntaxError: invalid syntax\n",
        );
        assert_eq!(f.exception_type.as_deref(), Some("SyntaxError"));
        assert_eq!(f.frames[0].line, Some(3));
    }

    #[test]
    fn node_error_causes() {
        let f = one(
            "TypeError: fetch failed\n    at node:internal/deps/undici/undici:12345:11\n    at async getUser (/app/src/users.js:10:15) {\n  [cause]: Error: connect ECONNREFUSED 127.0.0.1:3000\n      at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16) {\n    errno: -111,\n    code: 'ECONNREFUSED'\n  }\n}\nnext line\n",
        );
        assert_eq!(f.exception_type.as_deref(), Some("TypeError"));
        assert_eq!(f.causes.len(), 1);
        assert_eq!(f.causes[0].exception_type.as_deref(), Some("Error"));
        assert_eq!(f.causes[0].message, "connect ECONNREFUSED 127.0.0.1:3000");
        assert_eq!(f.causes[0].frames.len(), 1);
    }

    #[test]
    fn python_exception_group() {
        let text = "  + Exception Group Traceback (most recent call last):\n  |   File \"/app/main.py\", line 18, in <module>\n  |     asyncio.run(main())\n  |   File \"/app/main.py\", line 12, in main\n  |     async with asyncio.TaskGroup() as tg:\n  | ExceptionGroup: unhandled errors in a TaskGroup (2 sub-exceptions)\n  +-+---------------- 1 ----------------\n    | Traceback (most recent call last):\n    |   File \"/app/main.py\", line 6, in fetch\n    |     raise ValueError(f\"bad id {i}\")\n    | ValueError: bad id 1\n    +---------------- 2 ----------------\n    | Traceback (most recent call last):\n    |   File \"/app/main.py\", line 8, in fetch_more\n    |     raise KeyError(i)\n    | KeyError: 2\n    +------------------------------------\nafter\n";
        let f = one(text);
        assert_eq!(f.exception_type.as_deref(), Some("ExceptionGroup"));
        assert_eq!(f.frames.len(), 2);
        let subs: Vec<_> = f
            .causes
            .iter()
            .map(|c| {
                (
                    c.relation.as_str(),
                    c.exception_type.as_deref(),
                    c.frames.len(),
                )
            })
            .collect();
        assert_eq!(
            subs,
            [
                ("sub_exception", Some("ValueError"), 1),
                ("sub_exception", Some("KeyError"), 1)
            ]
        );
    }

    #[test]
    fn go_dump_without_its_panic_line() {
        let f = one(
            "goroutine 1 [running]:\nmain.f(...)\n\t/path/main.go:12 +0x1d\nmain.main()\n\t/path/main.go:20 +0x25\n",
        );
        assert_eq!(f.exception_type.as_deref(), Some("panic"));
        let funcs: Vec<_> = f.frames.iter().map(|fr| fr.function.as_deref()).collect();
        assert_eq!(funcs, [Some("main.main"), Some("main.f")]);
        assert_eq!(f.frames[1].line, Some(12));
    }

    #[test]
    fn go_frames_with_wrapped_arguments_and_no_tabs() {
        let f = one(
            "panic: boom\n\ngoroutine 1 [running]:\nmain.(*S).f(0xc000010000,\n    {0x1, 0x2})\n/src/x/main.go:12 +0x1d\nmain.main()\n/src/x/main.go:20 +0x25\n",
        );
        let funcs: Vec<_> = f.frames.iter().map(|fr| fr.function.as_deref()).collect();
        assert_eq!(funcs, [Some("main.main"), Some("main.(*S).f")]);
    }

    #[test]
    fn go_data_race() {
        let f = one(
            "WARNING: DATA RACE\nRead at 0x00c000012345 by goroutine 7:\n  main.get()\n      /src/m.go:9 +0x2a\n\nPrevious write at 0x00c000012345 by main goroutine:\n  main.set()\n      /src/m.go:5 +0x1a\n==================\n",
        );
        assert_eq!(f.exception_type.as_deref(), Some("data race"));
        assert_eq!(f.message, "Read at 0x00c000012345 by goroutine 7");
        assert_eq!(f.frames[0].function.as_deref(), Some("main.get"));
        assert_eq!(f.causes[0].relation, "previous_access");
        assert_eq!(f.causes[0].frames[0].function.as_deref(), Some("main.set"));
    }

    #[test]
    fn firefox_and_safari_frames() {
        let f = one(
            "TypeError: x is undefined\nasync*load@http://localhost/src/a.js:3:9\n@http://localhost/src/main.js:1:1\nf@[native code]\n",
        );
        assert_eq!(f.exception_type.as_deref(), Some("TypeError"));
        let frames: Vec<_> = f
            .frames
            .iter()
            .map(|fr| (fr.function.as_deref(), fr.line))
            .collect();
        assert_eq!(
            frames,
            [
                (Some("f"), None),
                (Some("<anonymous>"), Some(1)),
                (Some("load"), Some(3))
            ]
        );
        assert!(gecko_frame("mail me at ann@example.com").is_none());
    }

    #[test]
    fn exception_groups_in_chains() {
        let group = "  + Exception Group Traceback (most recent call last):\n  |   File \"/app/m.py\", line 5, in main\n  |     raise ExceptionGroup(\"x\", errs)\n  | ExceptionGroup: x (1 sub-exception)\n  +-+---------------- 1 ----------------\n    | Traceback (most recent call last):\n    |   File \"/app/m.py\", line 2, in f\n    |     raise KeyError(1)\n    | KeyError: 1\n    +------------------------------------\n";
        let first = format!(
            "Traceback (most recent call last):\n  File \"/app/m.py\", line 9, in g\n    open(p)\nOSError: gone\n\nDuring handling of the above exception, another exception occurred:\n\n{group}"
        );
        let f = one(&first);
        assert_eq!(f.exception_type.as_deref(), Some("ExceptionGroup"));
        let rels: Vec<_> = f
            .causes
            .iter()
            .map(|c| (c.relation.as_str(), c.exception_type.as_deref()))
            .collect();
        assert_eq!(
            rels,
            [
                ("sub_exception", Some("KeyError")),
                ("context", Some("OSError"))
            ]
        );
        let last = format!(
            "{group}\nThe above exception was the direct cause of the following exception:\n\nTraceback (most recent call last):\n  File \"/app/m.py\", line 12, in <module>\n    raise SystemExit(1) from eg\nSystemExit: 1\n"
        );
        let f = one(&last);
        assert_eq!(f.exception_type.as_deref(), Some("SystemExit"));
        let rels: Vec<_> = f
            .causes
            .iter()
            .map(|c| (c.relation.as_str(), c.exception_type.as_deref()))
            .collect();
        assert_eq!(
            rels,
            [
                ("cause", Some("ExceptionGroup")),
                ("sub_exception", Some("KeyError"))
            ]
        );
    }

    #[test]
    fn python_traceback_pasted_without_its_header() {
        let f = one(
            "   File \"/usr/lib/python3.9/site-packages/jinja2/filters.py\", line 13, in <module>\n     from markupsafe import soft_unicode\n ImportError: cannot import name 'soft_unicode' from 'markupsafe'\n",
        );
        assert_eq!(f.exception_type.as_deref(), Some("ImportError"));
        assert_eq!(f.frames.len(), 1);
        assert_eq!(f.context.get("header").map(String::as_str), Some("missing"));
        // Frames that end in no exception line are not a failure.
        let out = scan(&["  File \"a.py\", line 1, in f", "    g()"], 1, 10);
        assert!(out.is_empty());
    }

    #[test]
    fn old_rust_panics_without_a_column_and_kotlin_compiler_errors() {
        let f = one(
            "thread 'pty reader' panicked at 'cursor fell off grid', src/term/mod.rs:634\nnote: Run with `RUST_BACKTRACE=1` for a backtrace.\n",
        );
        assert_eq!(
            f.context.get("location").map(String::as_str),
            Some("src/term/mod.rs:634")
        );
        assert_eq!(f.frames[0].line, Some(634));
        let f = one(
            "e: java.lang.IllegalAccessError: superclass access check failed\n\tat java.base/java.lang.ClassLoader.defineClass1(Native Method)\n\tat org.jetbrains.kotlin.kapt3.base.KaptContext.<init>(KaptContext.kt:55)\n",
        );
        assert_eq!(
            f.exception_type.as_deref(),
            Some("java.lang.IllegalAccessError")
        );
        assert_eq!(f.frames.len(), 2);
    }

    #[test]
    fn go_frames_of_old_runtimes_without_pc() {
        let f = one(
            "fatal error: concurrent map writes\n\ngoroutine 419 [running]:\nruntime.throw(0xa802e0, 0x15)\n        /usr/local/go/src/runtime/panic.go:530 +0x90 fp=0xc8260edcf0 sp=0xc8260edcd8\nktkr.us/pkg/airlift/thumb.(*Cache).getThumb.func1(0xc82018a7e0)\n        /home/u/go/src/ktkr.us/pkg/airlift/thumb/thumb.go:302 +0xdbd fp=0xc8260edf90 sp=0xc8260edd98\n",
        );
        assert_eq!(f.frames.len(), 2, "{:?}", f.frames);
    }

    #[test]
    fn go_args_are_stripped() {
        assert_eq!(go_strip_args("main.(*S).h(0x0, {0x1, 0x2})"), "main.(*S).h");
        assert_eq!(go_strip_args("main.main()"), "main.main");
    }

    #[test]
    fn js_and_java_frames_do_not_mix() {
        assert!(java_frame("    at Object.<anonymous> (/app/x.js:1:2)").is_none());
        assert!(js_frame("\tat com.acme.A.b(A.java:3)").is_none());
        let f = js_frame("    at async Promise.all (index 0)").unwrap();
        assert_eq!(f.file, None);
        let j = java_frame("\tat java.base/java.lang.Thread.run(Thread.java:1583)").unwrap();
        assert_eq!(j.file.as_deref(), Some("java/lang/Thread.java"));
        assert_eq!(j.function.as_deref(), Some("java.lang.Thread.run"));
    }
}
