//! Prints how long the local sandbox takes to run a short command, alone and 4 at once.
//!
//!     cargo run --release -p tracelab-sandbox --example timing

use std::time::{Duration, Instant};
use tracelab_domain::ports::{CommandSpec, SandboxProvider};
use tracelab_sandbox::{LocalConfig, LocalSandboxProvider};

#[tokio::main]
async fn main() {
    let dir = std::env::temp_dir();
    let provider = LocalSandboxProvider::new(LocalConfig {
        path: "/usr/bin:/bin".into(),
        ..Default::default()
    });
    let spec = CommandSpec {
        argv: vec![
            "python3".into(),
            "-c".into(),
            "import time; time.sleep(0.1)".into(),
        ],
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
        assert!(a.exec(&spec).await.unwrap().passed());
    }
    println!(
        "alone: {:.0} ms per run",
        started.elapsed().as_secs_f64() * 200.0
    );
    let started = Instant::now();
    for _ in 0..5 {
        let (r1, r2, r3, r4) =
            tokio::join!(a.exec(&spec), b.exec(&spec), c.exec(&spec), d.exec(&spec));
        assert!(
            r1.unwrap().passed()
                && r2.unwrap().passed()
                && r3.unwrap().passed()
                && r4.unwrap().passed()
        );
    }
    println!(
        "4 at once: {:.0} ms per round",
        started.elapsed().as_secs_f64() * 200.0
    );
}
