//! The commands. Each builds what it needs (store, sandboxes, engine) from
//! flags and the environment — the only place that reads either.

use crate::args::{
    DemoArgs, Format, InvestigateArgs, InvestigationsCommand, RunOptions, SandboxKind,
};
use crate::command_line::{Cli, Command};
use crate::db::{default_db, os_user};
use crate::output;
use anyhow::{Context as _, bail};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracelab_domain::audit::Review;
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::ports::{InvestigationStore, SandboxProvider};
use tracelab_domain::state::{InvestigationState, Transition};
use tracelab_engine::{Engine, EngineConfig, InvestigateRequest, Progress};
use tracelab_sandbox::{HardenedConfig, Isolation, LocalConfig, LocalSandboxProvider};
use tracelab_store::SqliteStore;

/// The store, recording the OS user as who starts, reviews and opens
/// pull requests (the audit log's actor on one machine).
async fn open_store(cli_db: &Option<PathBuf>) -> anyhow::Result<Arc<SqliteStore>> {
    let path = cli_db.clone().unwrap_or_else(default_db);
    Ok(Arc::new(
        SqliteStore::open(&path).await?.acting_as(os_user()),
    ))
}

/// `TRACELAB_FORBID_SELF_APPROVAL=1`: the one-machine switch of the
/// four-eyes rule, off by default (one person at one desk starts and
/// reviews; the fleet's `review.forbid_self_approval` is on by default).
fn forbid_self_approval() -> bool {
    std::env::var("TRACELAB_FORBID_SELF_APPROVAL")
        .is_ok_and(|v| matches!(v.trim(), "1" | "true" | "yes"))
}

/// Progress on stderr with the elapsed time.
struct StderrProgress {
    started: Instant,
}

impl Progress for StderrProgress {
    fn report(&self, line: &str) {
        eprintln!("[{:>6.1}s] {line}", self.started.elapsed().as_secs_f64());
    }
}

pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    #[cfg(not(feature = "server"))]
    if cli.server.is_some() {
        return Err(crate::built::without("server", "--server"));
    }
    #[cfg(feature = "server")]
    if let Some(url) = &cli.server {
        let remote = crate::remote::Remote::new(
            url,
            cli.token.clone(),
            Duration::from_secs(cli.server_patience),
        )?;
        return match cli.command {
            Command::Investigate(args) => remote.investigate(cli.quiet, &args).await,
            Command::Investigations(cmd) => remote.investigations(cmd).await,
            Command::Report(args) => {
                crate::report::run(args, Some(url), cli.token.as_deref()).await
            }
            _ => bail!(
                "--server applies to `investigate` and `investigations`; this command runs locally"
            ),
        };
    }
    match cli.command {
        Command::Investigate(args) => investigate(&cli.db, cli.quiet, args).await,
        Command::Demo(args) => demo(&cli.db, cli.quiet, args).await,
        Command::Investigations(cmd) => investigations(&cli.db, cmd).await,
        Command::Parse(args) => crate::parse::run(args, &cli.db).await,
        Command::Index(args) => crate::code::index(args).await,
        Command::Locate(args) => crate::code::locate(args, cli.token.as_deref()).await,
        Command::Repro(args) => crate::repro::run(args).await,
        Command::Report(args) => crate::report::run(args, None, cli.token.as_deref()).await,
        Command::Serve(args) => serve(&cli.db, args, cli.token.clone()).await,
        Command::Experience(cmd) => crate::experience::run(&cli.db, cli.quiet, cmd).await,
    }
}

