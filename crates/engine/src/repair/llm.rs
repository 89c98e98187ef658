//! The LLM patch agent (`--repair llm|all`): the second source of fixes
//! beyond revert, beside the templates and through the same gates.
//!
//! Each model call gets the failing output, the suspect functions' source,
//! their call neighbourhood from the code index (`neighbourhood`), the
//! culprit's diff when a search named one, the past fixes of the same
//! failure from the experience records (`past`), each section within its
//! own byte budget, and (from the second call on) what happened to the
//! previous answer. The answer must be SEARCH/REPLACE blocks or a unified
//! diff (`diff`, each hunk placed by its text); it is parsed strictly and
//! checked against the patch safety rules and the oracle
//! rule (no test file, nothing outside the repository, nothing under `.git/`,
//! nothing through a symlink; a refused edit is counted), screened with the
//! failing test like a template candidate, and a passing one becomes a patch
//! attempt under the four-part contract in the repair hypothesis's slot.
//! At most `max_patch_attempts` calls, within the token and wall budgets. A
//! model server that is down, slow or refuses the key ends the agent's run
//! (BLOCKED when nothing reached the contract); garbage, truncated and
//! refused answers are INCONCLUSIVE attempts. The prompt is redacted by the
//! `ChatModel` implementation (`tracelab-llm` runs ingest's redactor),
//! since the engine may not depend on `tracelab-evidence`.

use super::{Attempt, Prover, tail};
use crate::classification::Classification;
use crate::context::Context;
use crate::verify::{exec_judged, regression_command, worktree_reset};
use serde::Serialize;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracelab_domain::experiment::Outcome;
use tracelab_domain::hypothesis::{AgentKind, Hypothesis, HypothesisKind, HypothesisStatus};
use tracelab_domain::ids::HypothesisId;
use tracelab_domain::oracle::is_test_path;
use tracelab_domain::patch::{FilePatch, validate};
use tracelab_domain::ports::{ChatMessage, ChatModel, ChatRequest};
use tracelab_domain::report::Suspect;
use tracelab_domain::{Error, ErrorKind, Result};

mod budget;
mod diff;
mod neighbourhood;
mod past;

/// Suspect functions shown to the model, best first.
const PROMPT_SUSPECTS: usize = 5;
/// Lines of one suspect function shown at most.
const FUNCTION_LINES: usize = 150;
/// Bytes of failing output shown (the tail, where the error is).
const OUTPUT_BYTES: usize = 6000;
/// Call sites of the top suspects shown at most.
const CALL_SITES: usize = 12;
/// Bytes of the culprit's diff shown (its beginning).
const CULPRIT_DIFF_BYTES: usize = 4000;

/// One model call, as the report shows it (`detail.model.calls`).
#[derive(Debug, Clone, Serialize)]
struct Call {
    call: usize,
    /// `edit screened and proven`, `screening failed`, `refused`,
    /// `unparsable`, `truncated`, `server error`, `budget spent`.
    outcome: String,
    reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_sha256: Option<String>,
    prompt_tokens: u64,
    completion_tokens: u64,
    duration_ms: u64,
    /// Files the answer edited.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    paths: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    screening: Option<Outcome>,
}

/// The agent's run, stored on the hypothesis (`detail.model`).
#[derive(Debug, Clone, Serialize)]
pub(super) struct ModelRun {
    model: String,
    token_budget: u64,
    tokens_used: u64,
    wall_budget_ms: u64,
    used_ms: u64,
    /// Edits refused by the patch safety rules or the oracle rule.
    refused_edits: usize,
    calls: Vec<Call>,
    #[serde(skip_serializing_if = "Option::is_none")]
    template_note: Option<String>,
    /// The server problem that ended the run (down, slow, key refused).
    #[serde(skip)]
    server_problem: Option<String>,
}

