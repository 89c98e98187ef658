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

/// A per-line prefix shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// `2024-05-01T12:00:00.1234567Z ` (GitHub Actions, `kubectl logs
    /// --timestamps`, Buildkite's timestamped download), with GitLab's stream
    /// tag after it (`2024-05-01T12:00:00.123456Z 00O `).
    IsoTimestamp,
    /// `[2024-05-01T12:00:00.123Z] ` (Jenkins timestamper), `[2024-05-01 12:00:00] `.
    BracketedTimestamp,
    /// `12:00:00 `, `12:00:00.123 `, `[12:00:00] ` (Jenkins timestamper's time-only form).
    ClockTime,
    /// `[    7s] ` (Open Build Service), `[ 12.3s] `.
    Elapsed,
    /// Go's standard logger, `2016/03/11 13:08:48 ` (`.123456` optional),
    /// with HashiCorp go-plugin's level and plugin name after it when present
    /// (`[DEBUG] terraform-provider-aws: `): a plugin's panic relayed by its host.
    GoLog,
    /// A line-number gutter from a copy out of a viewer: `  12 | `, `12 │ `,
    /// `cat -n`'s `    12\t`, with numbers counting up. (`12: ` is not one:
    /// a Rust backtrace's frames look exactly like that.)
    Gutter,
    /// A parallel job's label: `[job-1] `, `[gw0] `, `web_1  | `.
    Job,
    /// A Markdown or e-mail quote: `> ` (a trace pasted into a reply).
    Quote,
    /// A block indented as a whole, the failure's header included (pasted
    /// under a list item, a CI annotation, a code block): this many spaces.
    /// Detected apart from the others ([`indent`]), never sampled by `ALL`.
    Indent(u8),
}

impl Shape {
    const ALL: [Shape; 8] = [
        Shape::IsoTimestamp,
        Shape::BracketedTimestamp,
        Shape::ClockTime,
        Shape::Elapsed,
        Shape::GoLog,
        Shape::Gutter,
        Shape::Job,
        Shape::Quote,
    ];

    /// What the diagnostic calls it.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Shape::IsoTimestamp => "ISO 8601 timestamps",
            Shape::BracketedTimestamp => "bracketed timestamps",
            Shape::ClockTime => "clock times",
            Shape::Elapsed => "elapsed-time stamps",
            Shape::GoLog => "Go log timestamps",
            Shape::Gutter => "line-number gutters",
            Shape::Job => "job labels",
            Shape::Quote => "quote markers",
            Shape::Indent(_) => "a common indentation",
        }
    }

    /// The prefix of `line` in this shape: its length including the
    /// separator, and the label for [`Shape::Job`] (or the number for a gutter).
    fn matches(self, line: &str) -> Option<Match<'_>> {
        let head = &line.as_bytes()[..line.len().min(MAX_PREFIX)];
        let m = match self {
            Shape::IsoTimestamp => iso_timestamp(head, false).and_then(|n| {
                let n = n + gitlab_stream_tag(&head[n..]);
                separator(head, n)
            }),
            Shape::BracketedTimestamp => bracketed(head, |b| iso_timestamp(b, true)),
            Shape::ClockTime => clock(head)
                .and_then(|n| separator(head, n))
                .or_else(|| bracketed(head, clock)),
            Shape::Elapsed => bracketed(head, elapsed),
            Shape::GoLog => go_log(head),
            Shape::Gutter => return gutter(head),
            Shape::Job => return job(line, head),
            Shape::Quote => match head {
                [b'>', b' ', ..] => Some(2),
                [b'>'] | [b'>', b'\t', ..] => Some(1),
                _ => None,
            },
            Shape::Indent(n) => {
                let n = usize::from(n);
                (head.len() >= n && head[..n].iter().all(|&b| b == b' ')).then_some(n)
            }
        }?;
        // Every matcher ends on an ASCII byte, so `m` is a char boundary.
        Some(Match {
            len: m,
            label: None,
            number: None,
        })
    }
}

struct Match<'a> {
    len: usize,
    label: Option<&'a str>,
    number: Option<u64>,
}

