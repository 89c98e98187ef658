//! The CI failure report: what `tracelab report` sends to
//! `POST /v1/ci-failures` and what the ingest service parses — test report
//! files, the tail of the job log, commit, branch, job, and an environment
//! fingerprint. One serde type shared by the CLI and the service, plus the
//! pure pieces both need: reading CI variables ([`CiContext::from_env`]),
//! filtering environment variable names ([`env_names`]), lockfile digests,
//! size checks, and parsing a report into failures and group occurrences.
//!
//! The payload carries raw evidence. The service never stores it as sent: it
//! stores [`parse_ci_report`]'s failures (redacted) and the metadata after
//! [`CiFailureReport::redact_metadata`].

use crate::request::{Refusal, RequestLimits};
use crate::{
    DetectedFormat, Diagnostic, Failure, GroupKey, Occurrence, ParseOptions, Redactor, parse,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// The payload version this crate writes and reads.
pub const CI_REPORT_SCHEMA: u32 = 1;

/// `POST /v1/ci-failures` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CiFailureReport {
    /// Payload version ([`CI_REPORT_SCHEMA`]).
    pub schema: u32,
    /// Repository (`https://github.com/acme/shop`, `acme/shop`), credentials removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default)]
    pub job: CiJob,
    /// Test report files (JUnit XML, runner output).
    #[serde(default)]
    pub reports: Vec<ReportFile>,
    /// The end of the job log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<LogTail>,
    #[serde(default)]
    pub environment: EnvFingerprint,
    /// When the report was made (unix seconds, the CI machine's clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<i64>,
}

/// Which CI job failed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CiJob {
    /// `github_actions`, `gitlab_ci`, `buildkite`, `circleci`, `jenkins`, `travis`, or `local`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// One collected report file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportFile {
    /// Path as given relative to the working directory.
    pub path: String,
    /// Content (lossy UTF-8); over the size limit, its first and last halves.
    pub content: String,
    /// Bytes dropped from the middle of a file over the limit.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub truncated_bytes: u64,
}

/// The end of a log file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogTail {
    pub path: String,
    /// The last bytes, starting at a line boundary (lossy UTF-8).
    pub content: String,
    /// Bytes before the tail that were not sent.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub truncated_bytes: u64,
}

/// What the job ran on, to tell environment-dependent failures apart.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvFingerprint {
    /// `linux`, `macos`, `windows`.
    #[serde(default)]
    pub os: String,
    /// `x86_64`, `aarch64`.
    #[serde(default)]
    pub arch: String,
    /// Tool → first line of its version output (`rustc` → `rustc 1.95.0 (…)`).
    #[serde(default)]
    pub toolchains: BTreeMap<String, String>,
    /// Lockfile path → `sha256:<hex>` of its content.
    #[serde(default)]
    pub lockfiles: BTreeMap<String, String>,
    /// Sorted environment variable names (never values), secret-looking names removed.
    #[serde(default)]
    pub env_names: Vec<String>,
    /// `LC_ALL`/`LANG` as the job ran (`C.UTF-8`, `de_DE.UTF-8`): sorting,
    /// number formats and decoding differ with it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub locale: String,
    /// `TZ` or the zone name (`UTC`, `Europe/Berlin`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub timezone: String,
    /// The job's container image, by digest when known
    /// (`python:3.12-slim@sha256:…`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub container_image: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// CI facts read from the environment of a job.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CiContext {
    pub repository: Option<String>,
    pub commit: Option<String>,
    pub branch: Option<String>,
    pub job: CiJob,
}

