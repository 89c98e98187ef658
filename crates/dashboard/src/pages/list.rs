//! `/investigations`: newest first, filters, counts per state.

use super::{
    Chrome, VERDICTS, fmt_time, investigation_href, is_running, page, path_segment, state_badge,
    verdict_badge,
};
use crate::auth::Viewer;
use crate::source::ListFilter;
use maud::{Markup, html};
use tracelab_domain::report::InvestigationSummary;
use tracelab_domain::state::InvestigationState;

/// Seconds between reloads while an investigation is running.
const REFRESH_SECONDS: u32 = 5;

pub(crate) struct ListPage<'a> {
    pub viewer: &'a Viewer,
    pub csrf: &'a str,
    pub filter: &'a ListFilter,
    pub items: &'a [InvestigationSummary],
    /// How many of the newest `filter.limit` investigations matching every
    /// filter but the state are in each state (states with none left out).
    pub counts: &'a [(InvestigationState, usize)],
}

/// `/investigations?state=..&verdict=..&repository=..` with the given values.
fn list_href(state: Option<&str>, verdict: Option<&str>, repository: Option<&str>) -> String {
    let pairs: Vec<String> = [
        ("state", state),
        ("verdict", verdict),
        ("repository", repository),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| format!("{k}={}", path_segment(v))))
    .collect();
    if pairs.is_empty() {
        "/investigations".into()
    } else {
        format!("/investigations?{}", pairs.join("&"))
    }
}

pub(crate) fn list(p: &ListPage<'_>) -> Markup {
    let f = p.filter;
    let running = p.items.iter().any(|s| is_running(s.state));
    let chrome = Chrome {
        viewer: Some(p.viewer),
        csrf: Some(p.csrf),
        refresh: running.then_some(REFRESH_SECONDS),
    };
    let total: usize = p.counts.iter().map(|(_, n)| n).sum();
    let body = html! {
        h1 { "Investigations" }
        nav.counts aria-label="Counts per state" {
            a.chip.current[f.state.is_none()]
                href=(list_href(None, f.verdict.as_deref(), f.repository.as_deref())) {
                "all " span.n { (total) }
            }
            @for (state, n) in p.counts {
                a.chip.current[f.state.as_deref() == Some(state.as_str())]
                    href=(list_href(Some(state.as_str()), f.verdict.as_deref(), f.repository.as_deref())) {
                    (state.as_str()) " " span.n { (n) }
                }
            }
        }
        form.filters method="get" action="/investigations" {
            label {
                "State "
                select name="state" {
                    option value="" { "any" }
                    @for state in InvestigationState::ALL {
                        option value=(state.as_str()) selected[f.state.as_deref() == Some(state.as_str())] {
                            (state.as_str())
                        }
                    }
                }
            }
            label {
                "Verdict "
                select name="verdict" {
                    option value="" { "any" }
                    @for verdict in VERDICTS {
                        option value=(verdict.as_str()) selected[f.verdict.as_deref() == Some(verdict.as_str())] {
                            (verdict.as_str())
                        }
                    }
                }
            }
            label {
                "Repository "
                input type="text" name="repository" value=[f.repository.as_deref()]
                    placeholder="exact name";
            }
            button type="submit" { "Filter" }
            " "
            a href="/investigations" { "clear" }
        }
        @if running {
            p.muted.refreshing { "Something is running: this page reloads every " (REFRESH_SECONDS) " s." }
        }
        @if p.items.is_empty() {
            p.empty { "No investigations match." }
        } @else {
            table.list {
                thead {
                    tr {
                        th { "Created" } th { "Investigation" } th { "Repository" } th { "Test" }
                        th { "State" } th { "Verdict" } th { "Culprit" }
                    }
                }
                tbody {
                    @for s in p.items {
                        tr {
                            td.nowrap { (fmt_time(s.created_at)) }
                            td { a.id href=(investigation_href(&s.id.0)) title=(s.id.0) { (s.id.short()) } }
                            td {
                                a href=(list_href(f.state.as_deref(), f.verdict.as_deref(), Some(&s.repository))) {
                                    (s.repository)
                                }
                            }
                            td { code { (s.test_command) } }
                            td { (state_badge(s.state)) }
                            td { (verdict_badge(s.verdict)) }
                            td.nowrap { @if let Some(c) = &s.culprit { code { (c) } } }
                        }
                    }
                }
            }
            @if p.items.len() >= f.limit as usize {
                p.muted { "Showing the newest " (f.limit) "; narrow the filters to see older ones." }
            }
        }
    };
    page("Investigations", &chrome, body)
}