fn digits(b: &[u8], at: usize, n: usize) -> bool {
    b.len() >= at + n && b[at..at + n].iter().all(u8::is_ascii_digit)
}

fn run_of_digits(b: &[u8], at: usize) -> usize {
    b.get(at..)
        .map_or(0, |r| r.iter().take_while(|c| c.is_ascii_digit()).count())
}

/// `YYYY-MM-DDTHH:MM:SS[.f][Z|±HH[:]MM]`; a space instead of `T` only when
/// `space_ok` (inside brackets, where it cannot be an application's own log
/// format). Returns its length.
fn iso_timestamp(b: &[u8], space_ok: bool) -> Option<usize> {
    let sep_ok = b
        .get(10)
        .is_some_and(|&c| c == b'T' || (space_ok && c == b' '));
    if !(digits(b, 0, 4)
        && b.get(4) == Some(&b'-')
        && digits(b, 5, 2)
        && b.get(7) == Some(&b'-')
        && digits(b, 8, 2)
        && sep_ok
        && digits(b, 11, 2)
        && b.get(13) == Some(&b':')
        && digits(b, 14, 2)
        && b.get(16) == Some(&b':')
        && digits(b, 17, 2))
    {
        return None;
    }
    let mut i = 19;
    if matches!(b.get(i), Some(b'.' | b',')) && run_of_digits(b, i + 1) > 0 {
        i += 1 + run_of_digits(b, i + 1);
    }
    match b.get(i) {
        Some(b'Z') => i += 1,
        Some(b'+' | b'-') if digits(b, i + 1, 2) => {
            i += 3;
            if b.get(i) == Some(&b':') {
                i += 1;
            }
            if digits(b, i, 2) {
                i += 2;
            } else {
                return None;
            }
        }
        _ => {}
    }
    Some(i)
}

/// GitLab 17's ` 00O ` / ` 01E+ ` after the timestamp (stream and
/// continuation); its length including the leading space, or 0.
fn gitlab_stream_tag(b: &[u8]) -> usize {
    let hex = |c: Option<&u8>| c.is_some_and(|c| c.is_ascii_hexdigit());
    if b.first() == Some(&b' ')
        && hex(b.get(1))
        && hex(b.get(2))
        && matches!(b.get(3), Some(b'O' | b'E'))
    {
        let n = if b.get(4) == Some(&b'+') { 5 } else { 4 };
        if matches!(b.get(n), None | Some(b' ')) {
            return n;
        }
    }
    0
}

/// `HH:MM:SS[.fff]`.
fn clock(b: &[u8]) -> Option<usize> {
    if !(digits(b, 0, 2)
        && b.get(2) == Some(&b':')
        && digits(b, 3, 2)
        && b.get(5) == Some(&b':')
        && digits(b, 6, 2))
    {
        return None;
    }
    let mut i = 8;
    if b.get(i) == Some(&b'.') && run_of_digits(b, i + 1) > 0 {
        i += 1 + run_of_digits(b, i + 1);
    }
    Some(i)
}

/// `   7s` / `12.3s` (leading spaces allowed).
fn elapsed(b: &[u8]) -> Option<usize> {
    let mut i = b.iter().take_while(|&&c| c == b' ').count();
    let n = run_of_digits(b, i);
    if n == 0 {
        return None;
    }
    i += n;
    if b.get(i) == Some(&b'.') && run_of_digits(b, i + 1) > 0 {
        i += 1 + run_of_digits(b, i + 1);
    }
    (b.get(i) == Some(&b's')).then_some(i + 1)
}

