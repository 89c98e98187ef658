//! A CI workflow file read for its shape: jobs, their steps and commands,
//! and which jobs a job waits for — what is needed to say, from a report
//! that a job failed, which step failed and which steps and jobs never ran.
//!
//! GitHub Actions (`.github/workflows/*.yml`) and GitLab CI
//! (`.gitlab-ci.yml`). A file that is not YAML, or not a workflow, is an
//! error with a sentence saying why: the caller notes it and attributes
//! nothing rather than guess.
//!
//! Conditions are kept for what they say about order, not evaluated: a
//! step or job with an `if:` (GitLab `when:`) may have been skipped, one
//! whose condition names `always()`, `failure()` or `cancelled()` (GitLab
//! `when: always|on_failure`) may run after a failure, and one with
//! `continue-on-error` (GitLab `allow_failure`) may have failed without
//! stopping what follows ([`Gate`]). Matrices need nothing here: the
//! legs of a job report under its key and their reports are merged.

use saphyr::{LoadableYamlNode, Scalar, Yaml};

/// The jobs of one workflow, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workflow {
    pub provider: Provider,
    /// The workflow's `name:` (GitHub), when it has one.
    pub name: Option<String>,
    pub jobs: Vec<Job>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    GithubActions,
    GitlabCi,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// The job's key: what CI reports as the job (`GITHUB_JOB`, `CI_JOB_NAME`).
    pub id: String,
    /// Its display name (`name:`), else the key.
    pub name: String,
    /// Jobs that must succeed first, by key.
    pub needs: Vec<String>,
    /// In execution order.
    pub steps: Vec<Step>,
    /// When the job runs (`if:`; GitLab `when:`).
    pub gate: Gate,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The name CI shows: `name:`, else `Run <first line of the command>`
    /// or `Run <action>` as GitHub does.
    pub name: String,
    /// The shell command (`run:`, a GitLab `script:`), when the step runs one.
    pub command: Option<String>,
    /// When the step runs (`if:`).
    pub gate: Gate,
}

/// What a step's or job's condition and `continue-on-error` allow one to
/// infer; the default is an unconditional step whose failure stops the job.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gate {
    /// The condition as written (`if:`, GitLab `when:`), when there is one.
    pub condition: Option<String>,
    /// `continue-on-error` (GitLab `allow_failure`) is set, or is an
    /// expression that may be true: a failure here stops nothing.
    pub continue_on_error: bool,
}

impl Gate {
    /// It may run although something before it failed (GitHub's status
    /// functions, GitLab's `when: always|on_failure`): that it ran proves
    /// nothing about what came before.
    pub fn runs_after_failure(&self) -> bool {
        self.condition.as_deref().is_some_and(|c| {
            ["always", "failure()", "cancelled()", "on_failure"]
                .iter()
                .any(|f| c.contains(f))
        })
    }

    /// It may not have run, or may have failed without stopping anything:
    /// a later report says nothing about its outcome.
    pub fn uncertain(&self) -> bool {
        self.condition.is_some() || self.continue_on_error
    }
}

/// `continue-on-error: true`, or an expression (a matrix's
/// `${{ matrix.experimental }}`) that may be true.
fn may_continue(node: Option<&Yaml>) -> bool {
    match node {
        None => false,
        Some(Yaml::Value(Scalar::Boolean(b))) => *b,
        Some(n) => text(n).is_some_and(|t| t != "false"),
    }
}

impl Workflow {
    /// The job CI reported as `reported` (its key, else its display name).
    pub fn job(&self, reported: &str) -> Option<&Job> {
        self.jobs
            .iter()
            .find(|j| j.id == reported)
            .or_else(|| self.jobs.iter().find(|j| j.name == reported))
    }
}

/// Reads `text` as the workflow at `path`: GitLab CI for a file named
/// `.gitlab-ci.yml`, else GitHub Actions.
pub fn parse(path: &str, text: &str) -> Result<Workflow, String> {
    let file = path.rsplit('/').next().unwrap_or(path);
    if file == ".gitlab-ci.yml" || file == ".gitlab-ci.yaml" {
        parse_gitlab(text)
    } else {
        parse_github(text)
    }
}

