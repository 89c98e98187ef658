//! Similar-issue merging: the second grouping level above the exact
//! [`GroupKey`].
//!
//! The exact key hashes the innermost five in-app frames, so one bug reached
//! through another caller, printed by another version (a shifted frame, a
//! renamed checkout directory), or pasted without its header lands in a new
//! group. This module scores how alike two stack traces are, in the spirit of
//! TraceSim (Vasiliev et al., 2020) and ReBucket (Dang et al., 2012):
//!
//! - a trace becomes a [`StackProfile`]: frame tokens innermost first
//!   (`file name|function`, never line numbers), at most
//!   [`MAX_PROFILE_FRAMES`], plus the exception type and masked message;
//! - each frame weighs `position × rarity × origin`: `1 / (1 + i)^decay` for
//!   the `i`-th frame from the top, `ln((n + 1) / (df + 1)) + 1` for a token
//!   seen in `df` of `n` known traces ([`FrameStats`]), and
//!   [`SimilarityConfig::library_weight`] for frames that are not in-app;
//! - the frames are aligned in order (a weighted longest common
//!   subsequence, each match worth the geometric mean of its two weights);
//!   the frame score is twice the matched weight over both traces' total;
//! - a different exception type multiplies the score by
//!   [`SimilarityConfig::type_mismatch`]; the masked messages' word overlap
//!   contributes [`SimilarityConfig::message_weight`].
//!
//! A failure joins the group of its exact key when one exists, otherwise the
//! group holding its most similar trace when the score reaches
//! [`SimilarityConfig::threshold`]. A [`Merge`] records the score, the
//! matched frames and the exact key, so [`GroupIndex::unmerge`] can undo it.
//! Pure logic: no IO, no clock; time per comparison is bounded by the
//! profile caps (64 × 64 alignment cells), whatever the input's size.

use crate::group::GroupKey;
use crate::model::{Failure, Frame, Language};
use crate::signature::normalize_message;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};

/// Frames kept per profile, innermost first.
pub const MAX_PROFILE_FRAMES: usize = 64;
/// Words of the masked message compared.
const MAX_MESSAGE_WORDS: usize = 32;
/// Members of a group a new trace is compared with (the first and the most recent).
pub const MAX_COMPARED_MEMBERS: usize = 8;

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

/// The function part of a token (`file|function`), when it names one
/// worth matching on its own (not a module body or an anonymous function).
fn token_function(key: &str) -> Option<&str> {
    let (_, func) = key.split_once('|')?;
    let generic = [
        "<module>",
        "<anonymous>",
        "<lambda>",
        "main",
        "run",
        "call",
        "apply",
    ];
    (func.len() > 2 && !generic.contains(&func)).then_some(func)
}

/// A token whose file is a package's entry file (`heatermeter/__init__.py|setup`):
/// one function name in two packages' entry files is a plugin convention
/// (every Home Assistant integration has its `setup`), not a moved function.
fn package_entry(key: &str) -> bool {
    key.split_once('|')
        .is_some_and(|(file, _)| file.contains('/'))
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

/// How many known traces contain each frame token: rare frames say more.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameStats {
    traces: u32,
    df: HashMap<String, u32>,
}

impl FrameStats {
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts a trace's distinct tokens.
    pub fn add(&mut self, p: &StackProfile) {
        self.traces = self.traces.saturating_add(1);
        let distinct: BTreeSet<&str> = p.frames.iter().map(|t| t.key.as_str()).collect();
        for k in distinct {
            let n = self.df.entry(k.to_owned()).or_insert(0);
            *n = n.saturating_add(1);
        }
    }

    /// `ln((n + 1) / (df + 1)) + 1`: 1 for a token in every trace, more for rarer ones.
    pub fn rarity(&self, key: &str) -> f64 {
        let n = f64::from(self.traces);
        let df = f64::from(self.df.get(key).copied().unwrap_or(0));
        ((n + 1.0) / (df + 1.0)).ln().max(0.0) + 1.0
    }
}

