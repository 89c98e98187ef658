//! What the pull request tests share: the `tracelab` binary run as a
//! given user, a real git remote served over smart HTTP, and an investigated
//! regression whose verified branch is kept.

#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tracelab_testkit::git;
use tracelab_testkit::git_server::GitHttp;
use tracelab_testkit::scenarios;

pub const TOKEN: &str = "ghp_cliTOKEN0123456789abcdefSECRET";

/// Runs `tracelab --db DB args…` as `user`, with `env`, off the async runtime.
pub async fn tracelab(db: &Path, user: &str, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tracelab"));
    command
        .arg("--db")
        .arg(db)
        .args(args)
        .env("USER", user)
        .env_remove("TRACELAB_FORBID_SELF_APPROVAL")
        .env_remove("TRACELAB_GITHUB_TOKEN")
        .env_remove("TRACELAB_GITHUB_API_URL");
    for (k, v) in env {
        command.env(k, v);
    }
    tokio::task::spawn_blocking(move || command.output().expect("tracelab runs"))
        .await
        .unwrap()
}

pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A bare copy of `repo` at `served/<project>.git`, served over smart
/// HTTP with pushes allowed, as `repo`'s remote `origin`.
pub fn remote(repo: &Path, project: &str) -> (tempfile::TempDir, PathBuf, GitHttp) {
    let served = tempfile::tempdir().unwrap();
    let bare = served.path().join(format!("{project}.git"));
    std::fs::create_dir_all(bare.parent().unwrap()).unwrap();
    git(
        served.path(),
        &[
            "clone",
            "-q",
            "--bare",
            repo.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    git(&bare, &["config", "http.receivepack", "true"]);
    let http = GitHttp::start(served.path(), None).expect("git http server");
    git(
        repo,
        &[
            "remote",
            "add",
            "origin",
            &http.url(&format!("{project}.git")),
        ],
    );
    (served, bare, http)
}

/// Investigates `s` as alice with issue id `issue`: the id, the verified
/// branch and its commit.
pub async fn investigate(
    db: &Path,
    s: &scenarios::Scenario,
    issue: &str,
) -> (String, String, String) {
    let repo = s.repo.path();
    let out = tracelab(
        db,
        "alice",
        &[],
        &[
            "investigate",
            "--repo",
            repo.to_str().unwrap(),
            "--test",
            &s.test_command,
            "--issue-id",
            issue,
            "--format",
            "json",
            "--parallel",
            "2",
        ],
    )
    .await;
    assert!(out.status.success(), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["winner"]["status"], "VERIFIED", "{report}");
    let id = report["id"].as_str().unwrap().to_string();
    let branch = report["winner"]["branch"].as_str().unwrap().to_string();
    assert!(
        branch.starts_with(&format!("ai-debug/{issue}-h")),
        "{branch}"
    );
    let verified = git(repo, &["rev-parse", &format!("refs/heads/{branch}")]);
    (id, branch, verified)
}
