//! Turning untrusted bytes into bounded text: size cap (head + tail),
//! binary detection, lossy UTF-8, line cap.

use crate::model::{Diagnostic, Limits};
use std::io::Read;

/// Input after the size cap: the bytes kept and how many were dropped.
#[derive(Debug, Clone, Default)]
pub struct BoundedInput {
    /// First half of the kept bytes, then (if truncated) the last half.
    pub bytes: Vec<u8>,
    /// Bytes dropped from the middle.
    pub dropped: u64,
}

/// Reads at most `limits.max_input_bytes` of a stream into memory, keeping
/// the first half and the last half (a failing CI step is usually near the
/// end of a log, a test report's header near the start). Memory stays
/// bounded by the cap whatever the stream's length.
pub fn read_bounded<R: Read>(mut reader: R, limits: &Limits) -> std::io::Result<BoundedInput> {
    let cap = limits.max_input_bytes.max(2);
    let head_cap = cap / 2;
    let tail_cap = cap - head_cap;
    let mut head = Vec::with_capacity(head_cap.min(1 << 20));
    let mut buf = vec![0u8; 64 * 1024];
    // Fill the head.
    while head.len() < head_cap {
        let want = (head_cap - head.len()).min(buf.len());
        let n = reader.read(&mut buf[..want])?;
        if n == 0 {
            return Ok(BoundedInput {
                bytes: head,
                dropped: 0,
            });
        }
        head.extend_from_slice(&buf[..n]);
    }
    // The tail is a window over the rest; compact when it doubles.
    let mut tail: Vec<u8> = Vec::new();
    let mut dropped: u64 = 0;
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        tail.extend_from_slice(&buf[..n]);
        if tail.len() > 2 * tail_cap {
            let excess = tail.len() - tail_cap;
            tail.drain(..excess);
            dropped += excess as u64;
        }
    }
    if tail.len() > tail_cap {
        let excess = tail.len() - tail_cap;
        tail.drain(..excess);
        dropped += excess as u64;
    }
    head.extend_from_slice(&tail);
    Ok(BoundedInput {
        bytes: head,
        dropped,
    })
}

/// The same cap applied to bytes already in memory (borrowing when nothing is cut).
pub(crate) fn cap_slice<'a>(input: &'a [u8], limits: &Limits) -> (std::borrow::Cow<'a, [u8]>, u64) {
    let cap = limits.max_input_bytes.max(2);
    if input.len() <= cap {
        return (std::borrow::Cow::Borrowed(input), 0);
    }
    let head = cap / 2;
    let tail = cap - head;
    let mut v = Vec::with_capacity(cap + 1);
    v.extend_from_slice(&input[..head]);
    // A line break marks the seam so the two halves are not glued into one line.
    v.push(b'\n');
    v.extend_from_slice(&input[input.len() - tail..]);
    (std::borrow::Cow::Owned(v), (input.len() - cap) as u64)
}

/// Whether bytes look like binary data rather than text: NUL bytes, or many
/// control characters, or mostly invalid UTF-8 in the first 8 KiB.
pub(crate) fn looks_binary(bytes: &[u8]) -> Option<String> {
    let sample = &bytes[..bytes.len().min(8192)];
    if sample.is_empty() {
        return None;
    }
    // UTF-16 text has NULs too; call it what it is.
    if sample.starts_with(&[0xFF, 0xFE]) || sample.starts_with(&[0xFE, 0xFF]) {
        return Some("input looks like UTF-16 text; convert it to UTF-8".into());
    }
    let nul = sample.iter().filter(|&&b| b == 0).count();
    if nul > 0 {
        return Some(format!(
            "input contains {nul} NUL bytes in its first {} bytes; it looks like binary data",
            sample.len()
        ));
    }
    let control = sample
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t' | 0x1b | 0x0c))
        .count();
    let invalid = invalid_utf8_bytes(sample);
    let bad = control + invalid;
    if bad * 10 > sample.len() {
        return Some(format!(
            "{bad} of the first {} bytes are control characters or invalid UTF-8; it looks like binary data",
            sample.len()
        ));
    }
    None
}

fn invalid_utf8_bytes(mut s: &[u8]) -> usize {
    let mut bad = 0;
    loop {
        match std::str::from_utf8(s) {
            Ok(_) => return bad,
            Err(e) => {
                let skip = e.error_len().unwrap_or(s.len() - e.valid_up_to());
                bad += skip;
                s = &s[e.valid_up_to() + skip..];
            }
        }
    }
}

/// Lossy UTF-8 text with the BOM removed; escapes, CRs and line prefixes
/// are the prefix layer's (`crate::prefix`).
pub(crate) fn to_text(bytes: &[u8], diags: &mut Vec<Diagnostic>) -> String {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match String::from_utf8_lossy(bytes) {
        std::borrow::Cow::Borrowed(s) => s.to_owned(),
        std::borrow::Cow::Owned(s) => {
            let n = s.matches('\u{FFFD}').count();
            diags.push(Diagnostic::warning(
                "invalid_utf8",
                format!("input is not valid UTF-8; {n} invalid sequences replaced with U+FFFD"),
            ));
            s
        }
    }
}

/// Splits text into lines (`\n`, `\r\n`; a lone `\r` as used by progress bars
/// keeps only the last overwrite), cutting lines longer than the cap.
pub(crate) fn lines<'a>(
    text: &'a str,
    limits: &Limits,
    diags: &mut Vec<Diagnostic>,
) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut cut = 0usize;
    for line in text.split('\n') {
        let mut line = line.strip_suffix('\r').unwrap_or(line);
        if let Some(i) = line.rfind('\r') {
            line = &line[i + 1..];
        }
        if line.len() > limits.max_line_bytes {
            cut += 1;
            line = truncate_str(line, limits.max_line_bytes);
        }
        out.push(line);
    }
    if out.last() == Some(&"") {
        out.pop();
    }
    if cut > 0 {
        diags.push(Diagnostic::warning(
            "line_truncated",
            format!(
                "{cut} lines longer than {} bytes were cut",
                limits.max_line_bytes
            ),
        ));
    }
    out
}

/// The longest prefix of `s` of at most `max` bytes ending on a char boundary.
pub(crate) fn truncate_str(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_bounded_keeps_head_and_tail() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let limits = Limits {
            max_input_bytes: 1000,
            ..Limits::default()
        };
        let got = read_bounded(&data[..], &limits).unwrap();
        assert_eq!(got.bytes.len(), 1000);
        assert_eq!(got.dropped, 99_000);
        assert_eq!(&got.bytes[..500], &data[..500]);
        assert_eq!(&got.bytes[500..], &data[data.len() - 500..]);
        let small = read_bounded(&data[..10], &limits).unwrap();
        assert_eq!(small.bytes, &data[..10]);
        assert_eq!(small.dropped, 0);
    }

    #[test]
    fn binary_detection() {
        assert!(looks_binary(b"\x7fELF\x02\x01\x01\0\0\0\0").is_some());
        assert!(looks_binary("plain text\nwith lines\n".as_bytes()).is_none());
        assert!(looks_binary("caf\u{e9} na\u{ef}ve \u{1F600}".as_bytes()).is_none());
    }

    #[test]
    fn cr_overwrites_keep_the_last() {
        let mut d = Vec::new();
        let l = lines("FAILED x\r\n50%\r100%\n", &Limits::default(), &mut d);
        assert_eq!(l, vec!["FAILED x", "100%"]);
    }
}
