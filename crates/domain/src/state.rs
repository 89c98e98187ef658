//! The investigation state machine. Transitions are explicit; an illegal one is an error.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum InvestigationState {
    Created,
    ContextLoading,
    Investigating,
    Verifying,
    Arbitrating,
    WaitingForReview,
    Approved,
    Rejected,
    Failed,
    Blocked,
}

use InvestigationState::*;

impl InvestigationState {
    pub const ALL: [InvestigationState; 10] = [
        Created,
        ContextLoading,
        Investigating,
        Verifying,
        Arbitrating,
        WaitingForReview,
        Approved,
        Rejected,
        Failed,
        Blocked,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Created => "CREATED",
            ContextLoading => "CONTEXT_LOADING",
            Investigating => "INVESTIGATING",
            Verifying => "VERIFYING",
            Arbitrating => "ARBITRATING",
            WaitingForReview => "WAITING_FOR_REVIEW",
            Approved => "APPROVED",
            Rejected => "REJECTED",
            Failed => "FAILED",
            Blocked => "BLOCKED",
        }
    }

    /// Terminal states accept no further transition.
    pub fn is_terminal(self) -> bool {
        matches!(self, Approved | Rejected | Failed | Blocked)
    }

    /// Whether `self -> next` is allowed. The happy path moves strictly
    /// forward; any non-terminal state may fail or block.
    pub fn can_move_to(self, next: InvestigationState) -> bool {
        if self.is_terminal() {
            return false;
        }
        if matches!(next, Failed | Blocked) {
            return true;
        }
        matches!(
            (self, next),
            (Created, ContextLoading)
                | (ContextLoading, Investigating)
                | (Investigating, Verifying)
                | (Verifying, Arbitrating)
                | (Arbitrating, WaitingForReview)
                | (WaitingForReview, Approved)
                | (WaitingForReview, Rejected)
        )
    }

    /// Checks a transition and returns the new state, or a Conflict error naming both ends.
    pub fn transition(self, next: InvestigationState) -> Result<InvestigationState> {
        if self.can_move_to(next) {
            Ok(next)
        } else {
            Err(Error::conflict(format!(
                "illegal investigation transition {self} -> {next}"
            )))
        }
    }
}

impl fmt::Display for InvestigationState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for InvestigationState {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|state| state.as_str() == s)
            .ok_or_else(|| Error::invalid(format!("unknown investigation state {s:?}")))
    }
}

/// One persisted transition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transition {
    pub from: InvestigationState,
    pub to: InvestigationState,
    #[serde(with = "time::serde::rfc3339")]
    pub at: time::OffsetDateTime,
    pub reason: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn happy_path_is_legal() {
        let path = [
            Created,
            ContextLoading,
            Investigating,
            Verifying,
            Arbitrating,
            WaitingForReview,
            Approved,
        ];
        for pair in path.windows(2) {
            assert!(pair[0].can_move_to(pair[1]), "{} -> {}", pair[0], pair[1]);
        }
    }

    #[test]
    fn skipping_and_going_back_are_illegal() {
        assert!(Created.transition(Verifying).is_err());
        assert!(Verifying.transition(Investigating).is_err());
        assert!(Investigating.transition(Approved).is_err());
        assert!(Approved.transition(Failed).is_err());
        assert!(Failed.transition(Created).is_err());
    }

    #[test]
    fn any_live_state_can_fail_or_block() {
        for state in InvestigationState::ALL
            .into_iter()
            .filter(|s| !s.is_terminal())
        {
            assert!(state.can_move_to(Failed));
            assert!(state.can_move_to(Blocked));
        }
    }

    #[test]
    fn names_round_trip() {
        for state in InvestigationState::ALL {
            assert_eq!(state.as_str().parse::<InvestigationState>().unwrap(), state);
            assert_eq!(
                serde_json::to_string(&state).unwrap(),
                format!("\"{}\"", state.as_str())
            );
        }
    }
}
