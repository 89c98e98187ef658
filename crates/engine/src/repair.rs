//! Fixes beyond revert: the code-path agent's offline repair templates.
//!
//! When no fix for a culprit was verified, the suspect functions (never a
//! test file, never the oracle's files) get candidate edits from
//! `tracelab_repair`. Candidates are *screened* first: each is applied in a
//! scratch worktree and only the failing test runs, k at a time, within a
//! wall-clock budget. Screening runs are recorded on the hypothesis but are
//! not patch attempts. The passing candidates, smallest edit first, then go
//! through the whole four-part contract on the hypothesis branch (at most
//! `max_patch_attempts`), plus the failing test's own files and the test
//! files that name the patched function, so an edit that only makes the one
//! test pass and breaks its neighbours is rejected.

use crate::classification::Classification;
use crate::context::Context;
use crate::git::Worktree;
use crate::oracle;
use crate::probe::{Judged, experiment};
use crate::verify::{
    Judging, exec_judged, hypothesis_slot, regression_before, regression_command, run_contract,
    worktree_reset,
};
use serde::Serialize;
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tracelab_domain::contract::judge_fix;
use tracelab_domain::experiment::{Experiment, Outcome, Step};
use tracelab_domain::hypothesis::{AgentKind, Hypothesis, HypothesisKind, HypothesisStatus};
use tracelab_domain::ids::{HypothesisId, hypothesis_branch};
use tracelab_domain::oracle::{is_test_path, split_patch};
use tracelab_domain::ports::{CommandSpec, Sandbox};
use tracelab_domain::report::Suspect;
use tracelab_domain::runner::{self, Runner};
use tracelab_domain::{Error, Result};
use tracelab_evidence::test_run::TestRun;
use tracelab_repair::{Candidate, CulpritHunk, Target};

mod coverage;
mod llm;

pub use crate::config::RepairMode;

/// Test files that name the patched function, run beside the failing
/// test's own files (more make the check slower, not much safer).
const NEIGHBOUR_FILES: usize = 8;

/// One screened candidate, as the report shows it.
#[derive(Debug, Clone, Serialize)]
struct Screened {
    #[serde(flatten)]
    candidate: Candidate,
    outcome: Outcome,
    duration_ms: u64,
}

/// What screening did, stored on the hypothesis (`detail.screening`).
#[derive(Debug, Clone, Serialize)]
struct Screening {
    budget_ms: u64,
    used_ms: u64,
    generated: usize,
    /// Suspects left alone because they are test code or the oracle's files
    /// (a fix may never change what judges it).
    skipped_test_suspects: Vec<String>,
    screened: Vec<Screened>,
}

/// Repair templates run for a deterministic failure that nothing explained:
/// no hypothesis verified (a verified revert, order or environment
/// dependence already says what to do) and a hypothesis slot left.
pub fn wanted(
    config: &crate::EngineConfig,
    classification: &Classification,
    hypotheses: &[Hypothesis],
) -> bool {
    config.repair != RepairMode::Off
        && classification.decision.behaviour
            == tracelab_domain::sequential::Behaviour::Deterministic
        && hypotheses.len() < config.max_hypotheses
        && !hypotheses
            .iter()
            .any(|h| h.status == HypothesisStatus::Verified)
}

