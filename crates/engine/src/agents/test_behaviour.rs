//! The test-behaviour agent: re-runs the failing test at the bad revision to
//! classify it (deterministic, flaky with a rate, never failing), then checks
//! order dependence (alone vs in its suite) and environment dependence
//! (timezone, locale, hash seed).

use crate::context::Context;
use crate::overlay::Overlay;
use crate::probe::{Judged, batch_experiment, judge, run_judged, run_judged_overlaid};
use futures::future::join_all;
use tracelab_domain::Result;
use tracelab_domain::experiment::{Outcome, RunCounts, Step};
use tracelab_domain::hypothesis::{AgentKind, Hypothesis, HypothesisKind, HypothesisStatus};
use tracelab_domain::ids::HypothesisId;
use tracelab_domain::runner;
use tracelab_domain::sequential::{
    Behaviour, Classifier, Decision, MAX_RUNS_CAP, flaky_unfixed_likelihood, passes_to_confirm,
    runs_for_duration,
};
use tracelab_domain::signature::FailureSignature;

use crate::classification::isolated_command;
pub use crate::classification::{Classification, FixConfirmation};

/// Re-runs the test at the bad revision, k at a time, until the sequential test decides.
pub async fn classify(ctx: &Context) -> Result<Classification> {
    classify_at(ctx, &ctx.bad, None, None).await
}

/// [`classify`] at any revision; with a `known` baseline only that failure
/// counts, and `overlay` lays the oracle's test files over the checkout.
pub async fn classify_at(
    ctx: &Context,
    revision: &str,
    known: Option<&FailureSignature>,
    overlay: Option<&Overlay>,
) -> Result<Classification> {
    Reproducer::new(ctx, revision, known, overlay.cloned())
        .finish(ctx, false)
        .await
}

/// What the culprit search told the re-runs at bad when it ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SearchEnded {
    /// It named a culprit that changed more than tests.
    pub culprit_named: bool,
    /// Its probes at revisions after the culprit that failed with the
    /// failure (one run each, no pass). Under the search's model each is a
    /// run of the failure where the culprit's change is present, so they
    /// count among the failures in a row that a fix's clean runs confirm:
    /// were the failure flaky at a rate p ≤ `flaky_max` there, each would
    /// fail with probability at most p, as a run at bad would.
    pub failing_probes: u32,
}

/// The sequential test in progress at one revision: the runs so far and
/// what they say. The pipeline runs it until the first failure, starts the
/// culprit search, and finishes it in the slots the search leaves free.
pub struct Reproducer {
    revision: String,
    overlay: Option<Overlay>,
    classifier: Classifier,
    runs: Vec<Judged>,
    baseline: Option<FailureSignature>,
    baseline_output: Option<String>,
    blocked: u32,
    blocked_reason: Option<String>,
    /// Set once the duration budget has lowered the run cap.
    budgeted: bool,
}

impl Reproducer {
    pub fn new(
        ctx: &Context,
        revision: &str,
        known: Option<&FailureSignature>,
        overlay: Option<Overlay>,
    ) -> Self {
        Self {
            revision: revision.to_string(),
            overlay,
            classifier: Classifier::new(ctx.config.sequential),
            runs: Vec::new(),
            baseline: known.cloned(),
            baseline_output: None,
            blocked: 0,
            blocked_reason: None,
            budgeted: false,
        }
    }

    /// The failure under investigation and its output, once a run showed it.
    pub fn first_failure(&self) -> Option<(&FailureSignature, &str)> {
        match (&self.baseline, &self.baseline_output) {
            (Some(b), Some(o)) if self.classifier.failures() > 0 => Some((b, o.as_str())),
            _ => None,
        }
    }

    /// The decision, or why nothing more can be learnt; `None` while the
    /// sequential test wants more runs.
    fn ending(&self) -> Option<(Decision, Option<String>)> {
        let judged_runs = self.classifier.runs();
        let stuck =
            self.runs.len() as u32 >= MAX_RUNS_CAP || (judged_runs == 0 && self.blocked >= 2);
        match self.classifier.decision() {
            Some(decision) => Some((decision, None)),
            None if stuck => Some((
                Decision {
                    behaviour: Behaviour::NeverFails,
                    confident: false,
                },
                Some(
                    self.blocked_reason
                        .clone()
                        .unwrap_or_else(|| "the test never gave a judgeable result".into()),
                ),
            )),
            None => None,
        }
    }

