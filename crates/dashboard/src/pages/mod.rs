//! HTML rendering: pure functions from domain values to [`Markup`]. Every
//! interpolation goes through maud's escaping; nothing here emits raw HTML.

mod detail;
mod groups;
mod list;
mod login;
mod svg;

pub(crate) use detail::{Detail, detail};
#[cfg(test)]
pub(crate) use groups::sparkline;
pub(crate) use groups::{GroupsView, groups};
pub(crate) use list::{ListPage, list};
pub(crate) use login::login;

use crate::auth::Viewer;
use maud::{DOCTYPE, Markup, html};
use tracelab_domain::state::InvestigationState;
use tracelab_domain::verdict::Verdict;

/// The stylesheet served at `/dashboard.css`.
pub(crate) const CSS: &str = include_str!("../dashboard.css");

/// A hash of the stylesheet, put in its link so a changed one is fetched
/// anew however long browsers cache it.
const CSS_VERSION: u64 = fnv1a(CSS.as_bytes());

const fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    hash
}

/// Every verdict, in the order the filter offers them.
pub(crate) const VERDICTS: [Verdict; 7] = [
    Verdict::Regression,
    Verdict::FlakinessRegression,
    Verdict::Flaky,
    Verdict::OrderDependent,
    Verdict::EnvironmentDependent,
    Verdict::Deterministic,
    Verdict::NotReproduced,
];

/// What the page frame needs besides the body.
pub(crate) struct Chrome<'a> {
    /// `None` on the sign-in page.
    pub viewer: Option<&'a Viewer>,
    /// The session's CSRF token, for the sign-out form.
    pub csrf: Option<&'a str>,
    /// Reload every this many seconds (while something is running).
    pub refresh: Option<u32>,
}

/// The frame every page shares.
pub(crate) fn page(title: &str, chrome: &Chrome<'_>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                @if let Some(seconds) = chrome.refresh {
                    meta http-equiv="refresh" content=(seconds);
                }
                title { (title) " · TraceLab" }
                link rel="stylesheet" href=(format!("/dashboard.css?v={CSS_VERSION:016x}"));
            }
            body {
                header.top {
                    a.brand href="/investigations" { "TraceLab" }
                    @if chrome.viewer.is_some() {
                        nav.sections {
                            a href="/investigations" { "Investigations" }
                            " "
                            a href="/groups" { "Failure groups" }
                        }
                    }
                    @if let Some(viewer) = chrome.viewer {
                        span.who {
                            "Signed in as " strong { (viewer.name) }
                            @if viewer.can_review { " (reviewer)" } @else { " (read only)" }
                        }
                        @if let Some(csrf) = chrome.csrf {
                            form.logout method="post" action="/logout" {
                                input type="hidden" name="csrf" value=(csrf);
                                button type="submit" { "Sign out" }
                            }
                        }
                    }
                }
                main { (body) }
            }
        }
    }
}

/// A page that only says what went wrong.
pub(crate) fn error(title: &str, message: &str, chrome: &Chrome<'_>) -> Markup {
    page(
        title,
        chrome,
        html! {
            h1 { (title) }
            p.error { (message) }
            p { a href="/investigations" { "Back to the investigations" } }
        },
    )
}

/// Whether the investigation is still working (not decided, not waiting for a person).
pub(crate) fn is_running(state: InvestigationState) -> bool {
    !state.is_terminal() && state != InvestigationState::WaitingForReview
}

/// The CSS class of a state badge.
fn state_class(state: InvestigationState) -> &'static str {
    use InvestigationState::*;
    match state {
        WaitingForReview => "badge state waiting",
        Approved => "badge state approved",
        Rejected => "badge state rejected",
        Failed | Blocked => "badge state failed",
        Created | ContextLoading | Investigating | Verifying | Arbitrating => "badge state running",
    }
}

fn state_badge(state: InvestigationState) -> Markup {
    html! { span class=(state_class(state)) { (state.as_str()) } }
}

fn verdict_badge(verdict: Option<Verdict>) -> Markup {
    html! {
        @match verdict {
            Some(v) => span class=(format!("badge verdict {}", v.as_str())) { (v.as_str()) },
            None => span.muted { "—" },
        }
    }
}

/// `2026-11-02 14:03:05 UTC`.
pub(crate) fn fmt_time(t: time::OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// `850 ms`, `12.3 s`, `4 min 05 s`, `1 h 02 min`, `3 d 04 h`.
pub(crate) fn fmt_ms(ms: u64) -> String {
    match ms {
        0..1_000 => format!("{ms} ms"),
        1_000..60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        60_000..3_600_000 => format!("{} min {:02} s", ms / 60_000, ms % 60_000 / 1000),
        3_600_000..172_800_000 => {
            format!("{} h {:02} min", ms / 3_600_000, ms % 3_600_000 / 60_000)
        }
        _ => format!("{} d {:02} h", ms / 86_400_000, ms % 86_400_000 / 3_600_000),
    }
}

/// The first 12 characters of a revision.
fn short(rev: &str) -> &str {
    rev.char_indices().nth(12).map_or(rev, |(i, _)| &rev[..i])
}

fn percent(rate: f64) -> String {
    format!("{:.1}%", rate * 100.0)
}

/// Percent-encodes one path segment (ids go into links and redirects).
pub(crate) fn path_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `/investigations/{id}`.
pub(crate) fn investigation_href(id: &str) -> String {
    format!("/investigations/{}", path_segment(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        for (ms, text) in [
            (850, "850 ms"),
            (12_345, "12.3 s"),
            (245_000, "4 min 05 s"),
            (3_720_000, "1 h 02 min"),
            (273_600_000, "3 d 04 h"),
        ] {
            assert_eq!(fmt_ms(ms), text);
        }
    }

    #[test]
    fn times_are_utc() {
        let t = time::OffsetDateTime::from_unix_timestamp(1_700_000_000)
            .unwrap()
            .to_offset(time::UtcOffset::from_hms(2, 0, 0).unwrap());
        assert_eq!(fmt_time(t), "2023-11-14 22:13:20 UTC");
    }

    #[test]
    fn ids_are_encoded_in_paths() {
        assert_eq!(investigation_href("a-1_b"), "/investigations/a-1_b");
        assert_eq!(
            investigation_href("../x y/?"),
            "/investigations/%2E%2E%2Fx%20y%2F%3F"
        );
        assert_eq!(short("0123456789abcdef"), "0123456789ab");
        assert_eq!(short("abc"), "abc");
    }
}
