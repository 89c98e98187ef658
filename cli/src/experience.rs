//! `tracelab experience`: mine problem-level repair records from a
//! failing → passing commit range of a local repository, and read them.
//!
//! Mining re-runs the given test commands, in order like the steps of one
//! CI job, at every first-parent commit of the range, in one worktree and
//! the local sandbox; a step after a failed step is not run (unreached, as
//! in CI). The observations and diffs go to `tracelab_experience`, whose
//! records are kept in the one-machine store (`ExperienceStore`), where
//! `tracelab investigate` reads them for the experience agent. A record file
//! of an earlier version (`experience.jsonl` beside the store) is imported
//! into the store the first time the store is opened here, then renamed.

use crate::args::Format;
use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;
use tracelab_domain::allowlist::Allowlist;
use tracelab_domain::ports::{CommandSpec, SandboxProvider};
use tracelab_engine::git::Git;
use tracelab_engine::workspace::Workspace;
use tracelab_experience::evidence::failures_from_output;
use tracelab_experience::records::ExperienceRecord;
use tracelab_experience::{
    CiRun, Failure, History, JobRun, PathRelations, Reconstruction, Revision, StepRun, StepStatus,
};
use tracelab_sandbox::{LocalConfig, LocalSandboxProvider};
use tracelab_store::{ExperienceStore, SqliteStore};

#[path = "experience_reports.rs"]
mod reports;

#[derive(Debug, Subcommand)]
pub enum ExperienceCommand {
    /// Re-run test commands at each commit of a failing → passing range and
    /// record which changes repaired which problem.
    Mine(MineArgs),
    /// The stored experience records (`*` marks recurring problems).
    List {
        /// Only records of this repository (as shown in the list).
        #[arg(long)]
        repo: Option<String>,
        #[arg(long, value_enum, default_value_t = Format::Markdown)]
        format: Format,
    },
    /// One record at its three levels (an id or a unique prefix).
    Show {
        id: String,
        #[arg(long, value_enum, default_value_t = Format::Markdown)]
        format: Format,
    },
}

#[derive(Debug, Args)]
pub struct MineArgs {
    /// A local git repository (any directory inside a checkout).
    #[arg(long)]
    pub repo: PathBuf,
    /// A check to run, without a shell (repeatable; run in order like the
    /// steps of one CI job).
    #[arg(
        long = "test",
        value_name = "CMD",
        required_unless_present = "ci_reports",
        conflicts_with = "ci_reports"
    )]
    pub tests: Vec<String>,
    /// Read what CI observed at each commit from the reports in DIR
    /// (`tracelab report --dry-run` JSON, one per file) instead of
    /// re-running --test commands.
    #[arg(long, value_name = "DIR")]
    pub ci_reports: Option<PathBuf>,
    /// The workflow file that ran the reporting jobs, repository-relative
    /// (`.github/workflows/ci.yml`, `.gitlab-ci.yml`), read at each commit:
    /// it places each failure on its job and step.
    #[arg(long, value_name = "PATH", requires = "ci_reports")]
    pub workflow: Option<String>,
    /// The failing revision.
    #[arg(long, value_name = "REV")]
    pub from: String,
    /// The passing revision (default HEAD).
    #[arg(long, value_name = "REV", default_value = "HEAD")]
    pub to: String,
    /// At most this many commits after --from are re-run.
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub max_commits: usize,
    /// Wall-clock limit per command, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    pub timeout: u64,
    /// Extra programs the commands may use.
    #[arg(long = "allow", value_name = "PROGRAM")]
    pub allow: Vec<String>,
    /// Name of the job the commands form (part of every problem's signature).
    #[arg(long, default_value = "local")]
    pub job: String,
    /// `json` prints the whole reconstruction (both views, the
    /// reconciliation, notes and records).
    #[arg(long, value_enum, default_value_t = Format::Markdown)]
    pub format: Format,
    /// Reconstruct and print, but do not store the records.
    #[arg(long)]
    pub dry_run: bool,
}

/// Bytes of a step's output kept (head and tail).
const OUTPUT_LIMIT: usize = 256 * 1024;

pub async fn run(
    db: &Option<PathBuf>,
    quiet: bool,
    command: ExperienceCommand,
) -> anyhow::Result<ExitCode> {
    let (store, path) = open(db, quiet).await?;
    match command {
        ExperienceCommand::Mine(args) => mine(&store, &path, quiet, args).await,
        ExperienceCommand::List { repo, format } => {
            list(&store, &path, repo.as_deref(), format).await
        }
        ExperienceCommand::Show { id, format } => show(&store, &path, &id, format).await,
    }
}

