//! The investigation report: JSON for machines (a stable contract) and
//! Markdown for people.

use crate::experiment::Experiment;
use crate::hypothesis::{CommitInfo, FlakyStats, Hypothesis};
use crate::ids::InvestigationId;
use crate::state::{InvestigationState, Transition};
use crate::verdict::Verdict;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// Timestamps in reports and transitions.
pub type Timestamp = time::OffsetDateTime;

/// The commit the culprit search found, always reported once found with
/// confidence, whether or not a fix for it was verified: a reviewer needs the
/// answer even when its revert does not apply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Culprit {
    /// `{commit, summary, author, date}`.
    #[serde(flatten)]
    pub commit: CommitInfo,
    /// The search's confidence that every "good" judgement was right.
    pub confidence: f64,
    /// Whether a fix that undoes it was VERIFIED under the contract.
    pub verified: bool,
    /// Why it was or was not verified (the fix hypothesis' reason).
    pub verification: String,
}

/// Below this confidence a search result is a lead, not a culprit.
pub const CULPRIT_CONFIDENCE: f64 = 0.9;

/// Which version of the failing test judged the probes of the search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum OracleMode {
    /// The bad revision's test files on each probe's source (the default).
    #[default]
    TestsAtBad,
    /// Each probe's own tests (`--tests-at-revision`).
    TestsAtRevision,
}

/// How the culprit search went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct BisectSummary {
    pub good: Option<String>,
    pub bad: String,
    pub candidates: usize,
    pub rounds: u32,
    pub test_runs: u32,
    /// Commits where the test failed differently and the search routed around them.
    pub untestable: Vec<String>,
    /// Left when the search could not separate them.
    pub ambiguous: Vec<String>,
    /// Probability that every "good" judgement was right, given the measured flakiness.
    pub confidence: f64,
    pub parallelism: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The commit the search settled on, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub culprit: Option<CommitInfo>,
    #[serde(default)]
    pub oracle: OracleMode,
    /// The test files laid over each probe (tests-at-bad mode).
    #[serde(default)]
    pub oracle_files: Vec<String>,
    /// Why the search ran each revision's own tests although the bad
    /// revision's were asked for (they do not run on the good source).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oracle_note: Option<String>,
    /// The failure rate measured at the good revision when it also failed
    /// (a flaky failure that predates it, or a flakiness regression).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub good_flaky: Option<FlakyStats>,
    /// The failure rate at the bad revision over every run made there when
    /// it was compared with a failing good revision: the classification's
    /// runs and the ones added to tell the two rates apart. The report's
    /// `flaky` is this one then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bad_flaky: Option<FlakyStats>,
    /// The commit the search settled on changes test files only, and the
    /// probes ran each revision's own tests: it is where the failing test
    /// appeared or changed, not where the defect came from, so it is not
    /// reported as the culprit.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub culprit_changes_only_tests: bool,
    /// Every judgement the search used, in the order it was made: the
    /// timeline a reviewer reads (and the dashboard draws).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<ProbeRecord>,
    /// The commits the failure pointed at, which the search probed around
    /// first ([`crate::suspicion`]): best first, with each one's share of
    /// the evidence. They order the probes; the answer is still the commit
    /// whose parent passes and which fails.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pointed_at: Vec<PointedCommit>,
}

/// A commit the failure's frames and tests named ([`BisectSummary::pointed_at`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointedCommit {
    pub commit: String,
    /// Its share of the evidence, 0–1.
    pub share: f64,
}

/// One revision the culprit search judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeRecord {
    pub revision: String,
    /// Where it sits in the candidate range, oldest first (the bad revision
    /// is the last); `None` outside the range (the good revision, and older
    /// revisions tried while looking for one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<usize>,
    /// The round that probed it (looking for a good revision counts); 0 for
    /// a judgement made before the search (an earlier attempt's journal, or
    /// the early search under another model).
    pub round: u32,
    pub result: crate::bisect::ProbeResult,
    /// Test runs the judgement took (0 when reused).
    pub runs: u32,
    /// Reused, not run again by this search.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reused: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub id: InvestigationId,
    pub state: InvestigationState,
    pub verdict: Verdict,
    pub culprit: Option<Culprit>,
    pub flaky: Option<FlakyStats>,
    pub hypotheses: Vec<Hypothesis>,
    pub winner: Option<Hypothesis>,
    pub repository: String,
    pub test_command: String,
    pub bad: String,
    pub good: Option<String>,
    /// The failure under investigation, as a signature description.
    pub failure: Option<String>,
    /// Reproduction at the bad revision (the re-runs that classified behaviour).
    pub reproduction: Option<Experiment>,
    pub bisect: Option<BisectSummary>,
    /// Where to look in the code at the bad revision (the code-path agent),
    /// best first; empty when the failure output names nothing in the repository.
    #[serde(default)]
    pub suspects: Vec<Suspect>,
    #[serde(default)]
    pub notes: Vec<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: time::OffsetDateTime,
    pub duration_ms: u64,
    #[serde(default)]
    pub transitions: Vec<Transition>,
}

