//! GitHub: the whole flow against a fake GitHub Enterprise API and a real
//! git remote.

use crate::fixtures::*;
use serde_json::json;
use std::time::Duration;
use tracelab_codehost::fakes::{self, Fake, github_pr};
use tracelab_codehost::{
    CodeHost, ErrorKind, GitHub, PullRequest, Token, TokenSource, open_draft_pull_request,
};

const SHOP: &str = "acme/shop.git";
const CREATE: &str = "POST /repos/acme/shop/pulls";
const LIST: &str = "GET /repos/acme/shop/pulls";

fn host(fake: &Fake, token: &str) -> CodeHost {
    CodeHost::GitHub(
        GitHub::new(
            &fake.api,
            TokenSource::Value(Token::new(token).unwrap()),
            Duration::from_secs(10),
        )
        .unwrap(),
    )
}

async fn setup() -> (Remote, Fake) {
    let remote = Remote::new();
    let fake = fakes::github(API_TOKEN, remote.served.path().to_path_buf()).await;
    (remote, fake)
}

fn label_names(pr: &serde_json::Value) -> Vec<String> {
    pr["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn opens_a_draft_with_labels_after_pushing_the_branch() {
    let (remote, fake) = setup().await;
    assert_eq!(remote.branch_on_server(SHOP, BRANCH), None);
    let pr = open_draft_pull_request(&remote.pusher(), &host(&fake, API_TOKEN), &remote.request())
        .await
        .unwrap();
    assert_eq!(
        pr,
        PullRequest {
            url: "https://ghe.example.com/acme/shop/pull/41".into(),
            number: 41
        }
    );
    assert_eq!(
        remote.branch_on_server(SHOP, BRANCH).as_deref(),
        Some(remote.commit.as_str()),
        "the verified commit is on the server"
    );
    assert_eq!(fake.problems(), Vec::<String>::new());
    assert_eq!(
        fake.requests(),
        [LIST, CREATE, "POST /repos/acme/shop/issues/41/labels"]
    );
    let prs = fake.prs();
    assert_eq!(prs.len(), 1);
    assert_eq!(prs[0]["draft"], json!(true));
    assert_eq!(prs[0]["head"]["ref"], BRANCH);
    assert_eq!(prs[0]["base"]["ref"], "main");
    assert_eq!(prs[0]["title"], "Fix add() returning one too many");
    assert_eq!(label_names(&prs[0]), ["tracelab", "needs-review"]);
}

#[tokio::test]
async fn a_second_call_returns_the_same_pull_request_and_creates_nothing() {
    let (remote, fake) = setup().await;
    let (pusher, host, request) = (remote.pusher(), host(&fake, API_TOKEN), remote.request());
    let first = open_draft_pull_request(&pusher, &host, &request)
        .await
        .unwrap();
    let git_requests = remote.server.requests();
    let api_requests = fake.requests().len();
    let second = open_draft_pull_request(&pusher, &host, &request)
        .await
        .unwrap();
    assert_eq!(first, second);
    assert_eq!(fake.count(CREATE), 1);
    assert_eq!(fake.prs().len(), 1);
    // The second call only looked: one list, no create, no labels.
    assert_eq!(fake.requests()[api_requests..], [LIST]);
    // …and the push found the branch in place (a ref listing, no pack sent).
    assert!(remote.server.requests() > git_requests);
    assert_eq!(
        remote.branch_on_server(SHOP, BRANCH).as_deref(),
        Some(remote.commit.as_str())
    );
    assert_eq!(fake.problems(), Vec::<String>::new());
}

#[tokio::test]
async fn a_racing_create_that_already_exists_returns_the_existing_pull_request() {
    let (remote, fake) = setup().await;
    // Another attempt created #7 a moment ago; this attempt's first
    // lookup does not see it yet, so it tries to create and gets 422.
    let mut existing = github_pr(
        "acme",
        "shop",
        7,
        &json!({"draft": true, "title": "t", "body": "b", "head": BRANCH, "base": "main"}),
    );
    existing["labels"] = json!([{"name": "tracelab"}]);
    fake.with(|s| {
        s.prs.push(existing);
        s.hide_from_list = 1;
    });
    // The branch is on the server already (the other attempt pushed it).
    remote.push_behind_our_back(SHOP);

    let pr = open_draft_pull_request(&remote.pusher(), &host(&fake, API_TOKEN), &remote.request())
        .await
        .unwrap();
    assert_eq!(pr.number, 7);
    assert_eq!(
        fake.requests(),
        [LIST, CREATE, LIST, "POST /repos/acme/shop/issues/7/labels"]
    );
    let prs = fake.prs();
    assert_eq!(prs.len(), 1, "nothing new was created");
    assert_eq!(label_names(&prs[0]), ["tracelab", "needs-review"]);
}

#[tokio::test]
async fn a_server_error_leaves_no_pull_request_and_a_retry_finishes() {
    let (remote, fake) = setup().await;
    fake.with(|s| s.fail_next_create = Some((500, json!({"message": "Server Error"}))));
    let (pusher, host, request) = (remote.pusher(), host(&fake, API_TOKEN), remote.request());
    let e = open_draft_pull_request(&pusher, &host, &request)
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unavailable, "{e}");
    assert!(e.kind.is_transient());
    assert!(e.message.contains("HTTP 500"), "{e}");
    assert!(fake.prs().is_empty(), "no pull request was recorded");
    assert_eq!(
        remote.branch_on_server(SHOP, BRANCH).as_deref(),
        Some(remote.commit.as_str()),
        "the push happened first"
    );

    let pr = open_draft_pull_request(&pusher, &host, &request)
        .await
        .unwrap();
    assert_eq!(pr.number, 41);
    assert_eq!(fake.prs().len(), 1);
    assert_eq!(label_names(&fake.prs()[0]), ["tracelab", "needs-review"]);
    assert_eq!(fake.problems(), Vec::<String>::new());
}

