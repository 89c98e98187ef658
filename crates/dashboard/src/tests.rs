//! Pages rendered from hand-built reports, and the router driven request by
//! request (no socket).

use crate::{
    Authenticator, DashboardSource, GroupFilter, GroupRow, GroupsPage, ListFilter, Settings,
    Viewer, router, router_with,
};
use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response, StatusCode, header};
use std::sync::Arc;
use std::time::Duration;
use tower::ServiceExt;

#[path = "../tests/fixtures/mod.rs"]
mod fixtures;
use fixtures::*;

// ---------------------------------------------------------------- helpers

/// The page's visible text: tags dropped, entities decoded, spaces collapsed.
fn text(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => {
                in_tag = true;
                out.push(' ');
            }
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    let out = out
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn reviewer() -> Viewer {
    Viewer {
        name: "rita".into(),
        can_review: true,
    }
}

fn render(report: &Report, viewer: &Viewer) -> String {
    let summary = summary_of(report);
    crate::pages::detail(&crate::pages::Detail {
        viewer,
        csrf: "csrf-token",
        summary: &summary,
        transitions: &report.transitions,
        report: Some(report),
        hand_off: None,
        opens_pull_requests: false,
        webhooks: &[],
    })
    .into_string()
}

use tracelab_domain::report::Report;
use tracelab_domain::state::InvestigationState;

// ---------------------------------------------------------------- pages

#[test]
fn a_verified_regression_names_the_culprit_and_shows_the_fix() {
    let html = render(&regression_verified(), &reviewer());
    let t = text(&html);
    assert!(t.contains("Kind of failure A commit introduced this failure."));
    assert!(t.contains("Proven: commit c0ffee123456 caused it"), "{t}");
    assert!(t.contains("Round totals in add()"));
    assert!(t.contains("Search confidence 0.993"));
    assert!(html.contains(r#"<span class="badge ok">verified</span>"#));
    // The winner's patch, one classed element per line.
    assert!(html.contains(r#"<span class="del">-    return round(a + b)</span>"#));
    assert!(html.contains(r#"<span class="add">+    return a + b</span>"#));
    assert!(html.contains(r#"<span class="hunk">@@ -1,3 +1,3 @@</span>"#));
    // Contract steps with their evidence.
    assert_eq!(html.matches(r#"<li class="met">"#).count(), 4, "{html}");
    assert!(t.contains("The regression test passes after the fix: failed 0 of 5 runs"));
    // Experiments: command, revision, exit, duration, sandbox, output folded.
    assert!(t.contains("regression_after"));
    assert!(t.contains("docker@sha256:abc123"));
    assert!(t.contains("1.2 s"));
    assert!(html.contains("<details class=\"output\"><summary>Output (2 lines)</summary>"));
    // Where to look, notes, timeline with times.
    assert!(t.contains("py:calc.add") && t.contains("calc.py:1–2"));
    assert!(t.contains("The failure is deterministic: 20 of 20 runs failed."));
    assert!(t.contains("2026-09-21 14:13:21 UTC"), "{t}");
    assert!(t.contains("ARBITRATING → WAITING_FOR_REVIEW"));
    assert!(t.contains("+1 min 25 s"), "{t}");
    // The review form, with the session's CSRF token.
    assert!(html.contains(r#"<input type="hidden" name="csrf" value="csrf-token">"#));
    assert!(html.contains("/investigations/0190a1b2-0000-7000-8000-00000000aa01/approve"));
    assert!(html.contains("/investigations/0190a1b2-0000-7000-8000-00000000aa01/reject"));
}

#[test]
fn an_unverified_culprit_is_shown_and_called_unproven() {
    let html = render(&regression_unverified(), &reviewer());
    let t = text(&html);
    assert!(
        t.contains("Culprit c0ffee123456 Round totals in add()"),
        "{t}"
    );
    assert!(t.contains("not verified No fix for this commit was proven: the revert does not apply cleanly. Treat it as the likely cause, not a proven one."), "{t}");
    assert!(t.contains("Found, not proven"));
    assert!(t.contains("Nothing verified") || t.contains("No hypothesis was verified"));
    assert!(t.contains("could not run: the revert does not apply cleanly"));
    assert!(html.contains(r#"<li class="blocked">"#));
    assert!(t.contains("Could not separate: abab00001111"));
    assert!(!html.contains("<span class=\"badge ok\">verified</span>"));
}

#[test]
fn a_flaky_test_shows_its_rate_and_interval() {
    let html = render(&flaky(), &reviewer());
    let t = text(&html);
    assert!(
        t.contains(
            "fails intermittently at the same revision and environment (failed 9 of 40 runs, 22.5%)"
        ),
        "{t}"
    );
    assert!(t.contains("Failed 9 of 40 runs (22.5%, 95% interval 12.3%–37.5%)."));
    assert!(t.contains("The run cap ended the re-runs"));
    assert!(html.contains(r#"<svg class="rate""#));
    // The interval band spans 12.3%..37.5% of a 400-wide bar starting at 10.
    assert!(
        html.contains(r#"<rect class="interval" x="59.2" y="8" width="100.8""#),
        "{html}"
    );
    assert!(t.contains("No culprit search ran."));
    assert!(!html.contains("Culprit search"));
}

#[test]
fn a_failed_investigation_says_what_was_not_established() {
    let html = render(&failed(), &reviewer());
    let t = text(&html);
    assert!(t.contains("The investigation ended FAILED: sandbox unavailable: the Docker daemon did not answer. What follows is only what it had established by then."), "{t}");
    assert!(t.contains("there is nothing to review"));
    assert!(!html.contains("<form class=\"review\""));

    // Without a report at all.
    let r = failed();
    let summary = summary_of(&r);
    let html = crate::pages::detail(&crate::pages::Detail {
        viewer: &reviewer(),
        csrf: "x",
        summary: &summary,
        transitions: &r.transitions,
        report: None,
        hand_off: None,
        opens_pull_requests: false,
        webhooks: &[],
    })
    .into_string();
    let t = text(&html);
    assert!(
        t.contains("ended FAILED without a report: sandbox unavailable"),
        "{t}"
    );
    assert!(t.contains("Nothing about this failure was established."));
}

#[test]
fn the_audit_log_and_the_pull_request_are_shown_escaped() {
    use tracelab_domain::audit::{AuditAction, AuditEntry, HandOff, PullRequestLink};
    let report = regression_verified();
    let summary = summary_of(&report);
    let entry = |action, actor: &str, reason: Option<&str>| AuditEntry {
        action,
        actor: actor.into(),
        role: "reviewer".into(),
        reason: reason.map(str::to_string),
        at: time::OffsetDateTime::UNIX_EPOCH,
    };
    let mut h = HandOff {
        started_by: Some("ci-bot".into()),
        audit: vec![
            entry(AuditAction::Started, "ci-bot", None),
            entry(
                AuditAction::Approved,
                "<script>alert(1)</script>",
                Some("\"><b>ok</b>"),
            ),
            entry(
                AuditAction::PullRequestFailed,
                "rita",
                Some("unavailable: GitHub answered 502"),
            ),
        ],
        pull_request: None,
        pull_request_error: Some("unavailable: GitHub answered 502".into()),
    };
    let page = |h: &HandOff| {
        crate::pages::detail(&crate::pages::Detail {
            viewer: &reviewer(),
            csrf: "x",
            summary: &summary,
            transitions: &report.transitions,
            report: Some(&report),
            hand_off: Some(h),
            opens_pull_requests: true,
            webhooks: &[],
        })
        .into_string()
    };
    let html = page(&h);
    let t = text(&html);
    assert!(
        t.contains("Opening the pull request failed: unavailable: GitHub answered 502"),
        "{t}"
    );
    assert!(t.contains("Started by ci-bot"), "{t}");
    for action in ["started", "approved", "pull_request_failed"] {
        assert!(html.contains(&format!("<code>{action}</code>")), "{action}");
    }
    assert!(!html.contains("<script>alert"), "escaped");
    assert!(!html.contains("<b>ok</b>"), "escaped");
    h.pull_request = Some(PullRequestLink {
        url: "https://github.com/acme/shop/pull/41".into(),
        number: 41,
        host: "github".into(),
    });
    h.pull_request_error = None;
    let html = page(&h);
    assert!(
        html.contains(r#"href="https://github.com/acme/shop/pull/41""#),
        "{html}"
    );
    assert!(!text(&html).contains("failed: unavailable"));
    h.pull_request.as_mut().unwrap().url = "javascript:alert(1)".into();
    assert!(
        !page(&h).contains("href=\"javascript:"),
        "only http(s) links"
    );
    // Without an audit log (hosts that keep none) there is no section.
    assert!(!render(&report, &reviewer()).contains("id=\"audit\""));
}

#[test]
fn a_running_investigation_reloads_itself() {
    let (summary, transitions) = running("run-1", 500);
    let html = crate::pages::detail(&crate::pages::Detail {
        viewer: &reviewer(),
        csrf: "x",
        summary: &summary,
        transitions: &transitions,
        report: None,
        hand_off: None,
        opens_pull_requests: false,
        webhooks: &[],
    })
    .into_string();
    assert!(html.contains(r#"<meta http-equiv="refresh" content="5">"#));
    assert!(text(&html).contains("Still running (VERIFYING)"));
    let decided = render(&regression_verified(), &reviewer());
    assert!(!decided.contains("http-equiv"));
}

#[test]
fn the_culprit_search_is_drawn() {
    let html = render(&regression_unverified(), &reviewer());
    let svg = &html[html.find("<svg class=\"search\"").expect("search svg")..];
    let svg = &svg[..svg.find("</svg>").expect("closed") + 6];
    assert!(svg.contains(r#"<circle class="good""#) && svg.contains(r#"<circle class="bad""#));
    assert!(svg.contains(r#"<path class="culprit""#));
    assert!(svg.contains("culprit c0ffee123456"));
    assert_eq!(svg.matches(r#"<rect class="untestable""#).count(), 2);
    assert_eq!(svg.matches(r#"<rect class="ambiguous""#).count(), 1);
    assert!(svg.contains("37 candidate commits"));
    assert!(svg.contains("good 600d00123456") && svg.contains("bad badbad123456"));
    // SVG children are closed explicitly (no HTML void-element parsing).
    assert!(svg.contains("></line>") && svg.contains("></circle>"));
    let t = text(&html);
    assert!(
        t.contains("37 candidate commits, 4 rounds, 11 test runs, 2 at once; confidence 0.993.")
    );
    assert!(t.contains("Routed around 2 untestable commits"));
}

#[test]
fn the_commits_the_failure_pointed_at_are_named() {
    let mut report = regression_unverified();
    assert!(!text(&render(&report, &reviewer())).contains("pointed at"));
    report.bisect.as_mut().unwrap().pointed_at = vec![
        tracelab_domain::report::PointedCommit {
            commit: "c0ffee1234567890".into(),
            share: 0.58,
        },
        tracelab_domain::report::PointedCommit {
            commit: "dead00001111".into(),
            share: 0.064,
        },
    ];
    let t = text(&render(&report, &reviewer()));
    assert!(
        t.contains(
            "pointed at c0ffee123456 (58%), dead00001111 (6%): the search probed around them first"
        ),
        "{t}"
    );
}

/// A report with the search's judgements: each probe at its place, one
/// row per round, reused judgements hollow, the culprit where it turns.
#[test]
fn the_search_timeline_draws_each_probe_at_its_place() {
    use tracelab_domain::bisect::ProbeResult::{Bad, Good, Untestable};
    use tracelab_domain::report::ProbeRecord;
    let mut r = regression_unverified();
    let culprit = r.culprit.as_ref().unwrap().commit.commit.clone();
    let b = r.bisect.as_mut().unwrap();
    b.candidates = 10;
    b.rounds = 2;
    b.ambiguous.clear();
    let probe = |revision: &str, position, round, result, reused| ProbeRecord {
        revision: revision.into(),
        position,
        round,
        result,
        runs: if reused { 0 } else { 1 },
        reused,
    };
    b.probes = vec![
        probe("older000", None, 1, Good, false),
        probe("reused08", Some(8), 0, Bad, true),
        probe("round1a3", Some(3), 1, Good, false),
        probe("round1b6", Some(6), 1, Bad, false),
        probe("untest02", Some(2), 1, Untestable, false),
        probe("round2a4", Some(4), 2, Good, false),
        probe(&culprit, Some(5), 2, Bad, false),
    ];
    let html = render(&r, &reviewer());
    let svg = &html[html.find("<svg class=\"search\"").expect("search svg")..];
    let svg = &svg[..svg.find("</svg>").expect("closed") + 6];
    // The two ends plus the six in-range judgements (the older one is outside).
    assert_eq!(
        svg.matches(r#"<circle class="good""#).count(),
        1 + 2,
        "{svg}"
    );
    assert_eq!(
        svg.matches(r#"<circle class="bad""#).count(),
        1 + 2,
        "{svg}"
    );
    assert_eq!(svg.matches(r#"<circle class="bad reused""#).count(), 1);
    assert_eq!(svg.matches(r#"<rect class="untestable""#).count(), 1);
    assert!(!svg.contains("older000"));
    for row in ["reused", "round 1", "round 2"] {
        assert!(svg.contains(&format!(">{row}</text>")), "{row}");
    }
    // Ten candidates from x = 70 to 690: position 5 is at 70 + 620 * 6 / 10.
    assert!(svg.contains(r#"<line class="culprit" x1="442""#), "{svg}");
    assert!(svg.contains("10 candidate commits, 6 judged"));
    assert!(text(&html).contains("one row per round"));
    // A report without the judgements keeps the schematic, and says so.
    let schematic = render(&regression_unverified(), &reviewer());
    assert!(text(&schematic).contains("Schematic"));
}

#[test]
fn a_lead_below_the_bar_is_still_shown() {
    let mut r = regression_unverified();
    r.culprit = None;
    r.verdict = tracelab_domain::verdict::Verdict::Deterministic;
    if let Some(b) = r.bisect.as_mut() {
        b.confidence = 0.6;
    }
    let t = text(&render(&r, &reviewer()));
    assert!(
        t.contains("Culprit lead c0ffee123456 Round totals in add()"),
        "{t}"
    );
    assert!(t.contains("confidence 0.600, below the 0.9 needed to name a culprit"));
}

#[test]
fn hostile_text_is_escaped_everywhere() {
    let r = hostile();
    let html = render(&r, &reviewer());
    assert!(!html.contains("<script"), "raw script tag in {html}");
    assert!(!html.contains("<img"));
    assert!(html.contains("&lt;script&gt;window.__pwned=1&lt;/script&gt;"));
    // Attribute values cannot be broken out of.
    assert!(!html.contains("\"'><img"));
    let summary = summary_of(&r);
    let list = crate::pages::list(&crate::pages::ListPage {
        viewer: &reviewer(),
        csrf: "x",
        filter: &ListFilter {
            repository: Some(r.repository.clone()),
            limit: 10,
            ..Default::default()
        },
        items: std::slice::from_ref(&summary),
        counts: &[(InvestigationState::WaitingForReview, 1)],
    })
    .into_string();
    assert!(
        !list.contains("<script") && !list.contains("<img"),
        "{list}"
    );
    assert!(list.contains("&lt;script&gt;"));
}

#[test]
fn readers_without_review_rights_get_no_buttons() {
    let viewer = Viewer {
        name: "vic".into(),
        can_review: false,
    };
    let html = render(&regression_verified(), &viewer);
    assert!(!html.contains("<button class=\"approve\""));
    assert!(!html.contains("/approve"));
    assert!(text(&html).contains("You are signed in read-only"));
    let html = render(&regression_verified(), &reviewer());
    assert!(html.contains("<button class=\"approve\""));
}

// ---------------------------------------------------------------- router

struct Tokens;

impl Authenticator for Tokens {
    fn check(&self, token: &str) -> Option<Viewer> {
        match token {
            "review-token" => Some(reviewer()),
            "read-token" => Some(Viewer {
                name: "vic".into(),
                can_review: false,
            }),
            _ => None,
        }
    }
}

fn app_with(settings: Settings) -> (Router, Arc<MemorySource>) {
    let (run, run_t) = running("0190a1b2-0000-7000-8000-0000000000ff", 9_000);
    let source = Arc::new(
        MemorySource::new(vec![
            regression_verified(),
            regression_unverified(),
            flaky(),
            failed(),
        ])
        .with_running(run, run_t),
    );
    let app = router_with(source.clone(), Arc::new(Tokens), settings);
    (app, source)
}

fn app() -> (Router, Arc<MemorySource>) {
    app_with(Settings::default())
}

async fn send(app: &Router, req: Request<Body>) -> Response<Body> {
    app.clone().oneshot(req).await.expect("infallible")
}

fn get(path: &str, cookie: Option<&str>) -> Request<Body> {
    let mut b = Request::get(path);
    if let Some(c) = cookie {
        b = b.header(header::COOKIE, c);
    }
    b.body(Body::empty()).unwrap()
}

fn post(path: &str, cookie: Option<&str>, form: &str) -> Request<Body> {
    let mut b =
        Request::post(path).header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    if let Some(c) = cookie {
        b = b.header(header::COOKIE, c);
    }
    b.body(Body::from(form.to_string())).unwrap()
}

async fn body(res: Response<Body>) -> String {
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 22)
        .await
        .unwrap();
    String::from_utf8(bytes.to_vec()).unwrap()
}

fn location(res: &Response<Body>) -> &str {
    res.headers()[header::LOCATION].to_str().unwrap()
}

fn set_cookies(res: &Response<Body>) -> Vec<String> {
    res.headers()
        .get_all(header::SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect()
}

/// `name=value` of the Set-Cookie for `name`.
fn cookie_pair(res: &Response<Body>, name: &str) -> String {
    set_cookies(res)
        .into_iter()
        .find(|c| c.starts_with(&format!("{name}=")))
        .and_then(|c| c.split(';').next().map(str::to_string))
        .unwrap_or_else(|| panic!("no {name} cookie in {:?}", set_cookies(res)))
}

/// The value of the hidden `name` field in a page.
fn hidden(html: &str, name: &str) -> String {
    let marker = format!(r#"name="{name}" value=""#);
    let start = html
        .find(&marker)
        .unwrap_or_else(|| panic!("no {name} in {html}"))
        + marker.len();
    html[start..start + html[start..].find('"').unwrap()].to_string()
}

/// Signs in through the form; returns the session cookie pair and the session's CSRF token.
async fn sign_in(app: &Router, token: &str) -> (String, String) {
    let form = send(app, get("/login", None)).await;
    let nonce_cookie = cookie_pair(&form, "tracelab_login");
    let nonce = hidden(&body(form).await, "csrf");
    let res = send(
        app,
        post(
            "/login",
            Some(&nonce_cookie),
            &format!("token={token}&csrf={nonce}&next=%2Finvestigations"),
        ),
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let session = cookie_pair(&res, "tracelab_session");
    let page = body(send(app, get("/investigations", Some(&session))).await).await;
    (session, hidden(&page, "csrf"))
}

const VERIFIED: &str = "/investigations/0190a1b2-0000-7000-8000-00000000aa01";

#[tokio::test]
async fn the_root_goes_to_the_list() {
    let (app, _) = app();
    let res = send(&app, get("/", None)).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&res), "/investigations");
}

#[tokio::test]
async fn pages_without_a_session_redirect_to_sign_in() {
    let (app, _) = app();
    for path in ["/investigations", VERIFIED] {
        let res = send(&app, get(path, None)).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{path}");
        assert!(location(&res).starts_with("/login?next="), "{path}");
        let res = send(&app, get(path, Some("tracelab_session=forged"))).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{path}");
    }
    let res = send(&app, get(VERIFIED, None)).await;
    assert_eq!(
        location(&res),
        "/login?next=%2Finvestigations%2F0190a1b2-0000-7000-8000-00000000aa01"
    );
}

#[tokio::test]
async fn signing_in_sets_a_strict_http_only_session_cookie() {
    let (app, _) = app();
    let form = send(&app, get("/login?next=%2Finvestigations%2Fx", None)).await;
    assert_eq!(form.status(), StatusCode::OK);
    let nonce_set = set_cookies(&form).remove(0);
    assert!(nonce_set.contains("HttpOnly") && nonce_set.contains("SameSite=Strict"));
    let nonce_cookie = cookie_pair(&form, "tracelab_login");
    let html = body(form).await;
    assert_eq!(hidden(&html, "next"), "/investigations/x");
    let nonce = hidden(&html, "csrf");
    let res = send(
        &app,
        post(
            "/login",
            Some(&nonce_cookie),
            &format!("token=review-token&csrf={nonce}&next=%2Finvestigations%2Fx"),
        ),
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&res), "/investigations/x");
    let session = set_cookies(&res)
        .into_iter()
        .find(|c| c.starts_with("tracelab_session="))
        .unwrap();
    let value = session
        .split(';')
        .next()
        .unwrap()
        .trim_start_matches("tracelab_session=");
    assert_eq!(value.len(), 64, "256 random bits, hex");
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=28800"] {
        assert!(session.contains(attr), "{attr} missing in {session}");
    }
    assert!(!session.contains("Secure"));
    assert!(
        !session.contains(&nonce),
        "the session id is not the form nonce"
    );

    // Signed in, the form sends you on.
    let res = send(
        &app,
        get("/login", Some(&format!("tracelab_session={value}"))),
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);

    // With `secure_cookie` the cookie is Secure.
    let (secure, _) = app_with(Settings {
        secure_cookie: true,
        ..Settings::default()
    });
    let form = send(&secure, get("/login", None)).await;
    let nonce_cookie = cookie_pair(&form, "tracelab_login");
    let nonce = hidden(&body(form).await, "csrf");
    let res = send(
        &secure,
        post(
            "/login",
            Some(&nonce_cookie),
            &format!("token=review-token&csrf={nonce}"),
        ),
    )
    .await;
    assert!(set_cookies(&res).iter().all(|c| c.ends_with("; Secure")));
}

#[tokio::test]
async fn sign_in_refuses_bad_tokens_and_foreign_forms() {
    let (app, _) = app();
    let form = send(&app, get("/login", None)).await;
    let nonce_cookie = cookie_pair(&form, "tracelab_login");
    let nonce = hidden(&body(form).await, "csrf");
    let res = send(
        &app,
        post(
            "/login",
            Some(&nonce_cookie),
            &format!("token=wrong&csrf={nonce}"),
        ),
    )
    .await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    assert!(
        !set_cookies(&res)
            .iter()
            .any(|c| c.starts_with("tracelab_session"))
    );
    assert!(text(&body(res).await).contains("That token was not accepted."));
    // A form posted without the browser's form cookie (another site's form).
    let res = send(
        &app,
        post("/login", None, &format!("token=review-token&csrf={nonce}")),
    )
    .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert!(
        !set_cookies(&res)
            .iter()
            .any(|c| c.starts_with("tracelab_session"))
    );
}

#[tokio::test]
async fn review_posts_need_the_sessions_csrf_token() {
    let (app, source) = app();
    let (session, csrf) = sign_in(&app, "review-token").await;
    let (_, other_csrf) = sign_in(&app, "review-token").await;
    for form in [
        "reason=ok".to_string(),
        "csrf=&reason=ok".to_string(),
        "csrf=wrong&reason=ok".to_string(),
        format!("csrf={other_csrf}&reason=ok"),
    ] {
        let res = send(
            &app,
            post(&format!("{VERIFIED}/approve"), Some(&session), &form),
        )
        .await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{form}");
    }
    // A right token from a cross-site form is refused too.
    let mut req = post(
        &format!("{VERIFIED}/approve"),
        Some(&session),
        &format!("csrf={csrf}"),
    );
    req.headers_mut()
        .insert("sec-fetch-site", "cross-site".parse().unwrap());
    assert_eq!(send(&app, req).await.status(), StatusCode::FORBIDDEN);
    assert!(source.reviews().is_empty());
    // Without a session a post goes to sign-in and changes nothing.
    let res = send(
        &app,
        post(
            &format!("{VERIFIED}/approve"),
            None,
            &format!("csrf={csrf}"),
        ),
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert!(source.reviews().is_empty());
}

#[tokio::test]
async fn a_reader_cannot_review() {
    let (app, source) = app();
    let (session, csrf) = sign_in(&app, "read-token").await;
    let page = body(send(&app, get(VERIFIED, Some(&session))).await).await;
    assert!(!page.contains("/approve") && !page.contains("<button class=\"reject\""));
    for action in ["approve", "reject"] {
        let res = send(
            &app,
            post(
                &format!("{VERIFIED}/{action}"),
                Some(&session),
                &format!("csrf={csrf}"),
            ),
        )
        .await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN);
    }
    assert!(source.reviews().is_empty());
}

#[tokio::test]
async fn approving_calls_the_source_and_returns_to_the_page() {
    let (app, source) = app();
    let (session, csrf) = sign_in(&app, "review-token").await;
    let res = send(
        &app,
        post(
            &format!("{VERIFIED}/approve"),
            Some(&session),
            &format!("csrf={csrf}&reason=revert+looks+right+%3Cb%3E"),
        ),
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&res), VERIFIED);
    assert_eq!(
        source.reviews(),
        vec![Review {
            id: "0190a1b2-0000-7000-8000-00000000aa01".into(),
            approve: true,
            reviewer: "rita".into(),
            reason: Some("revert looks right <b>".into()),
        }]
    );
    let page = body(send(&app, get(VERIFIED, Some(&session))).await).await;
    let t = text(&page);
    assert!(t.contains("APPROVED"));
    assert!(
        t.contains("Approved at") && t.contains("approved by rita: revert looks right <b>"),
        "{t}"
    );
    assert!(!page.contains("<b>"));
    // Deciding again is a conflict, shown as such.
    let res = send(
        &app,
        post(
            &format!("{VERIFIED}/reject"),
            Some(&session),
            &format!("csrf={csrf}"),
        ),
    )
    .await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    assert_eq!(source.reviews().len(), 1);

    // Rejecting another, with no reason.
    let other = "/investigations/0190a1b2-0000-7000-8000-00000000aa02";
    let res = send(
        &app,
        post(
            &format!("{other}/reject"),
            Some(&session),
            &format!("csrf={csrf}&reason=+"),
        ),
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let last = source.reviews().pop().unwrap();
    assert!(!last.approve && last.reason.is_none());
}

#[tokio::test]
async fn signing_out_ends_the_session() {
    let (app, _) = app();
    let (session, csrf) = sign_in(&app, "review-token").await;
    let res = send(&app, post("/logout", Some(&session), "csrf=wrong")).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let res = send(
        &app,
        post("/logout", Some(&session), &format!("csrf={csrf}")),
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&res), "/login");
    assert!(set_cookies(&res)[0].contains("Max-Age=0"));
    let res = send(&app, get("/investigations", Some(&session))).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
}

#[tokio::test(start_paused = true)]
async fn sessions_end_after_their_lifetime() {
    let (app, _) = app();
    let (session, _) = sign_in(&app, "review-token").await;
    tokio::time::advance(Duration::from_secs(8 * 3600 - 1)).await;
    assert_eq!(
        send(&app, get("/investigations", Some(&session)))
            .await
            .status(),
        StatusCode::OK
    );
    tokio::time::advance(Duration::from_secs(2)).await;
    assert_eq!(
        send(&app, get("/investigations", Some(&session)))
            .await
            .status(),
        StatusCode::SEE_OTHER
    );
}

#[tokio::test]
async fn the_list_filters_counts_and_refreshes() {
    let (app, _) = app();
    let (session, _) = sign_in(&app, "review-token").await;
    let res = send(&app, get("/investigations", Some(&session))).await;
    assert_eq!(res.status(), StatusCode::OK);
    let csp = res.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(csp.contains("default-src 'none'") && csp.contains("form-action 'self'"));
    assert_eq!(res.headers()[header::CACHE_CONTROL], "no-store");
    let html = body(res).await;
    let t = text(&html);
    // Newest first: the running one was created last.
    let running = html.find("0000000000ff").unwrap();
    let verified = html.find("00000000aa01").unwrap();
    assert!(running < verified);
    assert!(t.contains("all 5"), "{t}");
    assert!(
        t.contains("WAITING_FOR_REVIEW 3") && t.contains("FAILED 1") && t.contains("VERIFYING 1")
    );
    assert!(html.contains(r#"<meta http-equiv="refresh" content="5">"#));

    let html = body(
        send(
            &app,
            get(
                "/investigations?state=WAITING_FOR_REVIEW&verdict=regression&repository=",
                Some(&session),
            ),
        )
        .await,
    )
    .await;
    assert_eq!(
        html.matches("<tr><td class=\"nowrap\">").count(),
        2,
        "{html}"
    );
    assert!(!html.contains("http-equiv"), "nothing running in this list");
    // The counts cover every state within the other filters.
    let t = text(&html);
    assert!(
        t.contains("all 2") && t.contains("WAITING_FOR_REVIEW 2"),
        "{t}"
    );
    assert!(html.contains(r#"<option value="regression" selected>"#));

    let res = send(&app, get("/investigations?state=NOPE", Some(&session))).await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn an_unknown_investigation_is_not_found() {
    let (app, _) = app();
    let (session, _) = sign_in(&app, "review-token").await;
    let res = send(
        &app,
        get("/investigations/nope%3Cscript%3E", Some(&session)),
    )
    .await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let html = body(res).await;
    assert!(!html.contains("<script") && html.contains("nope&lt;script&gt;"));
}

#[tokio::test]
async fn the_stylesheet_is_served() {
    let (app, _) = app();
    let res = send(&app, get("/dashboard.css", None)).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.headers()[header::CONTENT_TYPE],
        "text/css; charset=utf-8"
    );
    assert!(body(res).await.contains("pre.diff .add"));
}

/// A host merges the dashboard beside its own routes; both keep working.
#[tokio::test]
async fn merges_into_a_host_router() {
    let source: Arc<dyn DashboardSource> = Arc::new(MemorySource::new(vec![flaky()]));
    let host = Router::new()
        .route("/api/investigations", axum::routing::get(|| async { "[]" }))
        .merge(router(source, Arc::new(Tokens)));
    let res = send(&host, get("/api/investigations", None)).await;
    assert_eq!(body(res).await, "[]");
    let res = send(&host, get("/investigations", None)).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    // The host's own routes do not get the dashboard's headers.
    let res = send(&host, get("/api/investigations", None)).await;
    assert!(res.headers().get("content-security-policy").is_none());
}

/// The default settings, as `router` uses them.
#[tokio::test]
async fn router_uses_default_settings() {
    let source: Arc<dyn DashboardSource> = Arc::new(MemorySource::new(vec![]));
    let app = router(source, Arc::new(Tokens));
    let (session, _) = sign_in(&app, "read-token").await;
    let html = body(send(&app, get("/investigations", Some(&session))).await).await;
    assert!(text(&html).contains("No investigations match."));
}

#[tokio::test]
async fn a_bearer_token_reads_pages_but_cannot_post_a_review() {
    let (app, source) = app();
    let bearer = |path: &str, token: &str| {
        Request::get(path)
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .body(Body::empty())
            .unwrap()
    };
    let res = send(&app, bearer("/investigations", "review-token")).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(text(&body(res).await).contains("rita"));
    // An unknown token is no sign-in: back to the form.
    let res = send(&app, bearer("/investigations", "wrong-token")).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert!(location(&res).starts_with("/login"), "{}", location(&res));
    // The page's CSRF token belongs to that one request: posting it back
    // with the same bearer token is refused, and nothing is recorded.
    let page = body(send(&app, bearer(VERIFIED, "review-token")).await).await;
    let csrf = page
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a review form with its CSRF token")
        .to_string();
    let res = send(
        &app,
        Request::post(format!("{VERIFIED}/approve"))
            .header(header::AUTHORIZATION, "Bearer review-token")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(format!("csrf={csrf}")))
            .unwrap(),
    )
    .await;
    assert_ne!(res.status(), StatusCode::SEE_OTHER, "a review was accepted");
    assert!(source.reviews().is_empty());
}

#[tokio::test]
async fn a_token_in_the_link_signs_in_and_leaves_the_address_bar() {
    let (app, _source) = app();
    let res = send(
        &app,
        get("/investigations?state=FAILED&token=read-token", None),
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&res), "/investigations?state=FAILED");
    let cookie = set_cookies(&res)
        .into_iter()
        .find(|c| c.starts_with("tracelab_session="))
        .expect("a session cookie");
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));
    let session = cookie.split(';').next().unwrap().to_string();
    let res = send(&app, get("/investigations?state=FAILED", Some(&session))).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(text(&body(res).await).contains("vic"));
    // A token that is not accepted goes to the sign-in form, without it.
    let res = send(&app, get("/investigations?token=nope", None)).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert!(
        location(&res).starts_with("/login?next="),
        "{}",
        location(&res)
    );
    assert!(!location(&res).contains("nope"));
}

#[tokio::test]
async fn an_approved_investigation_opens_its_pull_request_from_the_page() {
    let source = Arc::new(
        MemorySource::new(vec![regression_verified(), regression_unverified()])
            .with_pull_requests(),
    );
    let app = router(source.clone(), Arc::new(Tokens));
    let (session, csrf) = sign_in(&app, "review-token").await;
    let open = |csrf: &str, path: &str| {
        post(
            &format!("{path}/pull-request"),
            Some(&session),
            &format!("csrf={csrf}"),
        )
    };

    // Not approved: no button, and a post is a 409 that opens nothing.
    let page = body(send(&app, get(VERIFIED, Some(&session))).await).await;
    assert!(!page.contains("button class=\"open-pr\""), "{page}");
    let res = send(&app, open(&csrf, VERIFIED)).await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    assert!(text(&body(res).await).contains("not APPROVED"));
    // Unknown: 404. Without the session's CSRF token: 403.
    let res = send(&app, open(&csrf, "/investigations/nope")).await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let res = send(&app, open("forged", VERIFIED)).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(source.pull_requests_created(), 0);

    let res = send(
        &app,
        post(
            &format!("{VERIFIED}/approve"),
            Some(&session),
            &format!("csrf={csrf}"),
        ),
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let page = body(send(&app, get(VERIFIED, Some(&session))).await).await;
    assert!(
        page.contains(&format!(r#"action="{VERIFIED}/pull-request""#)),
        "{page}"
    );
    assert!(text(&page).contains("Open draft pull request"));

    // The code host is down: 503 with its words, stored, offered again.
    source.fail_next_pull_request(tracelab_domain::Error::unavailable(
        "GitHub answered 502 Bad Gateway",
    ));
    let res = send(&app, open(&csrf, VERIFIED)).await;
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    let t = text(&body(res).await);
    assert!(
        t.contains("GitHub answered 502") && t.contains("try again"),
        "{t}"
    );
    let page = text(&body(send(&app, get(VERIFIED, Some(&session))).await).await);
    assert!(
        page.contains("Opening the pull request failed: unavailable: GitHub answered 502"),
        "{page}"
    );
    assert!(
        page.contains("Retry: open the draft pull request"),
        "{page}"
    );

    // The retry opens it; the page links it and offers no button; again is the same one.
    let res = send(&app, open(&csrf, VERIFIED)).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&res), VERIFIED);
    let page = body(send(&app, get(VERIFIED, Some(&session))).await).await;
    assert!(
        page.contains(r#"href="https://github.example/acme/shop/pull/1""#),
        "{page}"
    );
    assert!(!page.contains("open-pr"), "{page}");
    let res = send(&app, open(&csrf, VERIFIED)).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(source.pull_requests_created(), 1);
}

#[tokio::test]
async fn readers_and_hosts_without_a_code_host_cannot_open_pull_requests() {
    let mut approved = regression_verified();
    approved.state = InvestigationState::Approved;
    let source = Arc::new(MemorySource::new(vec![approved.clone()]).with_pull_requests());
    let app = router(source.clone(), Arc::new(Tokens));
    let (session, csrf) = sign_in(&app, "read-token").await;
    let page = body(send(&app, get(VERIFIED, Some(&session))).await).await;
    assert!(!page.contains("open-pr"));
    assert!(text(&page).contains("a reviewer can open the draft pull request"));
    let res = send(
        &app,
        post(
            &format!("{VERIFIED}/pull-request"),
            Some(&session),
            &format!("csrf={csrf}"),
        ),
    )
    .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(source.pull_requests_created(), 0);

    // A host with no code host configured says so instead of a button.
    let html = crate::pages::detail(&crate::pages::Detail {
        viewer: &reviewer(),
        csrf: "x",
        summary: &summary_of(&approved),
        transitions: &approved.transitions,
        report: Some(&approved),
        hand_off: Some(&Default::default()),
        opens_pull_requests: false,
        webhooks: &[],
    })
    .into_string();
    assert!(!html.contains("open-pr"));
    assert!(text(&html).contains("no code host configured"));
}

#[tokio::test]
async fn the_groups_page_shows_counts_over_time_and_linked_investigations() {
    let mut hot = group(
        "k-hot",
        "AssertionError in test_total <b>",
        "open",
        vec![0, 1, 0, 4, 2],
        9_000,
    );
    hot.investigations = vec![(
        "0190a1b2-0000-7000-8000-00000000aa01".into(),
        "APPROVED".into(),
    )];
    let mut groups: Vec<GroupRow> = vec![
        hot,
        group(
            "k-fixed",
            "KeyError: 'sku'",
            "resolved",
            vec![3, 0, 0, 0, 0],
            8_000,
        ),
    ];
    for i in 0..3 {
        groups.push(group(
            &format!("k-{i}"),
            &format!("old failure {i}"),
            "open",
            vec![0; 5],
            7_000 - i,
        ));
    }
    let source = Arc::new(MemorySource::new(vec![regression_verified()]).with_groups(groups));
    let app = router(source, Arc::new(Tokens));

    let res = send(&app, get("/groups", None)).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "needs a session");
    let (session, _) = sign_in(&app, "read-token").await;
    let page = body(send(&app, get("/groups?limit=2", Some(&session))).await).await;
    let t = text(&page);
    assert!(t.contains("AssertionError in test_total <b>"), "{t}");
    assert!(!page.contains("test_total <b>"), "escaped");
    assert_eq!(
        page.matches("<svg class=\"sparkline\"").count(),
        2,
        "{page}"
    );
    assert_eq!(
        page.matches("class=\"day\"").count(),
        4,
        "a bar per day with evidence: {page}"
    );
    assert!(
        page.contains("7 in the last 5 days: 0, 1, 0, 4, 2"),
        "{page}"
    );
    assert!(
        page.contains(r#"href="/investigations/0190a1b2-0000-7000-8000-00000000aa01""#),
        "{page}"
    );
    assert!(page.contains(r#"href="/groups?after=k-fixed""#), "{page}");
    assert!(!t.contains("old failure 0"));

    let page = body(send(&app, get("/groups?after=k-fixed&limit=2", Some(&session))).await).await;
    let t = text(&page);
    assert!(
        t.contains("old failure 0") && t.contains("old failure 1") && !t.contains("KeyError"),
        "{t}"
    );
    let page = body(send(&app, get("/groups?state=resolved", Some(&session))).await).await;
    let t = text(&page);
    assert!(
        t.contains("KeyError") && !t.contains("AssertionError"),
        "{t}"
    );
    assert!(!page.contains("Older groups"));

    let res = send(&app, get("/groups?state=closed", Some(&session))).await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_host_without_groups_says_so() {
    let (app, _) = app();
    let (session, _) = sign_in(&app, "review-token").await;
    let res = send(&app, get("/groups", Some(&session))).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(text(&body(res).await).contains("This server keeps no failure groups"));
}

#[test]
fn the_sparkline_scales_to_the_busiest_day() {
    let svg = crate::pages::sparkline(&[0, 5, 10]).into_string();
    assert_eq!(svg.matches("class=\"day\"").count(), 2);
    assert!(
        svg.contains(r#"height="26.0""#),
        "the busiest day fills the height: {svg}"
    );
    assert!(
        svg.contains(r#"height="13.0""#),
        "half as busy, half as tall: {svg}"
    );
    let empty = crate::pages::sparkline(&[0, 0]).into_string();
    assert!(!empty.contains("class=\"day\""));
}

#[test]
fn webhook_deliveries_are_listed_escaped() {
    let report = regression_verified();
    let attempts = [
        tracelab_domain::webhook::WebhookDelivery {
            investigation_id: "inv-1".into(),
            event: "approved".into(),
            delivery_id: "d-1".into(),
            url: "https://hooks.example/<x>".into(),
            attempt: 1,
            delivered: false,
            http_status: Some(500),
            error: Some("the receiver answered HTTP 500".into()),
            at: Some(at(100)),
        },
        tracelab_domain::webhook::WebhookDelivery {
            investigation_id: "inv-1".into(),
            event: "approved".into(),
            delivery_id: "d-1".into(),
            url: "https://hooks.example/<x>".into(),
            attempt: 2,
            delivered: true,
            http_status: Some(204),
            error: None,
            at: Some(at(101)),
        },
    ];
    let page = |w: &[tracelab_domain::webhook::WebhookDelivery]| {
        crate::pages::detail(&crate::pages::Detail {
            viewer: &reviewer(),
            csrf: "x",
            summary: &summary_of(&report),
            transitions: &report.transitions,
            report: Some(&report),
            hand_off: None,
            opens_pull_requests: false,
            webhooks: w,
        })
        .into_string()
    };
    let html = page(&attempts);
    let t = text(&html);
    assert!(
        t.contains("failed (HTTP 500): the receiver answered HTTP 500"),
        "{t}"
    );
    assert!(t.contains("delivered (HTTP 204)"), "{t}");
    assert!(!html.contains("/<x>"), "escaped");
    assert!(!page(&[]).contains("id=\"webhooks\""));
}
