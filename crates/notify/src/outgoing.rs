//! Outgoing notifications, durably: each stage's webhooks (one per URL)
//! and its Jira comment are stored (`notifications`: PostgreSQL 0015/0016,
//! SQLite 0007) before anything is sent, in the stage's own transaction
//! where the stage is a write ([`Outgoing::plan`] says what to store),
//! then a dispatcher sends what is due, retries with doubling backoff and
//! gives up after the configured attempts. Every attempt is logged in
//! `webhook_deliveries` and shown on the investigation's page. A restart
//! resumes what was pending: the dispatcher only reads the table.
//!
//! A row stored without a body is rendered by the dispatcher the first
//! time it claims it, from the investigation as it then reads
//! ([`Views`]), and the body is stored before it is sent: every retry
//! sends the same bytes.

use crate::NotificationStore;
use crate::jira;
use crate::webhooks::Webhooks;
use serde_json::{Value, json};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tracelab_domain::Result;
use tracelab_store::notifications::{NewNotification, Notification};
use tracelab_store::webhooks::WebhookDelivery;

pub const WEBHOOK: &str = "webhook";
pub const JIRA: &str = "jira";

/// The investigation as the host's API shows it (JSON: `id`, `state`,
/// `verdict`, `report`, `transitions`, `audit`, `pull_request`, …), what
/// webhooks carry and comments are written from.
#[async_trait::async_trait]
pub trait Views: Send + Sync + 'static {
    /// `None` when no investigation has that id.
    async fn view(&self, investigation_id: &str) -> Result<Option<Value>>;
}

/// The webhooks and Jira comments of this deployment, and their dispatcher.
pub struct Outgoing {
    store: Arc<dyn NotificationStore>,
    views: Arc<dyn Views>,
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
    /// `None` when neither webhooks nor Jira comments are configured.
    pub fn new(
        store: Arc<dyn NotificationStore>,
        views: Arc<dyn Views>,
        webhooks: Option<Webhooks>,
        jira: Option<jira::client::Client>,
        settings: &jira::JiraSettings,
    ) -> Option<Self> {
        if webhooks.is_none() && jira.is_none() {
            return None;
        }
        let slowest = webhooks
            .as_ref()
            .map_or(Duration::ZERO, |w| w.timeout)
            .max(Duration::from_secs(settings.timeout_seconds.max(1)));
        Some(Self {
            lease: slowest * 2 + Duration::from_secs(60),
            store,
            views,
            webhooks: webhooks.map(Arc::new),
            jira: jira.map(Arc::new),
            jira_attempts: settings.attempts.max(1),
            jira_first_retry: Duration::from_millis(settings.first_retry_ms),
            jira_max_retry: Duration::from_millis(settings.max_retry_ms),
            wake: Notify::new(),
        })
    }

    /// What stage `kind` of the investigation sends: a webhook per URL,
    /// and a comment when `issue` (the investigation's issue id) is a Jira
    /// issue key and Jira is configured. Without bodies (rendered at
    /// dispatch): for the stage's write to store in its transaction.
    pub fn plan(
        &self,
        kind: &str,
        investigation_id: &str,
        issue: Option<&str>,
    ) -> Vec<NewNotification> {
        let note = |channel: &str, target: &str| NewNotification {
            key: format!("{investigation_id}:{kind}:{channel}:{target}"),
            investigation_id: investigation_id.to_string(),
            channel: channel.to_string(),
            event: kind.to_string(),
            target: target.to_string(),
            body: None,
        };
        let mut out: Vec<NewNotification> = self
            .webhooks
            .iter()
            .flat_map(|h| h.urls().iter().map(|url| note(WEBHOOK, url)))
            .collect();
        if self.jira.is_some()
            && let Some(issue) = issue.filter(|k| jira::is_issue_key(k))
        {
            out.push(note(JIRA, issue));
        }
        out
    }

    /// Something was stored: send it now rather than at the next poll.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Stores stage `kind`'s notifications outside a stage's write (the
    /// fleet's `decided`, which the arbiter commits; one machine's sweep),
    /// the issue read from the store. Returns how many were new (a
    /// repeated stage adds none).
    pub async fn enqueue(&self, kind: &str, investigation_id: &str) -> Result<usize> {
        let issue = match self.jira {
            Some(_) => self.store.issue_of(investigation_id).await?,
            None => None,
        };
        let mut new = 0;
        for n in self.plan(kind, investigation_id, issue.as_deref()) {
            new += usize::from(self.store.enqueue(&n).await?);
        }
        if new > 0 {
            self.wake();
        }
        Ok(new)
    }

