//! Investigation storage.
//!
//! [`SqliteStore`] implements [`InvestigationStore`] for the embedded mode:
//! migrations from `migrations/sqlite` are embedded at compile time and run on
//! open. A transition is a compare-and-set on the stored state plus an
//! appended row, in one transaction; a report is written with its hypotheses
//! and experiments in one transaction, replacing earlier rows, so saving twice
//! is harmless. The full report is also kept as JSON, the source for `show`.
//!
//! [`conformance`] is the behaviour every store must have; the PostgreSQL
//! store of the fleet will run the same suite.

pub mod conformance;
mod sqlite;

pub use sqlite::SqliteStore;
pub use tracelab_domain::ports::InvestigationStore;