fn engine_config(run: &RunOptions) -> anyhow::Result<EngineConfig> {
    let mut config = EngineConfig::default();
    if let Some(k) = run.parallel {
        config.parallelism = k;
    }
    config.command_timeout = Duration::from_secs(run.timeout);
    config.sequential.max_runs = run.max_runs;
    config.tests_at_revision = run.tests_at_revision;
    config.confirm_by_fix_after = run.confirm_by_fix_after;
    config.max_hypotheses = run.max_hypotheses;
    config.max_patch_attempts = run.max_patch_attempts;
    config.repair = match run.repair {
        crate::args::RepairArg::Off => tracelab_engine::RepairMode::Off,
        crate::args::RepairArg::Templates => tracelab_engine::RepairMode::Templates,
        crate::args::RepairArg::Llm => tracelab_engine::RepairMode::Llm,
        crate::args::RepairArg::All => tracelab_engine::RepairMode::All,
    };
    config.repair_screening_budget = Duration::from_secs(run.repair_budget);
    config.llm_token_budget = run.llm_token_budget;
    config.llm_wall_budget = Duration::from_secs(run.llm_budget);
    if config.repair.model() {
        config.chat_model = Some(chat_model_from_env()?);
    }
    config.allowlist.programs.extend(run.allow.iter().cloned());
    config.allowlist.inline_code = run.allow_inline_code;
    config.allowlist.repository_programs = run.allow_repository_programs;
    config.validate()?;
    Ok(config)
}

