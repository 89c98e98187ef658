//! `/investigations/{id}`: what was found, what was proven, the evidence,
//! and the review form.

use super::{
    Chrome, fmt_ms, fmt_time, investigation_href, is_running, page, percent, short, state_badge,
    svg, verdict_badge,
};
use crate::auth::Viewer;
use maud::{Markup, html};
use tracelab_domain::audit::HandOff;
use tracelab_domain::experiment::{Experiment, Outcome, RunCounts, Step};
use tracelab_domain::hypothesis::{CommitInfo, FlakyStats, Hypothesis, HypothesisStatus};
use tracelab_domain::report::{BisectSummary, CULPRIT_CONFIDENCE, InvestigationSummary, Report};
use tracelab_domain::state::{InvestigationState, Transition};
use tracelab_domain::verdict::Verdict;

/// Seconds between reloads while the investigation is running.
const REFRESH_SECONDS: u32 = 5;

pub(crate) struct Detail<'a> {
    pub viewer: &'a Viewer,
    pub csrf: &'a str,
    /// The current state (fresher than the report's, which is saved once).
    pub summary: &'a InvestigationSummary,
    pub transitions: &'a [Transition],
    /// `None` while the investigation runs, or when it ended without one.
    pub report: Option<&'a Report>,
    /// The audit log and the pull request, from hosts that keep them.
    pub hand_off: Option<&'a HandOff>,
    /// The host can open pull requests: an approved investigation gets the button.
    pub opens_pull_requests: bool,
    /// Outgoing webhook attempts, oldest first.
    pub webhooks: &'a [tracelab_domain::webhook::WebhookDelivery],
}

pub(crate) fn detail(d: &Detail<'_>) -> Markup {
    let s = d.summary;
    let running = is_running(s.state);
    let chrome = Chrome {
        viewer: Some(d.viewer),
        csrf: Some(d.csrf),
        refresh: running.then_some(REFRESH_SECONDS),
    };
    let verdict = d.report.map(|r| r.verdict).or(s.verdict);
    let body = html! {
        header.investigation {
            h1 { "Investigation " code title=(s.id.0) { (s.id.short()) } }
            p.badges {
                (state_badge(s.state)) " " (verdict_badge(verdict))
                @if s.state == InvestigationState::WaitingForReview {
                    " " a href="#review" { "jump to review" }
                }
            }
        }
        (facts(s, d.report))
        @if running {
            p.notice {
                "Still running (" (s.state.as_str()) "): this page reloads every "
                (REFRESH_SECONDS) " s. Findings appear when the investigation decides."
            }
        }
        @match d.report {
            Some(r) => (findings(r, s.state, d.transitions)),
            None => { @if !running { (no_report(s.state, d.transitions)) } },
        }
        (timeline(s, d.transitions))
        (review(d))
        @if let Some(h) = d.hand_off {
            (hand_off(h, d))
        }
        @if !d.webhooks.is_empty() {
            (webhooks(d.webhooks))
        }
    };
    page(&format!("Investigation {}", s.id.short()), &chrome, body)
}

fn facts(s: &InvestigationSummary, r: Option<&Report>) -> Markup {
    html! {
        dl.facts {
            dt { "Repository" } dd { code { (s.repository) } }
            dt { "Test" } dd { code { (s.test_command) } }
            @if let Some(r) = r {
                @if let Some(failure) = &r.failure {
                    dt { "Failure" } dd { (failure) }
                }
                dt { "Bad revision" } dd { code { (r.bad) } }
                dt { "Good revision" }
                dd { @match &r.good { Some(g) => code { (g) }, None => span.muted { "none given" } } }
                dt { "Took" } dd { (fmt_ms(r.duration_ms)) }
            }
            dt { "Created" } dd { (fmt_time(s.created_at)) }
            dt { "Id" } dd { code { (s.id.0) } }
        }
    }
}

/// The last transition into `state`, if any.
fn entered(transitions: &[Transition], state: InvestigationState) -> Option<&Transition> {
    transitions.iter().rev().find(|t| t.to == state)
}