/// `YYYY/MM/DD HH:MM:SS[.f] `, then `[LEVEL] ` and a plugin's `name: ` when
/// present (a name with `-`, `.` or `/` in it, so `panic: ` is never eaten).
fn go_log(b: &[u8]) -> Option<usize> {
    if !(digits(b, 0, 4)
        && b.get(4) == Some(&b'/')
        && digits(b, 5, 2)
        && b.get(7) == Some(&b'/')
        && digits(b, 8, 2)
        && b.get(10) == Some(&b' '))
    {
        return None;
    }
    let n = 11 + clock(&b[11..])?;
    let mut n = separator(b, n)?;
    if b.get(n) == Some(&b'[') {
        let level = b[n + 1..]
            .iter()
            .take_while(|c| c.is_ascii_uppercase())
            .count();
        if level > 0 && b.get(n + 1 + level) == Some(&b']') && b.get(n + 2 + level) == Some(&b' ') {
            n += level + 3;
            let name = b[n..]
                .iter()
                .take_while(|&&c| {
                    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'/')
                })
                .count();
            let plugin = b[n..n + name]
                .iter()
                .any(|c| matches!(c, b'-' | b'.' | b'/'));
            if plugin && b.get(n + name) == Some(&b':') {
                n = separator(b, n + name + 1).unwrap_or(n);
            }
        }
    }
    Some(n)
}

/// `[` inner `]` then the separator.
fn bracketed(b: &[u8], inner: impl Fn(&[u8]) -> Option<usize>) -> Option<usize> {
    if b.first() != Some(&b'[') {
        return None;
    }
    let n = inner(&b[1..])?;
    if b.get(1 + n) != Some(&b']') {
        return None;
    }
    separator(b, n + 2)
}

/// A prefix ends with one space (or a tab), or at the end of the line.
fn separator(b: &[u8], n: usize) -> Option<usize> {
    match b.get(n) {
        None => Some(n),
        Some(b' ' | b'\t') => Some(n + 1),
        Some(_) => None,
    }
}

/// `  12 | `, `12 │ `, `12\t`.
fn gutter(b: &[u8]) -> Option<Match<'static>> {
    let lead = b.iter().take_while(|&&c| c == b' ').count();
    let n = run_of_digits(b, lead);
    if n == 0 || n > 7 {
        return None;
    }
    let number = std::str::from_utf8(&b[lead..lead + n]).ok()?.parse().ok()?;
    let mut i = lead + n;
    let len = match b.get(i) {
        Some(b'\t') => i + 1,
        _ => {
            i += b[i..].iter().take_while(|&&c| c == b' ').count();
            let bar = if b.get(i) == Some(&b'|') {
                1
            } else if b[i..].starts_with("│".as_bytes()) {
                "│".len()
            } else {
                return None;
            };
            i += bar;
            if b.get(i) == Some(&b' ') { i + 1 } else { i }
        }
    };
    Some(Match {
        len,
        label: None,
        number: Some(number),
    })
}

/// Words that look like a job label in brackets but are log levels or tool
/// statuses (`[INFO] ` on every line of a Maven log is not a job).
const NOT_LABELS: &[&str] = &[
    "trace", "debug", "info", "notice", "warn", "warning", "error", "err", "fatal", "critical",
    "crit", "severe", "fine", "finer", "finest", "config", "alert", "emerg", "verbose", "ok",
    "pass", "passed", "fail", "failed", "skip", "skipped", "pipeline",
];

/// `[label] ` or `label<spaces>| ` (docker compose); a label starts with a
/// letter, has at most [`MAX_LABEL`] characters of `[A-Za-z0-9_./:@-]`, and
/// is not a log level.
fn job<'l>(line: &'l str, b: &[u8]) -> Option<Match<'l>> {
    let label_char =
        |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'/' | b':' | b'@' | b'-');
    let (start, end, len) = if b.first() == Some(&b'[') {
        let n = b[1..].iter().take_while(|&&c| label_char(c)).count();
        if b.get(1 + n) != Some(&b']') {
            return None;
        }
        (1, 1 + n, separator(b, n + 2)?)
    } else {
        let n = b
            .iter()
            .take_while(|&&c| label_char(c) && c != b':')
            .count();
        let spaces = b[n..].iter().take_while(|&&c| c == b' ').count();
        if spaces == 0 || b.get(n + spaces) != Some(&b'|') {
            return None;
        }
        (0, n, separator(b, n + spaces + 1)?)
    };
    let label = &line[start..end];
    let ok = (1..=MAX_LABEL).contains(&label.len())
        && label.as_bytes()[0].is_ascii_alphabetic()
        && !NOT_LABELS.iter().any(|w| label.eq_ignore_ascii_case(w));
    ok.then_some(Match {
        len,
        label: Some(label),
        number: None,
    })
}

