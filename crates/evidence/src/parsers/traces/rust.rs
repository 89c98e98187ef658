//! Rust: panics of the old and new formats, backtraces (`RUST_BACKTRACE=1`
//! and `full`) and `Error:` chains printed by `main`.

use super::{MAX_MESSAGE_LINES, frame};
use crate::model::{Cause, Failure, FailureKind, Frame, Language};
use regex::Regex;
use std::sync::LazyLock;

static RUST_PANIC_NEW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^thread '([^']*)' (?:\(\d+\) )?panicked at (.+?):(\d+):(\d+):$").unwrap()
});
static RUST_PANIC_OLD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^thread '([^']*)' (?:\(\d+\) )?panicked at '(.*)', (.+?):(\d+)(?::(\d+))?$")
        .unwrap()
});
/// An old-format header whose location went to the next line (a pasted
/// panic wrapped by the reporter): `panicked at 'msg', ` then `path:line:col`.
static RUST_PANIC_OLD_SPLIT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^thread '([^']*)' (?:\(\d+\) )?panicked at '(.*)',\s*$").unwrap()
});
static RUST_LOCATION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(\S+?):(\d+)(?::(\d+))?\s*$").unwrap());
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

pub(super) fn rust_panic(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
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
    } else if let Some(c) = RUST_PANIC_OLD_SPLIT.captures(head)
        && let Some(l) = lines.get(i).and_then(|l| RUST_LOCATION.captures(l))
    {
        f.context.insert("thread".into(), c[1].to_owned());
        let location_text = match l.get(3) {
            Some(col) => format!("{}:{}:{}", &l[1], &l[2], col.as_str()),
            None => format!("{}:{}", &l[1], &l[2]),
        };
        f.context.insert("location".into(), location_text);
        location = frame(Some(&l[1]), None, l[2].parse().ok());
        f.message = c[2].to_owned();
        i += 1;
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
pub(super) fn rust_error(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
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

/// Zellij's report of a panicked thread (a miette diagnostic):
/// `× Thread 'screen' panicked.`, the originating threads, `├─▶ At path:line:col`
/// and `╰─▶ message`. Read as a panic without a backtrace.
pub(super) fn rust_thread_report(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
    let thread = lines[start]
        .trim()
        .strip_prefix("× Thread '")?
        .strip_suffix("' panicked.")?;
    let mut f = Failure::new(FailureKind::Exception, Language::Rust);
    f.exception_type = Some("panic".into());
    f.context.insert("thread".into(), thread.to_owned());
    let mut i = start + 1;
    let mut location = None;
    while i < lines.len() && i <= start + MAX_MESSAGE_LINES {
        let l = lines[i].trim();
        if let Some(at) = l.strip_prefix("├─▶ At ")
            && let Some(c) = RUST_LOCATION.captures(at)
        {
            f.context.insert("location".into(), at.trim().to_owned());
            location = Some(frame(Some(&c[1]), None, c[2].parse().ok()));
        } else if let Some(msg) = l.strip_prefix("╰─▶ ") {
            f.message = msg.to_owned();
            i += 1;
            break;
        } else if !(l.starts_with('│') || l.starts_with("├─▶")) {
            return None;
        }
        i += 1;
    }
    f.frames.push(location?);
    Some((f, i))
}
