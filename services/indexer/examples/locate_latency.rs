//! Locate latency: the indexer over gRPC against the library in-process, on
//! the same warm index, plus the one-shot `locate()` the CLI runs.
//!
//! `TRACELAB_TEST_POSTGRES=… cargo run -p tracelab-indexer --example locate_latency -- [REPO EVIDENCE_FILE] [N]`
//!
//! Without REPO it builds the small shop repository of the tests.

use std::path::PathBuf;
use std::time::{Duration, Instant};
use tracelab_code_index::indexer::open_repo;
use tracelab_code_index::{Indexer, LocateOptions, Locator, default_cache_dir, locate};
use tracelab_fleet::FleetSettings;
use tracelab_indexer::{Listeners, Settings};
use tracelab_proto::index::v1 as pb;
use tracelab_proto::index::v1::retrieval_client::RetrievalClient;
use tracelab_service::Shutdown;

const TRACEBACK: &str = "Traceback (most recent call last):\n  File \"/ci/build/tests/test_cart.py\", line 7, in test_checkout_half\n    assert c.checkout('HALF') == 6\n  File \"/ci/build/shop/cart.py\", line 10, in checkout\n    return tax(discount(subtotal, code))\n  File \"/ci/build/shop/pricing.py\", line 3, in discount\n    return total / 0\nZeroDivisionError: division by zero\n";

fn shop() -> tracelab_testkit::FixtureRepo {
    let mut repo = tracelab_testkit::FixtureRepo::new();
    repo.commit(
        "initial",
        &[
            ("shop/__init__.py", ""),
            ("shop/pricing.py", "def discount(total, code):\n    if code == 'HALF':\n        return total / 2\n    return total\n\n\ndef tax(total):\n    return total * 1.2\n"),
            ("shop/cart.py", "from shop.pricing import discount, tax\n\n\nclass Cart:\n    def __init__(self):\n        self.items = []\n\n    def checkout(self, code):\n        subtotal = sum(self.items)\n        return tax(discount(subtotal, code))\n"),
            ("tests/test_cart.py", "from shop.cart import Cart\n\n\ndef test_checkout_half():\n    c = Cart()\n    c.items = [10]\n    assert c.checkout('HALF') == 6\n"),
        ],
    );
    repo.commit(
        "Tweak discount rounding",
        &[("shop/pricing.py", "def discount(total, code):\n    if code == 'HALF':\n        return total / 0\n    return total\n\n\ndef tax(total):\n    return total * 1.2\n")],
    );
    repo
}

fn percentiles(mut v: Vec<Duration>) -> String {
    v.sort();
    let at = |q: f64| v[((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1];
    format!(
        "p50 {:>8.2} ms   p99 {:>8.2} ms   (n={})",
        at(0.5).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        v.len()
    )
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let fixture;
    let (repo, evidence) = match args.as_slice() {
        [repo, evidence, ..] => (PathBuf::from(repo), std::fs::read_to_string(evidence)?),
        _ => {
            fixture = shop();
            (fixture.path().to_path_buf(), TRACEBACK.to_string())
        }
    };
    let repo = std::fs::canonicalize(repo)?;
    let n: usize = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(50);
    let url = std::env::var("TRACELAB_TEST_POSTGRES").map_err(|_| {
        anyhow::anyhow!("set TRACELAB_TEST_POSTGRES (the service needs PostgreSQL)")
    })?;
    let settings = Settings {
        fleet: FleetSettings {
            postgres_url: url,
            postgres_schema: tracelab_testkit::backends::unique_name("idxbench"),
            repositories: tracelab_repos::RepositorySettings {
                local_roots: vec![repo.display().to_string()],
                ..tracelab_repos::RepositorySettings::default()
            },
            ..FleetSettings::default()
        },
        allow_unauthenticated: true,
        ..Settings::default()
    };
    let shutdown = Shutdown::new();
    // Bound here on port 0 and handed over: no port to guess.
    let listeners = Listeners {
        health: tokio::net::TcpListener::bind("127.0.0.1:0").await?,
        grpc: tokio::net::TcpListener::bind("127.0.0.1:0").await?,
    };
    let endpoint = format!("http://{}", listeners.grpc.local_addr()?);
    let server = tokio::spawn(tracelab_indexer::serve(
        settings,
        listeners,
        shutdown.clone(),
    ));
    let mut client = loop {
        match RetrievalClient::connect(endpoint.clone()).await {
            Ok(c) => break c,
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    };
    let request = pb::LocateRequest {
        repository: repo.display().to_string(),
        evidence: evidence.clone(),
        rev: String::new(),
        top: 10,
        ..Default::default()
    };
    // Warm up: the first call indexes and builds the locator.
    let started = Instant::now();
    client.locate(request.clone()).await?;
    println!(
        "grpc first call (index + build)   {:>8.2} ms",
        started.elapsed().as_secs_f64() * 1e3
    );
    let mut grpc = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        client.locate(request.clone()).await?;
        grpc.push(t.elapsed());
    }

    let opts = LocateOptions::default();
    let (warm, oneshot) = tokio::task::spawn_blocking({
        let repo = repo.clone();
        move || -> anyhow::Result<(Vec<Duration>, Vec<Duration>)> {
            let git = open_repo(&repo)?;
            let indexer = Indexer::open(&default_cache_dir(&repo)?)?;
            let locator = Locator::build(&git, &indexer, &opts)?;
            indexer.save()?;
            let mut warm = Vec::new();
            for _ in 0..n {
                let t = Instant::now();
                locator.locate(&evidence)?;
                warm.push(t.elapsed());
            }
            let mut oneshot = Vec::new();
            for _ in 0..n.min(20) {
                let t = Instant::now();
                locate(&repo, &evidence, &opts)?;
                oneshot.push(t.elapsed());
            }
            Ok((warm, oneshot))
        }
    })
    .await??;
    println!("repository {}", repo.display());
    println!("grpc Locate (warm service)        {}", percentiles(grpc));
    println!("in-process Locator::locate (warm) {}", percentiles(warm));
    println!(
        "in-process locate() one-shot (CLI) {}",
        percentiles(oneshot)
    );
    shutdown.request();
    server.await??;
    Ok(())
}