impl ModelRun {
    /// The hypothesis when no answer reached the contract: BLOCKED by a
    /// server problem, INCONCLUSIVE otherwise.
    pub(super) fn unproven(&self, ctx: &Context, number: u32) -> Hypothesis {
        let mut h = Hypothesis::new(
            HypothesisId::new(&ctx.id, number),
            number,
            AgentKind::CodePath,
            HypothesisKind::Patch,
            format!(
                "an edit proposed by the model {} fixes the failure",
                self.model
            ),
        );
        let reasons: Vec<String> = self
            .calls
            .iter()
            .map(|c| format!("call {}: {}: {}", c.call, c.outcome, c.reason))
            .collect();
        let (status, why) = match &self.server_problem {
            Some(problem) => (HypothesisStatus::Blocked, problem.clone()),
            None => (
                HypothesisStatus::Inconclusive,
                "no answer became an edit that passed the failing test".to_string(),
            ),
        };
        h.status = status;
        h.status_reason = format!("LLM patch agent: {why} ({})", reasons.join("; "));
        h.detail = Some(serde_json::json!({}));
        h
    }

    /// Puts the run on the hypothesis: `detail.model`, and `detail.source`
    /// when the last proven attempt was the model's.
    pub(super) fn annotate(&self, h: &mut Hypothesis) {
        let mut detail = h.detail.take().unwrap_or_else(|| serde_json::json!({}));
        if let Some(map) = detail.as_object_mut() {
            if map.contains_key("model") || !map.contains_key("source") {
                map.insert("source".into(), "model".into());
            }
            map.insert(
                "model_run".into(),
                serde_json::to_value(self).unwrap_or_default(),
            );
        }
        h.detail = Some(detail);
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn repair<'a>(
    ctx: &'a Context,
    classification: &'a Classification,
    suspects: &[Suspect],
    output: &str,
    judges: &BTreeSet<String>,
    number: u32,
    model: Arc<dyn ChatModel>,
    prover: &mut Option<Prover<'a>>,
    template_note: Option<&str>,
    culprit: Option<&super::CulpritDiff>,
) -> Result<ModelRun> {
    let config = &ctx.config;
    let started = Instant::now();
    let mut run = ModelRun {
        model: model.model().to_string(),
        token_budget: config.llm_token_budget,
        tokens_used: 0,
        wall_budget_ms: config.llm_wall_budget.as_millis() as u64,
        used_ms: 0,
        refused_edits: 0,
        calls: Vec::new(),
        template_note: template_note.map(str::to_string),
        server_problem: None,
    };
    let shown: Vec<&Suspect> = suspects
        .iter()
        .filter(|s| !is_test_path(&s.path) && !judges.contains(&s.path))
        .take(PROMPT_SUSPECTS)
        .collect();
    if shown.is_empty() {
        run.calls.push(Call::without_reply(
            1,
            "no prompt",
            "no suspect function outside test files to show the model",
        ));
        return Ok(run);
    }
    let context = prompt_context(ctx, classification, &shown, output, culprit).await?;
    let mut feedback: Option<String> = None;
    let calls = prover
        .as_ref()
        .map_or(config.max_patch_attempts, |p| p.left());
    ctx.progress.report(&format!(
        "LLM patch agent: asking {} for an edit of {} suspect function(s)",
        run.model,
        shown.len()
    ));
    for call in 1..=calls {
        let elapsed = started.elapsed();
        let remaining = config.llm_wall_budget.saturating_sub(elapsed);
        let prompt = messages(&context, feedback.as_deref());
        let estimate: u64 = prompt.iter().map(|m| m.content.len() as u64 / 4).sum();
        let tokens_left = config.llm_token_budget.saturating_sub(run.tokens_used);
        if remaining < Duration::from_secs(1) || tokens_left < estimate + 256 {
            run.calls.push(Call::without_reply(
                call,
                "budget spent",
                &format!(
                    "{} of {} tokens and {:.0} of {:.0} s used",
                    run.tokens_used,
                    config.llm_token_budget,
                    elapsed.as_secs_f64(),
                    config.llm_wall_budget.as_secs_f64()
                ),
            ));
            break;
        }
        let request = ChatRequest {
            messages: prompt,
            max_tokens: config
                .llm_max_reply_tokens
                .min((tokens_left - estimate).min(u32::MAX as u64) as u32),
            timeout: remaining,
        };
        let asked = Instant::now();
        let reply = model.chat(&request).await;
        let duration_ms = asked.elapsed().as_millis() as u64;
        let reply = match reply {
            Ok(r) => r,
            Err(e) => {
                let mut c = Call::without_reply(call, "server error", &e.message);
                c.duration_ms = duration_ms;
                run.calls.push(c);
                if matches!(
                    e.kind,
                    ErrorKind::Unavailable | ErrorKind::Timeout | ErrorKind::PermissionDenied
                ) {
                    run.server_problem = Some(e.message);
                    break;
                }
                feedback = None;
                continue;
            }
        };
        run.tokens_used += reply.prompt_tokens + reply.completion_tokens;
        let mut c = Call {
            call,
            outcome: String::new(),
            reason: String::new(),
            model: Some(reply.model.clone()),
            prompt_sha256: Some(reply.prompt_sha256.clone()),
            prompt_tokens: reply.prompt_tokens,
            completion_tokens: reply.completion_tokens,
            duration_ms,
            paths: Vec::new(),
            screening: None,
        };
        if reply.truncated {
            c.outcome = "truncated".into();
            c.reason = "the answer stopped at the token limit; not applied".into();
            feedback = Some("Your previous answer was cut off at the token limit and was not applied. Answer again with a shorter edit.".into());
            run.calls.push(c);
            continue;
        }
        let (format, parsed) = match parse_answer(&reply.content) {
            Ok(p) => p,
            Err(e) => {
                c.outcome = "unparsable".into();
                c.reason = e.message.clone();
                feedback = Some(format!(
                    "Your previous answer could not be used: {}. Answer only with SEARCH/REPLACE blocks or a unified diff in the format given.",
                    e.message
                ));
                run.calls.push(c);
                continue;
            }
        };
        let applied = match parsed {
            Ok(blocks) => {
                c.paths = blocks.iter().map(|b| b.path.clone()).collect();
                c.paths.dedup();
                apply_blocks(ctx, judges, &blocks)
                    .await?
                    .map(|files| (files, blocks))
            }
            Err(refusal) => Err(refusal),
        };
        let (files, blocks) = match applied {
            Ok(f) => f,
            Err(refusal) => {
                run.refused_edits += 1;
                c.outcome = "refused".into();
                c.reason = refusal.clone();
                feedback = Some(format!(
                    "Your previous edit was refused: {refusal}. Edit only the source files shown, never tests."
                ));
                run.calls.push(c);
                continue;
            }
        };
        let screened = screen(ctx, classification, call, &files).await?;
        c.screening = Some(screened.0);
        if screened.0 != Outcome::Pass {
            c.outcome = "screening failed".into();
            c.reason = format!(
                "the failing test still fails with the edit ({:?})",
                screened.0
            );
            feedback = Some(format!(
                "Your previous edit was applied, but the failing test still fails:\n```\n{}\n```",
                tail(&screened.1, OUTPUT_BYTES)
            ));
            run.calls.push(c);
            continue;
        }
        let attempt = model_attempt(&reply, &files, &shown, &blocks, format);
        let p = match prover {
            Some(p) => p,
            None => {
                let symbols: Vec<&str> = shown.iter().map(|s| s.symbol.as_str()).collect();
                prover.insert(Prover::open(ctx, classification, number, &symbols, judges).await?)
            }
        };
        let status = p.attempt(&attempt).await?;
        c.outcome = "edit screened and proven".into();
        c.reason = format!("contract: {}", status.as_str());
        run.calls.push(c);
        if status == HypothesisStatus::Verified || p.left() == 0 {
            break;
        }
        feedback = Some(format!(
            "Your previous edit made the failing test pass but was not verified:\n{}",
            p.last_verification()
        ));
    }
    run.used_ms = started.elapsed().as_millis() as u64;
    Ok(run)
}

impl Call {
    fn without_reply(call: usize, outcome: &str, reason: &str) -> Self {
        Call {
            call,
            outcome: outcome.into(),
            reason: reason.into(),
            model: None,
            prompt_sha256: None,
            prompt_tokens: 0,
            completion_tokens: 0,
            duration_ms: 0,
            paths: Vec::new(),
            screening: None,
        }
    }
}

fn model_attempt(
    reply: &tracelab_domain::ports::ChatReply,
    files: &[(String, String)],
    shown: &[&Suspect],
    blocks: &[Block],
    format: Format,
) -> Attempt {
    let path = files.first().map(|(p, _)| p.clone()).unwrap_or_default();
    let first = &blocks[0];
    let line = files
        .first()
        .and_then(|(_, content)| content.find(&first.replace))
        .map(|at| 1 + files[0].1[..at].matches('\n').count() as u32)
        .unwrap_or(1);
    let symbol = shown
        .iter()
        .find(|s| s.path == path && s.start_line <= line && line <= s.end_line)
        .or_else(|| shown.iter().find(|s| s.path == path))
        .map(|s| s.symbol.clone())
        .unwrap_or_else(|| path.clone());
    let description = format!(
        "{} {} in {}",
        blocks.len(),
        format.units(),
        files
            .iter()
            .map(|(p, _)| p.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut detail = serde_json::Map::new();
    detail.insert("model".into(), reply.model.clone().into());
    detail.insert("prompt_sha256".into(), reply.prompt_sha256.clone().into());
    detail.insert("prompt_tokens".into(), reply.prompt_tokens.into());
    detail.insert("completion_tokens".into(), reply.completion_tokens.into());
    Attempt {
        files: files.to_vec(),
        summary: format!(
            "the edit of {symbol} ({path}:{line}) proposed by the model {} fixes the failure",
            reply.model
        ),
        source: format!("model {}", reply.model),
        symbol,
        path,
        line,
        description,
        detail,
    }
}

/// The failing test alone on the edit, in a scratch worktree: the same
/// screening as a template candidate. Its outcome and output.
async fn screen(
    ctx: &Context,
    classification: &Classification,
    call: usize,
    files: &[(String, String)],
) -> Result<(Outcome, String)> {
    // One scratch worktree per call: the workspace names are unique.
    let name = format!("llm-screen-{call}");
    let worktree = ctx.pool.workspace().detached(&name, &ctx.bad).await?;
    let sandbox = ctx
        .pool
        .provider()
        .open(&worktree.path, &format!("{}-{name}", ctx.id))
        .await?;
    let result = async {
        worktree_reset(&worktree, &ctx.bad).await?;
        for (path, content) in files {
            worktree.write_file(path, content).await?;
        }
        let (_, spec) = regression_command(ctx, classification);
        exec_judged(
            sandbox.as_ref(),
            &spec,
            ctx.test.runner,
            classification.baseline.as_ref(),
        )
        .await
    }
    .await;
    let _ = sandbox.close().await;
    let judged = result?;
    Ok((judged.outcome, judged.run.result.output))
}

/// The parts of the prompt that do not change between calls.
async fn prompt_context(
    ctx: &Context,
    classification: &Classification,
    shown: &[&Suspect],
    output: &str,
    culprit: Option<&super::CulpritDiff>,
) -> Result<String> {
    let git = ctx.pool.workspace().git();
    let (regression, _) = regression_command(ctx, classification);
    let mut text = format!(
        "The failing test: `{regression}` (test command `{}`).\n\nIts output at the failing revision (the end):\n```\n{}\n```\n\n## Suspect functions, most suspicious first\n",
        ctx.test.display(),
        tail(output, OUTPUT_BYTES)
    );
    let mut names = Vec::new();
    for s in shown {
        let Some(source) = git.show_file(&ctx.bad, &s.path).await? else {
            continue;
        };
        let lines: Vec<&str> = source.lines().collect();
        let start = (s.start_line.max(1) as usize - 1).min(lines.len());
        let end = (s.end_line as usize)
            .clamp(start, lines.len())
            .min(start + FUNCTION_LINES);
        text.push_str(&format!(
            "\n### `{}` in {} (lines {}-{})\n```\n{}\n```\n",
            s.symbol,
            s.path,
            start + 1,
            end,
            lines[start..end].join("\n")
        ));
        let name = s.symbol.rsplit(['.', ':']).next().unwrap_or_default();
        if name.len() >= 3 && name.chars().all(|c| c.is_alphanumeric() || c == '_') {
            names.push(name.to_string());
        }
    }
    // The call neighbourhood from the code index; `git grep` call sites
    // when the index cannot read the repository.
    match neighbourhood::section(ctx, shown).await {
        Ok(section) => text.push_str(&section),
        Err(why) => text.push_str(&grep_call_sites(ctx, &names, &why).await),
    }
    if let Some(c) = culprit {
        // The commit a search named; its revert was not verified (it may
        // also undo work that later commits need).
        text.push_str(&format!(
            "\n## The commit that introduced the failure: {} \"{}\" (its revert was not verified)\n```diff\n{}\n```\n",
            &c.commit[..c.commit.len().min(12)],
            c.summary,
            head(&c.diff, CULPRIT_DIFF_BYTES)
        ));
    }
    text.push_str(&past::section(ctx, output));
    Ok(text)
}

/// Where the suspects are named outside tests (`git grep` at the bad
/// revision): the call sites when the code index could not give its call
/// graph (`why`).
async fn grep_call_sites(ctx: &Context, names: &[String], why: &str) -> String {
    let git = ctx.pool.workspace().git();
    let mut sites = Vec::new();
    for name in names.iter().take(3) {
        let found = git
            .run(&["grep", "-n", "-w", "-F", "-e", name, &ctx.bad])
            .await
            .unwrap_or_default();
        let prefix = format!("{}:", ctx.bad);
        sites.extend(
            found
                .lines()
                .filter_map(|l| l.strip_prefix(&prefix))
                .filter(|l| {
                    let path = l.split(':').next().unwrap_or_default();
                    !is_test_path(path)
                })
                .filter(|l| {
                    !l.contains(&format!("def {name}")) && !l.contains(&format!("fn {name}"))
                })
                .take(CALL_SITES / 3)
                .map(|l| l.chars().take(200).collect::<String>()),
        );
    }
    if sites.is_empty() {
        return String::new();
    }
    tracing::debug!(
        reason = why,
        "call sites by git grep: the code index failed"
    );
    format!(
        "\n## Where they are called (path:line:text)\n```\n{}\n```\n",
        sites.join("\n")
    )
}

/// The first `limit` bytes of `text`, cut at a character boundary.
fn head(text: &str, limit: usize) -> &str {
    let mut end = text.len().min(limit);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

const SYSTEM: &str = "You fix bugs in source code. You are shown a failing test's output and the functions most likely at fault. Change as little as possible to make the failing test pass without breaking other tests. Never edit tests, test fixtures or files outside the repository.

Answer only with the edit: one or more SEARCH/REPLACE blocks, each exactly in this form:

path/of/the/file.py
<<<<<<< SEARCH
the exact lines of the file to replace, copied with their indentation
=======
the new lines
>>>>>>> REPLACE

The SEARCH text must occur exactly once in the file.

Or answer with a unified diff (`--- a/path`, `+++ b/path`, `@@` hunks with a few lines of context); each hunk's context and removed lines must occur exactly once in the file.";

fn messages(context: &str, feedback: Option<&str>) -> Vec<ChatMessage> {
    let mut user = context.to_string();
    if let Some(f) = feedback {
        user.push_str(&format!("\n## Your previous attempt\n{f}\n"));
    }
    vec![
        ChatMessage {
            role: "system".into(),
            content: SYSTEM.into(),
        },
        ChatMessage {
            role: "user".into(),
            content: user,
        },
    ]
}

/// The two answer formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Blocks,
    UnifiedDiff,
}

impl Format {
    /// What the format's edits are called, for the attempt's description.
    fn units(self) -> &'static str {
        match self {
            Format::Blocks => "SEARCH/REPLACE block(s)",
            Format::UnifiedDiff => "unified diff hunk(s)",
        }
    }
}

/// An answer's edits as blocks: `Err` when it cannot be read (unparsable),
/// `Ok(Err(reason))` when it can but the patch safety rules refuse it (a
/// diff outside the repository, into `.git/`, creating a symlink, or
/// creating, deleting or renaming a file). SEARCH/REPLACE blocks win when
/// both formats appear.
pub(crate) fn parse_answer(
    answer: &str,
) -> Result<(Format, std::result::Result<Vec<Block>, String>)> {
    if answer.lines().any(|l| l.trim_end() == SEARCH) || !diff::looks_like_diff(answer) {
        return parse_blocks(answer)
            .map_err(|e| {
                if e.message == NO_BLOCK {
                    Error::invalid("no SEARCH/REPLACE block or unified diff in the answer")
                } else {
                    e
                }
            })
            .map(|b| (Format::Blocks, Ok(b)));
    }
    let files = diff::files(answer)?;
    if let Some(refused) = diff::refusal(&files) {
        return Ok((Format::UnifiedDiff, Err(refused)));
    }
    Ok((Format::UnifiedDiff, Ok(diff::blocks(&files)?)))
}

/// One SEARCH/REPLACE block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Block {
    pub path: String,
    pub search: String,
    pub replace: String,
}

const SEARCH: &str = "<<<<<<< SEARCH";
const DIVIDER: &str = "=======";
const REPLACE: &str = ">>>>>>> REPLACE";
const NO_BLOCK: &str = "no SEARCH/REPLACE block in the answer";

/// The blocks of an answer, strictly: each SEARCH marker preceded by its
/// path line (code fences between them allowed), each block closed, at least
/// one block, non-empty SEARCH text.
pub(crate) fn parse_blocks(answer: &str) -> Result<Vec<Block>> {
    let lines: Vec<&str> = answer.lines().collect();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_end();
        if line == DIVIDER || line == REPLACE {
            return Err(Error::invalid(format!(
                "line {}: `{line}` outside a block",
                i + 1
            )));
        }
        if line != SEARCH {
            i += 1;
            continue;
        }
        let path = lines[..i]
            .iter()
            .rev()
            .map(|l| l.trim())
            .find(|l| !l.is_empty() && !l.starts_with("```"))
            .map(|l| l.trim_matches('`').trim())
            .filter(|l| !l.is_empty() && !l.contains(' ') && !l.starts_with(">>>>>>>"))
            .ok_or_else(|| {
                Error::invalid(format!(
                    "line {}: a SEARCH block without its file path",
                    i + 1
                ))
            })?;
        let mut search = Vec::new();
        let mut replace = Vec::new();
        let mut j = i + 1;
        let mut in_replace = false;
        let mut closed = false;
        while j < lines.len() {
            let l = lines[j];
            match l.trim_end() {
                DIVIDER if !in_replace => in_replace = true,
                REPLACE if in_replace => {
                    closed = true;
                    break;
                }
                SEARCH | DIVIDER | REPLACE => {
                    return Err(Error::invalid(format!(
                        "line {}: `{}` out of order",
                        j + 1,
                        l.trim_end()
                    )));
                }
                _ if in_replace => replace.push(l),
                _ => search.push(l),
            }
            j += 1;
        }
        if !closed {
            return Err(Error::invalid(format!(
                "the block for {path} at line {} is not closed (a cut-off answer?)",
                i + 1
            )));
        }
        if search.iter().all(|l| l.trim().is_empty()) {
            return Err(Error::invalid(format!(
                "the block for {path} has an empty SEARCH part"
            )));
        }
        blocks.push(Block {
            path: path.to_string(),
            search: search.join("\n"),
            replace: replace.join("\n"),
        });
        i = j + 1;
    }
    if blocks.is_empty() {
        return Err(Error::invalid(NO_BLOCK));
    }
    Ok(blocks)
}

