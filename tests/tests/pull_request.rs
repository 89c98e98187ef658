//! The fleet's `POST /api/investigations/{id}/pull-request`, end to end:
//! the investigator and a verifier fetch a repository from a real git
//! server (smart HTTP behind Basic auth, server-side credentials); a
//! reviewer other than the starter approves; the investigator rebuilds the
//! verified branch from the stored patch, pushes it and opens the draft on
//! a fake GitHub Enterprise (`tracelab_codehost::fakes`) that checks every
//! request. Covers 404, 409, 403 (viewer; the four-eyes rule), a host that
//! answers 503 (error stored, branch already pushed, no pull request), the
//! retry (`{url, number}`), and an idempotent third call (REST, the CLI's
//! `--server` mode, gRPC) that asks nobody.

use serde_json::{Value, json};
use std::process::Command;
use std::time::{Duration, Instant};
use tracelab_codehost::fakes::{self, remote_branch};
use tracelab_e2e::{Fleet, FleetOptions, backends};
use tracelab_testkit::git;
use tracelab_testkit::git_server::GitHttp;
use tracelab_testkit::scenarios;

const GIT_PASSWORD: &str = "git-pw-e2e-7c1d93ab";
const API_TOKEN: &str = "ghp_e2eTOKEN0123456789abcdefSECRET";
const STARTER: &str = "starter-token-0123456789";
const REVIEWER: &str = "reviewer-token-0123456789";
const VIEWER: &str = "viewer-token-0123456789";

struct Api<'a> {
    fleet: &'a Fleet,
}

