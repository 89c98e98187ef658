//! The command line: the global flags and the subcommands. Each
//! subcommand's arguments are defined beside it (`args`, or the command's
//! own module for `report` and `experience`); this module only names them,
//! so no arguments module has to reach back to a command.

use crate::{args, experience, report};
use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "tracelab",
    version,
    about = "Turn a failing test into a verified diagnosis."
)]
pub struct Cli {
    /// The embedded store (SQLite). Default: $XDG_DATA_HOME/tracelab/tracelab.db or ~/.local/share/tracelab/tracelab.db.
    #[arg(long, global = true, env = "TRACELAB_DB")]
    pub db: Option<PathBuf>,
    /// No progress lines on stderr.
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// A fleet's API (e.g. http://127.0.0.1:8080): `investigate` and `investigations` run there instead of in this process.
    #[arg(long, global = true, env = "TRACELAB_SERVER", value_name = "URL")]
    pub server: Option<String>,
    /// Bearer token for --server (and for `locate --indexer`).
    #[arg(long, global = true, env = "TRACELAB_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// With --server: how long, in seconds, following an investigation waits out an API that does not answer (a restart) before giving up.
    #[arg(long, global = true, value_name = "SECS", default_value_t = 120)]
    pub server_patience: u64,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Investigate a failing test in a git repository.
    Investigate(args::InvestigateArgs),
    /// Build a small repository with a hidden regression and investigate it.
    Demo(args::DemoArgs),
    /// Read past investigations.
    #[command(subcommand)]
    Investigations(args::InvestigationsCommand),
    /// Parse failure evidence (test reports, logs, stack traces): one failure per line, redacted.
    Parse(args::ParseArgs),
    /// Build or update the code index of a repository (symbols per commit, cached by blob id).
    Index(args::IndexArgs),
    /// Rank the files, symbols and commits a failure output points at.
    Locate(args::LocateArgs),
    /// Materialise a Repro Pack (worktree at its revision + script) and run it once.
    Repro(args::ReproArgs),
    /// CI step: collect test reports, the log tail, commit and environment fingerprint; print or send them.
    Report(report::ReportArgs),
    /// Serve the review dashboard over this machine's investigations; the first stdout line is its URL.
    Serve(args::ServeArgs),
    /// Learn from completed repairs: mine a failing → passing range, read the records.
    #[command(subcommand)]
    Experience(experience::ExperienceCommand),
}
