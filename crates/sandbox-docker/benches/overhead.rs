//! Per-run overhead of the Docker sandbox, and how re-runs scale with containers.
//!
//! ```text
//! CARGO_TARGET_DIR=... cargo bench -p tracelab-sandbox-docker --bench overhead
//! ```
//!
//! Needs the local Docker engine and `tracelab-sandbox-base:bookworm`. Prints
//! a Markdown table (recorded in docs/benchmarks/sandbox.md).

use std::path::Path;
use std::time::{Duration, Instant};
use tracelab_sandbox_docker::{
    CommandSpec, DockerConfig, DockerSandboxProvider, Sandbox, SandboxProvider, run_parallel,
};

const RUNS: usize = 20;
const RERUNS: usize = 50;

fn spec(argv: &[&str]) -> CommandSpec {
    CommandSpec {
        argv: argv.iter().map(|s| s.to_string()).collect(),
        env: Vec::new(),
        timeout: Duration::from_secs(60),
        output_limit: 64 * 1024,
    }
}

struct Row {
    what: String,
    runs: usize,
    total: Duration,
}

impl Row {
    fn print(&self) {
        let per_run = self.total.as_secs_f64() * 1000.0 / self.runs as f64;
        println!(
            "| {} | {} | {:.0} ms | {:.1} ms |",
            self.what,
            self.runs,
            self.total.as_secs_f64() * 1000.0,
            per_run
        );
    }
}

fn host_python() -> &'static str {
    // The real interpreter, not a version-manager shim, so the row measures a process start.
    if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let provider = match DockerSandboxProvider::connect(DockerConfig::default()).await {
        Ok(provider) => provider,
        Err(error) => {
            eprintln!("overhead bench skipped: {error}");
            return;
        }
    };
    let worktree = tempfile::tempdir().expect("temp worktree");
    let pass = spec(&["python3", "-c", "pass"]);
    let mut rows = Vec::new();

    // 1. A bare host process.
    let python = host_python();
    let started = Instant::now();
    for _ in 0..RUNS {
        let status = std::process::Command::new(python)
            .args(["-c", "pass"])
            .status()
            .expect("host python3");
        assert!(status.success());
    }
    rows.push(Row {
        what: format!("host process (`{python} -c pass`)"),
        runs: RUNS,
        total: started.elapsed(),
    });

    // 2. docker exec in a warm container (the sandbox's normal path).
    let sandbox = provider
        .open_docker(worktree.path(), "bench-warm")
        .await
        .expect("open");
    sandbox.exec(&pass).await.expect("warm-up");
    let started = Instant::now();
    for _ in 0..RUNS {
        assert!(sandbox.exec(&pass).await.expect("exec").passed());
    }
    rows.push(Row {
        what: "warm container: `exec` (ownership walk + docker exec; sweep only if leftovers)"
            .into(),
        runs: RUNS,
        total: started.elapsed(),
    });
    sandbox.close().await.expect("close");

    // 3. A fresh container per run: open + exec + close.
    let started = Instant::now();
    for _ in 0..RUNS {
        let fresh = provider
            .open_docker(worktree.path(), "bench-fresh")
            .await
            .expect("open");
        assert!(fresh.exec(&pass).await.expect("exec").passed());
        fresh.close().await.expect("close");
    }
    rows.push(Row {
        what: "fresh container per run (open + exec + close)".into(),
        runs: RUNS,
        total: started.elapsed(),
    });

    // 4. 50 re-runs of a 0.1 s test over 1, 2 and 4 warm containers.
    let nap = spec(&["python3", "-c", "import time; time.sleep(0.1)"]);
    for containers in [1, 2, 4] {
        let mut sandboxes: Vec<Box<dyn Sandbox>> = Vec::new();
        for _ in 0..containers {
            sandboxes.push(
                provider
                    .open(worktree.path(), "bench-reruns")
                    .await
                    .expect("open"),
            );
        }
        let started = Instant::now();
        let results = run_parallel(&sandboxes, &nap, RERUNS)
            .await
            .expect("re-runs");
        let total = started.elapsed();
        assert!(results.iter().all(|r| r.passed()));
        rows.push(Row {
            what: format!("{RERUNS} re-runs of a 0.1 s test, {containers} container(s)"),
            runs: RERUNS,
            total,
        });
        for sandbox in &sandboxes {
            sandbox.close().await.expect("close");
        }
    }

    // 5. The ownership walk that precedes every exec, on a 5,000-file tree
    //    already owned by the sandbox user (the common case between runs).
    let tree = tempfile::tempdir().expect("temp tree");
    for dir in 0..50 {
        let path = tree.path().join(format!("pkg{dir}"));
        std::fs::create_dir(&path).expect("dir");
        for file in 0..100 {
            std::fs::write(path.join(format!("m{file}.py")), "x = 1\n").expect("file");
        }
    }
    let (uid, gid) = provider.config().user;
    tracelab_sandbox_docker::ownership::hand_over(tree.path(), uid, gid).expect("first walk");
    let started = Instant::now();
    for _ in 0..RUNS {
        tracelab_sandbox_docker::ownership::hand_over(tree.path(), uid, gid).expect("walk");
    }
    rows.push(Row {
        what: "ownership: full walk, 5,000 files".into(),
        runs: RUNS,
        total: started.elapsed(),
    });
    let mut walker = tracelab_sandbox_docker::ownership::Walker::default();
    walker.hand_over(tree.path(), uid, gid).expect("first walk");
    let started = Instant::now();
    for _ in 0..RUNS {
        walker.hand_over(tree.path(), uid, gid).expect("walk");
    }
    rows.push(Row {
        what: "ownership: repeated walk (what each exec pays), 5,000 files".into(),
        runs: RUNS,
        total: started.elapsed(),
    });

    println!("| what | runs | wall time | per run |");
    println!("|---|---:|---:|---:|");
    for row in &rows {
        row.print();
    }
}
