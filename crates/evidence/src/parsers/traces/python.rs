//! Python tracebacks: chains (`During handling…`, `The above exception…`),
//! exception groups, tracebacks pasted without their header, and syntax
//! errors reported while compiling the main script.

use super::{MAX_MESSAGE_LINES, frame};
use crate::model::{Cause, Failure, FailureKind, Frame, Language};
use crate::parsers::python_runners::pytest_repr;
use regex::Regex;
use std::sync::LazyLock;

/// A frame line. The function is one word (`main`, `<module>`): what
/// follows it after spaces is the frame's source line, glued on when a page
/// or terminal lost the line break (`in <module>    from .app import Flask`).
static PY_FRAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^\s*File "([^"]*)", line (\d+)(?:, in (\S+))?(?:\s.*)?$"#).unwrap()
});
/// Frames glued onto the end of the `Traceback` line or of a source line
/// (`    from flask import Flask  File "…/flask/__init__.py", line 7, in <module>`).
static PY_GLUED_FRAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:^\s*|\s{2})File "([^"]*)", line (\d+)(?:, in (\S+))?"#).unwrap()
});
static PY_EXC: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^([A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*)(?::\s?(.*))?$").unwrap());
const PY_CONTEXT: &str = "During handling of the above exception, another exception occurred:";
const PY_CAUSE: &str = "The above exception was the direct cause of the following exception:";

pub(super) struct Exc {
    pub(super) relation: String,
    pub(super) exception_type: Option<String>,
    pub(super) message: String,
    pub(super) frames: Vec<Frame>,
    /// An exception group's sub-exceptions (and their chains), as causes.
    pub(super) subs: Vec<Cause>,
}

fn strip<'a>(line: &'a str, prefix: &str) -> &'a str {
    line.strip_prefix(prefix).unwrap_or(line)
}

/// A Python traceback chain: tracebacks and exception groups joined by
/// `During handling of the above exception…` / `The above exception was the
/// direct cause…`, oldest first as Python prints them.
pub(super) fn python(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
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
    let glued = |l: &str, frames: &mut Vec<Frame>| {
        // Most source lines hold no frame: a substring search, not the regex.
        if !l.contains("File \"") {
            return;
        }
        for c in PY_GLUED_FRAME.captures_iter(l) {
            frames.push(frame(
                Some(&c[1]),
                c.get(3).map(|m| m.as_str()),
                c[2].parse().ok(),
            ));
        }
    };
    if let Some((_, after)) = lines[start].split_once("Traceback (most recent call last):") {
        glued(after, &mut frames);
    }
    while i < lines.len() {
        let l = strip(lines[i], prefix);
        if PY_FRAME.is_match(l) {
            glued(l, &mut frames);
            i += 1;
        } else if l.starts_with(' ') || l.starts_with('\t') {
            // A source line may carry the next frames glued on.
            glued(l, &mut frames);
            // Source line, caret line, `[Previous line repeated N more times]`.
            i += 1;
        } else if unindented_source(lines, i, prefix) {
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

/// A frame's source line that lost its indentation (pasted from a page that
/// trims lines): right after a frame, not an exception line itself, and
/// followed by another frame or by the exception line.
fn unindented_source(lines: &[&str], i: usize, prefix: &str) -> bool {
    let l = strip(lines[i], prefix);
    i > 0
        && !l.trim().is_empty()
        && PY_FRAME.is_match(strip(lines[i - 1], prefix))
        && !PY_EXC.is_match(l)
        && lines.get(i + 1).is_some_and(|n| {
            let n = strip(n, prefix);
            PY_FRAME.is_match(n) || PY_EXC.is_match(n)
        })
}

/// Streamlit prints the exception first, then `Traceback:` and frames that
/// start at the margin: `RegexMatchError: …` / `Traceback:` / `File "…"`.
fn streamlit_exception(lines: &[&str], start: usize) -> Option<(String, String)> {
    if start < 2 || lines[start - 1].trim_end() != "Traceback:" {
        return None;
    }
    let c = PY_EXC.captures(lines[start - 2].trim_end())?;
    let ty = c[1].to_owned();
    let msg = c.get(2).map_or(String::new(), |m| m.as_str().to_owned());
    Some((ty, msg))
}

/// A traceback pasted without its `Traceback (most recent call last):` line
/// (people copy from the first frame they think matters). Read like a
/// traceback when the frames end in an exception line; the indentation of
/// the first frame says how much of every line is margin (`  File` is the
/// standard two spaces).
pub(super) fn python_headerless(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
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
    let (mut exc, next) = python_traceback(&shifted, 0, &prefix);
    if exc.exception_type.is_none()
        && let Some((ty, msg)) = streamlit_exception(lines, start)
    {
        exc.exception_type = Some(ty);
        exc.message = msg;
    }
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
pub(super) fn python_syntax_error(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
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

static PYTEST_SHORT_ENTRY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\S[^:]*?\.py:\d+: in \S+$").unwrap());

/// A pytest short traceback outside a pytest session (pasted from a CI run,
/// a collection error): `path.py:12: in <module>`, the source line indented,
/// `E   Type: message` at the end. Read by pytest's own representation parser.
pub(super) fn python_pytest_short(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
    if !PYTEST_SHORT_ENTRY.is_match(lines[start]) {
        return None;
    }
    // Only from the start of a run, so a long run without an `E` line is
    // read once, not once per line.
    if start > 0
        && (PYTEST_SHORT_ENTRY.is_match(lines[start - 1]) || lines[start - 1].starts_with(' '))
    {
        return None;
    }
    let mut i = start;
    let mut saw_e = false;
    while i < lines.len() && i < start + 400 {
        let l = lines[i];
        let is_e = l.starts_with("E ") || l == "E";
        if saw_e && !is_e {
            break;
        }
        if !(is_e || PYTEST_SHORT_ENTRY.is_match(l) || l.starts_with(' ')) {
            break;
        }
        saw_e |= is_e;
        i += 1;
    }
    if !saw_e {
        return None;
    }
    let f = pytest_repr(&lines[start..i].join("\n"))?;
    f.exception_type.as_ref()?;
    Some((f, i))
}
