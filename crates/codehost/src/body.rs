//! The pull request's description: the diagnosis a reviewer needs, and
//! nothing secret.
//!
//! What goes in: verdict, culprit (confidence, whether a fix for it was
//! verified), the winning hypothesis and its four contract steps as a
//! table, how to reproduce (test command, bad and good revisions) and a
//! summary of the patch — the diff itself is the pull request's change.
//! What stays out: test output, notes and agents' free-form details (any
//! of them may quote environment variables or logs). Every free text that
//! does go in is scrubbed of URL passwords, `*_TOKEN=…`-style assignments,
//! `--password …` flags and well-known token shapes, and is escaped so
//! it cannot break the Markdown or `@`-mention anyone.

use regex::Regex;
use std::fmt::Write as _;
use std::sync::LazyLock;
use tracelab_domain::experiment::{Experiment, Outcome, Step};
use tracelab_domain::hypothesis::HypothesisStatus;
use tracelab_domain::report::Report;

/// GitHub refuses bodies over 65,536 characters; GitLab allows more.
pub const MAX_BODY_CHARS: usize = 60_000;

/// Titles are cut here (GitHub's limit is 256).
const MAX_TITLE_CHARS: usize = 120;

/// Contract experiments listed at most.
const MAX_ROWS: usize = 20;

/// The four parts of the verification contract, in order, with what each
/// must show.
const CONTRACT: [(Step, &str, Outcome); 4] = [
    (
        Step::Reproduction,
        "the failure reproduces at the bad revision",
        Outcome::Fail,
    ),
    (
        Step::RegressionBefore,
        "the regression test fails before the fix",
        Outcome::Fail,
    ),
    (
        Step::RegressionAfter,
        "the regression test passes after the fix",
        Outcome::Pass,
    ),
    (
        Step::ExistingTests,
        "the relevant existing tests pass after the fix",
        Outcome::Pass,
    ),
];

/// A one-line title: the winner's summary (or the verdict and failure).
pub fn title(report: &Report) -> String {
    let text = match (&report.winner, &report.failure) {
        (Some(w), _) => w.summary.clone(),
        (None, Some(failure)) => format!("{}: {failure}", report.verdict.as_str()),
        (None, None) => report.verdict.as_str().to_string(),
    };
    let text = scrub(&text)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    format!("TraceLab: {}", cut(&text, MAX_TITLE_CHARS))
}

/// The Markdown description for `report`.
pub fn render(report: &Report) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "## TraceLab diagnosis\n");
    let _ = writeln!(
        md,
        "TraceLab investigated the failing test {} and a person approved this diagnosis. \
         This is a draft for review: TraceLab never merges.\n",
        code(&scrub(&report.test_command))
    );
    let _ = writeln!(md, "| | |\n|---|---|");
    let _ = writeln!(md, "| Verdict | {} |", code(report.verdict.as_str()));
    if let Some(failure) = &report.failure {
        let _ = writeln!(md, "| Failure | {} |", text(failure));
    }
    if let Some(c) = &report.culprit {
        let _ = writeln!(
            md,
            "| Culprit | {} {} |",
            code(short(&c.commit.commit)),
            text(&c.commit.summary)
        );
        let _ = writeln!(md, "| Search confidence | {:.3} |", c.confidence);
        let _ = writeln!(
            md,
            "| Fix for it verified | {} |",
            if c.verified { "yes" } else { "**no**" }
        );
    }
    let _ = writeln!(md, "| Investigation | {} |", code(&report.id.to_string()));

    if let Some(c) = &report.culprit {
        let _ = writeln!(
            md,
            "\n### Culprit\n\n{} {} by {} on {}. The culprit search is {:.1}% confident that every \"good\" judgement was right.\n",
            code(&c.commit.commit),
            text(&c.commit.summary),
            text(&c.commit.author),
            text(&c.commit.date),
            c.confidence * 100.0
        );
        if c.verified {
            let _ = writeln!(
                md,
                "A fix that undoes it was **verified**: {}",
                text(&c.verification)
            );
        } else {
            let _ = writeln!(
                md,
                "**Not verified**: no fix that undoes it was proven ({}). Treat it as the likely cause, not a proven one.",
                text(&c.verification)
            );
        }
    }

    if let Some(w) = &report.winner {
        let _ = writeln!(
            md,
            "\n### Fix: hypothesis {}\n\n{}\n\n**{}**{}: {}\n",
            w.number,
            text(&w.summary),
            w.status.as_str(),
            if w.status == HypothesisStatus::Verified {
                " under the four-part contract"
            } else {
                ""
            },
            text(&w.status_reason)
        );
        contract_table(&mut md, &w.experiments);
    } else {
        let _ = writeln!(md, "\n### Fix\n\nNo hypothesis won: no fix was verified.");
    }

    reproduce(&mut md, report);

    if let Some(patch) = report.winner.as_ref().and_then(|w| w.patch.as_deref()) {
        patch_summary(&mut md, patch);
    }

    if md.chars().count() > MAX_BODY_CHARS {
        md = cut(&md, MAX_BODY_CHARS - 100);
        md.push_str("\n\n(The description was cut here; the full report is in TraceLab.)\n");
    }
    md
}