/// The files after the blocks, or why the edit is refused: the patch
/// safety rules, the oracle rule, symlinks at the bad revision, and a
/// SEARCH text that must occur exactly once.
async fn apply_blocks(
    ctx: &Context,
    judges: &BTreeSet<String>,
    blocks: &[Block],
) -> Result<std::result::Result<Vec<(String, String)>, String>> {
    let git = ctx.pool.workspace().git();
    let mut files: Vec<(String, String)> = Vec::new();
    for (n, b) in blocks.iter().enumerate() {
        let path = b.path.trim_start_matches("./").to_string();
        let rules = validate(&[FilePatch {
            old_path: path.clone(),
            new_path: path.clone(),
            header: String::new(),
            hunks: Vec::new(),
            modes: Vec::new(),
        }]);
        if let Err(e) = rules {
            return Ok(Err(e.message));
        }
        if is_test_path(&path) || judges.contains(&path) {
            return Ok(Err(format!(
                "oracle rule: {path} is a test file or judges the fix"
            )));
        }
        // Every leading part of the path must be a directory and the file a
        // regular one at the bad revision: never write through a symlink.
        let parts: Vec<&str> = path.split('/').collect();
        for k in 1..=parts.len() {
            let prefix = parts[..k].join("/");
            let entry = git
                .run(&["ls-tree", &ctx.bad, "--", &prefix])
                .await
                .unwrap_or_default();
            let mode = entry.split_whitespace().next().unwrap_or_default();
            let wanted = if k == parts.len() { "100" } else { "040000" };
            if mode.starts_with("120") {
                return Ok(Err(format!("{prefix} is a symlink")));
            }
            if !mode.starts_with(wanted) {
                return Ok(Err(format!(
                    "{path} is not a file of the repository at the failing revision"
                )));
            }
        }
        let current = match files.iter().position(|(p, _)| p == &path) {
            Some(at) => files.remove(at).1,
            None => match git.show_file(&ctx.bad, &path).await? {
                Some(c) => c,
                None => {
                    return Ok(Err(format!(
                        "{path} is not a file of the repository at the failing revision"
                    )));
                }
            },
        };
        let found = current.matches(b.search.as_str()).count();
        if found != 1 {
            return Ok(Err(format!(
                "the SEARCH text of block {} occurs {found} times in {path} (must be once)",
                n + 1
            )));
        }
        let updated = current.replacen(b.search.as_str(), &b.replace, 1);
        files.push((path, updated));
    }
    Ok(Ok(files))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_parsed_with_their_paths_and_fences() {
        let answer = "Here is the fix.\n\n```python\napp.py\n<<<<<<< SEARCH\n    end = size\n=======\n    end = start + size\n>>>>>>> REPLACE\n```\n";
        let blocks = parse_blocks(answer).unwrap();
        assert_eq!(
            blocks,
            vec![Block {
                path: "app.py".into(),
                search: "    end = size".into(),
                replace: "    end = start + size".into(),
            }]
        );
        let two = "a.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n`b/c.py`\n<<<<<<< SEARCH\ny\n=======\n>>>>>>> REPLACE\n";
        let blocks = parse_blocks(two).unwrap();
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[1].path, "b/c.py");
        assert_eq!(blocks[1].replace, "");
    }

    #[test]
    fn malformed_answers_are_refused() {
        for bad in [
            "",
            "I think the bug is in window().",
            "app.py\n<<<<<<< SEARCH\n    end = size\n=======\n    end = start",
            "<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n",
            "app.py\n<<<<<<< SEARCH\n\n=======\ny\n>>>>>>> REPLACE\n",
            "app.py\n<<<<<<< SEARCH\nx\n<<<<<<< SEARCH\n=======\ny\n>>>>>>> REPLACE\n",
            "=======\n",
        ] {
            assert!(parse_blocks(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_answer_is_read_as_blocks_or_as_a_unified_diff() {
        let blocks = "app.py\n<<<<<<< SEARCH\n    end = size\n=======\n    end = start + size\n>>>>>>> REPLACE\n";
        let diff = "```diff\n--- a/app.py\n+++ b/app.py\n@@ -2 +2 @@\n-    end = size\n+    end = start + size\n```\n";
        let (format, from_blocks) = parse_answer(blocks).unwrap();
        assert_eq!(format, Format::Blocks);
        let (format, from_diff) = parse_answer(diff).unwrap();
        assert_eq!(format, Format::UnifiedDiff);
        assert_eq!(from_blocks, from_diff);
        let (_, refused) =
            parse_answer("--- a/.git/config\n+++ b/.git/config\n@@ -1 +1 @@\n-[core]\n+[user]\n")
                .unwrap();
        assert!(refused.unwrap_err().contains(".git"));
        let prose = parse_answer("The bug is in window().").unwrap_err();
        assert!(
            prose.message.contains("or unified diff"),
            "{}",
            prose.message
        );
        assert!(parse_answer("@@ -1 +1 @@\n-x\n+y\n").is_err());
    }
}