/// The one-machine store, with an earlier version's record file imported.
async fn open(db: &Option<PathBuf>, quiet: bool) -> anyhow::Result<(SqliteStore, PathBuf)> {
    let path = db.clone().unwrap_or_else(crate::db::default_db);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let store = SqliteStore::open(&path).await?;
    let file = records_file(&path);
    let imported = import(&store, &file).await?;
    if imported > 0 && !quiet {
        eprintln!(
            "{imported} record(s) imported from {} into {}",
            file.display(),
            path.display()
        );
    }
    Ok((store, path))
}

/// Past repairs for `tracelab investigate`'s experience agent: every record
/// in the one-machine store (the agent applies the scope rule), `None` when
/// there are none.
pub(crate) async fn for_investigation(
    db: &Option<PathBuf>,
) -> anyhow::Result<Option<std::sync::Arc<tracelab_engine::agents::experience::Experience>>> {
    let (store, _) = open(db, true).await?;
    let records = store.experience(None).await?;
    Ok((!records.is_empty()).then(|| {
        std::sync::Arc::new(tracelab_engine::agents::experience::Experience {
            records,
            workflow: None,
            repository: None,
        })
    }))
}

/// `experience.jsonl` beside the store: where records were kept before the
/// store had a table for them.
fn records_file(db: &Path) -> PathBuf {
    db.parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
        .join("experience.jsonl")
}

/// Moves the records of `file` into the store and renames it
/// `experience.jsonl.imported`; a file that does not parse is left where it
/// is, with the error, and nothing is lost.
async fn import(store: &SqliteStore, file: &Path) -> anyhow::Result<usize> {
    let records = read_jsonl(file)?;
    if records.is_empty() {
        return Ok(0);
    }
    let new = store.put_experience(&records).await?;
    let done = file.with_extension("jsonl.imported");
    std::fs::rename(file, &done)
        .with_context(|| format!("cannot rename {} to {}", file.display(), done.display()))?;
    Ok(new)
}

async fn mine(
    store: &SqliteStore,
    db: &Path,
    quiet: bool,
    args: MineArgs,
) -> anyhow::Result<ExitCode> {
    let mut allow = Allowlist::default();
    allow.programs.extend(args.allow.iter().cloned());
    let steps: Vec<(String, Vec<String>)> = args
        .tests
        .iter()
        .map(|t| Ok((t.clone(), allow.parse(t)?)))
        .collect::<anyhow::Result<_>>()?;
    let git = Git::open(&args.repo).await?;
    let from = git.resolve(&args.from).await?;
    let to = git.resolve(&args.to).await?;
    if !git.is_ancestor(&from, &to).await? {
        bail!(
            "--from {} is not an ancestor of --to {}",
            args.from,
            args.to
        );
    }
    let chain = git.range(&to, &from, true).await?;
    if chain.is_empty() {
        bail!("--from and --to are the same commit: there is no history to learn from");
    }
    // The reconstruction refuses a non-linear history anyway; say so
    // before re-running anything.
    if chain[0].parents.first() != Some(&from) {
        bail!(
            "--from {} is not on the first-parent line of --to {}: not a linear history",
            args.from,
            args.to
        );
    }
    if chain.len() > args.max_commits {
        bail!(
            "{} commits between --from and --to, more than --max-commits {}; narrow the range or raise the bound",
            chain.len(),
            args.max_commits
        );
    }
    let mut ids = vec![(from.clone(), None)];
    ids.extend(
        chain
            .iter()
            .map(|c| (c.sha.clone(), c.parents.first().cloned())),
    );
    if let Some(dir) = &args.ci_reports {
        let (history, notes) =
            reports::history(&git, &from, &to, &ids, dir, args.workflow.as_deref()).await?;
        return finish(store, db, quiet, &args, &history, notes).await;
    }
    let workspace = Workspace::create(git.clone(), "experience")?;
    let worktree = workspace.detached("mine", &from).await?;
    let provider = local_sandboxes(&args.allow);
    let timeout = Duration::from_secs(args.timeout);
    let mut revisions = Vec::new();
    let mut previous: Option<String> = None;
    for (i, (sha, parent)) in ids.iter().enumerate() {
        worktree.checkout(sha).await?;
        let sandbox = provider.open(&worktree.path, "experience-mine").await?;
        let ci = observe(sandbox.as_ref(), &worktree.path, &args.job, &steps, timeout).await;
        sandbox.close().await?;
        let ci = ci?;
        if !quiet {
            eprintln!(
                "[{}/{}] {} {}",
                i + 1,
                ids.len(),
                &sha[..sha.len().min(12)],
                summary(&ci)
            );
        }
        let diff = match &previous {
            Some(prev) => diff(&git, prev, sha).await?,
            None => String::new(),
        };
        revisions.push(Revision {
            id: sha.clone(),
            parent: parent.clone(),
            summary: git.commit_info(sha).await?.summary,
            diff,
            ci: Some(ci),
        });
        previous = Some(sha.clone());
    }
    let history = History {
        repository: git.path().display().to_string(),
        workflow: format!("{}: {}", args.job, args.tests.join(" ; ")),
        net_diff: diff(&git, &from, &to).await?,
        revisions,
    };
    finish(store, db, quiet, &args, &history, Vec::new()).await
}

