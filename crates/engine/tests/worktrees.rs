//! Worktree administration from several workspaces of one repository at
//! once. git's own `worktree add` / `list` / `remove` / `prune` race each
//! other (a half-written `.git/worktrees/<name>/` makes the other command die
//! with "failed to read …/commondir", and `prune` may delete it), so the
//! engine serialises them with `WorktreeAdminLock`; this test fails without it.

use std::sync::Arc;
use tracelab_engine::git::Git;
use tracelab_testkit::FixtureRepo;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_worktree_administration_never_fails() {
    let mut repo = FixtureRepo::new();
    repo.commit("first", &[("a.txt", "a\n")]);
    let git = Arc::new(Git::open(repo.path()).await.unwrap());
    let root = tempfile::tempdir().unwrap();
    let tasks: Vec<_> = (0..4)
        .map(|w| {
            let (git, root) = (git.clone(), root.path().to_path_buf());
            tokio::spawn(async move {
                for i in 0..15 {
                    let detached = root.join(format!("d{w}-{i}"));
                    let branched = root.join(format!("b{w}-{i}"));
                    let branch = format!("ai-debug/w{w}-{i}");
                    git.add_worktree(&detached, "HEAD", None).await?;
                    git.add_worktree(&branched, "HEAD", Some(&branch)).await?;
                    git.remove_worktree(&detached).await?;
                    git.remove_worktree(&branched).await?;
                    git.delete_branch(&branch).await?;
                }
                Ok::<_, tracelab_domain::Error>(())
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().expect("worktree administration failed");
    }
    let left = std::process::Command::new("git")
        .arg("-C")
        .arg(repo.path())
        .args(["worktree", "list", "--porcelain"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&left.stdout);
    assert_eq!(
        listed.matches("worktree ").count(),
        1,
        "only the main worktree: {listed}"
    );
}
