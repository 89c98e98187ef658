//! Culprit finding against `git bisect run` on generated linear histories
//! whose test takes about a second.
//!
//!     cargo bench -p tracelab-engine --bench culprit_search [-- --sizes 100,1000 --k 4 --seconds 1.0]
//!
//! Both searches get the same facts: a known bad tip and a known good root.
//! TraceLab's search additionally needs the failure's signature, taken from
//! one run at the bad tip before timing starts (as `git bisect` is told the
//! tip is bad without running it).

use std::sync::Arc;
use std::time::{Duration, Instant};
use tracelab_domain::ids::InvestigationId;
use tracelab_engine::agents::git_history::{FlakeModel, find_culprit};
use tracelab_engine::context::Context;
use tracelab_engine::git::Git;
use tracelab_engine::pool::Pool;
use tracelab_engine::probe::TestCommand;
use tracelab_engine::workspace::Workspace;
use tracelab_engine::{EngineConfig, Silent};
use tracelab_evidence::test_run::TestRun;
use tracelab_sandbox::{LocalConfig, LocalSandboxProvider};
use tracelab_testkit::scenarios::{Scenario, linear_regression};

struct Measured {
    wall: Duration,
    test_runs: u32,
    rounds: u32,
    found: String,
}

fn git_bisect_run(s: &Scenario) -> Measured {
    s.repo.git(&["bisect", "reset"]);
    s.repo.git(&["bisect", "start", &s.head, &s.root]);
    let started = Instant::now();
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(s.repo.path())
        .args(["bisect", "run", "python3", "test_app.py"])
        .env("PATH", search_path())
        .output()
        .expect("git bisect run");
    let wall = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let found = stdout
        .lines()
        .find_map(|l| l.strip_suffix(" is the first bad commit"))
        .unwrap_or("?")
        .to_string();
    // `git bisect run` prints one "running …" line per test run.
    let test_runs = stdout.lines().filter(|l| l.starts_with("running")).count() as u32;
    s.repo.git(&["bisect", "reset"]);
    Measured {
        wall,
        test_runs,
        rounds: test_runs,
        found,
    }
}

async fn tracelab_search(s: &Scenario, k: usize) -> Measured {
    let git = Git::open(s.repo.path()).await.unwrap();
    let id = InvestigationId::generate();
    let workspace = Arc::new(Workspace::create(git, id.short()).unwrap());
    let local = LocalConfig {
        path: search_path(),
        ..Default::default()
    };
    let pool = Arc::new(Pool::new(
        workspace,
        Arc::new(LocalSandboxProvider::new(local)),
        &id.0,
        k,
    ));
    let config = EngineConfig {
        parallelism: k,
        ..Default::default()
    };
    let argv: Vec<String> = vec!["python3".into(), "test_app.py".into()];
    let ctx = Context {
        id,
        issue_id: "bench".into(),
        config,
        pool: pool.clone(),
        test: TestCommand {
            argv: argv.clone(),
            runner: tracelab_domain::runner::Runner::Unknown,
        },
        bad: s.head.clone(),
        progress: Arc::new(Silent),
        journal: None,
    };
    // The signature of the failure at the tip (untimed, see the module docs).
    let first = pool.run(&s.head, &ctx.test_spec()).await.unwrap();
    let baseline = TestRun::read(ctx.test.runner, &first.result.output).signature();
    let model = FlakeModel::new(1.0, 0.01, 100, baseline);
    let started = Instant::now();
    let finding = find_culprit(&ctx, Some(s.root.clone()), &model, Default::default())
        .await
        .unwrap();
    let wall = started.elapsed();
    pool.close().await;
    Measured {
        wall,
        test_runs: finding.summary.test_runs,
        rounds: finding.summary.rounds,
        found: finding.culprit.unwrap_or_else(|| "?".into()),
    }
}

fn override_path(path: &str) {
    // `std::env::set_var` is unsafe in edition 2024; pass PATH explicitly instead.
    PATH_OVERRIDE.set(path.to_string()).expect("set once");
}

static PATH_OVERRIDE: std::sync::OnceLock<String> = std::sync::OnceLock::new();

fn search_path() -> String {
    PATH_OVERRIDE
        .get()
        .cloned()
        .unwrap_or_else(|| std::env::var("PATH").unwrap_or_default())
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

#[tokio::main]
async fn main() {
    // Both searches start `python3` from the same PATH; prefer the system
    // interpreter over a version-manager shim whose start-up would dominate.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TRACELAB_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let path = format!(
        "/usr/bin:/bin:{}",
        std::env::var("PATH").unwrap_or_default()
    );
    override_path(&path);
    let sizes: Vec<usize> = arg("--sizes")
        .unwrap_or_else(|| "100,1000".into())
        .split(',')
        .map(|s| s.parse().unwrap())
        .collect();
    let k: usize = arg("--k").map(|s| s.parse().unwrap()).unwrap_or(4);
    let seconds: f64 = arg("--seconds").map(|s| s.parse().unwrap()).unwrap_or(1.0);
    println!(
        "test duration {seconds} s, k = {k}, {} cores\n",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
    println!(
        "| commits | culprit at | git bisect run: runs / wall | TraceLab k={k}: rounds / runs / wall | wall ratio | both right |"
    );
    println!("|---|---|---|---|---|---|");
    let mut ratios = Vec::new();
    for &n in &sizes {
        for fraction in [0.23, 0.61, 0.87] {
            let culprit_at = ((n as f64) * fraction) as usize;
            let s = linear_regression(n, culprit_at, seconds);
            let baseline = git_bisect_run(&s);
            let ours = tracelab_search(&s, k).await;
            let culprit = s.culprit.as_deref().unwrap();
            let ratio = ours.wall.as_secs_f64() / baseline.wall.as_secs_f64();
            ratios.push(ratio);
            println!(
                "| {n} | {culprit_at} | {} / {:.1} s | {} / {} / {:.1} s | {ratio:.2} | {} |",
                baseline.test_runs,
                baseline.wall.as_secs_f64(),
                ours.rounds,
                ours.test_runs,
                ours.wall.as_secs_f64(),
                if baseline.found == culprit && ours.found == culprit {
                    "yes"
                } else {
                    "NO"
                }
            );
            let _ = baseline.rounds;
        }
    }
    let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
    println!("\nmean wall ratio (TraceLab / git bisect run): {mean:.2}");
}
