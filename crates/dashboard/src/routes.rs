//! The HTTP surface: sign-in, pages, review posts. Handlers check the
//! session, ask the source, and hand domain values to [`crate::pages`].

use crate::auth::{
    Authenticator, LOGIN_COOKIE, LOGIN_FORM_TTL, SESSION_COOKIE, Session, Sessions, cookie,
    random_token, same_secret, set_cookie,
};
use crate::pages::{self, Chrome};
use crate::source::{DashboardSource, GroupFilter, ListFilter};
use axum::extract::{Form, Path, Query, State};
use axum::http::header::{
    AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, COOKIE, REFERRER_POLICY, SET_COOKIE,
    X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{AppendHeaders, IntoResponse, Redirect, Response};
use maud::Markup;
use serde::Deserialize;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
use tracelab_domain::report::InvestigationSummary;
use tracelab_domain::state::InvestigationState;

pub(crate) struct App {
    pub source: Arc<dyn DashboardSource>,
    pub auth: Arc<dyn Authenticator>,
    pub sessions: Sessions,
    pub secure_cookie: bool,
}

type AppState = State<Arc<App>>;

/// Investigations listed when the query names no limit, and the most it may ask for.
const DEFAULT_LIMIT: u32 = 100;
const MAX_LIMIT: u32 = 500;
/// The longest review reason kept.
const MAX_REASON_CHARS: usize = 2000;

/// Pages may only load our own stylesheet; no scripts, frames or foreign forms.
const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self' data:; \
                   form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

pub(crate) async fn security_headers(mut res: Response) -> Response {
    let h = res.headers_mut();
    h.entry(CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    h.insert("content-security-policy", HeaderValue::from_static(CSP));
    h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    h.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    res
}

fn html(status: StatusCode, markup: Markup) -> Response {
    (
        status,
        [(CONTENT_TYPE, "text/html; charset=utf-8")],
        markup.into_string(),
    )
        .into_response()
}

fn error_page(
    status: StatusCode,
    title: &str,
    message: &str,
    session: Option<&Session>,
) -> Response {
    let chrome = Chrome {
        viewer: session.map(|s| &s.viewer),
        csrf: session.map(|s| s.csrf.as_str()),
        refresh: None,
    };
    html(status, pages::error(title, message, &chrome))
}

/// A source failure as a page; the kind decides the status.
fn source_error(e: tracelab_domain::Error, session: &Session) -> Response {
    use tracelab_domain::ErrorKind::*;
    tracing::warn!(kind = e.kind.name(), error = %e, "dashboard source failed");
    let status =
        StatusCode::from_u16(e.kind.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let message = match e.kind {
        InvalidArgument | NotFound | Conflict | PermissionDenied => e.message.clone(),
        // Internal details (database errors) stay in the log.
        Unavailable | Timeout | Internal => {
            "The investigation store did not answer. Try again in a moment.".to_string()
        }
    };
    error_page(status, "Could not complete that", &message, Some(session))
}

fn random_failed(e: getrandom::Error) -> Response {
    tracing::error!(error = %e, "no randomness for a session or form token");
    error_page(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Sign-in unavailable",
        "The server could not create a secure token.",
        None,
    )
}

/// The live session named by the request's cookie, else a read-only one
/// for a valid `Authorization: Bearer` token (as the API accepts).
fn current(app: &App, headers: &HeaderMap) -> Option<Session> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|h| cookie(h, SESSION_COOKIE))
        .and_then(|id| app.sessions.get(id))
        .or_else(|| {
            let token = headers
                .get(AUTHORIZATION)?
                .to_str()
                .ok()?
                .strip_prefix("Bearer ")?
                .trim();
            Session::for_one_request(app.auth.check(token)?)
        })
}

/// The session, or a 303 to the sign-in page that comes back to `uri`.
fn require(app: &App, headers: &HeaderMap, uri: &Uri) -> Result<Session, Redirect> {
    current(app, headers).ok_or_else(|| {
        let back = uri
            .path_and_query()
            .map_or("/investigations", |p| p.as_str());
        Redirect::to(&format!("/login?next={}", pages::path_segment(back)))
    })
}

/// A form posted from another site, as the browser reports it. Browsers
/// that send no `Sec-Fetch-Site` still need the CSRF token.
fn cross_site(headers: &HeaderMap) -> bool {
    matches!(
        headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()),
        Some("cross-site" | "same-site")
    )
}

