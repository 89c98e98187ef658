//! Jira: issues start investigations, and decisions come back as comments.
//!
//! - [`intake`] (pure): what a Jira `issue_created` / `issue_updated`
//!   webhook asks for — the issue key, the repository, test and revisions
//!   from configured custom fields or the description's template — or why
//!   it asks for nothing.
//! - [`webhook`]: `POST /v1/jira/webhook` on the host's port (the
//!   investigator's API, `tracelab serve`): the shared secret, then
//!   [`intake`], then the host's [`webhook::Starter`] keyed so a
//!   redelivery starts nothing new.
//! - [`comment`] (pure): the comment for a decision, as Cloud's ADF or
//!   Server/Data Center's wiki text.
//! - [`client`]: posts one comment; the dispatcher (`crate::outgoing`)
//!   stores comments before sending and retries them.

pub mod client;
pub mod comment;
pub mod intake;
pub mod webhook;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which REST API the Jira speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Flavor {
    /// Jira Cloud: `/rest/api/3`, ADF comment bodies, Basic `user:token`
    /// (the account's e-mail and an API token).
    #[default]
    Cloud,
    /// Jira Server / Data Center: `/rest/api/2`, wiki-text bodies, a
    /// personal access token as `Bearer`.
    Server,
}

/// `jira` in the investigator's settings (and `tracelab serve`'s).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct JiraSettings {
    /// `https://acme.atlassian.net` or `https://jira.example.com`; empty:
    /// no comments.
    pub base_url: String,
    pub flavor: Flavor,
    /// Cloud: the account's e-mail (Basic auth with the token).
    pub user: String,
    /// The API token (Cloud) or personal access token (Server/DC). From a
    /// mounted file (`token_file`), never a checked-in one.
    pub token: String,
    pub token_file: String,
    /// The dashboard's address as people reach it
    /// (`https://tracelab.example.com`): comments link to
    /// `<dashboard_url>/investigations/<id>`. Empty: no link.
    pub dashboard_url: String,
    /// Attempts per comment, the first included.
    pub attempts: u32,
    /// Wait before the second attempt; doubled before each further one.
    pub first_retry_ms: u64,
    /// The longest wait between two attempts.
    pub max_retry_ms: u64,
    pub timeout_seconds: u64,
    pub intake: IntakeSettings,
}

impl Default for JiraSettings {
    fn default() -> Self {
        Self {
            base_url: String::new(),
            flavor: Flavor::Cloud,
            user: String::new(),
            token: String::new(),
            token_file: String::new(),
            dashboard_url: String::new(),
            attempts: 12,
            first_retry_ms: 2000,
            max_retry_ms: 3_600_000,
            timeout_seconds: 15,
            intake: IntakeSettings::default(),
        }
    }
}

/// `jira.intake`: `POST /v1/jira/webhook`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IntakeSettings {
    /// Off unless set: the endpoint answers 404.
    pub enabled: bool,
    /// The shared secret, from a mounted file (`secret_file`).
    pub secret: String,
    pub secret_file: String,
    /// The query parameter that may carry it (`…/v1/jira/webhook?secret=…`,
    /// what a Jira Cloud webhook URL can hold). Empty: not accepted there.
    pub secret_query: String,
    /// The header that may carry it (Jira Automation's "Send web request"
    /// can set headers). Empty: not accepted there.
    pub secret_header: String,
    /// Only issues with this label start an investigation.
    pub label: String,
    /// Project keys served, each with an optional default repository.
    /// Empty: every project.
    pub projects: BTreeMap<String, ProjectSettings>,
    /// Custom fields read before the description's template.
    pub fields: FieldSettings,
    /// Larger bodies are refused (413).
    pub max_body_bytes: usize,
}

impl Default for IntakeSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            secret: String::new(),
            secret_file: String::new(),
            secret_query: "secret".into(),
            secret_header: "x-tracelab-secret".into(),
            label: "tracelab".into(),
            projects: BTreeMap::new(),
            fields: FieldSettings::default(),
            max_body_bytes: 1 << 20,
        }
    }
}

/// `jira.intake.projects.<KEY>`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProjectSettings {
    /// Used when the issue names no repository.
    pub repository: String,
}

/// `jira.intake.fields`: custom field ids (`customfield_10050`), empty for none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FieldSettings {
    pub repository: String,
    pub test: String,
    pub good: String,
    pub bad: String,
}

/// A secret from `value` or `file` (the file wins), trimmed.
pub fn secret(what: &str, value: &str, file: &str) -> tracelab_domain::Result<String> {
    if file.is_empty() {
        return Ok(value.trim().to_string());
    }
    std::fs::read_to_string(file)
        .map(|s| s.trim().to_string())
        .map_err(|e| tracelab_domain::Error::invalid(format!("{what} {file}: {e}")))
}

/// A Jira issue key (`PVS-421`): it names branches, so nothing else passes.
pub fn is_issue_key(key: &str) -> bool {
    let Some((project, number)) = key.split_once('-') else {
        return false;
    };
    project.len() <= 30
        && project.starts_with(|c: char| c.is_ascii_uppercase())
        && project
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && !number.is_empty()
        && number.len() <= 12
        && number.chars().all(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    #[test]
    fn issue_keys() {
        for good in ["PVS-421", "A-1", "AB_2-99"] {
            assert!(super::is_issue_key(good), "{good}");
        }
        for bad in ["pvs-1", "PVS", "PVS-", "PVS-1a", "-1", "PVS-1/../x", "1A-2"] {
            assert!(!super::is_issue_key(bad), "{bad}");
        }
    }
}
