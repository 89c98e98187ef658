//! A PostgreSQL restart between two operations. The test owns its cluster
//! (initdb into a temporary directory, a free port) so restarting it cannot
//! disturb other tests. Runs where `TRACELAB_TEST_POSTGRES` says a PostgreSQL
//! installation is available.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use tracelab_domain::ErrorKind;
use tracelab_domain::ids::InvestigationId;
use tracelab_store::{InvestigationStore, PgOptions, PgStore};

fn bin_dir() -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|p| p.join("initdb").exists())
        .collect();
    dirs.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    dirs.pop()
        .expect("PostgreSQL server binaries (deploy/local/backends.sh installs them)")
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

/// Runs a PostgreSQL tool as the cluster owner (`postgres` when we are root).
fn pg(tool: &Path, args: &[&str]) {
    let status = if is_root() {
        Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(tool)
            .args(args)
            .stdout(Stdio::null())
            .status()
    } else {
        Command::new(tool).args(args).stdout(Stdio::null()).status()
    };
    assert!(
        status.is_ok_and(|s| s.success()),
        "{} {args:?} failed",
        tool.display()
    );
}

struct Cluster {
    bin: PathBuf,
    data: String,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Cluster {
    fn create() -> Self {
        let bin = bin_dir();
        let dir = tempfile::tempdir().unwrap();
        if is_root() {
            let ok = Command::new("chown")
                .args(["-R", "postgres:"])
                .arg(dir.path())
                .status();
            assert!(ok.is_ok_and(|s| s.success()), "chown the cluster directory");
        }
        let data = dir.path().join("data").display().to_string();
        pg(
            &bin.join("initdb"),
            &["-D", &data, "-U", "postgres", "-A", "trust", "--no-sync"],
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cluster = Self {
            bin,
            data,
            port,
            _dir: dir,
        };
        cluster.start();
        cluster
    }

    fn ctl(&self, args: &[&str]) {
        let mut all = vec!["-D", &self.data, "-w", "-t", "60"];
        all.extend_from_slice(args);
        pg(&self.bin.join("pg_ctl"), &all);
    }

    fn start(&self) {
        let sock = Path::new(&self.data)
            .parent()
            .unwrap()
            .display()
            .to_string();
        let log = format!("{sock}/postgres.log");
        let opts = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {sock} -c fsync=off",
            self.port
        );
        self.ctl(&["-l", &log, "-o", &opts, "start"]);
    }

    fn stop(&self) {
        self.ctl(&["-m", "fast", "stop"]);
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let pg_ctl = self.bin.join("pg_ctl");
        let args = ["-D", &self.data, "-m", "immediate", "stop"];
        let _ = if is_root() {
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(pg_ctl)
                .args(args)
                .output()
        } else {
            Command::new(pg_ctl).args(args).output()
        };
    }
}

/// Retries `op` on Unavailable/Timeout (what a service's retry layer does).
async fn eventually<T, F, Fut>(mut op: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = tracelab_domain::Result<T>>,
{
    for _ in 0..50 {
        match op().await {
            Ok(v) => return v,
            Err(e) if matches!(e.kind, ErrorKind::Unavailable | ErrorKind::Timeout) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("not a transient error: {e:?}"),
        }
    }
    panic!("still failing after 50 attempts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pool_survives_a_restart() {
    if common::backend("TRACELAB_TEST_POSTGRES").is_none() {
        return;
    }
    let cluster = Cluster::create();
    let options = PgOptions {
        acquire_timeout: Duration::from_secs(2),
        ..PgOptions::default()
    };
    let store = PgStore::connect(&cluster.url(), options).await.unwrap();
    let before = InvestigationId::generate();
    store.create(&before, "/repo", "pytest").await.unwrap();

    // Restart between two operations: the pool's old connections are dead.
    cluster.stop();
    cluster.start();
    let after = InvestigationId::generate();
    match store.create(&after, "/repo", "pytest").await {
        Ok(()) => {}
        Err(e) => {
            assert!(
                matches!(e.kind, ErrorKind::Unavailable | ErrorKind::Timeout),
                "{e:?}"
            );
            eventually(|| store.create(&after, "/repo", "pytest")).await;
        }
    }
    assert_eq!(
        store.list(10).await.unwrap().len(),
        2,
        "data from before the restart is there"
    );

    // While the server is down, operations fail as Unavailable/Timeout ...
    cluster.stop();
    let err = store.state(&before).await.unwrap_err();
    assert!(
        matches!(err.kind, ErrorKind::Unavailable | ErrorKind::Timeout),
        "{err:?}"
    );
    // ... and succeed again once it is back.
    cluster.start();
    let state = eventually(|| store.state(&before)).await;
    assert_eq!(
        state,
        Some(tracelab_domain::state::InvestigationState::Created)
    );
}
