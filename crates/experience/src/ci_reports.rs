//! What CI observed at one commit, from the reports its jobs sent
//! (`tracelab report`: a job, its test report files and failures) and,
//! when known, the workflow that ran them.
//!
//! A report says that its job ran up to the step that wrote the report
//! files, and what failed there. The rest is inferred only where CI's rules
//! leave no doubt, and otherwise left unreached — never passing:
//!
//! - the job's steps before the reporting step passed (a step after a
//!   failed one does not run); steps after it are unreached (not seen);
//! - the jobs a reporting job needs (transitively) passed: it would not
//!   have started otherwise;
//! - a job that sent no report is not in the run (unobserved), and so are
//!   the problems of its steps.
//!
//! The reporting step is the last step that runs a known test runner, else
//! the job's last `run:` step.

use crate::evidence::is_collection_error;
use crate::model::{CiRun, Failure, JobRun, StepRun, StepStatus};
use crate::workflow::{Job, Workflow};
use tracelab_domain::runner::{self, Runner};

/// One job's report at one commit, its failures already parsed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JobReport {
    /// The job as CI named it (`GITHUB_JOB`, `CI_JOB_NAME`).
    pub job: String,
    /// Test report files were sent (JUnit, runner output), not only a log.
    pub has_test_reports: bool,
    pub failures: Vec<Failure>,
}

/// The name of the one step of a job known only from its report.
pub const REPORT_STEP: &str = "tests";

/// The CI run at one commit, with notes for reports that could not be
/// placed; `None` when no report could be.
pub fn observe(workflow: Option<&Workflow>, reports: &[JobReport]) -> (Option<CiRun>, Vec<String>) {
    let mut notes = Vec::new();
    let mut jobs: Vec<JobRun> = Vec::new();
    for report in reports {
        let run = match workflow {
            None => Some(without_workflow(report)),
            Some(w) => match w.job(&report.job) {
                Some(job) => placed(job, report, &mut notes),
                None => {
                    notes.push(format!(
                        "a report names job `{}`, which the workflow does not have: not used",
                        report.job
                    ));
                    None
                }
            },
        };
        if let Some(run) = run {
            match jobs.iter_mut().find(|j| j.name == run.name) {
                // Two reports of one job at one commit (a matrix, a re-run):
                // a failure in either is a failure of the job.
                Some(same) => merge(same, run),
                None => jobs.push(run),
            }
        }
    }
    if let Some(w) = workflow {
        add_needed(w, &mut jobs);
    }
    ((!jobs.is_empty()).then_some(CiRun { jobs }), notes)
}

fn without_workflow(report: &JobReport) -> JobRun {
    JobRun {
        name: report.job.clone(),
        steps: vec![step_run(REPORT_STEP, "", report)],
        needs: Vec::new(),
    }
}

/// The report's job with its steps' statuses, or `None` (and a note) when
/// the report cannot be placed on a step.
fn placed(job: &Job, report: &JobReport, notes: &mut Vec<String>) -> Option<JobRun> {
    let Some(at) = reporting_step(job) else {
        notes.push(format!(
            "job `{}` reported, but none of its steps runs a command: not used",
            job.id
        ));
        return None;
    };
    let reported = step_run(
        &job.steps[at].name,
        job.steps[at].command.as_deref().unwrap_or(""),
        report,
    );
    if reported.status == StepStatus::Unreached {
        notes.push(format!(
            "job `{}` sent only a log in which no failure was recognised: its steps are unobserved",
            job.id
        ));
    }
    // The reporting step ran, so the steps before it passed — unless it
    // runs after failures too: then they are left out, unobserved and
    // blocking nothing, as is a step that may have been skipped or may have
    // failed without stopping the job.
    let after_failures = job.steps[at].gate.runs_after_failure();
    let steps = job
        .steps
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            if i == at {
                return Some(reported.clone());
            }
            if i < at && (after_failures || s.gate.uncertain()) {
                return None;
            }
            let status = if i < at && reported.status != StepStatus::Unreached {
                StepStatus::Passed
            } else {
                StepStatus::Unreached
            };
            Some(StepRun {
                name: s.name.clone(),
                command: s.command.clone().unwrap_or_default(),
                status,
                failures: Vec::new(),
                exhaustive: false,
            })
        })
        .collect();
    Some(JobRun {
        name: job.id.clone(),
        steps,
        needs: job.needs.clone(),
    })
}

/// The step that wrote the report: the last one running a known test
/// runner, else the last one running a command.
fn reporting_step(job: &Job) -> Option<usize> {
    let runs_tests = |command: &str| {
        command.lines().any(|line| {
            let argv: Vec<String> = line.split_whitespace().map(String::from).collect();
            runner::detect(&argv) != Runner::Unknown
        })
    };
    let commands = || {
        job.steps
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.command.as_deref().map(|c| (i, c)))
    };
    commands()
        .filter(|(_, c)| runs_tests(c))
        .map(|(i, _)| i)
        .next_back()
        .or_else(|| commands().map(|(i, _)| i).next_back())
}

