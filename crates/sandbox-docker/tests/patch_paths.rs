//! `check_patch_paths` against real worktrees with symlinks (no Docker needed).

use std::os::unix::fs::symlink;
use tracelab_sandbox_docker::check_patch_paths;

fn edit(path: &str) -> String {
    format!("diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a\n+b\n")
}

fn create(path: &str) -> String {
    format!(
        "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+b\n"
    )
}

fn worktree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src/pkg")).unwrap();
    std::fs::create_dir_all(dir.path().join(".git/hooks")).unwrap();
    std::fs::write(dir.path().join("src/app.py"), "a\n").unwrap();
    symlink("/etc", dir.path().join("etc-link")).unwrap();
    symlink("/etc/hostname", dir.path().join("src/hostname")).unwrap();
    symlink("pkg", dir.path().join("src/inner-link")).unwrap();
    dir
}

fn refused(dir: &tempfile::TempDir, patch: &str) -> String {
    check_patch_paths(dir.path(), patch)
        .expect_err("patch should be refused")
        .message
}

#[test]
fn ordinary_edits_and_new_files_pass() {
    let dir = worktree();
    check_patch_paths(dir.path(), &edit("src/app.py")).unwrap();
    check_patch_paths(dir.path(), &create("src/pkg/new_module.py")).unwrap();
    check_patch_paths(dir.path(), &create("brand/new/dir/file.py")).unwrap();
    let both = format!(
        "{}{}",
        edit("src/app.py"),
        create("tests/test_regression.py")
    );
    check_patch_paths(dir.path(), &both).unwrap();
}

#[test]
fn symlinks_to_the_host_are_refused() {
    let dir = worktree();
    // Creating a symlink to a host path: refused by the domain rules.
    let new_link = "diff --git a/passwd b/passwd\nnew file mode 120000\n--- /dev/null\n+++ b/passwd\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n";
    assert!(refused(&dir, new_link).contains("symlink"));
    // Writing through an existing symlinked directory or onto a symlinked file.
    assert!(refused(&dir, &edit("etc-link/passwd")).contains("goes through a symlink"));
    assert!(refused(&dir, &create("etc-link/cron.d/evil")).contains("goes through a symlink"));
    assert!(refused(&dir, &edit("src/hostname")).contains("goes through a symlink"));
    // Even a symlink that stays inside the worktree is refused: paths must be plain.
    assert!(refused(&dir, &edit("src/inner-link/x.py")).contains("goes through a symlink"));
}

#[test]
fn git_directory_and_escapes_are_refused() {
    let dir = worktree();
    assert!(refused(&dir, &create(".git/hooks/post-checkout")).contains(".git"));
    assert!(refused(&dir, &edit(".git/config")).contains(".git"));
    assert!(refused(&dir, &edit("src/../../outside.py")).contains("leaves the repository"));
    assert!(refused(&dir, &edit("src/app.py/child")).contains("not a directory"));
}

#[test]
fn hard_links_are_refused() {
    let dir = worktree();
    let outside = tempfile::NamedTempFile::new_in(dir.path().parent().unwrap()).unwrap();
    if std::fs::hard_link(outside.path(), dir.path().join("shared.txt")).is_ok() {
        assert!(refused(&dir, &edit("shared.txt")).contains("hard-linked"));
    }
}