impl Api<'_> {
    async fn call(
        &self,
        method: &str,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut r = self
            .fleet
            .http()
            .request(method.parse().unwrap(), format!("{}{path}", self.fleet.api))
            .bearer_auth(token);
        if let Some(body) = body {
            r = r.json(&body);
        }
        let r = r.send().await.expect("the API answers");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    async fn pull_request(&self, id: &str, token: &str) -> (u16, Value) {
        self.call(
            "POST",
            &format!("/api/investigations/{id}/pull-request"),
            token,
            None,
        )
        .await
    }

    async fn wait_for_review(&self, id: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let (status, v) = self
                .call("GET", &format!("/api/investigations/{id}"), VIEWER, None)
                .await;
            let state = v["state"].as_str().unwrap_or_default();
            if status == 200 && state != "CREATED" && !state.ends_with("ING") {
                return v;
            }
            assert!(Instant::now() < deadline, "{v}\n{}", self.fleet.logs());
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_approved_investigation_becomes_one_draft_pull_request() {
    let Some(b) = backends() else { return };
    let s = scenarios::linear_regression(8, 5, 0.0);
    let served = tempfile::tempdir().unwrap();
    let bare = served.path().join("acme/shop.git");
    std::fs::create_dir_all(bare.parent().unwrap()).unwrap();
    git(
        served.path(),
        &[
            "clone",
            "-q",
            "--bare",
            s.repo.path().to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    let main = git(&bare, &["rev-parse", "refs/heads/main"]);
    let test = s.test_command.clone();
    drop(s);
    let http =
        GitHttp::start(served.path(), Some(("ci-bot", GIT_PASSWORD))).expect("git http server");
    let url = http.url("acme/shop.git");
    let authority = format!("127.0.0.1:{}", http.port());
    let secrets = tempfile::tempdir().unwrap();
    let password_file = secrets.path().join("git-password");
    std::fs::write(&password_file, format!("{GIT_PASSWORD}\n")).unwrap();
    let github = fakes::github(API_TOKEN, served.path().to_path_buf()).await;

    let options = FleetOptions {
        repositories: vec![
            r#"fleet.repositories.allow=["127.0.0.1:*/acme/shop"]"#.into(),
            format!(
                r#"fleet.repositories.credentials=[{{prefix="http://{authority}/", username="ci-bot", password_file={:?}}}]"#,
                password_file.display().to_string()
            ),
        ],
        investigator_config: Some(format!(
            "[[tokens]]\nname = \"ci\"\ntoken = \"{STARTER}\"\nrole = \"reviewer\"\n\
             [[tokens]]\nname = \"rita\"\ntoken = \"{REVIEWER}\"\nrole = \"reviewer\"\n\
             [[tokens]]\nname = \"vic\"\ntoken = \"{VIEWER}\"\nrole = \"viewer\"\n\
             [pull_requests.hosts.ghe]\nhost = \"{authority}\"\nkind = \"github\"\n\
             api_url = \"{}\"\ntoken = \"{API_TOKEN}\"\nlabels = [\"tracelab\", \"e2e\"]\n",
            github.api
        )),
        ..FleetOptions::default()
    };
    let fleet = Fleet::start(&b, options).await;
    let api = Api { fleet: &fleet };

    let (status, created) = api
        .call(
            "POST",
            "/api/investigations",
            STARTER,
            Some(json!({"repository": url, "test_command": test, "bad": "main", "jiraIssueId": "E2E-13"})),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_string();
    let (status, unknown) = api
        .pull_request("0192f0c4-0000-7000-8000-000000000000", REVIEWER)
        .await;
    assert_eq!(status, 404, "{unknown}");

    let view = api.wait_for_review(&id).await;
    assert_eq!(
        view["state"],
        "WAITING_FOR_REVIEW",
        "{view}\n{}",
        fleet.logs()
    );
    assert_eq!(view["report"]["winner"]["status"], "VERIFIED", "{view}");
    let branch = view["report"]["winner"]["branch"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(branch.starts_with("ai-debug/E2E-13-h"), "{branch}");
    assert_eq!(view["started_by"], "ci");

    let (status, early) = api.pull_request(&id, REVIEWER).await;
    assert_eq!(status, 409, "not approved yet: {early}");
    assert!(
        early["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not APPROVED"),
        "{early}"
    );

    // The four-eyes rule: the starter may not approve; another reviewer may.
    let approve_path = format!("/api/investigations/{id}/approve");
    let approve = |token| {
        api.call(
            "POST",
            &approve_path,
            token,
            Some(json!({"reason": "the revert is right"})),
        )
    };
    let (status, own) = approve(STARTER).await;
    assert_eq!(status, 403, "{own}");
    assert!(
        own["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ci started this investigation"),
        "{own}"
    );
    let (status, approved) = approve(REVIEWER).await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(approved["state"], "APPROVED");

    let (status, _) = api.pull_request(&id, VIEWER).await;
    assert_eq!(status, 403, "viewers do not open pull requests");
    assert!(github.requests().is_empty());

    // GitHub is down after the push: 503, the error stored, no pull request.
    github.with(|h| h.fail_next = Some((1, 503, json!({"message": "Service Unavailable"}))));
    let (status, failed) = api.pull_request(&id, REVIEWER).await;
    assert_eq!(status, 503, "{failed}\n{}", fleet.logs());
    let pushed =
        remote_branch(&bare, &branch).expect("the branch was pushed before the host was asked");
    assert!(github.prs().is_empty());
    let (_, view) = api
        .call("GET", &format!("/api/investigations/{id}"), VIEWER, None)
        .await;
    let stored = view["pull_request_error"].as_str().unwrap_or_default();
    assert!(
        stored.contains("unavailable") && stored.contains("503"),
        "{view}"
    );

    // The retry: the same commit rebuilt (nothing to push), the draft opened.
    let (status, opened) = api.pull_request(&id, REVIEWER).await;
    assert_eq!(status, 200, "{opened}\n{}", fleet.logs());
    let prs = github.prs();
    assert_eq!(prs.len(), 1);
    assert_eq!(
        opened,
        json!({"url": prs[0]["html_url"], "number": prs[0]["number"]})
    );
    assert_eq!(prs[0]["draft"], true);
    assert_eq!(prs[0]["head"]["ref"], branch.as_str());
    assert_eq!(
        prs[0]["base"]["ref"], "main",
        "the request's bad branch is the base"
    );
    let labels: Vec<&str> = prs[0]["labels"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["name"].as_str())
        .collect();
    assert_eq!(labels, ["tracelab", "e2e"]);
    assert_eq!(
        remote_branch(&bare, &branch).as_deref(),
        Some(pushed.as_str()),
        "the retry pushed the same commit"
    );
    assert_eq!(
        git(&bare, &["rev-parse", &format!("{pushed}^")]),
        main,
        "built on bad"
    );
    assert_eq!(
        git(&bare, &["log", "-1", "--format=%an <%ae>", &pushed]),
        "TraceLab <tracelab@localhost>"
    );
    let fixed_diff = git(&bare, &["diff", "--stat", &main, &pushed]);
    assert!(!fixed_diff.is_empty(), "the commit carries the patch");

    // A third call answers from the store and asks nobody.
    let asked = github.requests().len();
    let (status, again) = api.pull_request(&id, REVIEWER).await;
    assert_eq!((status, &again), (200, &opened));
    // `tracelab --server URL investigations pr ID` calls the same endpoint.
    let cli = tokio::task::spawn_blocking({
        let (server, id) = (fleet.api.clone(), id.clone());
        move || {
            Command::new(tracelab_e2e::tracelab_binary())
                .args(["--server", &server, "--token", REVIEWER])
                .args(["investigations", "pr", &id, "--format", "json"])
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    assert!(
        cli.status.success(),
        "{}",
        String::from_utf8_lossy(&cli.stderr)
    );
    assert_eq!(
        serde_json::from_slice::<Value>(&cli.stdout).unwrap(),
        opened
    );
    // And gRPC's OpenPullRequest.
    let mut grpc = tracelab_proto::api::v1::investigations_client::InvestigationsClient::connect(
        fleet.grpc.clone(),
    )
    .await
    .unwrap();
    let mut request =
        tonic::Request::new(tracelab_proto::api::v1::GetInvestigationRequest { id: id.clone() });
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {REVIEWER}").parse().unwrap(),
    );
    let pr = grpc.open_pull_request(request).await.unwrap().into_inner();
    assert_eq!(json!({"url": pr.url, "number": pr.number}), opened);
    assert_eq!(github.requests().len(), asked);
    assert!(github.problems().is_empty(), "{:?}", github.problems());

    // The audit log, over the API and on the dashboard page.
    let (_, view) = api
        .call("GET", &format!("/api/investigations/{id}"), VIEWER, None)
        .await;
    let log: Vec<(String, String)> = view["audit"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap().into(),
                e["actor"].as_str().unwrap().into(),
            )
        })
        .collect();
    let expected = [
        ("started", "ci"),
        ("approved", "rita"),
        ("pull_request_failed", "rita"),
        ("pull_request_opened", "rita"),
    ]
    .map(|(a, b)| (a.to_string(), b.to_string()));
    assert_eq!(log, expected, "{view}");
    assert!(view["pull_request_error"].is_null());
    assert_eq!(view["pull_request"]["number"], opened["number"]);
    let (status, page) = fleet.page(&format!("/investigations/{id}"), VIEWER).await;
    assert_eq!(status, 200);
    assert!(page.contains(opened["url"].as_str().unwrap()), "{page}");
    assert!(page.contains("pull_request_opened"));

    let everything = format!("{}{view}{page}", fleet.logs());
    assert!(!everything.contains(API_TOKEN), "the API token leaked");
    assert!(
        !everything.contains(GIT_PASSWORD),
        "the git password leaked"
    );
}
