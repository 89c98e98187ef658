//! Redaction of secrets and personal data, before anything is stored.
//!
//! Two layers:
//! - **structured**: JSON fields and headers whose *key* is sensitive
//!   (`password`, `secret`, `token`, `authorization`, `api_key`, `cookie`, ...)
//!   have their whole value replaced;
//! - **textual**: detectors over free text (emails, card numbers with a Luhn
//!   check, JWTs, cloud and SaaS tokens, PEM private keys, URL passwords,
//!   bearer tokens, IPv4 addresses, phone numbers, IBANs with the mod-97
//!   check, high-entropy strings).
//!
//! Each value becomes a deterministic keyed pseudonym `<kind:xxxxxxxx>`, the
//! first 4 bytes of HMAC-SHA256(key, kind ‖ 0 ‖ value): the same value maps to
//! the same pseudonym, so events still correlate, and without the key the
//! value cannot be confirmed by guessing. Redaction is idempotent: pseudonyms
//! are left alone.
//!
//! Known trade-offs: pure hexadecimal strings (commit ids, trace ids, UUIDs)
//! are not treated as high-entropy secrets, so a hex-only API key is only
//! caught by context (`api_key=...`, `Authorization:`).

use crate::{Error, Result};
use hmac::{Hmac, Mac};
use regex::{Regex, RegexSet};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use std::borrow::Cow;
use std::sync::LazyLock;

/// The kinds of values the redactor replaces; the name appears in the pseudonym.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretKind {
    PrivateKey,
    UrlPassword,
    Jwt,
    GithubToken,
    GitlabToken,
    SlackToken,
    StripeKey,
    GoogleApiKey,
    AwsAccessKey,
    AwsSecretKey,
    Header,
    BearerToken,
    Secret,
    Email,
    Iban,
    CreditCard,
    Phone,
    Ipv4,
    /// A user name in a home-directory path (`/home/maria/...`).
    Username,
    HighEntropy,
}

impl SecretKind {
    /// The short name used in pseudonyms.
    pub fn tag(self) -> &'static str {
        match self {
            Self::PrivateKey => "private_key",
            Self::UrlPassword => "password",
            Self::Jwt => "jwt",
            Self::GithubToken => "github_token",
            Self::GitlabToken => "gitlab_token",
            Self::SlackToken => "slack_token",
            Self::StripeKey => "stripe_key",
            Self::GoogleApiKey => "google_api_key",
            Self::AwsAccessKey => "aws_access_key",
            Self::AwsSecretKey => "aws_secret_key",
            Self::Header => "header",
            Self::BearerToken => "token",
            Self::Secret => "secret",
            Self::Email => "email",
            Self::Iban => "iban",
            Self::CreditCard => "card",
            Self::Phone => "phone",
            Self::Ipv4 => "ip",
            Self::Username => "user",
            Self::HighEntropy => "secret",
        }
    }
}

type Validator = fn(&str) -> bool;

struct Detector {
    kind: SecretKind,
    pattern: &'static str,
    /// Capture group holding the value (0 = whole match).
    group: usize,
    validate: Option<Validator>,
}