/// The repair hypothesis numbered `number`, or a note saying why there is
/// none. `culprit`, the commit a search named (its fix was not verified),
/// gives the templates its changed lines to undo one by one and the model
/// its diff.
pub async fn repair(
    ctx: &Context,
    classification: &Classification,
    suspects: &[Suspect],
    number: u32,
    culprit: Option<&str>,
) -> Result<std::result::Result<Hypothesis, String>> {
    let Some(output) = classification.baseline_output.as_deref() else {
        return Ok(Err("repair: no failing output to repair".into()));
    };
    let judges: BTreeSet<String> = oracle::judges(ctx, classification)
        .await?
        .into_iter()
        .collect();
    let culprit = match culprit {
        Some(commit) => culprit_diff(ctx, commit, &judges).await?,
        None => None,
    };
    let mode = ctx.config.repair;
    let mut notes: Vec<String> = Vec::new();
    let mut screening = None;
    let mut prover: Option<Prover<'_>> = None;
    if mode.templates() {
        let hunks = culprit
            .as_ref()
            .map(|c| CulpritHunk::from_diff(&c.diff))
            .unwrap_or_default();
        match templates(ctx, classification, suspects, output, &judges, &hunks).await? {
            Ok((found, chosen)) => {
                // With the model after them, the templates leave it one attempt.
                let limit = if mode.model() {
                    (ctx.config.max_patch_attempts - 1).max(1)
                } else {
                    ctx.config.max_patch_attempts
                };
                let symbols: Vec<&str> =
                    chosen.iter().map(|c| c.candidate.symbol.as_str()).collect();
                let mut p = Prover::open(ctx, classification, number, &symbols, &judges).await?;
                for c in chosen.iter().take(limit) {
                    if p.attempt(&Attempt::template(&c.candidate)).await?
                        == HypothesisStatus::Verified
                    {
                        break;
                    }
                }
                screening = Some(found);
                prover = Some(p);
            }
            Err(note) => notes.push(note),
        }
    }
    let verified = prover.as_ref().is_some_and(|p| p.verified());
    let mut model_run = None;
    if mode.model() && !verified {
        match ctx.config.chat_model.clone() {
            Some(model) => {
                let run = llm::repair(
                    ctx,
                    classification,
                    suspects,
                    output,
                    &judges,
                    number,
                    model,
                    &mut prover,
                    notes.first().map(String::as_str),
                    culprit.as_ref(),
                )
                .await?;
                model_run = Some(run);
            }
            None => notes.push("the LLM patch agent: no model endpoint is configured".into()),
        }
    }
    let h = match (prover, &model_run) {
        (Some(p), _) => p.close().await,
        (None, Some(run)) => run.unproven(ctx, number),
        (None, None) => return Ok(Err(notes.join("; "))),
    };
    let mut h = match &screening {
        Some(s) => with_detail(h, s),
        None => h,
    };
    if let Some(run) = &model_run {
        run.annotate(&mut h);
    }
    Ok(Ok(h))
}

/// The template candidates that passed screening (smallest edit first), or
/// a note saying why there are none.
async fn templates(
    ctx: &Context,
    classification: &Classification,
    suspects: &[Suspect],
    output: &str,
    judges: &BTreeSet<String>,
    culprit: &[CulpritHunk],
) -> Result<std::result::Result<(Screening, Vec<Screened>), String>> {
    let git = ctx.pool.workspace().git().clone();
    let relative = crate::oracle::relative_to_worktrees(output, ctx.pool.workspace().root());
    let frames: Vec<(String, u32)> = TestRun::read(ctx.test.runner, &relative)
        .frames()
        .into_iter()
        .filter(|f| f.in_app)
        .filter_map(|f| Some((f.file?, f.line?)))
        .collect();
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    for s in suspects {
        if is_test_path(&s.path) || judges.contains(&s.path) {
            skipped.push(s.symbol.clone());
            continue;
        }
        let Some(source) = git.show_file(&ctx.bad, &s.path).await? else {
            continue;
        };
        let hot: Vec<u32> = frames
            .iter()
            .filter(|(f, _)| f == &s.path || f.ends_with(&format!("/{}", s.path)))
            .map(|(_, line)| *line)
            .collect();
        files.push((s, source, hot));
    }
    let targets: Vec<Target<'_>> = files
        .iter()
        .map(|(s, source, hot)| Target {
            path: &s.path,
            source,
            symbol: &s.symbol,
            start_line: s.start_line,
            end_line: s.end_line,
            score: s.score,
            hot_lines: hot,
        })
        .collect();
    let candidates = tracelab_repair::propose_with_culprit(
        &targets,
        output,
        culprit,
        ctx.config.repair_candidates,
    );
    if candidates.is_empty() {
        return Ok(Err(format!(
            "repair templates: no candidate edit for the {} suspect function(s) outside test files",
            targets.len()
        )));
    }
    ctx.progress.report(&format!(
        "repair templates: screening {} candidate edits of {} suspect function(s) with the failing test ({} s budget)",
        candidates.len(),
        targets.len(),
        ctx.config.repair_screening_budget.as_secs()
    ));
    let mut screening = screen(ctx, classification, candidates).await?;
    screening.skipped_test_suspects = skipped;
    let mut passing: Vec<&Screened> = screening
        .screened
        .iter()
        .filter(|s| s.outcome == Outcome::Pass)
        .collect();
    // The culprit's own lines undone first (the code passed before it),
    // then the smallest edit; among equals, the better-ranked (screened first).
    passing.sort_by_key(|s| (!s.candidate.operator.from_culprit(), s.candidate.edit_size));
    if passing.is_empty() {
        return Ok(Err(format!(
            "repair templates: {} of {} candidate edits screened in {:.1} s; none made the failing test pass",
            screening.screened.len(),
            screening.generated,
            screening.used_ms as f64 / 1000.0
        )));
    }
    let chosen: Vec<Screened> = passing
        .into_iter()
        .take(ctx.config.max_patch_attempts)
        .cloned()
        .collect();
    Ok(Ok((screening, chosen)))
}