/// The knobs of the score and the merge threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SimilarityConfig {
    /// Exponent of the position weight `1 / (1 + i)^decay` (0 = all frames equal).
    pub position_decay: f64,
    /// Weight factor of frames that are not in-app.
    pub library_weight: f64,
    /// Score factor when both exception types are known and differ.
    pub type_mismatch: f64,
    /// Worth of a match on the function alone, the files differing (a
    /// function moved to another file between versions), against 1 for a
    /// match on both.
    pub moved_function: f64,
    /// Share of the score given to the masked messages' word overlap.
    pub message_weight: f64,
    /// A trace joins the most similar group at this score or above.
    pub threshold: f64,
}

/// The threshold chosen on the labelled real corpus (docs/ingest.md,
/// `cargo bench -p tracelab-evidence --bench real_grouping`).
pub const DEFAULT_THRESHOLD: f64 = 0.59;

impl Default for SimilarityConfig {
    fn default() -> Self {
        Self {
            position_decay: 0.75,
            library_weight: 0.3,
            type_mismatch: 0.5,
            moved_function: 0.5,
            message_weight: 0.3,
            threshold: DEFAULT_THRESHOLD,
        }
    }
}

/// Two frames the alignment matched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatchedFrame {
    pub key: String,
    /// Positions from the top (0 = innermost) in the first and the second trace.
    pub position_a: usize,
    pub position_b: usize,
}

/// How alike two traces are, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Similarity {
    /// The combined score in [0, 1].
    pub score: f64,
    /// The frame alignment alone.
    pub frame_score: f64,
    /// The masked messages' word overlap (Jaccard).
    pub message_score: f64,
    pub same_type: bool,
    /// Matched frames, innermost first.
    pub matched: Vec<MatchedFrame>,
}

fn weights(p: &StackProfile, stats: &FrameStats, cfg: &SimilarityConfig) -> Vec<f64> {
    p.frames
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let pos = (1.0 + i as f64).powf(-cfg.position_decay.max(0.0));
            let origin = if t.in_app { 1.0 } else { cfg.library_weight };
            pos * stats.rarity(&t.key) * origin
        })
        .collect()
}

fn jaccard(a: &[String], b: &[String]) -> f64 {
    let a: BTreeSet<&str> = a.iter().map(String::as_str).collect();
    let b: BTreeSet<&str> = b.iter().map(String::as_str).collect();
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let inter = a.intersection(&b).count() as f64;
    let union = a.union(&b).count() as f64;
    inter / union
}

