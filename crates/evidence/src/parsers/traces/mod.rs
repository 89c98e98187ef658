//! Stack-trace recognisers, one module per language (Python, Java/Kotlin,
//! JavaScript/Node, Go, Rust), and a scanner that finds them anywhere in
//! text; the frame constructor and the message bound are shared here.
//!
//! Each recogniser looks at line `i` and either declines cheaply or returns
//! the failure it read and the index of the first line after it. Frames are
//! returned innermost LAST (Java, JS, Go and Rust print innermost first, so
//! they are reversed). Frames are raw here; `pipeline` normalises them.

mod go;
mod java;
mod javascript;
mod python;
mod rust;

use crate::model::{Failure, Frame};
use go::{GO_GOROUTINE, GO_SIGNAL, go_headerless, go_panic, go_prefixed, go_race};
use java::{java, java_embedded};
use javascript::{
    gecko_frame, javascript, javascript_embedded, javascript_gecko, javascript_headerless,
};
use python::{python, python_headerless, python_pytest_short, python_syntax_error};
use rust::{rust_error, rust_panic, rust_thread_report};

pub(crate) use go::go_frames;
pub(crate) use javascript::js_frame;

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
    if line.contains(".py:")
        && line.contains(": in ")
        && let Some(r) = python_pytest_short(lines, i)
    {
        return Some(r);
    }
    if line.starts_with("thread '") || line.starts_with("thread '<unnamed>'") {
        return rust_panic(lines, i);
    }
    if line.trim_start().starts_with("× Thread '") {
        return rust_thread_report(lines, i);
    }
    if line.starts_with("panic: ") || line.starts_with("fatal error: ") || GO_SIGNAL.is_match(line)
    {
        return go_panic(lines, i);
    }
    if line.starts_with("goroutine ") && GO_GOROUTINE.is_match(line) {
        return go_headerless(lines, i);
    }
    if line.contains(" goroutine ")
        && let Some(r) = go_prefixed(lines, i)
    {
        return Some(r);
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
        if let Some(r) = java_embedded(lines, i).or_else(|| javascript_embedded(lines, i)) {
            return Some(r);
        }
    }
    if line.trim_start().starts_with("at ")
        && let Some(r) = javascript_headerless(lines, i)
    {
        return Some(r);
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

#[cfg(test)]
mod tests;
