//! A prompt section with a size limit. The sections built from what the
//! repository and the store know (the call neighbourhood, past fixes) can
//! grow without bound; each gets a budget in bytes, and what does not fit
//! is left out with a marker saying how much, so the model knows the list
//! is cut and the token budget stays predictable.

/// Text appended piece by piece up to `limit` bytes.
pub(super) struct Bounded {
    text: String,
    limit: usize,
    left_out: usize,
}

impl Bounded {
    pub(super) fn new(limit: usize) -> Self {
        Bounded {
            text: String::new(),
            limit,
            left_out: 0,
        }
    }

    /// Appends `piece` when it fits; once one piece did not fit, the later
    /// ones are only counted (the list stays in its order of relevance).
    /// The first piece is cut at the limit rather than dropped, so a single
    /// long entry still shows its beginning.
    pub(super) fn push(&mut self, piece: &str) {
        if self.left_out > 0 {
            self.left_out += 1;
            return;
        }
        if self.text.len() + piece.len() <= self.limit {
            self.text.push_str(piece);
            return;
        }
        if self.text.is_empty() {
            let cut = super::head(piece, self.limit);
            self.text.push_str(cut);
            // Close a code fence the cut left open, so the marker is prose.
            if cut.matches("```").count() % 2 == 1 {
                self.text.push_str("\n```\n");
            }
        }
        self.left_out = 1;
    }

    pub(super) fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The text, with the marker when something was cut or left out.
    pub(super) fn finish(mut self, what: &str) -> String {
        if self.left_out > 0 {
            self.text.push_str(&format!(
                "\n[{what}: {} more entr{} left out or cut here: this section's budget is {} bytes]\n",
                self.left_out,
                if self.left_out == 1 { "y" } else { "ies" },
                self.limit
            ));
        }
        self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_past_the_limit_are_left_out_and_counted() {
        let mut b = Bounded::new(10);
        b.push("abcd\n");
        b.push("efgh\n");
        b.push("ijkl\n");
        b.push("mn\n");
        let text = b.finish("callers");
        assert!(text.starts_with("abcd\nefgh\n"), "{text}");
        assert!(!text.contains("ijkl") && !text.contains("mn"), "{text}");
        assert!(text.contains("[callers: 2 more entries"), "{text}");
        assert!(text.contains("budget is 10 bytes"), "{text}");

        let mut fits = Bounded::new(100);
        fits.push("short\n");
        assert_eq!(fits.finish("x"), "short\n");
    }

    #[test]
    fn a_first_piece_longer_than_the_limit_is_cut() {
        let mut b = Bounded::new(8);
        b.push("```\n0123456789abcdef");
        b.push("next");
        let text = b.finish("past fixes");
        assert!(text.starts_with("```\n0123\n```\n"), "{text}");
        assert!(!text.contains("4567") && !text.contains("next"), "{text}");
        assert!(text.contains("2 more entries"), "{text}");
        let mut one = Bounded::new(4);
        one.push("abcdef");
        assert!(one.finish("x").contains("[x: 1 more entry"));
    }
}
