//! A metrics crate in Rust (cargo test output).

use super::{Case, Project};

pub const PROJECT: Project = Project {
    name: "rs-meter",
    files: &[
        (
            "Cargo.toml",
            "[package]\nname = \"meter\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        (
            "src/lib.rs",
            "pub mod parse;\npub mod stats;\npub mod window;\n",
        ),
        (
            "src/window.rs",
            r#"pub struct Window {
    size: usize,
    values: Vec<u64>,
}

impl Window {
    pub fn new(size: usize) -> Self {
        Window { size, values: Vec::new() }
    }

    pub fn push(&mut self, v: u64) {
        self.values.push(v);
        if self.values.len() > self.size {
            self.values.remove(0);
        }
    }

    pub fn values(&self) -> &[u64] {
        &self.values
    }

    pub fn last(&self) -> Option<u64> {
        self.values.last().copied()
    }
}
"#,
        ),
        (
            "src/stats.rs",
            r#"use crate::window::Window;

pub struct Summary {
    pub min: u64,
    pub max: u64,
    pub mean: u64,
}

pub fn mean(values: &[u64]) -> u64 {
    if values.is_empty() {
        return 0;
    }
    values.iter().sum::<u64>() / values.len() as u64
}

pub fn summarize(w: &Window) -> Summary {
    let v = w.values();
    Summary {
        min: v.iter().copied().min().unwrap_or(0),
        max: v.iter().copied().max().unwrap_or(0),
        mean: mean(v),
    }
}

pub fn percentile(values: &[u64], p: usize) -> u64 {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let idx = (sorted.len() - 1) * p / 100;
    sorted[idx]
}
"#,
        ),
        (
            "src/parse.rs",
            r#"pub fn parse_reading(line: &str) -> Option<(String, u64)> {
    let (name, value) = line.split_once('=')?;
    let value = value.trim().parse().ok()?;
    Some((name.trim().to_string(), value))
}

pub fn parse_all(text: &str) -> Vec<(String, u64)> {
    text.lines().filter(|l| !l.starts_with('#')).filter_map(parse_reading).collect()
}
"#,
        ),
        (
            "tests/usage.rs",
            r##"use meter::parse::parse_all;
use meter::stats::{percentile, summarize};
use meter::window::Window;

#[test]
fn window_keeps_last_three() {
    let mut w = Window::new(3);
    for v in 1..=5 {
        w.push(v);
    }
    assert_eq!(w.values(), &[3, 4, 5]);
}

#[test]
fn summary_mean() {
    let mut w = Window::new(4);
    for v in [2, 4, 6, 8] {
        w.push(v);
    }
    assert_eq!(summarize(&w).mean, 5);
}

#[test]
fn summary_of_empty() {
    assert_eq!(summarize(&Window::new(3)).mean, 0);
}

#[test]
fn p50_of_odd() {
    assert_eq!(percentile(&[5, 1, 3], 50), 3);
}

#[test]
fn parse_skips_comments() {
    let got = parse_all("# header\ncpu = 5\nmem=7\n");
    assert_eq!(got.len(), 2);
}
"##,
        ),
    ],
    noise_before: (
        "src/parse.rs",
        "\npub fn is_comment(line: &str) -> bool {\n    line.starts_with('#')\n}\n",
    ),
    noise_after: (
        "src/window.rs",
        "\npub fn empty() -> Window {\n    Window::new(0)\n}\n",
    ),
};

pub const CASES: &[Case] = &[
    Case {
        name: "rs-window-evicts-early",
        kind: "off-by-one",
        project: &PROJECT,
        bug: &[(
            "src/window.rs",
            "if self.values.len() > self.size {",
            "if self.values.len() >= self.size {",
        )],
        evidence: r#"running 5 tests
test window_keeps_last_three ... FAILED

failures:

---- window_keeps_last_three stdout ----

thread 'window_keeps_last_three' panicked at tests/usage.rs:{L:tests/usage.rs#assert_eq!(w.values()}:5:
assertion `left == right` failed
  left: [4, 5]
 right: [3, 4, 5]
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace

failures:
    window_keeps_last_three

test result: FAILED. 4 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out
"#,
    },
    Case {
        name: "rs-summary-skips-first",
        kind: "wrong call",
        project: &PROJECT,
        bug: &[(
            "src/stats.rs",
            "        mean: mean(v),",
            "        mean: mean(&v[1..]),",
        )],
        evidence: r#"---- summary_mean stdout ----

thread 'summary_mean' panicked at tests/usage.rs:{L:tests/usage.rs#assert_eq!(summarize(&w).mean, 5)}:5:
assertion `left == right` failed
  left: 6
 right: 5

failures:
    summary_mean
"#,
    },
    Case {
        name: "rs-percentile-index",
        kind: "off-by-one",
        project: &PROJECT,
        bug: &[(
            "src/stats.rs",
            "(sorted.len() - 1) * p / 100",
            "(sorted.len() + 1) * p / 100",
        )],
        evidence: r#"---- p50_of_odd stdout ----

thread 'p50_of_odd' panicked at tests/usage.rs:{L:tests/usage.rs#percentile(&[5, 1, 3], 50)}:5:
assertion `left == right` failed
  left: 5
 right: 3

failures:
    p50_of_odd
"#,
    },
    Case {
        name: "rs-mean-of-empty",
        kind: "missing case",
        project: &PROJECT,
        bug: &[(
            "src/stats.rs",
            "    if values.is_empty() {\n        return 0;\n    }\n",
            "",
        )],
        evidence: r#"---- summary_of_empty stdout ----

thread 'summary_of_empty' panicked at src/stats.rs:{L:src/stats.rs#values.iter().sum::<u64>()}:5:
attempt to divide by zero
stack backtrace:
   0: rust_begin_unwind
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std/src/panicking.rs:689:5
   1: core::panicking::panic_fmt
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:80:14
   2: meter::stats::mean
             at ./src/stats.rs:{L:src/stats.rs#values.iter().sum::<u64>()}:5
   3: meter::stats::summarize
             at ./src/stats.rs:{L:src/stats.rs#mean: mean(v)}:15
   4: usage::summary_of_empty
             at ./tests/usage.rs:{L:tests/usage.rs#summarize(&Window::new(3))}:16

failures:
    summary_of_empty
"#,
    },
    Case {
        name: "rs-parse-untrimmed",
        kind: "missing call, fault two calls away",
        project: &PROJECT,
        bug: &[("src/parse.rs", "value.trim().parse()", "value.parse()")],
        evidence: r#"---- parse_skips_comments stdout ----

thread 'parse_skips_comments' panicked at tests/usage.rs:{L:tests/usage.rs#assert_eq!(got.len(), 2)}:5:
assertion `left == right` failed
  left: 1
 right: 2

failures:
    parse_skips_comments
"#,
    },
];