/// Scores two profiles. A profile without frames scores 0 against anything:
/// without a stack there is nothing to merge on beyond the exact key.
pub fn similarity(
    a: &StackProfile,
    b: &StackProfile,
    stats: &FrameStats,
    cfg: &SimilarityConfig,
) -> Similarity {
    let fa = &a.frames[..a.frames.len().min(MAX_PROFILE_FRAMES)];
    let fb = &b.frames[..b.frames.len().min(MAX_PROFILE_FRAMES)];
    let same_type = match (&a.exception_type, &b.exception_type) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    };
    let message_score = jaccard(&a.message_words, &b.message_words);
    let apart = Similarity {
        score: 0.0,
        frame_score: 0.0,
        message_score,
        same_type,
        matched: Vec::new(),
    };
    // Without a stack there is nothing to merge on beyond the exact key;
    // two imports of different missing names are two bugs.
    let other_names = !a.missing.is_empty() && !b.missing.is_empty() && a.missing != b.missing;
    // Raised by two third-party packages: two packages' code failing, even
    // on one message and under one framework's frames.
    let other_raisers = matches!((&a.raised_in, &b.raised_in), (Some(x), Some(y)) if x != y);
    if fa.is_empty() || fb.is_empty() || other_names || other_raisers {
        return apart;
    }
    let wa = weights(a, stats, cfg);
    let wb = weights(b, stats, cfg);
    let (n, m) = (fa.len(), fb.len());
    // dp[i][j]: best matched weight of fa[..i] and fb[..j].
    let mut dp = vec![0.0f64; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    let moved = cfg.moved_function.clamp(0.0, 1.0);
    // What matching frame i of a with frame j of b is worth (0: no match).
    let worth = |i: usize, j: usize| -> f64 {
        let (x, y) = (&fa[i].key, &fb[j].key);
        let factor = if x == y {
            1.0
        } else if moved > 0.0
            && !package_entry(x)
            && !package_entry(y)
            && token_function(x).is_some_and(|f| token_function(y) == Some(f))
        {
            moved
        } else {
            return 0.0;
        };
        factor * (wa[i] * wb[j]).sqrt()
    };
    // A failure raised in app code is a bug of that function: when either
    // trace was raised in app code, two traces whose innermost app functions
    // differ (the same framework frames above another integration's or
    // provider's code) are different bugs. Raised in a library by both, the
    // app frames are callers and only weigh.
    let function = |t: &FrameToken| t.key.contains('|');
    let raised_in_app = |f: &[FrameToken]| f.iter().find(|t| function(t)).is_some_and(|t| t.in_app);
    let innermost_app = |f: &[FrameToken]| f.iter().position(|t| t.in_app && function(t));
    if (raised_in_app(fa) || raised_in_app(fb))
        && let (Some(i), Some(j)) = (innermost_app(fa), innermost_app(fb))
        && worth(i, j) == 0.0
    {
        return apart;
    }
    for i in 1..=n {
        for j in 1..=m {
            let mut best = dp[at(i - 1, j)].max(dp[at(i, j - 1)]);
            let w = worth(i - 1, j - 1);
            if w > 0.0 {
                best = best.max(dp[at(i - 1, j - 1)] + w);
            }
            dp[at(i, j)] = best;
        }
    }
    let mut matched = Vec::new();
    let (mut i, mut j) = (n, m);
    while i > 0 && j > 0 {
        let w = worth(i - 1, j - 1);
        if w > 0.0 && (dp[at(i, j)] - (dp[at(i - 1, j - 1)] + w)).abs() < 1e-12 {
            matched.push(MatchedFrame {
                key: fa[i - 1].key.clone(),
                position_a: i - 1,
                position_b: j - 1,
            });
            i -= 1;
            j -= 1;
        } else if dp[at(i - 1, j)] >= dp[at(i, j - 1)] {
            i -= 1;
        } else {
            j -= 1;
        }
    }
    matched.reverse();
    let total: f64 = wa.iter().sum::<f64>() + wb.iter().sum::<f64>();
    let frame_score = if total > 0.0 {
        (2.0 * dp[at(n, m)] / total).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let mw = cfg.message_weight.clamp(0.0, 1.0);
    let mut score = if n == 1 && m == 1 {
        // Two panics known only by where they happened (no backtrace): one
        // file panics for many reasons, so the message must agree too.
        frame_score * message_score
    } else if a.message_words.is_empty() || b.message_words.is_empty() {
        // A trace pasted without its message says nothing against one with.
        frame_score
    } else {
        (1.0 - mw) * frame_score + mw * message_score * frame_score.min(1.0).sqrt()
    };
    // Raised in library code by both: the library's frames say where, and
    // one library raises several errors from one place (a loader that finds
    // no binding, or one for another runtime), so only the message says
    // which. Messages sharing less than half their words lower the score in
    // proportion.
    let library_raised =
        |f: &[FrameToken]| f.iter().find(|t| function(t)).is_some_and(|t| !t.in_app);
    if library_raised(fa)
        && library_raised(fb)
        && !a.message_words.is_empty()
        && !b.message_words.is_empty()
    {
        score *= (2.0 * message_score).min(1.0);
    }
    if !same_type {
        score *= cfg.type_mismatch.clamp(0.0, 1.0);
    }
    Similarity {
        score: score.clamp(0.0, 1.0),
        frame_score,
        message_score,
        same_type,
        matched,
    }
}

/// The known group a new trace is most like, when it reaches the threshold:
/// its key and the similarity (score, matched frames). Frame frequencies
/// come from the candidates themselves and the new trace (the store's
/// groups are the corpus), so a frame every group shares says little.
/// Work is bounded by the candidates given times the 64 × 64 alignment.
pub fn best_match(
    profile: &StackProfile,
    candidates: &[(GroupKey, StackProfile)],
    cfg: &SimilarityConfig,
) -> Option<(GroupKey, Similarity)> {
    let mut stats = FrameStats::new();
    stats.add(profile);
    for (_, p) in candidates {
        stats.add(p);
    }
    let mut best: Option<(&GroupKey, Similarity)> = None;
    for (key, p) in candidates {
        let s = similarity(profile, p, &stats, cfg);
        if best.as_ref().is_none_or(|(_, b)| s.score > b.score) {
            best = Some((key, s));
        }
    }
    best.filter(|(_, s)| s.score >= cfg.threshold && s.score > 0.0)
        .map(|(k, s)| (k.clone(), s))
}

/// Why a trace is in the group it is in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "how", rename_all = "snake_case")]
pub enum Join {
    /// A new group of its own.
    New,
    /// The group already holds a trace with the same exact key.
    Exact,
    /// Merged by similarity with `nearest` (a member's label).
    Similar {
        score: f64,
        nearest: String,
        matched: Vec<MatchedFrame>,
    },
}

/// Where a failure goes (or would go).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Assignment {
    /// The group's id: the exact key of its first member.
    pub group: GroupKey,
    /// The failure's own exact key, kept so a merge can be undone.
    pub exact_key: GroupKey,
    #[serde(flatten)]
    pub join: Join,
}

