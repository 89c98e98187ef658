//! Atomic problems: each distinct failure (by job, step and signature) in
//! a history, with its status at every revision and the revision where it
//! disappeared.
//!
//! The signature follows the domain's vocabulary
//! ([`tracelab_domain::signature::FailureSignature`]): a failing test id
//! when the runner names one, else the error types, else the step itself
//! (a lint script's lines change with every edit; the step does not).

use crate::model::{CiRun, Failure, History, StepStatus};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// A problem's status at one revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Failed,
    Passed,
    /// Not observed: no CI run, its step did not run, or the step failed
    /// in a way that hides whether this check passed.
    Unreached,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// `job/step: signature`, stable across revisions.
    pub key: String,
    pub job: String,
    pub step: String,
    /// The step's command: how to validate a repair.
    pub command: String,
    pub test: Option<String>,
    pub error_types: BTreeSet<String>,
    /// The first observed failure's text.
    pub message: String,
    /// Frames of the first observed failure (lines of revision `first_failed`).
    pub frames: Vec<(String, u32)>,
    /// Every file named by any of its failures.
    pub files: BTreeSet<String>,
    /// Status at each revision of the history.
    pub statuses: Vec<Status>,
    pub first_failed: usize,
    pub last_failed: usize,
    /// The first revision after the last failure where it passed; `None`
    /// when it was never seen passing afterwards (not repaired).
    pub disappeared_at: Option<usize>,
}

impl Problem {
    /// The commits (revision indices, each the commit that produced that
    /// revision) between the last failure and the first pass: one of them
    /// repaired it. More than one when CI did not observe it in between.
    pub fn window(&self) -> std::ops::RangeInclusive<usize> {
        let end = self.disappeared_at.unwrap_or(self.last_failed);
        (self.last_failed + 1)..=end
    }

    /// Failed, then passed, then failed again.
    pub fn flapped(&self) -> bool {
        let mut seen_pass_after_fail = false;
        let mut failed = false;
        for s in &self.statuses {
            match s {
                Status::Failed if seen_pass_after_fail => return true,
                Status::Failed => failed = true,
                Status::Passed if failed => seen_pass_after_fail = true,
                _ => {}
            }
        }
        false
    }
}

/// The key of a failure reported by `step` of `job`.
pub fn problem_key(job: &str, step: &str, failure: &Failure) -> String {
    if let Some(test) = &failure.test {
        return format!("{job}/{step}: {test}");
    }
    if !failure.error_types.is_empty() {
        let types: Vec<&str> = failure.error_types.iter().map(String::as_str).collect();
        return format!("{job}/{step}: {}", types.join("+"));
    }
    format!("{job}/{step}")
}

/// Every problem of the history, in order of first failure.
pub fn identify(history: &History) -> Vec<Problem> {
    let mut problems: Vec<Problem> = Vec::new();
    for (index, revision) in history.revisions.iter().enumerate() {
        let Some(ci) = &revision.ci else { continue };
        for job in &ci.jobs {
            for (step, status) in job.steps.iter().zip(ci.effective(job)) {
                if status != StepStatus::Failed {
                    continue;
                }
                for failure in &step.failures {
                    let key = problem_key(&job.name, &step.name, failure);
                    let files = failure.frames.iter().map(|(f, _)| f.clone());
                    if let Some(p) = problems.iter_mut().find(|p| p.key == key) {
                        p.files.extend(files);
                        continue;
                    }
                    problems.push(Problem {
                        key,
                        job: job.name.clone(),
                        step: step.name.clone(),
                        command: step.command.clone(),
                        test: failure.test.clone(),
                        error_types: failure.error_types.clone(),
                        message: failure.message.clone(),
                        frames: failure.frames.clone(),
                        files: files.collect(),
                        statuses: Vec::new(),
                        first_failed: index,
                        last_failed: index,
                        disappeared_at: None,
                    });
                }
            }
        }
    }
    for p in &mut problems {
        p.statuses = history
            .revisions
            .iter()
            .map(|r| status_at(r.ci.as_ref(), p))
            .collect();
        p.last_failed = p
            .statuses
            .iter()
            .rposition(|s| *s == Status::Failed)
            .unwrap_or(p.first_failed);
        p.disappeared_at = p
            .statuses
            .iter()
            .enumerate()
            .skip(p.last_failed + 1)
            .find(|(_, s)| **s == Status::Passed)
            .map(|(i, _)| i);
    }
    problems
}