/// The culprit commit as the repair sees it: its one-line summary and its
/// diff against its parent, source files only (tests and the failing test's
/// files are the oracle), without context lines.
pub(crate) struct CulpritDiff {
    pub commit: String,
    pub summary: String,
    pub diff: String,
}

async fn culprit_diff(
    ctx: &Context,
    commit: &str,
    judges: &BTreeSet<String>,
) -> Result<Option<CulpritDiff>> {
    let git = ctx.pool.workspace().git();
    let info = git.commit_info(commit).await?;
    let parent = format!("{commit}^");
    let Ok(diff) = git
        .run(&[
            "diff",
            "-U0",
            "--no-color",
            "--no-ext-diff",
            &parent,
            commit,
        ])
        .await
    else {
        // A root commit has no parent to go back to.
        return Ok(None);
    };
    // The oracle is never taken from the culprit: its test files and the
    // failing test's files are left out, as for the revert.
    let kept = split_patch(tracelab_domain::patch::parse(&diff)?, judges).kept;
    let diff = tracelab_domain::patch::render(&kept);
    Ok((!diff.trim().is_empty()).then_some(CulpritDiff {
        commit: info.commit,
        summary: info.summary,
        diff,
    }))
}

fn with_detail(mut h: Hypothesis, screening: &Screening) -> Hypothesis {
    let mut detail = h.detail.take().unwrap_or_else(|| serde_json::json!({}));
    if let Some(map) = detail.as_object_mut() {
        map.insert("source".into(), "repair_template".into());
        map.insert(
            "screening".into(),
            serde_json::to_value(screening).unwrap_or_default(),
        );
    }
    h.detail = Some(detail);
    h
}

/// Runs the failing test on each candidate, k at a time, best-ranked first,
/// until the budget is spent or enough candidates passed.
async fn screen(
    ctx: &Context,
    classification: &Classification,
    candidates: Vec<Candidate>,
) -> Result<Screening> {
    let budget = ctx.config.repair_screening_budget;
    let started = Instant::now();
    let deadline = started + budget;
    let generated = candidates.len();
    let (_, spec) = regression_command(ctx, classification);
    let enough = ctx.config.max_patch_attempts + 1;
    let next = AtomicUsize::new(0);
    let passed = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Screened)>> = Mutex::new(Vec::new());
    let worker = |slot: usize| {
        let (candidates, spec, next, passed, results) =
            (&candidates, &spec, &next, &passed, &results);
        async move {
            let worktree = ctx
                .pool
                .workspace()
                .detached(&format!("repair-{slot}"), &ctx.bad)
                .await?;
            let sandbox = ctx
                .pool
                .provider()
                .open(&worktree.path, &format!("{}-repair-{slot}", ctx.id))
                .await?;
            let outcome = async {
                loop {
                    let remaining = deadline.saturating_duration_since(Instant::now());
                    if remaining < Duration::from_millis(500)
                        || passed.load(Ordering::Acquire) >= enough
                    {
                        return Ok::<(), Error>(());
                    }
                    let i = next.fetch_add(1, Ordering::AcqRel);
                    let Some(candidate) = candidates.get(i) else {
                        return Ok(());
                    };
                    let spec = CommandSpec {
                        timeout: spec.timeout.min(remaining),
                        ..spec.clone()
                    };
                    let judged = screen_one(
                        ctx,
                        &worktree,
                        sandbox.as_ref(),
                        candidate,
                        &spec,
                        classification,
                    )
                    .await?;
                    if judged.outcome == Outcome::Pass {
                        passed.fetch_add(1, Ordering::AcqRel);
                    }
                    let screened = Screened {
                        candidate: candidate.clone(),
                        outcome: judged.outcome,
                        duration_ms: judged.run.result.duration.as_millis() as u64,
                    };
                    results
                        .lock()
                        .expect("screening results")
                        .push((i, screened));
                }
            }
            .await;
            let _ = sandbox.close().await;
            outcome
        }
    };
    let workers = (0..ctx.pool.size()).map(worker);
    for r in futures::future::join_all(workers).await {
        r?;
    }
    let mut screened = results.into_inner().expect("screening results");
    screened.sort_by_key(|(i, _)| *i);
    Ok(Screening {
        budget_ms: budget.as_millis() as u64,
        used_ms: started.elapsed().as_millis() as u64,
        generated,
        skipped_test_suspects: Vec::new(),
        screened: screened.into_iter().map(|(_, s)| s).collect(),
    })
}

