//! Outgoing notifications and the Jira intake, shared by the fleet's
//! investigator (PostgreSQL) and `tracelab serve` (one machine, SQLite).
//!
//! How a notification travels: a stage of an investigation (created,
//! decided, approved, rejected, pull_request_opened) asks
//! [`Outgoing::plan`] for its rows — a signed webhook per configured URL,
//! a Jira comment when the investigation has an issue key — and stores
//! them in the stage's own transaction (`tracelab_store`'s `…_notifying`
//! writes), then [`Outgoing::wake`]s the dispatcher. The dispatcher
//! ([`Outgoing::run`]) claims due rows through the [`NotificationStore`]
//! port with a lease, renders a row's body from the investigation as it
//! then reads ([`Views`]) the first time, stores it, sends it, logs the
//! attempt, and settles the row: delivered, retried with doubling backoff,
//! or given up. A restart resumes from the table.
//!
//! - [`webhooks`]: the signature (`X-TraceLab-Signature`), the receiver's
//!   check, and one signed POST.
//! - [`jira`]: settings, the comment client, the comment's text (pure),
//!   the issue webhook's reading (pure) and its HTTP endpoint, generic
//!   over who starts investigations ([`jira::webhook::Starter`]).
//! - [`store`]: the port and its PostgreSQL and SQLite implementations.

pub mod jira;
pub mod outgoing;
pub mod store;
pub mod webhooks;

pub use outgoing::{Outgoing, Views, retry_in};
pub use store::NotificationStore;

/// The stages that notify, in the order they happen.
pub const EVENTS: [&str; 5] = [
    "created",
    "decided",
    "approved",
    "rejected",
    "pull_request_opened",
];

/// Installs ring as rustls' provider once (docs: DEPENDENCIES.md): the
/// HTTP clients here are built without one.
pub(crate) fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Err means another provider was installed first: keep it.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
