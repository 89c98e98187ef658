//! JavaScript: V8 and Node stacks (`at fn (file:line:col)`, `node:internal`,
//! causes) and Firefox/Safari `fn@url:line:col` frames.

use super::java::java_frame;
use super::{MAX_MESSAGE_LINES, frame};
use crate::model::{Cause, Failure, FailureKind, Frame, Language};
use regex::Regex;
use std::sync::LazyLock;

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

/// A header type that names an error (not any capitalised word before a colon).
fn error_type(ty: &str) -> bool {
    ty.ends_with("Error") || ty.ends_with("Exception") || ty.contains("Rejection")
}

pub(super) fn javascript(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
    javascript_from(lines, start, lines[start])
}

/// An error header written after other output on its line: a progress line
/// the error was glued to (`10% building …index.jsError: …`) or a tool's
/// lead-in (`Module build failed: Error: …`). Read from the header on.
static JS_EMBEDDED_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:[A-Z][\w$]*)?(?:Error|Exception)(?: \[[A-Z0-9_]+\])?: ").unwrap()
});

pub(super) fn javascript_embedded(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
    let m = JS_EMBEDDED_HEADER.find(lines[start])?;
    if m.start() == 0 {
        return None;
    }
    javascript_from(lines, start, &lines[start][m.start()..])
}

/// Frames pasted without their error line (`    at new Hash (node:…)` first):
/// a failure of unknown type when three frames or more start the run.
pub(super) fn javascript_headerless(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
    if start > 0 && js_frame(lines[start - 1]).is_some() {
        return None;
    }
    let mut frames = Vec::new();
    let mut i = start;
    while i < lines.len() {
        match js_frame(lines[i]) {
            Some(fr) => frames.push(fr),
            None => break,
        }
        i += 1;
    }
    if frames.len() < 3 {
        return None;
    }
    let mut f = Failure::new(FailureKind::Exception, Language::Javascript);
    f.context.insert("header".into(), "missing".into());
    frames.reverse();
    f.frames = frames;
    Some((f, i))
}

fn javascript_from(lines: &[&str], start: usize, header: &str) -> Option<(Failure, usize)> {
    let c = JS_HEADER.captures(header)?;
    let mut ty = c[1].to_owned();
    if !error_type(&ty) && c.get(2).is_none() {
        return None;
    }
    let mut message = c.get(3).map_or(String::new(), |m| m.as_str().to_owned());
    let mut wrapper = None;
    let mut i = start + 1;
    let mut extra = 0;
    while i < lines.len() && js_frame(lines[i]).is_none() {
        if extra >= MAX_MESSAGE_LINES || java_frame(lines[i]).is_some() {
            return None;
        }
        // A wrapper's message that is itself an error header (webpack's
        // `ModuleBuildError: Module build failed (from x):` / `TypeError: …`):
        // the frames that follow are the inner error's.
        if let Some(inner) = JS_HEADER.captures(lines[i])
            && error_type(&inner[1])
            && inner.get(2).is_none()
        {
            wrapper = Some(std::mem::replace(&mut ty, inner[1].to_owned()));
            message = inner
                .get(3)
                .map_or(String::new(), |m| m.as_str().to_owned());
        } else {
            message.push('\n');
            message.push_str(lines[i]);
        }
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
    if let Some(code) = c.get(2).filter(|_| wrapper.is_none()) {
        f.context.insert("code".into(), code.as_str().to_owned());
    }
    if let Some(outer) = wrapper {
        f.context.insert("wrapped_by".into(), outer);
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

pub(super) fn gecko_frame(line: &str) -> Option<Frame> {
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
pub(super) fn javascript_gecko(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
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
