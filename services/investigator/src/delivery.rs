//! Outgoing notifications, durably: each stage's webhooks (one per URL)
//! and its Jira comment are stored (`notifications`, PostgreSQL 0015)
//! before anything is sent, then a dispatcher sends what is due, retries
//! with doubling backoff and gives up after the configured attempts. Every
//! attempt is logged in `webhook_deliveries` and shown on the
//! investigation's page. A restart resumes what was pending: the
//! dispatcher only reads the table. Nothing here blocks the stage that
//! caused it: a failure to store is logged, a failure to send is retried.
//!
//! The `decided` stage happens in the arbiter; the investigator hears of it
//! through a durable consumer of `<prefix>.investigations.*.decided`
//! ([`on_decided`]) and enqueues it with a key, so a redelivery adds nothing.

use crate::jira;
use crate::webhooks::Webhooks;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tracelab_bus::Delivery;
use tracelab_domain::Result;
use tracelab_domain::ids::InvestigationId;
use tracelab_service::Shutdown;
use tracelab_store::PgStore;
use tracelab_store::notifications::{NewNotification, Notification};
use tracelab_store::webhooks::WebhookDelivery;

/// The durable consumer of `decided` events (one per fleet).
pub const DECIDED_DURABLE: &str = "investigator-notifications";

pub const WEBHOOK: &str = "webhook";
pub const JIRA: &str = "jira";

/// The webhooks and Jira comments of this deployment, and their dispatcher.
pub struct Outgoing {
    store: PgStore,
    webhooks: Option<Arc<Webhooks>>,
    jira: Option<Arc<jira::client::Client>>,
    jira_attempts: u32,
    jira_first_retry: Duration,
    jira_max_retry: Duration,
    /// How long a claimed notification is withheld from other claims: well
    /// beyond the slowest attempt, so only a dead process's rows return.
    lease: Duration,
    wake: Notify,
}

impl Outgoing {
    pub fn new(
        store: PgStore,
        webhooks: Option<Webhooks>,
        jira: Option<jira::client::Client>,
        settings: &jira::JiraSettings,
    ) -> Self {
        let slowest = webhooks
            .as_ref()
            .map_or(Duration::ZERO, |w| w.timeout)
            .max(Duration::from_secs(settings.timeout_seconds.max(1)));
        Self {
            lease: slowest * 2 + Duration::from_secs(60),
            store,
            webhooks: webhooks.map(Arc::new),
            jira: jira.map(Arc::new),
            jira_attempts: settings.attempts.max(1),
            jira_first_retry: Duration::from_millis(settings.first_retry_ms),
            jira_max_retry: Duration::from_millis(settings.max_retry_ms),
            wake: Notify::new(),
        }
    }

    /// Nothing configured: nothing to store or send.
    pub fn is_empty(&self) -> bool {
        self.webhooks.is_none() && self.jira.is_none()
    }

    /// Stores `kind`'s notifications for the investigation: a webhook per
    /// URL carrying `data`, and a comment when it has a Jira issue
    /// (rendered from `view`, the investigation as the API shows it).
    /// Returns how many were new (a repeated stage adds none).
    pub async fn enqueue(
        &self,
        kind: &str,
        investigation_id: &str,
        data: &Value,
        view: &Value,
    ) -> Result<usize> {
        let mut new = 0;
        if let Some(hooks) = &self.webhooks {
            for url in hooks.urls() {
                let key = format!("{investigation_id}:{kind}:{WEBHOOK}:{url}");
                let body = Webhooks::payload(kind, &key, investigation_id, data);
                new += usize::from(
                    self.store
                        .enqueue_notification(&NewNotification {
                            key,
                            investigation_id: investigation_id.to_string(),
                            channel: WEBHOOK.into(),
                            event: kind.to_string(),
                            target: url.clone(),
                            body,
                        })
                        .await?,
                );
            }
        }
        if let Some(client) = &self.jira
            && let Some(issue) = self.jira_issue(investigation_id).await?
        {
            let page = client
                .dashboard_url
                .as_ref()
                .map(|base| format!("{base}{investigation_id}"));
            if let Some(lines) = jira::comment::lines(kind, view, page.as_deref()) {
                new += usize::from(
                    self.store
                        .enqueue_notification(&NewNotification {
                            key: format!("{investigation_id}:{kind}:{JIRA}:{issue}"),
                            investigation_id: investigation_id.to_string(),
                            channel: JIRA.into(),
                            event: kind.to_string(),
                            body: jira::comment::body(client.flavor(), &lines),
                            target: issue,
                        })
                        .await?,
                );
            }
        }
        if new > 0 {
            self.wake.notify_one();
        }
        Ok(new)
    }

