//! The input: a completed history as plain data. Whoever builds it (the
//! CLI re-running a test command at each commit, later the fleet from
//! ingested CI reports) fills these types; nothing here reads a repository.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// An ordered failing → passing history of one repository and workflow.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct History {
    /// The repository's name or URL (scopes L1 and L2 records).
    pub repository: String,
    /// The CI workflow (or the mined test commands) the observations come from.
    pub workflow: String,
    /// The failing revision first, the passing revision last.
    pub revisions: Vec<Revision>,
    /// The net diff from the first to the last revision (`git diff FIRST LAST`).
    pub net_diff: String,
}

/// One revision of the history.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Revision {
    /// Commit id.
    pub id: String,
    /// The first parent, when known. Each must be the previous revision's
    /// id: anything else (a force-push, a merge of another line) is not a
    /// linear sequence and the history is not organised.
    #[serde(default)]
    pub parent: Option<String>,
    /// The commit's subject line.
    #[serde(default)]
    pub summary: String,
    /// Unified diff from the previous revision (empty for the first).
    #[serde(default)]
    pub diff: String,
    /// What CI observed at this revision; `None` when it did not run.
    #[serde(default)]
    pub ci: Option<CiRun>,
}

/// One CI run: jobs, each a sequence of steps.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CiRun {
    pub jobs: Vec<JobRun>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct JobRun {
    pub name: String,
    /// In execution order.
    pub steps: Vec<StepRun>,
    /// Jobs that must succeed before this one runs (GitHub Actions
    /// `needs:`): behind a failed, unreached or unobserved one, every step
    /// of this job is unreached, whatever was reported for it.
    #[serde(default)]
    pub needs: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Passed,
    Failed,
    /// Did not run (an earlier step of its job failed, or it was skipped).
    Unreached,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepRun {
    pub name: String,
    /// The command the step runs: the validation command of its problems.
    pub command: String,
    pub status: StepStatus,
    /// What failed, one entry per failing test (or one for the whole step).
    #[serde(default)]
    pub failures: Vec<Failure>,
    /// The step reports every check it ran (a test runner that ran the
    /// whole suite): a check it does not list as failed passed. Without it
    /// (a collection error, `-x`, an unknown tool) an unlisted check of a
    /// failed step is unreached.
    #[serde(default)]
    pub exhaustive: bool,
}

/// One failure a step reported.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Failure {
    /// The failing test's id, when the runner names one.
    #[serde(default)]
    pub test: Option<String>,
    /// Exception or error types (`AssertionError`, `ModuleNotFoundError`).
    #[serde(default)]
    pub error_types: BTreeSet<String>,
    /// The failure's own text (traceback, lint lines), paths repository-relative.
    #[serde(default)]
    pub message: String,
    /// `(file, line)` frames named in the message, repository-relative.
    #[serde(default)]
    pub frames: Vec<(String, u32)>,
}

impl CiRun {
    /// The status each step of `job` effectively had: unreached throughout
    /// when a job it needs (directly or through others) did not pass every
    /// step or is not in the run, else [`JobRun::effective_statuses`].
    pub fn effective(&self, job: &JobRun) -> Vec<StepStatus> {
        if self.blocked(job, &mut Vec::new()) {
            return vec![StepStatus::Unreached; job.steps.len()];
        }
        job.effective_statuses()
    }

    fn blocked(&self, job: &JobRun, path: &mut Vec<String>) -> bool {
        if path.contains(&job.name) {
            // A dependency cycle: GitHub refuses such a workflow; nothing ran.
            return true;
        }
        path.push(job.name.clone());
        let blocked =
            job.needs
                .iter()
                .any(|need| match self.jobs.iter().find(|j| &j.name == need) {
                    None => true,
                    Some(n) => {
                        self.blocked(n, path)
                            || n.effective_statuses()
                                .iter()
                                .any(|s| *s != StepStatus::Passed)
                    }
                });
        path.pop();
        blocked
    }
}

impl JobRun {
    /// The status each step effectively had: a step after a failed (or
    /// unreached) step of the same job is unreached, whatever was reported
    /// for it — a later step never "passed" behind an earlier failure.
    pub fn effective_statuses(&self) -> Vec<StepStatus> {
        let mut blocked = false;
        self.steps
            .iter()
            .map(|s| {
                if blocked {
                    return StepStatus::Unreached;
                }
                if s.status != StepStatus::Passed {
                    blocked = true;
                }
                s.status
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(name: &str, needs: &[&str], statuses: &[StepStatus]) -> JobRun {
        JobRun {
            name: name.into(),
            steps: statuses
                .iter()
                .enumerate()
                .map(|(i, s)| step(&format!("{name}-{i}"), *s))
                .collect(),
            needs: needs.iter().map(|n| n.to_string()).collect(),
        }
    }

    #[test]
    fn a_job_behind_a_failed_needed_job_is_unreached_not_passing() {
        use StepStatus::*;
        let run = CiRun {
            jobs: vec![
                job("build", &[], &[Passed, Failed]),
                // Reported passing, but it needs build: it did not really run.
                job("test", &["build"], &[Passed]),
                job("deploy", &["test"], &[Passed]),
                job("lint", &[], &[Passed]),
                job("docs", &["lint"], &[Passed, Passed]),
                job("orphan", &["missing"], &[Passed]),
            ],
        };
        let effective =
            |name: &str| run.effective(run.jobs.iter().find(|j| j.name == name).unwrap());
        assert_eq!(effective("build"), vec![Passed, Failed]);
        assert_eq!(effective("test"), vec![Unreached]);
        assert_eq!(effective("deploy"), vec![Unreached], "transitively");
        assert_eq!(effective("docs"), vec![Passed, Passed]);
        assert_eq!(
            effective("orphan"),
            vec![Unreached],
            "a needed job not observed"
        );
        let cycle = CiRun {
            jobs: vec![job("a", &["b"], &[Passed]), job("b", &["a"], &[Passed])],
        };
        assert_eq!(cycle.effective(&cycle.jobs[0]), vec![Unreached]);
    }

    fn step(name: &str, status: StepStatus) -> StepRun {
        StepRun {
            name: name.into(),
            command: name.into(),
            status,
            failures: vec![],
            exhaustive: false,
        }
    }

    #[test]
    fn a_step_after_a_failed_step_is_unreached_not_passed() {
        let job = JobRun {
            needs: vec![],
            name: "ci".into(),
            steps: vec![
                step("lint", StepStatus::Passed),
                step("build", StepStatus::Failed),
                step("test", StepStatus::Passed),
                step("docs", StepStatus::Unreached),
            ],
        };
        assert_eq!(
            job.effective_statuses(),
            vec![
                StepStatus::Passed,
                StepStatus::Failed,
                StepStatus::Unreached,
                StepStatus::Unreached
            ]
        );
    }
}