fn no_report(state: InvestigationState, transitions: &[Transition]) -> Markup {
    let reason = entered(transitions, state).and_then(|t| t.reason.as_deref());
    html! {
        section.proven {
            h2 { "What was and was not proven" }
            @if matches!(state, InvestigationState::Failed | InvestigationState::Blocked) {
                p.warning {
                    "The investigation ended " (state.as_str()) " without a report"
                    @if let Some(reason) = reason { ": " (reason) }
                    ". Nothing about this failure was established."
                }
            } @else {
                p { "No report is stored for this investigation yet." }
            }
        }
    }
}

fn findings(r: &Report, state: InvestigationState, transitions: &[Transition]) -> Markup {
    // A culprit the search found is shown even when it is not the report's
    // culprit (a lead below the confidence bar, or a test-only commit).
    let lead = r
        .bisect
        .as_ref()
        .and_then(|b| b.culprit.as_ref().map(|c| (b, c)))
        .filter(|_| r.culprit.is_none());
    html! {
        (proven(r, state, transitions, lead))
        @if let Some(c) = &r.culprit {
            section.culprit {
                h2 { "Culprit" }
                (commit(&c.commit))
                p {
                    "Search confidence " strong { (format!("{:.3}", c.confidence)) }
                    " (the probability that every \u{201c}good\u{201d} judgement was right). "
                }
                @if c.verified {
                    p.verified { span.badge.ok { "verified" } " " (c.verification) }
                } @else {
                    p.unverified {
                        span.badge.warn { "not verified" } " "
                        "No fix for this commit was proven: " (c.verification)
                        ". Treat it as the likely cause, not a proven one."
                    }
                }
            }
        } @else if let Some((b, c)) = lead {
            section.culprit {
                h2 { "Culprit lead" }
                (commit(c))
                p.unverified {
                    span.badge.warn { "lead" } " "
                    @if b.culprit_changes_only_tests {
                        "This commit changes test files only, and the probes ran each revision's own tests: "
                        "it is where the failing test appeared or changed, not where the defect came from."
                    } @else {
                        "The search settled on this commit with confidence "
                        (format!("{:.3}", b.confidence)) ", below the "
                        (format!("{CULPRIT_CONFIDENCE}")) " needed to name a culprit."
                    }
                }
            }
        }
        @if let Some(b) = &r.bisect {
            (search(b, r.culprit.as_ref().map(|c| &c.commit).or(b.culprit.as_ref())))
        }
        @if r.flaky.is_some() || r.bisect.as_ref().is_some_and(|b| b.good_flaky.is_some()) {
            section.flaky {
                h2 { "Failure rate" }
                @if let Some(f) = &r.flaky {
                    (rate("At the bad revision", f))
                }
                @if let Some(g) = r.bisect.as_ref().and_then(|b| b.good_flaky.as_ref()) {
                    (rate("At the good revision", g))
                }
            }
        }
        @if !r.suspects.is_empty() {
            section.suspects {
                h2 { "Where to look" }
                p.muted { "Functions the failure output leads to at the bad revision, best first." }
                table {
                    thead { tr { th { "Symbol" } th { "Location" } th { "Score" } th { "Why" } } }
                    tbody {
                        @for s in &r.suspects {
                            tr {
                                td { code { (s.symbol) } }
                                td { code { (s.path) ":" (s.start_line) "–" (s.end_line) } }
                                td.num { (format!("{:.2}", s.score)) }
                                td { ul.reasons { @for reason in &s.reasons { li { (reason) } } } }
                            }
                        }
                    }
                }
            }
        }
        @if let Some(w) = r.winner.as_ref().filter(|w| w.patch.is_some()) {
            section.fix {
                h2 { "Proposed fix" }
                p {
                    "From " a href=(format!("#h{}", w.number)) { "hypothesis " (w.number) }
                    " " (status_badge(w.status))
                    @if let Some(branch) = &w.branch { " on branch " code { (branch) } }
                }
                @if let Some(patch) = &w.patch { (diff(patch)) }
            }
        }
        @if !r.hypotheses.is_empty() {
            section.hypotheses {
                h2 { "Hypotheses" }
                @for h in &r.hypotheses {
                    (hypothesis(h, r))
                }
            }
        }
        @if let Some(e) = &r.reproduction {
            section.reproduction {
                h2 { "Reproduction" }
                (experiments(std::slice::from_ref(e)))
            }
        }
    }
}

