//! Go: panics with or without their `panic:` line, `fatal error:`, goroutine
//! dumps (wrapped argument lists, `created by`) and data races.

use super::frame;
use crate::model::{Cause, Failure, FailureKind, Frame, Language};
use regex::Regex;
use std::borrow::Cow;
use std::sync::LazyLock;

pub(super) static GO_SIGNAL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^SIG[A-Z]+: [a-z ]+$").unwrap());
pub(super) static GO_GOROUTINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^goroutine \d+(?: gp=\S+ m=\S+(?: mp=\S+)?)? \[([^\]]*)\]:$").unwrap()
});
/// `pkg.(*T).Method(0x1, {0x2, 0x3})` -> `pkg.(*T).Method`.
pub(super) fn go_strip_args(line: &str) -> &str {
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
pub(super) fn go_headerless(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
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
pub(super) fn go_race(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
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

pub(super) fn go_panic(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
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

/// A goroutine dump whose first line carries a logger's prefix (zerolog's
/// `10:54AM ERR goroutine 1 [running]:`), the frames after it unprefixed.
/// The previous line with the same prefix may hold the panic's value.
pub(super) fn go_prefixed(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
    let line = lines[start];
    let at = line.find("goroutine ").filter(|&p| p > 0)?;
    let c = GO_GOROUTINE.captures(&line[at..])?;
    let (frames, _) = go_frames(lines, start + 1);
    if frames.is_empty() {
        return None;
    }
    let mut f = Failure::new(FailureKind::Exception, Language::Go);
    f.exception_type = Some("panic".into());
    let value = start
        .checked_sub(1)
        .and_then(|p| lines[p].strip_prefix(&line[..at]));
    match value.and_then(|v| v.split_once("runtime error: ")) {
        Some((_, m)) => {
            f.exception_type = Some("runtime error".into());
            f.message = m.trim().to_owned();
        }
        None => {
            f.context.insert("header".into(), "missing".into());
        }
    }
    let (mut f, next) = go_goroutines(f, lines, start);
    f.context.insert("goroutine_state".into(), c[1].to_owned());
    Some((f, next))
}
