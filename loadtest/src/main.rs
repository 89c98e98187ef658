//! `tracelab-loadtest`: see the library docs and `--help`.

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = tracelab_loadtest::cli::Cli::parse();
    // reqwest is built without a crypto provider; ring is the one the workspace uses.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(tracelab_loadtest::cli::run(cli)) {
        Ok(clean) if clean => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(3),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