/// The winner's contract experiments, in contract order.
fn contract_table(md: &mut String, experiments: &[Experiment]) {
    let _ = writeln!(md, "#### Verification contract\n");
    let _ = writeln!(
        md,
        "| # | what it shows | revision | runs (failed) | outcome | as required | command |\n|---|---|---|---|---|---|---|"
    );
    let mut rows = 0;
    for (i, (step, shows, required)) in CONTRACT.iter().enumerate() {
        let matching: Vec<&Experiment> = experiments.iter().filter(|e| e.step == *step).collect();
        if matching.is_empty() {
            let _ = writeln!(md, "| {} | {shows} | | | no experiment | **no** | |", i + 1);
            continue;
        }
        for e in matching {
            rows += 1;
            if rows > MAX_ROWS {
                break;
            }
            let counts = e.effective_counts();
            let ok = match required {
                Outcome::Fail => counts.failures > 0,
                _ => counts.failures == 0 && counts.other == 0 && counts.runs > 0,
            };
            let _ = writeln!(
                md,
                "| {} | {shows} | {} | {} ({}) | {} | {} | {} |",
                i + 1,
                code(short(&e.revision)),
                counts.runs,
                counts.failures,
                outcome(e.outcome),
                if ok { "yes" } else { "**no**" },
                code(&scrub(&e.command))
            );
        }
    }
    md.push('\n');
}

fn outcome(o: Outcome) -> &'static str {
    match o {
        Outcome::Pass => "pass",
        Outcome::Fail => "fail",
        Outcome::FailedDifferently => "failed differently",
        Outcome::Blocked => "blocked",
    }
}

fn reproduce(md: &mut String, report: &Report) {
    let command = scrub(&report.test_command);
    let fence = fence(&command);
    let _ = writeln!(
        md,
        "### How to reproduce\n\nAt the bad revision {} the test fails:\n\n{fence}sh\ngit checkout {}\n{command}\n{fence}\n",
        code(&report.bad),
        scrub(&report.bad),
    );
    if command != report.test_command {
        let _ = writeln!(
            md,
            "(`***` stands for a value withheld from this description.)\n"
        );
    }
    if let Some(good) = &report.good {
        let _ = writeln!(md, "At the good revision {} it passes.\n", code(good));
    }
    if let Some(branch) = report
        .winner
        .as_ref()
        .filter(|w| w.status == HypothesisStatus::Verified)
        .and_then(|w| w.branch.as_deref())
    {
        let _ = writeln!(
            md,
            "On this pull request's branch {} it passes.\n",
            code(branch)
        );
    }
}

/// Files and lines changed; the diff itself is the pull request's change.
fn patch_summary(md: &mut String, patch: &str) {
    let files = tracelab_domain::patch::parse(patch).unwrap_or_default();
    let (mut added, mut removed) = (0, 0);
    for line in patch.lines() {
        if line.starts_with('+') && !line.starts_with("+++") {
            added += 1;
        } else if line.starts_with('-') && !line.starts_with("---") {
            removed += 1;
        }
    }
    let _ = writeln!(
        md,
        "### Patch\n\n{} file{} changed, +{added} −{removed} lines:\n",
        files.len(),
        if files.len() == 1 { "" } else { "s" }
    );
    for f in files.iter().take(MAX_ROWS) {
        let path = if f.new_path == "/dev/null" {
            &f.old_path
        } else {
            &f.new_path
        };
        let _ = writeln!(md, "- {}", code(path));
    }
    if files.len() > MAX_ROWS {
        let _ = writeln!(md, "- … {} more", files.len() - MAX_ROWS);
    }
}

