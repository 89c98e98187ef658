//! `tracelab serve` in a real browser, from the list to a draft pull
//! request: headless Chromium signs in with the served token, opens the
//! investigation from the list, approves it with a reason, and clicks
//! "Open draft pull request". The verified branch goes to a real git
//! remote (smart HTTP) and the draft to a fake GitHub that checks every
//! request. GitHub answering 502 first shows a clear error, stored on the
//! investigation and offered for retry; the retry opens exactly one pull
//! request, whose link the page then shows. Screenshots of every step go
//! to `$TRACELAB_ARTIFACTS/serve-screenshots` or `<target>/serve-screenshots`.
//!
//! Without Chromium the test skips, saying why; with
//! `TRACELAB_REQUIRE_BACKENDS=1` (CI) it fails instead.

#[path = "../../crates/dashboard/tests/chromium/mod.rs"]
mod chromium;
mod pr_fixture;

use chromium::{Browser, Result, artefact_dir, chromium_or_skip};
use pr_fixture::*;
use serde_json::json;
use std::io::BufRead as _;
use std::process::{Child, Command, Stdio};
use tracelab_codehost::fakes::{self, remote_branch};
use tracelab_domain::audit::AuditAction;
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::ports::HandOffStore;
use tracelab_testkit::scenarios;

const SIGN_IN: &str = "serve-browser-token-0123456789";

/// `tracelab serve` on a free port; its base URL from the first stdout line.
fn serve(db: &std::path::Path, env: &[(&str, &str)]) -> (Child, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tracelab"));
    command
        .arg("--db")
        .arg(db)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--github",
            "acme/shop",
            "--remote",
            "origin",
        ])
        .env("TRACELAB_TOKEN", SIGN_IN)
        .env_remove("TRACELAB_FORBID_SELF_APPROVAL")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().expect("tracelab serve starts");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim();
    assert!(
        url.ends_with("/investigations") && !url.contains(SIGN_IN),
        "a given token is not printed: {url}"
    );
    (child, url.trim_end_matches("/investigations").to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_clicks_from_the_list_to_a_draft_pull_request() -> Result<()> {
    let Some(chromium) = chromium_or_skip() else {
        return Ok(());
    };
    let shots = artefact_dir("serve-screenshots");
    std::fs::create_dir_all(&shots)?;
    let s = scenarios::linear_regression(8, 5, 0.0);
    let home = tempfile::tempdir()?;
    let db = home.path().join("t.db");
    let (served, bare, _http) = remote(s.repo.path(), "acme/shop");
    let github = fakes::github(TOKEN, served.path().to_path_buf()).await;
    let (id, branch, verified) = investigate(&db, &s, "PVS-421").await;
    let (mut server, base) = serve(
        &db,
        &[
            ("TRACELAB_GITHUB_API_URL", github.api.as_str()),
            ("TRACELAB_GITHUB_TOKEN", TOKEN),
        ],
    );
    let profile = tempfile::tempdir()?;
    let mut b = Browser::launch(&chromium, profile.path(), &shots.join("chromium.log")).await?;

    // The list, after signing in with the token.
    b.goto(&format!("{base}/investigations")).await?;
    assert!(b.path().await?.starts_with("/login?next="));
    b.type_into("#token", SIGN_IN).await?;
    b.click_and_wait("form.login button[type=submit]").await?;
    assert_eq!(b.path().await?, "/investigations");
    b.screenshot(&shots.join("01-list.png")).await?;

    // To the investigation; no pull request before the approval.
    b.click_and_wait(&format!("a.id[title='{id}']")).await?;
    let page = format!("/investigations/{id}");
    assert_eq!(b.path().await?, page);
    assert!(b.text().await?.contains("WAITING_FOR_REVIEW"));
    assert_eq!(
        b.eval("document.querySelectorAll('button.open-pr').length")
            .await?,
        json!(0)
    );
    b.screenshot(&shots.join("02-investigation.png")).await?;

    // Approve with a reason.
    b.type_into("#reason", "the revert is right").await?;
    b.click_and_wait("button.approve").await?;
    assert_eq!(b.path().await?, page);
    let text = b.text().await?;
    assert!(text.contains("APPROVED"), "{text}");
    assert!(text.contains("Open draft pull request"), "{text}");
    b.screenshot(&shots.join("03-approved.png")).await?;
    assert!(github.requests().is_empty(), "approving asks no code host");

    // GitHub is failing: a clear error, stored, and a branch already pushed.
    github.with(|h| h.fail_next = Some((1, 502, json!({"message": "Server Error"}))));
    b.click_and_wait("button.open-pr").await?;
    let text = b.text().await?;
    assert!(
        text.contains("No pull request") && text.contains("502") && text.contains("try again"),
        "{text}"
    );
    assert!(!text.contains(TOKEN));
    b.screenshot(&shots.join("04-github-failed.png")).await?;
    assert!(github.prs().is_empty());
    assert_eq!(
        remote_branch(&bare, &branch).as_deref(),
        Some(verified.as_str())
    );
    b.goto(&format!("{base}{page}")).await?;
    let text = b.text().await?;
    assert!(
        text.contains("Opening the pull request failed") && text.contains("502"),
        "{text}"
    );
    assert!(
        text.contains("Retry: open the draft pull request"),
        "{text}"
    );
    b.screenshot(&shots.join("05-retry-offered.png")).await?;

    // The retry opens it; the page links it.
    b.click_and_wait("button.open-pr").await?;
    assert_eq!(b.path().await?, page);
    let prs = github.prs();
    assert_eq!(prs.len(), 1, "{prs:?}");
    assert_eq!(prs[0]["draft"], true);
    assert_eq!(prs[0]["head"]["ref"], branch.as_str());
    assert_eq!(
        b.eval("document.querySelector('p.pull-request a').href")
            .await?,
        prs[0]["html_url"]
    );
    assert_eq!(
        b.eval("document.querySelectorAll('button.open-pr').length")
            .await?,
        json!(0)
    );
    b.screenshot(&shots.join("06-pull-request.png")).await?;
    assert!(github.problems().is_empty(), "{:?}", github.problems());

    b.close().await?;
    server.kill()?;
    server.wait()?;

    let store = tracelab_store::SqliteStore::open(&db).await?;
    let h = store.hand_off(&InvestigationId(id)).await?.unwrap();
    let log: Vec<AuditAction> = h.audit.iter().map(|e| e.action).collect();
    assert_eq!(
        log,
        [
            AuditAction::Started,
            AuditAction::Approved,
            AuditAction::PullRequestFailed,
            AuditAction::PullRequestOpened,
        ]
    );
    assert_eq!(h.audit[1].actor, "local");
    assert_eq!(h.audit[1].reason.as_deref(), Some("the revert is right"));
    eprintln!("screenshots in {}", shots.display());
    Ok(())
}
