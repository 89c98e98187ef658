//! A pool's first worktrees: `k` detached worktrees requested at once, as
//! the first round of a culprit search does. Before: each whole
//! `git worktree add` took its turn (registration and checkout under one
//! lock); now only the registration takes turns and the checkouts run
//! side by side (`Workspace::detached`). Both in the same process, on a
//! generated repository of `--files` files (or `--repo PATH`):
//!
//!     cargo bench -p tracelab-engine --bench worktrees [-- --files 4000 --repo PATH]

use std::path::PathBuf;
use std::time::{Duration, Instant};
use tracelab_engine::git::Git;
use tracelab_engine::workspace::Workspace;
use tracelab_testkit::FixtureRepo;

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// The median of five timings of `k` worktrees added at once, the
/// whole `git worktree add` under the admin lock each.
async fn whole_adds(git: &Git, k: usize) -> Duration {
    let mut times = Vec::new();
    for _ in 0..5 {
        let root = tempfile::tempdir().expect("a scratch directory");
        let paths: Vec<PathBuf> = (0..k).map(|i| root.path().join(format!("w{i}"))).collect();
        let started = Instant::now();
        let added =
            futures::future::join_all(paths.iter().map(|p| git.add_worktree(p, "HEAD", None)))
                .await;
        times.push(started.elapsed());
        added.into_iter().for_each(|r| r.expect("a worktree"));
        for p in &paths {
            git.remove_worktree(p).await.expect("removed");
        }
    }
    times.sort();
    times[2]
}

/// The same through [`Workspace::detached`].
async fn workspace_adds(git: &Git, k: usize) -> Duration {
    let mut times = Vec::new();
    for _ in 0..5 {
        let workspace = Workspace::create(git.clone(), "bench").expect("a workspace");
        let names: Vec<String> = (0..k).map(|i| format!("probe-{i}")).collect();
        let started = Instant::now();
        let added =
            futures::future::join_all(names.iter().map(|n| workspace.detached(n, "HEAD"))).await;
        times.push(started.elapsed());
        added.into_iter().for_each(|r| {
            r.expect("a worktree");
        });
    }
    times.sort();
    times[2]
}

#[tokio::main]
async fn main() {
    let fixture;
    let repo = match arg("--repo") {
        Some(path) => PathBuf::from(path),
        None => {
            let files: usize = arg("--files").and_then(|f| f.parse().ok()).unwrap_or(4000);
            fixture = FixtureRepo::new();
            for i in 0..files {
                let line = format!("def f_{i}(x):\n    return x + {i}\n");
                fixture.write(&format!("pkg{}/m{i}.py", i % 40), &line.repeat(30));
            }
            fixture.git(&["add", "-A"]);
            fixture.git(&["commit", "-q", "-m", "many files"]);
            // Packed, as a cloned repository is.
            fixture.git(&["gc", "-q"]);
            fixture.path().to_path_buf()
        }
    };
    let git = Git::open(&repo).await.expect("a git repository");
    let files = git
        .run(&["ls-tree", "-r", "--name-only", "HEAD"])
        .await
        .map(|o| o.lines().count())
        .unwrap_or(0);
    println!(
        "| worktrees at once | whole adds, one at a time | registrations in turn, checkouts side by side | ratio |"
    );
    println!("|---|---|---|---|");
    for k in [1usize, 2, 4] {
        let before = whole_adds(&git, k).await;
        let now = workspace_adds(&git, k).await;
        println!(
            "| {k} | {:.0} ms | {:.0} ms | {:.2} |",
            before.as_secs_f64() * 1000.0,
            now.as_secs_f64() * 1000.0,
            now.as_secs_f64() / before.as_secs_f64()
        );
    }
    println!("({files} files, median of 5)");
}
