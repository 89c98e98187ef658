//! The port the dispatcher stores notifications through, implemented here
//! for both of `tracelab-store`'s databases (the fleet's PostgreSQL and
//! `tracelab serve`'s SQLite file), which hold the statements.

use serde_json::Value;
use std::time::Duration;
use tracelab_domain::Result;
use tracelab_domain::ids::InvestigationId;
use tracelab_store::notifications::{NewNotification, Notification};
use tracelab_store::webhooks::WebhookDelivery;
use tracelab_store::{PgStore, SqliteStore};

/// Durable notifications: what the dispatcher reads and settles.
#[async_trait::async_trait]
pub trait NotificationStore: Send + Sync + 'static {
    /// Stores one unless its key is stored already; `true` when new.
    async fn enqueue(&self, n: &NewNotification) -> Result<bool>;
    /// Up to `limit` due rows, oldest first, leased for `lease`.
    async fn claim(&self, limit: i64, lease: Duration) -> Result<Vec<Notification>>;
    /// Stores the body rendered for a row enqueued without one; returns
    /// the stored body (another dispatcher's, if it rendered first).
    async fn rendered(&self, seq: i64, body: &Value) -> Result<Value>;
    async fn delivered(&self, seq: i64) -> Result<()>;
    /// Due again after `retry_in`, or given up (`None`).
    async fn failed(&self, seq: i64, error: &str, retry_in: Option<Duration>) -> Result<()>;
    /// One attempt in the investigation's delivery log (its page lists them).
    async fn log_attempt(&self, attempt: &WebhookDelivery) -> Result<()>;
    /// The investigation's Jira issue key, when it has one.
    async fn issue_of(&self, investigation_id: &str) -> Result<Option<String>>;
}

macro_rules! store_port {
    ($store:ty, $issue_of:path) => {
        #[async_trait::async_trait]
        impl NotificationStore for $store {
            async fn enqueue(&self, n: &NewNotification) -> Result<bool> {
                self.enqueue_notification(n).await
            }
            async fn claim(&self, limit: i64, lease: Duration) -> Result<Vec<Notification>> {
                self.claim_notifications(limit, lease).await
            }
            async fn rendered(&self, seq: i64, body: &Value) -> Result<Value> {
                self.notification_rendered(seq, body).await
            }
            async fn delivered(&self, seq: i64) -> Result<()> {
                self.notification_delivered(seq).await
            }
            async fn failed(
                &self,
                seq: i64,
                error: &str,
                retry_in: Option<Duration>,
            ) -> Result<()> {
                self.notification_failed(seq, error, retry_in).await
            }
            async fn log_attempt(&self, attempt: &WebhookDelivery) -> Result<()> {
                self.record_webhook_delivery(attempt).await
            }
            async fn issue_of(&self, investigation_id: &str) -> Result<Option<String>> {
                $issue_of(self, investigation_id).await
            }
        }
    };
}

store_port!(PgStore, pg_issue_of);
store_port!(SqliteStore, sqlite_issue_of);

/// The request's issue id (`jiraIssueId`, or the Jira intake's key).
async fn pg_issue_of(store: &PgStore, investigation_id: &str) -> Result<Option<String>> {
    let row = store
        .investigation(&InvestigationId(investigation_id.to_string()))
        .await?;
    Ok(row
        .and_then(|r| r.request)
        .and_then(|r| {
            r.get("issue_id")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .filter(|k| crate::jira::is_issue_key(k)))
}

/// One machine keeps no request: the issue is what named the
/// investigation's branches (`ai-debug/PVS-421-h2`, from `tracelab
/// investigate --issue PVS-421`), once a report is stored.
async fn sqlite_issue_of(store: &SqliteStore, investigation_id: &str) -> Result<Option<String>> {
    use tracelab_domain::ports::InvestigationStore;
    let report = store
        .get(&InvestigationId(investigation_id.to_string()))
        .await?;
    Ok(report.and_then(|r| {
        r.hypotheses
            .iter()
            .chain(r.winner.iter())
            .filter_map(|h| h.branch.as_deref())
            .find_map(issue_of_branch)
    }))
}

/// `ai-debug/PVS-421-h2` → `PVS-421`, when that is an issue key.
pub fn issue_of_branch(branch: &str) -> Option<String> {
    let rest = branch.strip_prefix("ai-debug/")?;
    let (issue, number) = rest.rsplit_once("-h")?;
    (number.chars().all(|c| c.is_ascii_digit()) && crate::jira::is_issue_key(issue))
        .then(|| issue.to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn branches_name_their_issue() {
        assert_eq!(
            super::issue_of_branch("ai-debug/PVS-421-h2").as_deref(),
            Some("PVS-421")
        );
        assert_eq!(super::issue_of_branch("ai-debug/local-3f2a-h1"), None);
        assert_eq!(super::issue_of_branch("main"), None);
    }
}
