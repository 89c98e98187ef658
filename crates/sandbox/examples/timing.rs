//! Prints how long the local sandbox takes to run a short command, alone and 4 at once.
//!
//!     cargo run --release -p tracelab-sandbox --example timing

use std::time::{Duration, Instant};
use tracelab_domain::ports::{CommandSpec, SandboxProvider};
use tracelab_sandbox::{LocalConfig, LocalSandboxProvider};

#[tokio::main]
async fn main() {
    // Optional: a directory and a command to time instead of the default.
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = args
        .first()
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let argv: Vec<String> = if args.len() > 1 {
        args[1..].to_vec()
    } else {
        vec![
            "python3".into(),
            "-c".into(),
            "import time; time.sleep(0.1)".into(),
        ]
    };
    let provider = LocalSandboxProvider::new(LocalConfig {
        path: "/usr/bin:/bin".into(),
        ..Default::default()
    });
    let spec = CommandSpec {
        argv,
        env: vec![],
        timeout: Duration::from_secs(10),
        output_limit: 4096,
    };
    let (a, b, c, d) = (
        provider.open(&dir, "t").await.unwrap(),
        provider.open(&dir, "t").await.unwrap(),
        provider.open(&dir, "t").await.unwrap(),
        provider.open(&dir, "t").await.unwrap(),
    );
    let started = Instant::now();
    for _ in 0..5 {
        a.exec(&spec).await.unwrap();
    }
    println!(
        "alone: {:.0} ms per run",
        started.elapsed().as_secs_f64() * 200.0
    );
    let started = Instant::now();
    for _ in 0..5 {
        let (r1, r2, r3, r4) =
            tokio::join!(a.exec(&spec), b.exec(&spec), c.exec(&spec), d.exec(&spec));
        let _ = (r1.unwrap(), r2.unwrap(), r3.unwrap(), r4.unwrap());
    }
    println!(
        "4 at once: {:.0} ms per round",
        started.elapsed().as_secs_f64() * 200.0
    );
}