    /// Whether the sequential test has decided (or cannot go on).
    pub fn decided(&self) -> bool {
        self.ending().is_some()
    }

    /// Runs one batch of up to k re-runs. In the `background`, each batch
    /// waits until no culprit search holds the pool.
    async fn batch(&mut self, ctx: &Context, background: bool) -> Result<()> {
        self.batch_of(ctx, background, ctx.pool.size()).await
    }

    /// [`Reproducer::batch`] of at most `slots` runs.
    async fn batch_of(&mut self, ctx: &Context, background: bool, slots: usize) -> Result<()> {
        if background {
            ctx.pool.wait_for_turn().await;
        }
        let spec = ctx.test_spec();
        let remaining = ctx
            .config
            .sequential
            .max_runs
            .saturating_sub(self.classifier.runs())
            .max(1) as usize;
        let batch = slots.max(1).min(remaining);
        let overlay = self.overlay.as_ref();
        let revision = self.revision.as_str();
        let results = join_all((0..batch).map(|_| {
            run_judged_overlaid(&ctx.pool, revision, &spec, ctx.test.runner, None, overlay)
        }))
        .await;
        for result in results {
            let judged = result?;
            self.record(judged, ctx.test.runner);
        }
        self.apply_budget(ctx);
        ctx.progress.report(&format!(
            "reproduction: {} runs, {} failed with the failure under investigation",
            self.classifier.runs(),
            self.classifier.failures()
        ));
        Ok(())
    }

    fn record(&mut self, mut judged: Judged, runner: runner::Runner) {
        if judged.outcome == Outcome::Fail {
            match &self.baseline {
                None => {
                    self.baseline = judged.signature.clone();
                    self.baseline_output = Some(judged.run.result.output.clone());
                }
                Some(base) => {
                    let (outcome, _) = judge(&judged.run.result, runner, Some(base));
                    judged.outcome = outcome;
                    if outcome == Outcome::Fail && self.baseline_output.is_none() {
                        self.baseline_output = Some(judged.run.result.output.clone());
                    }
                }
            }
        }
        match judged.outcome {
            Outcome::Fail => self.classifier.record(true),
            Outcome::Pass => self.classifier.record(false),
            Outcome::Blocked => {
                self.blocked += 1;
                self.blocked_reason = judged.run.result.blocked.clone();
            }
            Outcome::FailedDifferently => {}
        }
        self.runs.push(judged);
    }