/// Where to go after signing in: a path on this site, else the list.
fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n)
            if n.starts_with('/')
                && !n.starts_with("//")
                && !n.starts_with("/\\")
                && !n.chars().any(char::is_control) =>
        {
            n.to_string()
        }
        _ => "/investigations".to_string(),
    }
}

pub(crate) async fn root() -> Redirect {
    Redirect::to("/investigations")
}

pub(crate) async fn css() -> Response {
    (
        [
            (CONTENT_TYPE, "text/css; charset=utf-8"),
            (CACHE_CONTROL, "public, max-age=86400"),
        ],
        pages::CSS,
    )
        .into_response()
}

#[derive(Deserialize)]
pub(crate) struct LoginQuery {
    next: Option<String>,
}

/// The sign-in form with a fresh form nonce, also set as a cookie.
fn login_page(app: &App, next: &str, problem: Option<&str>, status: StatusCode) -> Response {
    let nonce = match random_token() {
        Ok(n) => n,
        Err(e) => return random_failed(e),
    };
    let cookie = set_cookie(
        LOGIN_COOKIE,
        &nonce,
        "/login",
        LOGIN_FORM_TTL,
        app.secure_cookie,
    );
    (
        AppendHeaders([(SET_COOKIE, cookie)]),
        html(status, pages::login(&nonce, next, problem)),
    )
        .into_response()
}

pub(crate) async fn login_form(
    State(app): AppState,
    headers: HeaderMap,
    Query(q): Query<LoginQuery>,
) -> Response {
    let next = safe_next(q.next.as_deref());
    if current(&app, &headers).is_some() {
        return Redirect::to(&next).into_response();
    }
    login_page(&app, &next, None, StatusCode::OK)
}

#[derive(Deserialize)]
pub(crate) struct LoginForm {
    #[serde(default)]
    token: String,
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    next: String,
}

pub(crate) async fn login_submit(
    State(app): AppState,
    headers: HeaderMap,
    Form(f): Form<LoginForm>,
) -> Response {
    let next = safe_next(Some(&f.next));
    let nonce = headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|h| cookie(h, LOGIN_COOKIE));
    if cross_site(&headers) || !nonce.is_some_and(|n| same_secret(n, &f.csrf)) {
        return login_page(
            &app,
            &next,
            Some("This sign-in form expired or came from another site. Please sign in again."),
            StatusCode::FORBIDDEN,
        );
    }
    let Some(viewer) = app.auth.check(f.token.trim()) else {
        tracing::info!("dashboard sign-in refused");
        return login_page(
            &app,
            &next,
            Some("That token was not accepted."),
            StatusCode::UNAUTHORIZED,
        );
    };
    tracing::info!(viewer = %viewer.name, can_review = viewer.can_review, "dashboard sign-in");
    let session = match new_session(&app, viewer) {
        Ok(cookie) => cookie,
        Err(e) => return random_failed(e),
    };
    let used = set_cookie(
        LOGIN_COOKIE,
        "",
        "/login",
        Duration::ZERO,
        app.secure_cookie,
    );
    (
        AppendHeaders([(SET_COOKIE, session), (SET_COOKIE, used)]),
        Redirect::to(&next),
    )
        .into_response()
}

/// `GET <any page>?token=T` signs in with `T` (the link `tracelab serve`
/// prints, as Jupyter's does) and redirects to the same page without the
/// token, so it leaves the address bar and the history at once. A token
/// that is not accepted goes to the sign-in form instead.
pub(crate) async fn token_in_query(
    State(app): AppState,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let Some(query) = request
        .uri()
        .query()
        .filter(|_| request.method() == axum::http::Method::GET)
    else {
        return next.run(request).await;
    };
    let Ok(pairs) = serde_urlencoded::from_str::<Vec<(String, String)>>(query) else {
        return next.run(request).await;
    };
    let Some(token) = pairs
        .iter()
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.clone())
    else {
        return next.run(request).await;
    };
    let rest: Vec<&(String, String)> = pairs.iter().filter(|(k, _)| k != "token").collect();
    let mut page = request.uri().path().to_string();
    if !rest.is_empty() {
        page.push('?');
        page.push_str(&serde_urlencoded::to_string(&rest).unwrap_or_default());
    }
    let page = safe_next(Some(&page));
    let Some(viewer) = app.auth.check(token.trim()) else {
        tracing::info!("dashboard sign-in by link refused");
        return Redirect::to(&format!("/login?next={}", pages::path_segment(&page)))
            .into_response();
    };
    tracing::info!(viewer = %viewer.name, can_review = viewer.can_review, "dashboard sign-in by link");
    match new_session(&app, viewer) {
        Ok(session) => {
            (AppendHeaders([(SET_COOKIE, session)]), Redirect::to(&page)).into_response()
        }
        Err(e) => random_failed(e),
    }
}

