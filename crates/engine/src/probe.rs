//! Running the test command and judging the result against the failure
//! under investigation.

use crate::overlay::Overlay;
use crate::pool::{Pool, PoolRun};
use tracelab_domain::Result;
use tracelab_domain::experiment::{Experiment, Outcome, RunCounts, Step, trim_output};
use tracelab_domain::ports::{CommandResult, CommandSpec};
use tracelab_domain::runner::Runner;
use tracelab_domain::signature::FailureSignature;
use tracelab_evidence::test_run::TestRun;

/// The test command as the engine runs it.
#[derive(Debug, Clone)]
pub struct TestCommand {
    pub argv: Vec<String>,
    pub runner: Runner,
}

impl TestCommand {
    pub fn display(&self) -> String {
        shell_words::join(&self.argv)
    }
}

/// One judged run.
#[derive(Debug, Clone)]
pub struct Judged {
    pub outcome: Outcome,
    pub run: PoolRun,
    /// Set for failures.
    pub signature: Option<FailureSignature>,
}

/// Judges a result: blocked, pass, the failure under investigation, or another failure.
/// Without a baseline, any failure is *the* failure.
pub fn judge(
    result: &CommandResult,
    runner: Runner,
    baseline: Option<&FailureSignature>,
) -> (Outcome, Option<FailureSignature>) {
    if result.blocked.is_some() {
        return (Outcome::Blocked, None);
    }
    if result.exit_code == Some(0) {
        return (Outcome::Pass, None);
    }
    let signature = TestRun::read(runner, &result.output).signature();
    let outcome = match baseline {
        Some(base) if !base.matches(&signature) => Outcome::FailedDifferently,
        _ => Outcome::Fail,
    };
    (outcome, Some(signature))
}

/// Runs `argv` at `revision` in the pool and judges it.
pub async fn run_judged(
    pool: &Pool,
    revision: &str,
    spec: &CommandSpec,
    runner: Runner,
    baseline: Option<&FailureSignature>,
) -> Result<Judged> {
    let run = pool.run(revision, spec).await?;
    let (outcome, signature) = judge(&run.result, runner, baseline);
    Ok(Judged {
        outcome,
        run,
        signature,
    })
}

/// [`run_judged`] with the oracle's test files laid over the checkout.
pub async fn run_judged_overlaid(
    pool: &Pool,
    revision: &str,
    spec: &CommandSpec,
    runner: Runner,
    baseline: Option<&FailureSignature>,
    overlay: Option<&Overlay>,
) -> Result<Judged> {
    let run = pool.run_overlaid(revision, spec, overlay).await?;
    let (outcome, signature) = judge(&run.result, runner, baseline);
    Ok(Judged {
        outcome,
        run,
        signature,
    })
}

/// Builds a stored experiment from one run.
pub fn experiment(
    step: Step,
    command: &str,
    revision: &str,
    judged: &Judged,
    keep: usize,
) -> Experiment {
    Experiment {
        step,
        command: command.to_string(),
        revision: revision.to_string(),
        exit_code: judged.run.result.exit_code,
        duration_ms: judged.run.result.duration.as_millis() as u64,
        outcome: judged.outcome,
        output: trim_output(&judged.run.result.output, keep),
        sandbox: judged.run.sandbox.clone(),
        note: judged.run.result.blocked.clone(),
        counts: None,
    }
}

/// Summarises a batch of runs of one command at one revision as one experiment;
/// the representative output is the first failure's, else the last run's.
pub fn batch_experiment(
    step: Step,
    command: &str,
    revision: &str,
    runs: &[Judged],
    keep: usize,
    note: Option<String>,
) -> Option<Experiment> {
    let mut counts = RunCounts::default();
    for r in runs {
        counts.record(r.outcome);
    }
    let representative = runs
        .iter()
        .find(|r| r.outcome == Outcome::Fail)
        .or_else(|| runs.iter().find(|r| r.outcome != Outcome::Pass))
        .or(runs.last())?;
    let mut e = experiment(step, command, revision, representative, keep);
    e.counts = Some(counts);
    e.duration_ms = runs
        .iter()
        .map(|r| r.run.result.duration.as_millis() as u64)
        .max()
        .unwrap_or(0);
    if counts.failures > 0 {
        e.outcome = Outcome::Fail;
    } else if counts.passes() > 0 && counts.other == 0 {
        e.outcome = Outcome::Pass;
    }
    if note.is_some() {
        e.note = note;
    }
    Some(e)
}