    /// After the first judged runs, a slow test's run cap comes from the
    /// reproduction budget (`runs_for_duration`).
    fn apply_budget(&mut self, ctx: &Context) {
        let timed: Vec<u64> = self
            .runs
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Fail | Outcome::Pass))
            .map(|r| r.run.result.duration.as_millis() as u64)
            .collect();
        if self.budgeted || timed.is_empty() {
            return;
        }
        self.budgeted = true;
        let mean = timed.iter().sum::<u64>() / timed.len() as u64;
        let cap = runs_for_duration(
            mean,
            ctx.pool.size(),
            ctx.config.reproduction_budget.as_millis() as u64,
            ctx.config.reproduction_min_runs,
            ctx.config.sequential.max_runs,
        );
        if cap < ctx.config.sequential.max_runs {
            ctx.progress.report(&format!(
                "reproduction: the test takes {:.1} s, so at most {cap} re-runs",
                mean as f64 / 1000.0
            ));
        }
        self.classifier.limit_runs(cap);
    }

    /// One batch that leaves a slot of the pool to `beside`, run at the
    /// same time (the pipeline's first round: the first run at bad beside
    /// a run at `--good`).
    pub async fn batch_beside<T>(
        &mut self,
        ctx: &Context,
        beside: impl std::future::Future<Output = T>,
    ) -> Result<T> {
        let slots = ctx.pool.size().saturating_sub(1);
        let (batch, other) = futures::future::join(self.batch_of(ctx, false, slots), beside).await;
        batch?;
        Ok(other)
    }

    /// Runs until a run shows the failure or the sequential test decides.
    pub async fn until_first_failure(&mut self, ctx: &Context) -> Result<()> {
        while self.first_failure().is_none() && !self.decided() {
            self.batch(ctx, false).await?;
        }
        Ok(())
    }

    /// Runs until the sequential test decides and returns the classification.
    pub async fn finish(mut self, ctx: &Context, background: bool) -> Result<Classification> {
        loop {
            if let Some((decision, blocked)) = self.ending() {
                return Ok(self.into_classification(ctx, decision, blocked));
            }
            self.batch(ctx, background).await?;
        }
    }

    /// [`Reproducer::finish`] for the pipeline's background re-runs, which
    /// may stop early once `search_ended` says the search named a culprit:
    /// after `ctx.config.confirm_by_fix_after` failures in a row (no pass,
    /// nothing blocked) — the search's failing probes after the culprit
    /// count among them, and so does the regression test's run alone at bad
    /// that the fix's verification makes first — when a fix's clean runs can
    /// supply the rest of the evidence. Returns the classification so far, and the reproducer to
    /// finish if the fix is not verified.
    pub async fn finish_or_await_fix(
        mut self,
        ctx: &Context,
        search_ended: &std::sync::OnceLock<SearchEnded>,
    ) -> Result<(Classification, Option<Reproducer>)> {
        loop {
            if let Some((decision, blocked)) = self.ending() {
                return Ok((self.into_classification(ctx, decision, blocked), None));
            }
            ctx.pool.wait_for_turn().await;
            if let Some(confirmation) = self.confirmable(ctx, search_ended) {
                let decision = Decision {
                    behaviour: Behaviour::Deterministic,
                    confident: false,
                };
                let mut classification = self.snapshot(ctx, decision);
                classification.fix_confirmation = Some(confirmation);
                ctx.progress.report(&format!(
                    "reproduction: {} and a culprit: the re-runs stop; a fix verified with {} clean runs confirms the failure is deterministic",
                    confirmation.failures_in_a_row(),
                    confirmation.passes
                ));
                return Ok((classification, Some(self)));
            }
            self.batch(ctx, false).await?;
        }
    }

    fn confirmable(
        &self,
        ctx: &Context,
        search_ended: &std::sync::OnceLock<SearchEnded>,
    ) -> Option<FixConfirmation> {
        let search = search_ended.get().filter(|s| s.culprit_named)?;
        let wanted = ctx.config.confirm_by_fix_after;
        let at_bad = self.classifier.failures();
        let clean = at_bad == self.classifier.runs() && self.blocked == 0;
        // The fix's verification runs the regression test alone at bad
        // before the fix whenever it is narrower than the test command; a
        // failure there is one more in the row (checked once it ran). It
        // runs in the pool, whose slots are free by then: when one run
        // short of `wanted`, that run goes beside it on another slot
        // instead of a round of re-runs here (up to one per slot).
        let isolated = isolated_command(self.baseline.as_ref(), &ctx.test).is_some();
        let known = at_bad + search.failing_probes;
        let before_failures =
            FixConfirmation::before_failures(wanted, known, ctx.pool.size(), isolated);
        let failures = known + before_failures;
        if wanted == 0 || at_bad == 0 || failures < wanted || !clean {
            return None;
        }
        let passes = passes_to_confirm(failures, &ctx.config.sequential, 10)?;
        Some(FixConfirmation {
            failures,
            probe_failures: search.failing_probes,
            before_failures,
            passes,
            likelihood: flaky_unfixed_likelihood(failures, passes, ctx.config.sequential.flaky_max),
        })
    }

    /// The classification the runs so far make, leaving the reproducer able to go on.
    fn snapshot(&self, ctx: &Context, decision: Decision) -> Classification {
        let experiment = batch_experiment(
            Step::Reproduction,
            &ctx.test.display(),
            &self.revision,
            &self.runs,
            ctx.config.stored_output_limit,
            None,
        )
        .expect("at least one run");
        let mut counts = RunCounts::default();
        self.runs.iter().for_each(|r| counts.record(r.outcome));
        Classification {
            decision,
            counts,
            baseline: self.baseline.clone(),
            baseline_output: self.baseline_output.clone(),
            experiment,
            blocked: None,
            fix_confirmation: None,
        }
    }

    fn into_classification(
        self,
        ctx: &Context,
        decision: Decision,
        blocked: Option<String>,
    ) -> Classification {
        Classification {
            blocked,
            ..self.snapshot(ctx, decision)
        }
    }
}

