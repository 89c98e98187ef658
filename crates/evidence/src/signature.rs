//! Stable signatures: which failure this is, independent of line numbers,
//! machines, checkout paths, ids and redaction.
//!
//! - `stack_signature`: SHA-256 over the innermost N (default 5) in-app
//!   frames' (last two path components, function) — never line numbers.
//! - `error_signature`: SHA-256 over the exception type and the message with
//!   variable parts masked (numbers, ids, UUIDs, hex, paths, quoted values,
//!   timestamps, emails, and everything the redactor detects, including its
//!   pseudonyms) so it is the same before and after redaction.
//!
//! Both are 16 hex characters (64 bits): enough to avoid collisions within a
//! repository's failure history, short enough for humans.

use crate::model::Frame;
use crate::normalize::signature_path;
use crate::redact::mask_sensitive;
use regex::Regex;
use sha2::{Digest, Sha256};
use std::sync::LazyLock;

fn hash_hex(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0u8]);
    }
    let out = h.finalize();
    out[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// The stack signature of frames (innermost last): `None` when no in-app
/// frame names its function (a location alone — a compiler error, a panic
/// without backtrace — says where, not which code path; see [`location_signature`]).
pub fn stack_signature(frames: &[Frame], n: usize) -> Option<String> {
    let keys: Vec<String> = frames
        .iter()
        .rev()
        .filter(|f| f.in_app && f.function.is_some())
        .take(n.max(1))
        .map(|f| {
            let file = f.file.as_deref().map(signature_path).unwrap_or("");
            let func = f.function.as_deref().unwrap_or("");
            format!("{}|{}", mask_sensitive(file), mask_sensitive(func))
        })
        .collect();
    if keys.is_empty() {
        return None;
    }
    let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    Some(hash_hex(&refs))
}

/// The innermost in-app frame's file (last two components), hashed: refines
/// an error signature when there is no stack signature.
pub fn location_signature(frames: &[Frame]) -> Option<String> {
    let file = frames
        .iter()
        .rev()
        .find(|f| f.in_app && f.file.is_some())?
        .file
        .as_deref()?;
    Some(file_signature(file))
}

/// A file's last two path components, masked and hashed.
pub(crate) fn file_signature(file: &str) -> String {
    hash_hex(&[&mask_sensitive(signature_path(file))])
}

static MASKS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    [
        // ISO-8601 and common log timestamps.
        (r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?", "<ts>"),
        (r"\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b", "<ts>"),
        (r"(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "<id>"),
        (r"(?i)\b0x[0-9a-f]+\b", "<hex>"),
        (r"(?i)\b[0-9a-f]*\d[0-9a-f]*[a-f][0-9a-f]*\b|(?i)\b[0-9a-f]*[a-f][0-9a-f]*\d[0-9a-f]*\b", "<hex>"),
        // Identifiers mixing letters and digits (`cus_Pq12Rs34`, `t_8f3a2`, `req-77ab`).
        (r"\b[A-Za-z][A-Za-z0-9]*[_-][A-Za-z0-9_-]*\d[A-Za-z0-9_-]*\b|\b[A-Za-z]+\d[A-Za-z0-9]{4,}\b", "<id>"),
        // Quoted values: a name in quotes is data, not the error's kind.
        (r#""[^"\n]{0,200}"|'[^'\n]{0,200}'|`[^`\n]{0,200}`"#, "<q>"),
        // Paths (Unix and Windows), URLs.
        (r"(?i)\b[a-z][a-z0-9+.-]*://\S+", "<url>"),
        (r"(?:[A-Za-z]:)?(?:[\\/][\w.@+-]+){2,}[\\/]?", "<path>"),
        (r"\d+(?:\.\d+)?", "<n>"),
        (r"\s+", " "),
    ]
    .into_iter()
    .map(|(p, r)| (Regex::new(p).unwrap(), r))
    .collect()
});

/// The message with variable parts masked, as used by [`error_signature`].
pub fn normalize_message(message: &str) -> String {
    let mut s = mask_sensitive(message).into_owned();
    for (re, rep) in MASKS.iter() {
        if let std::borrow::Cow::Owned(o) = re.replace_all(&s, *rep) {
            s = o;
        }
    }
    // Long messages: the start identifies the error; diffs and dumps follow.
    let s = s.trim();
    crate::input::truncate_str(s, 512).to_owned()
}

/// The error signature of an exception type and message (variable parts
/// masked), or of the type and the [`missing_names`] when the message names
/// missing code.
pub fn error_signature(exception_type: Option<&str>, message: &str) -> String {
    let ty = exception_type.unwrap_or("").trim();
    let ty = ty.strip_prefix("builtins.").unwrap_or(ty);
    let names = missing_names(Some(ty), message);
    let ty = mask_sensitive(ty);
    if names.is_empty() {
        hash_hex(&[&ty, &normalize_message(message)])
    } else {
        // The names are the message: what follows them (the module's path,
        // `Did you mean: 'unquote'?`, a launcher's next lines) varies by
        // machine and version.
        hash_hex(&[&ty, "missing", &names.join(" ")])
    }
}

/// Python messages that name the code that is missing, not data:
/// `cannot import name 'X' from 'Y'`, `No module named 'X'`,
/// `module 'X' has no attribute 'Y'`.
static MISSING_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:cannot import name '([\w.]+)'(?: from (?:partially initialized module )?'([\w.]+)')?|No module named '([\w.]+)'|module '([\w.]+)' has no attribute '(\w+)')",
    )
    .unwrap()
});