/// A function the code-path agent suspects — stack frames → symbols →
/// call-graph neighbourhood, ranked by the hybrid retrieval score — and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Suspect {
    /// Qualified name (`py:app.add`).
    pub symbol: String,
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub score: f64,
    /// One line per score component that contributed.
    pub reasons: Vec<String>,
}

/// One line of `tracelab investigations list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvestigationSummary {
    pub id: InvestigationId,
    pub state: InvestigationState,
    pub verdict: Option<Verdict>,
    pub repository: String,
    pub test_command: String,
    pub culprit: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: time::OffsetDateTime,
}

fn fence(text: &str) -> String {
    let longest = text
        .split('\n')
        .map(|l| l.chars().take_while(|c| *c == '`').count())
        .max()
        .unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

impl Report {
    pub fn to_markdown(&self) -> String {
        let mut md = String::new();
        let _ = writeln!(md, "# TraceLab investigation {}\n", self.id);
        let _ = writeln!(md, "- **Verdict:** `{}`", self.verdict.as_str());
        let _ = writeln!(md, "- **State:** {}", self.state);
        let _ = writeln!(md, "- **Repository:** `{}`", self.repository);
        let _ = writeln!(md, "- **Test:** `{}`", self.test_command);
        let _ = writeln!(md, "- **Bad revision:** `{}`", self.bad);
        if let Some(good) = &self.good {
            let _ = writeln!(md, "- **Good revision:** `{good}`");
        }
        if let Some(failure) = &self.failure {
            let _ = writeln!(md, "- **Failure:** {failure}");
        }
        let _ = writeln!(
            md,
            "- **Duration:** {:.1} s",
            self.duration_ms as f64 / 1000.0
        );
        if let Some(c) = &self.culprit {
            let _ = writeln!(
                md,
                "\n## Culprit\n\n`{}` {}\n\nby {} on {}; search confidence {:.3}.\n",
                c.commit.commit, c.commit.summary, c.commit.author, c.commit.date, c.confidence
            );
            if c.verified {
                let _ = writeln!(
                    md,
                    "A fix that undoes it was **verified**: {}",
                    c.verification
                );
            } else {
                let _ = writeln!(
                    md,
                    "**Not verified**: the search found this commit, but no fix for it was proven ({}). Treat it as the likely cause, not a proven one.",
                    c.verification
                );
            }
        }
        if let Some(f) = &self.flaky {
            let _ = writeln!(
                md,
                "\n## Flakiness\n\nfailed {} of {} runs ({:.1}%, 95% interval {:.1}–{:.1}%){}",
                f.failures,
                f.runs,
                f.failure_rate * 100.0,
                f.interval.0 * 100.0,
                f.interval.1 * 100.0,
                if f.confident {
                    ""
                } else {
                    "; the run cap ended the re-runs before the configured confidence"
                }
            );
        }
        if let Some(b) = &self.bisect {
            let _ = writeln!(
                md,
                "\n## Culprit search\n\n{} candidate commits, {} rounds, {} test runs, {} at once, confidence {:.3}",
                b.candidates, b.rounds, b.test_runs, b.parallelism, b.confidence
            );
            if let Some(first) = b.pointed_at.first() {
                let _ = writeln!(
                    md,
                    "\nThe failure's frames and tests pointed at {} ({:.0}% of the evidence){}: the search probed around it first (the order of the probes, not the answer).",
                    &first.commit[..12.min(first.commit.len())],
                    first.share * 100.0,
                    match b.culprit.as_ref() {
                        Some(c) if c.commit == first.commit => ", the culprit",
                        Some(_) => ", not the culprit",
                        None => "",
                    }
                );
            }
            if !b.untestable.is_empty() {
                let _ = writeln!(
                    md,
                    "\nRouted around {} untestable commits (they fail differently).",
                    b.untestable.len()
                );
            }
            if !b.ambiguous.is_empty() {
                let _ = writeln!(md, "\nCould not separate: {}", b.ambiguous.join(", "));
            }
            match b.oracle {
                OracleMode::TestsAtBad if !b.oracle_files.is_empty() => {
                    let _ = writeln!(
                        md,
                        "\nEvery probe ran the bad revision's version of {} on its own source.",
                        b.oracle_files.join(", ")
                    );
                }
                OracleMode::TestsAtRevision => {
                    let _ = writeln!(md, "\nEvery probe ran its own revision's tests.");
                }
                _ => {}
            }
            if let Some(g) = &b.good_flaky {
                let _ = writeln!(
                    md,
                    "\nAt the good revision the test failed {} of {} runs ({:.1}%, 95% interval {:.1}–{:.1}%).",
                    g.failures,
                    g.runs,
                    g.failure_rate * 100.0,
                    g.interval.0 * 100.0,
                    g.interval.1 * 100.0
                );
            }
            if let Some(note) = &b.note {
                let _ = writeln!(md, "\n{note}");
            }
        }
        if !self.suspects.is_empty() {
            let _ = writeln!(md, "\n## Where to look\n");
            for s in &self.suspects {
                let _ = writeln!(
                    md,
                    "- `{}` {}:{}-{} (score {:.2}): {}",
                    s.symbol,
                    s.path,
                    s.start_line,
                    s.end_line,
                    s.score,
                    s.reasons.join("; ")
                );
            }
        }
        let _ = writeln!(md, "\n## Hypotheses\n");
        let _ = writeln!(
            md,
            "| # | agent | kind | status | summary | reason |\n|---|---|---|---|---|---|"
        );
        for h in &self.hypotheses {
            let winner = self.winner.as_ref().is_some_and(|w| w.id == h.id);
            let _ = writeln!(
                md,
                "| {}{} | {:?} | {:?} | {} | {} | {} |",
                h.number,
                if winner { " (winner)" } else { "" },
                h.agent,
                h.kind,
                h.status.as_str(),
                h.summary.replace('|', "\\|"),
                h.status_reason.replace('|', "\\|")
            );
        }
        for h in &self.hypotheses {
            let _ = writeln!(md, "\n### Hypothesis {}: {}\n", h.number, h.summary);
            if let Some(branch) = &h.branch {
                let _ = writeln!(md, "Branch: `{branch}`\n");
            }
            if let Some(detail) = &h.detail {
                repair_markdown(&mut md, detail);
            }
            if !h.experiments.is_empty() {
                let _ = writeln!(
                    md,
                    "| step | command | revision | exit | runs (fail) | duration | outcome | sandbox |\n|---|---|---|---|---|---|---|---|"
                );
                for e in &h.experiments {
                    let counts = e.effective_counts();
                    let _ = writeln!(
                        md,
                        "| {} | `{}` | `{}` | {} | {} ({}) | {} ms | {:?}{} | {} |",
                        e.step.as_str(),
                        e.command.replace('|', "\\|"),
                        &e.revision[..e.revision.len().min(12)],
                        e.exit_code
                            .map(|c| c.to_string())
                            .unwrap_or_else(|| "-".into()),
                        counts.runs,
                        counts.failures,
                        e.duration_ms,
                        e.outcome,
                        e.note
                            .as_deref()
                            .map(|n| format!(": {}", n.replace('|', "\\|")))
                            .unwrap_or_default(),
                        e.sandbox
                    );
                }
            }
            if let Some(patch) = &h.patch {
                let f = fence(patch);
                let _ = writeln!(
                    md,
                    "\n{f}diff\n{}{}{f}",
                    patch,
                    if patch.ends_with('\n') { "" } else { "\n" }
                );
            }
        }
        if !self.notes.is_empty() {
            let _ = writeln!(md, "\n## Notes\n");
            for n in &self.notes {
                let _ = writeln!(md, "- {n}");
            }
        }
        md
    }
}

fn tests_run_markdown(md: &mut String, detail: &serde_json::Value) {
    if let Some(tests) = detail["tests_run"].as_array() {
        let tests: Vec<String> = tests
            .iter()
            .filter_map(|t| t.as_str().map(|t| format!("`{t}`")))
            .collect();
        let _ = writeln!(md, "Tests that judged the fix: {}.\n", tests.join(", "));
    }
}

/// The LLM patch agent's part of a repair hypothesis: the model, the
/// prompt's digest and tokens, and each call's outcome.
fn model_markdown(md: &mut String, detail: &serde_json::Value) {
    let run = &detail["model_run"];
    let model = detail["model"]
        .as_str()
        .or(run["model"].as_str())
        .unwrap_or("?");
    let _ = write!(md, "Source: model `{model}`");
    if let Some(digest) = detail["prompt_sha256"].as_str() {
        let _ = write!(
            md,
            " (prompt sha256 `{digest}`, {} prompt and {} reply tokens)",
            detail["prompt_tokens"], detail["completion_tokens"]
        );
    }
    let _ = writeln!(
        md,
        ". The LLM patch agent used {} of {} tokens in {:.1} s; {} edit(s) refused by the patch rules or the oracle rule.\n",
        run["tokens_used"],
        run["token_budget"],
        run["used_ms"].as_f64().unwrap_or(0.0) / 1000.0,
        run["refused_edits"]
    );
    tests_run_markdown(md, detail);
    let calls = run["calls"].as_array().cloned().unwrap_or_default();
    if calls.is_empty() {
        return;
    }
    let _ = writeln!(md, "| call | outcome | reason | ms |\n|---|---|---|---|");
    for c in &calls {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            c["call"],
            c["outcome"].as_str().unwrap_or("?"),
            c["reason"]
                .as_str()
                .unwrap_or("")
                .replace('|', "\\|")
                .replace('\n', " "),
            c["duration_ms"]
        );
    }
    md.push('\n');
}

