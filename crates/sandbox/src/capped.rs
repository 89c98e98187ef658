//! Output capture that keeps the head and the tail within a byte budget.

use std::collections::VecDeque;

/// Keeps the first `limit / 2` bytes and the last `limit / 2` bytes written.
#[derive(Debug)]
pub struct CappedOutput {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    half: usize,
    dropped: u64,
}

impl CappedOutput {
    pub fn new(limit: usize) -> Self {
        let half = (limit / 2).max(1);
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            half,
            dropped: 0,
        }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        if self.head.len() < self.half {
            let take = (self.half - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.len() >= self.half {
            self.dropped += (self.tail.len() + bytes.len() - self.half) as u64;
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.half..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.half);
        self.tail.drain(..overflow);
        self.dropped += overflow as u64;
        self.tail.extend(bytes);
    }

    /// The captured text, lossily decoded, with a marker where bytes were dropped.
    pub fn into_string(self) -> String {
        let head = String::from_utf8_lossy(&self.head).into_owned();
        let tail: Vec<u8> = self.tail.into_iter().collect();
        let tail = String::from_utf8_lossy(&tail);
        if self.dropped == 0 {
            format!("{head}{tail}")
        } else {
            format!("{head}\n[... {} bytes dropped ...]\n{tail}", self.dropped)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let mut out = CappedOutput::new(100);
        out.push(b"hello ");
        out.push(b"world");
        assert_eq!(out.into_string(), "hello world");
    }

    #[test]
    fn large_output_keeps_head_and_tail() {
        let mut out = CappedOutput::new(10);
        for chunk in [b"abcde".as_slice(), b"fghij", b"klm", b"nopqrstuvwxyz"] {
            out.push(chunk);
        }
        assert_eq!(
            out.into_string(),
            "abcde\n[... 16 bytes dropped ...]\nvwxyz"
        );
    }
}