impl CiContext {
    /// Reads the variables of GitHub Actions, GitLab CI, Buildkite, CircleCI,
    /// Jenkins and Travis CI through `var` (the CLI passes `std::env::var`).
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Self {
        let get = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| var(n).filter(|v| !v.trim().is_empty()))
        };
        let provider = [
            ("GITHUB_ACTIONS", "github_actions"),
            ("GITLAB_CI", "gitlab_ci"),
            ("BUILDKITE", "buildkite"),
            ("CIRCLECI", "circleci"),
            ("JENKINS_URL", "jenkins"),
            ("TRAVIS", "travis"),
        ]
        .iter()
        .find(|(v, _)| var(v).is_some_and(|x| !x.is_empty()))
        .map(|(_, p)| (*p).to_owned());
        let github_url = match (get(&["GITHUB_SERVER_URL"]), get(&["GITHUB_REPOSITORY"])) {
            (Some(server), Some(repo)) => Some(format!("{}/{repo}", server.trim_end_matches('/'))),
            (None, Some(repo)) => Some(repo),
            _ => None,
        };
        let github_job_url = match (
            get(&["GITHUB_SERVER_URL"]),
            get(&["GITHUB_REPOSITORY"]),
            get(&["GITHUB_RUN_ID"]),
        ) {
            (Some(s), Some(r), Some(id)) => {
                Some(format!("{}/{r}/actions/runs/{id}", s.trim_end_matches('/')))
            }
            _ => None,
        };
        // GitHub: a pull request's branch is GITHUB_HEAD_REF; pushes use GITHUB_REF_NAME.
        let branch = get(&[
            "GITHUB_HEAD_REF",
            "GITHUB_REF_NAME",
            "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME",
            "CI_COMMIT_BRANCH",
            "CI_COMMIT_REF_NAME",
            "BUILDKITE_BRANCH",
            "CIRCLE_BRANCH",
            "TRAVIS_PULL_REQUEST_BRANCH",
            "TRAVIS_BRANCH",
            "BRANCH_NAME",
            "GIT_BRANCH",
        ])
        .map(|b| b.strip_prefix("origin/").map(str::to_owned).unwrap_or(b));
        CiContext {
            repository: github_url
                .or_else(|| {
                    get(&[
                        "CI_PROJECT_URL",
                        "BUILDKITE_REPO",
                        "CIRCLE_REPOSITORY_URL",
                        "GIT_URL",
                    ])
                })
                .or_else(|| get(&["TRAVIS_REPO_SLUG"]))
                .map(|u| sanitize_url(&u)),
            commit: get(&[
                "GITHUB_SHA",
                "CI_COMMIT_SHA",
                "BUILDKITE_COMMIT",
                "CIRCLE_SHA1",
                "GIT_COMMIT",
                "TRAVIS_COMMIT",
            ]),
            branch,
            job: CiJob {
                provider,
                id: get(&[
                    "GITHUB_RUN_ID",
                    "CI_JOB_ID",
                    "BUILDKITE_JOB_ID",
                    "CIRCLE_WORKFLOW_JOB_ID",
                    "BUILD_TAG",
                    "TRAVIS_JOB_ID",
                ])
                .map(|id| match get(&["GITHUB_RUN_ATTEMPT"]) {
                    Some(attempt) if var("GITHUB_RUN_ID").is_some() => format!("{id}/{attempt}"),
                    _ => id,
                }),
                name: get(&[
                    "GITHUB_JOB",
                    "CI_JOB_NAME",
                    "BUILDKITE_LABEL",
                    "CIRCLE_JOB",
                    "JOB_NAME",
                    "TRAVIS_JOB_NAME",
                ]),
                url: github_job_url
                    .or_else(|| {
                        get(&[
                            "CI_JOB_URL",
                            "BUILDKITE_BUILD_URL",
                            "CIRCLE_BUILD_URL",
                            "BUILD_URL",
                            "TRAVIS_JOB_WEB_URL",
                        ])
                    })
                    .map(|u| sanitize_url(&u)),
            },
        }
    }
}

/// Removes `user:password@` from a URL (a remote like
/// `https://x-access-token:ghs_…@github.com/acme/shop.git`).
pub fn sanitize_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let host_end = rest.find('/').unwrap_or(rest.len());
    match rest[..host_end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}

/// Name parts (split on `_`, upper-cased) that make a variable name look secret.
const SECRET_NAME_PARTS: &[&str] = &[
    "KEY",
    "KEYS",
    "PASS",
    "PASSWORD",
    "PASSWD",
    "PWD",
    "AUTH",
    "CERT",
    "CERTIFICATE",
    "PRIVATE",
    "CREDENTIAL",
    "CREDENTIALS",
    "CREDS",
    "DSN",
    "SALT",
    "PAT",
    "SSH",
    "GPG",
    "PGP",
    "SIGNING",
    "WEBHOOK",
    "OTP",
    "TOTP",
    "PIN",
    "SESSION",
    "COOKIE",
    "JWT",
    "BEARER",
    "SECRET",
    "SECRETS",
    "TOKEN",
    "TOKENS",
    "APIKEY",
    "KEYSTORE",
    "TRUSTSTORE",
    "HTPASSWD",
    "NETRC",
];

