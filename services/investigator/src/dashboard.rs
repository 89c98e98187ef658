//! The review dashboard (`tracelab-dashboard`) served beside the API, over
//! the same store and the same tokens: a person signs in with their API
//! token, reads investigations as HTML and approves or rejects with the
//! roles the API enforces (viewer reads, reviewer and admin review).

use crate::api::Api;
use crate::auth::{Action, Auth, Caller, Role};
use std::sync::Arc;
use tracelab_dashboard::{
    Authenticator, DashboardSource, GroupFilter, GroupRow, GroupsPage, ListFilter, Viewer,
};
use tracelab_domain::Result;
use tracelab_domain::audit::{HandOff, PullRequestLink};
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::ports::{HandOffStore, InvestigationStore};
use tracelab_domain::report::{InvestigationSummary, Report};
use tracelab_domain::state::Transition;
use tracelab_domain::verdict::Verdict;
use tracelab_domain::webhook::WebhookDelivery;

/// Days of evidence the `/groups` sparklines cover.
const GROUP_DAYS: u32 = 14;

/// How many of the newest investigations the list page filters in memory
/// (the store lists newest first; filters are few and cheap).
const LIST_WINDOW: u32 = 1000;

/// The dashboard's pages as a router to merge into the API's.
pub fn router(api: Arc<Api>, auth: Auth, settings: &crate::DashboardSettings) -> axum::Router {
    let settings = tracelab_dashboard::Settings {
        secure_cookie: settings.secure_cookie,
        session_ttl: std::time::Duration::from_secs(settings.session_hours.max(1) * 3600),
        ..tracelab_dashboard::Settings::default()
    };
    tracelab_dashboard::router_with(
        Arc::new(Source { api }),
        Arc::new(Tokens { auth }),
        settings,
    )
}

struct Source {
    api: Arc<Api>,
}

#[async_trait::async_trait]
impl DashboardSource for Source {
    async fn list(&self, filter: &ListFilter) -> Result<Vec<InvestigationSummary>> {
        let all = self.api.store.list(LIST_WINDOW).await?;
        Ok(all
            .into_iter()
            .filter(|s| filter.matches(s))
            .take(filter.limit.max(1) as usize)
            .collect())
    }

    async fn report(&self, id: &str) -> Result<Option<Report>> {
        InvestigationStore::get(&self.api.store, &InvestigationId(id.to_string())).await
    }

    async fn summary(&self, id: &str) -> Result<Option<(InvestigationSummary, Vec<Transition>)>> {
        let id = InvestigationId(id.to_string());
        let Some(row) = self.api.store.investigation(&id).await? else {
            return Ok(None);
        };
        let summary = InvestigationSummary {
            id: row.id,
            state: row.state,
            verdict: row
                .verdict
                .and_then(|v| serde_json::from_value::<Verdict>(serde_json::Value::String(v)).ok()),
            repository: row.repository,
            test_command: row.test_command,
            culprit: row.culprit,
            created_at: row.created_at,
        };
        Ok(Some((summary, self.api.store.transitions(&id).await?)))
    }

    async fn review(
        &self,
        id: &str,
        approve: bool,
        reviewer: &str,
        reason: Option<&str>,
    ) -> Result<()> {
        // Only viewers with `can_review` reach this (the dashboard checks).
        let caller = Caller {
            name: reviewer.to_string(),
            role: Role::Reviewer,
        };
        self.api
            .review(id, approve, &caller, reason)
            .await
            .map(|_| ())
    }

    async fn hand_off(&self, id: &str) -> Result<Option<HandOff>> {
        HandOffStore::hand_off(&self.api.store, &InvestigationId(id.to_string())).await
    }

    fn opens_pull_requests(&self) -> bool {
        !self.api.pull_requests.is_empty()
    }

    /// The API's own path (`POST /api/investigations/{id}/pull-request`):
    /// the same checks, the same stored link or error, the same audit row.
    async fn open_pull_request(&self, id: &str, actor: &str) -> Result<PullRequestLink> {
        let caller = Caller {
            name: actor.to_string(),
            role: Role::Reviewer,
        };
        let view = self.api.open_pull_request(id, &caller).await?;
        Ok(PullRequestLink {
            url: view.url,
            number: view.number,
            host: String::new(),
        })
    }

    /// The ingest service's failure groups (the same database), a page at
    /// a time, with their evidence per day and linked investigations.
    async fn groups(&self, filter: &GroupFilter) -> Result<Option<GroupsPage>> {
        use tracelab_evidence::{GroupQuery, GroupStore};
        let ingest_error =
            |e: tracelab_evidence::Error| tracelab_domain::Error::new(e.kind(), e.to_string());
        let query = GroupQuery {
            repository: filter.repository.clone(),
            state: filter
                .state
                .as_deref()
                .map(str::parse)
                .transpose()
                .map_err(ingest_error)?,
            after: filter
                .after
                .as_deref()
                .map(str::parse)
                .transpose()
                .map_err(ingest_error)?,
            limit: filter.limit as usize,
            ..GroupQuery::default()
        };
        let groups = tracelab_store::PgGroupStore::new(self.api.store.pool().clone());
        let page = groups.page(&query).await.map_err(ingest_error)?;
        let keys: Vec<String> = page.groups.iter().map(|g| g.key.0.clone()).collect();
        let mut activity = self
            .api
            .store
            .group_activity(&keys, GROUP_DAYS, time::OffsetDateTime::now_utc())
            .await?;
        let name = |v: serde_json::Value| v.as_str().unwrap_or_default().to_string();
        let at = |t: i64| {
            time::OffsetDateTime::from_unix_timestamp(t).unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
        };
        let rows = page
            .groups
            .into_iter()
            .map(|g| {
                let a = activity.remove(&g.key.0).unwrap_or_default();
                GroupRow {
                    state: tracelab_evidence::GroupState::of(&g.status)
                        .as_str()
                        .to_string(),
                    kind: name(serde_json::to_value(g.kind).unwrap_or_default()),
                    language: name(serde_json::to_value(g.language).unwrap_or_default()),
                    count: g.count,
                    first_seen: at(g.first_seen),
                    last_seen: at(g.last_seen),
                    repositories: g.repositories.into_iter().collect(),
                    daily: a.daily,
                    investigations: a.investigations,
                    title: g.title,
                    key: g.key.0,
                }
            })
            .collect();
        Ok(Some(GroupsPage {
            groups: rows,
            next: page.next.map(|c| c.to_string()),
        }))
    }

    async fn webhook_deliveries(&self, id: &str) -> Result<Vec<WebhookDelivery>> {
        self.api.store.webhook_deliveries(id).await
    }
}

/// API tokens as dashboard sign-ins.
struct Tokens {
    auth: Auth,
}

impl Authenticator for Tokens {
    fn check(&self, token: &str) -> Option<Viewer> {
        let caller = self
            .auth
            .authorize(Some(&format!("Bearer {token}")), Action::Read)
            .ok()?;
        Some(Viewer {
            can_review: caller.role >= Action::Review.role(),
            name: caller.name,
        })
    }
}
