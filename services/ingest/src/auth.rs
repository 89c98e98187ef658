//! Who sent the evidence. With tokens configured, a bearer token is required
//! and its name is the source (rate limits and the `source` column); without
//! them the intake is open and the source is what the caller says
//! (`X-TraceLab-Source`) or else its address.

use tracelab_domain::Result;
use tracelab_service::tokens::TokenTable;

/// The header naming the source when no tokens are configured.
pub const SOURCE_HEADER: &str = "x-tracelab-source";

/// Longest source name kept from a header (longer ones are cut).
const MAX_SOURCE_LEN: usize = 128;

/// A `[[tokens]]` entry: the source name evidence sent with the token is stored under.
pub use tracelab_service::tokens::NamedToken as TokenSetting;

#[derive(Clone, Debug, Default)]
pub struct Auth {
    tokens: TokenTable<String>,
}

impl Auth {
    pub fn new(settings: &[TokenSetting]) -> Result<Self> {
        Ok(Self {
            tokens: TokenTable::named("intake token", settings)?,
        })
    }

    pub fn is_open(&self) -> bool {
        self.tokens.is_open()
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
            return self.tokens.bearer(authorization).cloned();
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
