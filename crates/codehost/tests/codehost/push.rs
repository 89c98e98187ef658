//! The push alone, against git's smart HTTP behind Basic auth.

use crate::fixtures::*;
use tracelab_codehost::{ErrorKind, Pushed, Pusher};
use tracelab_repos::{RepoUrl, RepositorySettings};

const SHOP: &str = "acme/shop.git";

#[tokio::test]
async fn pushes_the_verified_commit_once_and_then_finds_it_there() {
    let remote = Remote::new();
    let url = RepoUrl::parse(&remote.url(SHOP)).unwrap();
    let pusher = remote.pusher();
    let first = pusher
        .push_branch(&url, remote.local.path(), BRANCH)
        .await
        .unwrap();
    assert_eq!(
        first,
        Pushed {
            commit: remote.commit.clone(),
            created: true
        }
    );
    let second = pusher
        .push_branch(&url, remote.local.path(), BRANCH)
        .await
        .unwrap();
    assert_eq!(
        second,
        Pushed {
            commit: remote.commit.clone(),
            created: false
        }
    );
    assert_eq!(
        remote.branch_on_server(SHOP, BRANCH).as_deref(),
        Some(remote.commit.as_str())
    );
    // Exactly the one branch: no tags, nothing else.
    let refs = git(
        &remote.served.path().join(SHOP),
        &["for-each-ref", "--format=%(refname)"],
    );
    assert_eq!(refs, format!("refs/heads/{BRANCH}\nrefs/heads/main"));
}

#[tokio::test]
async fn a_wrong_password_is_permission_denied_without_the_password() {
    let remote = Remote::new();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pw");
    std::fs::write(&file, "not-the-password-4242").unwrap();
    let mut settings = remote.settings.clone();
    settings.credentials[0].password_file = file.to_str().unwrap().into();
    let e = Pusher::new(&settings)
        .unwrap()
        .push_branch(
            &RepoUrl::parse(&remote.url(SHOP)).unwrap(),
            remote.local.path(),
            BRANCH,
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::PermissionDenied, "{e}");
    let shown = format!("{e} {e:?}");
    assert!(
        !shown.contains("not-the-password-4242") && !shown.contains(GIT_PASSWORD),
        "{shown}"
    );
    assert_eq!(remote.branch_on_server(SHOP, BRANCH), None);
}

#[tokio::test]
async fn no_configured_credentials_means_no_prompt_and_permission_denied() {
    let remote = Remote::new();
    let e = Pusher::new(&RepositorySettings::default())
        .unwrap()
        .push_branch(
            &RepoUrl::parse(&remote.url(SHOP)).unwrap(),
            remote.local.path(),
            BRANCH,
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::PermissionDenied, "{e}");
    assert!(e.message.contains("none are configured"), "{e}");
}

#[tokio::test]
async fn a_missing_local_branch_or_a_git_url_pushes_nothing() {
    let remote = Remote::new();
    let url = RepoUrl::parse(&remote.url(SHOP)).unwrap();
    let e = remote
        .pusher()
        .push_branch(&url, remote.local.path(), "ai-debug/nope-h1")
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotFound, "{e}");
    let e = remote
        .pusher()
        .push_branch(&url, remote.local.path(), "--force")
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidArgument, "{e}");
    let e = remote
        .pusher()
        .push_branch(
            &RepoUrl::parse("git://127.0.0.1:9/acme/shop").unwrap(),
            remote.local.path(),
            BRANCH,
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidArgument, "{e}");
    assert_eq!(remote.server.requests(), 0);
}

#[tokio::test]
async fn an_unreachable_server_is_unavailable() {
    let remote = Remote::new();
    let port = tracelab_testkit::ports::free_port();
    let e = remote
        .pusher()
        .push_branch(
            &RepoUrl::parse(&format!("http://127.0.0.1:{port}/acme/shop.git")).unwrap(),
            remote.local.path(),
            BRANCH,
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unavailable, "{e}");
}
