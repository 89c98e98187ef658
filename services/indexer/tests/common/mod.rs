//! The indexer started in-process on port-0 listeners against the real
//! PostgreSQL (`TRACELAB_TEST_POSTGRES`, one schema per test), a small Python
//! repository with a bug, and the generated gRPC client.

#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;
use tonic::transport::Channel;
use tracelab_fleet::FleetSettings;
use tracelab_indexer::{Listeners, Settings};
use tracelab_proto::index::v1::retrieval_client::RetrievalClient;
use tracelab_repos::RepositorySettings;
use tracelab_service::Shutdown;
use tracelab_testkit::FixtureRepo;
use tracelab_testkit::backends::{backend, unique_name};

pub const PRICING: &str = "def discount(total, code):\n    if code == 'HALF':\n        return total / 2\n    return total\n\n\ndef tax(total):\n    return total * 1.2\n";
pub const PRICING_BUG: &str = "def discount(total, code):\n    if code == 'HALF':\n        return total / 0\n    return total\n\n\ndef tax(total):\n    return total * 1.2\n";
pub const CART: &str = "from shop.pricing import discount, tax\n\n\nclass Cart:\n    def __init__(self):\n        self.items = []\n\n    def checkout(self, code):\n        subtotal = sum(self.items)\n        return tax(discount(subtotal, code))\n";
pub const TEST: &str = "from shop.cart import Cart\n\n\ndef test_checkout_half():\n    c = Cart()\n    c.items = [10]\n    assert c.checkout('HALF') == 6\n";
pub const TRACEBACK: &str = "Traceback (most recent call last):\n  File \"/ci/build/tests/test_cart.py\", line 7, in test_checkout_half\n    assert c.checkout('HALF') == 6\n  File \"/ci/build/shop/cart.py\", line 10, in checkout\n    return tax(discount(subtotal, code))\n  File \"/ci/build/shop/pricing.py\", line 3, in discount\n    return total / 0\nZeroDivisionError: division by zero\n";

/// The shop repository: a clean commit, the bug, an unrelated commit.
pub fn shop() -> (FixtureRepo, String) {
    let mut repo = FixtureRepo::new();
    repo.commit(
        "initial",
        &[
            ("shop/__init__.py", ""),
            ("shop/pricing.py", PRICING),
            ("shop/cart.py", CART),
            ("tests/test_cart.py", TEST),
        ],
    );
    let bug = repo.commit(
        "Tweak discount rounding",
        &[("shop/pricing.py", PRICING_BUG)],
    );
    repo.commit("docs", &[("README.md", "docs\n")]);
    (repo, bug)
}

pub struct Running {
    pub client: RetrievalClient<Channel>,
    pub url: String,
    pub health: String,
    pub settings: Settings,
    pub shutdown: Shutdown,
    pub cache: tempfile::TempDir,
    server: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

impl Running {
    /// Requests shutdown and waits for `run` to return cleanly.
    pub async fn stop(mut self) {
        self.shutdown.request();
        let server = self.server.take().unwrap();
        tokio::time::timeout(Duration::from_secs(20), server)
            .await
            .expect("the indexer stops")
            .unwrap()
            .expect("run returns Ok");
    }
}

async fn loopback() -> tokio::net::TcpListener {
    tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap()
}

/// Starts the indexer with `roots`; `None` when PostgreSQL is not configured.
pub async fn start(roots: Vec<PathBuf>, concurrency: usize) -> Option<Running> {
    start_with_tokens(roots, concurrency, Vec::new()).await
}

/// [`start`] with bearer tokens required.
pub async fn start_with_tokens(
    roots: Vec<PathBuf>,
    concurrency: usize,
    tokens: Vec<tracelab_service::tokens::NamedToken>,
) -> Option<Running> {
    let url = backend("TRACELAB_TEST_POSTGRES")?;
    let cache = tempfile::tempdir().unwrap();
    let settings = Settings {
        fleet: FleetSettings {
            postgres_url: url,
            postgres_schema: unique_name("idx"),
            repositories: RepositorySettings {
                local_roots: roots.iter().map(|r| r.display().to_string()).collect(),
                ..RepositorySettings::default()
            },
            ..FleetSettings::default()
        },
        cache_dir: cache.path().display().to_string(),
        concurrency,
        allow_unauthenticated: tokens.is_empty(),
        tokens,
        ..Settings::default()
    };
    let listeners = Listeners {
        health: loopback().await,
        grpc: loopback().await,
    };
    let health = listeners.health.local_addr().unwrap().to_string();
    let grpc = format!("http://{}", listeners.grpc.local_addr().unwrap());
    let shutdown = Shutdown::new();
    let server = tokio::spawn(tracelab_indexer::serve(
        settings.clone(),
        listeners,
        shutdown.clone(),
    ));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let client = loop {
        match RetrievalClient::connect(grpc.clone()).await {
            Ok(c) => break c,
            Err(e) if tokio::time::Instant::now() < deadline && !server.is_finished() => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("the indexer did not start: {e}"),
        }
    };
    Some(Running {
        client,
        url: grpc,
        health,
        settings,
        shutdown,
        cache,
        server: Some(server),
    })
}

/// `GET path` on the health listener: (status code, body).
pub async fn http_get(addr: &str, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    let code = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, out)
}