/// Whether an environment variable's NAME suggests its value is a secret
/// (`AWS_SECRET_ACCESS_KEY`, `NPM_TOKEN`, `DATABASE_URL`, `SENTRY_DSN`).
pub fn is_secret_env_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    crate::redact::is_sensitive_key(name)
        || upper
            .split(['_', '-', '.'])
            .any(|part| SECRET_NAME_PARTS.contains(&part))
        // Connection strings carry passwords.
        || upper.ends_with("DATABASE_URL")
        || upper.ends_with("_DB_URL")
        || upper.contains("CONNECTION_STRING")
        || upper.starts_with("INPUT_") // GitHub action inputs: arbitrary, often tokens
}

/// Sorted, de-duplicated, valid variable names with secret-looking names
/// removed, at most `max` (the first in sort order).
pub fn env_names<I: IntoIterator<Item = String>>(names: I, max: usize) -> Vec<String> {
    let valid = |n: &str| {
        !n.is_empty()
            && n.len() <= 128
            && !n.starts_with(|c: char| c.is_ascii_digit())
            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    names
        .into_iter()
        .filter(|n| valid(n) && !is_secret_env_name(n))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .take(max)
        .collect()
}

/// Lockfiles fingerprinted when present at the repository root.
pub const LOCKFILES: &[&str] = &[
    "Cargo.lock",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "bun.lockb",
    "poetry.lock",
    "Pipfile.lock",
    "uv.lock",
    "pdm.lock",
    "requirements.txt",
    "go.sum",
    "Gemfile.lock",
    "composer.lock",
    "gradle.lockfile",
    "packages.lock.json",
    "mix.lock",
    "flake.lock",
];

/// `sha256:<hex>` of a lockfile's bytes.
pub fn lockfile_digest(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(7 + 64);
    s.push_str("sha256:");
    for b in digest {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// The last at most `max` bytes of `bytes`, starting after a newline when
/// one is in the kept part (so the tail starts with a whole line).
pub fn log_tail(bytes: &[u8], max: usize) -> (&[u8], u64) {
    if bytes.len() <= max {
        return (bytes, 0);
    }
    let mut start = bytes.len() - max;
    if let Some(nl) = bytes[start..].iter().position(|b| *b == b'\n')
        && start + nl + 1 < bytes.len()
    {
        start += nl + 1;
    }
    (&bytes[start..], start as u64)
}

impl CiFailureReport {
    /// An empty report of the current schema.
    pub fn new() -> Self {
        Self {
            schema: CI_REPORT_SCHEMA,
            repository: None,
            commit: None,
            branch: None,
            job: CiJob::default(),
            reports: Vec::new(),
            log: None,
            environment: EnvFingerprint::default(),
            created_at: None,
        }
    }

    /// Checks the report against `limits` (the service, after decoding; the
    /// CLI trims to the same defaults, so a default report always passes).
    pub fn check(&self, limits: &RequestLimits) -> Result<(), Refusal> {
        use crate::request::check_size as check;
        if self.schema != CI_REPORT_SCHEMA {
            return Err(Refusal::Invalid(format!(
                "schema {} is not supported (this server reads {CI_REPORT_SCHEMA})",
                self.schema
            )));
        }
        if self.reports.len() > limits.max_report_files {
            return Err(Refusal::TooLarge {
                what: "the list of report files".into(),
                size: self.reports.len(),
                limit: limits.max_report_files,
            });
        }
        for r in &self.reports {
            check(
                &format!("report file {}", r.path),
                r.content.len(),
                limits.max_file_bytes,
            )?;
            check("a report file path", r.path.len(), limits.max_field_bytes)?;
        }
        if let Some(log) = &self.log {
            check("the log tail", log.content.len(), limits.max_log_bytes)?;
            check("the log path", log.path.len(), limits.max_field_bytes)?;
        }
        if self.environment.env_names.len() > limits.max_env_names {
            return Err(Refusal::TooLarge {
                what: "the list of environment variable names".into(),
                size: self.environment.env_names.len(),
                limit: limits.max_env_names,
            });
        }
        let fields = [
            ("repository", self.repository.as_deref()),
            ("commit", self.commit.as_deref()),
            ("branch", self.branch.as_deref()),
            ("job id", self.job.id.as_deref()),
            ("job name", self.job.name.as_deref()),
            ("job url", self.job.url.as_deref()),
            ("provider", self.job.provider.as_deref()),
        ];
        for (what, v) in fields {
            check(what, v.map_or(0, str::len), limits.max_field_bytes)?;
        }
        let env = &self.environment;
        for s in env
            .toolchains
            .iter()
            .chain(env.lockfiles.iter())
            .flat_map(|(k, v)| [k, v])
            .chain(env.env_names.iter())
            .chain([
                &env.os,
                &env.arch,
                &env.locale,
                &env.timezone,
                &env.container_image,
            ])
        {
            check(
                "an environment fingerprint field",
                s.len(),
                limits.max_field_bytes,
            )?;
        }
        Ok(())
    }

    /// Redacts the metadata (repository, branch, job, toolchain strings) and
    /// re-filters variable names — the payload is untrusted. The report and
    /// log contents are left alone: [`parse_ci_report`] redacts what it keeps.
    pub fn redact_metadata(&mut self, r: &Redactor) {
        if let Some(u) = &mut self.repository {
            *u = sanitize_url(u);
        }
        let red = |s: &mut String| {
            if let std::borrow::Cow::Owned(o) = r.redact_text(s) {
                *s = o;
            }
        };
        for s in [
            &mut self.repository,
            &mut self.commit,
            &mut self.branch,
            &mut self.job.id,
            &mut self.job.name,
            &mut self.job.url,
            &mut self.job.provider,
        ]
        .into_iter()
        .flatten()
        {
            red(s);
        }
        for v in self.environment.toolchains.values_mut() {
            red(v);
        }
        for s in [
            &mut self.environment.locale,
            &mut self.environment.timezone,
            &mut self.environment.container_image,
        ] {
            red(s);
        }
        let names = std::mem::take(&mut self.environment.env_names);
        self.environment.env_names = env_names(names, usize::MAX);
    }
}

impl Default for CiFailureReport {
    fn default() -> Self {
        Self::new()
    }
}

/// Failures found in a CI report.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CiParseOutput {
    /// Redacted failures; `context.source` names the file they came from.
    pub failures: Vec<Failure>,
    /// Diagnostics, each message prefixed with its file.
    pub diagnostics: Vec<Diagnostic>,
    /// Format detected per report file path, and for the log tail under `log:<path>`.
    pub formats: BTreeMap<String, DetectedFormat>,
}

/// Parses every report file and the log tail. A failure from the log that a
/// report file already has (same group key) is the same failure seen twice
/// in one job and is dropped; so are exact repeats (same key and test id).
pub fn parse_ci_report(report: &CiFailureReport, options: &ParseOptions) -> CiParseOutput {
    let mut out = CiParseOutput::default();
    let mut seen: BTreeSet<(GroupKey, Option<String>)> = BTreeSet::new();
    let mut report_keys: BTreeSet<GroupKey> = BTreeSet::new();
    let sources = report
        .reports
        .iter()
        .map(|f| (f.path.as_str(), f.content.as_str(), false))
        .chain(
            report
                .log
                .iter()
                .map(|l| (l.path.as_str(), l.content.as_str(), true)),
        );
    for (path, content, is_log) in sources {
        let parsed = parse(content.as_bytes(), options);
        out.formats.insert(
            if is_log {
                format!("log:{path}")
            } else {
                path.to_owned()
            },
            parsed.format,
        );
        for mut d in parsed.diagnostics {
            d.message = format!("{path}: {}", d.message);
            out.diagnostics.push(d);
        }
        for mut f in parsed.failures {
            let key = GroupKey::for_failure(&f);
            if is_log && report_keys.contains(&key) {
                continue;
            }
            if !seen.insert((key.clone(), f.test_id.clone())) {
                continue;
            }
            if !is_log {
                report_keys.insert(key);
            }
            f.context.insert("source".into(), path.to_owned());
            out.failures.push(f);
        }
    }
    out
}

impl CiParseOutput {
    /// One occurrence per failure, with the report's commit and branch, at `at` (unix seconds).
    pub fn occurrences(&self, report: &CiFailureReport, at: i64) -> Vec<Occurrence> {
        self.failures
            .iter()
            .map(|f| {
                Occurrence::from_failure(f, at, report.commit.as_deref(), report.branch.as_deref())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn github_actions_pull_request() {
        let ctx = CiContext::from_env(env(&[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_SHA", "abc123"),
            ("GITHUB_REF_NAME", "42/merge"),
            ("GITHUB_HEAD_REF", "fix/login"),
            ("GITHUB_RUN_ID", "9001"),
            ("GITHUB_RUN_ATTEMPT", "2"),
            ("GITHUB_JOB", "test"),
            ("GITHUB_SERVER_URL", "https://github.com"),
            ("GITHUB_REPOSITORY", "acme/shop"),
        ]));
        assert_eq!(
            ctx,
            CiContext {
                repository: Some("https://github.com/acme/shop".into()),
                commit: Some("abc123".into()),
                branch: Some("fix/login".into()),
                job: CiJob {
                    provider: Some("github_actions".into()),
                    id: Some("9001/2".into()),
                    name: Some("test".into()),
                    url: Some("https://github.com/acme/shop/actions/runs/9001".into()),
                },
            }
        );
    }

    #[test]
    fn gitlab_and_jenkins() {
        let ctx = CiContext::from_env(env(&[
            ("GITLAB_CI", "true"),
            ("CI_COMMIT_SHA", "def"),
            ("CI_COMMIT_REF_NAME", "main"),
            ("CI_JOB_ID", "77"),
            ("CI_JOB_NAME", "pytest"),
            (
                "CI_PROJECT_URL",
                "https://gitlab-ci-token:glcbt-x@gitlab.example.com/g/r",
            ),
        ]));
        assert_eq!(ctx.job.provider.as_deref(), Some("gitlab_ci"));
        assert_eq!(
            (ctx.commit.as_deref(), ctx.branch.as_deref()),
            (Some("def"), Some("main"))
        );
        assert_eq!(
            ctx.repository.as_deref(),
            Some("https://gitlab.example.com/g/r")
        );
        let ctx = CiContext::from_env(env(&[
            ("JENKINS_URL", "http://ci/"),
            ("GIT_COMMIT", "f00"),
            ("GIT_BRANCH", "origin/release/2"),
            ("BUILD_TAG", "jenkins-shop-12"),
        ]));
        assert_eq!(ctx.branch.as_deref(), Some("release/2"));
        assert_eq!(ctx.job.id.as_deref(), Some("jenkins-shop-12"));
        assert_eq!(CiContext::from_env(env(&[])), CiContext::default());
    }

    #[test]
    fn secret_looking_names_are_dropped() {
        let names = [
            "PATH",
            "HOME",
            "CARGO_HOME",
            "RUSTUP_TOOLCHAIN",
            "CI",
            "GITHUB_SHA",
            "LANG",
            "TZ",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_ACCESS_KEY_ID",
            "NPM_TOKEN",
            "GITHUB_TOKEN",
            "DATABASE_URL",
            "SENTRY_DSN",
            "PGPASSWORD",
            "MY_API_KEY",
            "SSH_AUTH_SOCK",
            "GPG_PRIVATE_KEY",
            "SLACK_WEBHOOK_URL",
            "INPUT_TOKEN",
            "DOCKER_AUTH_CONFIG",
            "CODECOV_TOKEN",
            "TWINE_PASSWORD",
            "KEYCHAIN",
            "bad name",
            "1X",
            "PATH",
        ]
        .map(str::to_owned);
        assert_eq!(
            env_names(names, 100),
            [
                "CARGO_HOME",
                "CI",
                "GITHUB_SHA",
                "HOME",
                "KEYCHAIN",
                "LANG",
                "PATH",
                "RUSTUP_TOOLCHAIN",
                "TZ"
            ]
        );
    }

    #[test]
    fn urls_lose_credentials() {
        assert_eq!(
            sanitize_url("https://x-access-token:ghs_abc@github.com/acme/shop.git"),
            "https://github.com/acme/shop.git"
        );
        assert_eq!(
            sanitize_url("git@github.com:acme/shop.git"),
            "git@github.com:acme/shop.git"
        );
        assert_eq!(sanitize_url("https://h/p@q"), "https://h/p@q");
    }

    #[test]
    fn tails_start_at_a_line() {
        assert_eq!(log_tail(b"abc", 10), (&b"abc"[..], 0));
        assert_eq!(log_tail(b"line1\nline2\nline3\n", 9), (&b"line3\n"[..], 12));
        // No newline in the kept part: cut mid-line rather than send nothing.
        assert_eq!(log_tail(b"aaaaaaaaaa", 4), (&b"aaaa"[..], 6));
        assert_eq!(
            lockfile_digest(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    fn sample() -> CiFailureReport {
        let junit = r#"<?xml version="1.0"?><testsuite name="pytest" tests="1" failures="1"><testcase classname="tests.test_calc" name="test_add" file="tests/test_calc.py"><failure message="assert 3 == 4">def test_add():
&gt;       assert add(1, 2) == 4
E       assert 3 == 4

tests/test_calc.py:5: AssertionError</failure></testcase></testsuite>"#;
        let log = "Run python -m pytest\n=================================== FAILURES ===================================\n___________________________________ test_add ___________________________________\n\n    def test_add():\n>       assert add(1, 2) == 4\nE       assert 3 == 4\n\ntests/test_calc.py:5: AssertionError\n=========================== short test summary info ============================\nFAILED tests/test_calc.py::test_add - assert 3 == 4\n";
        CiFailureReport {
            commit: Some("abc".into()),
            branch: Some("main".into()),
            reports: vec![ReportFile {
                path: "reports/junit.xml".into(),
                content: junit.into(),
                truncated_bytes: 0,
            }],
            log: Some(LogTail {
                path: "ci.log".into(),
                content: log.into(),
                truncated_bytes: 0,
            }),
            ..CiFailureReport::new()
        }
    }

    #[test]
    fn a_report_parses_into_occurrences() {
        let report = sample();
        assert_eq!(report.check(&RequestLimits::default()), Ok(()));
        let out = parse_ci_report(&report, &ParseOptions::default());
        assert_eq!(out.formats["reports/junit.xml"], DetectedFormat::JunitXml);
        assert!(!out.failures.is_empty(), "{out:?}");
        assert_eq!(out.failures[0].context["source"], "reports/junit.xml");
        let occs = out.occurrences(&report, 1_700_000_000);
        assert_eq!(occs.len(), out.failures.len());
        assert!(
            occs.iter()
                .all(|o| o.commit.as_deref() == Some("abc") && o.branch.as_deref() == Some("main"))
        );
    }

    #[test]
    fn limits_are_checked() {
        let mut r = sample();
        let small = RequestLimits {
            max_file_bytes: 10,
            ..RequestLimits::default()
        };
        assert_eq!(r.check(&small).unwrap_err().http_status(), 413);
        r.schema = 99;
        assert_eq!(
            r.check(&RequestLimits::default())
                .unwrap_err()
                .http_status(),
            400
        );
        // Hostile nesting: skipped without recursion in unknown fields,
        // refused at once in known ones (no field of the payload nests).
        let deep = |field: &str| {
            format!(
                "{{\"schema\":1,\"{field}\":{}1{}}}",
                "[".repeat(100_000),
                "]".repeat(100_000)
            )
        };
        assert!(serde_json::from_str::<CiFailureReport>(&deep("future_field")).is_ok());
        assert!(serde_json::from_str::<CiFailureReport>(&deep("reports")).is_err());
        assert!(serde_json::from_str::<CiFailureReport>(&deep("job")).is_err());
        // A round trip through JSON keeps everything.
        let r = sample();
        let back: CiFailureReport =
            serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn metadata_is_redacted_and_names_refiltered() {
        let mut r = sample();
        r.branch = Some("feature/ann@example.com".into());
        r.repository = Some("https://u:p4ss@github.com/acme/shop".into());
        r.environment.env_names = vec!["PATH".into(), "NPM_TOKEN".into()];
        r.redact_metadata(&Redactor::new(crate::DEV_REDACTION_KEY).unwrap());
        assert!(
            r.branch.as_deref().unwrap().starts_with("feature/<email:"),
            "{:?}",
            r.branch
        );
        assert!(
            !r.repository.as_deref().unwrap().contains("p4ss"),
            "{:?}",
            r.repository
        );
        assert_eq!(r.environment.env_names, ["PATH"]);
    }
}
