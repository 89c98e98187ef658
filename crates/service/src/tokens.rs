//! Bearer tokens from settings, shared by every service that authenticates
//! callers. Each token belongs to someone (a name, a role, a source) and is
//! at least 16 characters; a token listed twice is a configuration error.
//! Lookups go by the token's SHA-256 digest, so the time a lookup takes
//! says nothing about how much of a guessed token was right.

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Arc;
use tracelab_domain::{Error, Result};

/// A `[[tokens]]` entry of a service whose tokens only name their owner.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NamedToken {
    pub name: String,
    pub token: String,
}

impl TokenTable<String> {
    /// Each token stands for its owner's name.
    pub fn named(what: &str, tokens: &[NamedToken]) -> Result<Self> {
        Self::new(
            what,
            tokens
                .iter()
                .map(|t| (t.name.clone(), t.token.clone(), t.name.clone())),
        )
    }
}

/// Secure by default: a service with no tokens configured refuses to start
/// unless `allow_unauthenticated` (a development machine), and says loudly
/// that it runs open when allowed. `what` names the tokens (`API tokens`),
/// `open_means` what an open service lets any caller do.
pub fn require_tokens(
    open: bool,
    allow_unauthenticated: bool,
    what: &str,
    open_means: &str,
) -> Result<()> {
    match (open, allow_unauthenticated) {
        (false, _) => Ok(()),
        (true, true) => {
            tracing::warn!(
                "UNAUTHENTICATED: no {what} configured and allow_unauthenticated is set: {open_means}; use this on a development machine only"
            );
            Ok(())
        }
        (true, false) => Err(Error::invalid(format!(
            "no {what} configured: set [[tokens]] in the settings (or a Secret), or, on a development machine only, allow_unauthenticated = true ({open_means})"
        ))),
    }
}

/// Shortest token accepted in settings.
pub const MIN_TOKEN_LEN: usize = 16;

/// Tokens and what each one stands for.
#[derive(Debug, Clone)]
pub struct TokenTable<T> {
    by_digest: Arc<HashMap<[u8; 32], T>>,
}

impl<T> Default for TokenTable<T> {
    fn default() -> Self {
        Self {
            by_digest: Arc::new(HashMap::new()),
        }
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl<T> TokenTable<T> {
    /// `entries` are (owner's name for errors, token, value); `what` names the tokens in errors ("API token").
    pub fn new(what: &str, entries: impl IntoIterator<Item = (String, String, T)>) -> Result<Self> {
        let mut by_digest = HashMap::new();
        for (name, token, value) in entries {
            if token.len() < MIN_TOKEN_LEN {
                return Err(Error::invalid(format!(
                    "{what} of {name:?} is shorter than {MIN_TOKEN_LEN} characters"
                )));
            }
            if by_digest.insert(digest(&token), value).is_some() {
                return Err(Error::invalid(format!(
                    "{what} of {name:?} is listed twice"
                )));
            }
        }
        Ok(Self {
            by_digest: Arc::new(by_digest),
        })
    }

    /// No tokens configured: the service is open (one machine).
    pub fn is_open(&self) -> bool {
        self.by_digest.is_empty()
    }

    /// What an `Authorization: Bearer …` value stands for; `Err` is the
    /// 401 / UNAUTHENTICATED message.
    pub fn bearer(&self, authorization: Option<&str>) -> std::result::Result<&T, String> {
        let token = authorization
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::trim)
            .ok_or("missing bearer token")?;
        self.by_digest
            .get(&digest(token))
            .ok_or_else(|| "unknown token".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_tokens_refuses_to_start_unless_allowed() {
        let e = require_tokens(true, false, "API tokens", "every caller is admin").unwrap_err();
        assert!(e.message.contains("allow_unauthenticated"), "{e}");
        assert!(require_tokens(true, true, "API tokens", "every caller is admin").is_ok());
        assert!(require_tokens(false, false, "API tokens", "every caller is admin").is_ok());
    }

    fn entry(name: &str, token: &str) -> (String, String, String) {
        (name.into(), token.into(), name.into())
    }

    #[test]
    fn bearer_tokens_name_their_owner() {
        let t = TokenTable::new(
            "token",
            [
                entry("ci", "0123456789abcdef"),
                entry("bob", "fedcba9876543210"),
            ],
        )
        .unwrap();
        assert!(!t.is_open());
        assert_eq!(
            t.bearer(Some("Bearer 0123456789abcdef")),
            Ok(&"ci".to_string())
        );
        assert_eq!(
            t.bearer(Some("Bearer  fedcba9876543210 ")),
            Ok(&"bob".to_string())
        );
        assert_eq!(t.bearer(None), Err("missing bearer token".into()));
        assert_eq!(
            t.bearer(Some("Basic abc")),
            Err("missing bearer token".into())
        );
        assert_eq!(
            t.bearer(Some("Bearer 0123456789abcdeX")),
            Err("unknown token".into())
        );
    }

    #[test]
    fn short_and_repeated_tokens_are_configuration_errors() {
        let short = TokenTable::new("API token", [entry("x", "short")]).unwrap_err();
        assert!(
            short
                .message
                .contains("API token of \"x\" is shorter than 16"),
            "{short}"
        );
        let twice = TokenTable::new(
            "token",
            [
                entry("a", "0123456789abcdef"),
                entry("b", "0123456789abcdef"),
            ],
        )
        .unwrap_err();
        assert!(twice.message.contains("\"b\" is listed twice"), "{twice}");
        assert!(TokenTable::<String>::new("token", []).unwrap().is_open());
    }
}