async fn screen_one(
    ctx: &Context,
    worktree: &Worktree,
    sandbox: &dyn Sandbox,
    candidate: &Candidate,
    spec: &CommandSpec,
    classification: &Classification,
) -> Result<Judged> {
    worktree_reset(worktree, &ctx.bad).await?;
    worktree
        .write_file(&candidate.path, &candidate.content)
        .await?;
    exec_judged(
        sandbox,
        spec,
        ctx.test.runner,
        classification.baseline.as_ref(),
    )
    .await
}

/// One fix from any source, as the contract proves it.
pub(crate) struct Attempt {
    /// Whole files after the edit.
    pub files: Vec<(String, String)>,
    pub symbol: String,
    pub path: String,
    pub line: u32,
    pub description: String,
    pub summary: String,
    /// "repair template off_by_one", "model qwen2.5-coder".
    pub source: String,
    /// Source-specific fields of `detail` (operator, or model and prompt digest).
    pub detail: serde_json::Map<String, serde_json::Value>,
}

impl Attempt {
    fn template(c: &Candidate) -> Self {
        let mut detail = serde_json::Map::new();
        detail.insert("operator".into(), c.operator.name().into());
        Attempt {
            files: vec![(c.path.clone(), c.content.clone())],
            symbol: c.symbol.clone(),
            path: c.path.clone(),
            line: c.line,
            description: c.description.clone(),
            summary: summary(c),
            source: format!("repair template {}", c.operator.name()),
            detail,
        }
    }
}

/// The hypothesis branch's worktree and sandbox, with the contract's
/// "before" steps run once, proving one attempt after another (at most
/// `max_patch_attempts`) until one is verified.
pub(crate) struct Prover<'a> {
    ctx: &'a Context,
    classification: &'a Classification,
    number: u32,
    worktree: Worktree,
    sandbox: Box<dyn Sandbox>,
    before: Vec<Experiment>,
    neighbours: Neighbours,
    h: Hypothesis,
    earlier: Vec<String>,
    attempts: usize,
    failed: Option<String>,
}

