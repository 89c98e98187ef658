//! Running tests at a revision for the code index: the coverage run behind
//! `tracelab locate --test CMD` (per-test coverage for the spectrum
//! component, and the Repro Pack it can write), and `tracelab repro`, which
//! materialises a Repro Pack — a worktree at its revision plus a script —
//! and runs it once to see whether the failure comes back.

use crate::args::{Format, ReproArgs};
use anyhow::{Context as _, bail};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;
use tracelab_coverage::{self as coverage, FailingTest, PythonCommand, ReproPack, Spectrum};
use tracelab_domain::allowlist::Allowlist;
use tracelab_domain::ports::{CommandSpec, SandboxProvider};
use tracelab_engine::git::Git;
use tracelab_engine::workspace::Workspace;
use tracelab_sandbox::{LocalConfig, LocalSandboxProvider};

/// A local sandbox provider with this process's `PATH`, so the interpreter
/// a person runs is the one the sandbox finds.
fn local_sandboxes() -> LocalSandboxProvider {
    let mut config = LocalConfig::default();
    if let Some(path) = std::env::var_os("PATH") {
        config.path = path.to_string_lossy().into_owned();
    }
    LocalSandboxProvider::new(config)
}

/// Runs the suite of `test` (or `suite`, when given) under coverage.py in a
/// local sandbox on a temporary worktree at `rev`. Returns the commit, the
/// parsed test command and the spectrum; the worktree is removed.
pub async fn spectrum_at(
    repo: &Path,
    rev: Option<&str>,
    test: &str,
    suite: Option<&str>,
    timeout: Duration,
) -> anyhow::Result<(String, PythonCommand, Spectrum)> {
    // Split like a shell would, without one, and only allowlisted programs.
    let allow = Allowlist::default();
    let test = PythonCommand::parse(&allow.parse(test)?)?;
    let suite = match suite {
        Some(s) => PythonCommand::parse(&allow.parse(s)?)?,
        None => test.whole_suite(),
    };
    let git = Git::open(repo).await?;
    let sha = git.resolve(rev.unwrap_or("HEAD")).await?;
    let workspace = Workspace::create(git, "locate")?;
    let worktree = workspace.detached("coverage", &sha).await?;
    let provider = local_sandboxes();
    let sandbox = provider.open(&worktree.path, "locate-coverage").await?;
    let collected = coverage::collect(sandbox.as_ref(), &worktree.path, &suite, timeout).await;
    sandbox.close().await?;
    Ok((sha, test, collected?))
}

/// What `tracelab repro` reports.
#[derive(Debug)]
struct Outcome {
    revision: String,
    command: Vec<String>,
    env: Vec<(String, String)>,
    /// Every failing test of the pack failed again (or, without a known
    /// runner, the command failed).
    reproduced: bool,
    failed_again: Vec<FailingTest>,
    expected: usize,
    exit_code: Option<i32>,
    blocked: Option<String>,
    duration_ms: u128,
    /// Kept directory with the worktree and `repro.sh`, when `--out` was given.
    kept: Option<PathBuf>,
    output_tail: String,
}

pub async fn run(args: ReproArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.pack)
        .with_context(|| format!("cannot read {}", args.pack.display()))?;
    let pack = ReproPack::from_json(&text)?;
    let git = Git::open(&args.repo).await?;
    let sha = git.resolve(&pack.revision).await.with_context(|| {
        format!(
            "the pack's revision {} is not in {}",
            pack.revision,
            args.repo.display()
        )
    })?;
    let (dir, kept) = match &args.out {
        Some(dir) => {
            // git runs in the repository; a relative DIR means the caller's directory.
            let dir = &std::path::absolute(dir)
                .with_context(|| format!("cannot resolve {}", dir.display()))?;
            if dir.join("worktree").exists() {
                bail!(
                    "{} already exists; choose another --out",
                    dir.join("worktree").display()
                );
            }
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            (dir.clone(), true)
        }
        None => (
            tempfile::Builder::new()
                .prefix("tracelab-repro-")
                .tempdir()?
                .keep(),
            false,
        ),
    };
    let worktree = dir.join("worktree");
    git.add_worktree(&worktree, &sha, None).await?;
    let result = run_in(&pack, &dir, &worktree, Duration::from_secs(args.timeout)).await;
    if !kept {
        git.remove_worktree(&worktree).await?;
        let _ = std::fs::remove_dir_all(&dir);
    }
    let mut outcome = result?;
    outcome.kept = kept.then(|| dir.clone());
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&outcome.json())?),
        Format::Markdown => print!("{}", render(&outcome)),
    }
    Ok(ExitCode::SUCCESS)
}