    /// The investigation's Jira issue (for [`Outgoing::plan`] before a
    /// stage's write); `None` without Jira.
    pub async fn issue_of(&self, investigation_id: &str) -> Result<Option<String>> {
        match self.jira {
            Some(_) => self.store.issue_of(investigation_id).await,
            None => Ok(None),
        }
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
            .enqueue(&NewNotification {
                key: key.to_string(),
                investigation_id: format!("jira:{issue}"),
                channel: JIRA.into(),
                event: "refused".into(),
                target: issue.to_string(),
                body: Some(jira::comment::body(client.flavor(), lines)),
            })
            .await?;
        if new {
            self.wake();
        }
        Ok(new)
    }

    /// Sends what is due until `stop` completes: at once when something
    /// is enqueued here, and every `poll` for retries and what other
    /// processes (or this one before a restart) left.
    pub async fn run(self: Arc<Self>, poll: Duration, stop: impl Future<Output = ()>) {
        tokio::pin!(stop);
        loop {
            let sent = tokio::select! {
                biased;
                _ = &mut stop => return,
                sent = self.dispatch_due() => sent,
            };
            match sent {
                Ok(n) if n > 0 => continue,
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "cannot read due notifications"),
            }
            tokio::select! {
                _ = &mut stop => return,
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(poll) => {}
            }
        }
    }

    /// One pass: claims up to 16 due notifications and makes one attempt
    /// at each, concurrently. Returns how many it attempted.
    pub async fn dispatch_due(self: &Arc<Self>) -> Result<usize> {
        // A crash mid-send makes the row due again after the lease.
        let due = self.store.claim(16, self.lease).await?;
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

    /// The body of a row stored without one, from the investigation now;
    /// `Err(why)` when there is nothing to send (no such investigation, a
    /// channel no longer configured).
    async fn render(&self, n: &Notification) -> std::result::Result<Value, String> {
        let view = self
            .views
            .view(&n.investigation_id)
            .await
            .map_err(|e| format!("cannot read the investigation: {e}"))?
            .ok_or_else(|| format!("investigation {} not found", n.investigation_id))?;
        match n.channel.as_str() {
            WEBHOOK => {
                let data = match n.event.as_str() {
                    "pull_request_opened" => {
                        json!({"id": n.investigation_id, "pull_request": view["pull_request"]})
                    }
                    _ => view,
                };
                Ok(Webhooks::payload(
                    &n.event,
                    &n.key,
                    &n.investigation_id,
                    &data,
                ))
            }
            JIRA => {
                let client = self.jira.as_ref().ok_or("Jira is no longer configured")?;
                let page = client
                    .dashboard_url
                    .as_ref()
                    .map(|base| format!("{base}{}", n.investigation_id));
                let lines = jira::comment::lines(&n.event, &view, page.as_deref())
                    .ok_or_else(|| format!("no comment for {}", n.event))?;
                Ok(jira::comment::body(client.flavor(), &lines))
            }
            other => Err(format!("unknown channel {other:?}")),
        }
    }

    async fn attempt(&self, mut n: Notification) {
        if n.body.is_none() {
            let rendered = match self.render(&n).await {
                Ok(body) => self.store.rendered(n.seq, &body).await,
                Err(why) => {
                    // Nothing a retry can send: given up, and said why.
                    tracing::warn!(investigation = %n.investigation_id, event = %n.event, error = %why, "notification not rendered");
                    if let Err(e) = self.store.failed(n.seq, &why, None).await {
                        tracing::error!(error = %e, "cannot settle a notification");
                    }
                    return;
                }
            };
            match rendered {
                Ok(body) => n.body = Some(body),
                Err(e) => {
                    // The lease runs out and it is rendered again.
                    tracing::error!(error = %e, "cannot store a rendered notification");
                    return;
                }
            }
        }
        let body = n.body.clone().unwrap_or_default();
        let attempt = n.attempts + 1;
        let (url, logged_event, max, (first_retry, max_retry), (status, error)) =
            match n.channel.as_str() {
                WEBHOOK => match &self.webhooks {
                    Some(h) => (
                        n.target.clone(),
                        n.event.clone(),
                        h.attempts,
                        (h.first_retry, h.max_retry),
                        h.send(&n.target, &n.event, &n.key, &body.to_string()).await,
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
                        c.post_comment(&n.target, &body).await,
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
        if let Err(e) = self.store.log_attempt(&log).await {
            tracing::error!(error = %e, "cannot log a notification attempt");
        }
        let settled = match &error {
            None => {
                metrics::counter!("tracelab_notifications_total", "channel" => n.channel.clone(), "outcome" => "delivered").increment(1);
                self.store.delivered(n.seq).await
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
                self.store.failed(n.seq, why, retry).await
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