/// One job's lines, when the log interleaves several.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stream {
    /// The job label (`job-1`); empty for lines before any label.
    pub label: String,
    /// The job's lines, cleaned, joined with `\n`.
    pub text: String,
    /// The input line number (1-based) of each of `text`'s lines.
    pub lines: Vec<usize>,
}

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

/// The sampled lines: the first and last [`SAMPLE_LINES`] non-empty ones
/// (the tail taken after the head, so no line counts twice), free of
/// control characters.
fn sample(text: &str, work: &mut u64) -> Vec<String> {
    let mut scratch = String::new();
    let mut keep = |line: &str, out: &mut Vec<String>, work: &mut u64| {
        *work += line.len() as u64;
        let clean = control_free(line, &mut scratch, work);
        if !clean.trim().is_empty() {
            out.push(clean.to_owned());
        }
    };
    let mut head = Vec::new();
    let mut head_end = 0;
    let mut taken = 0;
    for line in text.split_inclusive('\n') {
        head_end += line.len();
        let line = line.strip_suffix('\n').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        keep(line, &mut head, work);
        taken += 1;
        if taken == SAMPLE_LINES {
            break;
        }
    }
    let mut tail = Vec::new();
    let non_empty = text[head_end..]
        .rsplit('\n')
        .filter(|l| !l.trim().is_empty());
    for line in non_empty.take(SAMPLE_LINES) {
        keep(line, &mut tail, work);
    }
    tail.reverse();
    head.extend(tail);
    head
}

/// Which shapes start most lines, outermost first.
fn detect(text: &str, work: &mut u64) -> Vec<Shape> {
    let sample = sample(text, work);
    let mut views: Vec<&str> = sample.iter().map(String::as_str).collect();
    let mut shapes = Vec::new();
    while shapes.len() < MAX_LAYERS {
        let lines = views.iter().filter(|l| !l.trim().is_empty()).count();
        if lines == 0 {
            break;
        }
        // A shape may come twice (a Jenkins timestamp on a log that already
        // had one, a job label inside a job label).
        let best = Shape::ALL
            .iter()
            .map(|&s| (s, dominance(s, &views, work)))
            .max_by_key(|&(_, n)| n);
        let Some((shape, n)) = best else { break };
        if n == 0 || n * 10 < lines * 8 {
            break;
        }
        for v in &mut views {
            if let Some(m) = shape.matches(v) {
                *v = &v[m.len..];
            }
        }
        shapes.push(shape);
    }
    if shapes.len() < MAX_LAYERS
        && let Some(n) = indent(&views)
    {
        shapes.push(Shape::Indent(n));
    }
    shapes
}

/// Failure headers a parser looks for at the start of a line; a common
/// indentation is removed only when one of them is indented with the rest,
/// so an indented list of frames (`    at f (a.js:1:2)`) is left as printed.
const HEADERS: &[&str] = &[
    "panic: ",
    "thread '",
    "Traceback (most recent call last)",
    "Exception in thread ",
    "fatal error: ",
    "goroutine ",
    "Caused by: ",
];

/// The indentation (spaces) shared by at least 80 % of the sampled lines,
/// when a failure header is among them.
fn indent(views: &[&str]) -> Option<u8> {
    let lines: Vec<&str> = views
        .iter()
        .copied()
        .filter(|l| !l.trim().is_empty())
        .collect();
    let width = |l: &str| {
        l.bytes()
            .take(MAX_PREFIX)
            .take_while(|&b| b == b' ')
            .count()
    };
    let n = lines.iter().map(|l| width(l)).filter(|&w| w > 0).min()?;
    let indented: Vec<&str> = lines.iter().copied().filter(|l| width(l) >= n).collect();
    let header = indented
        .iter()
        .any(|l| HEADERS.iter().any(|h| l[n..].starts_with(h)));
    (header && indented.len() * 10 >= lines.len() * 8).then(|| u8::try_from(n).unwrap_or(u8::MAX))
}

