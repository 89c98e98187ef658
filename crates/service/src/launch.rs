//! The whole `main` of a service: flags, layered settings, telemetry, signal
//! handling, then the service's `run(settings, shutdown)`. Exit codes: 0
//! after a clean shutdown, 2 for bad configuration, 1 when `run` fails.

use crate::{Shutdown, config, telemetry};
use clap::Parser;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::path::PathBuf;
use std::process::ExitCode;

/// Flags every service binary takes.
#[derive(Parser, Debug)]
#[command(version)]
pub struct Args {
    /// TOML settings file (see deploy/local/fleet.toml for every setting).
    #[arg(long, env = "TRACELAB_CONFIG")]
    pub config: Option<PathBuf>,
    /// Overrides one setting, e.g. `--set fleet.nats_url=nats://host:4222` (repeatable).
    /// Environment variables `TRACELAB__FLEET__NATS_URL=…` work too.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Prints the effective settings as TOML-like JSON and exits.
    #[arg(long)]
    pub print_config: bool,
}

/// Makes this process non-dumpable: its `/proc/<pid>/environ`, `mem` and
/// file descriptors become root's, and ptrace attaches are refused, so a
/// test that runs as the service's own uid (the hardened runner in a
/// non-root pod, where no uid switch is possible) cannot read the tokens
/// and database URL the service holds. Children start dumpable again after
/// `execve`, and their environment is built from scratch by the sandbox.
/// Also: no core dumps with secrets in them.
pub fn protect_process(service: &str) {
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        eprintln!(
            "{service}: cannot mark the process non-dumpable ({e}); its /proc files stay readable by its own uid"
        );
    }
}

/// Runs `service` to completion.
pub fn launch<S, F, Fut>(service: &'static str, otlp: fn(&S) -> Option<&str>, run: F) -> ExitCode
where
    S: Serialize + DeserializeOwned + Default,
    F: FnOnce(S, Shutdown) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let args = Args::parse();
    let settings: S = match config::load(args.config.as_deref(), &args.set) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{service}: {e}");
            return ExitCode::from(2);
        }
    };
    protect_process(service);
    if args.print_config {
        println!(
            "{}",
            serde_json::to_string_pretty(&settings).unwrap_or_default()
        );
        return ExitCode::SUCCESS;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{service}: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let _telemetry = match telemetry::init(service, otlp(&settings)) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{service}: {e}");
                return ExitCode::from(2);
            }
        };
        match run(settings, Shutdown::on_signals()).await {
            Ok(()) => {
                tracing::info!("{service} stopped");
                ExitCode::SUCCESS
            }
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), "{service} failed");
                ExitCode::FAILURE
            }
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_protected_process_is_not_dumpable() {
        super::protect_process("test");
        assert!(!nix::sys::prctl::get_dumpable().expect("prctl"));
    }
}