/// The verdict in words, with what it rests on and what it does not show.
fn proven(
    r: &Report,
    state: InvestigationState,
    transitions: &[Transition],
    lead: Option<(&BisectSummary, &CommitInfo)>,
) -> Markup {
    let flaky_rate = r.flaky.map(|f| {
        format!(
            " (failed {} of {} runs, {})",
            f.failures,
            f.runs,
            percent(f.failure_rate)
        )
    });
    let kind = match r.verdict {
        Verdict::Regression => "A commit introduced this failure.".to_string(),
        Verdict::FlakinessRegression => {
            "A commit made an already-flaky failure significantly more frequent.".to_string()
        }
        Verdict::Flaky => format!(
            "The test fails intermittently at the same revision and environment{}.",
            flaky_rate.unwrap_or_default()
        ),
        Verdict::OrderDependent => {
            "The test passes alone and fails inside its suite: the outcome depends on test order."
                .to_string()
        }
        Verdict::EnvironmentDependent => {
            "The outcome depends on the environment (a variable such as the timezone, locale or seed)."
                .to_string()
        }
        Verdict::Deterministic => {
            "The test fails every time, and no commit is known to have introduced it.".to_string()
        }
        Verdict::NotReproduced => {
            "The failure did not happen at the bad revision, so nothing was established about its cause."
                .to_string()
        }
    };
    let cause = match (&r.culprit, lead) {
        (Some(c), _) if c.verified => format!(
            "Proven: commit {} caused it; a fix that undoes it passed the four-part verification contract.",
            short(&c.commit.commit)
        ),
        (Some(c), _) => format!(
            "Found, not proven: the culprit search names commit {} with confidence {:.3}, but no fix for it was verified.",
            short(&c.commit.commit),
            c.confidence
        ),
        (None, Some((_, c))) => format!(
            "Not established: the search's best lead, commit {}, falls short of a culprit (see below).",
            short(&c.commit)
        ),
        (None, None) if r.bisect.is_some() => {
            "Not established: the culprit search named no commit.".to_string()
        }
        (None, None) => "No culprit search ran.".to_string(),
    };
    let fix = match &r.winner {
        Some(w) if w.status == HypothesisStatus::Verified && w.kind.has_fix() => format!(
            "Verified: hypothesis {}'s fix made the test pass where it failed before, with the relevant existing tests passing.",
            w.number
        ),
        Some(w) if w.status == HypothesisStatus::Verified => format!(
            "No code fix; hypothesis {}'s explanation was verified by experiment.",
            w.number
        ),
        Some(w) => format!(
            "Nothing verified: the best hypothesis ({}) is {}: {}",
            w.number,
            w.status.as_str(),
            w.status_reason
        ),
        None => "No hypothesis was verified.".to_string(),
    };
    let ended = matches!(
        state,
        InvestigationState::Failed | InvestigationState::Blocked
    )
    .then(|| entered(transitions, state).and_then(|t| t.reason.clone()));
    html! {
        section.proven {
            h2 { "What was and was not proven" }
            @if let Some(reason) = ended {
                p.warning {
                    "The investigation ended " (state.as_str())
                    @if let Some(reason) = reason { ": " (reason) }
                    ". What follows is only what it had established by then."
                }
            }
            dl.proven {
                dt { "Kind of failure" } dd { (kind) }
                dt { "Cause" } dd { (cause) }
                dt { "Fix" } dd { (fix) }
            }
            @if !r.notes.is_empty() {
                h3 { "From the investigation" }
                ul.notes { @for n in &r.notes { li { (n) } } }
            }
        }
    }
}

