//! The CI failure report's payload (`POST /v1/ci-failures`), its size
//! checks against the request limits, the redaction of its metadata, and
//! its parsing into failures and group occurrences.

use super::sanitize::{env_names, sanitize_url};
use crate::request::{Refusal, RequestLimits};
use crate::{
    DetectedFormat, Diagnostic, Failure, GroupKey, Occurrence, ParseOptions, Redactor, parse,
};
use serde::{Deserialize, Serialize};
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
