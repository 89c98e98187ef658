//! `tracelab serve`: the review dashboard over this machine's store (the
//! same pages the fleet's investigator serves), for one person at a desk.
//!
//! One token signs in, with the reviewer role: `TRACELAB_TOKEN` (or
//! `--token`) when given, else a random one printed in the link on the
//! first stdout line (as Jupyter does). The listener is loopback by default.
//!
//! With `--github OWNER/REPO` (or `--gitlab`) an approved investigation's
//! page has a button that pushes its verified branch to `--remote` and
//! opens the draft pull request, as `tracelab investigations pr` does.
//!
//! Signed webhooks and Jira comments, as the fleet sends them
//! (`tracelab-notify`, the rows in this machine's SQLite file), when the
//! environment configures them (docs/review.md): `TRACELAB_WEBHOOK_URLS`
//! (space or comma separated) with `TRACELAB_WEBHOOK_SECRET[_FILE]`;
//! `TRACELAB_JIRA_URL`, `TRACELAB_JIRA_FLAVOR` (`cloud`, `server`),
//! `TRACELAB_JIRA_USER`, `TRACELAB_JIRA_TOKEN[_FILE]`. An approval, a
//! rejection and an opened pull request store theirs in their own
//! transaction; `created` and `decided` happen in the `tracelab
//! investigate` process, so a sweep here enqueues them (keyed: once each)
//! for the investigations of the last day.

use anyhow::Context;
use std::net::SocketAddr;
use std::sync::Arc;
use tracelab_dashboard::{Authenticator, DashboardSource, ListFilter, Viewer};
use tracelab_domain::Result;
#[cfg(feature = "server")]
use tracelab_domain::audit::PullRequestLink;
use tracelab_domain::audit::{HandOff, Review};
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::ports::{HandOffStore, InvestigationStore};
use tracelab_domain::report::{InvestigationSummary, Report};
use tracelab_domain::state::Transition;
use tracelab_domain::webhook::WebhookDelivery;
use tracelab_notify::jira::{Flavor, JiraSettings};
use tracelab_notify::webhooks::{WebhookSettings, Webhooks};
use tracelab_notify::{Outgoing, Views};
use tracelab_store::SqliteStore;
use tracelab_store::notifications::NewNotification;

/// How many of the newest investigations the pages look through.
const WINDOW: u32 = 1000;

/// Investigations older than this are not announced by the sweep: a first
/// start with webhooks configured does not replay the whole store.
const ANNOUNCE_WITHIN: time::Duration = time::Duration::days(1);

/// Serves until Ctrl-C. The first stdout line is the dashboard's URL.
pub async fn run(
    store: Arc<SqliteStore>,
    listen: SocketAddr,
    token: Option<String>,
    pull_requests: Option<PullRequests>,
) -> anyhow::Result<()> {
    let (token, generated) = match token.filter(|t| !t.trim().is_empty()) {
        Some(t) => (t.trim().to_string(), false),
        None => (random_token()?, true),
    };
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let addr = listener.local_addr()?;
    let outgoing = outgoing(&store, true)?;
    let background = outgoing.clone().map(|out| {
        let sweep = tokio::spawn(sweep(store.clone(), out.clone()));
        let dispatch = tokio::spawn(out.run(
            std::time::Duration::from_secs(1),
            std::future::pending::<()>(),
        ));
        (sweep, dispatch)
    });
    let router = tracelab_dashboard::router(
        Arc::new(Source {
            store,
            pull_requests,
            outgoing,
        }),
        Arc::new(OneToken {
            token: token.clone(),
        }),
    );
    if generated {
        println!("http://{addr}/investigations?token={token}");
    } else {
        println!("http://{addr}/investigations");
    }
    eprintln!("serving the dashboard on http://{addr} (Ctrl-C stops it)");
    axum::serve(listener, router)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    // What is not sent yet stays stored: the next start sends it.
    if let Some((sweep, dispatch)) = background {
        sweep.abort();
        dispatch.abort();
    }
    Ok(())
}

