//! A failure's stack profile: its frame tokens (file name and function,
//! never line numbers), exception type, masked message words, and the
//! package that raised it.

use super::{MAX_MESSAGE_WORDS, MAX_PROFILE_FRAMES};
use crate::model::{Failure, Frame, Language};
use crate::signature::normalize_message;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// One frame as similarity sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameToken {
    /// `file name|function`, or the file name alone when the frame names no function.
    pub key: String,
    pub in_app: bool,
}

/// What is compared of a failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackProfile {
    /// Innermost first, at most [`MAX_PROFILE_FRAMES`].
    pub frames: Vec<FrameToken>,
    /// The exception type without its module or package (`KeyError`, `NullPointerException`).
    pub exception_type: Option<String>,
    /// Words of the masked message ([`normalize_message`]), at most 32.
    pub message_words: Vec<String>,
    /// What an import error says is missing
    /// ([`missing_names`](crate::signature::missing_names)): two traces
    /// missing different names are different bugs, whatever their frames.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// The third-party package whose code raised the failure
    /// ([`package_of`]: `node_modules/<name>`, `site-packages/<name>`, a Go
    /// module, a Cargo registry crate), when the innermost frame with a
    /// function is library code: one error raised by two packages (eslint
    /// rules of two plugins calling a removed API) is two bugs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raised_in: Option<String>,
}

fn file_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

/// The file name a frame token uses: Node prints one core module as
/// `node:path`, `path.js` or `internal/validators.js` depending on its
/// version, so the `node:` scheme and a JavaScript extension are dropped.
///
/// A file name that names nothing alone (`__init__.py`, `mod.rs`, `index.js`:
/// every package has one) keeps its directory, `flask/__init__.py`.
fn token_file(path: &str) -> Cow<'_, str> {
    let path = path.strip_prefix("node:").unwrap_or(path);
    let name = file_name(path);
    let name = [".js", ".mjs", ".cjs"]
        .iter()
        .find_map(|ext| name.strip_suffix(ext).filter(|n| !n.is_empty()))
        .unwrap_or(name);
    const GENERIC: [&str; 6] = [
        "__init__.py",
        "__main__.py",
        "mod.rs",
        "lib.rs",
        "main.rs",
        "index",
    ];
    let parent = path.rsplit(['/', '\\']).nth(1).filter(|d| !d.is_empty());
    match parent {
        Some(dir) if GENERIC.contains(&name) => Cow::Owned(format!("{dir}/{name}")),
        _ => Cow::Borrowed(name),
    }
}

/// The panic machinery every Go and Rust panic passes through
/// (`runtime/debug.Stack`, `panic`, `core::panicking::panic_fmt`): it says
/// how a program panicked, never where the bug is.
fn panic_machinery(function: &str) -> bool {
    function == "panic"
        || function == "rust_begin_unwind"
        || [
            "runtime.",
            "runtime/debug.",
            "std::panicking::",
            "core::panicking::",
        ]
        .iter()
        .any(|p| function.starts_with(p))
}

/// Bytes of a token's file or function kept: a frame built from a hostile
/// record (a 1 MB function name) costs no more to compare than a real one.
const MAX_TOKEN_PART: usize = 256;

fn token(f: &Frame) -> Option<FrameToken> {
    let cap = |s: &str| crate::input::truncate_str(s, MAX_TOKEN_PART).to_owned();
    let file = f.file.as_deref().map(token_file).filter(|s| !s.is_empty());
    let file = file.as_deref().map(cap);
    let file = file.as_deref();
    // An unsymbolised frame (`<unknown>` in a Rust backtrace of a stripped
    // binary) names nothing two traces could share.
    let function = f
        .function
        .as_deref()
        .filter(|s| !s.is_empty() && *s != "<unknown>")
        .map(cap);
    let function = function.as_deref();
    if function.is_some_and(panic_machinery) {
        return None;
    }
    let key = match (function, file) {
        (Some(func), Some(file)) => format!("{file}|{func}"),
        (Some(func), None) => format!("|{func}"),
        // Known only by its location: the line says where, as the function would.
        (None, Some(file)) => match f.line {
            Some(line) => format!("{file}:{line}"),
            None => file.to_owned(),
        },
        (None, None) => return None,
    };
    Some(FrameToken {
        key,
        in_app: f.in_app,
    })
}

/// The package a library file belongs to: the first directory of its path
/// once the install location is cut (`node_modules/`, `site-packages/`,
/// `dist-packages/`, a Go module cache's `pkg/mod/`, a Cargo registry's
/// `registry/src/<index>/`; the normaliser has already cut them from parsed
/// frames), `@scope/name` for a scoped npm package, `host/owner/repo` for a
/// Go module, without a version (`serde-1.0.100`, `…@v1.2.3`). `None` for a
/// file directly at the root (`events.js`): it names no package.
pub fn package_of(path: &str) -> Option<String> {
    let p = path.replace('\\', "/");
    let mut rest = p.as_str();
    for marker in [
        "node_modules/",
        "site-packages/",
        "dist-packages/",
        "pkg/mod/",
    ] {
        if let Some(i) = rest.rfind(marker) {
            rest = &rest[i + marker.len()..];
        }
    }
    if let Some(i) = rest.rfind("registry/src/") {
        rest = rest[i + "registry/src/".len()..].split_once('/')?.1;
    }
    let rest = rest.trim_start_matches("./").trim_start_matches('/');
    let (first, tail) = rest.split_once('/')?;
    if first.is_empty() || first == "." || first == ".." || tail.is_empty() {
        return None;
    }
    let name = if first.starts_with('@') {
        format!("{first}/{}", tail.split('/').next()?)
    } else if first.contains('.') {
        // A Go module: `github.com/owner/repo[@version]/…`.
        let module: Vec<&str> = std::iter::once(first)
            .chain(tail.split('/').take(2))
            .collect();
        module.join("/")
    } else {
        first.to_owned()
    };
    // A version after `@` (the leading `@` of a scope is not one).
    let end = name[1..].find('@').map_or(name.len(), |i| i + 1);
    let name = &name[..end];
    let name = name
        .rsplit_once('-')
        .filter(|(n, v)| !n.is_empty() && v.starts_with(|c: char| c.is_ascii_digit()))
        .map_or(name, |(n, _)| n);
    Some(name.to_owned())
}

