//! Bounded load against TraceLab's public surface only — the investigator's
//! REST API and the ingest's intake endpoints — never its internals, so the
//! numbers are what a client sees.
//!
//! - [`investigations`]: N generated regression repositories ([`repos`]) are
//!   submitted with at most C undecided at once, polled until decided, and
//!   checked against their known culprit.
//! - [`evidence`]: N CI failure reports and JSON log lines ([`payloads`])
//!   posted with at most C in flight; 429 answers are retried after their
//!   `Retry-After` and counted apart.
//!
//! Both print throughput and latency percentiles ([`latency`], HDR histograms)
//! as text or JSON.

pub mod cli;
pub mod evidence;
pub mod http;
pub mod investigations;
pub mod latency;
pub mod payloads;
pub mod repos;