/// The status of `problem` in one CI run.
pub fn status_at(ci: Option<&CiRun>, problem: &Problem) -> Status {
    let Some(ci) = ci else {
        return Status::Unreached;
    };
    let Some(job) = ci.jobs.iter().find(|j| j.name == problem.job) else {
        return Status::Unreached;
    };
    let Some(index) = job.steps.iter().position(|s| s.name == problem.step) else {
        return Status::Unreached;
    };
    let step = &job.steps[index];
    match ci.effective(job)[index] {
        StepStatus::Unreached => Status::Unreached,
        StepStatus::Passed => Status::Passed,
        StepStatus::Failed => {
            if step
                .failures
                .iter()
                .any(|f| problem_key(&job.name, &step.name, f) == problem.key)
            {
                Status::Failed
            } else if step.exhaustive {
                Status::Passed
            } else {
                Status::Unreached
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{JobRun, Revision, StepRun};

    fn failure(test: Option<&str>, types: &[&str]) -> Failure {
        Failure {
            test: test.map(str::to_string),
            error_types: types.iter().map(|t| t.to_string()).collect(),
            message: "boom".into(),
            frames: vec![],
        }
    }

    fn run(steps: Vec<(&str, StepStatus, Vec<Failure>, bool)>) -> Option<CiRun> {
        Some(CiRun {
            jobs: vec![JobRun {
                needs: vec![],
                name: "ci".into(),
                steps: steps
                    .into_iter()
                    .map(|(name, status, failures, exhaustive)| StepRun {
                        name: name.into(),
                        command: format!("run {name}"),
                        status,
                        failures,
                        exhaustive,
                    })
                    .collect(),
            }],
        })
    }

    fn history(runs: Vec<Option<CiRun>>) -> History {
        History {
            revisions: runs
                .into_iter()
                .enumerate()
                .map(|(i, ci)| Revision {
                    id: format!("r{i}"),
                    ci,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    use StepStatus::{Failed, Passed, Unreached};

    #[test]
    fn keys_prefer_the_test_then_the_error_types_then_the_step() {
        assert_eq!(
            problem_key(
                "ci",
                "unit",
                &failure(Some("t.A.test_x"), &["AssertionError"])
            ),
            "ci/unit: t.A.test_x"
        );
        assert_eq!(
            problem_key("ci", "unit", &failure(None, &["ImportError"])),
            "ci/unit: ImportError"
        );
        assert_eq!(problem_key("ci", "lint", &failure(None, &[])), "ci/lint");
    }

    #[test]
    fn a_problem_behind_a_failed_step_is_unreached_until_it_runs() {
        let h = history(vec![
            run(vec![
                ("lint", Failed, vec![failure(None, &[])], false),
                ("unit", Unreached, vec![], false),
            ]),
            run(vec![
                ("lint", Passed, vec![], false),
                (
                    "unit",
                    Failed,
                    vec![failure(Some("t.test_a"), &["AssertionError"])],
                    true,
                ),
            ]),
            run(vec![
                ("lint", Passed, vec![], false),
                ("unit", Passed, vec![], false),
            ]),
        ]);
        let problems = identify(&h);
        assert_eq!(problems.len(), 2);
        let lint = &problems[0];
        assert_eq!(lint.key, "ci/lint");
        assert_eq!(lint.disappeared_at, Some(1));
        assert_eq!(lint.window(), 1..=1);
        let unit = &problems[1];
        assert_eq!(
            unit.statuses,
            vec![Status::Unreached, Status::Failed, Status::Passed]
        );
        assert_eq!((unit.first_failed, unit.disappeared_at), (1, Some(2)));
    }

    /// Two jobs, `test` needing `build`: a passing report of `test` while
    /// `build` fails is not evidence that the test problem was gone.
    #[test]
    fn a_problem_in_a_job_behind_a_failed_needed_job_is_unreached() {
        let job = |name: &str, needs: &[&str], status, failures| JobRun {
            name: name.into(),
            needs: needs.iter().map(|n| n.to_string()).collect(),
            steps: vec![StepRun {
                name: name.into(),
                command: format!("run {name}"),
                status,
                failures,
                exhaustive: true,
            }],
        };
        let t = || vec![failure(Some("t.test_a"), &["AssertionError"])];
        let ci = |build, test, test_failures| {
            Some(CiRun {
                jobs: vec![
                    job(
                        "build",
                        &[],
                        build,
                        if build == Failed {
                            vec![failure(None, &["SyntaxError"])]
                        } else {
                            vec![]
                        },
                    ),
                    job("test", &["build"], test, test_failures),
                ],
            })
        };
        let h = history(vec![
            ci(Passed, Failed, t()),
            ci(Failed, Passed, vec![]),
            ci(Passed, Passed, vec![]),
        ]);
        let problems = identify(&h);
        let test = problems.iter().find(|p| p.job == "test").unwrap();
        assert_eq!(
            test.statuses,
            vec![Status::Failed, Status::Unreached, Status::Passed]
        );
        assert_eq!(
            test.disappeared_at,
            Some(2),
            "not at the revision where build failed"
        );
    }

    #[test]
    fn an_exhaustive_step_tells_which_tests_passed_and_others_do_not() {
        let a = failure(Some("t.test_a"), &["AssertionError"]);
        let b = failure(Some("t.test_b"), &["AssertionError"]);
        let h = history(vec![
            run(vec![("unit", Failed, vec![a.clone(), b.clone()], true)]),
            run(vec![("unit", Failed, vec![b.clone()], true)]),
            run(vec![(
                "unit",
                Failed,
                vec![failure(None, &["ImportError"])],
                false,
            )]),
            run(vec![("unit", Passed, vec![], true)]),
        ]);
        let problems = identify(&h);
        let pa = problems.iter().find(|p| p.key.ends_with("test_a")).unwrap();
        assert_eq!(pa.disappeared_at, Some(1));
        let pb = problems.iter().find(|p| p.key.ends_with("test_b")).unwrap();
        // Hidden by a collection error at r2: the repair is somewhere in r2..=r3.
        assert_eq!(pb.statuses[2], Status::Unreached);
        assert_eq!(pb.window(), 2..=3);
    }

    #[test]
    fn a_problem_that_comes_back_counts_from_its_last_failure() {
        let a = failure(Some("t.test_a"), &["AssertionError"]);
        let h = history(vec![
            run(vec![("unit", Failed, vec![a.clone()], true)]),
            run(vec![("unit", Passed, vec![], true)]),
            run(vec![("unit", Failed, vec![a.clone()], true)]),
            run(vec![("unit", Passed, vec![], true)]),
        ]);
        let p = &identify(&h)[0];
        assert!(p.flapped());
        assert_eq!(p.window(), 3..=3);
    }

    #[test]
    fn a_problem_still_failing_at_the_end_has_not_disappeared() {
        let a = failure(Some("t.test_a"), &["AssertionError"]);
        let h = history(vec![
            run(vec![("unit", Failed, vec![a.clone()], true)]),
            None,
            run(vec![("unit", Failed, vec![a], true)]),
        ]);
        let p = &identify(&h)[0];
        assert_eq!(p.statuses[1], Status::Unreached);
        assert_eq!(p.disappeared_at, None);
    }
}
