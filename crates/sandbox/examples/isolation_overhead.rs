//! Prints what each isolation mode guarantees on this host and the median
//! time of a trivial command under it (20 runs each, after one warm-up).
//!
//!     cargo run --release -p tracelab-sandbox --example isolation_overhead [RUNS]

use std::time::{Duration, Instant};
use tracelab_domain::ports::{CommandSpec, SandboxProvider};
use tracelab_sandbox::{HardenedConfig, Isolation, LocalConfig, LocalSandboxProvider, Mechanism};

#[tokio::main]
async fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let mut local = LocalConfig {
        path: "/usr/local/bin:/usr/bin:/bin".into(),
        ..LocalConfig::default()
    };
    local.allowlist.programs.push("true".into());
    let modes: [(&str, Option<Vec<Mechanism>>); 4] = [
        ("none", None),
        ("bwrap", Some(vec![Mechanism::Bwrap])),
        ("unshare", Some(vec![Mechanism::Unshare])),
        ("limits only", Some(vec![])),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (name, mechanisms) in modes {
        let started = Instant::now();
        let provider = match mechanisms {
            None => LocalSandboxProvider::new(local.clone()),
            Some(mechanisms) => {
                let hardened = HardenedConfig {
                    require_namespaces: !mechanisms.is_empty(),
                    mechanisms,
                    ..HardenedConfig::default()
                };
                match LocalSandboxProvider::with_isolation(
                    local.clone(),
                    Isolation::Hardened(hardened),
                ) {
                    Ok(p) => p,
                    Err(e) => {
                        println!("{name}: unavailable: {e}");
                        continue;
                    }
                }
            }
        };
        let detect = started.elapsed();
        println!("{name}: {}", provider.describe());
        println!("  detection {:.1} ms", detect.as_secs_f64() * 1e3);
        let sandbox = provider.open(dir.path(), "bench").await.unwrap();
        for argv in [&["true"][..], &["python3", "--version"]] {
            let spec = CommandSpec {
                argv: argv.iter().map(|s| s.to_string()).collect(),
                env: vec![],
                timeout: Duration::from_secs(30),
                output_limit: 4096,
            };
            let first = sandbox.exec(&spec).await.unwrap();
            assert!(first.passed(), "{name}: {first:?}");
            let mut times: Vec<Duration> = Vec::with_capacity(runs);
            for _ in 0..runs {
                let t = Instant::now();
                let r = sandbox.exec(&spec).await.unwrap();
                times.push(t.elapsed());
                assert!(r.passed(), "{name}: {r:?}");
            }
            times.sort();
            println!(
                "  {:<18} median {:>6.1} ms  min {:>6.1} ms  max {:>6.1} ms  ({runs} runs)",
                argv.join(" "),
                times[runs / 2].as_secs_f64() * 1e3,
                times[0].as_secs_f64() * 1e3,
                times[runs - 1].as_secs_f64() * 1e3,
            );
        }
        sandbox.close().await.unwrap();
    }
}