fn short(sha: &str) -> &str {
    let mut end = sha.len().min(12);
    while !sha.is_char_boundary(end) {
        end -= 1;
    }
    &sha[..end]
}

/// `s` cut to `max` characters, with `…` when cut.
fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A code span that holds `s` whatever backticks it contains, on one line,
/// pipes escaped for tables.
fn code(s: &str) -> String {
    let s = s.replace(['\n', '\r'], " ").replace('|', "\\|");
    let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let ticks = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{s}{pad}{ticks}")
}

/// A fence longer than any backtick run in `s`.
fn fence(s: &str) -> String {
    let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

/// Plain text for one table cell or paragraph: scrubbed, one line, with
/// Markdown, HTML and mentions neutralised.
fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in scrub(s).chars() {
        match c {
            '\n' | '\r' => out.push(' '),
            '|' | '\\' | '*' | '_' | '`' | '[' | ']' | '#' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            // `@team` would notify people.
            '@' => out.push_str("&#64;"),
            _ => out.push(c),
        }
    }
    out
}

static SECRETS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    [
        // scheme://user:password@host
        (r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@", "${1}***@"),
        // API_TOKEN=…, DB_PASSWORD="…", AWS_SECRET_ACCESS_KEY=…
        (
            r#"(?i)\b([a-z0-9_]*(?:token|secret|passw(?:or)?d|pwd|api_?key|private_?key|credentials?|auth)[a-z0-9_]*=)("[^"]*"|'[^']*'|\S+)"#,
            "${1}***",
        ),
        // --password x, --token=x, -p=x is left alone (too ambiguous)
        (
            r#"(?i)(--?(?:token|password|passwd|secret|api-key|apikey|auth)(?:=|\s+))("[^"]*"|'[^']*'|\S+)"#,
            "${1}***",
        ),
        // Authorization: Bearer …
        (
            r"(?i)\b(authorization:\s*(?:bearer|basic|token)\s+)\S+",
            "${1}***",
        ),
        // GitHub, GitLab and Slack token shapes; JWTs.
        (
            r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})",
            "***",
        ),
    ]
    .into_iter()
    .map(|(re, with)| (Regex::new(re).expect("a valid pattern"), with))
    .collect()
});

/// `s` without anything that looks like a credential.
pub(crate) fn scrub(s: &str) -> String {
    let mut out = s.to_string();
    for (re, with) in SECRETS.iter() {
        out = re.replace_all(&out, *with).into_owned();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_scrubbed() {
        let table = [
            (
                "API_TOKEN=abc123 pytest -k add",
                "API_TOKEN=*** pytest -k add",
            ),
            ("DB_PASSWORD=\"x y\" make test", "DB_PASSWORD=*** make test"),
            (
                "curl https://bot:hunter2@git.example.com/x",
                "curl https://***@git.example.com/x",
            ),
            ("run --token s3cret --fast", "run --token *** --fast"),
            ("run --password=s3cret", "run --password=***"),
            ("Authorization: Bearer abc.def", "Authorization: Bearer ***"),
            ("use ghp_0123456789abcdefghijABCDEFGHIJ now", "use *** now"),
            (
                "glpat-0123456789abcdefghij and cargo test",
                "*** and cargo test",
            ),
            ("cargo test -p shop", "cargo test -p shop"),
        ];
        for (input, expected) in table {
            assert_eq!(scrub(input), expected, "{input}");
        }
    }

    #[test]
    fn code_spans_and_text_cannot_break_out() {
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x`"), "`` `x` ``");
        assert_eq!(code("a|b\nc"), "`a\\|b c`");
        assert_eq!(
            text("see @team <b>|x|</b> [l](u)"),
            "see &#64;team &lt;b&gt;\\|x\\|&lt;/b&gt; \\[l\\](u)"
        );
        assert_eq!(fence("```"), "````");
    }

    #[test]
    fn long_text_is_cut_on_characters() {
        assert_eq!(cut("ééééé", 3), "éé…");
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(short("0123456789abcdef"), "0123456789ab");
    }
}