/// An environment variable, trimmed; empty counts as unset.
fn env(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// The stage `kind` (`approved`, `rejected`) of investigation `id` as the
/// notification rows the environment configures, to store with the stage's
/// own write: `tracelab investigations approve|reject` queue them in this
/// machine's store, and `tracelab serve` delivers them (also when it starts
/// after the approval).
pub(crate) async fn stage_notifications(
    store: &Arc<SqliteStore>,
    kind: &str,
    id: &str,
) -> anyhow::Result<Vec<NewNotification>> {
    let Some(out) = outgoing(store, false)? else {
        return Ok(Vec::new());
    };
    let issue = out.issue_of(id).await?;
    Ok(out.plan(kind, id, issue.as_deref()))
}

/// The webhooks and Jira comments the environment configures, or `None`;
/// `announce` says so on stderr.
fn outgoing(store: &Arc<SqliteStore>, announce: bool) -> anyhow::Result<Option<Arc<Outgoing>>> {
    let webhooks = WebhookSettings {
        urls: env("TRACELAB_WEBHOOK_URLS")
            .map(|v| {
                v.split([',', ' '])
                    .filter(|u| !u.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        secret: env("TRACELAB_WEBHOOK_SECRET").unwrap_or_default(),
        secret_file: env("TRACELAB_WEBHOOK_SECRET_FILE").unwrap_or_default(),
        ..WebhookSettings::default()
    };
    let jira = JiraSettings {
        base_url: env("TRACELAB_JIRA_URL").unwrap_or_default(),
        flavor: match env("TRACELAB_JIRA_FLAVOR").as_deref() {
            None | Some("cloud") => Flavor::Cloud,
            Some("server") => Flavor::Server,
            Some(other) => anyhow::bail!("TRACELAB_JIRA_FLAVOR={other:?}: cloud or server"),
        },
        user: env("TRACELAB_JIRA_USER").unwrap_or_default(),
        token: env("TRACELAB_JIRA_TOKEN").unwrap_or_default(),
        token_file: env("TRACELAB_JIRA_TOKEN_FILE").unwrap_or_default(),
        ..JiraSettings::default()
    };
    let outgoing = Outgoing::new(
        store.clone(),
        Arc::new(SqliteViews(store.clone())),
        Webhooks::new(&webhooks)?,
        tracelab_notify::jira::client::Client::new(&jira)?,
        &jira,
    );
    if announce && outgoing.is_some() {
        eprintln!(
            "sending webhooks to {} URL(s){}",
            webhooks.urls.len(),
            if jira.base_url.is_empty() {
                ""
            } else {
                " and Jira comments"
            }
        );
    }
    Ok(outgoing.map(Arc::new))
}

/// Enqueues `created` and `decided` of the day's investigations, which
/// other processes (`tracelab investigate`) ran: keyed, so once each.
async fn sweep(store: Arc<SqliteStore>, out: Arc<Outgoing>) {
    use tracelab_domain::state::InvestigationState::*;
    loop {
        let since = time::OffsetDateTime::now_utc() - ANNOUNCE_WITHIN;
        match store.list(WINDOW).await {
            Ok(list) => {
                for s in list.iter().filter(|s| s.created_at >= since) {
                    let decided = !matches!(
                        s.state,
                        Created | ContextLoading | Investigating | Verifying | Arbitrating
                    );
                    for kind in ["created", "decided"] {
                        if kind == "decided" && !decided {
                            continue;
                        }
                        if let Err(e) = out.enqueue(kind, &s.id.0).await {
                            tracing::warn!(investigation = %s.id, error = %e, "notifications not stored");
                        }
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot list investigations to announce"),
        }
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    }
}

/// The investigation as the fleet's API shows it, from this machine's
/// store: what webhooks carry and Jira comments are written from.
struct SqliteViews(Arc<SqliteStore>);

#[async_trait::async_trait]
impl Views for SqliteViews {
    async fn view(&self, id: &str) -> Result<Option<serde_json::Value>> {
        let investigation = InvestigationId(id.to_string());
        let Some(summary) = self
            .0
            .list(WINDOW)
            .await?
            .into_iter()
            .find(|s| s.id == investigation)
        else {
            return Ok(None);
        };
        let report = self.0.get(&investigation).await?;
        let hand_off = HandOffStore::hand_off(self.0.as_ref(), &investigation)
            .await?
            .unwrap_or_default();
        let mut view = serde_json::json!({
            "id": id,
            "state": summary.state.as_str(),
            "verdict": summary.verdict.map(|v| v.as_str()),
            "repository": summary.repository,
            "test_command": summary.test_command,
            "culprit": summary.culprit,
            "created_at": summary.created_at.format(&time::format_description::well_known::Rfc3339).unwrap_or_default(),
            "report": report,
            "transitions": self.0.transitions(&investigation).await?,
        });
        if let (Some(map), Ok(serde_json::Value::Object(extra))) =
            (view.as_object_mut(), serde_json::to_value(&hand_off))
        {
            map.extend(extra);
        }
        Ok(Some(view))
    }
}

fn random_token() -> anyhow::Result<String> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no random token: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

struct OneToken {
    token: String,
}

impl Authenticator for OneToken {
    fn check(&self, token: &str) -> Option<Viewer> {
        // Same length first, then every byte: no early exit on a mismatch.
        let same = token.len() == self.token.len()
            && token
                .bytes()
                .zip(self.token.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0;
        same.then(|| Viewer {
            name: "local".into(),
            can_review: true,
        })
    }
}

/// Where the page's pull request button sends the branch and the draft.
pub struct PullRequests {
    #[cfg(feature = "server")]
    pub target: crate::pull_request::Target,
    /// The audit log's role for the signed-in person.
    pub actor_role: &'static str,
}

struct Source {
    store: Arc<SqliteStore>,
    pull_requests: Option<PullRequests>,
    outgoing: Option<Arc<Outgoing>>,
}

impl Source {
    /// What stage `kind` stores with its write (nothing unconfigured).
    async fn plan(&self, kind: &str, id: &str) -> Result<Vec<NewNotification>> {
        match &self.outgoing {
            Some(out) => {
                let issue = out.issue_of(id).await?;
                Ok(out.plan(kind, id, issue.as_deref()))
            }
            None => Ok(Vec::new()),
        }
    }

    fn notified(&self) {
        if let Some(out) = &self.outgoing {
            out.wake();
        }
    }
}

#[async_trait::async_trait]
impl DashboardSource for Source {
    async fn list(&self, filter: &ListFilter) -> Result<Vec<InvestigationSummary>> {
        Ok(self
            .store
            .list(WINDOW)
            .await?
            .into_iter()
            .filter(|s| filter.matches(s))
            .take(filter.limit.max(1) as usize)
            .collect())
    }

    async fn report(&self, id: &str) -> Result<Option<Report>> {
        self.store.get(&InvestigationId(id.to_string())).await
    }

    async fn summary(&self, id: &str) -> Result<Option<(InvestigationSummary, Vec<Transition>)>> {
        let Some(summary) = self
            .store
            .list(WINDOW)
            .await?
            .into_iter()
            .find(|s| s.id.0 == id)
        else {
            return Ok(None);
        };
        let transitions = self.store.transitions(&summary.id).await?;
        Ok(Some((summary, transitions)))
    }

    async fn review(
        &self,
        id: &str,
        approve: bool,
        reviewer: &str,
        reason: Option<&str>,
    ) -> Result<()> {
        let kind = if approve { "approved" } else { "rejected" };
        let notes = self.plan(kind, id).await?;
        self.store
            .review_notifying(
                &InvestigationId(id.to_string()),
                &Review {
                    approve,
                    reviewer,
                    role: "reviewer",
                    reason,
                    forbid_self_approval: false,
                },
                &notes,
            )
            .await?;
        self.notified();
        Ok(())
    }

    async fn hand_off(&self, id: &str) -> Result<Option<HandOff>> {
        HandOffStore::hand_off(self.store.as_ref(), &InvestigationId(id.to_string())).await
    }

    /// The delivery log of this machine's webhooks and Jira comments.
    async fn webhook_deliveries(&self, id: &str) -> Result<Vec<WebhookDelivery>> {
        self.store.webhook_deliveries(id).await
    }

    fn opens_pull_requests(&self) -> bool {
        self.pull_requests.is_some()
    }

    #[cfg(feature = "server")]
    async fn open_pull_request(&self, id: &str, actor: &str) -> Result<PullRequestLink> {
        let Some(p) = &self.pull_requests else {
            return Err(tracelab_domain::Error::conflict(
                "no code host: start tracelab serve with --github OWNER/REPO or --gitlab GROUP/PROJECT",
            ));
        };
        let notes = self.plan("pull_request_opened", id).await?;
        let link = crate::pull_request::open_or_find(
            &self.store,
            &InvestigationId(id.to_string()),
            actor,
            p.actor_role,
            &p.target,
            &notes,
        )
        .await?;
        self.notified();
        Ok(link)
    }
}
