//! Line-level revert: undo a culprit's edits to one file on a later
//! revision by finding the text the culprit wrote, not the lines around it.
//!
//! `git apply -3` replays a hunk only where its context still matches, and a
//! symbol-level restore needs a definition the parser can see. Neither works
//! when later commits edited the lines next to the culprit's change, or moved
//! it inside a macro. But the text the culprit wrote often survives: the
//! `b'+'` it put where `b'-'` was is still there after the surrounding
//! statement was rewritten. So, change by change (a diff without context):
//!
//! 1. the culprit's whole block of lines is found at the current revision,
//!    unique or the one nearest to where the earlier changes put it;
//! 2. otherwise, for a change of one line into one line, the edited words
//!    are found: the smallest run of the culprit's line around the edit that
//!    occurs exactly once in the current file, grown a token at a time;
//! 3. otherwise the file is not reverted, with the reason.
//!
//! A change that is found nowhere, or in several places that nothing tells
//! apart, is refused rather than guessed. Whatever is placed is still only a
//! candidate: the verification contract judges it like any other patch.
//!
//! Pure: the caller reads the three versions and writes the result.

use similar::{DiffOp, TextDiff};

/// One change put back, for the reviewer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// 1-based line of the current file where the change was undone.
    pub line: usize,
    /// How it was found.
    pub how: PlacedBy,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlacedBy {
    /// The culprit's lines, verbatim.
    Lines,
    /// Only the edited words, `from` (the culprit's) back to `to`.
    Words { from: String, to: String },
}

/// The current file with the culprit's changes undone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineRevert {
    pub content: String,
    pub placements: Vec<Placement>,
}

/// Undoes, in `current`, each change that turned `before` into `culprit`.
/// `Err` names the first change that could not be placed; nothing is
/// reverted then, because half a revert is a different patch.
pub fn revert_lines(
    before: &str,
    culprit: &str,
    current: &str,
) -> std::result::Result<LineRevert, String> {
    let culprit_lines: Vec<&str> = culprit.split_inclusive('\n').collect();
    let before_lines: Vec<&str> = before.split_inclusive('\n').collect();
    let current_lines: Vec<&str> = current.split_inclusive('\n').collect();
    let diff = TextDiff::from_slices(&culprit_lines, &before_lines);
    // Edits on the current file's lines: (start, end, replacement).
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut placements = Vec::new();
    // Where the culprit's line 0 sits in the current file, as learnt from
    // the last change placed.
    let mut drift: isize = 0;
    for op in diff.ops() {
        let (old, new) = match *op {
            DiffOp::Equal { .. } => continue,
            DiffOp::Delete {
                old_index, old_len, ..
            } => (old_index..old_index + old_len, 0..0),
            DiffOp::Insert {
                old_index,
                new_index,
                new_len,
            } => (old_index..old_index, new_index..new_index + new_len),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => (
                old_index..old_index + old_len,
                new_index..new_index + new_len,
            ),
        };
        let wanted = culprit_lines[old.clone()].concat();
        let restored = before_lines[new.clone()].concat();
        let expected = (old.start as isize + drift).max(0) as usize;
        let at = if old.is_empty() {
            insertion_point(&culprit_lines, old.start, &current_lines, expected)
        } else {
            block_position(&culprit_lines[old.clone()], &current_lines, expected)
        };
        match at {
            Some(start) => {
                let end = start + old.len();
                drift = start as isize - old.start as isize;
                edits.push((start, end, restored));
                placements.push(Placement {
                    line: start + 1,
                    how: PlacedBy::Lines,
                });
            }
            None if old.len() == 1 && new.len() == 1 => {
                let (line, from, to) =
                    place_words(culprit_lines[old.start], before_lines[new.start], current)
                        .ok_or_else(|| {
                            format!(
                                "the culprit's line {} (`{}`) is not in the current file, and its edited words are not there exactly once",
                                old.start + 1,
                                wanted.trim()
                            )
                        })?;
                let text = current_lines[line].replacen(&from, &to, 1);
                edits.push((line, line + 1, text));
                placements.push(Placement {
                    line: line + 1,
                    how: PlacedBy::Words { from, to },
                });
            }
            None => {
                return Err(format!(
                    "the culprit's lines {}-{} are not in the current file",
                    old.start + 1,
                    old.end.max(old.start + 1)
                ));
            }
        }
    }
    if edits.is_empty() {
        return Err("the culprit did not change this file's lines".into());
    }
    edits.sort_by_key(|e| (e.0, e.1));
    // The same edit found twice: the culprit made one change in two places
    // that later work merged into one.
    edits.dedup();
    placements.sort_by_key(|p| p.line);
    placements.dedup();
    if edits.windows(2).any(|w| w[0].1 > w[1].0) {
        return Err("two of the culprit's changes land on the same lines".into());
    }
    let mut out = String::with_capacity(current.len());
    let mut next = 0;
    for (start, end, text) in &edits {
        out.extend(current_lines[next..*start].iter().copied());
        out.push_str(text);
        next = *end;
    }
    out.extend(current_lines[next..].iter().copied());
    Ok(LineRevert {
        content: out,
        placements,
    })
}

