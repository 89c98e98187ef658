//! `tracelab investigations pr ID --remote NAME --github OWNER/REPO` on one
//! machine: the verified `ai-debug/…` branch the engine kept in the
//! investigated repository is pushed to the remote with the user's own git
//! credentials, and the draft pull request (or merge request) is found or
//! opened with the API token from the environment. The store records the
//! link (a second call prints the same one without asking the host) or
//! why it failed, each with an audit row. `tracelab serve`'s button takes
//! the same path ([`open_or_find`]).

use crate::args::{Format, PullRequestArgs};
use anyhow::{Context as _, bail};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tracelab_codehost::{
    CodeHost, HostKind, PullRequestRequest, Pusher, Token, TokenSource, open_draft_pull_request,
};
use tracelab_domain::ErrorKind;
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

/// Where this machine's pull requests go: the code host and its project,
/// the git remote of the investigated repository to push to, the target
/// branch and the labels. From `investigations pr`'s flags or `serve`'s.
#[derive(Debug, Clone)]
pub struct Target {
    pub kind: HostKind,
    pub project: String,
    pub remote: String,
    pub base: String,
    pub labels: Vec<String>,
}

impl Target {
    /// `--github`/`--gitlab`, `--remote`, `--base`, `--label`; `None` when
    /// no code host is named (`serve` then offers no pull requests).
    pub fn from_flags(
        github: Option<&str>,
        gitlab: Option<&str>,
        remote: Option<&str>,
        base: &str,
        labels: &[String],
    ) -> anyhow::Result<Option<Self>> {
        let (kind, project) = match (github, gitlab) {
            (Some(p), None) => (HostKind::GitHub, p),
            (None, Some(p)) => (HostKind::GitLab, p),
            (None, None) => return Ok(None),
            (Some(_), Some(_)) => bail!("name one code host: --github or --gitlab"),
        };
        let remote =
            remote.context("--remote NAME is required: the git remote to push the branch to")?;
        Ok(Some(Self {
            kind,
            project: project.to_string(),
            remote: remote.to_string(),
            base: base.to_string(),
            labels: labels.to_vec(),
        }))
    }
}

/// `notes`: the stage's webhooks and Jira comment, stored with the link.
pub async fn run(
    store: &SqliteStore,
    actor: &str,
    args: PullRequestArgs,
    notes: &[tracelab_store::notifications::NewNotification],
) -> anyhow::Result<()> {
    let target = Target::from_flags(
        args.github.as_deref(),
        args.gitlab.as_deref(),
        args.remote.as_deref(),
        &args.base,
        &args.labels,
    )?
    .context("name the code host: --github OWNER/REPO or --gitlab GROUP/PROJECT")?;
    let id = InvestigationId(args.id.clone());
    match open_or_find(store, &id, actor, "local", &target, notes).await {
        Ok(pr) => print(&pr.url, pr.number, args.format),
        Err(e) if e.kind == ErrorKind::Conflict && e.message.contains("not APPROVED") => {
            Err(anyhow::anyhow!(
                "{}; approve it first (`tracelab investigations approve {id}`)",
                e.message
            ))
        }
        Err(e) if matches!(e.kind, ErrorKind::NotFound | ErrorKind::Conflict) => Err(e.into()),
        Err(e) => Err(anyhow::Error::from(e).context(format!(
            "no pull request for {id} (stored; run the command again to retry)"
        ))),
    }
}

/// The stored pull request of an approved investigation, else one attempt
/// to open it whose outcome is stored (the link, or why it failed), each
/// with an audit row by `actor` in `role`. `NotFound` for an unknown id,
/// `Conflict` unless APPROVED; a failed attempt keeps the kind the code
/// host's client gave it (`Unavailable` for a host that is down), any
/// other failure (a missing token, no such remote) is `InvalidArgument`.
pub async fn open_or_find(
    store: &SqliteStore,
    id: &InvestigationId,
    actor: &str,
    role: &str,
    target: &Target,
    notes: &[tracelab_store::notifications::NewNotification],
) -> tracelab_domain::Result<PullRequestLink> {
    let hand_off = store
        .hand_off(id)
        .await?
        .ok_or_else(|| tracelab_domain::Error::not_found(format!("no investigation {id}")))?;
    let state = store
        .state(id)
        .await?
        .unwrap_or(InvestigationState::Created);
    if state != InvestigationState::Approved {
        return Err(tracelab_domain::Error::conflict(format!(
            "investigation {id} is {state}, not APPROVED"
        )));
    }
    if let Some(pr) = hand_off.pull_request {
        return Ok(pr);
    }
    match open(store, id, target).await {
        // `notes`: `tracelab serve`'s webhooks and comment, stored with the link.
        Ok(link) => {
            store
                .record_pull_request_notifying(id, actor, role, &link, notes)
                .await
        }
        Err(e) => {
            let message = format!("{e:#}");
            store
                .record_pull_request_failure(id, actor, role, &message)
                .await?;
            let kind = e
                .downcast_ref::<tracelab_domain::Error>()
                .map_or(ErrorKind::InvalidArgument, |d| d.kind);
            Err(tracelab_domain::Error::new(kind, message))
        }
    }
}

async fn open(
    store: &SqliteStore,
    id: &InvestigationId,
    target: &Target,
) -> anyhow::Result<PullRequestLink> {
    let (kind, project, remote) = (target.kind, target.project.as_str(), target.remote.as_str());
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
    let mut request = PullRequestRequest::for_report(&report, url, target.base.clone(), &local)?;
    request.project = Some(project.to_string());
    if !target.labels.is_empty() {
        request.labels = target.labels.clone();
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