/// The experience agent's hypothesis: which past repair was reused, from
/// which history, and how it was merged into the bad revision.
fn experience_markdown(md: &mut String, detail: &serde_json::Value) {
    let e = &detail["experience"];
    let text = |v: &serde_json::Value| v.as_str().unwrap_or("?").to_string();
    let list = |v: &serde_json::Value| {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    let _ = writeln!(
        md,
        "Source: past repair `{}` (L1{}) of `{}`, mined from history `{}` of {} (fixed at `{}`); matched by {}; re-applied: {}.\n",
        text(&e["record"]),
        if e["recurring"] == true {
            ", recurring problem"
        } else {
            ""
        },
        text(&e["problem"]),
        text(&e["history"]),
        text(&e["repository"]),
        text(&e["fixed_at"]),
        list(&e["matched"]),
        list(&e["merge"]),
    );
    let left_out = list(&e["left_out_test_files"]);
    if !left_out.is_empty() {
        let _ = writeln!(
            md,
            "Left out of the reused repair (a fix may not change what judges it): {left_out}.\n"
        );
    }
    tests_run_markdown(md, detail);
}

/// Screened repair candidates shown at most, best-ranked first.
const SCREENED_SHOWN: usize = 10;

/// A repair hypothesis's source, tests and screening (its `detail`).
fn repair_markdown(md: &mut String, detail: &serde_json::Value) {
    if detail["source"] == "experience" {
        experience_markdown(md, detail);
        return;
    }
    let by_model = detail["source"] == "model";
    if by_model {
        model_markdown(md, detail);
    }
    let Some(screening) = detail.get("screening") else {
        return;
    };
    let screened = screening["screened"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let passed = screened.iter().filter(|c| c["outcome"] == "pass").count();
    let source = if by_model {
        "Repair templates tried first".to_string()
    } else {
        format!(
            "Source: repair template `{}`",
            detail["operator"].as_str().unwrap_or("?")
        )
    };
    let _ = writeln!(
        md,
        "{source}. Screening: {} candidate edits generated, {} screened with the failing test in {:.1} s (budget {:.0} s), {} passed it.\n",
        screening["generated"],
        screened.len(),
        screening["used_ms"].as_f64().unwrap_or(0.0) / 1000.0,
        screening["budget_ms"].as_f64().unwrap_or(0.0) / 1000.0,
        passed
    );
    if !by_model {
        tests_run_markdown(md, detail);
    }
    let _ = writeln!(
        md,
        "| candidate | operator | where | edit | screening | ms |\n|---|---|---|---|---|---|"
    );
    for (i, c) in screened.iter().take(SCREENED_SHOWN).enumerate() {
        let _ = writeln!(
            md,
            "| {} | {} | `{}:{}` | {} | {} | {} |",
            i + 1,
            c["operator"].as_str().unwrap_or("?"),
            c["path"].as_str().unwrap_or("?"),
            c["line"],
            c["description"].as_str().unwrap_or("").replace('|', "\\|"),
            c["outcome"].as_str().unwrap_or("?"),
            c["duration_ms"]
        );
    }
    if screened.len() > SCREENED_SHOWN {
        let _ = writeln!(
            md,
            "\n({} more in the JSON report)",
            screened.len() - SCREENED_SHOWN
        );
    }
    md.push('\n');
}
