//! GitLab: the whole flow against a fake self-managed GitLab API and a
//! real git remote, configured as a deployment would (a token file).

use crate::fixtures::*;
use serde_json::json;
use tracelab_codehost::fakes::{self, Fake};
use tracelab_codehost::{
    CodeHost, CodeHostSettings, ErrorKind, HostKind, PullRequest, open_draft_pull_request,
};

const SHOP: &str = "acme/shop.git";
const CREATE: &str = "POST /projects/acme/shop/merge_requests";
const LIST: &str = "GET /projects/acme/shop/merge_requests";

struct Setup {
    remote: Remote,
    fake: Fake,
    host: CodeHost,
    token_file: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

async fn setup() -> Setup {
    let remote = Remote::new();
    let fake = fakes::gitlab(API_TOKEN, remote.served.path().to_path_buf()).await;
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("gitlab-token");
    std::fs::write(&token_file, format!("{API_TOKEN}\n")).unwrap();
    let host = CodeHost::from_settings(&CodeHostSettings {
        kind: HostKind::GitLab,
        api_url: fake.api.clone(),
        token_file: token_file.to_str().unwrap().into(),
        timeout_seconds: 10,
    })
    .unwrap();
    Setup {
        remote,
        fake,
        host,
        token_file,
        _dir: dir,
    }
}

#[tokio::test]
async fn opens_a_draft_merge_request_and_a_second_call_creates_nothing() {
    let s = setup().await;
    let (pusher, request) = (s.remote.pusher(), s.remote.request());
    let mr = open_draft_pull_request(&pusher, &s.host, &request)
        .await
        .unwrap();
    assert_eq!(
        mr,
        PullRequest {
            url: "https://gitlab.example.com/acme/shop/-/merge_requests/1".into(),
            number: 1
        }
    );
    assert_eq!(
        s.remote.branch_on_server(SHOP, BRANCH).as_deref(),
        Some(s.remote.commit.as_str())
    );
    let mrs = s.fake.prs();
    assert_eq!(mrs.len(), 1);
    assert_eq!(mrs[0]["title"], "Draft: Fix add() returning one too many");
    assert_eq!(mrs[0]["source_branch"], BRANCH);
    assert_eq!(mrs[0]["target_branch"], "main");
    assert_eq!(mrs[0]["labels"], json!(["tracelab", "needs-review"]));
    // Labels went with the create: no separate update.
    assert_eq!(s.fake.requests(), [LIST, CREATE]);

    let again = open_draft_pull_request(&pusher, &s.host, &request)
        .await
        .unwrap();
    assert_eq!(again, mr);
    assert_eq!(s.fake.requests(), [LIST, CREATE, LIST]);
    assert_eq!(s.fake.prs().len(), 1);
    assert_eq!(s.fake.problems(), Vec::<String>::new());
}

#[tokio::test]
async fn a_conflicting_create_returns_the_existing_merge_request_with_its_labels_completed() {
    let s = setup().await;
    s.fake.with(|st| {
        st.prs.push(json!({
            "iid": 3,
            "web_url": "https://gitlab.example.com/acme/shop/-/merge_requests/3",
            "state": "opened",
            "source_branch": BRANCH,
            "target_branch": "main",
            "labels": ["tracelab"],
        }));
        st.hide_from_list = 1;
    });
    s.remote.push_behind_our_back(SHOP);
    let mr = open_draft_pull_request(&s.remote.pusher(), &s.host, &s.remote.request())
        .await
        .unwrap();
    assert_eq!(mr.number, 3);
    assert_eq!(
        s.fake.requests(),
        [
            LIST,
            CREATE,
            LIST,
            "PUT /projects/acme/shop/merge_requests/3"
        ]
    );
    let mrs = s.fake.prs();
    assert_eq!(mrs.len(), 1);
    assert_eq!(mrs[0]["labels"], json!(["tracelab", "needs-review"]));
}

#[tokio::test]
async fn a_server_error_then_a_retry() {
    let s = setup().await;
    s.fake
        .with(|st| st.fail_next_create = Some((502, json!("<html>Bad Gateway</html>"))));
    let (pusher, request) = (s.remote.pusher(), s.remote.request());
    let e = open_draft_pull_request(&pusher, &s.host, &request)
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unavailable, "{e}");
    assert!(s.fake.prs().is_empty());
    let mr = open_draft_pull_request(&pusher, &s.host, &request)
        .await
        .unwrap();
    assert_eq!(mr.number, 1);
    assert_eq!(s.fake.prs().len(), 1);
}

#[tokio::test]
async fn a_refused_token_names_the_scope_and_role_and_a_rotated_file_is_used_at_once() {
    let s = setup().await;
    let wrong = "glpat-wrongTOKEN0123456789abc";
    std::fs::write(&s.token_file, wrong).unwrap();
    let (pusher, request) = (s.remote.pusher(), s.remote.request());
    let e = open_draft_pull_request(&pusher, &s.host, &request)
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::PermissionDenied, "{e}");
    assert!(e.message.starts_with("GitLab at http://127.0.0.1:"), "{e}");
    assert!(
        e.message.contains("`api` scope") && e.message.contains("Developer role"),
        "{e}"
    );
    for text in [e.to_string(), format!("{e:?}"), format!("{:?}", s.host)] {
        assert!(!text.contains(wrong) && !text.contains(API_TOKEN), "{text}");
    }
    assert!(s.fake.prs().is_empty());

    // The right token, written to the same file, works without a new client.
    std::fs::write(&s.token_file, API_TOKEN).unwrap();
    let mr = open_draft_pull_request(&pusher, &s.host, &request)
        .await
        .unwrap();
    assert_eq!(mr.number, 1);
}

#[tokio::test]
async fn nested_groups_are_one_encoded_project_id() {
    let remote = Remote::with_repositories(&["platform/payments/shop.git"]);
    let fake = fakes::gitlab(API_TOKEN, remote.served.path().to_path_buf()).await;
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("t");
    std::fs::write(&token_file, API_TOKEN).unwrap();
    let host = CodeHost::from_settings(&CodeHostSettings {
        kind: HostKind::GitLab,
        api_url: fake.api.clone(),
        token_file: token_file.to_str().unwrap().into(),
        timeout_seconds: 10,
    })
    .unwrap();
    let mr = open_draft_pull_request(
        &remote.pusher(),
        &host,
        &remote.request_for("platform/payments/shop.git"),
    )
    .await
    .unwrap();
    assert_eq!(
        mr.url,
        "https://gitlab.example.com/platform/payments/shop/-/merge_requests/1"
    );
    assert_eq!(
        fake.requests()[1],
        "POST /projects/platform/payments/shop/merge_requests"
    );
}