/// Detectors in priority order: when matches overlap, the earlier detector wins.
const DETECTORS: &[Detector] = &[
    Detector {
        kind: SecretKind::PrivateKey,
        pattern: r"-----BEGIN[A-Z ]*PRIVATE KEY-----[\s\S]*?-----END[A-Z ]*PRIVATE KEY-----",
        group: 0,
        validate: None,
    },
    Detector {
        kind: SecretKind::UrlPassword,
        pattern: r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^/\s:@<>]{1,64}:([^@\s/<>]{1,128})@",
        group: 1,
        validate: None,
    },
    Detector {
        kind: SecretKind::Jwt,
        pattern: r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        group: 0,
        validate: None,
    },
    Detector {
        kind: SecretKind::GithubToken,
        pattern: r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b",
        group: 0,
        validate: None,
    },
    Detector {
        kind: SecretKind::GitlabToken,
        pattern: r"\bglpat-[A-Za-z0-9_-]{20,}",
        group: 0,
        validate: None,
    },
    Detector {
        kind: SecretKind::SlackToken,
        pattern: r"\bxox[abposr]-[A-Za-z0-9-]{10,}",
        group: 0,
        validate: None,
    },
    Detector {
        kind: SecretKind::StripeKey,
        pattern: r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b",
        group: 0,
        validate: None,
    },
    Detector {
        kind: SecretKind::GoogleApiKey,
        pattern: r"\bAIza[0-9A-Za-z_-]{35}",
        group: 0,
        validate: None,
    },
    Detector {
        kind: SecretKind::AwsAccessKey,
        pattern: r"\b(?:AKIA|ASIA|ABIA|ACCA|AIDA|AROA)[0-9A-Z]{16}\b",
        group: 0,
        validate: None,
    },
    Detector {
        kind: SecretKind::AwsSecretKey,
        pattern: r#"(?i)aws_?secret_?(?:access_?)?key["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})\b"#,
        group: 1,
        validate: None,
    },
    Detector {
        kind: SecretKind::Header,
        pattern: r"(?im)^[ \t>]*(?:authorization|proxy-authorization|cookie|set-cookie|x-api-key|x-auth-token|x-amz-security-token)[ \t]*:[ \t]*([^\r\n<]\S*(?:[ \t]+[^\s<]+)*)",
        group: 1,
        validate: None,
    },
    Detector {
        kind: SecretKind::BearerToken,
        pattern: r"(?i)\b(?:bearer|basic|token)\s+([A-Za-z0-9._~+/-]{12,}=*)",
        group: 1,
        validate: Some(has_digit_or_symbol),
    },
    Detector {
        kind: SecretKind::Secret,
        pattern: r#"(?i)\b[a-z0-9_.-]{0,40}?(?:password|passwd|pwd|passphrase|secret|client_secret|secret_key|api[_-]?key|apikey|access[_-]?token|refresh[_-]?token|auth[_-]?token|id[_-]?token|session[_-]?id|private[_-]?key|credentials?)["']?\s{0,3}[:=]\s{0,3}["']?([^\s"',;&}<>)\]]+)"#,
        group: 1,
        validate: None,
    },
    Detector {
        kind: SecretKind::Email,
        pattern: r"\b[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}\b",
        group: 0,
        validate: None,
    },
    Detector {
        kind: SecretKind::Iban,
        pattern: r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b",
        group: 0,
        validate: Some(iban_valid),
    },
    Detector {
        kind: SecretKind::CreditCard,
        // Unseparated, or groups of four with one consistent separator, or
        // Amex 4-6-5: UUIDs and dates are not read as cards.
        pattern: r"\b[2-6]\d{12,18}\b|\b[2-6]\d{3} \d{4} \d{4} \d{1,4}(?: \d{1,3})?\b|\b[2-6]\d{3}-\d{4}-\d{4}-\d{1,4}(?:-\d{1,3})?\b|\b3[47]\d{2}[ -]\d{6}[ -]\d{5}\b",
        group: 0,
        validate: Some(luhn_valid),
    },
    Detector {
        kind: SecretKind::Phone,
        pattern: r"(?:\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]?\d{2,4}){1,4}\b|\(\d{3}\)[ .-]?\d{3}[ .-]\d{4}\b|\b\d{3}[.-]\d{3}[.-]\d{4}\b)",
        group: 0,
        validate: Some(phone_valid),
    },
    Detector {
        kind: SecretKind::Ipv4,
        pattern: r"\b(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\b",
        group: 0,
        validate: Some(ip_personal),
    },
    Detector {
        kind: SecretKind::Username,
        pattern: r"(?:/home/|/Users/|[A-Za-z]:[\\/]Users[\\/])([A-Za-z0-9._-]{2,32})\b",
        group: 1,
        validate: Some(personal_user),
    },
    Detector {
        kind: SecretKind::HighEntropy,
        pattern: r"[A-Za-z0-9+/_-]{24,512}={0,2}",
        group: 0,
        validate: Some(high_entropy),
    },
];

