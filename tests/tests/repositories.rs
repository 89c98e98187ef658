//! Repositories by URL: the fleet fetches the code an investigation names
//! from real git servers on loopback (`git daemon`, and git's smart HTTP
//! behind basic auth), each service into its own mirror cache — no checkout
//! is shared — and the deployment's allow-list and credentials decide what
//! may be fetched and how.

use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use tracelab_e2e::{Fleet, FleetOptions, backends};
use tracelab_testkit::git_server::{GitDaemon, GitHttp};
use tracelab_testkit::scenarios;

/// The `tracelab` binary `cargo test --workspace` built next to this test.
/// A bare copy of `repo` named `name` under `base`, as a git server serves it.
fn serve_copy(repo: &Path, base: &Path, name: &str) {
    let status = Command::new("git")
        .args(["clone", "-q", "--bare"])
        .arg(repo)
        .arg(base.join(name))
        .status()
        .unwrap();
    assert!(status.success());
}

fn mirrors_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|n| n.ends_with(".git"))
                .collect()
        })
        .unwrap_or_default()
}

fn investigate(extra: &[&str], env: &[(&str, &Path)], repo: &str, test: &str) -> Value {
    tracelab_e2e::investigate_with_cli(extra, env, repo, test)
}

/// `tracelab --server URL investigate --repo git://…` gives the one-machine
/// answer; the checkout the history was made in is gone before either
/// starts, so every process fetched it, each into its own cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_repository_named_by_url_gets_the_one_machine_answer_from_the_fleet() {
    let Some(b) = backends() else { return };
    let s = scenarios::linear_regression(10, 6, 0.0);
    let culprit = s.culprit.clone().unwrap();
    let served = tempfile::tempdir().unwrap();
    serve_copy(s.repo.path(), served.path(), "calc.git");
    let test = s.test_command.clone();
    drop(s);
    let daemon = GitDaemon::start(served.path()).expect("git daemon");
    let url = daemon.url("calc.git");

    // The services' default sandbox: the hardened local runner.
    let options = FleetOptions {
        verifiers: 2,
        sandbox: "hardened",
        repositories: vec![r#"fleet.repositories.allow=["127.0.0.1:*/**"]"#.into()],
        ..FleetOptions::default()
    };
    let fleet = Fleet::start(&b, options).await;
    let server = fleet.api.clone();
    let remote = tokio::task::spawn_blocking({
        let (url, test) = (url.clone(), test.clone());
        move || investigate(&["--server", &server], &[], &url, &test)
    })
    .await
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("t.db").display().to_string();
    let cache = home.path().join("cache");
    let local = tokio::task::spawn_blocking({
        let url = url.clone();
        move || investigate(&["--db", &db], &[("XDG_CACHE_HOME", &cache)], &url, &test)
    })
    .await
    .unwrap();

    for field in ["verdict", "bad", "good", "test_command"] {
        assert_eq!(
            remote[field], local[field],
            "{field} differs\nfleet: {remote}\none machine: {local}"
        );
    }
    assert_eq!(remote["culprit"]["commit"], culprit.as_str(), "{remote}");
    assert_eq!(local["culprit"]["commit"], culprit.as_str(), "{local}");
    assert_eq!(remote["winner"]["status"], "VERIFIED", "{remote}");
    assert_eq!(local["winner"]["status"], "VERIFIED", "{local}");
    assert_eq!(
        remote["repository"],
        url.as_str(),
        "the report names the URL"
    );
    // Every command of the fleet ran in the hardened runner, which names
    // the mechanism this host allowed (local+bwrap, local+unshare or
    // local+limits) with each experiment.
    let sandboxes: Vec<&str> = remote["winner"]["experiments"]
        .as_array()
        .expect("the winner's experiments")
        .iter()
        .map(|e| e["sandbox"].as_str().unwrap_or_default())
        .collect();
    assert!(
        !sandboxes.is_empty() && sandboxes.iter().all(|s| s.starts_with("local+")),
        "{sandboxes:?}"
    );
    // The investigator and the verifier that proved the fix each fetched
    // into their own folder.
    assert_eq!(mirrors_in(&fleet.cache_dir_of("investigator")).len(), 1);
    let verifiers_with_mirrors = ["verifier-1", "verifier-2"]
        .iter()
        .filter(|v| !mirrors_in(&fleet.cache_dir_of(v)).is_empty())
        .count();
    assert!(verifiers_with_mirrors >= 1, "{}", fleet.logs());
    assert_eq!(
        mirrors_in(&home.path().join("cache").join("tracelab").join("repos")).len(),
        1,
        "the one-machine mode fetched into the user's cache"
    );
}

