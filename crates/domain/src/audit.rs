//! Who did what to an investigation after the pipeline: who started it,
//! who approved or rejected it and why, and the draft pull request it
//! became (or why opening it failed). Stores keep these rows append-only
//! (a trigger refuses UPDATE and DELETE); this module is the vocabulary
//! and the one rule about reviewers. No IO.

use crate::error::{Error, ErrorKind, Result};
use crate::report::Timestamp;
use serde::{Deserialize, Serialize};

/// What an audit row records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditAction {
    Started,
    Approved,
    Rejected,
    PullRequestOpened,
    PullRequestFailed,
}

impl AuditAction {
    pub const ALL: [AuditAction; 5] = [
        AuditAction::Started,
        AuditAction::Approved,
        AuditAction::Rejected,
        AuditAction::PullRequestOpened,
        AuditAction::PullRequestFailed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AuditAction::Started => "started",
            AuditAction::Approved => "approved",
            AuditAction::Rejected => "rejected",
            AuditAction::PullRequestOpened => "pull_request_opened",
            AuditAction::PullRequestFailed => "pull_request_failed",
        }
    }

    pub fn parse(s: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|a| a.as_str() == s)
            .ok_or_else(|| Error::internal(format!("unknown audit action {s:?} in the store")))
    }
}

impl std::fmt::Display for AuditAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One row of the audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub action: AuditAction,
    /// The API token's name; `local` or the OS user on one machine.
    pub actor: String,
    /// The actor's role (`viewer`, `reviewer`, `admin`, `local`).
    pub role: String,
    /// The reviewer's reason; for a failed pull request, the error.
    pub reason: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub at: Timestamp,
}

/// A draft pull request (GitHub) or merge request (GitLab) that was opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRequestLink {
    pub url: String,
    /// GitHub's number, GitLab's `iid`.
    pub number: u64,
    /// The code host's kind: `github` or `gitlab`.
    pub host: String,
}

/// Everything after the pipeline, as stored for one investigation.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HandOff {
    /// Who started it (absent for investigations stored before this was recorded).
    pub started_by: Option<String>,
    /// Oldest first.
    pub audit: Vec<AuditEntry>,
    pub pull_request: Option<PullRequestLink>,
    /// Why the last attempt to open the pull request failed; cleared when one opens.
    pub pull_request_error: Option<String>,
}

/// A reviewer's decision, as a store records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Review<'a> {
    pub approve: bool,
    pub reviewer: &'a str,
    pub role: &'a str,
    pub reason: Option<&'a str>,
    /// Refuse a reviewer who started the investigation ([`check_reviewer`]).
    pub forbid_self_approval: bool,
}

/// The four-eyes rule: with `forbid_self_approval`, the person who started
/// an investigation may not decide it — approving or rejecting — since
/// an approval is what turns the diagnosis into a pull request in their
/// name. PermissionDenied (403) with the reason. Investigations with no
/// recorded starter pass: there is nobody to compare with.
pub fn check_reviewer(
    started_by: Option<&str>,
    reviewer: &str,
    forbid_self_approval: bool,
) -> Result<()> {
    match started_by {
        Some(starter) if forbid_self_approval && starter == reviewer => Err(Error::new(
            ErrorKind::PermissionDenied,
            format!(
                "{reviewer} started this investigation and may not review it too \
                 (review.forbid_self_approval): another reviewer must decide"
            ),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_round_trip() {
        for a in AuditAction::ALL {
            assert_eq!(AuditAction::parse(a.as_str()).unwrap(), a);
            assert_eq!(
                serde_json::to_value(a).unwrap(),
                serde_json::Value::String(a.as_str().into())
            );
        }
        assert!(AuditAction::parse("approve").is_err());
    }

    #[test]
    fn the_starter_may_not_review_when_forbidden() {
        let e = check_reviewer(Some("alice"), "alice", true).unwrap_err();
        assert_eq!(e.kind, ErrorKind::PermissionDenied);
        assert!(e.message.contains("alice started"), "{e}");
        assert!(check_reviewer(Some("alice"), "bob", true).is_ok());
        assert!(check_reviewer(Some("alice"), "alice", false).is_ok());
        assert!(check_reviewer(None, "alice", true).is_ok());
    }
}
