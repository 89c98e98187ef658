//! The prefix layer: what CI systems and copy-paste put around each line of
//! a tool's output, removed before detection and parsing, so that every
//! parser sees what the tool printed.
//!
//! Two kinds of noise are handled differently:
//!
//! - **Per-character noise is always removed**: ANSI escape sequences (CSI
//!   colours and cursor moves, OSC titles and links, APC/DCS strings such as
//!   Buildkite's `ESC _bk;t=1714564800123 BEL` timestamps), CRLF, and bare
//!   CR progress overwrites (the last non-empty overwrite is what a terminal
//!   shows; a GitLab `section_start:` marker overwritten by its header keeps
//!   the marker, since it names the step).
//! - **Per-line prefixes are removed only when the log has them**: a shape
//!   ([`Shape`]) is stripped when it starts at least 80 % of the sampled
//!   non-empty lines, so one Python frame line that happens to start with a
//!   time is left alone. Shapes stack (a job label after a timestamp): up to
//!   [`MAX_LAYERS`] are detected in turn.
//!
//! Lines are never added or removed, so a line number in the cleaned text is
//! the line number in the input. The exception is interleaved output from
//! parallel jobs (`[job-1] …` / `[job-2] …`): the lines are then also split
//! into one [`Stream`] per job, each with the input line number of every
//! line, so that each stream is parsed alone and its findings are mapped back.
//!
//! GitHub Actions markers that are lines of their own (`##[group]`,
//! `##[endgroup]`, `##[error]`) are kept: they are the build-log parser's
//! step boundaries and error lines. The raw workflow-command forms a tool
//! prints (`::group::T`, `::endgroup::`, `::error file=x::msg`) are rewritten
//! into those, so both spellings mean the same.
//!
//! Work is linear in the input: matchers see at most [`MAX_PREFIX`] bytes of
//! a line, and [`Cleaned::work`] counts the bytes the layer reads and writes.

mod demux;
mod detection;
mod shapes;
#[cfg(test)]
mod tests;

pub(crate) use demux::Stream;
use demux::demultiplex;
use detection::detect;
pub(crate) use shapes::Shape;
use std::borrow::Cow;

/// Prefix layers detected in turn, at most.
pub(crate) const MAX_LAYERS: usize = 4;
/// Bytes of a line a prefix matcher may look at.
pub(crate) const MAX_PREFIX: usize = 64;
/// Non-empty lines sampled from the start and from the end for detection.
const SAMPLE_LINES: usize = 200;
/// A job label is a short name.
const MAX_LABEL: usize = 40;
/// Parallel jobs in one log, at most: more distinct labels than this are
/// ids (`[req-8f3a] ` on every request's line), not jobs, and are left alone.
pub(crate) const MAX_JOBS: usize = 16;

/// Text after the prefix layer.
#[derive(Debug)]
pub(crate) struct Cleaned<'a> {
    /// The whole input, cleaned, line for line (job labels removed, jobs
    /// still interleaved): what detection and single-stream parsing read.
    pub text: Cow<'a, str>,
    /// The prefix shapes removed, outermost first.
    pub shapes: Vec<Shape>,
    /// One stream per job when at least two job labels interleave; else empty.
    pub streams: Vec<Stream>,
    /// Bytes read and written by the layer: linear in the input (the
    /// bounded-work tests read it).
    #[cfg_attr(not(test), allow(dead_code))]
    pub work: u64,
}

