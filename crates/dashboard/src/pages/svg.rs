//! Inline SVG figures: the culprit search and failure rates. Styling is by
//! class (the stylesheet), so the pages need no inline styles.

use super::{percent, short};
use maud::{Markup, html};
use tracelab_domain::bisect::ProbeResult;
use tracelab_domain::hypothesis::{CommitInfo, FlakyStats};
use tracelab_domain::report::BisectSummary;

/// Commits labelled per lane at most; the rest are counted.
const LANE_LABELS: usize = 8;

const WIDTH: f64 = 760.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 690.0;
const AXIS_Y: f64 = 70.0;

/// The candidate range good → bad as an axis, the culprit where the range
/// turns from passing to failing, and lanes for the commits the search
/// routed around (untestable) and could not separate (ambiguous).
///
/// The report keeps the range's ends, the culprit and those commits, not
/// where each sits in the range, so the figure is a schematic: the culprit
/// is drawn mid-range and lane markers are spaced evenly in the order the
/// report lists them. The caption says so.
pub(crate) fn culprit_search(b: &BisectSummary, culprit: Option<&CommitInfo>) -> Markup {
    if b.probes.iter().any(|p| p.position.is_some()) {
        return search_timeline(b, culprit);
    }
    let lanes = [
        ("untestable", "untestable", &b.untestable),
        ("could not separate", "ambiguous", &b.ambiguous),
    ];
    let shown: Vec<_> = lanes.iter().filter(|(_, _, c)| !c.is_empty()).collect();
    let height = AXIS_Y + 50.0 + 46.0 * shown.len() as f64;
    let mid = (LEFT + RIGHT) / 2.0;
    let label = format!(
        "Culprit search over {} candidate commits from {} to {}{}",
        b.candidates,
        b.good.as_deref().map_or("an unknown good revision", short),
        short(&b.bad),
        culprit.map_or(String::new(), |c| format!("; culprit {}", short(&c.commit)))
    );
    html! {
        svg.search viewBox=(format!("0 0 {WIDTH} {height}")) width=(WIDTH) height=(height)
            role="img" aria-label=(label) xmlns="http://www.w3.org/2000/svg" {
            title { (label) }
            text.caption x=(mid) y="18" text-anchor="middle" {
                (b.candidates) " candidate commits"
            }
            @if culprit.is_some() {
                rect.zone-good x=(LEFT) y=(AXIS_Y - 9.0) width=(mid - LEFT) height="18" {}
                rect.zone-bad x=(mid) y=(AXIS_Y - 9.0) width=(RIGHT - mid) height="18" {}
            } @else {
                rect.zone-unknown x=(LEFT) y=(AXIS_Y - 9.0) width=(RIGHT - LEFT) height="18" {}
            }
            (range_ends(b))
            @if let Some(c) = culprit {
                path.culprit d=(format!("M {mid} {} l -9 -16 h 18 z", AXIS_Y - 11.0)) {}
                line.culprit x1=(mid) y1=(AXIS_Y - 11.0) x2=(mid) y2=(AXIS_Y + 11.0) {}
                text.culprit x=(mid) y=(AXIS_Y - 32.0) text-anchor="middle" {
                    "culprit " (short(&c.commit))
                }
            }
            @for (i, (name, class, commits)) in shown.iter().enumerate() {
                @let y = AXIS_Y + 60.0 + 46.0 * i as f64;
                @let labelled = commits.len().min(LANE_LABELS);
                @let step = (RIGHT - LEFT - 80.0) / labelled as f64;
                text.lane-name x=(LEFT) y=(y - 10.0) { (name) }
                line.lane x1=(LEFT) y1=(y) x2=(RIGHT) y2=(y) {}
                @for (j, commit) in commits.iter().take(LANE_LABELS).enumerate() {
                    @let x = LEFT + 40.0 + step * (j as f64 + 0.5);
                    rect class=(*class) x=(x - 5.0) y=(y - 5.0) width="10" height="10" {
                        title { (commit) }
                    }
                    text.commit x=(x) y=(y + 20.0) text-anchor="middle" {
                        (commit.chars().take(8).collect::<String>())
                    }
                }
                @if commits.len() > LANE_LABELS {
                    text.commit x=(RIGHT) y=(y - 8.0) text-anchor="end" {
                        "+" (commits.len() - LANE_LABELS) " more"
                    }
                }
            }
        }
    }
}

/// The axis from the good revision (left) to the bad one (right), both figures'.
fn range_ends(b: &BisectSummary) -> Markup {
    html! {
        line.axis x1=(LEFT) y1=(AXIS_Y) x2=(RIGHT) y2=(AXIS_Y) {}
        circle.good cx=(LEFT) cy=(AXIS_Y) r="8" {}
        text.end x=(LEFT) y=(AXIS_Y + 28.0) text-anchor="middle" {
            @match &b.good {
                Some(g) => { "good " (short(g)) },
                None => "no good revision",
            }
        }
        circle.bad cx=(RIGHT) cy=(AXIS_Y) r="8" {}
        text.end x=(RIGHT) y=(AXIS_Y + 28.0) text-anchor="middle" { "bad " (short(&b.bad)) }
    }
}

const ROUND_GAP: f64 = 26.0;

