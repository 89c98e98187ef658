//! `tracelab`: the one-machine entry point. Parses flags, starts logging,
//! and hands over to the command modules; exits non-zero with one line on
//! stderr when a command could not run.

mod args;
#[cfg(not(all(feature = "docker", feature = "server", feature = "indexer")))]
mod built;
mod code;
mod command_line;
mod commands;
mod db;
mod experience;
mod output;
mod parse;
#[cfg(feature = "server")]
mod pull_request;
#[cfg(feature = "server")]
mod remote;
mod report;
mod repro;
#[cfg(feature = "dashboard")]
mod serve;
#[cfg(feature = "server")]
mod upload;

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = command_line::Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TRACELAB_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(code) => code,
        // A closed pipe (`tracelab parse big.log | head`) is the reader's choice, not an error.
        Err(e)
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::from(1)
        }
    }
}
