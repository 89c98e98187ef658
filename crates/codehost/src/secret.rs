//! API tokens: a type that cannot be printed, and where one comes from.
//!
//! A token is only ever read to build one request header (marked
//! sensitive, so HTTP-level logging shows `Sensitive`). `Debug` and
//! `Display` print `***`; the text is reachable only inside this crate.

use std::fmt;
use std::path::PathBuf;
use tracelab_domain::{Error, Result};

/// A secret string. `Debug`/`Display` never show it; there is no `Serialize`.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// Refuses an empty token and one spanning lines (a pasted file with a
    /// trailing header or two tokens): neither can be a header value.
    pub fn new(token: impl Into<String>) -> Result<Self> {
        let token = token.into();
        let trimmed = token.trim();
        if trimmed.is_empty() {
            return Err(Error::invalid("the code host token is empty"));
        }
        if trimmed.contains(['\n', '\r', '\0']) || !trimmed.is_ascii() {
            // Not echoed: it is the secret.
            return Err(Error::invalid(
                "the code host token must be one line of ASCII characters",
            ));
        }
        Ok(Self(trimmed.to_string()))
    }

    /// The secret itself, for the one header that carries it.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(***)")
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Where the token of a code host comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenSource {
    /// A file (a mounted Kubernetes Secret), read at every use so a rotated
    /// token is picked up without a restart. Its path may be named in
    /// errors; its content never is.
    File(PathBuf),
    /// A token held in memory (the CLI's environment, tests).
    Value(Token),
}

impl TokenSource {
    /// The token now.
    pub(crate) fn token(&self) -> Result<Token> {
        match self {
            TokenSource::Value(token) => Ok(token.clone()),
            TokenSource::File(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    Error::unavailable(format!(
                        "cannot read the code host token file {}: {}",
                        path.display(),
                        e.kind()
                    ))
                })?;
                Token::new(text).map_err(|e| {
                    Error::invalid(format!(
                        "the code host token file {}: {}",
                        path.display(),
                        e.message
                    ))
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_never_print() {
        let token = Token::new(" ghp_s3cret\n").unwrap();
        assert_eq!(token.expose(), "ghp_s3cret");
        assert_eq!(format!("{token} {token:?}"), "*** Token(***)");
        let source = TokenSource::Value(token);
        assert!(!format!("{source:?}").contains("s3cret"));
    }

    #[test]
    fn bad_tokens_are_refused_without_echo() {
        for bad in ["", "  \n", "a\nb", "tök"] {
            let e = Token::new(bad).unwrap_err();
            assert!(!e.message.contains(bad.trim()) || bad.trim().is_empty());
        }
    }

    #[test]
    fn token_files_are_read_at_each_use() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let source = TokenSource::File(path.clone());
        let e = source.token().unwrap_err();
        assert!(e.message.contains("token file"), "{e}");
        std::fs::write(&path, "first\n").unwrap();
        assert_eq!(source.token().unwrap().expose(), "first");
        std::fs::write(&path, "second").unwrap();
        assert_eq!(source.token().unwrap().expose(), "second");
    }
}
