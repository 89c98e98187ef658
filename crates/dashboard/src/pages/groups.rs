//! `/groups`: failure groups, most recently seen first, each with its
//! evidence per day as a sparkline and the investigations that looked at it.

use super::{Chrome, fmt_time, investigation_href, page};
use crate::auth::Viewer;
use crate::source::{GroupFilter, GroupRow, GroupsPage};
use maud::{Markup, html};

pub(crate) struct GroupsView<'a> {
    pub viewer: &'a Viewer,
    pub csrf: &'a str,
    pub filter: &'a GroupFilter,
    /// `None`: this host keeps no failure groups.
    pub page: Option<&'a GroupsPage>,
}

const SPARK_W: f64 = 140.0;
const SPARK_H: f64 = 28.0;

pub(crate) fn groups(v: &GroupsView<'_>) -> Markup {
    let chrome = Chrome {
        viewer: Some(v.viewer),
        csrf: Some(v.csrf),
        refresh: None,
    };
    let body = html! {
        h1 { "Failure groups" }
        @match v.page {
            None => p.muted { "This server keeps no failure groups: the fleet's ingest service groups the failures CI reports (tracelab report)." },
            Some(p) => {
                (filters(v.filter))
                @if p.groups.is_empty() {
                    p.muted { "No failure groups match." }
                } @else {
                    table.groups {
                        thead { tr {
                            th { "failure" } th { "state" } th { "count" }
                            th { "per day" } th { "first seen" } th { "last seen" } th { "investigations" }
                        } }
                        tbody { @for g in &p.groups { (row(g)) } }
                    }
                }
                @if let Some(next) = &p.next {
                    p { a.next href=(next_href(v.filter, next)) { "Older groups →" } }
                }
            }
        }
    };
    page("Failure groups", &chrome, body)
}

fn filters(f: &GroupFilter) -> Markup {
    html! {
        form.filters method="get" action="/groups" {
            label { "State "
                select name="state" {
                    option value="" selected[f.state.is_none()] { "any" }
                    @for s in ["open", "resolved"] {
                        option value=(s) selected[f.state.as_deref() == Some(s)] { (s) }
                    }
                }
            }
            " "
            label { "Repository " input type="text" name="repository" value=[f.repository.as_deref()]; }
            " "
            button type="submit" { "Filter" }
        }
    }
}

fn next_href(f: &GroupFilter, after: &str) -> String {
    let mut q: Vec<(&str, &str)> = vec![("after", after)];
    if let Some(s) = &f.state {
        q.push(("state", s));
    }
    if let Some(r) = &f.repository {
        q.push(("repository", r));
    }
    format!(
        "/groups?{}",
        serde_urlencoded::to_string(&q).unwrap_or_default()
    )
}

fn row(g: &GroupRow) -> Markup {
    html! {
        tr {
            td {
                strong { (g.title) }
                br;
                span.muted { (g.kind) " · " (g.language) }
                @for r in &g.repositories { " · " code { (r) } }
            }
            td { span class=(format!("badge group-{}", g.state)) { (g.state) } }
            td.count { (g.count) }
            td { (sparkline(&g.daily)) }
            td { (fmt_time(g.first_seen)) }
            td { (fmt_time(g.last_seen)) }
            td {
                @if g.investigations.is_empty() { span.muted { "none" } }
                @for (id, state) in &g.investigations {
                    a.investigation href=(investigation_href(id)) title=(id) {
                        (id.chars().take(8).collect::<String>())
                    }
                    " " span.muted { (state) } br;
                }
            }
        }
    }
}

/// Evidence per day as bars, oldest left; the tallest day fills the height.
/// A text alternative gives the numbers.
pub(crate) fn sparkline(daily: &[u64]) -> Markup {
    let max = daily.iter().copied().max().unwrap_or(0).max(1) as f64;
    let n = daily.len().max(1) as f64;
    let slot = SPARK_W / n;
    let total: u64 = daily.iter().sum();
    let label = format!(
        "{total} in the last {} days: {}",
        daily.len(),
        daily
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    html! {
        svg.sparkline xmlns="http://www.w3.org/2000/svg" role="img" width=(SPARK_W) height=(SPARK_H)
            viewBox=(format!("0 0 {SPARK_W} {SPARK_H}")) {
            title { (label) }
            line.base x1="0" y1=(SPARK_H - 0.5) x2=(SPARK_W) y2=(SPARK_H - 0.5) {}
            @for (i, &c) in daily.iter().enumerate() {
                @if c > 0 {
                    @let h = ((c as f64 / max) * (SPARK_H - 2.0)).max(2.0);
                    rect.day x=(format!("{:.1}", i as f64 * slot + 1.0)) y=(format!("{:.1}", SPARK_H - 1.0 - h))
                        width=(format!("{:.1}", (slot - 2.0).max(1.0))) height=(format!("{h:.1}")) {
                        title { (c) }
                    }
                }
            }
        }
    }
}