/// Reconstructs `history` (with `notes` on its input), stores the records
/// unless this is a dry run, and prints the result.
async fn finish(
    store: &SqliteStore,
    db: &Path,
    quiet: bool,
    args: &MineArgs,
    history: &History,
    notes: Vec<tracelab_experience::reconstruct::Note>,
) -> anyhow::Result<ExitCode> {
    let mut reconstruction = tracelab_experience::reconstruct(history, &PathRelations);
    reconstruction.notes.splice(0..0, notes);
    let stored = if args.dry_run {
        0
    } else {
        store.put_experience(&reconstruction.records).await?
    };
    let mut out = std::io::stdout().lock();
    match args.format {
        Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&reconstruction)?)?,
        Format::Markdown => out.write_all(mined_markdown(&reconstruction).as_bytes())?,
    }
    if !quiet && !args.dry_run {
        eprintln!(
            "{stored} new record(s) stored in {} ({} in this history)",
            db.display(),
            reconstruction.records.len()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn local_sandboxes(allow: &[String]) -> LocalSandboxProvider {
    let mut config = LocalConfig::default();
    config.allowlist.programs.extend(allow.iter().cloned());
    if let Some(path) = std::env::var_os("PATH") {
        config.path = path.to_string_lossy().into_owned();
    }
    LocalSandboxProvider::new(config)
}

async fn diff(git: &Git, a: &str, b: &str) -> anyhow::Result<String> {
    Ok(git
        .run(&["diff", "--no-color", "--no-ext-diff", "--no-renames", a, b])
        .await?)
}

/// Runs the steps in order; after a failed step the rest are unreached.
async fn observe(
    sandbox: &dyn tracelab_domain::ports::Sandbox,
    root: &Path,
    job: &str,
    steps: &[(String, Vec<String>)],
    timeout: Duration,
) -> anyhow::Result<CiRun> {
    let mut runs = Vec::new();
    let mut blocked = false;
    for (command, argv) in steps {
        if blocked {
            runs.push(StepRun {
                name: command.clone(),
                command: command.clone(),
                status: StepStatus::Unreached,
                failures: Vec::new(),
                exhaustive: false,
            });
            continue;
        }
        let spec = CommandSpec {
            argv: argv.clone(),
            env: Vec::new(),
            timeout,
            output_limit: OUTPUT_LIMIT,
        };
        let result = sandbox.exec(&spec).await?;
        let (status, failures, exhaustive) = if result.passed() {
            (StepStatus::Passed, Vec::new(), false)
        } else if let Some(reason) = &result.blocked {
            let failure = Failure {
                message: reason.clone(),
                error_types: ["Blocked".to_string()].into(),
                ..Default::default()
            };
            (StepStatus::Failed, vec![failure], false)
        } else {
            let (failures, exhaustive) =
                failures_from_output(argv, &result.output, &root.to_string_lossy());
            (StepStatus::Failed, failures, exhaustive)
        };
        blocked = status == StepStatus::Failed;
        runs.push(StepRun {
            name: command.clone(),
            command: command.clone(),
            status,
            failures,
            exhaustive,
        });
    }
    Ok(CiRun {
        jobs: vec![JobRun {
            name: job.to_string(),
            steps: runs,
            needs: Vec::new(),
        }],
    })
}

fn summary(ci: &CiRun) -> String {
    ci.jobs
        .iter()
        .flat_map(|j| j.steps.iter())
        .map(|s| match s.status {
            StepStatus::Passed => "passed".to_string(),
            StepStatus::Unreached => "unreached".to_string(),
            StepStatus::Failed => format!("failed ({})", s.failures.len()),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The records of an earlier version's record file (none when it is absent).
fn read_jsonl(file: &Path) -> anyhow::Result<Vec<ExperienceRecord>> {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(anyhow::anyhow!("cannot read {}: {e}", file.display())),
    };
    let mut out = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        out.push(
            serde_json::from_str(line)
                .with_context(|| format!("{} line {}", file.display(), n + 1))?,
        );
    }
    Ok(out)
}

async fn list(
    store: &SqliteStore,
    db: &Path,
    repo: Option<&str>,
    format: Format,
) -> anyhow::Result<ExitCode> {
    let all = store.experience(None).await?;
    let shown: Vec<&ExperienceRecord> = all
        .iter()
        .filter(|r| repo.is_none_or(|want| r.repository == want))
        .collect();
    let mut out = std::io::stdout().lock();
    match format {
        Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&shown)?)?,
        Format::Markdown => {
            if shown.is_empty() {
                writeln!(out, "No experience records in {}.", db.display())?;
                return Ok(ExitCode::SUCCESS);
            }
            writeln!(out, "| id | problem | type | files | repository |")?;
            writeln!(out, "|---|---|---|---|---|")?;
            for r in shown {
                writeln!(
                    out,
                    "| {}{} | `{}` | {:?} | {} | {} |",
                    r.id,
                    if r.recurring { " *" } else { "" },
                    r.problem,
                    r.concrete.failure_type,
                    r.concrete.files.join(", "),
                    r.repository
                )?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn show(
    store: &SqliteStore,
    db: &Path,
    id: &str,
    format: Format,
) -> anyhow::Result<ExitCode> {
    let all = store.experience(None).await?;
    let matching: Vec<&ExperienceRecord> = all.iter().filter(|r| r.id.starts_with(id)).collect();
    let record = match matching.as_slice() {
        [one] => *one,
        [] => bail!("no experience record {id} in {}", db.display()),
        _ => bail!("{id} names {} records; give more of the id", matching.len()),
    };
    let mut out = std::io::stdout().lock();
    match format {
        Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(record)?)?,
        Format::Markdown => out.write_all(record_markdown(record).as_bytes())?,
    }
    Ok(ExitCode::SUCCESS)
}

fn mined_markdown(r: &Reconstruction) -> String {
    let mut s = format!(
        "# Experience from {} revisions of {}\n\n",
        r.revisions.len(),
        r.repository
    );
    if !r.organised {
        s.push_str("The history could not be organised; nothing was attributed.\n\n");
    }
    for p in &r.problems {
        let a = r
            .attributions
            .iter()
            .find(|a| r.problems[a.problem].key == p.key);
        let gone = p
            .disappeared_at
            .map(|i| {
                format!(
                    "gone at {}",
                    &r.revisions[i][..r.revisions[i].len().min(12)]
                )
            })
            .unwrap_or_else(|| "not repaired".into());
        s.push_str(&format!("- `{}`: {gone}", p.key));
        if let Some(a) = a {
            let files: Vec<String> = a
                .kept
                .iter()
                .map(|&h| format!("{}:{}", r.hunks[h].path, r.hunks[h].new_start))
                .collect();
            if let Some(agreement) = a.agreement {
                s.push_str(&format!(", views {agreement:?}"));
            }
            if !files.is_empty() {
                s.push_str(&format!(", repaired by {}", files.join(", ")));
            }
        }
        s.push('\n');
    }
    for p in &r.prerequisites {
        s.push_str(&format!(
            "- `{}` needs `{}` first ({:?})\n",
            r.problems[p.after].key, r.problems[p.before].key, p.relation
        ));
    }
    if !r.notes.is_empty() {
        s.push_str("\nNotes:\n");
        for n in &r.notes {
            s.push_str(&format!("- {}\n", n.message));
        }
    }
    s.push_str(&format!("\n{} record(s):\n", r.records.len()));
    for rec in &r.records {
        s.push_str(&format!("- {} `{}`\n", rec.id, rec.problem));
    }
    s
}

fn record_markdown(r: &ExperienceRecord) -> String {
    let c = &r.concrete;
    let mut s = format!(
        "# Experience {}{}\n\nRepository: {}\nWorkflow: {}\nHistory: {}\n\n## L1 concrete repair\n\nProblem: `{}` ({:?})\nFiles: {}\nSymbols: {}\nValidate with: `{}`\nFixed at: {}\nSupporting commits: {}\n",
        r.id,
        if r.recurring { " (recurring)" } else { "" },
        r.repository,
        r.workflow,
        r.history,
        c.signature,
        c.failure_type,
        c.files.join(", "),
        c.symbols.join(", "),
        c.validation,
        c.fixed_at,
        c.supporting_commits.join(", ")
    );
    if !c.needs.is_empty() {
        s.push_str(&format!("Needs first: {}\n", c.needs.join(", ")));
    }
    s.push_str(&format!("\n```diff\n{}```\n\n## L2 strategy\n\n", c.patch));
    for cond in &r.strategy.conditions {
        s.push_str(&format!("- {cond}\n"));
    }
    for (i, a) in r.pattern.approach.iter().enumerate() {
        s.push_str(&format!("{}. {a}\n", i + 1));
    }
    if r.strategy.failed_attempts > 0 {
        s.push_str(&format!(
            "({} reverted attempt(s) before this repair)\n",
            r.strategy.failed_attempts
        ));
    }
    s.push_str(&format!(
        "\n## L3 pattern\n\nMechanism: {}\nSignals:\n",
        r.pattern.mechanism
    ));
    for sig in &r.pattern.signals {
        s.push_str(&format!("- {sig}\n"));
    }
    s
}
