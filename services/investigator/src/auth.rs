//! Bearer tokens with roles (DESIGN.md: viewer, reviewer, admin); the table
//! of who may do what is [`Action::role`]. With no tokens configured the API
//! is open (one machine), and the service says so at start-up.

use serde::{Deserialize, Serialize};
use tracelab_domain::Result;
use tracelab_service::tokens::TokenTable;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Viewer,
    Reviewer,
    Admin,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Reviewer => "reviewer",
            Role::Admin => "admin",
        }
    }
}

/// What a caller wants to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Read,
    Start,
    Review,
}

impl Action {
    /// | action | least role |
    /// |---|---|
    /// | read investigations, hypotheses, evidence | viewer |
    /// | start an investigation | reviewer |
    /// | approve or reject | reviewer |
    /// | open the draft pull request of an approved one | reviewer |
    pub fn role(self) -> Role {
        match self {
            Action::Read => Role::Viewer,
            Action::Start | Action::Review => Role::Reviewer,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenSetting {
    /// Who the token belongs to (written to the audit log).
    pub name: String,
    pub token: String,
    pub role: Role,
}

/// The authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub name: String,
    pub role: Role,
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denied {
    /// No or unknown token: 401 / UNAUTHENTICATED.
    Unauthenticated(String),
    /// Known token, role too low: 403 / PERMISSION_DENIED.
    Forbidden(String),
}

#[derive(Clone, Debug, Default)]
pub struct Auth {
    tokens: TokenTable<Caller>,
}

impl Auth {
    pub fn new(settings: &[TokenSetting]) -> Result<Self> {
        let entries = settings.iter().map(|t| {
            let caller = Caller {
                name: t.name.clone(),
                role: t.role,
            };
            (t.name.clone(), t.token.clone(), caller)
        });
        Ok(Self {
            tokens: TokenTable::new("API token", entries)?,
        })
    }

    pub fn is_open(&self) -> bool {
        self.tokens.is_open()
    }

    /// Checks an `Authorization` header value for `action`.
    pub fn authorize(
        &self,
        header: Option<&str>,
        action: Action,
    ) -> std::result::Result<Caller, Denied> {
        if self.is_open() {
            return Ok(Caller {
                name: "anonymous".into(),
                role: Role::Admin,
            });
        }
        let caller = self
            .tokens
            .bearer(header)
            .map_err(Denied::Unauthenticated)?;
        if caller.role < action.role() {
            return Err(Denied::Forbidden(format!(
                "{} needs the {} role; {} has {}",
                match action {
                    Action::Read => "reading",
                    Action::Start => "starting an investigation",
                    Action::Review => "approving, rejecting or opening a pull request",
                },
                action.role().as_str(),
                caller.name,
                caller.role.as_str()
            )));
        }
        Ok(caller.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth() -> Auth {
        Auth::new(&[
            TokenSetting {
                name: "ci".into(),
                token: "viewer-token-0123456789".into(),
                role: Role::Viewer,
            },
            TokenSetting {
                name: "alice".into(),
                token: "reviewer-token-0123456789".into(),
                role: Role::Reviewer,
            },
        ])
        .unwrap()
    }

    #[test]
    fn roles_gate_actions() {
        let a = auth();
        assert!(
            a.authorize(Some("Bearer viewer-token-0123456789"), Action::Read)
                .is_ok()
        );
        assert!(matches!(
            a.authorize(Some("Bearer viewer-token-0123456789"), Action::Review),
            Err(Denied::Forbidden(_))
        ));
        let alice = a
            .authorize(Some("Bearer reviewer-token-0123456789"), Action::Review)
            .unwrap();
        assert_eq!(alice.name, "alice");
        assert!(matches!(
            a.authorize(None, Action::Read),
            Err(Denied::Unauthenticated(_))
        ));
        assert!(matches!(
            a.authorize(Some("Bearer nope"), Action::Read),
            Err(Denied::Unauthenticated(_))
        ));
    }

    #[test]
    fn short_tokens_are_refused() {
        let e = Auth::new(&[TokenSetting {
            name: "x".into(),
            token: "short".into(),
            role: Role::Admin,
        }])
        .unwrap_err();
        assert!(e.message.contains("16"), "{e}");
    }
}
