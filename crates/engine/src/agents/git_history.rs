//! The git-history agent: finds the culprit commit with a k-ary,
//! signature-aware, flake-aware search over the commit graph
//! ([`tracelab_domain::bisect`]), finding a good revision itself when none is
//! given.

use crate::context::Context;
use crate::focus::SearchFocus;
use crate::journal::SearchJournal;
use crate::overlay::Overlay;
use crate::probe::{Judged, run_judged_overlaid};
use futures::future::join_all;
use std::collections::HashMap;
use std::sync::Arc;
use tracelab_domain::bisect::{CulpritSearch, MAX_GRAPH_CANDIDATES, ProbeResult, SearchOutcome};
use tracelab_domain::experiment::Outcome;
use tracelab_domain::oracle::is_test_path;
use tracelab_domain::report::{BisectSummary, OracleMode, PointedCommit, ProbeRecord};
use tracelab_domain::sequential::{RateDecision, RateTest, passes_to_trust};
use tracelab_domain::signature::FailureSignature;
use tracelab_domain::{Error, Result};

/// How the failure behaves where the bug is present; decides how many clean
/// runs make a revision good.
#[derive(Debug, Clone)]
pub struct FlakeModel {
    pub failure_rate: f64,
    pub passes_needed: u32,
    pub baseline: FailureSignature,
    /// The oracle's test files laid over every probe (tests-at-bad mode).
    pub overlay: Option<Overlay>,
    /// The failure rate before a flakiness regression: probes then decide
    /// between this rate and `failure_rate` instead of "ever fails".
    pub background_rate: Option<f64>,
    /// Error probability of one probe's judgement.
    pub miss: f64,
    pub cap: u32,
    /// The model is assumed (deterministic) before the re-runs at bad have
    /// classified the failure: what it finds is a candidate.
    pub provisional: bool,
    /// Set when the overlay was dropped because the search's bounds could
    /// not run the bad revision's tests.
    pub oracle_note: Option<String>,
    /// Already the stricter model of a re-test ([`FlakeModel::stricter`]).
    pub strict: bool,
    /// What the failure points at: the search probes around the commits
    /// that changed it first ([`crate::focus`]).
    pub focus: Option<Arc<SearchFocus>>,
}

impl FlakeModel {
    pub fn new(failure_rate: f64, miss: f64, cap: u32, baseline: FailureSignature) -> Self {
        Self {
            failure_rate,
            passes_needed: passes_to_trust(failure_rate, miss, cap),
            baseline,
            overlay: None,
            background_rate: None,
            miss,
            cap,
            provisional: false,
            oracle_note: None,
            strict: false,
            focus: None,
        }
    }

    /// The same model with judgements ten times less likely to err, for
    /// re-testing an answer.
    pub fn stricter(&self) -> Self {
        let mut strict = self.clone();
        strict.miss = self.miss / 10.0;
        strict.passes_needed = passes_to_trust(strict.failure_rate, strict.miss, strict.cap);
        strict.strict = true;
        strict
    }

    pub fn with_focus(mut self, focus: Option<Arc<SearchFocus>>) -> Self {
        self.focus = focus;
        self
    }

    pub fn with_overlay(mut self, overlay: Option<Overlay>) -> Self {
        self.overlay = overlay;
        self
    }

    /// Which tests judge the probes under this model.
    pub fn oracle(&self) -> OracleMode {
        if self.overlay.is_some() {
            OracleMode::TestsAtBad
        } else {
            OracleMode::TestsAtRevision
        }
    }
}

/// The judgements a search used, in order, for the report's timeline.
#[derive(Default)]
struct Trail(Vec<ProbeRecord>);

impl Trail {
    /// A fresh judgement made in `round`.
    fn probed(&mut self, revision: &str, round: u32, report: ProbeReport) {
        self.push(revision, round, report.result, report.runs, false);
    }

    /// A judgement taken as it was (an earlier search's or attempt's).
    fn reused(&mut self, revision: &str, result: ProbeResult) {
        if !self.0.iter().any(|p| p.revision == revision) {
            self.push(revision, 0, result, 0, true);
        }
    }

    fn push(&mut self, revision: &str, round: u32, result: ProbeResult, runs: u32, reused: bool) {
        self.0.push(ProbeRecord {
            revision: revision.to_string(),
            position: None,
            round,
            result,
            runs,
            reused,
        });
    }

    /// With each revision's position in the candidate range (`index`).
    fn records(self, index: &HashMap<&str, usize>) -> Vec<ProbeRecord> {
        self.0
            .into_iter()
            .map(|p| ProbeRecord {
                position: index.get(p.revision.as_str()).copied(),
                ..p
            })
            .collect()
    }
}