/// A pseudonym already produced by the redactor.
static PLACEHOLDER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"<[a-z_0-9]{1,24}:[0-9a-f]{8}>").unwrap());

struct Compiled {
    set: RegexSet,
    regexes: Vec<Regex>,
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| Compiled {
    set: RegexSet::new(DETECTORS.iter().map(|d| d.pattern)).unwrap(),
    regexes: DETECTORS
        .iter()
        .map(|d| Regex::new(d.pattern).unwrap())
        .collect(),
});

fn has_digit_or_symbol(s: &str) -> bool {
    s.bytes()
        .any(|b| b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-' | b'+' | b'/' | b'='))
}

/// Luhn checksum over the digits of a candidate card number (13–19 digits).
pub fn luhn_valid(s: &str) -> bool {
    let digits: Vec<u32> = s.chars().filter_map(|c| c.to_digit(10)).collect();
    if !(13..=19).contains(&digits.len()) || digits.iter().all(|&d| d == digits[0]) {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| match (i % 2 == 1, d * 2) {
            (true, dd) if dd > 9 => dd - 9,
            (true, dd) => dd,
            (false, _) => d,
        })
        .sum();
    sum.is_multiple_of(10)
}

/// ISO 13616 mod-97 check of a candidate IBAN.
pub fn iban_valid(s: &str) -> bool {
    let compact: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    if !(15..=34).contains(&compact.len()) {
        return false;
    }
    let (head, tail) = compact.split_at(4);
    let mut rem: u32 = 0;
    for c in tail.chars().chain(head.chars()) {
        let v = match c.to_digit(36) {
            Some(v) => v,
            None => return false,
        };
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    rem == 1
}

fn phone_valid(s: &str) -> bool {
    let n = s.bytes().filter(u8::is_ascii_digit).count();
    (8..=15).contains(&n) || (n == 10 && !s.starts_with('+'))
}

/// Loopback, unspecified and documentation-free private addresses are kept
/// when they carry no personal information (`127.0.0.1`, `0.0.0.0`).
fn ip_personal(s: &str) -> bool {
    !(s.starts_with("127.") || s == "0.0.0.0" || s == "255.255.255.255")
}

/// Service accounts of CI systems and images are not people.
fn personal_user(s: &str) -> bool {
    !matches!(
        s,
        "runner"
            | "circleci"
            | "jenkins"
            | "gradle"
            | "ci"
            | "build"
            | "builder"
            | "node"
            | "app"
            | "ubuntu"
            | "vagrant"
            | "user"
            | "travis"
            | "gitlab-runner"
            | "buildkite-agent"
            | "admin"
            | "Shared"
            | "Public"
            | "Default"
    )
}

/// Shannon entropy in bits per character.
pub fn shannon_entropy(s: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in s.bytes() {
        counts[b as usize] += 1;
    }
    let n = s.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

fn high_entropy(s: &str) -> bool {
    let core = s.trim_end_matches('=');
    if core.len() < 24 {
        return false;
    }
    // Hex (commit ids, trace ids, UUIDs) is an identifier, not a secret.
    if core.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-') {
        return false;
    }
    let digits = core.bytes().filter(u8::is_ascii_digit).count();
    let upper = core.bytes().filter(u8::is_ascii_uppercase).count();
    let lower = core.bytes().filter(u8::is_ascii_lowercase).count();
    if digits < 1 || upper < 2 || lower < 2 {
        return false;
    }
    // Paths and identifiers made of words: `lib/python3.12`, and on Windows
    // and macOS capitalised ones (`AppData/Local/Programs/Python/Python312`,
    // `Frameworks/Python.framework`), which a secret's random segments
    // (`wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`) are not.
    if core.contains('/') && is_word_path(core) {
        return false;
    }
    if core.split(['_', '-']).filter(|w| w.len() >= 3).count() >= 3 && digits * 8 < core.len() {
        return false;
    }
    shannon_entropy(core) >= 3.8
}

/// Whether a `/`-separated string is a path of words: at least two segments
/// of three or more characters are words (`site`, `AppData`, `Python312`,
/// `x64`, `node_modules`, `spring-core`); a bundler's content hash beside
/// them (`deps/chunk-XK3JP9AQ`) does not make it a secret.
fn is_word_path(s: &str) -> bool {
    s.split('/')
        .filter(|seg| seg.len() >= 3 && is_word_segment(seg))
        .count()
        >= 2
}

/// Words joined by `-` or `_` (`node_modules`, `spring-core`, `AppData`).
fn is_word_segment(seg: &str) -> bool {
    seg.split(['-', '_']).filter(|w| !w.is_empty()).all(is_word)
}

/// `lib`, `Local`, `AppData`, `Python312`, `x64`, `2024`: camel-case words
/// (every upper-case letter begins a run of lower-case ones), then digits.
fn is_word(w: &str) -> bool {
    let letters = w.trim_end_matches(|c: char| c.is_ascii_digit());
    if letters.is_empty() {
        return w.len() <= 4;
    }
    let b = letters.as_bytes();
    b.iter().all(u8::is_ascii_alphabetic)
        && (b.len() == 1
            || b.iter().enumerate().all(|(i, c)| {
                !c.is_ascii_uppercase() || b.get(i + 1).is_some_and(u8::is_ascii_lowercase)
            }))
}

/// One value found by the detectors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub kind: SecretKind,
    /// Byte range in the input text.
    pub start: usize,
    pub end: usize,
}

/// Finds sensitive spans, highest-priority detector first, non-overlapping,
/// sorted by position. Existing pseudonyms are never matched.
fn find_spans(text: &str, disabled: &[SecretKind]) -> Vec<Finding> {
    let compiled = &*COMPILED;
    // Accepted spans by start; disjoint, so an overlap check is one lookup.
    let mut taken: std::collections::BTreeMap<usize, (usize, Option<SecretKind>)> = PLACEHOLDER
        .find_iter(text)
        .map(|m| (m.start(), (m.end(), None)))
        .collect();
    let hits = compiled.set.matches(text);
    for idx in hits.iter() {
        let det = &DETECTORS[idx];
        if disabled.contains(&det.kind) {
            continue;
        }
        for caps in compiled.regexes[idx].captures_iter(text) {
            let Some(m) = caps.get(det.group) else {
                continue;
            };
            if m.is_empty() {
                continue;
            }
            if let Some(v) = det.validate
                && !v(m.as_str())
            {
                continue;
            }
            let overlaps = taken
                .range(..m.end())
                .next_back()
                .is_some_and(|(_, (end, _))| *end > m.start());
            if !overlaps {
                taken.insert(m.start(), (m.end(), Some(det.kind)));
            }
        }
    }
    // Pseudonyms are kept as they are, not reported.
    taken
        .into_iter()
        .filter_map(|(start, (end, kind))| {
            Some(Finding {
                kind: kind?,
                start,
                end,
            })
        })
        .collect()
}

/// Replaces every sensitive value with `<*>` and every pseudonym with `<*>`:
/// what signatures are computed from, so they are the same before and after
/// redaction (whatever the redaction key and configuration).
pub(crate) fn mask_sensitive(text: &str) -> Cow<'_, str> {
    let spans = find_spans(text, &[]);
    let placeholders = PLACEHOLDER.is_match(text);
    if spans.is_empty() && !placeholders {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for s in &spans {
        out.push_str(&text[last..s.start]);
        out.push_str("<*>");
        last = s.end;
    }
    out.push_str(&text[last..]);
    Cow::Owned(PLACEHOLDER.replace_all(&out, "<*>").into_owned())
}

/// Keys whose values are always redacted in structured data (compared
/// case-insensitively with `-` and `_` removed; a key matches when it contains one).
const SENSITIVE_KEY_PARTS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "authorization",
    "apikey",
    "cookie",
    "privatekey",
    "credential",
    "sessionid",
    "accesskey",
    "signature",
    "xapikey",
];
/// Keys that are sensitive only when they are exactly this (after normalising).
const SENSITIVE_KEYS_EXACT: &[&str] = &[
    "pwd", "auth", "ssn", "pass", "pin", "cvv", "cvc", "session", "jwt",
];
/// Keys that look sensitive but are correlation identifiers TraceLab needs.
const SAFE_KEYS: &[&str] = &[
    "traceid",
    "spanid",
    "parentspanid",
    "tokencount",
    "tokens",
    "tokenizer",
    "tokentype",
];

