//! The experience agent: the fourth hypothesis source, beside code-path,
//! git-history and test-behaviour. It decomposes the failure into problems
//! (one per failing test, or per error group), retrieves the repairs this
//! organisation already made for them (`tracelab_experience::retrieve`:
//! L1 of the same repository and workflow, L2 of the same repository, L3
//! of any; recurring problems first), keeps the L1 records whose files and
//! symbols are still there, and re-applies their hunks to the bad revision
//! — a 3-way merge of the file at the record's failing revision, the file
//! under investigation and the recorded repair, or, when that revision is
//! gone, each hunk where its old lines now are. The result is one patch
//! hypothesis that goes through the same contract as every other (the
//! repair's `Prover`), using one slot of the per-investigation limit. L2 and
//! L3 records become guidance notes in the report. Without records the
//! agent does nothing and says nothing.

use crate::agents::test_behaviour::Classification;
use crate::context::Context;
use crate::git::Git;
use crate::oracle;
use crate::repair::{Attempt, Prover};
use crate::retrieval::retrieval;
use std::collections::BTreeSet;
use tokio::process::Command;
use tracelab_domain::hypothesis::{AgentKind, Hypothesis, HypothesisStatus};
use tracelab_domain::oracle::is_test_path;
use tracelab_domain::sequential::Behaviour;
use tracelab_domain::{Error, Result};
use tracelab_experience::Failure;
use tracelab_experience::apply::{self, FileChange, Placement};
use tracelab_experience::records::Level;
use tracelab_experience::retrieve::{self, Retrieved};

pub use crate::config::Experience;

/// Guidance notes (L2/L3) shown at most per investigation.
const GUIDANCE: usize = 3;

/// The agent runs for a deterministic failure nothing verified yet, with a
/// hypothesis slot left and records to read.
pub fn wanted(
    config: &crate::EngineConfig,
    classification: &Classification,
    hypotheses: &[Hypothesis],
) -> bool {
    config
        .experience
        .as_ref()
        .is_some_and(|e| !e.records.is_empty())
        && classification.decision.behaviour == Behaviour::Deterministic
        && hypotheses.len() < config.max_hypotheses
        && !hypotheses
            .iter()
            .any(|h| h.status == HypothesisStatus::Verified)
}

/// What the agent found: at most one hypothesis, and notes for the report.
#[derive(Debug, Default)]
pub struct Found {
    pub hypothesis: Option<Hypothesis>,
    pub notes: Vec<String>,
}