impl<'a> Prover<'a> {
    /// `symbols` are the functions the attempts will likely patch (for the
    /// neighbour tests).
    pub(crate) async fn open(
        ctx: &'a Context,
        classification: &'a Classification,
        number: u32,
        symbols: &[&str],
        judges: &BTreeSet<String>,
    ) -> Result<Prover<'a>> {
        let branch = hypothesis_branch(&ctx.issue_id, number);
        let mut h = Hypothesis::new(
            HypothesisId::new(&ctx.id, number),
            number,
            AgentKind::CodePath,
            HypothesisKind::Patch,
            "an edit of a suspect function fixes the failure",
        );
        h.branch = Some(branch.clone());
        let (worktree, sandbox) = hypothesis_slot(ctx, number, &branch).await?;
        let mut p = Prover {
            ctx,
            classification,
            number,
            worktree,
            sandbox,
            before: Vec::new(),
            neighbours: Neighbours::default(),
            h,
            earlier: Vec::new(),
            attempts: 0,
            failed: None,
        };
        let judging = p.judging();
        let prepared = async {
            let before = regression_before(ctx, judging, p.sandbox.as_ref()).await?;
            let files = neighbour_files(ctx, symbols, judges).await?;
            let before_run = match neighbour_spec(ctx, classification, &files) {
                Some((_, spec)) => {
                    worktree_reset(&p.worktree, &ctx.bad).await?;
                    Some(p.sandbox.exec(&spec).await?)
                }
                None => None,
            };
            let coverage = coverage::suite_coverage(ctx, &p.worktree, p.sandbox.as_ref()).await?;
            Ok::<_, Error>((
                before,
                Neighbours {
                    files,
                    before: before_run,
                    coverage: Some(coverage),
                },
            ))
        }
        .await;
        match prepared {
            Ok((before, neighbours)) => {
                p.before = before;
                p.neighbours = neighbours;
            }
            Err(e) => p.failed = Some(e.message),
        }
        Ok(p)
    }

    fn judging(&self) -> Judging<'a> {
        Judging {
            classification: self.classification,
            passes_needed: 1,
        }
    }

    pub(crate) fn verified(&self) -> bool {
        self.h.status == HypothesisStatus::Verified
    }

    /// Attempts left under `max_patch_attempts`, none once one is verified
    /// or the slot broke.
    pub(crate) fn left(&self) -> usize {
        if self.verified() || self.failed.is_some() {
            return 0;
        }
        self.ctx
            .config
            .max_patch_attempts
            .saturating_sub(self.attempts)
    }

    /// The whole contract for `a`; its status (BLOCKED when nothing is left
    /// or the slot broke).
    pub(crate) async fn attempt(&mut self, a: &Attempt) -> Result<HypothesisStatus> {
        if self.left() == 0 {
            return Ok(HypothesisStatus::Blocked);
        }
        self.attempts += 1;
        match self.run(a).await {
            Ok(status) => Ok(status),
            Err(e) => {
                self.failed = Some(e.message);
                Ok(HypothesisStatus::Blocked)
            }
        }
    }

    async fn run(&mut self, a: &Attempt) -> Result<HypothesisStatus> {
        let ctx = self.ctx;
        let number = self.number;
        worktree_reset(&self.worktree, &ctx.bad).await?;
        for (path, content) in &a.files {
            self.worktree.write_file(path, content).await?;
        }
        let message = format!(
            "Fix {}: {} ({}:{}; TraceLab hypothesis {number}, {})\n\nProposed by TraceLab; not merged.",
            a.symbol, a.description, a.path, a.line, a.source
        );
        let (mut experiments, patch) = run_contract(
            ctx,
            self.judging(),
            &self.worktree,
            self.sandbox.as_ref(),
            &self.before,
            &message,
        )
        .await?;
        let mut tests = vec![
            regression_command(ctx, self.classification).0,
            ctx.test.display(),
        ];
        let mut covering = Vec::new();
        if patch.is_some() {
            let plan = self.neighbours.plan(ctx, a).await?;
            covering = plan.covering.clone();
            if let Some((display, spec)) = neighbour_spec(ctx, self.classification, &plan.selection)
            {
                experiments.push(
                    neighbour_experiment(
                        ctx,
                        self.classification,
                        &display,
                        &spec,
                        &self.worktree,
                        self.sandbox.as_ref(),
                        &plan,
                    )
                    .await?,
                );
                tests.push(display);
            }
        }
        tests.dedup();
        let judgement = judge_fix(&experiments, 1);
        let h = &mut self.h;
        h.summary = a.summary.clone();
        h.experiments = experiments;
        h.patch = patch;
        h.status = judgement.status;
        let mut detail = a.detail.clone();
        for (k, v) in [
            ("symbol", serde_json::Value::from(a.symbol.clone())),
            ("path", a.path.clone().into()),
            ("line", a.line.into()),
            ("edit", a.description.clone().into()),
            ("attempt", self.attempts.into()),
            ("tests_run", tests.into()),
        ] {
            detail.insert(k.into(), v);
        }
        // Which tests coverage added, or why it added none.
        match self.neighbours.coverage.as_ref() {
            Some(Ok(_)) => detail.insert("covering_tests".into(), covering.into()),
            Some(Err(why)) => detail.insert("coverage".into(), why.clone().into()),
            None => None,
        };
        h.detail = Some(serde_json::Value::Object(detail));
        let mut reason = format!("{} ({}: {}", judgement.reason, a.source, a.description);
        if !self.earlier.is_empty() {
            reason.push_str(&format!("; earlier: {}", self.earlier.join("; ")));
        }
        reason.push(')');
        h.status_reason = reason;
        if judgement.status != HypothesisStatus::Verified {
            self.earlier.push(format!(
                "{} {}: {}",
                a.description,
                judgement.status.as_str(),
                judgement.reason
            ));
        }
        Ok(judgement.status)
    }

    /// What the last attempt's verification said, for the next model
    /// prompt: the reason and the first failing step's output.
    pub(crate) fn last_verification(&self) -> String {
        let failing = self
            .h
            .experiments
            .iter()
            .skip(self.before.len())
            .find(|e| e.outcome != Outcome::Pass);
        let mut out = format!("{}: {}", self.h.status.as_str(), self.h.status_reason);
        if let Some(e) = failing {
            out.push_str(&format!(
                "\n\nThe step that did not pass: `{}` ({:?}{})\n{}",
                e.command,
                e.outcome,
                e.note
                    .as_deref()
                    .map(|n| format!("; {n}"))
                    .unwrap_or_default(),
                tail(&e.output, 4000)
            ));
        }
        out
    }

    pub(crate) async fn close(mut self) -> Hypothesis {
        let _ = self.sandbox.close().await;
        if let Some(reason) = self.failed.take() {
            self.h.status = HypothesisStatus::Blocked;
            self.h.status_reason = reason;
        } else if self.attempts == 0 {
            self.h.status = HypothesisStatus::Inconclusive;
            self.h.status_reason = "no candidate edit reached the contract".into();
        }
        self.h
    }
}

