//! A 100,000-commit repository served by `git daemon`: one clone, one
//! incremental fetch of a single new commit, one cache hit. Timings are
//! printed (`--nocapture`), not asserted: they depend on the machine.

mod common;

use common::*;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;
use tracelab_testkit::git_server::GitDaemon;

const COMMITS: usize = 100_000;

/// Appends `count` commits to `refs/heads/main` of the bare repository at
/// `repo` with `git fast-import`, each changing one of 100 files; returns
/// the new tip.
fn fast_import(repo: &Path, first: usize, count: usize) -> String {
    let mut stream = Vec::with_capacity(count * 160);
    for i in first..first + count {
        let message = format!("commit {i}\n");
        let content = format!("line {i}\n");
        write!(
            stream,
            "commit refs/heads/main\ncommitter Fixture Author <author@example.com> {} +0000\ndata {}\n{message}",
            1_700_000_000 + i,
            message.len()
        )
        .unwrap();
        if i == first && first > 0 {
            stream.extend_from_slice(b"from refs/heads/main^0\n");
        }
        write!(
            stream,
            "M 100644 inline f{}.txt\ndata {}\n{content}\n",
            i % 100,
            content.len()
        )
        .unwrap();
    }
    let mut child = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["fast-import", "--quiet"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&stream).unwrap();
    assert!(child.wait().unwrap().success());
    git(repo, &["rev-parse", "refs/heads/main"])
}

#[tokio::test]
async fn a_hundred_thousand_commits_clone_then_fetch_one_more() {
    let served = tempfile::tempdir().unwrap();
    let bare = served.path().join("big.git");
    git(
        served.path(),
        &["init", "-q", "--bare", "-b", "main", "big.git"],
    );
    let started = Instant::now();
    let tip = fast_import(&bare, 0, COMMITS);
    eprintln!(
        "generated {COMMITS} commits with fast-import: {:?}",
        started.elapsed()
    );
    let daemon = GitDaemon::start(served.path()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cache = cache(dir.path());
    let repo = url(&daemon.url("big.git"));

    let started = Instant::now();
    let mirror = cache.ensure(&repo, &["main", "main~99999"]).await.unwrap();
    let clone = started.elapsed();
    assert_eq!(mirror.resolved[0], tip);
    assert_eq!(
        git(
            &mirror.path,
            &["rev-list", "--count", "refs/remotes/origin/main"]
        ),
        COMMITS.to_string()
    );
    let root = git(&bare, &["rev-list", "--max-parents=0", "main"]);
    assert_eq!(mirror.resolved[1], root);
    drop(mirror);

    let new_tip = fast_import(&bare, COMMITS, 1);
    let started = Instant::now();
    let mirror = cache.ensure(&repo, &["main"]).await.unwrap();
    let incremental = started.elapsed();
    assert_eq!(mirror.resolved, owned(&[&new_tip]));
    assert!(mirror.fetched);

    let started = Instant::now();
    let hit = cache.ensure(&repo, &[&new_tip, &tip, &root]).await.unwrap();
    let cache_hit = started.elapsed();
    assert!(!hit.fetched);
    eprintln!(
        "{COMMITS} commits over git://: clone {clone:?}, incremental fetch of 1 commit {incremental:?}, cache hit {cache_hit:?}, mirror {} MB",
        cache.used_bytes() / 1_000_000
    );
}