/// The LLM patch agent's model server, from the environment (server-side
/// settings, never a flag: a key on the command line ends up in shell
/// history and `ps`).
fn chat_model_from_env() -> anyhow::Result<Arc<dyn tracelab_domain::ports::ChatModel>> {
    let var = |name: &str| {
        std::env::var(name)
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let (Some(base_url), Some(model)) = (var("TRACELAB_LLM_BASE_URL"), var("TRACELAB_LLM_MODEL"))
    else {
        anyhow::bail!(
            "--repair llm and --repair all need a model server: set TRACELAB_LLM_BASE_URL (the OpenAI-compatible API root, e.g. http://127.0.0.1:8000/v1) and TRACELAB_LLM_MODEL, and TRACELAB_LLM_API_KEY or TRACELAB_LLM_API_KEY_FILE when the server wants a key"
        );
    };
    let api_key = match (
        var("TRACELAB_LLM_API_KEY"),
        var("TRACELAB_LLM_API_KEY_FILE"),
    ) {
        (Some(_), Some(_)) => {
            anyhow::bail!("set TRACELAB_LLM_API_KEY or TRACELAB_LLM_API_KEY_FILE, not both")
        }
        (Some(key), None) => key,
        (None, Some(file)) => {
            // The error names the file, never its content.
            let key = std::fs::read_to_string(&file).map_err(|e| {
                anyhow::anyhow!("cannot read TRACELAB_LLM_API_KEY_FILE {file}: {}", e.kind())
            })?;
            if key.trim().is_empty() {
                anyhow::bail!("TRACELAB_LLM_API_KEY_FILE {file} is empty");
            }
            key
        }
        (None, None) => String::new(),
    };
    let timeout_seconds = match var("TRACELAB_LLM_TIMEOUT") {
        Some(secs) => secs
            .parse()
            .map_err(|_| anyhow::anyhow!("TRACELAB_LLM_TIMEOUT must be whole seconds"))?,
        None => 0,
    };
    // The same settings → client path as the fleet's verifiers.
    let server = tracelab_llm::LlmServer {
        base_url,
        model,
        api_key,
        timeout_seconds,
    };
    let client = server
        .client("TRACELAB_LLM")
        .map_err(|e| anyhow::anyhow!(e.message))?;
    Ok(Arc::new(client))
}

async fn sandboxes(
    run: &RunOptions,
    repo: &std::path::Path,
) -> anyhow::Result<Arc<dyn SandboxProvider>> {
    if run.sandbox != SandboxKind::Docker && (run.image.is_some() || run.recipe.is_some()) {
        bail!("--image and --recipe need --sandbox docker");
    }
    let mut local = LocalConfig::default();
    local.allowlist.programs.extend(run.allow.iter().cloned());
    if let Some(path) = std::env::var_os("PATH") {
        local.path = path.to_string_lossy().into_owned();
    }
    match run.sandbox {
        SandboxKind::Local => Ok(Arc::new(LocalSandboxProvider::new(local))),
        SandboxKind::Hardened => {
            let provider = LocalSandboxProvider::with_isolation(
                local,
                Isolation::Hardened(HardenedConfig::default()),
            )?;
            eprintln!("sandbox: {}", provider.describe());
            Ok(Arc::new(provider))
        }
        SandboxKind::Docker => docker(run, repo).await,
    }
}

#[cfg(feature = "docker")]
async fn docker(
    run: &RunOptions,
    repo: &std::path::Path,
) -> anyhow::Result<Arc<dyn SandboxProvider>> {
    use tracelab_sandbox_docker::{DockerConfig, DockerSandboxProvider, Reap};
    let mut config = DockerConfig::default();
    config.allowlist.programs.extend(run.allow.iter().cloned());
    if let Some(image) = &run.image {
        config.image = image.clone();
    }
    let provider = DockerSandboxProvider::connect(config).await?;
    // Containers of crashed earlier runs (owner process gone) are removed first.
    let reaped = provider.reap(Reap::Orphans).await?;
    if reaped > 0 {
        tracing::info!(reaped, "removed leftover sandbox containers");
    }
    let provider = match &run.recipe {
        Some(recipe) => provider.with_recipe(repo, recipe).await?,
        None => provider,
    };
    Ok(Arc::new(provider))
}

#[cfg(not(feature = "docker"))]
async fn docker(
    _run: &RunOptions,
    _repo: &std::path::Path,
) -> anyhow::Result<Arc<dyn SandboxProvider>> {
    Err(crate::built::without("docker", "--sandbox docker"))
}

async fn investigate(
    db: &Option<PathBuf>,
    quiet: bool,
    args: InvestigateArgs,
) -> anyhow::Result<ExitCode> {
    if args.evidence.is_some() {
        anyhow::bail!("--evidence names evidence stored by a fleet's ingest; use it with --server");
    }
    let mut request = InvestigateRequest {
        repo: args.repo.clone(),
        test_command: args.test.clone().context("--test is required")?,
        good: args.good.clone(),
        bad: args.bad.clone(),
        issue_id: args.issue_id.clone(),
    };
    // Held until the investigation ends: the mirror is not evicted under it.
    let _mirror = match args
        .repo
        .to_str()
        .filter(|r| tracelab_repos::looks_like_url(r))
    {
        Some(url) => Some(fetch_repository(url, &mut request, quiet).await?),
        None => None,
    };
    run_investigation(db, quiet, &args.run, request).await
}

/// `--repo URL` on one machine: a mirror in the user's cache
/// (`~/.cache/tracelab/repos`), fetched with the user's own git credentials,
/// and the revisions resolved there (`main` is the server's main now).
async fn fetch_repository(
    url: &str,
    request: &mut InvestigateRequest,
    quiet: bool,
) -> anyhow::Result<tracelab_repos::Mirror> {
    let settings = tracelab_repos::RepositorySettings {
        // The user at their own machine may name any repository.
        allow: vec!["**".into()],
        // The user's own credential helpers and ssh-agent.
        ambient_credentials: true,
        ..Default::default()
    };
    let cache = tracelab_repos::RepoCache::new(&settings)?;
    let url = tracelab_repos::RepoUrl::parse(url)?;
    let bad = request.bad.clone().unwrap_or_else(|| "HEAD".into());
    let mut wanted = vec![bad.as_str()];
    wanted.extend(request.good.as_deref());
    if !quiet {
        eprintln!("fetching {url}");
    }
    let mirror = cache.ensure(&url, &wanted).await?;
    request.repo = mirror.path.clone();
    request.bad = Some(mirror.resolved[0].clone());
    if request.good.is_some() {
        request.good = Some(mirror.resolved[1].clone());
    }
    Ok(mirror)
}

async fn run_investigation(
    db: &Option<PathBuf>,
    quiet: bool,
    run: &RunOptions,
    request: InvestigateRequest,
) -> anyhow::Result<ExitCode> {
    let store = open_store(db).await?;
    let progress: Arc<dyn Progress> = if quiet {
        Arc::new(tracelab_engine::Silent)
    } else {
        Arc::new(StderrProgress {
            started: Instant::now(),
        })
    };
    let mut config = engine_config(run)?;
    if !run.no_experience {
        config.experience = crate::experience::for_investigation(db).await?;
    }
    let engine = Engine {
        config,
        store: store.clone(),
        sandboxes: sandboxes(run, &request.repo).await?,
        progress,
    };
    let id = InvestigationId::generate();
    let outcome = tokio::select! {
        outcome = engine.investigate_as(id.clone(), request) => outcome,
        _ = tokio::signal::ctrl_c() => {
            // Dropping the pipeline future above killed its commands and removed its worktrees.
            mark_interrupted(store.as_ref(), &id).await;
            eprintln!("error: interrupted; investigation {id} marked FAILED, worktrees removed");
            return Ok(ExitCode::from(130));
        }
    };
    match outcome {
        Ok(report) => {
            output::write_report(&report, run.format, run.out.as_deref())?;
            Ok(ExitCode::SUCCESS)
        }
        Err(aborted) => {
            let id = aborted
                .id
                .map(|id| format!(" (investigation {id})"))
                .unwrap_or_default();
            eprintln!("error: {}{id}", aborted.error.message);
            Ok(ExitCode::from(1))
        }
    }
}

async fn mark_interrupted(store: &dyn InvestigationStore, id: &InvestigationId) {
    if let Ok(Some(state)) = store.state(id).await
        && !state.is_terminal()
    {
        let t = Transition {
            from: state,
            to: InvestigationState::Failed,
            at: time_now(),
            reason: Some("interrupted".into()),
        };
        let _ = store.transition(id, &t).await;
    }
}

fn time_now() -> tracelab_domain::report::Timestamp {
    tracelab_domain::report::Timestamp::now_utc()
}

async fn demo(db: &Option<PathBuf>, quiet: bool, args: DemoArgs) -> anyhow::Result<ExitCode> {
    let scenario = tracelab_testkit::scenarios::regression_behind_broken_range();
    let path = scenario.repo.path().to_path_buf();
    if !quiet {
        eprintln!(
            "demo repository: {} ({} commits; the test fails differently in {} of them; culprit {})",
            path.display(),
            24,
            scenario.broken.len(),
            &scenario.culprit.as_deref().unwrap_or("?")[..12]
        );
    }
    let request = InvestigateRequest {
        repo: path.clone(),
        test_command: scenario.test_command.clone(),
        good: None,
        bad: None,
        issue_id: Some("DEMO-1".into()),
    };
    let code = run_investigation(db, quiet, &args.run, request).await?;
    if args.keep {
        let kept = scenario.repo.into_path();
        eprintln!("kept the demo repository at {}", kept.display());
    }
    Ok(code)
}

async fn investigations(
    db: &Option<PathBuf>,
    cmd: InvestigationsCommand,
) -> anyhow::Result<ExitCode> {
    let store = open_store(db).await?;
    match cmd {
        InvestigationsCommand::List { limit, format } => {
            let list = store.list(limit).await?;
            match format {
                Format::Json => println!("{}", serde_json::to_string_pretty(&list)?),
                Format::Markdown => print!("{}", output::list_table(&list)),
            }
        }
        InvestigationsCommand::Show { id, format } => {
            let id = InvestigationId(id);
            let Some(report) = store.get(&id).await? else {
                let state = store.state(&id).await?;
                match state {
                    Some(state) => bail!(
                        "investigation {id} has no report (state {state}); see its transitions"
                    ),
                    None => bail!("no investigation {id}"),
                }
            };
            output::write_report(&report, format, None)?;
        }
        InvestigationsCommand::Approve { id, reason } => {
            decide(&store, &id, InvestigationState::Approved, reason).await?
        }
        InvestigationsCommand::Reject { id, reason } => {
            decide(&store, &id, InvestigationState::Rejected, reason).await?
        }
        InvestigationsCommand::PullRequest(args) => pull_request(&store, args).await?,
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(feature = "server")]
async fn pull_request(
    store: &Arc<SqliteStore>,
    args: crate::args::PullRequestArgs,
) -> anyhow::Result<()> {
    let notes = stage_notifications(store, "pull_request_opened", &args.id).await?;
    crate::pull_request::run(store, &os_user(), args, &notes).await
}

#[cfg(not(feature = "server"))]
async fn pull_request(
    _store: &Arc<SqliteStore>,
    _args: crate::args::PullRequestArgs,
) -> anyhow::Result<()> {
    Err(crate::built::without("server", "investigations pr"))
}

async fn decide(
    store: &Arc<SqliteStore>,
    id: &str,
    to: InvestigationState,
    reason: Option<String>,
) -> anyhow::Result<()> {
    let kind = if to == InvestigationState::Approved {
        "approved"
    } else {
        "rejected"
    };
    let notes = stage_notifications(store, kind, id).await?;
    let id = InvestigationId(id.to_string());
    let reviewer = os_user();
    store
        .review_notifying(
            &id,
            &Review {
                approve: to == InvestigationState::Approved,
                reviewer: &reviewer,
                role: "local",
                reason: reason.as_deref(),
                forbid_self_approval: forbid_self_approval(),
            },
            &notes,
        )
        .await?;
    if !notes.is_empty() {
        eprintln!(
            "queued {} notification(s) of the {kind} stage; `tracelab serve` delivers them",
            notes.len()
        );
    }
    let report = store.get(&id).await?;
    let branch = report.and_then(|r| r.winner).and_then(|w| w.branch);
    match (to, branch) {
        (InvestigationState::Approved, Some(branch)) => {
            println!(
                "approved {id}; the fix is on branch {branch} (open its draft pull request with `tracelab investigations pr {id} --remote NAME --github OWNER/REPO`)"
            )
        }
        _ => println!("{} {id}", to.as_str().to_lowercase()),
    }
    Ok(())
}

#[cfg(feature = "dashboard")]
async fn serve(
    db: &Option<PathBuf>,
    args: crate::args::ServeArgs,
    token: Option<String>,
) -> anyhow::Result<ExitCode> {
    #[cfg(feature = "server")]
    let pull_requests = crate::pull_request::Target::from_flags(
        args.github.as_deref(),
        args.gitlab.as_deref(),
        Some(&args.remote),
        &args.base,
        &args.labels,
    )?
    .map(|target| crate::serve::PullRequests {
        target,
        actor_role: "reviewer",
    });
    #[cfg(not(feature = "server"))]
    let pull_requests: Option<crate::serve::PullRequests> = match (&args.github, &args.gitlab) {
        (None, None) => None,
        _ => {
            return Err(crate::built::without(
                "server",
                "tracelab serve --github/--gitlab",
            ));
        }
    };
    crate::serve::run(open_store(db).await?, args.listen, token, pull_requests).await?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(not(feature = "dashboard"))]
async fn serve(
    _db: &Option<PathBuf>,
    _args: crate::args::ServeArgs,
    _token: Option<String>,
) -> anyhow::Result<ExitCode> {
    Err(crate::built::without("dashboard", "tracelab serve"))
}

/// The webhooks and Jira comments the environment configures for stage
/// `kind` of investigation `id`, stored with the stage's own write; the
/// dispatcher of `tracelab serve` delivers them.
#[cfg(feature = "dashboard")]
async fn stage_notifications(
    store: &Arc<SqliteStore>,
    kind: &str,
    id: &str,
) -> anyhow::Result<Vec<tracelab_store::notifications::NewNotification>> {
    crate::serve::stage_notifications(store, kind, id).await
}

/// Without `tracelab serve` (the `dashboard` feature) nothing would deliver them.
#[cfg(not(feature = "dashboard"))]
async fn stage_notifications(
    _store: &Arc<SqliteStore>,
    _kind: &str,
    _id: &str,
) -> anyhow::Result<Vec<tracelab_store::notifications::NewNotification>> {
    Ok(Vec::new())
}