/// What the search found.
#[derive(Debug, Clone)]
pub struct HistoryFinding {
    pub culprit: Option<String>,
    pub summary: BisectSummary,
    /// Every probe's judgement, by revision (to re-judge with another model).
    pub probes: HashMap<String, ProbeReport>,
}

pub use crate::journal::ProbeReport;

/// Probes one revision: bad on the first failure with the baseline signature,
/// untestable on a different failure or a blocked run, good after enough passes.
/// With a background rate (a flakiness regression), a sequential test between
/// the two rates decides instead.
async fn probe(ctx: &Context, revision: &str, model: &FlakeModel) -> Result<ProbeReport> {
    if let Some(low) = model.background_rate {
        return probe_rate(ctx, revision, model, low).await;
    }
    let mut runs = 0;
    let mut passes = 0;
    while passes < model.passes_needed {
        let judged = run_once(ctx, revision, model).await?;
        runs += 1;
        match judged.outcome {
            Outcome::Fail => {
                return Ok(ProbeReport {
                    result: ProbeResult::Bad,
                    runs,
                    passes,
                });
            }
            Outcome::FailedDifferently | Outcome::Blocked => {
                return Ok(ProbeReport {
                    result: ProbeResult::Untestable,
                    runs,
                    passes,
                });
            }
            Outcome::Pass => passes += 1,
        }
    }
    Ok(ProbeReport {
        result: ProbeResult::Good,
        runs,
        passes,
    })
}

/// One run of the test at `revision` as the model judges it (its oracle
/// overlay, its failure signature).
async fn run_once(ctx: &Context, revision: &str, model: &FlakeModel) -> Result<Judged> {
    run_judged_overlaid(
        &ctx.pool,
        revision,
        &ctx.test_spec(),
        ctx.test.runner,
        Some(&model.baseline),
        model.overlay.as_ref(),
    )
    .await
}

/// Decides whether `revision` fails at the background rate or at the raised one.
async fn probe_rate(
    ctx: &Context,
    revision: &str,
    model: &FlakeModel,
    low: f64,
) -> Result<ProbeReport> {
    let mut test = RateTest::new(low, model.failure_rate, model.miss, model.miss, model.cap);
    let mut passes = 0;
    loop {
        if let Some((decision, _)) = test.decision() {
            return Ok(ProbeReport {
                result: match decision {
                    RateDecision::High => ProbeResult::Bad,
                    RateDecision::Low => ProbeResult::Good,
                },
                runs: test.runs(),
                passes,
            });
        }
        let judged = run_once(ctx, revision, model).await?;
        match judged.outcome {
            Outcome::Fail => test.record(true),
            Outcome::Pass => {
                passes += 1;
                test.record(false)
            }
            Outcome::FailedDifferently | Outcome::Blocked => {
                return Ok(ProbeReport {
                    result: ProbeResult::Untestable,
                    runs: test.runs() + 1,
                    passes,
                });
            }
        }
    }
}

/// [`probe_all`], reusing judgements already known to say the failure is
/// there (bad) or cannot be tested; a known "good" may have come from a
/// weaker model and is probed again.
async fn probe_unknown(
    ctx: &Context,
    revisions: &[String],
    model: &FlakeModel,
    known: &HashMap<String, ProbeReport>,
) -> Result<Vec<ProbeReport>> {
    let reuse = |r: &String| {
        known
            .get(r)
            .copied()
            .filter(|k| k.result != ProbeResult::Good)
    };
    let todo: Vec<String> = revisions
        .iter()
        .filter(|r| reuse(r).is_none())
        .cloned()
        .collect();
    let mut fresh = probe_all(ctx, &todo, model).await?.into_iter();
    Ok(revisions
        .iter()
        .map(|r| reuse(r).unwrap_or_else(|| fresh.next().expect("one report per probe")))
        .collect())
}

/// Probes several revisions at once (each takes pool slots as they free up).
async fn probe_all(
    ctx: &Context,
    revisions: &[String],
    model: &FlakeModel,
) -> Result<Vec<ProbeReport>> {
    let reports = join_all(revisions.iter().map(|r| probe(ctx, r, model)))
        .await
        .into_iter()
        .collect::<Result<Vec<_>>>()?;
    if let Some(journal) = journal_for(ctx, model) {
        for (revision, report) in revisions.iter().zip(&reports) {
            journal.record(revision, model.oracle(), *report).await;
        }
    }
    Ok(reports)
}

