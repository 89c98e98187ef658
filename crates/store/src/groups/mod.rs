//! Failure groups (tracelab-evidence's [`GroupStore`]) on PostgreSQL and
//! SQLite. The pure model in `tracelab-evidence` ([`FailureGroup::observe`],
//! `resolve`, `mark_investigation`) holds all the logic; these stores only
//! load a group under a lock, apply the model and write it back in one
//! transaction, so they behave exactly like [`InMemoryGroupStore`] —
//! `conformance` (feature `testsuite`) checks that on all three.
//!
//! [`GroupStore`]: tracelab_evidence::GroupStore
//! [`FailureGroup::observe`]: tracelab_evidence::FailureGroup::observe
//! [`InMemoryGroupStore`]: tracelab_evidence::InMemoryGroupStore

mod columns;
#[cfg(feature = "testsuite")]
pub mod conformance;
mod evidence;
mod merges;
mod postgres;
mod resolution;
mod rows;
mod sqlite;

pub use evidence::{EvidenceOutcome, NewEvidence, Suggested};
pub use merges::{MAX_CANDIDATES, MAX_UNDO_REASON, MergeRecord, MergingGroupStore, Undo, Unmerged};
pub use postgres::PgGroupStore;
pub use sqlite::SqliteGroupStore;

/// A store error as an ingest error (same kind, the domain error kept as the source).
fn domain_error(e: tracelab_domain::Error) -> tracelab_evidence::Error {
    e.into()
}