fn load(text: &str) -> Result<Yaml<'_>, String> {
    let mut docs = Yaml::load_from_str(text).map_err(|e| format!("not YAML: {e}"))?;
    match docs.len() {
        0 => Err("the file is empty".into()),
        1 => Ok(docs.remove(0)),
        n => Err(format!("{n} YAML documents; a workflow is one")),
    }
}

/// A scalar as text (`3.11`, `true` and `null` as written).
fn text(node: &Yaml) -> Option<String> {
    match node {
        Yaml::Value(Scalar::String(s)) => Some(s.to_string()),
        Yaml::Value(Scalar::Integer(i)) => Some(i.to_string()),
        Yaml::Value(Scalar::FloatingPoint(f)) => Some(f.to_string()),
        Yaml::Value(Scalar::Boolean(b)) => Some(b.to_string()),
        Yaml::Representation(s, _, _) => Some(s.to_string()),
        _ => None,
    }
}

fn get<'a, 'b>(node: &'a Yaml<'b>, key: &str) -> Option<&'a Yaml<'b>> {
    node.as_mapping_get(key)
}

/// `needs: build` or `needs: [build, lint]` (GitLab also `- job: build`).
fn needs(node: Option<&Yaml>) -> Result<Vec<String>, String> {
    let Some(node) = node else {
        return Ok(Vec::new());
    };
    let item = |n: &Yaml| text(n).or_else(|| get(n, "job").and_then(text));
    match node.as_sequence() {
        Some(items) => items
            .iter()
            .map(|n| item(n).ok_or_else(|| "a `needs:` entry is not a job name".to_string()))
            .collect(),
        None => item(node)
            .map(|n| vec![n])
            .ok_or_else(|| "`needs:` is neither a job name nor a list".to_string()),
    }
}

/// GitHub Actions: `jobs:` → `steps:` (`name`, `run`, `uses`), `needs:`.
/// A reusable-workflow job (`uses:` on the job) has no steps of its own.
pub fn parse_github(text_: &str) -> Result<Workflow, String> {
    let root = load(text_)?;
    if root.as_mapping().is_none() {
        return Err("not a GitHub Actions workflow: the file is not a mapping".into());
    }
    let Some(jobs) = get(&root, "jobs").and_then(Yaml::as_mapping) else {
        return Err("not a GitHub Actions workflow: no `jobs:` mapping".into());
    };
    let mut out = Vec::new();
    for (key, job) in jobs {
        let id = text(key).ok_or("a job's key is not a name")?;
        if job.as_mapping().is_none() {
            return Err(format!("job `{id}` is not a mapping"));
        }
        let mut steps = Vec::new();
        if let Some(list) = get(job, "steps") {
            let list = list
                .as_sequence()
                .ok_or_else(|| format!("job `{id}`: `steps:` is not a list"))?;
            for (n, step) in list.iter().enumerate() {
                let command = get(step, "run").and_then(text);
                let uses = get(step, "uses").and_then(text);
                if command.is_none() && uses.is_none() {
                    return Err(format!(
                        "job `{id}`, step {}: neither `run:` nor `uses:`",
                        n + 1
                    ));
                }
                let name = get(step, "name")
                    .and_then(text)
                    .or_else(|| {
                        command
                            .as_deref()
                            .map(|c| format!("Run {}", c.lines().next().unwrap_or("").trim()))
                    })
                    .or_else(|| uses.as_ref().map(|u| format!("Run {u}")))
                    .unwrap_or_default();
                let gate = Gate {
                    condition: get(step, "if").and_then(text),
                    continue_on_error: may_continue(get(step, "continue-on-error")),
                };
                steps.push(Step {
                    name,
                    command,
                    gate,
                });
            }
        } else if get(job, "uses").is_none() {
            return Err(format!("job `{id}` has neither `steps:` nor `uses:`"));
        }
        out.push(Job {
            name: get(job, "name")
                .and_then(text)
                .unwrap_or_else(|| id.clone()),
            needs: needs(get(job, "needs")).map_err(|e| format!("job `{id}`: {e}"))?,
            id,
            steps,
            gate: Gate {
                condition: get(job, "if").and_then(text),
                continue_on_error: may_continue(get(job, "continue-on-error")),
            },
        });
    }
    check_needs(&out)?;
    Ok(Workflow {
        provider: Provider::GithubActions,
        name: get(&root, "name").and_then(text),
        jobs: out,
    })
}