/// Whether a structured key (JSON field, header name) holds a secret.
pub fn is_sensitive_key(key: &str) -> bool {
    let k: String = key
        .chars()
        .filter(|c| *c != '-' && *c != '_' && *c != '.')
        .flat_map(char::to_lowercase)
        .collect();
    if SAFE_KEYS.contains(&k.as_str()) {
        return false;
    }
    SENSITIVE_KEYS_EXACT.contains(&k.as_str()) || SENSITIVE_KEY_PARTS.iter().any(|p| k.contains(p))
}

/// Redactor configuration.
#[derive(Debug, Clone)]
pub struct RedactionConfig {
    /// HMAC key. See [`crate::DEV_REDACTION_KEY`] for the development default.
    pub key: Vec<u8>,
    /// Detectors turned off (e.g. `Ipv4` for internal-only logs).
    pub disabled: Vec<SecretKind>,
}

/// Replaces secrets and personal values with keyed pseudonyms.
#[derive(Clone)]
pub struct Redactor {
    mac: Hmac<Sha256>,
    disabled: Vec<SecretKind>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("key", &"<redacted>")
            .field("disabled", &self.disabled)
            .finish()
    }
}

impl Redactor {
    /// A redactor keyed with `key` and every detector enabled.
    pub fn new(key: &[u8]) -> Result<Self> {
        Self::with_config(RedactionConfig {
            key: key.to_vec(),
            disabled: Vec::new(),
        })
    }

