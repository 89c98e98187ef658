//! The per-line prefix shapes and their byte matchers: timestamps, clock
//! times, elapsed times, Go log headers, gutters, job labels, quotes.

#[cfg(doc)]
use super::detection::indent;
use super::{MAX_LABEL, MAX_PREFIX};

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
    pub(super) const ALL: [Shape; 8] = [
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
    pub(super) fn matches(self, line: &str) -> Option<Match<'_>> {
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

pub(super) struct Match<'a> {
    pub(super) len: usize,
    pub(super) label: Option<&'a str>,
    pub(super) number: Option<u64>,
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
