//! The port a host implements to give the dashboard its data, and the filter
//! the list page passes to it.

use tracelab_domain::audit::{HandOff, PullRequestLink};
use tracelab_domain::report::{InvestigationSummary, Report};
use tracelab_domain::state::Transition;
use tracelab_domain::webhook::WebhookDelivery;
use tracelab_domain::{Error, Result};

/// Where the dashboard reads investigations and sends reviews. The fleet's
/// investigator implements it over PostgreSQL, `tracelab serve` over SQLite.
///
/// Errors are domain errors; their kind decides the page's HTTP status
/// (`NotFound` 404, `Conflict` 409, `Unavailable` 503, ...).
#[async_trait::async_trait]
pub trait DashboardSource: Send + Sync + 'static {
    /// Investigations matching `filter`, newest first, at most `filter.limit`.
    async fn list(&self, filter: &ListFilter) -> Result<Vec<InvestigationSummary>>;
    /// The report of a decided investigation; `None` while none is stored.
    async fn report(&self, id: &str) -> Result<Option<Report>>;
    /// The current state and the transitions so far, also for a running
    /// investigation; `None` when no investigation has this id.
    async fn summary(&self, id: &str) -> Result<Option<(InvestigationSummary, Vec<Transition>)>>;
    /// Records a reviewer's decision. A `Conflict` when the investigation is
    /// not waiting for review (someone else decided first).
    async fn review(
        &self,
        id: &str,
        approve: bool,
        reviewer: &str,
        reason: Option<&str>,
    ) -> Result<()>;
    /// Who started it, the audit log (reviews, pull request attempts) and
    /// the draft pull request. Hosts without an audit log keep the default:
    /// the page then shows the timeline only.
    async fn hand_off(&self, _id: &str) -> Result<Option<HandOff>> {
        Ok(None)
    }
    /// Whether [`open_pull_request`](Self::open_pull_request) can work here
    /// (a code host is configured); the page offers its button only then.
    fn opens_pull_requests(&self) -> bool {
        false
    }
    /// Opens the draft pull request of an APPROVED investigation for
    /// `actor` (a reviewer), or returns the one already opened: `NotFound`
    /// for an unknown id, `Conflict` when it is not approved. A failed
    /// attempt is stored on the investigation (shown by
    /// [`hand_off`](Self::hand_off)) and returned; calling again retries.
    async fn open_pull_request(&self, id: &str, _actor: &str) -> Result<PullRequestLink> {
        Err(Error::conflict(format!(
            "this server is not configured to open pull requests (investigation {id})"
        )))
    }
    /// A page of failure groups, most recently seen first; `None` where the
    /// host keeps no groups (one machine): the page then says so.
    async fn groups(&self, _filter: &GroupFilter) -> Result<Option<GroupsPage>> {
        Ok(None)
    }
    /// The investigation's outgoing webhook attempts, oldest first; hosts
    /// that send none keep the default (no section on the page).
    async fn webhook_deliveries(&self, _id: &str) -> Result<Vec<WebhookDelivery>> {
        Ok(Vec::new())
    }
}

/// What the `/groups` page asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupFilter {
    /// Groups seen in this repository.
    pub repository: Option<String>,
    /// `open` or `resolved`.
    pub state: Option<String>,
    /// Continue after the previous page (its [`GroupsPage::next`]).
    pub after: Option<String>,
    pub limit: u32,
}

/// One page of failure groups.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupsPage {
    pub groups: Vec<GroupRow>,
    /// The cursor of the next page, when there is one.
    pub next: Option<String>,
}

/// A failure group as the page shows it: what the grouping knows and its
/// activity (evidence per day, linked investigations).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupRow {
    pub key: String,
    pub title: String,
    pub kind: String,
    pub language: String,
    /// `open` or `resolved`.
    pub state: String,
    pub count: u64,
    pub first_seen: time::OffsetDateTime,
    pub last_seen: time::OffsetDateTime,
    pub repositories: Vec<String>,
    /// Evidence per day, oldest first, the last entry today.
    pub daily: Vec<u64>,
    /// `(investigation id, state)`, newest first.
    pub investigations: Vec<(String, String)>,
}

/// What the list page asks for. Every field set narrows the list; values are
/// the domain's spellings (`WAITING_FOR_REVIEW`, `regression`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListFilter {
    /// An [`InvestigationState`](tracelab_domain::state::InvestigationState) name.
    pub state: Option<String>,
    /// A [`Verdict`](tracelab_domain::verdict::Verdict) name; investigations
    /// without a verdict never match one.
    pub verdict: Option<String>,
    /// The repository, matched exactly.
    pub repository: Option<String>,
    /// At most this many, newest first.
    pub limit: u32,
}

impl ListFilter {
    /// Whether `summary` passes the filter (ignoring `limit`): the meaning
    /// of each field in one place, for hosts that filter in memory and for
    /// checking a store's query against.
    pub fn matches(&self, summary: &InvestigationSummary) -> bool {
        self.state
            .as_deref()
            .is_none_or(|s| summary.state.as_str() == s)
            && self
                .verdict
                .as_deref()
                .is_none_or(|v| summary.verdict.is_some_and(|sv| sv.as_str() == v))
            && self
                .repository
                .as_deref()
                .is_none_or(|r| summary.repository == r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracelab_domain::ids::InvestigationId;
    use tracelab_domain::state::InvestigationState;
    use tracelab_domain::verdict::Verdict;

    #[test]
    fn every_set_field_narrows() {
        let summary = InvestigationSummary {
            id: InvestigationId("a".into()),
            state: InvestigationState::WaitingForReview,
            verdict: Some(Verdict::Flaky),
            repository: "repo".into(),
            test_command: "pytest".into(),
            culprit: None,
            created_at: time::OffsetDateTime::UNIX_EPOCH,
        };
        let f = |state: Option<&str>, verdict: Option<&str>, repository: Option<&str>| {
            ListFilter {
                state: state.map(Into::into),
                verdict: verdict.map(Into::into),
                repository: repository.map(Into::into),
                limit: 10,
            }
            .matches(&summary)
        };
        assert!(f(None, None, None));
        assert!(f(Some("WAITING_FOR_REVIEW"), Some("flaky"), Some("repo")));
        assert!(!f(Some("APPROVED"), None, None));
        assert!(!f(None, Some("regression"), None));
        assert!(!f(None, None, Some("rep")));
    }
}