/// Top-level keys of `.gitlab-ci.yml` that are not jobs.
const GITLAB_KEYWORDS: &[&str] = &[
    "default",
    "include",
    "stages",
    "variables",
    "workflow",
    "image",
    "services",
    "cache",
    "before_script",
    "after_script",
];

/// GitLab CI: every top-level mapping with a `script:` is a job (hidden
/// `.jobs` are templates); its steps are `before_script` (its own or the
/// default) and `script`. Without `needs:`, a job waits for every job of
/// the earlier stages, as GitLab runs them.
pub fn parse_gitlab(text_: &str) -> Result<Workflow, String> {
    let root = load(text_)?;
    let Some(map) = root.as_mapping() else {
        return Err("not a GitLab CI file: the file is not a mapping".into());
    };
    let stages: Vec<String> = match get(&root, "stages") {
        Some(s) => s
            .as_sequence()
            .ok_or("`stages:` is not a list")?
            .iter()
            .filter_map(text)
            .collect(),
        None => ["build", "test", "deploy"].map(String::from).to_vec(),
    };
    let default_before = get(&root, "default")
        .and_then(|d| get(d, "before_script"))
        .or_else(|| get(&root, "before_script"));
    let mut jobs: Vec<(usize, Job, bool)> = Vec::new();
    for (key, job) in map {
        let id = text(key).ok_or("a top-level key is not a name")?;
        if id.starts_with('.') || GITLAB_KEYWORDS.contains(&id.as_str()) {
            continue;
        }
        let Some(script) = get(job, "script") else {
            continue;
        };
        let stage = get(job, "stage")
            .and_then(text)
            .unwrap_or_else(|| "test".into());
        let stage_index = stages
            .iter()
            .position(|s| *s == stage)
            .ok_or_else(|| format!("job `{id}`: stage `{stage}` is not in `stages:`"))?;
        let mut steps = Vec::new();
        if let Some(before) = get(job, "before_script").or(default_before) {
            steps.push(Step {
                name: "before_script".into(),
                command: Some(lines(before).map_err(|e| format!("job `{id}`: {e}"))?),
                gate: Gate::default(),
            });
        }
        steps.push(Step {
            name: "script".into(),
            command: Some(lines(script).map_err(|e| format!("job `{id}`: {e}"))?),
            gate: Gate::default(),
        });
        // `when: on_success` is the default; `rules:` may skip the job.
        let condition = get(job, "when")
            .and_then(text)
            .filter(|w| w != "on_success")
            .or_else(|| get(job, "rules").map(|_| "rules".to_string()));
        let gate = Gate {
            condition,
            continue_on_error: may_continue(get(job, "allow_failure")),
        };
        let explicit = get(job, "needs").is_some();
        jobs.push((
            stage_index,
            Job {
                name: id.clone(),
                needs: needs(get(job, "needs")).map_err(|e| format!("job `{id}`: {e}"))?,
                id,
                steps,
                gate,
            },
            explicit,
        ));
    }
    if jobs.is_empty() {
        return Err("not a GitLab CI file: no job has a `script:`".into());
    }
    let by_stage: Vec<(usize, String)> = jobs.iter().map(|(s, j, _)| (*s, j.id.clone())).collect();
    let mut out = Vec::new();
    for (stage, mut job, explicit) in jobs {
        if !explicit {
            job.needs = by_stage
                .iter()
                .filter(|(s, _)| *s < stage)
                .map(|(_, id)| id.clone())
                .collect();
        }
        out.push(job);
    }
    check_needs(&out)?;
    Ok(Workflow {
        provider: Provider::GitlabCi,
        name: None,
        jobs: out,
    })
}

