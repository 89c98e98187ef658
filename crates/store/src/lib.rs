//! Investigation storage.
//!
//! [`SqliteStore`] implements [`InvestigationStore`] for the embedded mode:
//! migrations from `migrations/sqlite` are embedded at compile time and run on
//! open. A transition is a compare-and-set on the stored state plus an
//! appended row, in one transaction; a report is written with its hypotheses
//! and experiments in one transaction, replacing earlier rows, so saving twice
//! is harmless. The full report is also kept as JSON, the source for `show`.
//!
//! [`PgStore`] is the fleet's store: the same behaviour on PostgreSQL
//! (`migrations/postgres`, run on connect), plus the tables the fleet adds
//! (evidence, the decisions audit log, consumer progress). A message from the
//! bus travels through it like this: the consumer begins a transaction,
//! calls [`record_once`] with the message id, writes its results only when
//! that returns `true`, commits, and acks the message after the commit — so a
//! redelivery is a no-op, not a duplicate.
//!
//! Both are one implementation where they can be: `backend.rs` holds the
//! statements and row mappings both databases run (creation, the
//! compare-and-set transition, the audit log, lists) with the few
//! differences (time columns, row locks, error mapping) behind its
//! `Backend` trait, and `hand_off.rs` is written once on top of it.
//!
//! `conformance` (feature `testsuite`) is the behaviour every store must
//! have; both stores' tests run it.
//!
//! Both implement the domain's `HandOffStore` too (module `hand_off`):
//! reviews with the four-eyes rule, the audit log in `decisions` (a
//! trigger refuses UPDATE and DELETE of its rows) and the pull request.
//!
//! [`groups`] holds failure groups (the ingest library's `GroupStore`) on
//! both databases, with its own conformance suite (feature `testsuite`)
//! that the in-memory store runs too.

mod backend;
pub mod ci_reports;
#[cfg(feature = "testsuite")]
pub mod conformance;
pub mod experience;
pub mod group_activity;
pub mod groups;
mod hand_off;
mod idempotency;
mod journal;
pub mod notifications;
pub mod outbox;
mod pg_error;
mod postgres;
mod sqlite;
mod stages;
pub mod webhooks;

pub use ci_reports::{CiReportRow, Mining};
pub use experience::ExperienceStore;
pub use groups::{EvidenceOutcome, NewEvidence, PgGroupStore, SqliteGroupStore, Suggested};
pub use idempotency::record_once;
pub use outbox::OutboxMessage;
pub use postgres::{PgOptions, PgStore};
pub use sqlite::SqliteStore;
pub use stages::{
    ArbitrationInput, Created, EvidenceRow, GroupInvestigation, InvestigationRow, NewInvestigation,
    ProposalRecord, Recorded,
};
pub use tracelab_domain::ports::{HandOffStore, InvestigationStore};