/// The probe journal, where its judgements hold: never under a flakiness-rate
/// model, whose "bad" means a raised rate, not a seen failure.
fn journal_for<'a>(ctx: &'a Context, model: &FlakeModel) -> Option<&'a SearchJournal> {
    ctx.journal
        .as_deref()
        .filter(|_| model.background_rate.is_none())
}

/// Adds what an earlier attempt of this investigation journaled under the
/// model's oracle to `known` (the search takes those as it takes a seed).
fn seed_from_journal(ctx: &Context, model: &FlakeModel, known: &mut HashMap<String, ProbeReport>) {
    if let Some(journal) = journal_for(ctx, model) {
        for (revision, report) in journal.reusable(model.oracle()) {
            known.entry(revision).or_insert(report);
        }
    }
}

/// The probability that every "good" judgement was right.
fn confidence(model: &FlakeModel, passes: impl IntoIterator<Item = u32>) -> f64 {
    if model.background_rate.is_some() {
        // Each probe's sequential test errs with probability `miss`.
        let n = passes.into_iter().count() as i32;
        return (1.0 - model.miss).powi(n);
    }
    if model.failure_rate >= 1.0 {
        return 1.0;
    }
    passes
        .into_iter()
        .map(|p| 1.0 - (1.0 - model.failure_rate).powi(p as i32))
        .product()
}

/// The judgements that hold whatever the model: an untestable revision
/// stays untestable.
fn untestable_only(known: &HashMap<String, ProbeReport>) -> HashMap<String, ProbeReport> {
    known
        .iter()
        .filter(|(_, r)| r.result == ProbeResult::Untestable)
        .map(|(rev, r)| (rev.clone(), *r))
        .collect()
}

/// The search again from `good` with the `strict` model, after a first
/// search whose answer could not stand (`earlier` says why): its report
/// says so first and counts the first search's runs too.
async fn search_again(
    ctx: &Context,
    good: &str,
    strict: &FlakeModel,
    seed: HashMap<String, ProbeReport>,
    earlier: String,
    first: &HashMap<String, ProbeReport>,
) -> Result<HistoryFinding> {
    let mut again = Box::pin(find_culprit(ctx, Some(good.to_string()), strict, seed)).await?;
    again.summary.note = Some(match again.summary.note.take() {
        Some(n) => format!("{earlier}; {n}"),
        None => earlier,
    });
    again.summary.test_runs += first.values().map(|r| r.runs).sum::<u32>();
    Ok(again)
}

/// The re-test of a flake-aware search's answer.
struct Boundary {
    /// The culprit's report first, then its parents'.
    reports: Vec<(String, ProbeReport)>,
}

impl Boundary {
    /// The culprit fails at the high rate and every parent at the low one.
    fn holds(&self) -> bool {
        let mut reports = self.reports.iter().map(|(_, r)| r.result);
        reports.next() == Some(ProbeResult::Bad) && reports.all(|r| r == ProbeResult::Good)
    }

