//! Hypotheses: a proposed cause, optionally a patch, and the experiments that judge it.

use crate::experiment::{Experiment, RunCounts};
use crate::ids::HypothesisId;
use serde::{Deserialize, Serialize};

/// Which agent proposed a hypothesis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentKind {
    GitHistory,
    TestBehaviour,
    CodePath,
    Experience,
}

/// What the hypothesis claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HypothesisKind {
    /// A commit caused the failure; reverting (part of) it fixes it.
    Revert,
    /// The test fails intermittently at the same revision and environment.
    Flaky,
    /// The test passes alone and fails inside its suite.
    OrderDependent,
    /// The outcome depends on an environment variable (timezone, locale, seed).
    EnvironmentDependent,
    /// A code change proposed from other evidence.
    Patch,
}

impl HypothesisKind {
    /// Whether this hypothesis carries a fix judged by the four-part contract.
    pub fn has_fix(self) -> bool {
        matches!(self, HypothesisKind::Revert | HypothesisKind::Patch)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum HypothesisStatus {
    /// Proposed, not yet judged.
    Pending,
    Verified,
    Rejected,
    Inconclusive,
    Blocked,
}

impl HypothesisStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            HypothesisStatus::Pending => "PENDING",
            HypothesisStatus::Verified => "VERIFIED",
            HypothesisStatus::Rejected => "REJECTED",
            HypothesisStatus::Inconclusive => "INCONCLUSIVE",
            HypothesisStatus::Blocked => "BLOCKED",
        }
    }
}

/// A commit as people read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitInfo {
    pub commit: String,
    pub summary: String,
    pub author: String,
    /// RFC 3339 author date.
    pub date: String,
}

/// Flakiness measured over re-runs, with a 95% Wilson interval for the rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FlakyStats {
    pub runs: u32,
    pub failures: u32,
    pub failure_rate: f64,
    pub interval: (f64, f64),
    /// Whether the sequential test reached the configured confidence before the run cap.
    pub confident: bool,
}

impl FlakyStats {
    pub fn from_counts(counts: RunCounts, confident: bool) -> Self {
        let judged = counts.failures + counts.passes();
        Self {
            runs: judged,
            failures: counts.failures,
            failure_rate: counts.failure_rate(),
            interval: crate::sequential::wilson_interval(counts.failures, judged, 1.96),
            confident,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hypothesis {
    pub id: HypothesisId,
    pub number: u32,
    pub agent: AgentKind,
    pub kind: HypothesisKind,
    /// One sentence a reviewer can read.
    pub summary: String,
    /// Why the status is what it is.
    pub status_reason: String,
    pub status: HypothesisStatus,
    /// Unified diff against the bad revision.
    pub patch: Option<String>,
    /// The branch the patch was verified on (`ai-debug/{ISSUE_ID}-h{N}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub culprit: Option<CommitInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flaky: Option<FlakyStats>,
    /// Free-form facts the agent found (environment delta, suite order, confidence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<serde_json::Value>,
    pub experiments: Vec<Experiment>,
}

impl Hypothesis {
    pub fn new(
        id: HypothesisId,
        number: u32,
        agent: AgentKind,
        kind: HypothesisKind,
        summary: impl Into<String>,
    ) -> Self {
        Self {
            id,
            number,
            agent,
            kind,
            summary: summary.into(),
            status_reason: String::new(),
            status: HypothesisStatus::Pending,
            patch: None,
            branch: None,
            culprit: None,
            flaky: None,
            detail: None,
            experiments: Vec::new(),
        }
    }

    /// Lines added plus lines removed by the patch; 0 without one.
    pub fn patch_size(&self) -> usize {
        self.patch
            .as_deref()
            .map(crate::patch::changed_line_count)
            .unwrap_or(0)
    }
}
