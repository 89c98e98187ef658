//! Proving a fix: one attempt after another under the whole contract on the
//! hypothesis branch, whatever proposed it (a template or the model).

use super::coverage;
use super::neighbours::{Neighbours, neighbour_experiment, neighbour_files, neighbour_spec};
use crate::classification::Classification;
use crate::context::Context;
use crate::git::Worktree;
use crate::verify::{
    BeforeIn, Judging, hypothesis_slot, regression_before, regression_command, run_contract,
    worktree_reset,
};
use std::collections::BTreeSet;
use tracelab_domain::contract::judge_fix;
use tracelab_domain::experiment::{Experiment, Outcome};
use tracelab_domain::hypothesis::{AgentKind, Hypothesis, HypothesisKind, HypothesisStatus};
use tracelab_domain::ids::{HypothesisId, hypothesis_branch};
use tracelab_domain::ports::Sandbox;
use tracelab_domain::{Error, Result};
use tracelab_repair::Candidate;

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
    pub(super) fn template(c: &Candidate) -> Self {
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
            let before =
                regression_before(ctx, judging, BeforeIn::Sandbox(p.sandbox.as_ref())).await?;
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
            rates: None,
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