/// How many sampled lines the shape starts (0 when it does not qualify: a
/// gutter's numbers must count up; job labels must be few).
fn dominance(shape: Shape, views: &[&str], work: &mut u64) -> usize {
    let mut n = 0;
    let mut numbers = Vec::new();
    let mut labels: Vec<&str> = Vec::new();
    for v in views.iter().filter(|l| !l.trim().is_empty()) {
        *work += v.len().min(MAX_PREFIX) as u64;
        if let Some(m) = shape.matches(v) {
            n += 1;
            if let Some(x) = m.number {
                numbers.push(x);
            }
            if let Some(l) = m.label
                && !labels.contains(&l)
            {
                if labels.len() == MAX_JOBS {
                    return 0;
                }
                labels.push(l);
            }
        }
    }
    if shape == Shape::Gutter {
        let pairs = numbers.len().saturating_sub(1);
        let counting = numbers.windows(2).filter(|w| w[1] == w[0] + 1).count();
        if pairs == 0 || counting * 10 < pairs * 8 {
            return 0;
        }
    }
    n
}

/// Splits interleaved job output into one stream per job; a line without a
/// label continues the job of the line before it. One label: no streams.
fn demultiplex(
    text: &str,
    labels: &[Option<usize>],
    names: &[String],
    work: &mut u64,
) -> Vec<Stream> {
    if names.len() < 2 {
        return Vec::new();
    }
    let new_stream = |label: &str| Stream {
        label: label.to_owned(),
        text: String::new(),
        lines: Vec::new(),
    };
    // Streams in order of first appearance; a preamble before any label is its own.
    let mut streams: Vec<Stream> = Vec::new();
    let mut of_name: Vec<Option<usize>> = vec![None; names.len()];
    let mut current: Option<usize> = None;
    for (i, line) in text.split('\n').enumerate() {
        let idx = match (labels.get(i).copied().flatten(), current) {
            (Some(n), _) => *of_name[n].get_or_insert_with(|| {
                streams.push(new_stream(&names[n]));
                streams.len() - 1
            }),
            (None, Some(c)) => c,
            (None, None) => {
                streams.push(new_stream(""));
                streams.len() - 1
            }
        };
        current = Some(idx);
        let s = &mut streams[idx];
        if !s.lines.is_empty() {
            s.text.push('\n');
        }
        s.text.push_str(line);
        s.lines.push(i + 1);
        *work += line.len() as u64;
    }
    streams
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cleaned(text: &str) -> (String, Vec<Shape>) {
        let c = clean(text);
        (c.text.into_owned(), c.shapes)
    }

    #[test]
    fn github_actions_timestamps_and_markers() {
        let (t, s) = cleaned(
            "2024-05-01T12:00:00.1234567Z ##[group]Run pytest\r\n2024-05-01T12:00:00.2234567Z   File \"a.py\", line 3, in f\r\n2024-05-01T12:00:00.3234567Z\r\n2024-05-01T12:00:01.0000000Z ::endgroup::\r\n",
        );
        assert_eq!(s, [Shape::IsoTimestamp]);
        assert_eq!(
            t,
            "##[group]Run pytest\n  File \"a.py\", line 3, in f\n\n##[endgroup]\n"
        );
    }

    #[test]
    fn each_ci_prefix_shape_is_recognised() {
        let cases: &[(&str, Shape)] = &[
            ("2024-05-01T12:00:00+02:00 x", Shape::IsoTimestamp),
            ("2024-05-01T12:00:00.123456Z 00O x", Shape::IsoTimestamp),
            ("2024-05-01T12:00:00.123456Z 01E+ x", Shape::IsoTimestamp),
            ("[2024-05-01T12:00:00.123Z] x", Shape::BracketedTimestamp),
            ("[2024-05-01 12:00:00] x", Shape::BracketedTimestamp),
            ("12:00:00 x", Shape::ClockTime),
            ("[12:00:00.250] x", Shape::ClockTime),
            ("[    7s] x", Shape::Elapsed),
            ("[ 12.5s] x", Shape::Elapsed),
            ("2016/03/11 13:08:48 x", Shape::GoLog),
            ("2016/03/11 13:08:48.123456 x", Shape::GoLog),
            (
                "2016/03/11 13:08:48 [DEBUG] terraform-provider-digitalocean: x",
                Shape::GoLog,
            ),
            ("[job-1] x", Shape::Job),
            ("web_1     | x", Shape::Job),
        ];
        for (line, shape) in cases {
            let m = shape.matches(line).unwrap_or_else(|| panic!("{line}"));
            let rest = &line[m.len..];
            assert_eq!(rest, "x", "{line:?}");
        }
        for (line, want) in [
            ("  12 | x", "x"),
            ("12 │ x", "x"),
            ("12\tx", "x"),
            ("  7 |", ""),
        ] {
            let m = Shape::Gutter.matches(line).unwrap();
            assert_eq!(&line[m.len..], want, "{line:?}");
        }
        // A level without a plugin name keeps what follows it: `panic: ` stays.
        let line = "2016/03/11 13:08:48 [DEBUG] panic: x";
        let m = Shape::GoLog.matches(line).unwrap();
        assert_eq!(&line[m.len..], "panic: x");
        for not_job in ["[INFO] x", "[ERROR] x", "[100%] x", "[12:00:00] x", "[] x"] {
            assert!(Shape::Job.matches(not_job).is_none(), "{not_job}");
        }
        assert!(
            Shape::Gutter
                .matches("   3: core::panicking::panic")
                .is_none()
        );
    }

    #[test]
    fn a_time_at_the_start_of_one_line_is_not_a_prefix() {
        let text = "Traceback (most recent call last):\n  File \"/app/clock.py\", line 3, in tick\n12:00:00 is not a valid alarm\nValueError: 12:00:00 out of range\n";
        let (t, s) = cleaned(text);
        assert!(s.is_empty());
        assert_eq!(t, text);
    }

    #[test]
    fn obs_and_gutter_layers_stack() {
        let mut text = String::new();
        for i in 1..=20 {
            text += &format!("[   {i}s] {i:>4} | line {i}\n");
        }
        let (t, s) = cleaned(&text);
        assert_eq!(s, [Shape::Elapsed, Shape::Gutter]);
        assert!(t.starts_with("line 1\nline 2\n"), "{t}");
    }

    #[test]
    fn a_quoted_trace_loses_its_quote_markers() {
        let text = "> $ sdkmanager --licenses\n> Exception in thread \"main\" java.lang.Error: x\n> \tat a.B.c(B.java:1)\n>\n";
        let (t, s) = cleaned(text);
        assert_eq!(s, [Shape::Quote]);
        assert_eq!(
            t,
            "$ sdkmanager --licenses\nException in thread \"main\" java.lang.Error: x\n\tat a.B.c(B.java:1)\n\n"
        );
    }

    #[test]
    fn a_block_indented_with_its_header_is_dedented() {
        // A CI annotation: a first line at the margin, then the indented panic.
        let text = "run golangci-lint\n  panic: boom\n\n  goroutine 1 [running]:\n  main.f()\n  \t/src/m.go:4 +0x1\n";
        let (t, s) = cleaned(text);
        assert_eq!(s, [Shape::Indent(2)]);
        assert_eq!(
            t,
            "run golangci-lint\npanic: boom\n\ngoroutine 1 [running]:\nmain.f()\n\t/src/m.go:4 +0x1\n"
        );
        // Frames indented as printed, without an indented header: kept.
        let frames = "    at f (/a.js:1:2)\n    at g (/a.js:3:4)\n";
        assert_eq!(cleaned(frames), (frames.to_owned(), Vec::new()));
        // A Python traceback's own indentation is not a block's.
        let py = "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\n    g()\n  File \"b.py\", line 2, in g\n    h()\n  File \"c.py\", line 3, in h\n    1/0\nZeroDivisionError: division by zero\n";
        assert_eq!(cleaned(py).0, py);
    }

    #[test]
    fn rustc_snippet_gutters_are_not_a_log_gutter() {
        let text = "error[E0425]: cannot find value `x`\n  --> src/a.rs:3:5\n   |\n 3 |     x\n   |     ^\n\nerror: aborting\n";
        assert_eq!(cleaned(text).0, text);
    }

    #[test]
    fn escapes_and_overwrites_are_removed() {
        let (t, _) = cleaned(
            "\x1b[31mFAILED\x1b[0m x\r\n50%\r100%\n\x1b]0;title\x07ok\n\x1b_bk;t=1714564800123\x07+++ tests\nsection_start:1715695205:step_script\r\x1b[0Kheader\n\x1b(Bdone\n",
        );
        assert_eq!(
            t,
            "FAILED x\n100%\nok\n+++ tests\nsection_start:1715695205:step_script\ndone\n"
        );
    }

    #[test]
    fn workflow_commands_become_runner_markers() {
        let (t, _) = cleaned("::group::Run tests\n::error file=a.py,line=3::boom\n::endgroup::\n");
        assert_eq!(t, "##[group]Run tests\n##[error]boom\n##[endgroup]\n");
    }

    #[test]
    fn interleaved_jobs_become_streams_with_their_line_numbers() {
        let text = "[job-1] Traceback (most recent call last):\n[job-2] starting\n[job-1]   File \"a.py\", line 1, in f\n[job-2] panic: boom\n[job-1] ValueError: x\n";
        let c = clean(text);
        assert_eq!(c.shapes, [Shape::Job]);
        assert_eq!(c.streams.len(), 2);
        assert_eq!(c.streams[0].label, "job-1");
        assert_eq!(
            c.streams[0].text,
            "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\nValueError: x\n"
        );
        // The empty last line continues the job before it.
        assert_eq!(c.streams[0].lines, [1, 3, 5, 6]);
        assert_eq!(c.streams[1].text, "starting\npanic: boom");
        assert_eq!(c.streams[1].lines, [2, 4]);
    }

    #[test]
    fn many_distinct_labels_are_ids_not_jobs() {
        let text: String = (0..5000)
            .map(|i| format!("[req-{i:x}] handled in {i} ms\n"))
            .collect();
        let c = clean(&text);
        assert!(c.shapes.is_empty() && c.streams.is_empty());
        // Jobs that only appear after the sample stay within the bound.
        let mut text: String = (0..400)
            .map(|i| format!("[job-{}] step {i}\n", i % 2))
            .collect();
        text += &(0..5000)
            .map(|i| format!("[late-{i}] x\n"))
            .collect::<String>();
        text += &(0..400)
            .map(|i| format!("[job-{}] step {i}\n", i % 2))
            .collect::<String>();
        let c = clean(&text);
        assert!(c.streams.len() <= MAX_JOBS, "{}", c.streams.len());
        assert!(c.work <= 8 * text.len() as u64, "{}", c.work);
    }

    #[test]
    fn maven_levels_are_not_jobs() {
        let text = "[INFO] Building\n[INFO] ---\n[ERROR] Failed\n[INFO] done\n";
        let c = clean(text);
        assert!(c.shapes.is_empty());
        assert_eq!(c.text, text);
    }

    /// 10k-frame traces, long lines, garbage and a large input: linear work.
    #[test]
    fn work_is_linear_in_the_input() {
        let mut trace = String::from("2024-05-01T12:00:00.1Z Traceback (most recent call last):\n");
        for i in 0..10_000 {
            trace +=
                &format!("2024-05-01T12:00:00.1Z   File \"/app/m{i}.py\", line {i}, in f{i}\n");
        }
        let long = format!(
            "[job-1] {}\n[job-2] {}\n",
            "x\x1b[1m".repeat(200_000),
            "\r".repeat(100_000)
        );
        let mut garbage = String::new();
        let mut x = 0x9e3779b97f4a7c15u64;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            garbage.push(char::from_u32((x % 0x2fff) as u32).unwrap_or('\u{1b}'));
        }
        for input in [trace.as_str(), long.as_str(), garbage.as_str()] {
            let c = clean(input);
            assert!(
                c.work <= 8 * input.len() as u64 + 4096,
                "{} for {}",
                c.work,
                input.len()
            );
        }
        assert_eq!(clean(&trace).shapes, [Shape::IsoTimestamp]);
    }

    fn prefix() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            Just(String::new()),
            Just("2024-05-01T12:00:00.1234567Z ".to_owned()),
            Just("2024-05-01T12:00:00.123456Z 00O ".to_owned()),
            Just("[2024-05-01 12:00:00] ".to_owned()),
            Just("12:00:00 ".to_owned()),
            Just("[    7s] ".to_owned()),
            Just("2016/03/11 13:08:48 [DEBUG] plugin-x: ".to_owned()),
            Just("   12 | ".to_owned()),
            Just("[job-1] ".to_owned()),
            Just("[job-2] ".to_owned()),
            Just("web_1  | ".to_owned()),
            Just("> ".to_owned()),
            Just("\x1b[31m".to_owned()),
            Just("\x1b_bk;t=1714564800123\x07".to_owned()),
            "[\\[\\]0-9:TZ. |>a-z\x1b\r-]{0,14}",
        ]
    }

    fn body() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            Just("Traceback (most recent call last):".to_owned()),
            Just("  File \"/app/a.py\", line 3, in f".to_owned()),
            Just("ValueError: x".to_owned()),
            Just("panic: boom".to_owned()),
            Just("goroutine 1 [running]:".to_owned()),
            Just("\tat a.B.c(B.java:1)".to_owned()),
            Just("thread 'main' panicked at src/main.rs:2:5:".to_owned()),
            Just("##[group]Run pytest".to_owned()),
            Just("::endgroup::".to_owned()),
            Just("section_start:1715695205:step\r\x1b[0Kheader".to_owned()),
            ".{0,40}",
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 96, ..Default::default() })]

        /// Any mix of prefixes, escapes, line ends and interleaved jobs:
        /// no panic, linear work, every stream line mapped to an input line.
        #[test]
        fn any_prefixed_log_is_cleaned_in_linear_work(
            lines in proptest::collection::vec((prefix(), body(), 0..3usize), 0..80),
        ) {
            let mut text = String::new();
            for (p, b, end) in &lines {
                text.push_str(p);
                text.push_str(b);
                text.push_str(["\n", "\r\n", "\r"][*end]);
            }
            // Linear in the input, plus detection's fixed cost: each layer
            // tries every shape on at most 64 bytes of each sampled line.
            let detection = (2 * SAMPLE_LINES * MAX_PREFIX * Shape::ALL.len() * (MAX_LAYERS + 1)) as u64;
            let c = clean(&text);
            proptest::prop_assert!(c.work <= 8 * text.len() as u64 + detection, "{} for {}", c.work, text.len());
            let input_lines = text.split('\n').count();
            for s in &c.streams {
                proptest::prop_assert_eq!(s.lines.len(), s.text.split('\n').count());
                proptest::prop_assert!(s.lines.iter().all(|&l| l >= 1 && l <= input_lines), "{:?}", s.lines);
            }
            // Cleaning what is clean removes no more prefixes.
            let again = clean(&c.text);
            proptest::prop_assert!(again.work <= 8 * c.text.len() as u64 + detection);
        }
    }

    #[test]
    fn a_hundred_megabytes_is_cleaned_in_linear_work() {
        let line = "2024-05-01T12:00:00.1234567Z [job-1] \x1b[32mok\x1b[0m step 12 of 99 done\r\n";
        let big = line.repeat(100 * 1024 * 1024 / line.len());
        let c = clean(&big);
        assert_eq!(c.shapes, [Shape::IsoTimestamp, Shape::Job]);
        assert!(c.work <= 8 * big.len() as u64, "{}", c.work);
        assert!(c.text.starts_with("ok step 12 of 99 done\n"));
    }
}