/// `runs` more judged runs at `revision` (k at a time), counted against the
/// failure under investigation: to compare two failure rates with enough
/// evidence when the sequential test's runs were not.
pub async fn more_runs(
    ctx: &Context,
    revision: &str,
    baseline: &FailureSignature,
    overlay: Option<&Overlay>,
    runs: u32,
) -> Result<RunCounts> {
    let spec = ctx.test_spec();
    let mut counts = RunCounts::default();
    let mut left = runs;
    while left > 0 {
        let batch = (ctx.pool.size() as u32).min(left);
        let results = join_all((0..batch).map(|_| {
            run_judged_overlaid(
                &ctx.pool,
                revision,
                &spec,
                ctx.test.runner,
                Some(baseline),
                overlay,
            )
        }))
        .await;
        for judged in results {
            counts.record(judged?.outcome);
        }
        left -= batch;
    }
    Ok(counts)
}

/// The flaky hypothesis, when the re-runs showed both outcomes.
pub fn flaky_hypothesis(
    ctx: &Context,
    number: u32,
    classification: &Classification,
) -> Option<Hypothesis> {
    if classification.decision.behaviour != Behaviour::Flaky {
        return None;
    }
    let stats = classification.flaky_stats();
    let mut h = Hypothesis::new(
        HypothesisId::new(&ctx.id, number),
        number,
        AgentKind::TestBehaviour,
        HypothesisKind::Flaky,
        format!(
            "the test is flaky: it failed {} of {} runs at the same revision and environment",
            stats.failures, stats.runs
        ),
    );
    h.flaky = Some(stats);
    h.experiments.push(classification.experiment.clone());
    if classification.decision.confident {
        h.status = HypothesisStatus::Verified;
        h.status_reason = format!(
            "both outcomes observed at one revision; failure rate {:.1}% (95% interval {:.1}–{:.1}%)",
            stats.failure_rate * 100.0,
            stats.interval.0 * 100.0,
            stats.interval.1 * 100.0
        );
    } else {
        h.status = HypothesisStatus::Inconclusive;
        h.status_reason = "the run cap ended re-runs before the configured confidence".into();
    }
    Some(h)
}

async fn repeat(
    ctx: &Context,
    argv: &[String],
    env: &[(String, String)],
    times: u32,
    baseline: Option<&FailureSignature>,
) -> Result<Vec<Judged>> {
    let spec = ctx.spec(argv, env);
    let results = join_all(
        (0..times).map(|_| run_judged(&ctx.pool, &ctx.bad, &spec, ctx.test.runner, baseline)),
    )
    .await;
    results.into_iter().collect()
}

/// The failing test run alone once at bad, in the default environment: the
/// first run of the order check, and what tells the environment check which
/// command to vary.
pub struct Alone {
    pub argv: Vec<String>,
    pub first: Judged,
}

impl Alone {
    /// Runs the failing test alone once; `None` when the failure is not
    /// deterministic or the runner cannot run one test alone.
    pub async fn run(ctx: &Context, classification: &Classification) -> Result<Option<Alone>> {
        if classification.decision.behaviour != Behaviour::Deterministic {
            return Ok(None);
        }
        let Some(argv) = classification.isolated_command(&ctx.test) else {
            return Ok(None);
        };
        let baseline = classification.baseline.as_ref();
        let mut runs = repeat(ctx, &argv, &[], 1, baseline).await?;
        Ok(runs.pop().map(|first| Alone { argv, first }))
    }

    /// Whether it failed alone with the failure under investigation.
    pub fn fails(&self) -> bool {
        self.first.outcome == Outcome::Fail
    }
}

/// Order dependence: a deterministic failure in the suite whose test passes
/// alone. `alone` is the test's first run alone ([`Alone::run`]).
pub async fn order_dependence(
    ctx: &Context,
    number: u32,
    classification: &Classification,
    alone: Option<&Alone>,
) -> Result<Option<Hypothesis>> {
    let Some(alone) = alone else {
        return Ok(None);
    };
    // One isolated run that does not pass settles it (order dependence
    // needs every isolated run to pass); the others confirm a pass.
    if alone.first.outcome != Outcome::Pass {
        return Ok(None);
    }
    let isolated = &alone.argv;
    let baseline = classification.baseline.as_ref();
    let mut runs = vec![alone.first.clone()];
    let more = ctx.config.isolation_runs.max(1) - 1;
    runs.extend(repeat(ctx, isolated, &[], more, baseline).await?);
    if !runs.iter().all(|r| r.outcome == Outcome::Pass) {
        return Ok(None);
    }
    let command = shell_words::join(isolated);
    let mut h = Hypothesis::new(
        HypothesisId::new(&ctx.id, number),
        number,
        AgentKind::TestBehaviour,
        HypothesisKind::OrderDependent,
        format!(
            "order-dependent: `{command}` passes alone but fails inside `{}`",
            ctx.test.display()
        ),
    );
    h.experiments.push(classification.experiment.clone());
    h.experiments.extend(batch_experiment(
        Step::Isolation,
        &command,
        &ctx.bad,
        &runs,
        ctx.config.stored_output_limit,
        None,
    ));
    h.status = HypothesisStatus::Verified;
    h.status_reason = format!(
        "failed {} of {} runs in the suite, passed {} of {} runs alone",
        classification.counts.failures,
        classification.counts.runs,
        runs.len(),
        runs.len()
    );
    h.detail = Some(serde_json::json!({ "isolated_command": command }));
    Ok(Some(h))
}