    /// Comments on `issue` about something that is not an investigation
    /// (a refused intake), once per `key`; listed under `jira:<issue>`.
    /// `false` without Jira or when the key was stored already.
    pub async fn comment_on_issue(
        &self,
        issue: &str,
        key: &str,
        lines: &jira::comment::Lines,
    ) -> Result<bool> {
        let Some(client) = &self.jira else {
            return Ok(false);
        };
        let new = self
            .store
            .enqueue_notification(&NewNotification {
                key: key.to_string(),
                investigation_id: format!("jira:{issue}"),
                channel: JIRA.into(),
                event: "refused".into(),
                target: issue.to_string(),
                body: jira::comment::body(client.flavor(), lines),
            })
            .await?;
        if new {
            self.wake.notify_one();
        }
        Ok(new)
    }

    /// The investigation's Jira issue: the request's issue id, when it is
    /// an issue key (from the Jira intake, or `jiraIssueId` in the API).
    async fn jira_issue(&self, investigation_id: &str) -> Result<Option<String>> {
        let row = self
            .store
            .investigation(&InvestigationId(investigation_id.to_string()))
            .await?;
        Ok(row
            .and_then(|r| r.request)
            .and_then(|r| {
                r.get("issue_id")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .filter(|k| jira::is_issue_key(k)))
    }

    /// Sends what is due until shutdown: at once when something is
    /// enqueued here, and every `poll` for retries and what other
    /// processes (or this one before a restart) left.
    pub async fn run(self: Arc<Self>, poll: Duration, shutdown: Shutdown) {
        loop {
            match self.dispatch_due().await {
                Ok(n) if n > 0 && !shutdown.is_requested() => continue,
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "cannot read due notifications"),
            }
            tokio::select! {
                _ = shutdown.requested() => return,
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(poll) => {}
            }
        }
    }

    /// One pass: claims up to 16 due notifications and makes one attempt
    /// at each, concurrently. Returns how many it attempted.
    pub async fn dispatch_due(self: &Arc<Self>) -> Result<usize> {
        // A crash mid-send makes the row due again after the lease.
        let due = self.store.claim_notifications(16, self.lease).await?;
        let n = due.len();
        let mut sends = tokio::task::JoinSet::new();
        for notification in due {
            let this = self.clone();
            sends.spawn(async move { this.attempt(notification).await });
        }
        while let Some(done) = sends.join_next().await {
            if let Err(e) = done {
                tracing::error!(error = %e, "a notification attempt panicked");
            }
        }
        Ok(n)
    }

    async fn attempt(&self, n: Notification) {
        let attempt = n.attempts + 1;
        let (url, logged_event, max, (first_retry, max_retry), (status, error)) =
            match n.channel.as_str() {
                WEBHOOK => match &self.webhooks {
                    Some(h) => (
                        n.target.clone(),
                        n.event.clone(),
                        h.attempts,
                        (h.first_retry, h.max_retry),
                        h.send(&n.target, &n.event, &n.key, &n.body.to_string())
                            .await,
                    ),
                    None => (
                        n.target.clone(),
                        n.event.clone(),
                        1,
                        (Duration::ZERO, Duration::ZERO),
                        (None, Some("webhooks are no longer configured".into())),
                    ),
                },
                JIRA => match &self.jira {
                    Some(c) => (
                        c.comment_url(&n.target),
                        format!("jira:{}", n.event),
                        self.jira_attempts,
                        (self.jira_first_retry, self.jira_max_retry),
                        c.post_comment(&n.target, &n.body).await,
                    ),
                    None => (
                        n.target.clone(),
                        format!("jira:{}", n.event),
                        1,
                        (Duration::ZERO, Duration::ZERO),
                        (None, Some("Jira is no longer configured".into())),
                    ),
                },
                other => (
                    n.target.clone(),
                    n.event.clone(),
                    1,
                    (Duration::ZERO, Duration::ZERO),
                    (None, Some(format!("unknown channel {other:?}"))),
                ),
            };
        let log = WebhookDelivery {
            investigation_id: n.investigation_id.clone(),
            event: logged_event,
            delivery_id: n.key.clone(),
            url,
            attempt,
            delivered: error.is_none(),
            http_status: status,
            error: error.clone(),
            at: None,
        };
        if let Err(e) = self.store.record_webhook_delivery(&log).await {
            tracing::error!(error = %e, "cannot log a notification attempt");
        }
        let settled = match &error {
            None => {
                metrics::counter!("tracelab_notifications_total", "channel" => n.channel.clone(), "outcome" => "delivered").increment(1);
                self.store.notification_delivered(n.seq).await
            }
            Some(why) => {
                let retry = retry_in(attempt, max, first_retry, max_retry, status);
                let outcome = if retry.is_some() { "retry" } else { "given_up" };
                metrics::counter!("tracelab_notifications_total", "channel" => n.channel.clone(), "outcome" => outcome).increment(1);
                tracing::warn!(
                    investigation = %n.investigation_id,
                    channel = %n.channel,
                    event = %n.event,
                    attempt,
                    error = %why,
                    outcome,
                    "notification not delivered"
                );
                self.store.notification_failed(n.seq, why, retry).await
            }
        };
        if let Err(e) = settled {
            // The lease runs out and it is attempted again: at least once.
            tracing::error!(error = %e, "cannot settle a notification");
        }
    }
}

/// When to try again after failed attempt number `attempt`: doubling from
/// `first_retry`, at most `longest`; `None` once out of attempts, or at
/// once for an answer no retry can change (the request or the target is
/// wrong: 400, 404, 410, 422).
pub fn retry_in(
    attempt: u32,
    max: u32,
    first_retry: Duration,
    longest: Duration,
    status: Option<u16>,
) -> Option<Duration> {
    if attempt >= max || matches!(status, Some(400 | 404 | 410 | 422)) {
        return None;
    }
    let factor = 2u32.saturating_pow(attempt.saturating_sub(1).min(20));
    Some(first_retry.saturating_mul(factor).min(longest))
}

/// Decisions older than this are not announced: the consumer starts at
/// the beginning of the stream (30 days), and a deployment that turns
/// webhooks on should not replay a month of decisions.
pub const DECIDED_MAX_AGE: Duration = Duration::from_secs(24 * 3600);

/// A `decided` event from the arbiter: its webhooks and Jira comment.
pub async fn on_decided(api: &crate::api::Api, delivery: &Delivery) -> Result<()> {
    let decided: tracelab_proto::events::v1::InvestigationDecided =
        tracelab_fleet::events::decode(delivery)?;
    let view = api.get(&decided.investigation_id).await?;
    let decided_at = view
        .transitions
        .iter()
        .rev()
        .find(|t| t.to == tracelab_domain::state::InvestigationState::WaitingForReview)
        .map_or(view.updated_at, |t| t.at);
    if time::OffsetDateTime::now_utc() - decided_at > DECIDED_MAX_AGE {
        tracing::info!(investigation = %view.id, "decided too long ago to announce");
        return Ok(());
    }
    let view = serde_json::to_value(&view)
        .map_err(|e| tracelab_domain::Error::internal(format!("cannot encode: {e}")))?;
    if let Some(out) = &api.outgoing {
        // Errors go back to the consumer: the event is redelivered.
        out.enqueue("decided", &decided.investigation_id, &view, &view)
            .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_caps_and_stops() {
        let (s, cap) = (Duration::from_secs(2), Duration::from_secs(3600));
        assert_eq!(retry_in(1, 5, s, cap, Some(500)), Some(s));
        assert_eq!(retry_in(3, 5, s, cap, None), Some(Duration::from_secs(8)));
        assert_eq!(retry_in(5, 5, s, cap, Some(503)), None, "out of attempts");
        assert_eq!(retry_in(1, 5, s, cap, Some(404)), None, "no such issue");
        assert_eq!(
            retry_in(1, 5, s, cap, Some(401)),
            Some(s),
            "a token may be fixed"
        );
        assert_eq!(retry_in(30, 99, s, cap, None), Some(cap));
    }
}
