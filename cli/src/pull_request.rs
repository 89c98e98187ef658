//! `tracelab investigations pr ID --remote NAME --github OWNER/REPO` on one
//! machine: the verified `ai-debug/…` branch the engine kept in the
//! investigated repository is pushed to the remote with the user's own git
//! credentials, and the draft pull request (or merge request) is found or
//! opened with the API token from the environment. The store records the
//! link (a second call prints the same one without asking the host) or
//! why it failed, each with an audit row.

use crate::args::{Format, PullRequestArgs};
use anyhow::{Context as _, bail};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tracelab_codehost::{
    CodeHost, HostKind, PullRequestRequest, Pusher, Token, TokenSource, open_draft_pull_request,
};
use tracelab_domain::audit::PullRequestLink;
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::ports::{HandOffStore, InvestigationStore};
use tracelab_domain::state::InvestigationState;
use tracelab_store::SqliteStore;

/// The code host as the environment configures it.
pub struct HostEnv {
    pub api_url: Option<String>,
    pub token: Option<String>,
}

impl HostEnv {
    /// `TRACELAB_{GITHUB,GITLAB}_API_URL` and `…_TOKEN`.
    pub fn from_env(kind: HostKind) -> Self {
        let prefix = match kind {
            HostKind::GitHub => "TRACELAB_GITHUB",
            HostKind::GitLab => "TRACELAB_GITLAB",
        };
        let var = |name: &str| {
            std::env::var(format!("{prefix}_{name}"))
                .ok()
                .filter(|v| !v.trim().is_empty())
        };
        Self {
            api_url: var("API_URL"),
            token: var("TOKEN"),
        }
    }
}

/// Prints an opened pull request.
pub fn print(url: &str, number: u64, format: Format) -> anyhow::Result<()> {
    match format {
        Format::Json => println!("{}", serde_json::json!({ "url": url, "number": number })),
        Format::Markdown => println!("draft pull request #{number}: {url}"),
    }
    Ok(())
}

pub async fn run(store: &SqliteStore, actor: &str, args: PullRequestArgs) -> anyhow::Result<()> {
    let (kind, project) = match (&args.github, &args.gitlab) {
        (Some(p), None) => (HostKind::GitHub, p.clone()),
        (None, Some(p)) => (HostKind::GitLab, p.clone()),
        _ => bail!("name the code host: --github OWNER/REPO or --gitlab GROUP/PROJECT"),
    };
    let remote = args
        .remote
        .clone()
        .context("--remote NAME is required: the git remote to push the branch to")?;
    let id = InvestigationId(args.id.clone());
    let hand_off = store
        .hand_off(&id)
        .await?
        .with_context(|| format!("no investigation {id}"))?;
    let state = store
        .state(&id)
        .await?
        .unwrap_or(InvestigationState::Created);
    if state != InvestigationState::Approved {
        bail!(
            "investigation {id} is {state}, not APPROVED: approve it first (`tracelab investigations approve {id}`)"
        );
    }
    if let Some(pr) = hand_off.pull_request {
        return print(&pr.url, pr.number, args.format);
    }
    match open(store, &id, kind, &project, &remote, &args).await {
        Ok(link) => {
            let stored = store
                .record_pull_request(&id, actor, "local", &link)
                .await?;
            print(&stored.url, stored.number, args.format)
        }
        Err(e) => {
            let message = format!("{e:#}");
            store
                .record_pull_request_failure(&id, actor, "local", &message)
                .await?;
            Err(e.context(format!(
                "no pull request for {id} (stored; run the command again to retry)"
            )))
        }
    }
}

async fn open(
    store: &SqliteStore,
    id: &InvestigationId,
    kind: HostKind,
    project: &str,
    remote: &str,
    args: &PullRequestArgs,
) -> anyhow::Result<PullRequestLink> {
    let env = HostEnv::from_env(kind);
    let token_var = match kind {
        HostKind::GitHub => "TRACELAB_GITHUB_TOKEN",
        HostKind::GitLab => "TRACELAB_GITLAB_TOKEN",
    };
    let token = env
        .token
        .with_context(|| format!("{token_var} is not set: the code host's API token"))?;
    let report = store
        .get(id)
        .await?
        .with_context(|| format!("investigation {id} has no report"))?;
    let local = PathBuf::from(&report.repository);
    let url = remote_url(&local, remote).await?;
    let mut request = PullRequestRequest::for_report(&report, url, args.base.clone(), &local)?;
    request.project = Some(project.to_string());
    if !args.labels.is_empty() {
        request.labels = args.labels.clone();
    }
    let host = CodeHost::new(
        kind,
        env.api_url.as_deref().unwrap_or_default(),
        TokenSource::Value(Token::new(token)?),
        Duration::from_secs(30),
    )?;
    let pusher = Pusher::new(&tracelab_repos::RepositorySettings {
        // The user's own credential helpers and ssh-agent, as for fetches.
        ambient_credentials: true,
        ..Default::default()
    })?;
    let pr = open_draft_pull_request(&pusher, &host, &request).await?;
    Ok(PullRequestLink {
        url: pr.url,
        number: pr.number,
        host: kind.as_str().to_string(),
    })
}

/// The URL of `remote` in the repository at `local`.
async fn remote_url(local: &Path, remote: &str) -> anyhow::Result<String> {
    if remote.starts_with('-') || remote.is_empty() {
        bail!("{remote:?} is not a remote name");
    }
    let out = tokio::process::Command::new("git")
        .arg("-C")
        .arg(local)
        .args(["remote", "get-url", "--", remote])
        .output()
        .await
        .context("cannot run git")?;
    if !out.status.success() {
        bail!(
            "{} has no remote {remote:?}: {}",
            local.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}
