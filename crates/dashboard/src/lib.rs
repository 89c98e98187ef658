//! The review dashboard: server-rendered HTML pages over investigations, for
//! people who will not read JSON.
//!
//! A host (the fleet's investigator over PostgreSQL, `tracelab serve` over
//! SQLite) implements [`DashboardSource`] over its store and
//! [`Authenticator`] over its tokens, and merges [`router`] into its axum
//! app. A request travels: cookie → in-memory session (else a 303 to
//! `/login`) → the source → domain values ([`Report`], [`InvestigationSummary`],
//! [`Transition`]) → `pages` (maud templates, escaped by default) → HTML. A
//! review form post additionally checks the session's CSRF token and the
//! viewer's review right before calling [`DashboardSource::review`] (or
//! [`DashboardSource::open_pull_request`] for an approved one).
//!
//! No JavaScript: every page works with forms and links alone; a running
//! investigation's pages reload themselves with `<meta http-equiv=refresh>`.
//!
//! [`Report`]: tracelab_domain::report::Report
//! [`InvestigationSummary`]: tracelab_domain::report::InvestigationSummary
//! [`Transition`]: tracelab_domain::state::Transition

mod auth;
mod pages;
mod routes;
mod source;

pub use auth::{Authenticator, Viewer};
pub use source::{DashboardSource, GroupFilter, GroupRow, GroupsPage, ListFilter};

use axum::Router;
use axum::routing::{get, post};
use std::sync::Arc;
use std::time::Duration;

/// How the dashboard's sessions behave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// A session ends this long after sign-in.
    pub session_ttl: Duration,
    /// Sessions kept at most; signing in past it ends the oldest.
    pub max_sessions: usize,
    /// Mark cookies `Secure` (the host serves HTTPS, directly or behind a proxy).
    pub secure_cookie: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            session_ttl: Duration::from_secs(8 * 60 * 60),
            max_sessions: 10_000,
            secure_cookie: false,
        }
    }
}

/// The dashboard with default [`Settings`]: merge it into the host's router
/// at the root (its paths are absolute: `/`, `/login`, `/logout`,
/// `/dashboard.css`, `/investigations...`).
pub fn router(source: Arc<dyn DashboardSource>, auth: Arc<dyn Authenticator>) -> Router {
    router_with(source, auth, Settings::default())
}

/// [`router`] with explicit [`Settings`].
pub fn router_with(
    source: Arc<dyn DashboardSource>,
    auth: Arc<dyn Authenticator>,
    settings: Settings,
) -> Router {
    let app = Arc::new(routes::App {
        source,
        auth,
        sessions: auth::Sessions::new(settings.session_ttl, settings.max_sessions),
        secure_cookie: settings.secure_cookie,
    });
    Router::new()
        .route("/", get(routes::root))
        .route("/dashboard.css", get(routes::css))
        .route("/login", get(routes::login_form).post(routes::login_submit))
        .route("/logout", post(routes::logout))
        .route("/investigations", get(routes::list))
        .route("/groups", get(routes::groups))
        .route("/investigations/{id}", get(routes::show))
        .route("/investigations/{id}/approve", post(routes::approve))
        .route("/investigations/{id}/reject", post(routes::reject))
        .route(
            "/investigations/{id}/pull-request",
            post(routes::pull_request),
        )
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            routes::token_in_query,
        ))
        .layer(axum::middleware::map_response(routes::security_headers))
        .with_state(app)
}

#[cfg(test)]
mod tests;