/// A new session for `viewer`, as the `Set-Cookie` value that carries it.
fn new_session(app: &App, viewer: crate::Viewer) -> Result<String, getrandom::Error> {
    let (id, _) = app.sessions.create(viewer)?;
    Ok(set_cookie(
        SESSION_COOKIE,
        &id,
        "/",
        app.sessions.ttl(),
        app.secure_cookie,
    ))
}

#[derive(Deserialize)]
pub(crate) struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

pub(crate) async fn logout(
    State(app): AppState,
    headers: HeaderMap,
    Form(f): Form<CsrfForm>,
) -> Response {
    let Some(id) = headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|h| cookie(h, SESSION_COOKIE))
    else {
        return Redirect::to("/login").into_response();
    };
    let Some(session) = app.sessions.get(id) else {
        return Redirect::to("/login").into_response();
    };
    if cross_site(&headers) || !same_secret(&session.csrf, &f.csrf) {
        return forbidden_form(&session);
    }
    app.sessions.remove(id);
    let clear = set_cookie(SESSION_COOKIE, "", "/", Duration::ZERO, app.secure_cookie);
    (AppendHeaders([(SET_COOKIE, clear)]), Redirect::to("/login")).into_response()
}

fn forbidden_form(session: &Session) -> Response {
    error_page(
        StatusCode::FORBIDDEN,
        "Form refused",
        "The form was stale or came from another site. Reload the page and try again.",
        Some(session),
    )
}

#[derive(Deserialize, Default)]
pub(crate) struct ListQuery {
    state: Option<String>,
    verdict: Option<String>,
    repository: Option<String>,
    limit: Option<u32>,
}

/// A form field: blank means "not given".
fn given(value: Option<String>) -> Option<String> {
    value
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

pub(crate) async fn list(
    State(app): AppState,
    headers: HeaderMap,
    uri: Uri,
    Query(q): Query<ListQuery>,
) -> Response {
    let session = match require(&app, &headers, &uri) {
        Ok(s) => s,
        Err(redirect) => return redirect.into_response(),
    };
    let filter = ListFilter {
        state: given(q.state),
        verdict: given(q.verdict),
        repository: given(q.repository),
        limit: q.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT),
    };
    if let Some(state) = &filter.state
        && InvestigationState::from_str(state).is_err()
    {
        return error_page(
            StatusCode::BAD_REQUEST,
            "Unknown state",
            &format!("There is no state {state:?}."),
            Some(&session),
        );
    }
    if let Some(verdict) = &filter.verdict
        && !pages::VERDICTS.iter().any(|v| v.as_str() == verdict)
    {
        return error_page(
            StatusCode::BAD_REQUEST,
            "Unknown verdict",
            &format!("There is no verdict {verdict:?}."),
            Some(&session),
        );
    }
    // The counts cover every state, so they need the list without the state filter.
    let unfiltered = ListFilter {
        state: None,
        ..filter.clone()
    };
    let (items, all) = if filter.state.is_some() {
        let (items, all) = tokio::join!(app.source.list(&filter), app.source.list(&unfiltered));
        (items, all.map(Some))
    } else {
        (app.source.list(&filter).await, Ok(None))
    };
    let (items, all) = match (items, all) {
        (Ok(items), Ok(all)) => (items, all),
        (Err(e), _) | (_, Err(e)) => return source_error(e, &session),
    };
    let counted: &[InvestigationSummary] = all.as_deref().unwrap_or(&items);
    let counts: Vec<(InvestigationState, usize)> = InvestigationState::ALL
        .into_iter()
        .map(|st| (st, counted.iter().filter(|s| s.state == st).count()))
        .filter(|(_, n)| *n > 0)
        .collect();
    html(
        StatusCode::OK,
        pages::list(&pages::ListPage {
            viewer: &session.viewer,
            csrf: &session.csrf,
            filter: &filter,
            items: &items,
            counts: &counts,
        }),
    )
}

