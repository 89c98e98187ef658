//! TraceLab's domain core.
//!
//! Everything here is pure data and logic: no IO, no async runtime. Adapters
//! (sandboxes, stores, buses) implement the port traits in [`ports`], and the
//! engine composes them. A failing test travels through this crate as
//! [`signature::FailureSignature`] (what failed, without line numbers), then
//! as [`hypothesis::Hypothesis`] values whose [`experiment::Experiment`]s are
//! judged by [`contract`], ranked by [`arbiter`], and summarised in a
//! [`report::Report`].

pub mod allowlist;
pub mod arbiter;
pub mod audit;
pub mod bisect;
pub mod contract;
pub mod error;
pub mod experiment;
pub mod frame;
pub mod hypothesis;
pub mod identifier;
pub mod ids;
pub mod journal;
pub mod language;
pub mod line_revert;
pub mod oracle;
pub mod patch;
pub mod ports;
pub mod report;
pub mod runner;
pub mod sequential;
pub mod signature;
pub mod state;
pub mod suspicion;
pub mod vectors;
pub mod verdict;
pub mod webhook;

pub use error::{Error, ErrorKind, Result};
pub use frame::Frame;
pub use language::Language;