/// The package that raised a failure: that of the innermost library frame
/// with a function that lies in a package, passing over the runtime's own
/// frames (Node's `node:`/`internal/` modules, files outside any directory
/// such as `events.js`, which every trace on that runtime shares). `None`
/// when an app frame comes first: raised in app code. JVM frames name a
/// class, not an installed file (their path's first directory is a
/// namespace such as `org`), so a JVM trace has none.
fn raising_package(frames: &[Frame], language: Language) -> Option<String> {
    if language == Language::Java {
        return None;
    }
    for f in frames.iter().rev() {
        let Some(function) = f.function.as_deref() else {
            continue;
        };
        if function.is_empty() || function == "<unknown>" || panic_machinery(function) {
            continue;
        }
        if f.in_app {
            return None;
        }
        let Some(file) = f.file.as_deref() else {
            continue;
        };
        if file.starts_with("node:") || file.starts_with("internal/") {
            continue;
        }
        if let Some(p) = package_of(file) {
            return Some(p);
        }
    }
    None
}

fn short_type(t: &str) -> String {
    let t = t.trim();
    let t = t.strip_prefix("builtins.").unwrap_or(t);
    t.rsplit(['.', ':']).next().unwrap_or(t).to_owned()
}

impl StackProfile {
    /// The profile of a failure: its own frames, or, when it has none (a
    /// framework wrapper, a test failure without a trace), those of its first
    /// cause that has some. A Rust panic's location counts as its top frame
    /// when the backtrace does not already name that file.
    pub fn from_failure(f: &Failure) -> Self {
        let own: Vec<FrameToken> = f
            .frames
            .iter()
            .rev()
            .filter_map(token)
            .take(MAX_PROFILE_FRAMES)
            .collect();
        let mut exception_type = f.exception_type.as_deref();
        let mut message = f.message.as_str();
        let mut raised_in = raising_package(&f.frames, f.language);
        let mut frames = if own.is_empty() {
            // The cause whose frames stand in also names the type: a wrapper
            // without frames says less about the bug than what it wraps.
            f.causes
                .iter()
                .map(|c| {
                    let v: Vec<FrameToken> = c
                        .frames
                        .iter()
                        .rev()
                        .filter_map(token)
                        .take(MAX_PROFILE_FRAMES)
                        .collect();
                    (c, v)
                })
                .find(|(_, v)| !v.is_empty())
                .map(|(c, v)| {
                    exception_type = c.exception_type.as_deref().or(exception_type);
                    raised_in = raising_package(&c.frames, f.language);
                    v
                })
                .unwrap_or_default()
        } else {
            own
        };
        if let Some(loc) = f.context.get("location") {
            let (path, rest) = crate::group::split_location(loc);
            let name = token_file(path);
            let name = name.as_ref();
            if !name.is_empty() && !frames.iter().any(|t| t.key.starts_with(name)) {
                let in_app = !path.starts_with("/rustc/") && !path.contains("/.cargo/");
                // The line too: one file panics at many lines, each its own
                // bug, and a trace known only by its location has nothing else.
                let key = match crate::group::location_line(rest) {
                    Some(line) => format!("{name}:{line}"),
                    None => name.to_owned(),
                };
                frames.insert(0, FrameToken { key, in_app });
            }
        }
        frames.truncate(MAX_PROFILE_FRAMES);
        if f.language == Language::Java
            && let Some((ty, rest)) = wrapped_exception(message)
        {
            exception_type = Some(ty);
            message = rest;
        }
        let missing = crate::signature::missing_names(
            exception_type,
            crate::input::truncate_str(message, 2048),
        );
        let message_words = normalize_message(crate::input::truncate_str(message, 2048))
            .split(|c: char| !c.is_alphanumeric() && c != '<' && c != '>' && c != '_')
            .filter(|w| !w.is_empty())
            .take(MAX_MESSAGE_WORDS)
            .map(str::to_owned)
            .collect();
        StackProfile {
            frames,
            exception_type: exception_type.map(short_type),
            message_words,
            missing,
            raised_in: raised_in.map(|p| crate::input::truncate_str(&p, MAX_TOKEN_PART).to_owned()),
        }
    }
}

/// A JVM wrapper's message that is its cause's `toString()`
/// (`new RuntimeException(cause)`: `java.lang.IllegalAccessError: class …`):
/// the wrapped type and message say which bug it is, the wrapper only how it
/// travelled.
fn wrapped_exception(message: &str) -> Option<(&str, &str)> {
    static WRAPPED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"^((?:[a-z_][\w$]*\.)+[A-Z][\w$]*(?:Error|Exception|Throwable))(?::\s*|$)",
        )
        .unwrap()
    });
    let c = WRAPPED.captures(message)?;
    let ty = c.get(1)?.as_str();
    Some((ty, &message[c.get(0)?.end()..]))
}