/// What an import error or a missing module attribute says is missing
/// (`["soft_unicode", "markupsafe"]`), empty for any other error. The
/// quoted values of these messages are names of code, not data: the bug is
/// the name a dependency removed or never had, whoever imports it, so the
/// names are kept where other quoted values are masked. Python only
/// (`ImportError`, `ModuleNotFoundError`, `AttributeError`).
pub fn missing_names(exception_type: Option<&str>, message: &str) -> Vec<String> {
    let ty = exception_type.unwrap_or("").trim();
    let short = ty.rsplit('.').next().unwrap_or(ty);
    if !matches!(
        short,
        "ImportError" | "ModuleNotFoundError" | "AttributeError"
    ) {
        return Vec::new();
    }
    let first = message.lines().next().unwrap_or("");
    let first = crate::input::truncate_str(first, 1024).trim();
    let Some(c) = MISSING_NAME.captures(first) else {
        return Vec::new();
    };
    let import = c.get(1).is_some() || c.get(3).is_some();
    if import == (short == "AttributeError") {
        return Vec::new();
    }
    c.iter()
        .skip(1)
        .flatten()
        .map(|m| m.as_str().to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(file: &str, func: &str, line: u32, in_app: bool) -> Frame {
        Frame {
            file: Some(file.into()),
            function: Some(func.into()),
            line: Some(line),
            in_app,
        }
    }

    #[test]
    fn line_numbers_do_not_matter() {
        let a = vec![
            f("src/a.py", "main", 1, true),
            f("lib/x.py", "g", 9, false),
            f("src/b.py", "h", 3, true),
        ];
        let b = vec![
            f("src/a.py", "main", 10, true),
            f("lib/x.py", "g", 99, false),
            f("src/b.py", "h", 30, true),
        ];
        assert_eq!(stack_signature(&a, 5), stack_signature(&b, 5));
        let c = vec![
            f("src/a.py", "main", 1, true),
            f("src/b.py", "other", 3, true),
        ];
        assert_ne!(stack_signature(&a, 5), stack_signature(&c, 5));
        assert_eq!(stack_signature(&[f("x", "y", 1, false)], 5), None);
    }

    #[test]
    fn messages_mask_variable_parts() {
        let a = normalize_message(
            "user 42 not found at 2024-05-01T10:00:00Z in /srv/data/users.db ('alice')",
        );
        let b =
            normalize_message("user 7 not found at 2025-01-02T11:12:13Z in /var/x/y.db ('bob')");
        assert_eq!(a, b);
        assert_eq!(
            normalize_message("customer cus_Pq12Rs34 tenant t_8f3a2"),
            normalize_message("customer cus_Zz98Yx tenant t_11")
        );
        assert_eq!(
            error_signature(
                Some("KeyError"),
                "mail alice@example.com id 3fa85f64-5717-4562-b3fc-2c963f66afa6"
            ),
            error_signature(
                Some("KeyError"),
                "mail <email:0a1b2c3d> id 00000000-5717-4562-b3fc-2c963f66afa6"
            )
        );
        assert_ne!(
            error_signature(Some("KeyError"), "x"),
            error_signature(Some("ValueError"), "x")
        );
    }
}