/// Smart HTTP behind basic auth: the token is configured on the server side
/// (a file, as a Kubernetes Secret is mounted), never in the URL; it appears
/// in no log, stored investigation or report. A URL carrying credentials, a
/// URL outside the allow-list and a path outside the local roots are refused
/// at submission; a token the git server refuses ends the investigation with
/// that reason instead of retrying forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_private_repository_is_fetched_with_server_side_credentials() {
    let Some(b) = backends() else { return };
    const TOKEN: &str = "tok-7f3a9c2e51d84b06";
    let s = scenarios::linear_regression(8, 4, 0.0);
    let culprit = s.culprit.clone().unwrap();
    let served = tempfile::tempdir().unwrap();
    serve_copy(s.repo.path(), served.path(), "ledger.git");
    let test = s.test_command.clone();
    let http = GitHttp::start(served.path(), Some(("ci-bot", TOKEN))).expect("git http server");
    let url = http.url("ledger.git");
    let prefix = url.trim_end_matches("ledger.git").to_string();
    let secrets = tempfile::tempdir().unwrap();
    let token_file = secrets.path().join("git-token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();

    let options = FleetOptions {
        repositories: vec![
            r#"fleet.repositories.allow=["127.0.0.1:*/ledger"]"#.into(),
            format!(
                r#"fleet.repositories.credentials=[{{prefix={prefix:?}, username="ci-bot", password_file={:?}}}]"#,
                token_file.display().to_string()
            ),
        ],
        ..FleetOptions::default()
    };
    let fleet = Fleet::start(&b, options).await;

    // Refused at submission, each with its reason.
    let refused = |status: u16, body: Value| {
        let fleet = &fleet;
        async move {
            let r = fleet
                .http()
                .post(format!("{}/api/investigations", fleet.api))
                .json(&body)
                .send()
                .await
                .unwrap();
            let code = r.status().as_u16();
            let text = r.text().await.unwrap();
            assert_eq!(code, status, "{body} → {text}");
            text
        }
    };
    let with_password = url.replacen("http://", &format!("http://ci-bot:{TOKEN}@"), 1);
    let answer = refused(
        400,
        json!({"repository": with_password, "test_command": test}),
    )
    .await;
    assert!(!answer.contains(TOKEN), "{answer}");
    let other = http.url("other.git");
    let answer = refused(403, json!({"repository": other, "test_command": test})).await;
    assert!(answer.contains("allow"), "{answer}");
    refused(403, json!({"repository": "/etc", "test_command": test})).await;

    // Fetched with the configured token, and proven.
    let id = fleet
        .submit(json!({"repository": url, "test_command": test, "bad": "main"}))
        .await;
    let done = fleet.wait_decided(&id, Duration::from_secs(240)).await;
    assert_eq!(
        done["state"],
        "WAITING_FOR_REVIEW",
        "{done}\n{}",
        fleet.logs()
    );
    assert_eq!(done["culprit"], culprit.as_str(), "{done}");
    assert_eq!(done["repository"], url.as_str());

    // A token the server refuses: `main` must be fetched again to know
    // where it is now, and the git server says no.
    std::fs::write(&token_file, "revoked-token\n").unwrap();
    let id = fleet
        .submit(json!({"repository": url, "test_command": test, "bad": "main"}))
        .await;
    let failed = fleet.wait_decided(&id, Duration::from_secs(120)).await;
    assert!(
        matches!(failed["state"].as_str(), Some("FAILED" | "BLOCKED")),
        "{failed}"
    );
    let reasons = failed["transitions"].to_string();
    assert!(reasons.contains("credentials"), "{reasons}");

    let everything = format!(
        "{}{}{}",
        fleet.logs(),
        serde_json::to_string(&done).unwrap(),
        reasons
    );
    assert!(!everything.contains(TOKEN), "the token leaked");
    assert!(http.requests() > 0);
}