fn commit(c: &CommitInfo) -> Markup {
    html! {
        p.commit {
            code.sha title=(c.commit) { (short(&c.commit)) } " "
            strong.subject { (c.summary) }
        }
        p.muted { "by " (c.author) " on " (c.date) " · " code { (c.commit) } }
    }
}

fn search(b: &BisectSummary, culprit: Option<&CommitInfo>) -> Markup {
    html! {
        section.search {
            h2 { "Culprit search" }
            figure {
                (svg::culprit_search(b, culprit))
                @if b.probes.iter().any(|p| p.position.is_some()) {
                    figcaption.muted {
                        "Each commit at its place in the range; one row per round with the revisions it probed "
                        "(green passed, red failed as under investigation, grey square failed differently)."
                    }
                } @else {
                    figcaption.muted {
                        "Schematic: this report records the range's ends, the culprit and the commits the search "
                        "routed around, not where each commit sits in the range."
                    }
                }
            }
            p {
                (b.candidates) " candidate commits, " (b.rounds) " rounds, " (b.test_runs) " test runs, "
                (b.parallelism) " at once; confidence " (format!("{:.3}", b.confidence)) "."
            }
            @if !b.untestable.is_empty() {
                p {
                    "Routed around " (b.untestable.len()) " untestable commits (the test failed differently there): "
                    @for (i, c) in b.untestable.iter().enumerate() {
                        @if i > 0 { ", " } code { (short(c)) }
                    }
                }
            }
            @if !b.ambiguous.is_empty() {
                p.warning {
                    "Could not separate: "
                    @for (i, c) in b.ambiguous.iter().enumerate() {
                        @if i > 0 { ", " } code { (short(c)) }
                    }
                }
            }
            @if !b.oracle_files.is_empty() {
                p.muted { "Every probe ran the bad revision's version of "
                    @for (i, f) in b.oracle_files.iter().enumerate() {
                        @if i > 0 { ", " } code { (f) }
                    }
                    " on its own source." }
            }
            @if let Some(note) = &b.oracle_note { p.muted { (note) } }
            @if !b.pointed_at.is_empty() {
                p.muted { "The failure's frames and tests pointed at "
                    @for (i, c) in b.pointed_at.iter().enumerate() {
                        @if i > 0 { ", " }
                        code { (short(&c.commit)) } " (" (format!("{:.0}", c.share * 100.0)) "%)"
                    }
                    ": the search probed around them first (the order of the probes, not the answer)." }
            }
            @if let Some(note) = &b.note { p { (note) } }
        }
    }
}

fn rate(label: &str, f: &FlakyStats) -> Markup {
    html! {
        div.rate {
            h3 { (label) }
            (svg::rate_bar(f))
            p {
                "Failed " (f.failures) " of " (f.runs) " runs (" (percent(f.failure_rate))
                ", 95% interval " (percent(f.interval.0)) "–" (percent(f.interval.1)) ")."
                @if !f.confident {
                    " The run cap ended the re-runs before the configured confidence was reached."
                }
            }
        }
    }
}

fn status_badge(status: HypothesisStatus) -> Markup {
    let class = match status {
        HypothesisStatus::Verified => "badge ok",
        HypothesisStatus::Rejected => "badge bad",
        HypothesisStatus::Pending | HypothesisStatus::Inconclusive | HypothesisStatus::Blocked => {
            "badge warn"
        }
    };
    html! { span class=(class) { (status.as_str()) } }
}

/// The snake_case name serde gives an enum value (`git_history`).
fn serde_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s.replace('_', " "),
        _ => "?".into(),
    }
}