    pub fn with_config(config: RedactionConfig) -> Result<Self> {
        if config.key.is_empty() {
            return Err(Error::InvalidArgument(
                "redaction key must not be empty".into(),
            ));
        }
        let mac = <Hmac<Sha256> as Mac>::new_from_slice(&config.key)
            .map_err(|e| Error::InvalidArgument(format!("redaction key: {e}")))?;
        Ok(Self {
            mac,
            disabled: config.disabled,
        })
    }

    /// The pseudonym for `value` of `kind`: `<tag:8 hex>`.
    pub fn pseudonym(&self, kind: SecretKind, value: &str) -> String {
        let mut mac = self.mac.clone();
        mac.update(kind.tag().as_bytes());
        mac.update(&[0]);
        mac.update(value.as_bytes());
        let out = mac.finalize().into_bytes();
        format!(
            "<{}:{:02x}{:02x}{:02x}{:02x}>",
            kind.tag(),
            out[0],
            out[1],
            out[2],
            out[3]
        )
    }

    /// Redacts free text.
    pub fn redact_text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.redact_text_report(text).0
    }

    /// Redacts free text and reports what was found (byte ranges in `text`).
    pub fn redact_text_report<'a>(&self, text: &'a str) -> (Cow<'a, str>, Vec<Finding>) {
        let spans = find_spans(text, &self.disabled);
        if spans.is_empty() {
            return (Cow::Borrowed(text), spans);
        }
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for s in &spans {
            out.push_str(&text[last..s.start]);
            out.push_str(&self.pseudonym(s.kind, &text[s.start..s.end]));
            last = s.end;
        }
        out.push_str(&text[last..]);
        (Cow::Owned(out), spans)
    }

    /// Redacts a JSON value in place: sensitive keys lose their whole value,
    /// other strings go through the text detectors. Depth is bounded by the
    /// caller's parse (serde_json stops at 128 levels).
    pub fn redact_json(&self, value: &mut serde_json::Value) {
        match value {
            serde_json::Value::String(s) => {
                if let Cow::Owned(r) = self.redact_text(s) {
                    *s = r;
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            serde_json::Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    if is_sensitive_key(k) && !v.is_null() {
                        let raw = match &*v {
                            serde_json::Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        let already = PLACEHOLDER
                            .find(&raw)
                            .is_some_and(|m| m.start() == 0 && m.end() == raw.len());
                        if !already {
                            *v =
                                serde_json::Value::String(self.pseudonym(SecretKind::Secret, &raw));
                        }
                    } else {
                        self.redact_json(v);
                    }
                }
            }
            _ => {}
        }
    }

    /// Redacts HTTP-style headers: sensitive names lose their value, others are scanned.
    pub fn redact_headers(&self, headers: &mut [(String, String)]) {
        for (name, value) in headers.iter_mut() {
            if is_sensitive_key(name) {
                *value = self.pseudonym(SecretKind::Header, value);
            } else if let Cow::Owned(r) = self.redact_text(value) {
                *value = r;
            }
        }
    }
}