/// One trace in a group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Member {
    pub key: GroupKey,
    /// The caller's name for it (a file, an evidence id).
    pub label: String,
    pub profile: StackProfile,
    /// Set when the member joined by similarity: the undo record.
    pub merge: Option<Merge>,
}

/// The record of a similarity merge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Merge {
    pub score: f64,
    pub nearest: String,
    pub matched: Vec<MatchedFrame>,
}

/// A group: traces of one exact key or more, merged by similarity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimilarGroup {
    pub id: GroupKey,
    pub members: Vec<Member>,
}

/// The groups known so far and the frame statistics they give.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupIndex {
    pub config: SimilarityConfig,
    stats: FrameStats,
    groups: Vec<SimilarGroup>,
}

impl GroupIndex {
    pub fn new(config: SimilarityConfig) -> Self {
        Self {
            config,
            stats: FrameStats::new(),
            groups: Vec::new(),
        }
    }

    pub fn groups(&self) -> &[SimilarGroup] {
        &self.groups
    }

    pub fn stats(&self) -> &FrameStats {
        &self.stats
    }

    /// Where `f` would go, without adding it.
    pub fn nearest(&self, f: &Failure) -> Assignment {
        let key = f.group_key();
        self.place(&key, &StackProfile::from_failure(f)).0
    }

    fn place(&self, key: &GroupKey, profile: &StackProfile) -> (Assignment, Option<usize>) {
        if let Some(g) = self
            .groups
            .iter()
            .position(|g| g.members.iter().any(|m| &m.key == key))
        {
            let a = Assignment {
                group: self.groups[g].id.clone(),
                exact_key: key.clone(),
                join: Join::Exact,
            };
            return (a, Some(g));
        }
        let mut best: Option<(usize, usize, Similarity)> = None;
        for (gi, g) in self.groups.iter().enumerate() {
            let n = g.members.len();
            // The first member and the most recent ones: bounded work per group.
            let recent = n.saturating_sub(MAX_COMPARED_MEMBERS - 1).max(1);
            for mi in std::iter::once(0).chain(recent..n) {
                let s = similarity(profile, &g.members[mi].profile, &self.stats, &self.config);
                if best.as_ref().is_none_or(|(_, _, b)| s.score > b.score) {
                    best = Some((gi, mi, s));
                }
            }
        }
        match best {
            Some((gi, mi, s)) if s.score >= self.config.threshold && s.score > 0.0 => {
                let g = &self.groups[gi];
                let a = Assignment {
                    group: g.id.clone(),
                    exact_key: key.clone(),
                    join: Join::Similar {
                        score: s.score,
                        nearest: g.members[mi].label.clone(),
                        matched: s.matched,
                    },
                };
                (a, Some(gi))
            }
            _ => (
                Assignment {
                    group: key.clone(),
                    exact_key: key.clone(),
                    join: Join::New,
                },
                None,
            ),
        }
    }