fn hypothesis(h: &Hypothesis, r: &Report) -> Markup {
    let winner = r.winner.as_ref().is_some_and(|w| w.id == h.id);
    html! {
        article.hypothesis id=(format!("h{}", h.number)) {
            h3 {
                (h.number) ". " (h.summary) " " (status_badge(h.status))
                @if winner { " " span.badge.winner { "winner" } }
            }
            p.muted {
                "Proposed by the " (serde_name(&h.agent)) " agent · kind: " (serde_name(&h.kind))
                @if let Some(branch) = &h.branch { " · branch " code { (branch) } }
            }
            @if !h.status_reason.is_empty() { p.reason { (h.status_reason) } }
            @if let Some(c) = &h.culprit { (commit(c)) }
            @if let Some(f) = &h.flaky { (rate("Measured failure rate", f)) }
            @if h.kind.has_fix() { (contract(h, r)) }
            @if !h.experiments.is_empty() { (experiments(&h.experiments)) }
            @if let Some(patch) = h.patch.as_ref().filter(|_| !winner) {
                details.patch {
                    summary { "Patch (" (h.patch_size()) " changed lines)" }
                    (diff(patch))
                }
            }
            @if let Some(detail) = &h.detail {
                details.detail {
                    summary { "Agent's raw findings" }
                    pre { (serde_json::to_string_pretty(detail).unwrap_or_default()) }
                }
            }
        }
    }
}

/// What a contract step expects of the test.
#[derive(Clone, Copy)]
enum Expect {
    Fails,
    Passes,
}

const CONTRACT: [(Step, &str, Expect); 4] = [
    (
        Step::Reproduction,
        "The failure reproduces at the bad revision",
        Expect::Fails,
    ),
    (
        Step::RegressionBefore,
        "The regression test fails before the fix",
        Expect::Fails,
    ),
    (
        Step::RegressionAfter,
        "The regression test passes after the fix",
        Expect::Passes,
    ),
    (
        Step::ExistingTests,
        "The relevant existing tests pass after the fix",
        Expect::Passes,
    ),
];

/// The four contract steps with the evidence stored for each. The
/// hypothesis's status (judged by the domain's contract) is authoritative;
/// this shows what it rests on.
fn contract(h: &Hypothesis, r: &Report) -> Markup {
    let rows = CONTRACT.map(|(step, text, expect)| {
        let mut runs: Vec<&Experiment> = h.experiments.iter().filter(|e| e.step == step).collect();
        if runs.is_empty() && step == Step::Reproduction {
            // The reproduction may be stored once, on the report.
            runs.extend(r.reproduction.as_ref());
        }
        (text, step_evidence(&runs, expect))
    });
    html! {
        ol.contract {
            @for (text, (class, mark, evidence)) in rows {
                li class=(class) {
                    span.mark aria-hidden="true" { (mark) } " "
                    (text) ": " span.evidence { (evidence) }
                }
            }
        }
    }
}

fn step_evidence(runs: &[&Experiment], expect: Expect) -> (&'static str, &'static str, String) {
    if runs.is_empty() {
        return ("missing", "?", "no experiment stored".into());
    }
    if let Some(blocked) = runs
        .iter()
        .find(|e| e.outcome == Outcome::Blocked && e.counts.is_none())
    {
        return (
            "blocked",
            "!",
            format!(
                "could not run: {}",
                blocked.note.as_deref().unwrap_or("no reason recorded")
            ),
        );
    }
    let total = runs.iter().fold(RunCounts::default(), |acc, e| {
        acc.plus(e.effective_counts())
    });
    let text = format!(
        "failed {} of {} runs{}",
        total.failures,
        total.runs,
        if total.other > 0 {
            format!(", {} failed differently or were blocked", total.other)
        } else {
            String::new()
        }
    );
    let met = match expect {
        Expect::Fails => total.failures > 0,
        Expect::Passes => total.failures == 0 && total.other == 0 && total.passes() > 0,
    };
    if met {
        ("met", "✓", text)
    } else {
        ("unmet", "✗", text)
    }
}

