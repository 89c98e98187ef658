//! Who sent the evidence. With tokens configured, a bearer token is required
//! and its name is the source (rate limits and the `source` column); without
//! them the intake is open and the source is what the caller says
//! (`X-TraceLab-Source`) or else its address.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;
use tracelab_domain::{Error, Result};

/// The header naming the source when no tokens are configured.
pub const SOURCE_HEADER: &str = "x-tracelab-source";

/// Longest source name kept from a header (longer ones are cut).
const MAX_SOURCE_LEN: usize = 128;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenSetting {
    /// The source name evidence sent with this token is stored under.
    pub name: String,
    pub token: String,
}

#[derive(Clone, Debug, Default)]
pub struct Auth {
    tokens: Arc<HashMap<String, String>>,
}

impl Auth {
    pub fn new(settings: &[TokenSetting]) -> Result<Self> {
        let mut tokens = HashMap::new();
        for t in settings {
            if t.token.len() < 16 {
                return Err(Error::invalid(format!(
                    "intake token of {:?} is shorter than 16 characters",
                    t.name
                )));
            }
            if tokens.insert(t.token.clone(), t.name.clone()).is_some() {
                return Err(Error::invalid(format!(
                    "intake token of {:?} is listed twice",
                    t.name
                )));
            }
        }
        Ok(Self {
            tokens: Arc::new(tokens),
        })
    }

    pub fn is_open(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The source of a request: the token's name, or (open intake) the
    /// declared source, or the peer. `Err` carries the 401 message.
    pub fn source(
        &self,
        authorization: Option<&str>,
        declared: Option<&str>,
        peer: Option<std::net::IpAddr>,
    ) -> std::result::Result<String, String> {
        if !self.is_open() {
            let token = authorization
                .and_then(|h| h.strip_prefix("Bearer "))
                .map(str::trim)
                .ok_or("missing bearer token")?;
            return self
                .tokens
                .get(token)
                .cloned()
                .ok_or_else(|| "unknown token".to_string());
        }
        let declared = declared.map(str::trim).filter(|s| !s.is_empty());
        Ok(match (declared, peer) {
            (Some(s), _) => s.chars().take(MAX_SOURCE_LEN).collect(),
            (None, Some(ip)) => ip.to_string(),
            (None, None) => "unknown".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_name_the_source() {
        let a = Auth::new(&[TokenSetting {
            name: "github".into(),
            token: "a-long-enough-token-1".into(),
        }])
        .unwrap();
        assert_eq!(
            a.source(Some("Bearer a-long-enough-token-1"), Some("x"), None),
            Ok("github".into())
        );
        assert!(a.source(None, Some("x"), None).is_err());
        assert!(a.source(Some("Bearer nope"), None, None).is_err());
    }

    #[test]
    fn open_intake_uses_the_header_then_the_peer() {
        let a = Auth::new(&[]).unwrap();
        let ip = "10.1.2.3".parse().ok();
        assert_eq!(a.source(None, Some(" ci-1 "), ip), Ok("ci-1".into()));
        assert_eq!(a.source(None, None, ip), Ok("10.1.2.3".into()));
        assert_eq!(
            a.source(None, Some(&"x".repeat(500)), ip).unwrap().len(),
            128
        );
    }

    #[test]
    fn short_or_repeated_tokens_are_refused() {
        let t = |token: &str| TokenSetting {
            name: "x".into(),
            token: token.into(),
        };
        assert!(Auth::new(&[t("short")]).is_err());
        assert!(Auth::new(&[t("0123456789abcdef"), t("0123456789abcdef")]).is_err());
    }
}
