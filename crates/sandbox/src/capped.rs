//! Bounded capture of a command's combined output, for both sandboxes: the
//! head and the tail are kept, the middle is counted and dropped, so a
//! chatty test cannot exhaust the service's memory. Renders exactly like
//! [`tracelab_domain::experiment::trim_output`] of the whole output.

use std::collections::VecDeque;
use tracelab_domain::experiment::trim_output;

#[derive(Debug)]
pub struct CappedOutput {
    limit: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: usize,
}

/// Bytes kept beyond half the limit on each side, so a cut can move to a
/// character boundary without losing what the limit promises.
const SLACK: usize = 4;

impl CappedOutput {
    /// Keeps what `trim_output(_, limit)` of the whole output would keep.
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len();
        let head_room = self
            .limit
            .saturating_add(SLACK)
            .saturating_sub(self.head.len());
        let take = head_room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..take]);
        bytes = &bytes[take..];
        if bytes.is_empty() {
            return;
        }
        let keep = self.limit / 2 + SLACK;
        if bytes.len() >= keep {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - keep..]);
        } else {
            self.tail.extend(bytes);
            let excess = self.tail.len().saturating_sub(keep);
            self.tail.drain(..excess);
        }
    }

    /// The output as text (invalid UTF-8 replaced), trimmed to the limit.
    pub fn into_string(self) -> String {
        if self.total == self.head.len() + self.tail.len() {
            // Nothing was dropped: trim exactly as the domain does.
            let mut all = self.head;
            all.extend(self.tail);
            return trim_output(&String::from_utf8_lossy(&all), self.limit);
        }
        // Something was dropped, so the head holds `limit + SLACK` bytes and
        // the tail the last `limit / 2 + SLACK`: both cuts fit.
        let half = self.limit / 2;
        let mut head_end = half.min(self.head.len());
        while head_end > 0 && is_continuation(self.head[head_end]) {
            head_end -= 1;
        }
        let tail: Vec<u8> = self.tail.into_iter().collect();
        let mut tail_start = tail.len().saturating_sub(half);
        while tail_start < tail.len() && is_continuation(tail[tail_start]) {
            tail_start += 1;
        }
        let cut = self.total - head_end - (tail.len() - tail_start);
        format!(
            "{}\n[... {cut} bytes trimmed ...]\n{}",
            String::from_utf8_lossy(&self.head[..head_end]),
            String::from_utf8_lossy(&tail[tail_start..])
        )
    }
}

fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

#[cfg(test)]
mod tests {
    use super::*;

    fn captured(chunks: &[&[u8]], limit: usize) -> String {
        let mut capture = CappedOutput::new(limit);
        for chunk in chunks {
            capture.push(chunk);
        }
        capture.into_string()
    }

    #[test]
    fn matches_the_domain_trimming() {
        let text = format!("{}é{}", "a".repeat(100), "b".repeat(100));
        let long = text.as_bytes();
        // Chunks may split a character: the stream does not care.
        let cases: Vec<(Vec<&[u8]>, usize)> = vec![
            (vec![b"short"], 50),
            (vec![b""], 50),
            (vec![long], 50),
            (vec![&long[..30], &long[30..101], &long[101..]], 50),
            (vec![long], 201),
            (vec![long], 7),
            (vec![long], 0),
        ];
        for (chunks, limit) in cases {
            let whole = String::from_utf8(chunks.concat()).unwrap();
            assert_eq!(
                captured(&chunks, limit),
                trim_output(&whole, limit),
                "limit {limit}"
            );
        }
    }

    #[test]
    fn keeps_memory_bounded_over_many_chunks() {
        let mut capture = CappedOutput::new(100);
        for i in 0..10_000 {
            capture.push(format!("line {i}\n").as_bytes());
        }
        assert!(capture.head.len() <= 104 && capture.tail.len() <= 54);
        let text = capture.into_string();
        assert!(text.starts_with("line 0\n"));
        assert!(text.ends_with("line 9999\n"));
        assert!(text.contains("bytes trimmed"));
    }

    #[test]
    fn an_unbounded_limit_keeps_everything() {
        assert_eq!(captured(&[b"a", b"b"], usize::MAX), "ab");
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        let mut capture = CappedOutput::new(100);
        capture.push(&[0x66, 0xFF, 0x6F]);
        assert_eq!(capture.into_string(), "f\u{FFFD}o");
    }
}