fn experiments(list: &[Experiment]) -> Markup {
    html! {
        table.experiments {
            thead {
                tr {
                    th { "Step" } th { "Command" } th { "Revision" } th { "Exit" }
                    th { "Runs (failed)" } th { "Duration" } th { "Outcome" } th { "Sandbox" }
                }
            }
            @for e in list {
                @let counts = e.effective_counts();
                tbody.experiment {
                    tr {
                        td { (e.step.as_str()) }
                        td { code { (e.command) } }
                        td { code title=(e.revision) { (short(&e.revision)) } }
                        td.num { @match e.exit_code { Some(c) => (c), None => span.muted { "none" } } }
                        td.num { (counts.runs) " (" (counts.failures) ")" }
                        td.num { (fmt_ms(e.duration_ms)) }
                        td { span class=(format!("outcome {}", serde_name(&e.outcome).replace(' ', "-"))) {
                            (serde_name(&e.outcome))
                        } }
                        td { code { (e.sandbox) } }
                    }
                    @if e.note.is_some() || !e.output.is_empty() {
                        tr.more {
                            td colspan="8" {
                                @if let Some(note) = &e.note { p.note { (note) } }
                                @if !e.output.is_empty() {
                                    details.output {
                                        summary { "Output (" (e.output.lines().count()) " lines)" }
                                        pre { (e.output) }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The CSS class of one line of a unified diff.
fn diff_class(line: &str) -> &'static str {
    if line.starts_with("+++") || line.starts_with("---") || line.starts_with("diff ") {
        "file"
    } else if line.starts_with("@@") {
        "hunk"
    } else if line.starts_with('+') {
        "add"
    } else if line.starts_with('-') {
        "del"
    } else {
        "ctx"
    }
}

/// A unified diff, one element per line, classed for colour.
pub(crate) fn diff(patch: &str) -> Markup {
    html! {
        pre.diff {
            @for line in patch.lines() {
                span class=(diff_class(line)) { (line) } "\n"
            }
        }
    }
}

fn timeline(s: &InvestigationSummary, transitions: &[Transition]) -> Markup {
    html! {
        section.timeline {
            h2 { "Timeline" }
            ol.timeline {
                li {
                    time { (fmt_time(s.created_at)) } " "
                    span.badge.state.running { "CREATED" }
                }
                @for (i, t) in transitions.iter().enumerate() {
                    @let since = if i == 0 { s.created_at } else { transitions[i - 1].at };
                    @let delta = u64::try_from((t.at - since).whole_milliseconds()).unwrap_or(0);
                    li {
                        time { (fmt_time(t.at)) } " "
                        span.delta { "+" (fmt_ms(delta)) } " "
                        (t.from.as_str()) " → " (state_badge(t.to))
                        @if let Some(reason) = &t.reason { " " span.reason { (reason) } }
                    }
                }
            }
        }
    }
}

/// The draft pull request (or why opening it failed) and the audit log:
/// who started, approved or rejected it, and every pull request attempt.
fn hand_off(h: &HandOff, d: &Detail<'_>) -> Markup {
    html! {
        section.audit id="audit" {
            h2 { "Pull request and audit log" }
            @if let Some(pr) = &h.pull_request {
                p.pull-request {
                    "Draft pull request "
                    @if pr.url.starts_with("https://") || pr.url.starts_with("http://") {
                        a href=(pr.url) rel="noreferrer noopener" { "#" (pr.number) }
                    } @else {
                        "#" (pr.number)
                    }
                    " on " (pr.host) ": " code { (pr.url) }
                }
            } @else if let Some(error) = &h.pull_request_error {
                p.pull-request-error {
                    strong { "Opening the pull request failed: " } (error)
                    " It can be retried; nothing is opened twice."
                }
            } @else {
                p.muted { "No pull request has been opened." }
            }
            @if h.pull_request.is_none() && d.summary.state == InvestigationState::Approved {
                (open_pull_request(h, d))
            }
            @if let Some(by) = &h.started_by {
                p { "Started by " strong { (by) } "." }
            }
            @if h.audit.is_empty() {
                p.muted { "No audit entries." }
            } @else {
                table.audit {
                    thead { tr { th { "time (UTC)" } th { "action" } th { "by" } th { "role" } th { "reason" } } }
                    tbody {
                        @for e in &h.audit {
                            tr {
                                td { (fmt_time(e.at)) }
                                td { code { (e.action.as_str()) } }
                                td { (e.actor) }
                                td { (e.role) }
                                td { @if let Some(r) = &e.reason { (r) } }
                            }
                        }
                    }
                }
                p.muted { "Append-only: the store refuses changes to these rows." }
            }
        }
    }
}

/// Every attempt to deliver this investigation's webhooks.
fn webhooks(attempts: &[tracelab_domain::webhook::WebhookDelivery]) -> Markup {
    html! {
        section.webhooks id="webhooks" {
            h2 { "Webhook deliveries" }
            table.webhooks {
                thead { tr { th { "time (UTC)" } th { "event" } th { "URL" } th { "attempt" } th { "result" } } }
                tbody {
                    @for a in attempts {
                        tr class=(if a.delivered { "delivered" } else { "failed" }) {
                            td { @if let Some(at) = a.at { (fmt_time(at)) } }
                            td { code { (a.event) } }
                            td { code { (a.url) } }
                            td { (a.attempt) }
                            td {
                                @if a.delivered { "delivered" } @else { "failed" }
                                @if let Some(s) = a.http_status { " (HTTP " (s) ")" }
                                @if let Some(e) = &a.error { ": " (e) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The button that opens the draft pull request of an approved
/// investigation (a retry after a failure), for reviewers on hosts that
/// can open one.
fn open_pull_request(h: &HandOff, d: &Detail<'_>) -> Markup {
    let href = investigation_href(&d.summary.id.0);
    html! {
        @if !d.opens_pull_requests {
            p.muted { "This server has no code host configured, so it cannot open the pull request (see docs/review.md)." }
        } @else if d.viewer.can_review {
            form.pull-request method="post" action=(format!("{href}/pull-request")) {
                input type="hidden" name="csrf" value=(d.csrf);
                button.open-pr type="submit" {
                    @if h.pull_request_error.is_some() { "Retry: open the draft pull request" }
                    @else { "Open draft pull request" }
                }
                " "
                span.muted { "Pushes the verified branch and opens a draft; it never merges." }
            }
        } @else {
            p.muted { "Approved: a reviewer can open the draft pull request." }
        }
    }
}

fn review(d: &Detail<'_>) -> Markup {
    let s = d.summary;
    let href = investigation_href(&s.id.0);
    html! {
        section.review id="review" {
            h2 { "Review" }
            @match s.state {
                InvestigationState::WaitingForReview => {
                    @if d.viewer.can_review {
                        form.review method="post" action=(format!("{href}/approve")) {
                            input type="hidden" name="csrf" value=(d.csrf);
                            label for="reason" { "Reason (optional; kept with your decision)" }
                            textarea #reason name="reason" rows="3" maxlength="2000" {}
                            div.buttons {
                                button.approve type="submit" formaction=(format!("{href}/approve")) { "Approve" }
                                button.reject type="submit" formaction=(format!("{href}/reject")) { "Reject" }
                            }
                        }
                    } @else {
                        p.muted { "Waiting for review. You are signed in read-only: a reviewer has to approve or reject it." }
                    }
                }
                InvestigationState::Approved | InvestigationState::Rejected => {
                    @let t = entered(d.transitions, s.state);
                    p {
                        @if s.state == InvestigationState::Approved { "Approved" } @else { "Rejected" }
                        @if let Some(t) = t {
                            " at " (fmt_time(t.at))
                            @if let Some(reason) = &t.reason { ": " (reason) }
                        }
                        "."
                    }
                }
                InvestigationState::Failed | InvestigationState::Blocked => {
                    p.muted { "It ended " (s.state.as_str()) "; there is nothing to review." }
                }
                _ => {
                    p.muted { "It can be reviewed once it is waiting for review." }
                }
            }
        }
    }
}