pub(crate) async fn show(
    State(app): AppState,
    headers: HeaderMap,
    uri: Uri,
    Path(id): Path<String>,
) -> Response {
    let session = match require(&app, &headers, &uri) {
        Ok(s) => s,
        Err(redirect) => return redirect.into_response(),
    };
    let (summary, report, hand_off, webhooks) = tokio::join!(
        app.source.summary(&id),
        app.source.report(&id),
        app.source.hand_off(&id),
        app.source.webhook_deliveries(&id)
    );
    let (summary, report, hand_off, webhooks) = match (summary, report, hand_off, webhooks) {
        (Ok(summary), Ok(report), Ok(hand_off), Ok(webhooks)) => {
            (summary, report, hand_off, webhooks)
        }
        (Err(e), ..) | (_, Err(e), ..) | (_, _, Err(e), _) | (.., Err(e)) => {
            return source_error(e, &session);
        }
    };
    // A host whose summary lags its reports still shows the report.
    let (summary, transitions) = match (summary, &report) {
        (Some(found), _) => found,
        (None, Some(r)) => (
            InvestigationSummary {
                id: r.id.clone(),
                state: r.state,
                verdict: Some(r.verdict),
                repository: r.repository.clone(),
                test_command: r.test_command.clone(),
                culprit: r.culprit.as_ref().map(|c| c.commit.commit.clone()),
                created_at: r.created_at,
            },
            r.transitions.clone(),
        ),
        (None, None) => {
            return error_page(
                StatusCode::NOT_FOUND,
                "Not found",
                &format!("There is no investigation {id:?}."),
                Some(&session),
            );
        }
    };
    html(
        StatusCode::OK,
        pages::detail(&pages::Detail {
            viewer: &session.viewer,
            csrf: &session.csrf,
            summary: &summary,
            transitions: &transitions,
            report: report.as_ref(),
            hand_off: hand_off.as_ref(),
            opens_pull_requests: app.source.opens_pull_requests(),
            webhooks: &webhooks,
        }),
    )
}

#[derive(Deserialize)]
pub(crate) struct ReviewForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    reason: String,
}

pub(crate) async fn approve(
    State(app): AppState,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(f): Form<ReviewForm>,
) -> Response {
    review(&app, &headers, &id, f, true).await
}

pub(crate) async fn reject(
    State(app): AppState,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(f): Form<ReviewForm>,
) -> Response {
    review(&app, &headers, &id, f, false).await
}

async fn review(
    app: &App,
    headers: &HeaderMap,
    id: &str,
    f: ReviewForm,
    approve: bool,
) -> Response {
    let page = pages::investigation_href(id);
    let session = match reviewer_post(app, headers, id, &f.csrf) {
        Ok(s) => s,
        Err(res) => return *res,
    };
    let reason = f.reason.trim();
    if reason.chars().count() > MAX_REASON_CHARS {
        return error_page(
            StatusCode::BAD_REQUEST,
            "Reason too long",
            &format!("Keep the reason under {MAX_REASON_CHARS} characters."),
            Some(&session),
        );
    }
    let reason = (!reason.is_empty()).then_some(reason);
    match app
        .source
        .review(id, approve, &session.viewer.name, reason)
        .await
    {
        Ok(()) => {
            tracing::info!(investigation = %id, reviewer = %session.viewer.name, approve, "review recorded");
            Redirect::to(&page).into_response()
        }
        Err(e) => source_error(e, &session),
    }
}

#[derive(Deserialize, Default)]
pub(crate) struct GroupsQuery {
    state: Option<String>,
    repository: Option<String>,
    after: Option<String>,
    limit: Option<u32>,
}

/// Failure groups shown per page when the query names no limit.
const GROUPS_PER_PAGE: u32 = 50;

