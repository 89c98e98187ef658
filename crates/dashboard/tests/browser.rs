//! The dashboard in a real browser: headless Chromium signs in through the
//! form, reads the list and investigation pages, approves through the
//! review form, and signs out. Screenshots of each page are written as
//! test artefacts.
//!
//! Chromium is driven over the DevTools pipe (`chromium/mod.rs`).
//!
//! Without Chromium the test skips, saying why; with
//! `TRACELAB_REQUIRE_BACKENDS=1` (CI) it fails instead. `TRACELAB_CHROMIUM`
//! names the binary; screenshots go to `$TRACELAB_ARTIFACTS/dashboard-screenshots`
//! or `<target>/dashboard-screenshots`.

mod chromium;
mod fixtures;

use chromium::{Browser, Result, artefact_dir, chromium_or_skip};
use fixtures::*;
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;
use tracelab_dashboard::{
    Authenticator, DashboardSource, GroupFilter, GroupRow, GroupsPage, ListFilter, Viewer,
};

struct Tokens;

impl Authenticator for Tokens {
    fn check(&self, token: &str) -> Option<Viewer> {
        (token == "review-token").then(|| Viewer {
            name: "rita".into(),
            can_review: true,
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_signs_in_reads_and_approves_in_chromium() -> Result<()> {
    let Some(chromium) = chromium_or_skip() else {
        return Ok(());
    };
    let started = Instant::now();
    let shots = artefact_dir("dashboard-screenshots");
    std::fs::create_dir_all(&shots)?;
    let profile = tempfile::tempdir()?;

    let verified = regression_verified();
    let hostile = hostile();
    let source = Arc::new(
        MemorySource::new(vec![
            failed(),
            flaky(),
            regression_unverified(),
            hostile.clone(),
            verified.clone(),
        ])
        .with_pull_requests()
        .with_groups(vec![
            {
                let mut g = group(
                    "k-hot",
                    "AssertionError in test_total",
                    "open",
                    vec![0, 1, 0, 0, 4, 2, 0, 0, 3, 1, 0, 5, 2, 1],
                    9_000,
                );
                g.investigations = vec![(verified.id.0.clone(), "WAITING_FOR_REVIEW".into())];
                g
            },
            group(
                "k-fixed",
                "KeyError: 'sku'",
                "resolved",
                vec![3, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                8_000,
            ),
        ]),
    );
    let dyn_source: Arc<dyn DashboardSource> = source.clone();
    let app = tracelab_dashboard::router(dyn_source, Arc::new(Tokens));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let mut b = Browser::launch(&chromium, profile.path(), &shots.join("chromium.log")).await?;

    // No session: the list sends the browser to the sign-in form.
    b.goto(&format!("{base}/investigations")).await?;
    let path = b.path().await?;
    assert!(path.starts_with("/login?next="), "{path}");
    b.screenshot(&shots.join("01-login.png")).await?;

    // Sign in through the form: typed token, clicked button.
    b.type_into("#token", "review-token").await?;
    b.click_and_wait("form.login button[type=submit]").await?;
    assert_eq!(b.path().await?, "/investigations");
    assert_eq!(
        b.eval("document.cookie").await?,
        json!(""),
        "the session cookie is HttpOnly"
    );
    let rows = b
        .eval("document.querySelectorAll('table.list tbody tr').length")
        .await?;
    assert_eq!(rows, json!(5));
    assert!(b.text().await?.contains("Signed in as rita (reviewer)"));
    b.screenshot(&shots.join("02-list.png")).await?;

    // The filter form narrows the list (a plain GET form).
    b.eval("document.querySelector('select[name=verdict]').value = 'flaky'")
        .await?;
    b.click_and_wait("form.filters button[type=submit]").await?;
    assert!(b.path().await?.contains("verdict=flaky"));
    let rows = b
        .eval("document.querySelectorAll('table.list tbody tr').length")
        .await?;
    assert_eq!(rows, json!(1));
    b.goto(&format!("{base}/investigations")).await?;

    // Hostile text renders as text and runs nothing.
    b.click_and_wait(&format!("a.id[title='{}']", hostile.id.0))
        .await?;
    assert_eq!(b.eval("window.__pwned === undefined").await?, json!(true));
    assert_eq!(
        b.eval("document.querySelectorAll('main script, main img').length")
            .await?,
        json!(0)
    );
    assert!(b.text().await?.contains(HOSTILE));
    b.screenshot(&shots.join("03-hostile-text.png")).await?;

    for (name, report) in [
        ("04-regression-unverified.png", regression_unverified()),
        ("05-flaky.png", flaky()),
        ("06-failed.png", failed()),
    ] {
        b.goto(&format!("{base}/investigations/{}", report.id.0))
            .await?;
        b.screenshot(&shots.join(name)).await?;
    }

    // The verified regression: read it, approve it with a reason.
    let page = format!("/investigations/{}", verified.id.0);
    b.goto(&format!("{base}{page}")).await?;
    let text = b.text().await?;
    assert!(text.contains("Round totals in add()"), "{text}");
    assert!(text.contains("WAITING_FOR_REVIEW"));
    let svgs = b
        .eval("document.querySelectorAll('svg.search').length")
        .await?;
    assert_eq!(svgs, json!(1));
    b.screenshot(&shots.join("07-investigation.png")).await?;
    b.type_into("#reason", "revert is right").await?;
    b.click_and_wait("button.approve").await?;
    assert_eq!(b.path().await?, page);
    let text = b.text().await?;
    assert!(text.contains("APPROVED"), "{text}");
    assert!(text.contains("approved by rita: revert is right"), "{text}");
    assert_eq!(
        b.eval("document.querySelectorAll('button.approve').length")
            .await?,
        json!(0)
    );
    b.screenshot(&shots.join("08-approved.png")).await?;

    // Approved: the page offers the draft pull request; a click opens it
    // and the page links it instead of the button.
    b.click_and_wait("button.open-pr").await?;
    assert_eq!(b.path().await?, page);
    assert_eq!(
        b.eval("document.querySelector('p.pull-request a').href")
            .await?,
        json!("https://github.example/acme/shop/pull/1")
    );
    assert_eq!(
        b.eval("document.querySelectorAll('button.open-pr').length")
            .await?,
        json!(0)
    );
    assert_eq!(source.pull_requests_created(), 1);
    b.screenshot(&shots.join("09-pull-request.png")).await?;
    assert_eq!(
        source.reviews(),
        vec![Review {
            id: verified.id.0.clone(),
            approve: true,
            reviewer: "rita".into(),
            reason: Some("revert is right".into()),
        }]
    );

    // The failure groups, from the header's link: a sparkline each, and
    // the linked investigation one click away.
    b.click_and_wait("nav.sections a[href='/groups']").await?;
    assert_eq!(b.path().await?, "/groups");
    assert_eq!(
        b.eval("document.querySelectorAll('table.groups svg.sparkline').length")
            .await?,
        json!(2)
    );
    b.screenshot(&shots.join("10-groups.png")).await?;
    b.click_and_wait("table.groups a.investigation").await?;
    assert_eq!(b.path().await?, page);

    // Sign out; the list is closed again.
    b.click_and_wait("form.logout button").await?;
    assert!(b.path().await?.starts_with("/login"));
    b.goto(&format!("{base}/investigations")).await?;
    assert!(b.path().await?.starts_with("/login"));

    b.close().await?;
    server.abort();
    eprintln!(
        "browser test took {:.1} s; screenshots in {}",
        started.elapsed().as_secs_f64(),
        shots.display()
    );
    Ok(())
}
