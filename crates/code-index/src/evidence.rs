//! Stack frames out of failure text (Python, pytest, Java, JavaScript/Node,
//! Go, Rust) as the domain's [`Frame`] (innermost last), and their mapping
//! onto repository files.

use std::collections::HashMap;
pub use tracelab_domain::Frame;
use tracelab_domain::runner::Runner;
use tracelab_evidence::locations::with_locations;
use tracelab_evidence::test_run::TestRun;

/// Frames innermost last, as [`Frame`] lists are ordered, read by the
/// evidence parsers (`tracelab_evidence`, the one reader of failure text):
/// each failure's frames and its chain's, in the order the failures appear,
/// each frame once, after the `path.ext:line` locations outside any trace
/// (a lint or compiler line, a location pasted alone;
/// `tracelab_evidence::locations`: weaker than a trace's frames, so on the
/// outermost end). A frame's file is the path as the parsers normalised it
/// (CI and home prefixes removed); it is `in_app` unless it is a library's
/// or the toolchain's.
pub fn parse_frames(text: &str) -> Vec<Frame> {
    with_locations(TestRun::read(Runner::Unknown, text).frames(), text)
}

/// Paths that are never repository code even when a suffix matches.
fn is_external(path: &str) -> bool {
    const MARKERS: &[&str] = &[
        "site-packages/",
        "dist-packages/",
        "node_modules/",
        "/.cargo/registry/",
        "/rustc/",
        "/usr/lib/",
        "/usr/local/go/",
        "/go/pkg/mod/",
        "<frozen",
        "node:",
    ];
    MARKERS.iter().any(|m| path.contains(m))
}

/// Maps evidence paths (absolute, CI-checkout-relative, Java file names) to
/// repository paths by the longest matching suffix of path components.
#[derive(Debug, Default)]
pub struct PathMatcher {
    by_file_name: HashMap<String, Vec<String>>,
}