pub(crate) async fn groups(
    State(app): AppState,
    headers: HeaderMap,
    uri: Uri,
    Query(q): Query<GroupsQuery>,
) -> Response {
    let session = match require(&app, &headers, &uri) {
        Ok(s) => s,
        Err(redirect) => return redirect.into_response(),
    };
    let filter = GroupFilter {
        state: given(q.state),
        repository: given(q.repository),
        after: given(q.after),
        limit: q.limit.unwrap_or(GROUPS_PER_PAGE).clamp(1, MAX_LIMIT),
    };
    if let Some(state) = &filter.state
        && !matches!(state.as_str(), "open" | "resolved")
    {
        return error_page(
            StatusCode::BAD_REQUEST,
            "Unknown state",
            &format!("A failure group is open or resolved, not {state:?}."),
            Some(&session),
        );
    }
    let page = match app.source.groups(&filter).await {
        Ok(page) => page,
        Err(e) => return source_error(e, &session),
    };
    html(
        StatusCode::OK,
        pages::groups(&pages::GroupsView {
            viewer: &session.viewer,
            csrf: &session.csrf,
            filter: &filter,
            page: page.as_ref(),
        }),
    )
}

/// The session of a form post that may change an investigation: signed
/// in, the form's CSRF token, not cross-site, a reviewer. Else the
/// response to send instead (boxed: a `Response` is large).
fn reviewer_post(
    app: &App,
    headers: &HeaderMap,
    id: &str,
    csrf: &str,
) -> Result<Session, Box<Response>> {
    let page = pages::investigation_href(id);
    let Some(session) = current(app, headers) else {
        return Err(Box::new(
            Redirect::to(&format!("/login?next={}", pages::path_segment(&page))).into_response(),
        ));
    };
    if cross_site(headers) || !same_secret(&session.csrf, csrf) {
        return Err(Box::new(forbidden_form(&session)));
    }
    if !session.viewer.can_review {
        return Err(Box::new(error_page(
            StatusCode::FORBIDDEN,
            "Not a reviewer",
            "You may read investigations but not approve, reject or open pull requests.",
            Some(&session),
        )));
    }
    Ok(session)
}

/// `POST /investigations/{id}/pull-request`: the reviewer's button on an
/// approved investigation. Success returns to the page, which shows the
/// link; a failure is shown here with its status (404, 409, 503 for a code
/// host that is down, 400 for one that refused) and stays on the page,
/// where the button offers to retry.
pub(crate) async fn pull_request(
    State(app): AppState,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(f): Form<CsrfForm>,
) -> Response {
    let session = match reviewer_post(&app, &headers, &id, &f.csrf) {
        Ok(s) => s,
        Err(res) => return *res,
    };
    match app
        .source
        .open_pull_request(&id, &session.viewer.name)
        .await
    {
        Ok(link) => {
            tracing::info!(investigation = %id, by = %session.viewer.name, url = %link.url, "pull request opened from the dashboard");
            Redirect::to(&pages::investigation_href(&id)).into_response()
        }
        Err(e) => pull_request_failed(e, &id, &session),
    }
}

/// A failed pull request attempt as a page. The code host's own words are
/// shown (the code host client keeps tokens out of them); internal errors
/// stay in the log.
fn pull_request_failed(e: tracelab_domain::Error, id: &str, session: &Session) -> Response {
    use tracelab_domain::ErrorKind::*;
    tracing::warn!(investigation = %id, kind = e.kind.name(), error = %e, "opening the pull request failed");
    let status =
        StatusCode::from_u16(e.kind.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let message = match e.kind {
        NotFound | Conflict | PermissionDenied => e.message.clone(),
        InvalidArgument | Unavailable | Timeout => format!(
            "{}. The failure is stored on the investigation; nothing was opened twice, and you can try again from its page.",
            e.message.trim_end_matches('.')
        ),
        Internal => "The server failed; the details are in its log.".to_string(),
    };
    error_page(status, "No pull request", &message, Some(session))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_paths_are_followed_after_sign_in() {
        for (next, to) in [
            (Some("/investigations/abc"), "/investigations/abc"),
            (Some("//evil.example/x"), "/investigations"),
            (Some("/\\evil.example"), "/investigations"),
            (Some("https://evil.example"), "/investigations"),
            (Some("/a\nb"), "/investigations"),
            (None, "/investigations"),
        ] {
            assert_eq!(safe_next(next), to, "{next:?}");
        }
    }
}