/// The last `limit` bytes of `text`, on a character boundary.
pub(crate) fn tail(text: &str, limit: usize) -> &str {
    if text.len() <= limit {
        return text;
    }
    let mut start = text.len() - limit;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

fn summary(c: &Candidate) -> String {
    format!(
        "the edit {} in {} ({}:{}) fixes the failure (repair template {})",
        c.description,
        c.symbol,
        c.path,
        c.line,
        c.operator.name()
    )
}

/// What judges an attempt beside the contract: the neighbour test files
/// found by name (run once at the bad revision when the Prover opens), and
/// the suite's coverage for the tests that run the patched function.
#[derive(Default)]
struct Neighbours {
    /// The failing test's files and the test files naming a patched
    /// function (pytest only).
    files: Vec<String>,
    /// Those files at the bad revision.
    before: Option<tracelab_domain::ports::CommandResult>,
    /// `None` before the Prover opened; `Some(Err(why))` when coverage
    /// selects nothing.
    coverage: Option<std::result::Result<coverage::Coverage, String>>,
}

/// The neighbour tests of one attempt.
struct Plan {
    /// Files and node ids to run.
    selection: Vec<String>,
    /// The node ids coverage added.
    covering: Vec<String>,
    /// Covering tests left out by the cap.
    more: usize,
    /// Tests that already failed at the bad revision.
    already: BTreeSet<String>,
}

impl Neighbours {
    async fn plan(&self, ctx: &Context, a: &Attempt) -> Result<Plan> {
        let mut already: BTreeSet<String> = self
            .before
            .iter()
            .flat_map(|b| TestRun::read(ctx.test.runner, &b.output).failing_tests())
            .collect();
        let mut selection = self.files.clone();
        let mut covering = Vec::new();
        let mut more = 0;
        if let Some(Ok(coverage)) = &self.coverage {
            let git = ctx.pool.workspace().git();
            let mut edits = Vec::new();
            for (path, content) in &a.files {
                edits.push((
                    path.clone(),
                    git.show_file(&ctx.bad, path).await?,
                    content.clone(),
                ));
            }
            let (ids, left_out) = coverage.covering(&coverage::patched_regions(&edits));
            more = left_out;
            for id in ids {
                // A test in a file that runs whole already is not repeated.
                let file = id.split("::").next().unwrap_or_default();
                if !self.files.iter().any(|f| f == file) {
                    selection.push(id.clone());
                    covering.push(id);
                }
            }
            already.extend(coverage.failing_before());
        }
        Ok(Plan {
            selection,
            covering,
            more,
            already,
        })
    }
}

/// The failing test's files and the test files that name a patched
/// function (`git grep -w` at the bad revision, at most
/// [`NEIGHBOUR_FILES`] per function), for pytest.
async fn neighbour_files(
    ctx: &Context,
    symbols: &[&str],
    judges: &BTreeSet<String>,
) -> Result<Vec<String>> {
    if ctx.test.runner != Runner::Pytest {
        return Ok(Vec::new());
    }
    let mut files: BTreeSet<String> = judges.iter().filter(|f| is_test_path(f)).cloned().collect();
    let git = ctx.pool.workspace().git();
    for symbol in symbols {
        let name = symbol
            .rsplit(['.', ':'])
            .next()
            .unwrap_or_default()
            .to_string();
        if name.len() < 3 || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        // `git grep` exits 1 when nothing matches.
        let found = git
            .run(&[
                "grep", "-l", "-w", "-F", "-e", &name, &ctx.bad, "--", "*.py",
            ])
            .await
            .unwrap_or_default();
        let prefix = format!("{}:", ctx.bad);
        files.extend(
            found
                .lines()
                .filter_map(|l| l.strip_prefix(&prefix))
                .filter(|p| is_test_path(p) && !p.ends_with("conftest.py"))
                .take(NEIGHBOUR_FILES)
                .map(str::to_string),
        );
    }
    Ok(files.into_iter().collect())
}

/// pytest on `selection` (files and node ids), when that is more than the
/// test command or the failing test alone already runs.
fn neighbour_spec(
    ctx: &Context,
    classification: &Classification,
    selection: &[String],
) -> Option<(String, CommandSpec)> {
    let first = selection.first()?;
    let mut argv = runner::isolate(ctx.test.runner, &ctx.test.argv, first)?;
    argv.extend(selection.iter().skip(1).cloned());
    if argv == ctx.test.argv || Some(argv.clone()) == classification.isolated_command(&ctx.test) {
        return None;
    }
    Some((shell_words::join(&argv), ctx.spec(&argv, &[])))
}

/// The neighbour tests after the fix: passing, or failing only where they
/// already failed at the bad revision.
async fn neighbour_experiment(
    ctx: &Context,
    classification: &Classification,
    display: &str,
    spec: &CommandSpec,
    worktree: &Worktree,
    sandbox: &dyn Sandbox,
    plan: &Plan,
) -> Result<Experiment> {
    let revision = crate::git::run_git(&worktree.path, &["rev-parse", "HEAD"]).await?;
    let judged = exec_judged(sandbox, spec, ctx.test.runner, None).await?;
    let mut e = experiment(
        Step::ExistingTests,
        display,
        revision.trim(),
        &judged,
        ctx.config.stored_output_limit,
    );
    let what = match (plan.covering.len(), plan.more) {
        (0, _) => {
            "the failing test's files and the test files naming the patched function".to_string()
        }
        (n, 0) => format!(
            "the failing test's files, the test files naming the patched function and {n} test(s) covering it (coverage.py)"
        ),
        (n, more) => format!(
            "the failing test's files, the test files naming the patched function and {n} test(s) covering it (coverage.py; {more} more left out by the cap of {})",
            coverage::COVERING_TESTS
        ),
    };
    e.note = Some(what.clone());
    if judged.outcome != Outcome::Pass && judged.outcome != Outcome::Blocked {
        let already: BTreeSet<String> = plan
            .already
            .iter()
            .cloned()
            .chain(
                classification
                    .baseline
                    .iter()
                    .flat_map(|b| b.failing_tests.iter().cloned()),
            )
            .collect();
        let now: BTreeSet<String> = TestRun::read(ctx.test.runner, &judged.run.result.output)
            .failing_tests()
            .into_iter()
            .collect();
        if !now.is_empty() && now.is_subset(&already) {
            e.outcome = Outcome::Pass;
            e.note = Some(format!(
                "{what}; only failures that already happened before the fix remain: {}",
                now.into_iter().collect::<Vec<_>>().join(", ")
            ));
        } else {
            e.outcome = Outcome::Fail;
            let new: Vec<String> = now.difference(&already).cloned().collect();
            e.note = Some(format!(
                "the fix breaks tests beside the failing one: {} ({what})",
                if new.is_empty() {
                    "see the output".to_string()
                } else {
                    new.join(", ")
                }
            ));
        }
    }
    Ok(e)
}