/// The experience hypothesis numbered `number`, when an applicable L1
/// record exists, and the guidance and reasons as notes.
pub async fn reuse(ctx: &Context, classification: &Classification, number: u32) -> Result<Found> {
    let mut found = Found::default();
    let Some(experience) = ctx.config.experience.clone() else {
        return Ok(found);
    };
    let Some(output) = classification.baseline_output.as_deref() else {
        return Ok(found);
    };
    let git = ctx.pool.workspace().git().clone();
    let (failures, retrieved) = retrieval(ctx, &experience, output);
    ctx.progress.report(&format!(
        "experience: {} problem(s), {} record(s) retrieved ({} L1)",
        failures.len(),
        retrieved.len(),
        retrieved
            .iter()
            .filter(|r| r.level == Level::Concrete)
            .count()
    ));
    found.notes.extend(guidance(&retrieved, &failures));
    let judges: BTreeSet<String> = oracle::judges(ctx, classification)
        .await?
        .into_iter()
        .collect();
    let mut seen = BTreeSet::new();
    let mut ready: Vec<(Attempt, &Retrieved<'_>)> = Vec::new();
    let mut refused: Vec<String> = Vec::new();
    for r in retrieved.iter().filter(|r| r.level == Level::Concrete) {
        if !seen.insert(&r.record.id) || ready.len() >= ctx.config.max_patch_attempts {
            continue;
        }
        match prepare(&git, &ctx.bad, r, &judges).await? {
            Ok(attempt) => ready.push((attempt, r)),
            Err(why) => refused.push(format!("{} ({why})", short(&r.record.id))),
        }
    }
    if ready.is_empty() {
        if !refused.is_empty() {
            found.notes.push(format!(
                "experience: no past repair of this failure applies here: {}",
                refused.join("; ")
            ));
        }
        return Ok(found);
    }
    let symbols: Vec<String> = ready
        .iter()
        .flat_map(|(_, r)| r.record.concrete.symbols.iter().cloned())
        .collect();
    let symbols: Vec<&str> = symbols.iter().map(String::as_str).collect();
    let mut prover = Prover::open(ctx, classification, number, &symbols, &judges).await?;
    for (attempt, _) in &ready {
        if prover.attempt(attempt).await? == HypothesisStatus::Verified {
            break;
        }
    }
    let mut h = prover.close().await;
    h.agent = AgentKind::Experience;
    if !refused.is_empty() {
        found.notes.push(format!(
            "experience: past repairs left out as not applicable: {}",
            refused.join("; ")
        ));
    }
    found.hypothesis = Some(h);
    Ok(found)
}

/// What [`reuse`] would retrieve, without touching the repository: the
/// number of L1 records to prove and the L2/L3 guidance notes. The fleet's
/// investigator proposes the experience hypothesis only when there is an
/// L1 record (a verifier then runs [`reuse`]) and keeps the guidance in
/// the proposal's notes.
#[derive(Debug, Default)]
pub struct Preview {
    pub concrete: usize,
    pub notes: Vec<String>,
}

/// See [`Preview`].
pub fn preview(ctx: &Context, classification: &Classification) -> Preview {
    let (Some(experience), Some(output)) = (
        ctx.config.experience.clone(),
        classification.baseline_output.as_deref(),
    ) else {
        return Preview::default();
    };
    let (failures, retrieved) = retrieval(ctx, &experience, output);
    Preview {
        concrete: retrieved
            .iter()
            .filter(|r| r.level == Level::Concrete)
            .count(),
        notes: guidance(&retrieved, &failures),
    }
}

fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

/// L2 and L3 records as notes: what this repository (or another) did for
/// a problem like this one.
fn guidance(retrieved: &[Retrieved<'_>], failures: &[Failure]) -> Vec<String> {
    retrieved
        .iter()
        .filter(|r| r.level != Level::Concrete)
        .take(GUIDANCE)
        .map(|r| {
            let problem = failures[r.problem]
                .test
                .clone()
                .unwrap_or_else(|| "the failure".into());
            let rec = r.record;
            match r.level {
                Level::Strategy => format!(
                    "experience guidance (L2, record {}{}, this repository's {}): for {problem} it {}",
                    short(&rec.id),
                    if rec.recurring { ", recurring" } else { "" },
                    rec.strategy.check,
                    rec.pattern.approach.join(", then ")
                ),
                _ => format!(
                    "experience guidance (L3, record {}): a {} was repaired elsewhere by: {}",
                    short(&rec.id),
                    rec.pattern.mechanism,
                    rec.pattern.approach.join(", then ")
                ),
            }
        })
        .collect()
}

/// The record's repair as whole files at the bad revision, or why it does
/// not apply.
async fn prepare(
    git: &Git,
    bad: &str,
    r: &Retrieved<'_>,
    judges: &BTreeSet<String>,
) -> Result<std::result::Result<Attempt, String>> {
    let record = r.record;
    let changes = match apply::files(&record.concrete.patch) {
        Ok(c) if !c.is_empty() => c,
        Ok(_) => return Ok(Err("the record has no patch".into())),
        Err(e) => return Ok(Err(e)),
    };
    // A fix may never change what judges it.
    let (skipped, changes): (Vec<FileChange>, Vec<FileChange>) = changes
        .into_iter()
        .partition(|c| is_test_path(&c.path) || judges.contains(&c.path));
    if changes.is_empty() {
        return Ok(Err("its repair changes only test files".into()));
    }
    let created: BTreeSet<String> = changes
        .iter()
        .filter(|c| c.created)
        .map(|c| c.path.clone())
        .collect();
    let mut at_bad = std::collections::BTreeMap::new();
    for f in &record.concrete.files {
        at_bad.insert(f.clone(), git.show_file(bad, f).await?);
    }
    let lookup = |p: &str| at_bad.get(p).cloned().flatten();
    if let Err(why) = retrieve::applicable(record, &created, &lookup) {
        return Ok(Err(why));
    }
    let base_rev = match record.history.split_once("..") {
        Some((first, _)) if !first.is_empty() => commit_exists(git, first).await.then_some(first),
        _ => None,
    };
    let mut files = Vec::new();
    let mut merges = Vec::new();
    for change in &changes {
        match merged(git, bad, base_rev, change).await? {
            Ok((content, how)) => {
                merges.push(format!("{} {how}", change.path));
                files.push((change.path.clone(), content));
            }
            Err(why) => return Ok(Err(why)),
        }
    }
    let first = &changes[0];
    let line = first.first_line();
    let symbol = record
        .concrete
        .symbols
        .first()
        .cloned()
        .unwrap_or_else(|| first.path.clone());
    let problem = record
        .concrete
        .test
        .clone()
        .unwrap_or(record.problem.clone());
    let mut detail = serde_json::Map::new();
    detail.insert("source".into(), "experience".into());
    detail.insert(
        "experience".into(),
        serde_json::json!({
            "record": record.id,
            "level": "L1",
            "problem": record.problem,
            "repository": record.repository,
            "workflow": record.workflow,
            "history": record.history,
            "fixed_at": record.concrete.fixed_at,
            "recurring": record.recurring,
            "matched": r.reasons,
            "score": r.score,
            "merge": merges,
            "left_out_test_files": skipped.iter().map(|c| c.path.clone()).collect::<Vec<_>>(),
        }),
    );
    Ok(Ok(Attempt {
        files,
        symbol,
        path: first.path.clone(),
        line,
        description: format!(
            "the repair of record {} re-applied ({})",
            short(&record.id),
            merges.join(", ")
        ),
        summary: format!(
            "the past repair {} of {} (fixed at {}) fixes {problem} again",
            short(&record.id),
            record.concrete.files.join(", "),
            short(&record.concrete.fixed_at)
        ),
        source: format!("experience record {}", short(&record.id)),
        detail,
    }))
}

async fn commit_exists(git: &Git, rev: &str) -> bool {
    git.run(&["cat-file", "-e", &format!("{rev}^{{commit}}")])
        .await
        .is_ok()
}

/// The file `change` touches after the record's repair, merged with what
/// the bad revision has: `(content, how)`, or why it does not merge.
async fn merged(
    git: &Git,
    bad: &str,
    base_rev: Option<&str>,
    change: &FileChange,
) -> Result<std::result::Result<(String, String), String>> {
    if change.deleted {
        return Ok(Err(format!("the repair deletes {}", change.path)));
    }
    let ours = git.show_file(bad, &change.path).await?;
    let result = match (ours, change.created) {
        (None, true) => apply::apply("", change).map(|a| (a.text, "created".to_string())),
        (Some(_), true) => Err(format!("{} exists already", change.path)),
        (None, false) => Err(format!("{} no longer exists", change.path)),
        (Some(ours), false) => {
            let base = match base_rev {
                Some(rev) => git.show_file(rev, &change.path).await?,
                None => None,
            };
            let three_way = match &base {
                Some(base) => match apply::apply(base, change) {
                    Ok(theirs) if *base == ours => Some((theirs.text, "exact".to_string())),
                    Ok(theirs) => merge_file(&ours, base, &theirs.text)
                        .await?
                        .map(|m| (m, "three-way".to_string())),
                    Err(_) => None,
                },
                None => None,
            };
            match three_way {
                Some(done) => Ok(done),
                None => apply::apply(&ours, change).map(|a| {
                    let how = match a.placement {
                        Placement::Exact => "at its lines",
                        Placement::Moved => "moved",
                    };
                    match a.already.as_slice() {
                        [] => (a.text, how.to_string()),
                        done => (a.text, format!("{how}, hunk(s) {done:?} there already")),
                    }
                }),
            }
            .and_then(|(content, how)| {
                if content == ours {
                    Err(format!("{} has the recorded repair already", change.path))
                } else {
                    Ok((content, how))
                }
            })
        }
    };
    Ok(result)
}

/// `git merge-file`: the merge of `ours` and `theirs` from `base`, or
/// `None` when they conflict.
async fn merge_file(ours: &str, base: &str, theirs: &str) -> Result<Option<String>> {
    let dir = tempfile::tempdir().map_err(|e| Error::internal(format!("temp dir: {e}")))?;
    let path = |name: &str| dir.path().join(name);
    for (name, text) in [("ours", ours), ("base", base), ("theirs", theirs)] {
        std::fs::write(path(name), text)
            .map_err(|e| Error::internal(format!("cannot write a merge input: {e}")))?;
    }
    let out = Command::new("git")
        .args(["merge-file", "-p", "--quiet"])
        .arg(path("ours"))
        .arg(path("base"))
        .arg(path("theirs"))
        .output()
        .await
        .map_err(|e| Error::unavailable(format!("cannot run git merge-file: {e}")))?;
    // The exit code is the number of conflicts (negative on error).
    if !out.status.success() {
        return Ok(None);
    }
    Ok(String::from_utf8(out.stdout).ok())
}