/// Convenience: redact `text` with `key` (builds a [`Redactor`] each call;
/// keep a `Redactor` around for repeated use).
pub fn redact_text(text: &str, key: &[u8]) -> Result<String> {
    Ok(Redactor::new(key)?.redact_text(text).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r() -> Redactor {
        Redactor::new(b"test-key").unwrap()
    }

    #[test]
    fn validators() {
        assert!(luhn_valid("4111 1111 1111 1111"));
        assert!(!luhn_valid("4111 1111 1111 1112"));
        assert!(iban_valid("DE89 3704 0044 0532 0130 00"));
        assert!(iban_valid("GB82WEST12345698765432"));
        assert!(!iban_valid("GB82WEST12345698765433"));
        assert!(high_entropy("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"));
        assert!(!high_entropy("test_user_signup_with_existing_email_2"));
        assert!(!high_entropy("4bf92f3577b34da6a3ce929d0e0e4736"));
    }

    #[test]
    fn pseudonyms_are_deterministic_and_keyed() {
        let a = r().redact_text("mail bob@example.com now").into_owned();
        let b = r().redact_text("again bob@example.com").into_owned();
        let p = r().pseudonym(SecretKind::Email, "bob@example.com");
        assert!(a.contains(&p) && b.contains(&p), "{a} {b} {p}");
        let other = Redactor::new(b"other")
            .unwrap()
            .pseudonym(SecretKind::Email, "bob@example.com");
        assert_ne!(p, other);
        assert!(p.starts_with("<email:") && p.len() == "<email:>".len() + 8);
    }

    #[test]
    fn redaction_is_idempotent() {
        let once = r()
            .redact_text("password=hunter2 from 10.1.2.3 to alice@corp.io")
            .into_owned();
        let twice = r().redact_text(&once).into_owned();
        assert_eq!(once, twice);
        assert!(
            !once.contains("hunter2") && !once.contains("10.1.2.3") && !once.contains("alice@")
        );
    }

    #[test]
    fn json_keys_and_headers() {
        let mut v = serde_json::json!({"user": "u1", "password": "p@ss", "nested": {"api_key": 42, "trace_id": "abc", "note": "mail x@y.org"}});
        r().redact_json(&mut v);
        let s = v.to_string();
        assert!(
            !s.contains("p@ss") && !s.contains("42") && !s.contains("x@y.org"),
            "{s}"
        );
        assert!(s.contains("\"trace_id\":\"abc\""));
        let mut h = vec![
            ("Authorization".to_owned(), "Bearer abc.def".to_owned()),
            ("Accept".to_owned(), "*/*".to_owned()),
        ];
        r().redact_headers(&mut h);
        assert!(h[0].1.starts_with("<header:"));
        assert_eq!(h[1].1, "*/*");
    }

    #[test]
    fn empty_key_is_rejected() {
        assert!(Redactor::new(b"").is_err());
    }
}
