//! Identifiers. Time-ordered UUIDs so that listings sort by creation.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Identifies one investigation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct InvestigationId(pub String);

impl InvestigationId {
    pub fn generate() -> Self {
        Self(uuid::Uuid::now_v7().to_string())
    }
    /// A short form for branch names and terminal output: the random tail of the UUID.
    pub fn short(&self) -> &str {
        let s = self.0.as_str();
        if s.len() > 8 { &s[s.len() - 8..] } else { s }
    }
}

impl fmt::Display for InvestigationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Identifies one hypothesis: `{investigation}-h{N}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct HypothesisId(pub String);

impl HypothesisId {
    pub fn new(investigation: &InvestigationId, number: u32) -> Self {
        Self(format!("{}-h{number}", investigation.0))
    }
}

impl fmt::Display for HypothesisId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The git branch a hypothesis is verified on: `ai-debug/{ISSUE_ID}-h{N}`.
pub fn hypothesis_branch(issue_id: &str, number: u32) -> String {
    let safe: String = issue_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("ai-debug/{safe}-h{number}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_names_are_sanitised() {
        assert_eq!(hypothesis_branch("JIRA-12", 1), "ai-debug/JIRA-12-h1");
        assert_eq!(hypothesis_branch("a b/../c", 2), "ai-debug/a-b----c-h2");
    }

    #[test]
    fn short_ids_are_the_tail() {
        let id = InvestigationId("0193-abcd-1234567890ab".into());
        assert_eq!(id.short(), "567890ab");
    }
}
