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
use tracelab_store::SqliteStore;

/// How many of the newest investigations the pages look through.
const WINDOW: u32 = 1000;

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
    let router = tracelab_dashboard::router(
        Arc::new(Source {
            store,
            pull_requests,
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
    Ok(())
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
        self.store
            .review(
                &InvestigationId(id.to_string()),
                &Review {
                    approve,
                    reviewer,
                    role: "reviewer",
                    reason,
                    forbid_self_approval: false,
                },
            )
            .await
            .map(|_| ())
    }

    async fn hand_off(&self, id: &str) -> Result<Option<HandOff>> {
        HandOffStore::hand_off(self.store.as_ref(), &InvestigationId(id.to_string())).await
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
        crate::pull_request::open_or_find(
            &self.store,
            &InvestigationId(id.to_string()),
            actor,
            p.actor_role,
            &p.target,
        )
        .await
    }
}