async fn run_in(
    pack: &ReproPack,
    dir: &Path,
    worktree: &Path,
    timeout: Duration,
) -> anyhow::Result<Outcome> {
    let script = dir.join("repro.sh");
    std::fs::write(&script, pack.script("worktree"))
        .with_context(|| format!("cannot write {}", script.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))?;
    }
    std::fs::write(dir.join("pack.json"), serde_json::to_string_pretty(pack)?)?;
    let provider = local_sandboxes();
    let sandbox = provider.open(worktree, "repro").await?;
    let spec = CommandSpec {
        argv: pack.command(),
        env: pack.env.clone().into_iter().collect(),
        timeout,
        output_limit: 1 << 20,
    };
    let result = sandbox.exec(&spec).await;
    sandbox.close().await?;
    let result = result?;
    let failed_again = pack.failed_again(&result.output);
    let expected = pack.failing_tests.len();
    let reproduced = result.blocked.is_none()
        && match &failed_again {
            Some(again) => expected > 0 && again.len() == expected,
            None => !result.passed(),
        };
    let tail_from = result.output.len().saturating_sub(3000);
    let tail_from = (tail_from..result.output.len())
        .find(|&i| result.output.is_char_boundary(i))
        .unwrap_or(result.output.len());
    Ok(Outcome {
        revision: pack.revision.clone(),
        command: spec.argv.clone(),
        env: spec.env.clone(),
        reproduced,
        failed_again: failed_again.unwrap_or_default(),
        expected,
        exit_code: result.exit_code,
        blocked: result.blocked.clone(),
        duration_ms: result.duration.as_millis(),
        kept: None,
        output_tail: result.output[tail_from..].to_string(),
    })
}

impl Outcome {
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "revision": self.revision,
            "command": self.command,
            "env": self.env.iter().map(|(k, v)| (k.clone(), serde_json::Value::from(v.clone()))).collect::<serde_json::Map<_, _>>(),
            "reproduced": self.reproduced,
            "failed_again": self.failed_again,
            "expected": self.expected,
            "exit_code": self.exit_code,
            "blocked": self.blocked,
            "duration_ms": self.duration_ms as u64,
            "kept": self.kept,
            "output_tail": self.output_tail,
        })
    }
}

fn render(o: &Outcome) -> String {
    let mut s = format!(
        "## Reproduction of {}\n\n{}: {} of {} failing test(s) failed again (exit code {}, {} ms)\n\ncommand: `{}`\n",
        o.revision.get(..12).unwrap_or(&o.revision),
        if o.reproduced {
            "REPRODUCED"
        } else {
            "NOT REPRODUCED"
        },
        o.failed_again.len(),
        o.expected,
        o.exit_code.map_or("none".into(), |c| c.to_string()),
        o.duration_ms,
        shell_words::join(&o.command)
    );
    if let Some(why) = &o.blocked {
        s.push_str(&format!("blocked: {why}\n"));
    }
    for t in &o.failed_again {
        s.push_str(&format!("- failed again: `{}`\n", t.id));
    }
    if let Some(dir) = &o.kept {
        s.push_str(&format!(
            "\nkept: {} (run `{}` again)\n",
            dir.display(),
            dir.join("repro.sh").display()
        ));
    }
    s.push_str(&format!("\n```\n{}\n```\n", o.output_tail.trim_end()));
    s
}
