//! The CI failure report: what `tracelab report` sends to
//! `POST /v1/ci-failures` and what the ingest service parses — test report
//! files, the tail of the job log, commit, branch, job, and an environment
//! fingerprint. One serde type shared by the CLI and the service, plus the
//! pure pieces both need: reading CI variables ([`CiContext::from_env`]),
//! filtering environment variable names ([`env_names`]), lockfile digests,
//! size checks, and parsing a report into failures and group occurrences.
//!
//! The payload carries raw evidence. The service never stores it as sent: it
//! stores [`parse_ci_report`]'s failures (redacted) and the metadata after
//! [`CiFailureReport::redact_metadata`].
//!
//! Three modules: [`report`] the payload and its parsing, [`environment`]
//! what a job's environment tells (CI variables, lockfile digests, the log's
//! tail), [`sanitize`] what may leave the job (URLs without credentials,
//! variable names that do not look secret), which both use.

pub mod environment;
pub mod report;
pub mod sanitize;

pub use environment::{CiContext, LOCKFILES, lockfile_digest, log_tail};
pub use report::{
    CI_REPORT_SCHEMA, CiFailureReport, CiJob, CiParseOutput, EnvFingerprint, LogTail, ReportFile,
    parse_ci_report,
};
pub use sanitize::{env_names, is_secret_env_name, sanitize_url};