impl PathMatcher {
    pub fn new<'a>(repo_paths: impl IntoIterator<Item = &'a str>) -> Self {
        let mut by_file_name: HashMap<String, Vec<String>> = HashMap::new();
        for p in repo_paths {
            let name = p.rsplit('/').next().unwrap_or(p);
            by_file_name
                .entry(name.to_string())
                .or_default()
                .push(p.to_string());
        }
        Self { by_file_name }
    }

    /// The repository path a frame points at, if any.
    pub fn resolve(&self, frame: &Frame) -> Option<String> {
        let path = frame
            .file
            .as_deref()?
            .trim_start_matches("file://")
            .trim_start_matches("./");
        if !frame.in_app || is_external(path) {
            return None;
        }
        let name = path.rsplit('/').next()?;
        let candidates = self.by_file_name.get(name)?;
        // Java frames carry a file name and a class path: rebuild the path.
        let wanted: String = match (&frame.function, path.contains('/')) {
            (Some(f), false) if name.ends_with(".java") || name.ends_with(".kt") => {
                let mut parts: Vec<&str> = f.split('.').collect();
                parts.truncate(parts.len().saturating_sub(2));
                let mut p = parts.join("/");
                if !p.is_empty() {
                    p.push('/');
                }
                p + name
            }
            _ => path.to_string(),
        };
        let want: Vec<&str> = wanted.split('/').filter(|c| !c.is_empty()).collect();
        let mut best: Option<(usize, &String)> = None;
        for c in candidates {
            let have: Vec<&str> = c.split('/').collect();
            let common = want
                .iter()
                .rev()
                .zip(have.iter().rev())
                .take_while(|(a, b)| a == b)
                .count();
            let needed = want.len().min(have.len()).min(2);
            if common >= needed && best.is_none_or(|(n, _)| common > n) {
                best = Some((common, c));
            }
        }
        best.map(|(_, c)| c.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frames read innermost first (the order the cases are written in);
    /// a frame's file must end with the expected path (the parsers take CI
    /// and home prefixes off and rebuild Java paths from the class).
    fn check(text: &str, expected: &[(&str, u32, Option<&str>)]) {
        let got: Vec<(String, u32, Option<String>)> = parse_frames(text)
            .into_iter()
            .rev()
            .map(|f| (f.file.unwrap_or_default(), f.line.unwrap_or(0), f.function))
            .collect();
        let same = got.len() == expected.len()
            && got
                .iter()
                .zip(expected)
                .all(|((file, line, function), (p, l, f))| {
                    file.ends_with(p) && line == l && function.as_deref() == *f
                });
        assert!(same, "{text}\ngot {got:?}\nwant {expected:?}");
    }

    #[test]
    fn python_traceback_innermost_first() {
        check(
            "Traceback (most recent call last):\n  File \"/ci/w/tests/test_cart.py\", line 9, in test_total\n    c.total()\n  File \"/ci/w/shop/cart.py\", line 12, in total\n    x\nKeyError: 'sku'\n",
            &[
                ("shop/cart.py", 12, Some("total")),
                ("tests/test_cart.py", 9, Some("test_total")),
            ],
        );
    }

    #[test]
    fn pytest_long_format() {
        check(
            "=================================== FAILURES ===================================\n____________________________________ test_x ____________________________________\n\ntests/test_a.py:10: in test_x\n    f()\nsrc/a.py:3: in f\n    g()\nsrc/a.py:7: ZeroDivisionError\n",
            &[
                ("src/a.py", 7, None),
                ("src/a.py", 3, Some("f")),
                ("tests/test_a.py", 10, Some("test_x")),
            ],
        );
    }

    #[test]
    fn java_js_go_rust() {
        check(
            "java.lang.NullPointerException\n\tat com.shop.Cart.add(Cart.java:15)\n\tat com.shop.CartTest.adds(CartTest.java:9)\n",
            &[
                ("Cart.java", 15, Some("com.shop.Cart.add")),
                ("CartTest.java", 9, Some("com.shop.CartTest.adds")),
            ],
        );
        check(
            "TypeError: x is undefined\n    at Cart.total (/w/src/cart.js:10:5)\n    at /w/test/cart.test.js:4:3\n",
            &[
                ("src/cart.js", 10, Some("Cart.total")),
                ("test/cart.test.js", 4, Some("<anonymous>")),
            ],
        );
        check(
            "panic: boom\n\ngoroutine 1 [running]:\nexample.com/app/store.(*Store).Get(...)\n\t/w/internal/store/store.go:15 +0x1d\nmain.main()\n\t/w/main.go:9 +0x25\n",
            &[
                (
                    "internal/store/store.go",
                    15,
                    Some("example.com/app/store.(*Store).Get"),
                ),
                ("main.go", 9, Some("main.main")),
            ],
        );
        check(
            "--- FAIL: TestGet (0.00s)\n    store_test.go:12: got 1, want 2\n",
            &[("store_test.go", 12, Some("TestGet"))],
        );
        check(
            "thread 'tests::t' panicked at src/invoice.rs:17:9:\nattempt to subtract with overflow\n",
            &[("src/invoice.rs", 17, None)],
        );
    }

    #[test]
    fn locations_outside_traces_are_outermost_frames() {
        check("shop/cart.py:12\n", &[("shop/cart.py", 12, None)]);
        check(
            "src/lib.rs:3:5: error[E0308]: mismatched types\nthread 'tests::t' panicked at src/invoice.rs:17:9:\nboom\n",
            &[("src/invoice.rs", 17, None), ("src/lib.rs", 3, None)],
        );
    }

    #[test]
    fn frames_map_to_repository_paths() {
        let m = PathMatcher::new([
            "shop/cart.py",
            "tests/test_cart.py",
            "src/main/java/com/shop/Cart.java",
            "app/models.py",
        ]);
        let f = |path: &str, function: Option<&str>| Frame {
            file: Some(path.into()),
            line: Some(1),
            function: function.map(Into::into),
            in_app: true,
        };
        assert_eq!(
            m.resolve(&f("/ci/w/shop/cart.py", None)).as_deref(),
            Some("shop/cart.py")
        );
        assert_eq!(
            m.resolve(&f("Cart.java", Some("com.shop.Cart.add")))
                .as_deref(),
            Some("src/main/java/com/shop/Cart.java")
        );
        assert_eq!(
            m.resolve(&f("/usr/lib/python3/site-packages/x/models.py", None)),
            None
        );
        assert_eq!(m.resolve(&f("/venv/other/models.py", None)), None);
    }
}
