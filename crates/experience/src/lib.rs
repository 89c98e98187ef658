//! Learning from completed repairs (issue #16): from a failing-to-passing
//! history — the revisions in order, each with its diff and its CI
//! observation — reconstruct which changes repaired which CI problem,
//! separated from failed attempts, reverted edits and unrelated work.
//!
//! Everything here is pure: the inputs are plain data ([`model::History`]),
//! the output is a [`reconstruct::Reconstruction`] with both views, the
//! reconciliation, notes for what could not be organised and the
//! [`records::ExperienceRecord`]s at three levels. Mining a real repository
//! (checkouts, test runs) is the CLI's job (`tracelab experience mine`).
//!
//! The pipeline, one module each:
//! [`evidence`] (runner output → failures) → [`problems`] (atomic problems
//! and their status per revision) → [`hunks`] + [`relations`] (the net diff's
//! hunks and how they relate) → [`endpoint`] and [`development`] (the two
//! views) → [`reconcile`] → [`records`]. The experience agent reads them
//! back through [`retrieve`] (scope, matching, applicability) and [`apply`]
//! (an L1 record's hunks re-applied to a file).

pub mod apply;
pub mod branch;
pub mod ci_history;
pub mod ci_reports;
pub mod development;
pub mod endpoint;
pub mod evidence;
pub mod hunks;
pub mod model;
pub mod problems;
pub mod reconcile;
pub mod reconstruct;
pub mod records;
pub mod relations;
pub mod retrieve;
mod text;
pub mod workflow;

pub use model::{CiRun, Failure, History, JobRun, Revision, StepRun, StepStatus};
pub use reconstruct::{Reconstruction, reconstruct};
pub use records::{ExperienceRecord, Level};
pub use relations::{PathRelations, RelationKind, Relations};
