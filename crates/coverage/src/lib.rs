//! Coverage-based localisation's IO and Repro Packs, apart from the code
//! index (#17): the index is indexing and ranking only, this crate runs
//! tests.
//!
//! [`suite`] parses a Python test command and runs the suite under
//! coverage.py in a sandbox (the domain's `Sandbox` port), each line
//! recording the test functions that ran it; [`contexts`] reads that report
//! and joins it with the runner's failing tests (read by
//! `tracelab_evidence::test_run`, the one reader of failure text) into
//! `tracelab_code_index::sbfl::TestRun`s. Ochiai stays in the code index:
//! `locate` blends it in as its `spectrum` component, and its reasons count
//! the runs, so the index takes runs rather than scores and this crate
//! depends on the index, never the reverse.
//!
//! [`repro`] (the Repro Pack) lives here rather than in a crate of its own
//! or in the CLI, its only user: a pack is built from a [`Spectrum`] and
//! the ranked `Locations`, and replayed with [`PythonCommand`] and the
//! same failing-test reader, so a crate of its own would depend on this one
//! for every type it has; and the CLI is a binary, where the pack's format
//! and its tests would have no library to belong to.

pub mod contexts;
pub mod error;
pub mod repro;
pub mod suite;

pub use error::{Error, ErrorKind, Result};
pub use repro::ReproPack;
pub use suite::{FailingTest, PythonCommand, Runner, Spectrum, collect};
