//! Source locations named outside any stack trace: a linter's or a
//! compiler's `path:line: E501 …` / `path:line:col: error …`, a test's own
//! `calc_test.go:12: got 1`, a bare `src/app.js:40` pasted into a ticket.
//!
//! The trace parsers read frames only inside a trace they recognise, which
//! is right for a failure's identity (signatures, groups) but loses what a
//! lint step or a compiler names: the lines a repair most likely touches.
//! Readers that want those lines too (the code index's `locate`, the
//! repair-experience mining) add them to a run's frames with
//! [`with_locations`]; nothing else in this crate reads them.

use crate::model::Frame;
use crate::normalize::Normalizer;
use regex::Regex;
use std::sync::LazyLock;
use tracelab_domain::Language;

/// `path.ext:line`, the extension one of a source language's, the path
/// starting after a space or punctuation (not inside a longer word).
static LOCATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?:^|[^\w./-])(/?(?:[\w.-]+/)*[\w.-]*\w\.(?:py|pyi|rs|go|js|mjs|cjs|jsx|ts|tsx|java|kt|rb|c|cc|cpp|h|hpp)):(\d+)\b",
    )
    .expect("location regex")
});

/// Every `path.ext:line` the text names, in order of appearance, each once,
/// as frames (no function; paths normalised as the trace parsers normalise
/// theirs, library paths marked not in-app).
pub fn read(text: &str) -> Vec<Frame> {
    let normalizer = Normalizer::default();
    let mut out: Vec<Frame> = Vec::new();
    for c in LOCATION.captures_iter(text) {
        let Ok(line) = c[2].parse::<u32>() else {
            continue;
        };
        let path = c[1].trim_start_matches("./");
        let mut frame = Frame {
            file: Some(path.to_string()),
            function: None,
            line: Some(line),
            in_app: true,
        };
        let language = Language::from_path(path).unwrap_or(Language::Unknown);
        normalizer.frame(&mut frame, language);
        if !out
            .iter()
            .any(|f| f.file == frame.file && f.line == frame.line)
        {
            out.push(frame);
        }
    }
    out
}

/// `frames` (innermost last) after the locations of `text` that none of
/// them names: a location is weaker evidence than a trace's own frame, so
/// it goes on the outermost end, where rankers that start from the
/// innermost frame weigh it least.
pub fn with_locations(frames: Vec<Frame>, text: &str) -> Vec<Frame> {
    let mut out: Vec<Frame> = read(text)
        .into_iter()
        .filter(|l| !frames.iter().any(|f| same_place(f, l)))
        .collect();
    out.extend(frames);
    out
}

/// The same file (one path a component-wise suffix of the other: a trace
/// may name it absolutely) at the same line.
fn same_place(a: &Frame, b: &Frame) -> bool {
    let (Some(x), Some(y)) = (a.file.as_deref(), b.file.as_deref()) else {
        return false;
    };
    let suffix = |long: &str, short: &str| {
        long == short || long.ends_with(&format!("/{}", short.trim_start_matches('/')))
    };
    a.line == b.line && (suffix(x, y) || suffix(y, x))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(file, line, in_app)` of what [`read`] finds.
    fn check(text: &str, expected: &[(&str, u32, bool)]) {
        let got: Vec<(String, u32, bool)> = read(text)
            .into_iter()
            .map(|f| (f.file.unwrap_or_default(), f.line.unwrap_or(0), f.in_app))
            .collect();
        let want: Vec<(String, u32, bool)> = expected
            .iter()
            .map(|(p, l, a)| (p.to_string(), *l, *a))
            .collect();
        assert_eq!(got, want, "{text}");
    }

    #[test]
    fn lint_and_compiler_lines() {
        check(
            "pkg/more.py:12: L001 line too long (120 > 100)\n./pkg/more.py:30:5: E501 line too long\nsrc/main.c:7:3: error: expected ';'\n",
            &[
                ("pkg/more.py", 12, true),
                ("pkg/more.py", 30, true),
                ("src/main.c", 7, true),
            ],
        );
    }

    #[test]
    fn each_place_once_and_libraries_marked() {
        check(
            "  at src/app.js:40:2\nsrc/app.js:40 again\n/usr/lib/python3.11/json/decoder.py:355: in raw_decode\n",
            &[("src/app.js", 40, true), ("json/decoder.py", 355, false)],
        );
    }

    #[test]
    fn not_urls_numbers_or_other_files() {
        check(
            "GET /a.py 200\nratio 0.5:3\nv1.2:3\nci/settings.ini:4: bad value\nREADME.md:10\n",
            &[],
        );
    }

    #[test]
    fn locations_go_before_the_frames_they_do_not_repeat() {
        let frame = Frame {
            file: Some("pkg/m.py".into()),
            function: Some("f".into()),
            line: Some(3),
            in_app: true,
        };
        let out = with_locations(
            vec![frame.clone()],
            "/ci/w/pkg/m.py:3: AssertionError\ntools/lint.py:9: L002\n",
        );
        let files: Vec<_> = out.iter().map(|f| (f.file.clone(), f.line)).collect();
        assert_eq!(
            files,
            vec![
                (Some("tools/lint.py".to_string()), Some(9)),
                (Some("pkg/m.py".to_string()), Some(3))
            ]
        );
    }
}