    /// Files `f` under its group (exact, similar or new) and returns why.
    pub fn insert(&mut self, f: &Failure, label: &str) -> Assignment {
        self.insert_profile(f.group_key(), StackProfile::from_failure(f), label)
    }

    /// [`insert`](Self::insert) for a profile already built.
    pub fn insert_profile(
        &mut self,
        key: GroupKey,
        profile: StackProfile,
        label: &str,
    ) -> Assignment {
        self.stats.add(&profile);
        let (a, at) = self.place(&key, &profile);
        let merge = match &a.join {
            Join::Similar {
                score,
                nearest,
                matched,
            } => Some(Merge {
                score: *score,
                nearest: nearest.clone(),
                matched: matched.clone(),
            }),
            _ => None,
        };
        let member = Member {
            key: key.clone(),
            label: label.to_owned(),
            profile,
            merge,
        };
        match at {
            Some(g) => self.groups[g].members.push(member),
            None => self.groups.push(SimilarGroup {
                id: key,
                members: vec![member],
            }),
        }
        a
    }

    /// Undoes the merges of every member with exact key `key`: they leave
    /// their group and form one of their own. Returns how many moved.
    pub fn unmerge(&mut self, key: &GroupKey) -> usize {
        let mut moved = Vec::new();
        for g in &mut self.groups {
            if &g.id == key {
                continue;
            }
            let (out, keep): (Vec<Member>, Vec<Member>) = std::mem::take(&mut g.members)
                .into_iter()
                .partition(|m| &m.key == key);
            g.members = keep;
            moved.extend(out);
        }
        self.groups.retain(|g| !g.members.is_empty());
        let n = moved.len();
        if n > 0 {
            for m in &mut moved {
                m.merge = None;
            }
            self.groups.push(SimilarGroup {
                id: key.clone(),
                members: moved,
            });
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fr(file: &str, func: &str, in_app: bool) -> Frame {
        Frame {
            file: Some(file.into()),
            function: Some(func.into()),
            line: Some(1),
            in_app,
        }
    }

    fn failure(ty: &str, msg: &str, frames: Vec<Frame>) -> Failure {
        let mut f = Failure::new(crate::FailureKind::Exception, crate::Language::Python);
        f.exception_type = Some(ty.into());
        f.message = msg.into();
        f.frames = frames;
        f.stack_signature = crate::stack_signature(&f.frames, 5);
        f.error_signature = crate::error_signature(f.exception_type.as_deref(), &f.message);
        f
    }

    #[test]
    fn identical_traces_score_one_and_a_shifted_caller_still_matches() {
        let stats = FrameStats::new();
        let cfg = SimilarityConfig::default();
        let a = failure(
            "KeyError",
            "'email'",
            vec![
                fr("app/main.py", "main", true),
                fr("app/api.py", "handle", true),
                fr("app/orders.py", "checkout", true),
            ],
        );
        let pa = StackProfile::from_failure(&a);
        let s = similarity(&pa, &pa, &stats, &cfg);
        assert!((s.score - 1.0).abs() < 1e-9, "{s:?}");
        assert_eq!(s.matched.len(), 3);
        // Another outer caller: the innermost frames still carry most weight.
        let b = failure(
            "KeyError",
            "'email'",
            vec![
                fr("app/cli.py", "run", true),
                fr("app/api.py", "handle", true),
                fr("app/orders.py", "checkout", true),
            ],
        );
        let s = similarity(&pa, &StackProfile::from_failure(&b), &stats, &cfg);
        assert!(s.score > 0.7 && s.score < 1.0, "{s:?}");
        assert_eq!(s.matched[0].key, "orders.py|checkout");
    }

    #[test]
    fn another_innermost_function_or_type_lowers_the_score() {
        let stats = FrameStats::new();
        let cfg = SimilarityConfig::default();
        let outer = |inner: &str| {
            vec![
                fr("app/main.py", "main", true),
                fr("app/api.py", "handle", true),
                fr("app/orders.py", inner, true),
            ]
        };
        let a = StackProfile::from_failure(&failure("KeyError", "x", outer("checkout")));
        let b = StackProfile::from_failure(&failure("KeyError", "x", outer("refund")));
        let c = StackProfile::from_failure(&failure("TypeError", "x", outer("checkout")));
        let ab = similarity(&a, &b, &stats, &cfg).score;
        let ac = similarity(&a, &c, &stats, &cfg).score;
        assert!(ab < cfg.threshold, "{ab}");
        assert!(ac < cfg.threshold, "{ac}");
        let empty = StackProfile::from_failure(&failure("KeyError", "x", Vec::new()));
        assert_eq!(similarity(&a, &empty, &stats, &cfg).score, 0.0);
    }

    #[test]
    fn node_core_frames_match_across_versions_and_moved_functions_count_half() {
        let js = |frames: Vec<Frame>| {
            let mut f = failure("TypeError", "path must be a string", frames);
            f.language = crate::Language::Javascript;
            StackProfile::from_failure(&f)
        };
        let old = js(vec![
            fr("/app/server.js", "serve", true),
            fr("path.js", "Object.join", false),
            fr("internal/validators.js", "validateString", false),
        ]);
        let new = js(vec![
            fr("/app/server.js", "serve", true),
            fr("node:path", "Object.join", false),
            fr("node:internal/validators", "validateString", false),
        ]);
        assert_eq!(old.frames, new.frames, "one token per core frame");
        let stats = FrameStats::new();
        let cfg = SimilarityConfig::default();
        // The same function in a renamed file: matched, at half worth.
        let a = StackProfile::from_failure(&failure(
            "RuntimeError",
            "x",
            vec![
                fr("launch.py", "<module>", true),
                fr("launch.py", "prepare_environment", true),
            ],
        ));
        let b = StackProfile::from_failure(&failure(
            "RuntimeError",
            "x",
            vec![
                fr("launch.py", "<module>", true),
                fr("launch_utils.py", "prepare_environment", true),
            ],
        ));
        let moved = similarity(&a, &b, &stats, &cfg);
        assert_eq!(moved.matched.len(), 2, "{moved:?}");
        let strict = SimilarityConfig {
            moved_function: 0.0,
            ..cfg.clone()
        };
        // Without moved matches, the innermost app functions differ: apart.
        let apart = similarity(&a, &b, &stats, &strict);
        assert_eq!((apart.score, apart.matched.len()), (0.0, 0));
        assert!(moved.score > apart.score && moved.score < 1.0);
    }

    #[test]
    fn traces_raised_in_different_app_functions_or_missing_different_names_stay_apart() {
        let stats = FrameStats::new();
        let cfg = SimilarityConfig::default();
        // The same framework frames above another integration's code.
        let setup = |pkg: &str| {
            StackProfile::from_failure(&failure(
                "AttributeError",
                "'HomeAssistant' object has no attribute 'helpers'",
                vec![
                    fr(
                        "lib/homeassistant/setup.py",
                        "_async_setup_component",
                        false,
                    ),
                    fr("lib/python3.9/threading.py", "run", false),
                    fr(
                        &format!("custom_components/{pkg}/__init__.py"),
                        "setup",
                        true,
                    ),
                ],
            ))
        };
        let s = similarity(&setup("heatermeter"), &setup("amberelectric"), &stats, &cfg);
        assert_eq!(s.score, 0.0, "{s:?}");
        assert_eq!(
            similarity(&setup("heatermeter"), &setup("heatermeter"), &stats, &cfg).score,
            1.0
        );
        // Raised in a library by both: the app callers only weigh.
        let lib = |caller: &str| {
            StackProfile::from_failure(&failure(
                "RegexMatchError",
                "get_throttling_function_name: could not find match for multiple",
                vec![
                    fr(caller, "main", true),
                    fr("site-packages/pytube/__main__.py", "streams", false),
                    fr("site-packages/pytube/__main__.py", "fmt_streams", false),
                    fr("site-packages/pytube/extract.py", "apply_signature", false),
                    fr(
                        "site-packages/pytube/cipher.py",
                        "get_throttling_plan",
                        false,
                    ),
                    fr(
                        "site-packages/pytube/cipher.py",
                        "get_throttling_function_name",
                        false,
                    ),
                ],
            ))
        };
        assert!(similarity(&lib("app.py"), &lib("y2v.py"), &stats, &cfg).score >= cfg.threshold);
        // Import errors of different names, on the same import chain.
        let import = |msg: &str| {
            StackProfile::from_failure(&failure(
                "ImportError",
                msg,
                vec![
                    fr("site-packages/flask/__init__.py", "<module>", false),
                    fr("site-packages/jinja2/__init__.py", "<module>", false),
                ],
            ))
        };
        let a = import(
            "cannot import name 'soft_unicode' from 'markupsafe' (/x/markupsafe/__init__.py)",
        );
        let b = import("cannot import name 'escape' from 'jinja2' (/x/jinja2/__init__.py)");
        assert_eq!(a.missing, ["soft_unicode", "markupsafe"]);
        assert_eq!(similarity(&a, &b, &stats, &cfg).score, 0.0);
        assert_eq!(similarity(&a, &a, &stats, &cfg).score, 1.0);
    }

    #[test]
    fn packages_are_read_from_every_install_layout() {
        for (path, package) in [
            (
                "eslint-plugin-jsdoc/dist/rules/noUndefinedTypes.cjs",
                Some("eslint-plugin-jsdoc"),
            ),
            (
                "/app/node_modules/a/node_modules/@babel/core/lib/x.js",
                Some("@babel/core"),
            ),
            ("@scope/pkg@1.2.0/index.js", Some("@scope/pkg")),
            (
                "/usr/lib/python3/dist-packages/requests/api.py",
                Some("requests"),
            ),
            ("six.py", None),
            (
                "github.com/rivo/tview@v0.0.0-2021/textview.go",
                Some("github.com/rivo/tview"),
            ),
            (
                "/r/.cargo/registry/src/index.crates.io-6f17/serde_json-1.0.100/src/de.rs",
                Some("serde_json"),
            ),
            ("events.js", None),
            ("./x", None),
        ] {
            assert_eq!(package_of(path).as_deref(), package, "{path}");
        }
    }

    #[test]
    fn library_errors_stay_apart_by_the_package_that_raised_them_or_their_message() {
        let stats = FrameStats::new();
        let cfg = SimilarityConfig::default();
        // One framework's frames above two plugins' rules, one message.
        let rule = |plugin: &str, file: &str, function: &str| {
            let mut f = failure(
                "TypeError",
                "context.getScope is not a function",
                vec![
                    fr(
                        "eslint/lib/linter/node-event-generator.js",
                        "applySelector",
                        false,
                    ),
                    fr("eslint/lib/linter/safe-emitter.js", "Object.emit", false),
                    fr("eslint/lib/linter/linter.js", "ruleErrorHandler", false),
                    fr(&format!("{plugin}/lib/rules/{file}"), function, false),
                ],
            );
            f.language = Language::Javascript;
            StackProfile::from_failure(&f)
        };
        let a = rule("eslint-plugin-a", "x.js", "CallExpression");
        let b = rule("eslint-plugin-b", "y.js", "ExpressionStatement");
        assert_eq!(a.raised_in.as_deref(), Some("eslint-plugin-a"));
        assert_eq!(similarity(&a, &b, &stats, &cfg).score, 0.0);
        assert_eq!(similarity(&a, &a, &stats, &cfg).score, 1.0);
        // One loader raising two errors from one place: the message says which.
        let loader = |msg: &str| {
            let mut f = failure(
                "Error",
                msg,
                vec![
                    fr("internal/modules/cjs/loader.js", "Module._compile", false),
                    fr("node-sass/lib/index.js", "<anonymous>", false),
                    fr("node-sass/lib/binding.js", "module.exports", false),
                ],
            );
            f.language = Language::Javascript;
            StackProfile::from_failure(&f)
        };
        let runtime = loader(
            "Node Sass does not yet support your current environment: OS X 64-bit with Unsupported runtime (72)",
        );
        let again = loader(
            "Node Sass does not yet support your current environment: Linux 64-bit with Unsupported runtime (83)",
        );
        let binding = loader(
            "Missing binding /x/vendor/darwin-x64-48/binding.node Node Sass could not find a binding for your current environment",
        );
        assert!(similarity(&runtime, &again, &stats, &cfg).score >= cfg.threshold);
        let other = similarity(&runtime, &binding, &stats, &cfg);
        assert!(other.score < 0.5 * other.frame_score, "{other:?}");
    }

    #[test]
    fn a_location_known_only_by_its_line_matches_that_line_only() {
        let panic = |loc: &str| {
            let mut f = failure(
                "panic",
                "called `Option::unwrap()` on a `None` value",
                Vec::new(),
            );
            f.language = Language::Rust;
            f.context.insert("location".into(), loc.into());
            StackProfile::from_failure(&f)
        };
        let stats = FrameStats::new();
        let cfg = SimilarityConfig::default();
        let a = panic("zellij-server/src/panes/grid.rs:702:71");
        assert_eq!(a.frames[0].key, "grid.rs:702");
        let same = similarity(&a, &panic("src/panes/grid.rs:702:5"), &stats, &cfg);
        assert!(same.score >= cfg.threshold, "{same:?}");
        let other = similarity(
            &a,
            &panic("zellij-server/src/panes/grid.rs:1424:46"),
            &stats,
            &cfg,
        );
        assert_eq!(other.score, 0.0);
    }

    #[test]
    fn best_match_picks_the_most_similar_group_above_the_threshold() {
        let cfg = SimilarityConfig::default();
        let p = |inner: &str, outer: &str| {
            StackProfile::from_failure(&failure(
                "KeyError",
                "'email'",
                vec![
                    fr(outer, "main", true),
                    fr("app/api.py", "handle", true),
                    fr("app/orders.py", inner, true),
                ],
            ))
        };
        let candidates = vec![
            (GroupKey("refund".into()), p("refund", "app/main.py")),
            (GroupKey("checkout".into()), p("checkout", "app/main.py")),
        ];
        let (key, s) = best_match(&p("checkout", "app/worker.py"), &candidates, &cfg)
            .expect("a similar group");
        assert_eq!(key.0, "checkout");
        assert!(s.score >= cfg.threshold && !s.matched.is_empty(), "{s:?}");
        let other = StackProfile::from_failure(&failure(
            "KeyError",
            "'email'",
            vec![fr("lib/x.py", "parse", true)],
        ));
        assert!(best_match(&other, &candidates, &cfg).is_none());
        assert!(best_match(&other, &[], &cfg).is_none());
    }

    #[test]
    fn frequent_frames_weigh_less() {
        let mut stats = FrameStats::new();
        let common =
            StackProfile::from_failure(&failure("E", "", vec![fr("lib/loop.py", "run", true)]));
        for _ in 0..50 {
            stats.add(&common);
        }
        assert!(stats.rarity("loop.py|run") < stats.rarity("never.py|seen"));
        assert!((stats.rarity("loop.py|run") - 1.0).abs() < 0.05);
    }

    #[test]
    fn merges_are_recorded_and_can_be_undone() {
        let mut index = GroupIndex::new(SimilarityConfig::default());
        let frames = |extra: &str| {
            vec![
                fr(extra, "main", true),
                fr("app/api.py", "handle", true),
                fr("app/orders.py", "checkout", true),
            ]
        };
        let a = failure("KeyError", "'email'", frames("app/main.py"));
        let b = failure("KeyError", "'email'", frames("app/worker.py"));
        assert_ne!(a.group_key(), b.group_key());
        assert_eq!(index.insert(&a, "a").join, Join::New);
        assert_eq!(index.insert(&a, "a2").join, Join::Exact);
        let joined = index.insert(&b, "b");
        let Join::Similar { score, matched, .. } = &joined.join else {
            panic!("expected a similarity merge: {joined:?}");
        };
        assert!(*score >= index.config.threshold);
        assert!(!matched.is_empty());
        assert_eq!(joined.group, a.group_key());
        assert_eq!(joined.exact_key, b.group_key());
        assert_eq!(index.groups().len(), 1);
        assert_eq!(index.unmerge(&b.group_key()), 1);
        assert_eq!(index.groups().len(), 2);
        assert!(index.groups()[1].members[0].merge.is_none());
        // Nothing left to undo.
        assert_eq!(index.unmerge(&b.group_key()), 0);
    }
}
