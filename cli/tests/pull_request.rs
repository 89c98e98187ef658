//! `tracelab investigations pr` on one machine, end to end: a real
//! investigation keeps its verified branch, the reviewer approves it, and
//! the branch is pushed to a real git remote (git's smart HTTP over a bare
//! repository) while a fake GitHub (`tracelab_codehost::fakes`, checking
//! every request) opens the draft. A host answering 502 leaves a stored
//! error and a branch already pushed; the retry finishes the job without a
//! second push or a second pull request; a third call asks nobody.

mod pr_fixture;

use pr_fixture::*;
use serde_json::{Value, json};
use tracelab_codehost::fakes::{self, remote_branch};
use tracelab_domain::audit::AuditAction;
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::ports::HandOffStore;
use tracelab_testkit::scenarios;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_diagnosis_becomes_one_draft_pull_request() {
    let s = scenarios::linear_regression(8, 5, 0.0);
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("t.db");
    let (served, bare, _http) = remote(s.repo.path(), "acme/shop");
    let github = fakes::github(TOKEN, served.path().to_path_buf()).await;
    let env = [
        ("TRACELAB_GITHUB_API_URL", github.api.as_str()),
        ("TRACELAB_GITHUB_TOKEN", TOKEN),
    ];
    let (id, branch, verified) = investigate(&db, &s, "PR-7").await;
    let args = [
        "investigations",
        "pr",
        &id,
        "--remote",
        "origin",
        "--github",
        "acme/shop",
        "--format",
        "json",
    ];

    // Not approved yet: refused, nothing pushed, nobody asked.
    let out = tracelab(&db, "bob", &env, &args).await;
    assert!(!out.status.success());
    assert!(text(&out).contains("not APPROVED"), "{}", text(&out));
    assert!(github.requests().is_empty());
    assert_eq!(remote_branch(&bare, &branch), None);

    // The four-eyes rule on one machine, when switched on.
    let forbid = [("TRACELAB_FORBID_SELF_APPROVAL", "1")];
    let out = tracelab(&db, "alice", &forbid, &["investigations", "approve", &id]).await;
    assert!(!out.status.success());
    assert!(
        text(&out).contains("alice started this investigation"),
        "{}",
        text(&out)
    );
    let out = tracelab(
        &db,
        "bob",
        &forbid,
        &[
            "investigations",
            "approve",
            &id,
            "--reason",
            "the revert is right",
        ],
    )
    .await;
    assert!(out.status.success(), "{}", text(&out));

    // GitHub refuses the creation (422): a clear error, stored; nothing opened.
    github.with(|h| {
        h.fail_next_create = Some((
            422,
            json!({"message": "Validation Failed: base is protected"}),
        ))
    });
    let out = tracelab(&db, "bob", &env, &args).await;
    assert!(!out.status.success());
    assert!(text(&out).contains("base is protected"), "{}", text(&out));
    assert!(github.prs().is_empty());

    // GitHub answers 502 after the push: the error is stored, the branch stays.
    github.with(|h| h.fail_next = Some((1, 502, json!({"message": "Server Error"}))));
    let out = tracelab(&db, "bob", &env, &args).await;
    assert!(!out.status.success());
    let said = text(&out);
    assert!(said.contains("502") && said.contains("retry"), "{said}");
    assert!(!said.contains(TOKEN), "{said}");
    assert_eq!(
        remote_branch(&bare, &branch).as_deref(),
        Some(verified.as_str()),
        "pushed first"
    );
    assert!(github.prs().is_empty());

    // The retry finishes the job.
    let out = tracelab(&db, "bob", &env, &args).await;
    assert!(out.status.success(), "{}", text(&out));
    let opened: Value = serde_json::from_slice(&out.stdout).unwrap();
    let prs = github.prs();
    assert_eq!(prs.len(), 1);
    assert_eq!(opened["number"], prs[0]["number"]);
    assert_eq!(opened["url"], prs[0]["html_url"]);
    assert_eq!(prs[0]["draft"], true);
    assert_eq!(prs[0]["head"]["ref"], branch.as_str());
    assert_eq!(prs[0]["base"]["ref"], "main");
    assert!(
        prs[0]["body"].as_str().unwrap().contains(&id),
        "the diagnosis is the body"
    );
    assert_eq!(prs[0]["labels"][0]["name"], "tracelab");
    assert_eq!(
        remote_branch(&bare, &branch).as_deref(),
        Some(verified.as_str())
    );

    // Once more: the stored pull request, and no request to anyone.
    let asked = github.requests().len();
    let out = tracelab(&db, "bob", &env, &args).await;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        opened
    );
    assert_eq!(github.requests().len(), asked);
    assert!(github.problems().is_empty(), "{:?}", github.problems());

    let store = tracelab_store::SqliteStore::open(&db).await.unwrap();
    let h = store
        .hand_off(&InvestigationId(id.clone()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(h.started_by.as_deref(), Some("alice"));
    let log: Vec<(AuditAction, &str)> = h
        .audit
        .iter()
        .map(|e| (e.action, e.actor.as_str()))
        .collect();
    assert_eq!(
        log,
        [
            (AuditAction::Started, "alice"),
            (AuditAction::Approved, "bob"),
            (AuditAction::PullRequestFailed, "bob"),
            (AuditAction::PullRequestFailed, "bob"),
            (AuditAction::PullRequestOpened, "bob"),
        ]
    );
    assert!(
        h.audit[3]
            .reason
            .as_deref()
            .unwrap_or_default()
            .contains("502")
    );
    assert_eq!(
        h.pull_request.unwrap().number,
        opened["number"].as_u64().unwrap()
    );
    assert!(h.pull_request_error.is_none());
}

/// `--gitlab GROUP/PROJECT` with `TRACELAB_GITLAB_*`: a draft merge request
/// on a fake self-managed GitLab, nested groups and custom labels; the
/// GitHub variables play no part.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gitlab_gets_a_draft_merge_request() {
    let s = scenarios::linear_regression(6, 3, 0.0);
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("t.db");
    let (served, bare, _http) = remote(s.repo.path(), "platform/team/shop");
    let gitlab = fakes::gitlab(TOKEN, served.path().to_path_buf()).await;
    let (id, branch, verified) = investigate(&db, &s, "GL-3").await;
    let out = tracelab(&db, "bob", &[], &["investigations", "approve", &id]).await;
    assert!(out.status.success(), "{}", text(&out));
    let env = [
        ("TRACELAB_GITLAB_API_URL", gitlab.api.as_str()),
        ("TRACELAB_GITLAB_TOKEN", TOKEN),
        ("TRACELAB_GITHUB_TOKEN", "not-this-one"),
    ];
    let args = [
        "investigations",
        "pr",
        &id,
        "--remote",
        "origin",
        "--gitlab",
        "platform/team/shop",
        "--label",
        "needs-review",
        "--label",
        "tracelab",
    ];
    let out = tracelab(&db, "bob", &env, &args).await;
    assert!(out.status.success(), "{}", text(&out));
    let mrs = gitlab.prs();
    assert_eq!(mrs.len(), 1, "{mrs:?}");
    assert!(
        text(&out).contains(mrs[0]["web_url"].as_str().unwrap()),
        "{}",
        text(&out)
    );
    assert!(
        mrs[0]["title"]
            .as_str()
            .unwrap()
            .starts_with("Draft: TraceLab: ")
    );
    assert_eq!(mrs[0]["source_branch"], branch.as_str());
    assert_eq!(mrs[0]["labels"], json!(["needs-review", "tracelab"]));
    assert_eq!(
        remote_branch(&bare, &branch).as_deref(),
        Some(verified.as_str())
    );
    assert!(gitlab.problems().is_empty(), "{:?}", gitlab.problems());
    // Both flags, or neither, are refused before anything happens.
    let out = tracelab(
        &db,
        "bob",
        &env,
        &["investigations", "pr", &id, "--remote", "origin"],
    )
    .await;
    assert!(!out.status.success());
    assert!(
        text(&out).contains("--github OWNER/REPO or --gitlab"),
        "{}",
        text(&out)
    );
}