    fn describe(&self) -> String {
        self.reports
            .iter()
            .enumerate()
            .map(|(n, (rev, r))| {
                let fails = r.runs - r.passes;
                format!(
                    "{} {} ({} of {} runs failed: {})",
                    if n == 0 { "culprit" } else { "parent" },
                    short(rev),
                    fails,
                    r.runs,
                    match r.result {
                        ProbeResult::Bad => "the high rate",
                        ProbeResult::Good => "the low rate",
                        ProbeResult::Untestable => "untestable",
                    }
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Re-tests both ends of a flake-aware search's answer with `strict`.
///
/// Each probe of such a search is a sequential test that errs now and then,
/// and one wrong judgement anywhere moves the boundary the search ends on.
/// But every wrong boundary has a culprit whose rate is really the low one
/// or a parent whose rate is really the high one, so re-testing the two
/// ends catches a wrong answer whichever probe misled the search. (The
/// good revision itself was measured already and is not re-tested.)
async fn confirm_boundary(
    ctx: &Context,
    strict: &FlakeModel,
    culprit: &str,
    parents: &[String],
) -> Result<Boundary> {
    let mut revisions = vec![culprit.to_string()];
    revisions.extend(parents.iter().cloned());
    ctx.progress.report(&format!(
        "re-testing the flake-aware search's answer {} and its parent with a stricter test",
        short(culprit)
    ));
    let reports = probe_all(ctx, &revisions, strict).await?;
    Ok(Boundary {
        reports: revisions.into_iter().zip(reports).collect(),
    })
}

/// Probes a given good revision as the search would, without judging it.
/// When the bad revision's test files cannot run on the good revision's
/// source (the good revision is untestable under the overlay: the tests use
/// an API the old source lacks), the oracle cannot judge the search's
/// bounds: the model falls back to each revision's own tests, says why, and
/// the good revision is probed again.
///
/// When the oracle's files differ at `good`, the bad revision's tests may not
/// run on good's source (a test of an API that did not exist yet). The probe
/// with good's own tests then runs beside the overlaid one, on the other
/// slot, so falling back costs no second round before the search can start;
/// its judgement is used only if the overlaid probe cannot test `good`. Only
/// for a one-run probe (a deterministic failure): a flaky model's probe is
/// many runs, too many to spend on a judgement that may not be needed.
pub async fn probe_good(ctx: &Context, good: &str, model: &mut FlakeModel) -> Result<ProbeReport> {
    let overlay_differs = match &model.overlay {
        Some(overlay) => oracle_differs_at(ctx, good, overlay).await?,
        None => false,
    };
    let one_run = model.background_rate.is_none() && model.passes_needed <= 1;
    if !overlay_differs || !one_run || ctx.pool.size() < 2 {
        let report = probe(ctx, good, model).await?;
        if report.result != ProbeResult::Untestable || model.overlay.is_none() {
            return Ok(report);
        }
        fall_back_to_own_tests(ctx, model, &format!("the good revision {}", short(good)));
        return probe(ctx, good, model).await;
    }
    let own_tests = FlakeModel {
        overlay: None,
        ..model.clone()
    };
    let (overlaid, own) =
        futures::future::try_join(probe(ctx, good, model), probe(ctx, good, &own_tests)).await?;
    if overlaid.result != ProbeResult::Untestable {
        return Ok(overlaid);
    }
    fall_back_to_own_tests(ctx, model, &format!("the good revision {}", short(good)));
    Ok(own)
}

/// A run of the bad revision's tests at `--good`, made in the pipeline's
/// first round beside the first run at bad, before the failure was known:
/// [`probe_good`]'s overlaid probe brought forward a round. The oracle's
/// files were guessed from the test command, so the run stands for that
/// probe only when the failure names no others ([`good_from_beside`]).
pub struct GoodBeside {
    pub revision: String,
    pub overlay: Overlay,
    pub run: Judged,
}

/// What [`good_from_beside`] established about `--good`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoodState {
    /// It passes the oracle: search from it.
    Good,
    /// It fails with the failure, or cannot be tested even with its own
    /// tests: [`probe_good`] again, once the failure is classified.
    NotGood,
    /// The bad revision's tests cannot run on its source, so the search
    /// falls back to each revision's own tests; good's own tests have not
    /// run yet, and need to only if the search's answer leans on good
    /// ([`check_deferred_good`]).
    OwnTestsUnchecked,
}

/// Judges the run made beside the first run at bad as [`probe_good`]
/// would judge its overlaid probe: `None` when it cannot stand for it (the
/// oracle is not the guessed one, or the model needs more than one run).
/// Where the bad revision's tests cannot run on good's source, the model
/// falls back to each revision's own tests, and good's own-tests probe,
/// which [`probe_good`] runs at once beside the overlaid one, is left until
/// the search has answered.
pub async fn good_from_beside(
    ctx: &Context,
    beside: &GoodBeside,
    model: &mut FlakeModel,
) -> Result<Option<GoodState>> {
    let one_run = model.background_rate.is_none() && model.passes_needed <= 1;
    if !one_run || model.overlay.as_ref() != Some(&beside.overlay) {
        return Ok(None);
    }
    let (outcome, _) = crate::probe::judge(
        &beside.run.run.result,
        ctx.test.runner,
        Some(&model.baseline),
    );
    Ok(Some(match outcome {
        Outcome::Pass => GoodState::Good,
        Outcome::Fail => GoodState::NotGood,
        Outcome::FailedDifferently | Outcome::Blocked => {
            if !oracle_differs_at(ctx, &beside.revision, &beside.overlay).await? {
                // Its own tests are the bad revision's: nothing to fall back to.
                return Ok(Some(GoodState::NotGood));
            }
            let which = format!("the good revision {}", short(&beside.revision));
            fall_back_to_own_tests(ctx, model, &which);
            GoodState::OwnTestsUnchecked
        }
    }))
}

/// Whether `finding` stands without good's own-tests probe, or with it:
/// runs that probe only when the search's answer leans on good — a culprit
/// with a parent no probe judged good (the search took it from `--good`),
/// or no culprit at all. `false` when good does not pass. When the probe is
/// not needed, the finding's oracle note says good's own tests never ran.
pub async fn check_deferred_good(
    ctx: &Context,
    good: &str,
    model: &FlakeModel,
    finding: &mut HistoryFinding,
) -> Result<bool> {
    if let Some(culprit) = &finding.culprit {
        let parents = ctx.pool.workspace().git().parents(culprit).await?;
        let probed_good = |p: &String| {
            finding
                .probes
                .get(p)
                .is_some_and(|r| r.result == ProbeResult::Good)
        };
        if !parents.is_empty() && parents.iter().all(probed_good) {
            let note = format!(
                "the good revision {}'s own tests were not run: the answer does not lean on it (every parent of the culprit was probed good)",
                short(good)
            );
            ctx.progress.report(&note);
            let summary = &mut finding.summary;
            summary.oracle_note = Some(match summary.oracle_note.take() {
                Some(n) => format!("{n}; {note}"),
                None => note,
            });
            return Ok(true);
        }
    }
    ctx.progress.report(&format!(
        "the answer leans on the good revision {}: probing it with its own tests",
        short(good)
    ));
    Ok(probe(ctx, good, model).await?.result == ProbeResult::Good)
}

/// Whether any of the overlay's files differs between `revision` and the
/// overlay's revision (where they are the same, laying them over changes
/// nothing).
async fn oracle_differs_at(ctx: &Context, revision: &str, overlay: &Overlay) -> Result<bool> {
    let mut args = vec!["diff", "--name-only", revision, overlay.rev.as_str(), "--"];
    args.extend(overlay.files.iter().map(String::as_str));
    let changed = ctx.pool.workspace().git().run(&args).await?;
    Ok(!changed.trim().is_empty())
}

/// Drops the overlay from `model`, with the note the report carries.
fn fall_back_to_own_tests(ctx: &Context, model: &mut FlakeModel, which: &str) {
    let files = model
        .overlay
        .take()
        .map(|o| o.files.join(", "))
        .unwrap_or_default();
    let note = format!(
        "the bad revision's test files ({files}) do not run on the source of {which} (it fails differently), so every probe ran its own tests: a commit that only changed the test can be blamed (it is never reverted)"
    );
    ctx.progress.report(&note);
    model.oracle_note = Some(note);
}

/// The error a deterministic failure at `--good` deserves.
pub fn good_or_error(good: &str, report: ProbeReport) -> Result<ProbeReport> {
    match report.result {
        ProbeResult::Good => Ok(report),
        ProbeResult::Bad => Err(Error::invalid(format!(
            "the good revision {} also fails with the failure under investigation; give an older --good or omit it",
            short(good)
        ))),
        ProbeResult::Untestable => Err(Error::invalid(format!(
            "the good revision {} cannot be tested: the test fails there for another reason",
            short(good)
        ))),
    }
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

/// Walks back along the first-parent chain with doubling steps (1, 2, 4, …),
/// k probes at a time, until a revision passes.
async fn find_good(
    ctx: &Context,
    model: &FlakeModel,
    known: &mut HashMap<String, ProbeReport>,
    rounds: &mut u32,
    trail: &mut Trail,
) -> Result<std::result::Result<String, String>> {
    let chain = ctx
        .pool
        .workspace()
        .git()
        .first_parent_chain(&ctx.bad, ctx.config.lookback_limit + 1)
        .await?;
    let mut offsets: Vec<usize> = std::iter::successors(Some(1usize), |o| o.checked_mul(2))
        .take_while(|o| *o < chain.len())
        .collect();
    if chain.len() > 1 && offsets.last() != Some(&(chain.len() - 1)) {
        offsets.push(chain.len() - 1);
    }
    if offsets.is_empty() {
        return Ok(Err(format!(
            "the bad revision {} has no ancestors to compare with",
            short(&ctx.bad)
        )));
    }
    for batch in offsets.chunks(ctx.pool.size()) {
        *rounds += 1;
        let revisions: Vec<String> = batch.iter().map(|o| chain[*o].clone()).collect();
        ctx.progress.report(&format!(
            "looking for a good revision: probing {} revisions {}..{} commits back",
            revisions.len(),
            batch[0],
            batch[batch.len() - 1]
        ));
        let before: Vec<bool> = revisions.iter().map(|r| known.contains_key(r)).collect();
        let reports = probe_unknown(ctx, &revisions, model, known).await?;
        for ((rev, report), was_known) in revisions.iter().zip(&reports).zip(before) {
            known.insert(rev.clone(), *report);
            match was_known {
                true => trail.reused(rev, report.result),
                false => trail.probed(rev, *rounds, *report),
            }
        }
        if let Some((rev, _)) = revisions
            .iter()
            .zip(&reports)
            .find(|(_, r)| r.result == ProbeResult::Good)
        {
            return Ok(Ok(rev.clone()));
        }
    }
    let oldest = chain.last().expect("non-empty chain");
    let reached = if chain.len() > ctx.config.lookback_limit {
        "the oldest revision within the look-back limit"
    } else {
        "even the oldest reachable revision"
    };
    let how = match known.get(oldest).map(|r| r.result) {
        Some(ProbeResult::Untestable) => "cannot be tested (it fails differently)",
        _ => "fails with the same failure",
    };
    Ok(Err(format!(
        "no good revision found: {reached} ({}) {how}",
        short(oldest)
    )))
}

/// Runs the whole search. `good` is a verified good revision, or `None` to
/// find one. `seed` holds judgements already made (by an earlier search
/// under another model) that stay valid: they are not probed again. The
/// search takes precedence over background runs in the pool.
pub async fn find_culprit(
    ctx: &Context,
    good: Option<String>,
    model: &FlakeModel,
    seed: HashMap<String, ProbeReport>,
) -> Result<HistoryFinding> {
    let _precedence = ctx.pool.precedence();
    let mut owned = model.clone();
    let git = ctx.pool.workspace().git().clone();
    let mut known: HashMap<String, ProbeReport> = seed;
    seed_from_journal(ctx, &owned, &mut known);
    let mut rounds = 0u32;
    let mut trail = Trail::default();
    let mut summary = BisectSummary {
        bad: ctx.bad.clone(),
        parallelism: ctx.pool.size(),
        confidence: 1.0,
        ..Default::default()
    };
    summary.oracle = if ctx.config.tests_at_revision {
        OracleMode::TestsAtRevision
    } else {
        OracleMode::TestsAtBad
    };
    let mut found = match &good {
        Some(g) => Ok(g.clone()),
        None => find_good(ctx, &owned, &mut known, &mut rounds, &mut trail).await?,
    };
    if found.is_err()
        && owned.overlay.is_some()
        && known.values().any(|r| r.result == ProbeResult::Untestable)
    {
        // Older sources cannot run the bad revision's tests: look again
        // with each revision's own tests.
        fall_back_to_own_tests(ctx, &mut owned, "the older revisions");
        known.clear();
        seed_from_journal(ctx, &owned, &mut known);
        trail = Trail::default();
        found = find_good(ctx, &owned, &mut known, &mut rounds, &mut trail).await?;
    }
    let model = &owned;
    summary.oracle_note = model.oracle_note.clone();
    if model.overlay.is_none() {
        summary.oracle = OracleMode::TestsAtRevision;
    }
    let good = match found {
        Ok(g) => g,
        Err(why) => {
            summary.rounds = rounds;
            summary.test_runs = known.values().map(|r| r.runs).sum();
            summary.probes = trail.records(&HashMap::new());
            summary.note = Some(why);
            return Ok(HistoryFinding {
                culprit: None,
                summary,
                probes: known.clone(),
            });
        }
    };
    summary.good = Some(good.clone());
    if let Some(o) = &model.overlay {
        summary.oracle_files = o.files.clone();
    }

    let mut commits = git.range(&ctx.bad, &good, false).await?;
    if commits.len() > MAX_GRAPH_CANDIDATES {
        commits = git.range(&ctx.bad, &good, true).await?;
        summary.note = Some(format!(
            "window larger than {MAX_GRAPH_CANDIDATES} commits: searched the first-parent chain only"
        ));
    }
    if commits.last().map(|c| c.sha.as_str()) != Some(ctx.bad.as_str()) {
        return Err(Error::internal(
            "the bad revision is not the newest commit of its own range",
        ));
    }
    let index: HashMap<&str, usize> = commits
        .iter()
        .enumerate()
        .map(|(i, c)| (c.sha.as_str(), i))
        .collect();
    let parents: Vec<Vec<usize>> = commits
        .iter()
        .map(|c| {
            c.parents
                .iter()
                .filter_map(|p| index.get(p.as_str()).copied())
                .collect()
        })
        .collect();
    summary.candidates = commits.len();
    let mut search = CulpritSearch::new(&parents)?;
    if let Some(focus) = &model.focus {
        let shas: Vec<String> = commits.iter().map(|c| c.sha.clone()).collect();
        if let Some((prior, used)) = focus.prior(ctx, &good, &shas).await {
            summary.pointed_at = prior
                .ranked()
                .into_iter()
                .take(3)
                .map(|(i, share)| PointedCommit {
                    commit: shas[i].clone(),
                    share,
                })
                .collect();
            if let Some(first) = summary.pointed_at.first() {
                ctx.progress.report(&format!(
                    "the failure's frames and tests point at {} ({:.0}% of the evidence, {} commits named): probing around it first",
                    short(&first.commit),
                    first.share * 100.0,
                    prior.scores.iter().filter(|s| **s > 0.0).count()
                ));
            }
            tracing::debug!(
                focus = ?used,
                top = ?prior
                    .ranked()
                    .iter()
                    .take(8)
                    .map(|&(i, share)| (short(&shas[i]).to_string(), i, prior.scores[i], share))
                    .collect::<Vec<_>>(),
                "culprit search prior"
            );
            search = search.with_prior(prior.weights)?;
        }
    }
    for (rev, report) in &known {
        if let Some(&i) = index.get(rev.as_str())
            && report.result != ProbeResult::Good
            && i + 1 != commits.len()
        {
            search.record(i, report.result)?;
            trail.reused(rev, report.result);
        }
    }

    let mut good_passes: Vec<u32> = known
        .values()
        .filter(|r| r.result == ProbeResult::Good)
        .map(|r| r.passes)
        .collect();
    let outcome = loop {
        if let Some(outcome) = search.outcome() {
            break Ok(outcome);
        }
        let probes = search.next_probes(ctx.pool.size());
        if probes.is_empty() {
            break Err(Error::internal("culprit search stalled"));
        }
        let revisions: Vec<String> = probes.iter().map(|&i| commits[i].sha.clone()).collect();
        ctx.progress.report(&format!(
            "culprit search round {}: {} candidates left, probing {} revisions",
            search.rounds() + rounds,
            search.remaining(),
            revisions.len()
        ));
        let round = search.rounds() + rounds;
        let reports = probe_all(ctx, &revisions, model).await?;
        for (revision, report) in revisions.iter().zip(&reports) {
            trail.probed(revision, round, *report);
        }
        let mut contradiction = None;
        for ((&i, rev), report) in probes.iter().zip(&revisions).zip(&reports) {
            known.insert(rev.clone(), *report);
            if report.result == ProbeResult::Good {
                good_passes.push(report.passes);
            }
            if let Err(e) = search.record(i, report.result) {
                contradiction = Some(e);
            }
        }
        if let Some(e) = contradiction {
            break Err(e);
        }
    };
    // A flake-aware search's probes are sequential tests that err now and
    // then, so judgements that contradict each other (a revision judged
    // good after one judged bad) mean one of them erred, not that the
    // failure comes and goes: search again with a test ten times stricter,
    // as for an answer its re-test refutes.
    if let Err(e) = &outcome
        && model.background_rate.is_some()
        && !model.strict
    {
        let why = e.message.clone();
        ctx.progress.report(&format!(
            "the flake-aware search's judgements contradict each other ({why}); searching again with a stricter test"
        ));
        let earlier = format!(
            "a first search's judgements contradicted each other ({why}); this is the answer of a search with a test ten times stricter"
        );
        let seed = untestable_only(&known);
        return search_again(ctx, &good, &model.stricter(), seed, earlier, &known).await;
    }
    // A flake-aware search's answer is re-tested at both ends before it is
    // believed (see `confirm_boundary`).
    let mut confirmed = None;
    if let Ok(SearchOutcome::Culprit(i)) = &outcome
        && model.background_rate.is_some()
    {
        let culprit = &commits[*i];
        let parents: Vec<String> = culprit
            .parents
            .iter()
            .filter(|p| **p != good)
            .cloned()
            .collect();
        let round = rounds + search.rounds() + 1;
        let strict = model.stricter();
        let boundary = confirm_boundary(ctx, &strict, &culprit.sha, &parents).await?;
        for (rev, report) in &boundary.reports {
            trail.probed(rev, round, *report);
            known.insert(rev.clone(), *report);
        }
        if !boundary.holds() {
            let why = boundary.describe();
            if model.strict {
                ctx.progress
                    .report(&format!("the flake-aware search did not settle: {why}"));
                summary.rounds = round;
                summary.test_runs = known.values().map(|r| r.runs).sum();
                summary.probes = trail.records(&index);
                summary.confidence = 0.0;
                summary.note = Some(format!(
                    "the flake-aware search did not settle: twice its answer failed the re-test of its ends ({why})"
                ));
                return Ok(HistoryFinding {
                    culprit: None,
                    summary,
                    probes: known.clone(),
                });
            }
            ctx.progress.report(&format!(
                "the flake-aware search's answer {} failed the re-test of its ends ({why}); searching again with a stricter test",
                short(&culprit.sha)
            ));
            // Only the strict judgements carry over; an untestable
            // revision stays untestable whatever the model.
            let mut seed = untestable_only(&known);
            seed.extend(boundary.reports.iter().map(|(rev, r)| (rev.clone(), *r)));
            let earlier = format!(
                "a first search answered {} but the re-test of its ends refuted it ({why}); this is the answer of a search with a test ten times stricter",
                short(&culprit.sha)
            );
            return search_again(ctx, &good, &strict, seed, earlier, &known).await;
        }
        confirmed = Some((1.0 - strict.miss, boundary.describe()));
    }
    summary.rounds = rounds + search.rounds() + u32::from(confirmed.is_some());
    summary.test_runs = known.values().map(|r| r.runs).sum();
    summary.untestable = commits
        .iter()
        .filter(|c| {
            known
                .get(&c.sha)
                .is_some_and(|r| r.result == ProbeResult::Untestable)
        })
        .map(|c| c.sha.clone())
        .collect();
    summary.probes = trail.records(&index);
    summary.confidence = confidence(
        model,
        good_passes
            .iter()
            .copied()
            .chain(std::iter::once(model.passes_needed)),
    );
    if let Some((confidence, how)) = confirmed {
        // A wrong answer survives only if a strict re-test erred.
        summary.confidence = confidence;
        let note =
            format!("the answer's ends were re-tested with a test ten times stricter: {how}");
        summary.note = Some(match summary.note.take() {
            Some(n) => format!("{n}; {note}"),
            None => note,
        });
    }
    match outcome {
        Ok(SearchOutcome::Culprit(i)) => {
            let info = git.commit_info(&commits[i].sha).await?;
            let what = if model.provisional {
                "culprit candidate"
            } else {
                "culprit found"
            };
            ctx.progress.report(&format!(
                "{what}: {} \"{}\" (confidence {:.3}{})",
                short(&info.commit),
                info.summary,
                summary.confidence,
                if model.provisional {
                    ", if the failure is deterministic; the re-runs at bad will tell"
                } else {
                    ""
                }
            ));
            summary.culprit = Some(info);
            if summary.oracle == OracleMode::TestsAtRevision {
                let paths = git.changed_paths(&commits[i].sha).await?;
                summary.culprit_changes_only_tests =
                    !paths.is_empty() && paths.iter().all(|p| is_test_path(p));
            }
            if summary.culprit_changes_only_tests {
                ctx.progress.report(
                    "it changes test files only: that is where the test appeared or changed, \
                     not where the defect came from",
                );
                return Ok(HistoryFinding {
                    culprit: None,
                    summary,
                    probes: known.clone(),
                });
            }
            Ok(HistoryFinding {
                culprit: Some(commits[i].sha.clone()),
                summary,
                probes: known.clone(),
            })
        }
        Ok(SearchOutcome::Ambiguous(set)) => {
            summary.ambiguous = set.iter().map(|&i| commits[i].sha.clone()).collect();
            summary.note = Some(format!(
                "the culprit is one of {} commits that untestable revisions hide from each other",
                set.len()
            ));
            Ok(HistoryFinding {
                culprit: None,
                summary,
                probes: known.clone(),
            })
        }
        Err(e) => {
            summary.note = Some(e.message);
            Ok(HistoryFinding {
                culprit: None,
                summary,
                probes: known.clone(),
            })
        }
    }
}

#[cfg(test)]
mod boundary_tests {
    use super::*;

    fn report(result: ProbeResult, runs: u32, passes: u32) -> ProbeReport {
        ProbeReport {
            result,
            runs,
            passes,
        }
    }

    #[test]
    fn a_boundary_holds_only_with_a_high_culprit_and_low_parents() {
        let b = |c, p| Boundary {
            reports: vec![
                ("c".repeat(40), report(c, 12, 3)),
                ("p".repeat(40), report(p, 30, 29)),
            ],
        };
        assert!(b(ProbeResult::Bad, ProbeResult::Good).holds());
        // A truly low culprit: the search went too far back... or forward.
        assert!(!b(ProbeResult::Good, ProbeResult::Good).holds());
        // A truly high parent: the culprit is earlier.
        assert!(!b(ProbeResult::Bad, ProbeResult::Bad).holds());
        assert!(!b(ProbeResult::Bad, ProbeResult::Untestable).holds());
        let text = b(ProbeResult::Bad, ProbeResult::Good).describe();
        assert!(
            text.contains("culprit cccccccccccc (9 of 12 runs failed: the high rate)"),
            "{text}"
        );
        assert!(
            text.contains("parent pppppppppppp (1 of 30 runs failed: the low rate)"),
            "{text}"
        );
    }
}