/// A script: one command or a list of them, one per line.
fn lines(node: &Yaml) -> Result<String, String> {
    match node.as_sequence() {
        Some(items) => items
            .iter()
            .map(|n| text(n).ok_or_else(|| "a script line is not text".to_string()))
            .collect::<Result<Vec<_>, _>>()
            .map(|l| l.join("\n")),
        None => text(node).ok_or_else(|| "a script is neither text nor a list".into()),
    }
}

/// Every job a job needs exists: a typo would otherwise make it look
/// unobserved forever.
fn check_needs(jobs: &[Job]) -> Result<(), String> {
    for job in jobs {
        if let Some(missing) = job.needs.iter().find(|n| !jobs.iter().any(|j| &j.id == *n)) {
            return Err(format!(
                "job `{}` needs `{missing}`, which is not a job of this workflow",
                job.id
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GITHUB: &str = r#"
name: CI
on:
  push:
  pull_request:
jobs:
  lint:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - name: Style
        run: python3 tools/lint.py
  test:
    name: Unit tests
    needs: lint
    runs-on: ubuntu-latest
    strategy:
      matrix:
        python: [3.11, 3.12]
    steps:
      - uses: actions/checkout@v4
      - run: |
          pip install -e .
          python -m unittest discover -s tests
      - run: python3 -m pytest -q
  deploy:
    needs: [lint, test]
    uses: ./.github/workflows/deploy.yml
"#;

    #[test]
    fn reads_github_jobs_steps_and_needs() {
        let w = parse(".github/workflows/ci.yml", GITHUB).unwrap();
        assert_eq!(w.provider, Provider::GithubActions);
        assert_eq!(w.name.as_deref(), Some("CI"));
        let ids: Vec<&str> = w.jobs.iter().map(|j| j.id.as_str()).collect();
        assert_eq!(ids, ["lint", "test", "deploy"]);
        let lint = &w.jobs[0];
        assert_eq!(lint.steps[0].name, "Run actions/checkout@v4");
        assert_eq!(lint.steps[0].command, None);
        assert_eq!(lint.steps[1].name, "Style");
        assert_eq!(
            lint.steps[1].command.as_deref(),
            Some("python3 tools/lint.py")
        );
        let test = w.job("test").unwrap();
        assert_eq!(test.name, "Unit tests");
        assert_eq!(test.needs, ["lint"]);
        assert_eq!(test.steps[1].name, "Run pip install -e .");
        assert!(
            test.steps[1]
                .command
                .as_deref()
                .unwrap()
                .contains("unittest")
        );
        assert_eq!(w.job("Unit tests").unwrap().id, "test", "by display name");
        let deploy = &w.jobs[2];
        assert_eq!(deploy.needs, ["lint", "test"]);
        assert!(
            deploy.steps.is_empty(),
            "a reusable workflow's steps are elsewhere"
        );
    }

    #[test]
    fn reads_gitlab_jobs_with_stage_order() {
        let file = r#"
stages: [lint, test, deploy]
default:
  before_script:
    - pip install -e .
.template:
  script: echo hidden
lint:
  stage: lint
  script: python3 tools/lint.py
unit:
  stage: test
  script:
    - python3 -m unittest
    - python3 tools/check_config.py
docs:
  stage: test
  needs: []
  script: mkdocs build
release:
  stage: deploy
  needs:
    - job: unit
  script: ./release.sh
"#;
        let w = parse(".gitlab-ci.yml", file).unwrap();
        assert_eq!(w.provider, Provider::GitlabCi);
        let ids: Vec<&str> = w.jobs.iter().map(|j| j.id.as_str()).collect();
        assert_eq!(ids, ["lint", "unit", "docs", "release"]);
        let unit = w.job("unit").unwrap();
        assert_eq!(unit.needs, ["lint"], "the earlier stage, implicitly");
        assert_eq!(unit.steps[0].command.as_deref(), Some("pip install -e ."));
        assert_eq!(
            unit.steps[1].command.as_deref(),
            Some("python3 -m unittest\npython3 tools/check_config.py")
        );
        assert!(
            w.job("docs").unwrap().needs.is_empty(),
            "needs: [] runs at once"
        );
        assert_eq!(w.job("release").unwrap().needs, ["unit"]);
    }

    /// Each unusable file gives a sentence, never a partial workflow.
    #[test]
    fn an_unusable_file_says_why() {
        for (path, text, why) in [
            ("ci.yml", "jobs: [a\n", "not YAML"),
            ("ci.yml", "", "empty"),
            ("ci.yml", "- a\n- b\n", "not a mapping"),
            ("ci.yml", "on: push\n", "no `jobs:`"),
            ("ci.yml", "jobs:\n  a:\n    steps: x\n", "not a list"),
            (
                "ci.yml",
                "jobs:\n  a:\n    runs-on: x\n",
                "neither `steps:`",
            ),
            (
                "ci.yml",
                "jobs:\n  a:\n    steps:\n      - name: x\n",
                "neither `run:`",
            ),
            (
                "ci.yml",
                "jobs:\n  a:\n    needs: b\n    steps:\n      - run: x\n",
                "needs `b`",
            ),
            ("ci.yml", "a: 1\n---\nb: 2\n", "2 YAML documents"),
            (".gitlab-ci.yml", "variables:\n  A: 1\n", "no job"),
            (
                ".gitlab-ci.yml",
                "t:\n  stage: nope\n  script: x\n",
                "stage `nope`",
            ),
        ] {
            let err = parse(path, text).unwrap_err();
            assert!(err.contains(why), "{text:?}: {err}");
        }
    }

    #[test]
    fn conditions_and_continue_on_error_are_kept() {
        let w = parse_github(
            r#"
jobs:
  test:
    continue-on-error: ${{ matrix.experimental }}
    steps:
      - run: make lint
        continue-on-error: true
      - run: make deploy-preview
        if: github.event_name == 'pull_request'
      - run: python3 -m pytest
      - run: tracelab report --junit report.xml
        if: always()
  notify:
    needs: test
    if: failure()
    steps:
      - run: ./notify.sh
"#,
        )
        .unwrap();
        let test = w.job("test").unwrap();
        assert!(test.gate.continue_on_error, "an expression may be true");
        let gates: Vec<(bool, bool, bool)> = test
            .steps
            .iter()
            .map(|s| {
                (
                    s.gate.uncertain(),
                    s.gate.continue_on_error,
                    s.gate.runs_after_failure(),
                )
            })
            .collect();
        assert_eq!(
            gates,
            [
                (true, true, false),
                (true, false, false),
                (false, false, false),
                (true, false, true),
            ]
        );
        assert!(w.job("notify").unwrap().gate.runs_after_failure());
        let gitlab = parse(
            ".gitlab-ci.yml",
            "unit:\n  script: make test\n  allow_failure: true\ncleanup:\n  when: always\n  script: make clean\nlint:\n  when: on_success\n  script: make lint\n",
        )
        .unwrap();
        assert!(gitlab.job("unit").unwrap().gate.continue_on_error);
        assert!(gitlab.job("cleanup").unwrap().gate.runs_after_failure());
        assert_eq!(gitlab.job("lint").unwrap().gate, Gate::default());
    }

    #[test]
    fn on_is_a_key_not_a_boolean() {
        // YAML 1.1 reads `on` as true; GitHub and YAML 1.2 do not.
        let w = parse_github("on: push\njobs:\n  a:\n    steps:\n      - run: make\n").unwrap();
        assert_eq!(w.jobs[0].steps[0].name, "Run make");
    }
}