/// The search as it ran: the candidate range good → bad as an axis (each
/// commit at its place), one row per round below it with the revisions that
/// round probed — good, bad or untestable — and the culprit marked where the
/// range turns. Judgements reused from an earlier attempt are drawn hollow in
/// row 0.
fn search_timeline(b: &BisectSummary, culprit: Option<&CommitInfo>) -> Markup {
    let slots = b.candidates.max(1) as f64;
    // The good revision sits left of the first candidate, bad is the last.
    let x = |position: usize| LEFT + (RIGHT - LEFT) * (position as f64 + 1.0) / slots;
    let in_range: Vec<_> = b.probes.iter().filter(|p| p.position.is_some()).collect();
    let rounds = in_range.iter().map(|p| p.round).max().unwrap_or(0);
    let has_reused = in_range.iter().any(|p| p.round == 0);
    let first_row = if has_reused { 0 } else { 1 };
    let row_y = |round: u32| AXIS_Y + 40.0 + ROUND_GAP * f64::from(round - first_row);
    let height = row_y(rounds.max(first_row)) + 30.0;
    let culprit_x = culprit.and_then(|c| {
        if c.commit == b.bad {
            return Some(RIGHT);
        }
        in_range
            .iter()
            .find(|p| p.revision == c.commit)
            .and_then(|p| p.position)
            .map(x)
    });
    let label = format!(
        "Culprit search over {} candidate commits from {} to {} in {} rounds{}",
        b.candidates,
        b.good.as_deref().map_or("an unknown good revision", short),
        short(&b.bad),
        b.rounds,
        culprit.map_or(String::new(), |c| format!("; culprit {}", short(&c.commit)))
    );
    html! {
        svg.search viewBox=(format!("0 0 {WIDTH} {height}")) width=(WIDTH) height=(height)
            role="img" aria-label=(label) xmlns="http://www.w3.org/2000/svg" {
            title { (label) }
            text.caption x=((LEFT + RIGHT) / 2.0) y="18" text-anchor="middle" {
                (b.candidates) " candidate commits, " (in_range.len()) " judged"
            }
            @if let Some(cx) = culprit_x {
                rect.zone-good x=(LEFT) y=(AXIS_Y - 9.0) width=(cx - LEFT) height="18" {}
                rect.zone-bad x=(cx) y=(AXIS_Y - 9.0) width=(RIGHT - cx) height="18" {}
            } @else {
                rect.zone-unknown x=(LEFT) y=(AXIS_Y - 9.0) width=(RIGHT - LEFT) height="18" {}
            }
            (range_ends(b))
            @if let (Some(cx), Some(c)) = (culprit_x, culprit) {
                path.culprit d=(format!("M {cx} {} l -9 -16 h 18 z", AXIS_Y - 11.0)) {}
                line.culprit x1=(cx) y1=(AXIS_Y - 11.0) x2=(cx) y2=(height - 10.0) {}
                text.culprit x=(cx) y=(AXIS_Y - 32.0) text-anchor="middle" {
                    "culprit " (short(&c.commit))
                }
            }
            @for round in first_row..=rounds {
                text.lane-name x=(LEFT - 8.0) y=(row_y(round) + 4.0) text-anchor="end" {
                    @if round == 0 { "reused" } @else { "round " (round) }
                }
            }
            @for p in &in_range {
                @let (cx, cy) = (x(p.position.unwrap_or(0)), row_y(p.round));
                @let class = match p.result {
                    ProbeResult::Good => "good",
                    ProbeResult::Bad => "bad",
                    ProbeResult::Untestable => "untestable",
                };
                @if p.result == ProbeResult::Untestable {
                    rect class=(class) x=(cx - 5.0) y=(cy - 5.0) width="10" height="10" {
                        title { (p.revision) ": untestable (" (p.runs) " runs)" }
                    }
                } @else if p.reused {
                    circle class=(format!("{class} reused")) cx=(cx) cy=(cy) r="6" {
                        title { (p.revision) ": " (class) ", reused" }
                    }
                } @else {
                    circle class=(class) cx=(cx) cy=(cy) r="6" {
                        title { (p.revision) ": " (class) " (" (p.runs) " runs)" }
                    }
                }
            }
        }
    }
}

const BAR_WIDTH: f64 = 400.0;
const BAR_LEFT: f64 = 10.0;

/// A failure rate on a 0–100 % bar: the 95 % interval as a band, the
/// measured rate as a mark.
pub(crate) fn rate_bar(stats: &FlakyStats) -> Markup {
    let x = |rate: f64| BAR_LEFT + BAR_WIDTH * rate.clamp(0.0, 1.0);
    let (lo, hi) = stats.interval;
    let label = format!(
        "failure rate {} (95% interval {} to {}) over {} runs",
        percent(stats.failure_rate),
        percent(lo),
        percent(hi),
        stats.runs
    );
    html! {
        svg.rate viewBox="0 0 420 46" width="420" height="46" role="img" aria-label=(label)
            xmlns="http://www.w3.org/2000/svg" {
            title { (label) }
            rect.track x=(BAR_LEFT) y="8" width=(BAR_WIDTH) height="14" {}
            rect.interval x=(x(lo)) y="8" width=((x(hi) - x(lo)).max(1.0)) height="14" {}
            line.rate x1=(x(stats.failure_rate)) y1="3" x2=(x(stats.failure_rate)) y2="27" {}
            text.tick x=(BAR_LEFT) y="40" { "0%" }
            text.tick x=(BAR_LEFT + BAR_WIDTH / 2.0) y="40" text-anchor="middle" { "50%" }
            text.tick x=(BAR_LEFT + BAR_WIDTH) y="40" text-anchor="end" { "100%" }
        }
    }
}