#[tokio::test]
async fn a_refused_token_is_permission_denied_naming_the_permissions_and_never_shown() {
    let (remote, fake) = setup().await;
    let wrong = "ghp_wrongTOKEN9876543210zyxwvuSECRET";
    let host = host(&fake, wrong);
    let logs = Logs::global();
    let e = open_draft_pull_request(&remote.pusher(), &host, &remote.request())
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::PermissionDenied, "{e}");
    assert!(e.message.contains("GitHub at http://127.0.0.1:"), "{e}");
    assert!(
        e.message.contains("pull_requests: write") && e.message.contains("contents: write"),
        "{e}"
    );
    assert!(fake.prs().is_empty());
    assert_eq!(fake.count(CREATE), 0, "the lookup was refused first");

    let logs = logs.text();
    assert!(
        logs.contains("pushed the branch"),
        "the capture saw the crate's logs: {logs}"
    );
    let shown = [
        e.to_string(),
        format!("{e:?}"),
        format!("{host:?}"),
        format!("{:?}", std::error::Error::source(&e)),
        logs,
    ];
    for text in shown {
        for secret in [wrong, API_TOKEN, GIT_PASSWORD] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
    }
}

#[tokio::test]
async fn a_branch_at_another_commit_is_a_conflict_and_nothing_is_opened() {
    let (remote, fake) = setup().await;
    remote.set_server_branch(SHOP, BRANCH, &remote.main);
    let e = open_draft_pull_request(&remote.pusher(), &host(&fake, API_TOKEN), &remote.request())
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Conflict, "{e}");
    assert!(e.message.contains(&remote.main[..12]), "{e}");
    assert!(e.message.contains(&remote.commit[..12]), "{e}");
    assert!(e.message.contains("refusing to overwrite"), "{e}");
    assert_eq!(
        remote.branch_on_server(SHOP, BRANCH).as_deref(),
        Some(remote.main.as_str()),
        "their branch is untouched"
    );
    assert!(fake.requests().is_empty(), "the API was never asked");
}

#[tokio::test]
async fn the_hosts_refusal_is_invalid_argument_with_its_message() {
    let (remote, fake) = setup().await;
    fake.with(|s| {
        s.fail_next_create = Some((
            422,
            json!({"message": "Validation Failed", "errors": [{"resource": "PullRequest", "code": "custom", "message": format!("No commits between main and {BRANCH}")}]}),
        ))
    });
    let e = open_draft_pull_request(&remote.pusher(), &host(&fake, API_TOKEN), &remote.request())
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidArgument, "{e}");
    assert!(e.message.contains("No commits between main and"), "{e}");
    assert!(fake.prs().is_empty());
}

#[tokio::test]
async fn an_unknown_repository_is_not_found() {
    // The git server has acme/gone; the API does not know it.
    let remote = Remote::with_repositories(&["acme/gone.git"]);
    let fake = fakes::github(API_TOKEN, tempfile::tempdir().unwrap().path().into()).await;
    let e = open_draft_pull_request(
        &remote.pusher(),
        &host(&fake, API_TOKEN),
        &remote.request_for("acme/gone.git"),
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotFound, "{e}");
    assert!(e.message.contains("acme/gone"), "{e}");
}

#[tokio::test]
async fn an_unreachable_or_slow_host_is_unavailable() {
    let (remote, fake) = setup().await;
    let pusher = remote.pusher();
    let request = remote.request();

    // Nobody listens: connection refused.
    let port = tracelab_testkit::ports::free_port();
    let nowhere = CodeHost::GitHub(
        GitHub::new(
            &format!("http://127.0.0.1:{port}/api/v3"),
            TokenSource::Value(Token::new(API_TOKEN).unwrap()),
            Duration::from_secs(10),
        )
        .unwrap(),
    );
    let e = open_draft_pull_request(&pusher, &nowhere, &request)
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unavailable, "{e}");
    assert!(e.message.contains("cannot be reached"), "{e}");

    // Answers after the client's timeout.
    fake.with(|s| s.delay = Some(Duration::from_secs(3)));
    let slow = CodeHost::GitHub(
        GitHub::new(
            &fake.api,
            TokenSource::Value(Token::new(API_TOKEN).unwrap()),
            Duration::from_millis(500),
        )
        .unwrap(),
    );
    let e = open_draft_pull_request(&pusher, &slow, &request)
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unavailable, "{e}");
    assert!(e.message.contains("did not answer in time"), "{e}");
    assert!(fake.prs().is_empty());
}