/// Runs the prefix layer over decoded text.
pub(crate) fn clean(text: &str) -> Cleaned<'_> {
    let mut work = 0u64;
    let has_controls = text.bytes().any(|b| b == 0x1b || b == b'\r');
    work += text.len() as u64;
    let shapes = detect(text, &mut work);
    let rewrite_commands = text.contains("\n::") || text.starts_with("::");
    if shapes.is_empty() && !has_controls && !rewrite_commands {
        return Cleaned {
            text: Cow::Borrowed(text),
            shapes,
            streams: Vec::new(),
            work,
        };
    }
    let mut out = String::with_capacity(text.len());
    // Per line, the index of its job label in `names`.
    let mut labels: Vec<Option<usize>> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let track_jobs = shapes.contains(&Shape::Job);
    let mut scratch = String::new();
    for (i, raw) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let line = control_free(raw, &mut scratch, &mut work);
        let (rest, label) = strip(line, &shapes, &mut work);
        if track_jobs {
            // Beyond MAX_JOBS labels (outside the sample) a line joins the job before it.
            labels.push(label.and_then(|l| match names.iter().position(|n| n == l) {
                Some(p) => Some(p),
                None if names.len() < MAX_JOBS => {
                    names.push(l.to_owned());
                    Some(names.len() - 1)
                }
                None => None,
            }));
            work += names.len() as u64;
        }
        push_line(&mut out, rest);
        work += rest.len() as u64;
    }
    let streams = if track_jobs {
        demultiplex(&out, &labels, &names, &mut work)
    } else {
        Vec::new()
    };
    Cleaned {
        text: Cow::Owned(out),
        shapes,
        streams,
        work,
    }
}

/// The line without escape sequences, line-ending CR and progress overwrites.
fn control_free<'l>(raw: &'l str, scratch: &'l mut String, work: &mut u64) -> &'l str {
    let line = raw.strip_suffix('\r').unwrap_or(raw);
    if !line.bytes().any(|b| b == 0x1b || b == b'\r') {
        return line;
    }
    *work += line.len() as u64;
    scratch.clear();
    strip_escapes(line, scratch);
    if scratch.contains('\r') {
        let pick = last_overwrite(scratch).to_owned();
        *scratch = pick;
    }
    scratch
}

/// What a terminal shows of a line overwritten with bare CRs: the last
/// non-empty part, except that a GitLab section marker wins over the header
/// written over it (it names the step).
fn last_overwrite(s: &str) -> &str {
    let parts = || s.split('\r');
    parts()
        .rev()
        .find(|p| p.starts_with("section_start:"))
        .or_else(|| parts().rev().find(|p| p.starts_with("section_end:")))
        .or_else(|| parts().rev().find(|p| !p.trim().is_empty()))
        .unwrap_or("")
}

/// Removes ANSI escape sequences: CSI (`ESC [ … final`), OSC (`ESC ] … BEL`
/// or `ESC \`), APC/DCS/PM/SOS strings (`ESC _ … BEL`, Buildkite's
/// timestamps), and two- or three-byte escapes (`ESC ( B`, `ESC =`). An
/// unterminated string runs to the end of the line.
pub(crate) fn strip_escapes(s: &str, out: &mut String) {
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']' | '_' | 'P' | '^' | 'X') => {
                while let Some(c) = chars.next() {
                    if c == '\u{7}' {
                        break;
                    }
                    if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                        chars.next();
                        break;
                    }
                }
            }
            Some('(' | ')' | '*' | '+' | '#' | '%') => {
                chars.next();
            }
            _ => {}
        }
    }
}

/// Removes the detected shapes in order from one line; returns the rest and
/// the job label, if any.
fn strip<'l>(line: &'l str, shapes: &[Shape], work: &mut u64) -> (&'l str, Option<&'l str>) {
    let mut rest = line;
    let mut label = None;
    for s in shapes {
        *work += rest.len().min(MAX_PREFIX) as u64;
        if let Some(m) = s.matches(rest) {
            if m.label.is_some() {
                label = m.label;
            }
            rest = &rest[m.len..];
        }
    }
    (rest, label)
}

/// Appends a cleaned line, rewriting GitHub workflow commands into the
/// runner's `##[…]` form.
fn push_line(out: &mut String, line: &str) {
    if let Some(cmd) = line.strip_prefix("::") {
        if let Some(title) = cmd.strip_prefix("group::") {
            out.push_str("##[group]");
            out.push_str(title);
            return;
        }
        if cmd.starts_with("endgroup::") {
            out.push_str("##[endgroup]");
            return;
        }
        for kind in ["error", "warning", "notice", "debug"] {
            if let Some(after) = cmd.strip_prefix(kind)
                && (after.starts_with("::") || after.starts_with(' '))
                && let Some((_, msg)) = after.split_once("::")
            {
                out.push_str("##[");
                out.push_str(kind);
                out.push(']');
                out.push_str(msg);
                return;
            }
        }
    }
    out.push_str(line);
}