/// The reporting step's status: failed with its failures; passed when test
/// reports list no failure; unreached when only a log was sent and nothing
/// in it was recognised (the job failed somewhere no report shows).
fn step_run(name: &str, command: &str, report: &JobReport) -> StepRun {
    let status = if !report.failures.is_empty() {
        StepStatus::Failed
    } else if report.has_test_reports {
        StepStatus::Passed
    } else {
        StepStatus::Unreached
    };
    // Test reports list every test that ran, unless a module did not load.
    let exhaustive = report.has_test_reports
        && report
            .failures
            .iter()
            .all(|f| f.test.as_deref().is_some_and(|t| !is_collection_error(t)));
    StepRun {
        name: name.to_string(),
        command: command.to_string(),
        status,
        failures: report.failures.clone(),
        exhaustive,
    }
}

fn merge(into: &mut JobRun, other: JobRun) {
    for (a, b) in into.steps.iter_mut().zip(other.steps) {
        let rank = |s: StepStatus| match s {
            StepStatus::Passed => 0,
            StepStatus::Unreached => 1,
            StepStatus::Failed => 2,
        };
        if rank(b.status) > rank(a.status) {
            a.status = b.status;
        }
        a.exhaustive = a.exhaustive && b.exhaustive;
        for f in b.failures {
            if !a.failures.contains(&f) {
                a.failures.push(f);
            }
        }
    }
}

