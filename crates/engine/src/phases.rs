//! The pipeline as four phases with plain inputs and outputs, so the embedded
//! engine runs them in one process and the fleet runs them in different
//! services (investigator: [`reproduce`] and [`propose`]; verifier:
//! [`verify_candidate`]; arbiter: [`conclude`]) with the same code.

use crate::agents::git_history::GoodBeside;
use crate::agents::test_behaviour::{Classification, Reproducer};
use crate::focus::RangeLogTask;
use serde::{Deserialize, Serialize};
use tracelab_domain::contract::RateOracle;
use tracelab_domain::hypothesis::Hypothesis;
use tracelab_domain::report::{BisectSummary, Suspect};
use tracelab_domain::sequential::Behaviour;

mod candidates;
mod conclusion;
mod proposal;
mod reproduction;

pub use candidates::{
    pending_repair, propose_experience, propose_repair, proposed_revert, verify_candidate,
};
pub use conclusion::conclude;
pub use proposal::{
    Proposed, behaviour_checks, numbered, propose, propose_again, propose_awaiting_fix,
};
pub(crate) use reproduction::report_behaviour;
pub use reproduction::reproduce;

/// The culprit commit found by the git-history agent, waiting for its revert
/// to be verified.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RevertCandidate {
    /// The hypothesis number its verification will carry.
    pub number: u32,
    /// Full sha.
    pub culprit: String,
    /// Consecutive passes that make the fixed test trustworthy (flake model).
    pub passes_needed: u32,
    /// For a flakiness regression: the rates its fix is judged between
    /// (the fix brings the rate back to the background rate, not to zero).
    #[serde(default)]
    pub rates: Option<RateOracle>,
}

/// What the agents established before verification.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Proposal {
    pub behaviour: Behaviour,
    /// Hypotheses the agents already settled with their own experiments
    /// (flaky, order- and environment-dependent), numbered from 1.
    pub hypotheses: Vec<Hypothesis>,
    /// The hypothesis that still needs a sandbox to be proved.
    pub revert: Option<RevertCandidate>,
    pub bisect: Option<BisectSummary>,
    pub notes: Vec<String>,
    /// Where to look in the code (the code-path agent), best first.
    #[serde(default)]
    pub suspects: Vec<Suspect>,
    /// The repair hypothesis a verifier proves, when the fleet proposes one
    /// (the embedded pipeline decides after the revert is verified).
    #[serde(default)]
    pub repair: Option<RepairCandidate>,
    /// The repair to prove if the revert is not verified: in the fleet the
    /// revert's verifier proposes it then, as the embedded pipeline does.
    #[serde(default)]
    pub repair_after_revert: Option<RepairCandidate>,
    /// The experience agent's hypothesis a verifier proves, when the fleet
    /// proposes one ([`propose_experience`]).
    #[serde(default)]
    pub experience: Option<RepairCandidate>,
}

/// Repair templates to screen and prove on the proposal's suspects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepairCandidate {
    /// The hypothesis number its verification will carry.
    pub number: u32,
}

/// The reproduction as far as the pipeline waits for it: the first run that
/// shows the failure, after which the culprit search can start while the
/// sequential test goes on ([`propose`] finishes it).
pub enum Reproduction {
    /// The sequential test decided without ever showing the failure.
    Decided(Classification),
    /// The failure was seen; the re-runs go on in the background.
    FirstFailure(Reproducer, Box<HeadStart>),
}

/// What the first round started for the culprit search beside the first
/// run at bad, when a `--good` was given: the bad revision's tests run at
/// good, and the range's log being read.
#[derive(Default)]
pub struct HeadStart {
    pub good: Option<GoodBeside>,
    pub range: Option<RangeLogTask>,
}

impl Proposal {
    /// The number the next hypothesis gets: after the settled ones and the
    /// revert, when there is one.
    pub fn next_number(&self) -> u32 {
        let settled = self.hypotheses.iter().map(|h| h.number).max().unwrap_or(0);
        let revert = self.revert.as_ref().map_or(0, |r| r.number);
        settled.max(revert) + 1
    }
}
