//! The neighbour tests that judge a fix beside the contract: the test files
//! naming the patched function and the tests coverage says run it.

use super::coverage;
use super::prove::Attempt;
use crate::classification::Classification;
use crate::context::Context;
use crate::git::Worktree;
use crate::probe::experiment;
use crate::verify::exec_judged;
use std::collections::BTreeSet;
use tracelab_domain::Result;
use tracelab_domain::experiment::{Experiment, Outcome, Step};
use tracelab_domain::oracle::is_test_path;
use tracelab_domain::ports::{CommandSpec, Sandbox};
use tracelab_domain::runner::{self, Runner};
use tracelab_evidence::test_run::TestRun;

/// Test files that name the patched function, run beside the failing
/// test's own files (more make the check slower, not much safer).
const NEIGHBOUR_FILES: usize = 8;

/// What judges an attempt beside the contract: the neighbour test files
/// found by name (run once at the bad revision when the Prover opens), and
/// the suite's coverage for the tests that run the patched function.
#[derive(Default)]
pub(super) struct Neighbours {
    /// The failing test's files and the test files naming a patched
    /// function (pytest only).
    pub(super) files: Vec<String>,
    /// Those files at the bad revision.
    pub(super) before: Option<tracelab_domain::ports::CommandResult>,
    /// `None` before the Prover opened; `Some(Err(why))` when coverage
    /// selects nothing.
    pub(super) coverage: Option<std::result::Result<coverage::Coverage, String>>,
}

/// The neighbour tests of one attempt.
pub(super) struct Plan {
    /// Files and node ids to run.
    pub(super) selection: Vec<String>,
    /// The node ids coverage added.
    pub(super) covering: Vec<String>,
    /// Covering tests left out by the cap.
    more: usize,
    /// Tests that already failed at the bad revision.
    already: BTreeSet<String>,
}

impl Neighbours {
    pub(super) async fn plan(&self, ctx: &Context, a: &Attempt) -> Result<Plan> {
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
pub(super) async fn neighbour_files(
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
pub(super) fn neighbour_spec(
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
    // Every neighbour must run: one that already failed before the fix
    // must not stop the run before the ones the fix may break.
    let argv = runner::without_early_stop(ctx.test.runner, &argv);
    Some((shell_words::join(&argv), ctx.spec(&argv, &[])))
}

/// The neighbour tests after the fix: passing, or failing only where they
/// already failed at the bad revision.
pub(super) async fn neighbour_experiment(
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
