//! Stack frames out of failure text (Python, pytest, Java, JavaScript/Node,
//! Go, Rust) as the domain's [`Frame`] (innermost last), and their mapping
//! onto repository files.

use regex::Regex;
use std::collections::HashMap;
use std::sync::LazyLock;
pub use tracelab_domain::Frame;

static PY_FRAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"File "([^"]+)", line (\d+)(?:, in ([\w<>.]+))?"#).unwrap());
static PYTEST_FRAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^([\w./\\-]+\.py):(\d+): (?:in ([\w<>]+)|\w+)").unwrap());
static JAVA_FRAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"at ([\w$.<>/]+)\(([\w$-]+\.(?:java|kt|scala)):(\d+)\)").unwrap());
static JS_FRAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"at (?:(?:async )?([\w$.<>\[\] ]+?) \()?(?:file://)?([^\s()]+\.(?:js|mjs|cjs|jsx|ts|tsx)):(\d+):\d+\)?")
        .unwrap()
});
static GO_FUNC: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^([\w./*()\[\]-]+)\(.*\)$").unwrap());
static GO_LOC: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s+(\S+\.go):(\d+)(?: \+0x[0-9a-f]+)?$").unwrap());
static GO_TEST: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s+([\w./-]+_test\.go):(\d+): ").unwrap());
static RUST_PANIC: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"panicked at ([^\s:]+\.rs):(\d+):\d+").unwrap());
static RUST_FN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*\d+: (\S+)$").unwrap());
static RUST_AT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s+at (\S+\.rs):(\d+):\d+$").unwrap());
static GENERIC: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"([\w./-]+\.(?:py|rs|go|js|mjs|ts|tsx|java)):(\d+)").unwrap());

/// Frames innermost last, as [`Frame`] lists are ordered. Python lists the
/// innermost call last, the others first; innermost first, Python's frames
/// come first, then the others', then locations that appear outside any
/// recognised frame (an assertion's `src/lib.rs:10:5`) — and that list is
/// returned reversed. A frame's file is the path as the evidence wrote it;
/// it is `in_app` unless it is a library's or the toolchain's.
pub fn parse_frames(text: &str) -> Vec<Frame> {
    let mut python = Vec::new();
    let mut others = Vec::new();
    let mut generic = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut rust_fn: Option<String> = None;
    for (i, line) in lines.iter().enumerate() {
        if let Some(c) = PY_FRAME.captures(line) {
            python.push(frame(&c[1], &c[2], c.get(3).map(|m| m.as_str())));
        } else if let Some(c) = PYTEST_FRAME.captures(line) {
            python.push(frame(&c[1], &c[2], c.get(3).map(|m| m.as_str())));
        } else if let Some(c) = JAVA_FRAME.captures(line) {
            others.push(frame(&c[2], &c[3], Some(&c[1])));
        } else if let Some(c) = JS_FRAME.captures(line) {
            others.push(frame(&c[2], &c[3], c.get(1).map(|m| m.as_str().trim())));
        } else if let Some(c) = GO_LOC.captures(line) {
            let func = i
                .checked_sub(1)
                .and_then(|p| GO_FUNC.captures(lines[p].trim()))
                .map(|f| f[1].to_string());
            others.push(frame(&c[1], &c[2], func.as_deref()));
        } else if let Some(c) = GO_TEST.captures(line) {
            others.push(frame(&c[1], &c[2], None));
        } else if let Some(c) = RUST_PANIC.captures(line) {
            others.push(frame(&c[1], &c[2], None));
        } else if let Some(c) = RUST_FN.captures(line) {
            rust_fn = Some(c[1].to_string());
        } else if let Some(c) = RUST_AT.captures(line) {
            others.push(frame(&c[1], &c[2], rust_fn.take().as_deref()));
        } else {
            for c in GENERIC.captures_iter(line) {
                generic.push(frame(&c[1], &c[2], None));
            }
        }
    }
    python.reverse();
    let mut out = python;
    out.extend(others);
    out.extend(generic);
    let mut seen = std::collections::HashSet::new();
    out.retain(|f| seen.insert((f.file.clone(), f.line, f.function.clone())));
    out.reverse();
    out
}

fn frame(path: &str, line: &str, function: Option<&str>) -> Frame {
    let path = path.replace('\\', "/");
    Frame {
        in_app: !is_external(&path),
        file: Some(path),
        line: line.parse().ok(),
        function: function.map(str::to_string),
    }
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

    fn check(text: &str, expected: &[(&str, u32, Option<&str>)]) {
        // Read innermost first, the order the cases are written in.
        let got: Vec<(String, u32, Option<String>)> = parse_frames(text)
            .into_iter()
            .rev()
            .map(|f| (f.file.unwrap_or_default(), f.line.unwrap_or(0), f.function))
            .collect();
        let want: Vec<(String, u32, Option<String>)> = expected
            .iter()
            .map(|(p, l, f)| (p.to_string(), *l, f.map(str::to_string)))
            .collect();
        assert_eq!(got, want, "{text}");
    }

    #[test]
    fn python_traceback_innermost_first() {
        check(
            "Traceback (most recent call last):\n  File \"/ci/w/tests/test_cart.py\", line 9, in test_total\n    c.total()\n  File \"/ci/w/shop/cart.py\", line 12, in total\n    x\nKeyError: 'sku'\n",
            &[
                ("/ci/w/shop/cart.py", 12, Some("total")),
                ("/ci/w/tests/test_cart.py", 9, Some("test_total")),
            ],
        );
    }

    #[test]
    fn pytest_long_format() {
        check(
            "tests/test_a.py:10: in test_x\n    f()\nsrc/a.py:3: in f\n    g()\nsrc/a.py:7: ZeroDivisionError\n",
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
                ("/w/src/cart.js", 10, Some("Cart.total")),
                ("/w/test/cart.test.js", 4, None),
            ],
        );
        check(
            "panic: boom\n\ngoroutine 1 [running]:\nexample.com/app/store.(*Store).Get(...)\n\t/w/internal/store/store.go:15 +0x1d\nmain.main()\n\t/w/main.go:9 +0x25\n",
            &[
                (
                    "/w/internal/store/store.go",
                    15,
                    Some("example.com/app/store.(*Store).Get"),
                ),
                ("/w/main.go", 9, Some("main.main")),
            ],
        );
        check(
            "--- FAIL: TestGet (0.00s)\n    store_test.go:12: got 1, want 2\n",
            &[("store_test.go", 12, None)],
        );
        check(
            "thread 'tests::t' panicked at src/invoice.rs:17:9:\nattempt to subtract with overflow\n",
            &[("src/invoice.rs", 17, None)],
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