/// Where `block` occurs in `lines`: the only place, or the one nearest to
/// `expected` when it is strictly nearer than every other.
fn block_position(block: &[&str], lines: &[&str], expected: usize) -> Option<usize> {
    if block.len() > lines.len() {
        return None;
    }
    let hits: Vec<usize> = (0..=lines.len() - block.len())
        .filter(|&i| lines[i..i + block.len()] == *block)
        .collect();
    // A block of nothing but blank lines and braces says nothing about where it is.
    if hits.len() > 1 && block.iter().all(|l| l.trim().len() < 4) {
        return None;
    }
    nearest(&hits, expected)
}

/// Where lines the culprit deleted go back: between the two lines that
/// surrounded them in the culprit's version (the file's start or end
/// standing in for a missing neighbour).
fn insertion_point(culprit: &[&str], at: usize, lines: &[&str], expected: usize) -> Option<usize> {
    let above = at.checked_sub(1).map(|i| culprit[i]);
    let below = culprit.get(at).copied();
    let hits: Vec<usize> = (0..=lines.len())
        .filter(|&i| {
            let above_ok = match above {
                Some(a) => i > 0 && lines[i - 1] == a,
                None => i == 0,
            };
            let below_ok = match below {
                Some(b) => lines.get(i) == Some(&b),
                None => i == lines.len(),
            };
            above_ok && below_ok
        })
        .collect();
    nearest(&hits, expected)
}

fn nearest(hits: &[usize], expected: usize) -> Option<usize> {
    match hits {
        [] => None,
        [only] => Some(*only),
        _ => {
            let distance = |&i: &usize| i.abs_diff(expected);
            let best = hits.iter().map(distance).min()?;
            let mut at_best = hits.iter().filter(|i| distance(i) == best);
            let first = *at_best.next()?;
            at_best.next().is_none().then_some(first)
        }
    }
}

/// Splits a line into tokens: runs of word characters, runs of whitespace,
/// and single other characters.
fn tokens(line: &str) -> Vec<&str> {
    let class = |c: char| {
        if c.is_alphanumeric() || c == '_' {
            0
        } else if c.is_whitespace() {
            1
        } else {
            2
        }
    };
    let mut out = Vec::new();
    let mut start = 0;
    let mut prev: Option<(usize, char)> = None;
    for (i, c) in line.char_indices() {
        if let Some((_, p)) = prev
            && (class(p) != class(c) || class(c) == 2)
        {
            out.push(&line[start..i]);
            start = i;
        }
        prev = Some((i, c));
    }
    if start < line.len() {
        out.push(&line[start..]);
    }
    out
}