/// The jobs a reporting job needs, directly or not, passed every step —
/// unless the job that needs them runs after failures too, or the needed
/// job may fail without stopping its dependants (`continue-on-error`).
/// Such a job is in the run without steps: it blocks nothing, and nothing
/// of it is observed.
fn add_needed(workflow: &Workflow, jobs: &mut Vec<JobRun>) {
    let gate = |name: &str| workflow.jobs.iter().find(|j| j.id == name).map(|j| &j.gate);
    let mut pending: Vec<(String, bool)> = jobs
        .iter()
        .flat_map(|j| {
            let proves = gate(&j.name).is_some_and(|g| !g.runs_after_failure());
            j.needs.iter().map(move |n| (n.clone(), proves))
        })
        .collect();
    while let Some((id, proven)) = pending.pop() {
        if jobs.iter().any(|j| j.name == id) {
            continue;
        }
        let Some(job) = workflow.jobs.iter().find(|j| j.id == id) else {
            continue;
        };
        let passed = proven && !job.gate.continue_on_error;
        if passed {
            let proves = !job.gate.runs_after_failure();
            pending.extend(job.needs.iter().map(|n| (n.clone(), proves)));
        }
        jobs.push(JobRun {
            name: job.id.clone(),
            steps: job
                .steps
                .iter()
                .filter(|s| passed && !s.gate.uncertain())
                .map(|s| StepRun {
                    name: s.name.clone(),
                    command: s.command.clone().unwrap_or_default(),
                    status: StepStatus::Passed,
                    failures: Vec::new(),
                    exhaustive: false,
                })
                .collect(),
            needs: if passed {
                job.needs.clone()
            } else {
                Vec::new()
            },
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workflow;
    use StepStatus::{Failed, Passed, Unreached};

    const WORKFLOW: &str = r#"
jobs:
  lint:
    steps:
      - uses: actions/checkout@v4
      - run: python3 tools/lint.py
  test:
    needs: lint
    steps:
      - uses: actions/checkout@v4
      - run: pip install -e .
      - name: Unit
        run: python3 -m unittest discover -s tests
      - run: tracelab report --junit 'reports/*.xml'
  docs:
    needs: test
    steps:
      - run: make docs
"#;

    fn failure(test: Option<&str>) -> Failure {
        Failure {
            test: test.map(String::from),
            error_types: ["AssertionError".to_string()].into(),
            ..Default::default()
        }
    }

    fn report(job: &str, tests: bool, failures: Vec<Failure>) -> JobReport {
        JobReport {
            job: job.into(),
            has_test_reports: tests,
            failures,
        }
    }

    fn statuses(run: &CiRun, job: &str) -> Vec<StepStatus> {
        run.effective(run.jobs.iter().find(|j| j.name == job).unwrap())
    }

    #[test]
    fn a_failing_report_fails_its_test_step_and_leaves_later_steps_and_jobs_unreached() {
        let w = workflow::parse("ci.yml", WORKFLOW).unwrap();
        let (run, notes) = observe(
            Some(&w),
            &[report("test", true, vec![failure(Some("t.T.test_a"))])],
        );
        let run = run.unwrap();
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(
            statuses(&run, "test"),
            vec![Passed, Passed, Failed, Unreached]
        );
        let unit = &run.jobs[0].steps[2];
        assert_eq!(unit.name, "Unit");
        assert_eq!(unit.command, "python3 -m unittest discover -s tests");
        assert!(unit.exhaustive, "JUnit lists every test");
        assert_eq!(
            statuses(&run, "lint"),
            vec![Passed, Passed],
            "test ran, so lint passed"
        );
        assert!(
            !run.jobs.iter().any(|j| j.name == "docs"),
            "docs is behind the failure: unobserved, not passing"
        );
    }

    #[test]
    fn a_passing_report_passes_its_step_and_what_precedes_it() {
        let w = workflow::parse("ci.yml", WORKFLOW).unwrap();
        let (run, _) = observe(Some(&w), &[report("test", true, vec![])]);
        assert_eq!(
            statuses(&run.unwrap(), "test"),
            vec![Passed, Passed, Passed, Unreached]
        );
    }

    #[test]
    fn a_log_without_a_recognised_failure_observes_nothing() {
        let w = workflow::parse("ci.yml", WORKFLOW).unwrap();
        let (run, notes) = observe(Some(&w), &[report("lint", false, vec![])]);
        assert_eq!(statuses(&run.unwrap(), "lint"), vec![Unreached, Unreached]);
        assert!(notes[0].contains("only a log"), "{notes:?}");
    }

    #[test]
    fn an_import_error_is_not_exhaustive_and_an_unknown_job_is_not_used() {
        let w = workflow::parse("ci.yml", WORKFLOW).unwrap();
        let (run, notes) = observe(
            Some(&w),
            &[
                report(
                    "test",
                    true,
                    vec![failure(Some("unittest.loader._FailedTest.test_more"))],
                ),
                report("deploy", true, vec![failure(None)]),
            ],
        );
        assert!(!run.unwrap().jobs[0].steps[2].exhaustive);
        assert!(notes[0].contains("`deploy`"), "{notes:?}");
    }

    /// Steps that may have been skipped or may have failed without
    /// stopping the job are not inferred to have passed, nor are the steps
    /// before a step that runs after failures, nor the jobs a job that
    /// runs after failures needs, nor a needed job that may fail.
    #[test]
    fn conditions_and_continue_on_error_leave_steps_and_jobs_unobserved() {
        let w = workflow::parse(
            "ci.yml",
            r#"
jobs:
  build:
    continue-on-error: true
    steps:
      - run: make
  lint:
    steps:
      - run: make lint
  test:
    needs: [build, lint]
    steps:
      - run: make lint-extra
        continue-on-error: true
      - run: pip install -e .
      - name: Unit
        run: python3 -m pytest
  flaky:
    steps:
      - run: pip install -e .
      - name: Unit
        if: always()
        run: python3 -m pytest
  summary:
    needs: lint
    if: always()
    steps:
      - run: python3 -m pytest tools
"#,
        )
        .unwrap();
        let (run, _) = observe(Some(&w), &[report("test", true, vec![])]);
        let run = run.unwrap();
        let test = run.jobs.iter().find(|j| j.name == "test").unwrap();
        let names: Vec<&str> = test.steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["Run pip install -e .", "Unit"],
            "lint-extra left out"
        );
        assert_eq!(statuses(&run, "test"), vec![Passed, Passed]);
        let build = run.jobs.iter().find(|j| j.name == "build").unwrap();
        assert!(
            build.steps.is_empty(),
            "a needed job that may fail is not inferred to have passed"
        );
        assert_eq!(statuses(&run, "lint"), vec![Passed]);
        let (run, _) = observe(
            Some(&w),
            &[report("flaky", true, vec![failure(Some("t.T.test_a"))])],
        );
        assert_eq!(
            statuses(&run.unwrap(), "flaky"),
            vec![Failed],
            "a step that runs after failures proves nothing before it"
        );
        let (run, _) = observe(Some(&w), &[report("summary", true, vec![])]);
        let run = run.unwrap();
        assert_eq!(statuses(&run, "summary"), vec![Passed]);
        assert!(
            run.jobs
                .iter()
                .find(|j| j.name == "lint")
                .unwrap()
                .steps
                .is_empty(),
            "a job that runs after failures proves nothing of its needs"
        );
    }

    #[test]
    fn without_a_workflow_each_report_is_one_step() {
        let (run, _) = observe(
            None,
            &[
                report("unit", true, vec![failure(Some("a"))]),
                report("unit", true, vec![failure(Some("b"))]),
                report("lint", true, vec![]),
            ],
        );
        let run = run.unwrap();
        assert_eq!(run.jobs.len(), 2);
        assert_eq!(run.jobs[0].steps[0].name, REPORT_STEP);
        assert_eq!(run.jobs[0].steps[0].failures.len(), 2, "merged");
        assert_eq!(run.jobs[1].steps[0].status, Passed);
        assert_eq!(observe(None, &[]).0, None);
    }
}