/// Environment dependence: one variable flips the outcome consistently.
/// For a deterministic failure it looks for a variant that passes; for a
/// failure that never reproduced, for a variant that fails. When the failing
/// test fails alone (`alone`), the variants run it alone: the same evidence
/// for a fraction of a whole suite's time.
pub async fn environment_dependence(
    ctx: &Context,
    number: u32,
    classification: &Classification,
    alone: Option<&Alone>,
) -> Result<Option<Hypothesis>> {
    let looking_for = match classification.decision.behaviour {
        Behaviour::Deterministic => Outcome::Pass,
        Behaviour::NeverFails if classification.blocked.is_none() => Outcome::Fail,
        _ => return Ok(None),
    };
    let alone = alone.filter(|a| a.fails());
    let argv = alone.map_or(&ctx.test.argv, |a| &a.argv);
    let shown = alone.map_or_else(|| ctx.test.display(), |a| shell_words::join(&a.argv));
    let confirm = ctx.config.isolation_runs.max(1);
    let baseline = classification.baseline.as_ref();
    // Every variant's first run at once (they share the pool's slots); the
    // variants that flipped are confirmed in the configured order, and the
    // first confirmed one is the hypothesis.
    let screened = join_all(ctx.config.environment_variants.iter().map(|(key, value)| {
        let env = vec![(key.clone(), value.clone())];
        async move {
            let first = repeat(ctx, argv, &env, 1, baseline).await?;
            Ok::<_, tracelab_domain::Error>((key, value, env, first))
        }
    }))
    .await;
    for screened in screened {
        let (key, value, env, first) = screened?;
        if first[0].outcome != looking_for {
            continue;
        }
        let mut runs = first;
        runs.extend(repeat(ctx, argv, &env, confirm - 1, baseline).await?);
        if !runs.iter().all(|r| r.outcome == looking_for) {
            continue;
        }
        let delta = format!("{key}={value}");
        let command = format!("{delta} {shown}");
        let summary = if looking_for == Outcome::Pass {
            format!(
                "environment-dependent: the test fails in the sandbox's default environment and passes with {delta}"
            )
        } else {
            format!(
                "environment-dependent: the test passes in the default environment and fails with {delta}"
            )
        };
        let mut h = Hypothesis::new(
            HypothesisId::new(&ctx.id, number),
            number,
            AgentKind::TestBehaviour,
            HypothesisKind::EnvironmentDependent,
            summary,
        );
        h.experiments.push(classification.experiment.clone());
        if let Some(a) = alone {
            // The test alone fails in the default environment: the variant's
            // passes are compared with this run, not only with the suite's.
            h.experiments.extend(batch_experiment(
                Step::Isolation,
                &shown,
                &ctx.bad,
                std::slice::from_ref(&a.first),
                ctx.config.stored_output_limit,
                None,
            ));
        }
        h.experiments.extend(batch_experiment(
            Step::EnvironmentVariant,
            &command,
            &ctx.bad,
            &runs,
            ctx.config.stored_output_limit,
            Some(delta.clone()),
        ));
        h.status = HypothesisStatus::Verified;
        h.status_reason = format!(
            "default environment: {} of {} runs failed; with {delta}: {} of {} runs {}",
            classification.counts.failures,
            classification.counts.runs,
            runs.len(),
            runs.len(),
            if looking_for == Outcome::Pass {
                "passed"
            } else {
                "failed"
            }
        );
        h.detail = Some(serde_json::json!({ "variable": key, "value": value }));
        return Ok(Some(h));
    }
    Ok(None)
}