/// The edit between one culprit line and the line it replaced, as the
/// smallest run of the culprit's tokens around it that occurs exactly once
/// in `current`: `(line index in current, that run, the run as it was)`.
fn place_words(culprit: &str, before: &str, current: &str) -> Option<(usize, String, String)> {
    let culprit = culprit.trim_end_matches(['\n', '\r']);
    let before = before.trim_end_matches(['\n', '\r']);
    let ct = tokens(culprit);
    let bt = tokens(before);
    let prefix = ct.iter().zip(&bt).take_while(|(a, b)| a == b).count();
    let max_suffix = ct.len().min(bt.len()) - prefix;
    let suffix = ct
        .iter()
        .rev()
        .zip(bt.iter().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    // The changed tokens, at least one on the culprit's side.
    let (mut lo, mut hi) = (prefix, ct.len() - suffix);
    if lo == hi {
        if lo > 0 {
            lo -= 1;
        } else if hi < ct.len() {
            hi += 1;
        } else {
            return None;
        }
    }
    // The same run on the old line: the tokens left of `lo` and right of
    // `hi` are shared, so the old words are what lies between them there.
    let before_run = |lo: usize, hi: usize| bt[lo..bt.len() - (ct.len() - hi)].concat();
    loop {
        let run = ct[lo..hi].concat();
        if !run.trim().is_empty() {
            let hits: Vec<(usize, usize)> = current
                .split_inclusive('\n')
                .enumerate()
                .flat_map(|(n, line)| line.match_indices(&run).map(move |(i, _)| (n, i)))
                .collect();
            match hits.len() {
                0 => return None,
                1 => return Some((hits[0].0, run, before_run(lo, hi))),
                _ => {}
            }
        }
        // Grow by one token on each side that has one, skipping whitespace.
        if lo == 0 && hi == ct.len() {
            return None;
        }
        if lo > 0 {
            lo -= 1;
            if lo > 0 && ct[lo].trim().is_empty() {
                lo -= 1;
            }
        }
        if hi < ct.len() {
            hi += 1;
            if hi < ct.len() && ct[hi - 1].trim().is_empty() {
                hi += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "fn sign(n: i32) -> u8 {\n    if n < 0 {\n        b'-'\n    } else {\n        b' '\n    }\n}\n\nfn other() {}\n";

    #[test]
    fn the_culprits_lines_are_put_back_where_later_commits_moved_them() {
        let culprit = BEFORE.replace("b'-'", "b'+'");
        // Later work added lines above and edited the neighbouring line.
        let current = format!(
            "// header\n{}",
            culprit.replace("    } else {", "    } else { // note")
        );
        let r = revert_lines(BEFORE, &culprit, &current).unwrap();
        assert_eq!(
            r.content,
            format!(
                "// header\n{}",
                BEFORE.replace("    } else {", "    } else { // note")
            )
        );
        assert_eq!(
            r.placements,
            vec![Placement {
                line: 4,
                how: PlacedBy::Lines
            }]
        );
    }

    #[test]
    fn edited_words_are_found_when_the_line_around_them_was_rewritten() {
        let culprit = "    unsafe {\n        *buf_ptr.add(curr) = b'+';\n    }\n";
        let before = "    unsafe {\n        *buf_ptr.add(curr) = b'-';\n    }\n";
        let current =
            "    if neg {\n        buf[offset].write(b'+');\n    }\n    buf[0].write(b'0');\n";
        let r = revert_lines(before, culprit, current).unwrap();
        assert_eq!(
            r.content,
            "    if neg {\n        buf[offset].write(b'-');\n    }\n    buf[0].write(b'0');\n"
        );
        assert_eq!(
            r.placements[0].how,
            PlacedBy::Words {
                from: "+".into(),
                to: "-".into()
            }
        );
    }

    #[test]
    fn words_grow_until_they_are_unique() {
        let before = "    if a < b {\n";
        let culprit = "    if a <= b {\n";
        let current = "x <= y\n    while a <= b {\n";
        let r = revert_lines(before, culprit, current).unwrap();
        assert_eq!(r.content, "x <= y\n    while a < b {\n");
    }

    #[test]
    fn changed_text_found_twice_or_nowhere_is_refused_not_guessed() {
        let before = "x = 1\n";
        let culprit = "x = 2\n";
        // Twice, with nothing around it to tell the places apart.
        assert!(revert_lines(before, culprit, "y = 2\nz = 2\n").is_err());
        // Gone: later work replaced it.
        let err = revert_lines(before, culprit, "x = compute()\n").unwrap_err();
        assert!(err.contains("not in the current file"), "{err}");
    }

    #[test]
    fn deleted_lines_come_back_between_their_old_neighbours() {
        let before = "a\nb\nguard()\nc\n";
        let culprit = "a\nb\nc\n";
        let current = "new\na\nb\nc\nd\n";
        let r = revert_lines(before, culprit, current).unwrap();
        assert_eq!(r.content, "new\na\nb\nguard()\nc\nd\n");
    }

    #[test]
    fn a_nearest_copy_is_taken_only_when_it_is_strictly_nearest() {
        let before = "start\nvalue = compute(1)\nend\n";
        let culprit = "start\nvalue = compute(2)\nend\n";
        // Two copies of the changed line; the one where the culprit put it wins.
        let current = "start\nvalue = compute(2)\nend\n\n\n\n\nvalue = compute(2)\n";
        let r = revert_lines(before, culprit, current).unwrap();
        assert_eq!(r.placements[0].line, 2);
        assert!(r.content.starts_with("start\nvalue = compute(1)\n"));
        assert!(r.content.ends_with("value = compute(2)\n"));
    }

    #[test]
    fn several_changes_are_all_or_nothing() {
        let before = "one = 1\ntwo = 2\n";
        let culprit = "one = 10\n\ntwo = 20\n";
        let current = "one = 10\n\ntwo = 3\n";
        assert!(revert_lines(before, culprit, current).is_err());
    }

    #[test]
    fn one_change_made_twice_and_merged_later_is_undone_once() {
        let before = "a = b'-'\nz\nc = b'-'\n";
        let culprit = "a = b'+'\nz\nc = b'+'\n";
        let current = "write(b'+')\n";
        let r = revert_lines(before, culprit, current).unwrap();
        assert_eq!(r.content, "write(b'-')\n");
        assert_eq!(r.placements.len(), 1);
    }

    #[test]
    fn tokens_split_words_spaces_and_punctuation() {
        assert_eq!(
            tokens("a_b  += c1;"),
            vec!["a_b", "  ", "+", "=", " ", "c1", ";"]
        );
    }
}
