//! Flags, and printing a report as text or JSON.

use crate::payloads::Kind;
use crate::repos::Shape;
use crate::{evidence, investigations};
use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;

/// Bounded load against a TraceLab fleet. Exit status: 0 when every
/// investigation or event succeeded, 3 when the run finished with errors
/// (the report says which), 1 when it could not run, 2 for bad flags.
#[derive(Parser, Debug)]
#[command(version)]
pub struct Cli {
    /// Print the report as one JSON object on stdout (progress stays on stderr).
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub scenario: Scenario,
}

#[derive(Subcommand, Debug)]
pub enum Scenario {
    /// Submit N investigations on generated regression repositories and wait for each verdict.
    Investigations(InvestigationArgs),
    /// Post N evidence events (CI failure reports, JSON log lines) to the ingest.
    Evidence(EvidenceArgs),
}

#[derive(clap::Args, Debug)]
pub struct InvestigationArgs {
    /// The investigator's REST API, e.g. the URL `deploy/local/up.sh` prints.
    #[arg(long)]
    pub api: String,
    #[arg(long, default_value_t = 24)]
    pub count: usize,
    /// Investigations undecided at once.
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
    /// Directory for the generated repositories (reused by later runs of the same shape);
    /// the services must be able to read it.
    #[arg(long, default_value = "/tmp/tracelab-loadtest-repos")]
    pub repos: PathBuf,
    /// Commits per generated history.
    #[arg(long, default_value_t = 16)]
    pub commits: usize,
    /// Seconds the generated test sleeps before its assertion.
    #[arg(long, default_value_t = 0.05)]
    pub test_seconds: f64,
    /// Bearer token (reviewer role) when the API has tokens configured.
    #[arg(long, env = "TRACELAB_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Milliseconds between two polls of one investigation.
    #[arg(long, default_value_t = 250)]
    pub poll_ms: u64,
    /// Seconds one investigation may take from submission to a final state.
    #[arg(long, default_value_t = 900)]
    pub timeout_secs: u64,
    /// Sandboxes per investigation (the request's `parallelism`; server default when unset).
    #[arg(long)]
    pub parallelism: Option<u32>,
    /// Per-command limit in the sandbox (`command_timeout_ms`).
    #[arg(long)]
    pub command_timeout_ms: Option<u64>,
    /// Flaky-classification re-run limit (`max_runs`).
    #[arg(long)]
    pub max_runs: Option<u32>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum EvidenceKind {
    /// Alternate CI failure reports and log lines.
    Mixed,
    /// `POST /v1/ci-failures` only.
    Ci,
    /// `POST /v1/logs` (JSON lines) only.
    Logs,
}

#[derive(clap::Args, Debug)]
pub struct EvidenceArgs {
    /// The ingest service's base URL.
    #[arg(long)]
    pub ingest: String,
    #[arg(long, default_value_t = 2000)]
    pub count: u64,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    #[arg(long, value_enum, default_value_t = EvidenceKind::Mixed)]
    pub kind: EvidenceKind,
    /// Varies the generated fields; the same seed sends the same events.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Bearer token when the ingest has tokens configured.
    #[arg(long, env = "TRACELAB_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// 429 answers one event may get before it is given up.
    #[arg(long, default_value_t = 100)]
    pub max_retries: u32,
}

/// Runs the scenario and prints its report; `Ok(false)` when it had errors.
pub async fn run(cli: Cli) -> anyhow::Result<bool> {
    match cli.scenario {
        Scenario::Investigations(a) => {
            let report = investigations::run(investigations::Options {
                api: a.api,
                count: a.count,
                concurrency: a.concurrency,
                repos: a.repos,
                shape: Shape {
                    commits: a.commits,
                    test_seconds: a.test_seconds,
                },
                token: a.token,
                poll_interval: Duration::from_millis(a.poll_ms.max(10)),
                timeout: Duration::from_secs(a.timeout_secs),
                parallelism: a.parallelism,
                command_timeout_ms: a.command_timeout_ms,
                max_runs: a.max_runs,
            })
            .await?;
            print(cli.json, &report)?;
            Ok(report.error_total == 0)
        }
        Scenario::Evidence(a) => {
            let report = evidence::run(evidence::Options {
                ingest: a.ingest,
                count: a.count,
                concurrency: a.concurrency,
                only: match a.kind {
                    EvidenceKind::Mixed => None,
                    EvidenceKind::Ci => Some(Kind::CiFailure),
                    EvidenceKind::Logs => Some(Kind::LogLine),
                },
                seed: a.seed,
                token: a.token,
                max_retries: a.max_retries,
            })
            .await?;
            print(cli.json, &report)?;
            Ok(report.error_total == 0)
        }
    }
}

fn print<R: serde::Serialize + std::fmt::Display>(json: bool, report: &R) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(report)?);
    } else {
        println!("{report}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse() {
        let cli = Cli::try_parse_from([
            "tracelab-loadtest",
            "investigations",
            "--api",
            "http://127.0.0.1:8080",
            "--count",
            "3",
            "--json",
        ])
        .unwrap();
        assert!(cli.json);
        let Scenario::Investigations(a) = cli.scenario else {
            panic!("investigations expected")
        };
        assert_eq!((a.count, a.concurrency, a.commits), (3, 8, 16));
        let e = Cli::try_parse_from(["tracelab-loadtest", "evidence"]).unwrap_err();
        assert!(e.to_string().contains("--ingest"), "{e}");
        let e = Cli::try_parse_from([
            "tracelab-loadtest",
            "evidence",
            "--ingest",
            "x",
            "--kind",
            "otlp",
        ])
        .unwrap_err();
        assert!(e.to_string().contains("otlp"), "{e}");
    }
}
