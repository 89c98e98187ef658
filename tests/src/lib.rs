//! A whole fleet on one machine for end-to-end tests: the five service binaries
//! of this package started as processes against the real NATS JetStream and
//! PostgreSQL of `deploy/local/backends.sh` (`TRACELAB_TEST_NATS`,
//! `TRACELAB_TEST_POSTGRES`). Every fleet gets its own subject prefix and
//! database schema, so tests run side by side on one server; each process
//! writes its log to a file that is printed when a test fails.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tracelab_testkit::backends::{TEST_STREAM_BYTES, backend, unique_name};
use tracelab_testkit::ports::free_port;

/// Where the backends are.
#[derive(Debug, Clone)]
pub struct Backends {
    pub nats: String,
    pub postgres: String,
}

/// The backends, or `None` (test skipped — or failed under CI's
/// `TRACELAB_REQUIRE_BACKENDS=1`).
pub fn backends() -> Option<Backends> {
    Some(Backends {
        nats: backend("TRACELAB_TEST_NATS")?,
        postgres: backend("TRACELAB_TEST_POSTGRES")?,
    })
}

#[derive(Debug, Clone)]
pub struct FleetOptions {
    pub verifiers: usize,
    /// Jobs each verifier runs at once (its `concurrency` setting).
    pub verifier_concurrency: usize,
    /// A job not progress-acked for this long goes to another verifier.
    pub ack_wait_seconds: u64,
    pub verification_deadline_seconds: u64,
    /// A TOML settings file for the investigator (`--config`), e.g. its
    /// `[repositories]` map; `--set` flags still win over it.
    pub investigator_config: Option<String>,
    /// `sandbox.kind` of the investigator and the verifiers: `local`,
    /// `hardened` (the services' default) or `docker` (the image of
    /// `deploy/sandbox/build-base-image.sh`).
    pub sandbox: &'static str,
    /// More `fleet.repositories.*` settings for every service (allowed URL
    /// patterns, credentials). Every service already has its own mirror
    /// cache (nothing shared between them) and may name local paths under
    /// the system's temporary folder, where the fixtures live.
    pub repositories: Vec<String>,
    /// More `--set` settings for each verifier (e.g. `repair.mode=llm`).
    pub verifier_settings: Vec<String>,
    /// Environment variables for each verifier (e.g. a `…_FILE` secret).
    pub verifier_env: Vec<(String, String)>,
}

impl Default for FleetOptions {
    fn default() -> Self {
        Self {
            verifiers: 1,
            verifier_concurrency: 1,
            ack_wait_seconds: 5,
            verification_deadline_seconds: 600,
            investigator_config: None,
            sandbox: "local",
            repositories: Vec::new(),
            verifier_settings: Vec::new(),
            verifier_env: Vec::new(),
        }
    }
}

struct Process {
    child: Child,
    log: PathBuf,
    health: String,
    /// How it was started, for [`Fleet::restart`].
    service: String,
    extra: Vec<String>,
    health_port: u16,
}

/// A running fleet. Dropping it kills every process.
pub struct Fleet {
    pub backends: Backends,
    pub prefix: String,
    pub schema: String,
    /// REST API base URL, e.g. `http://127.0.0.1:41234`.
    pub api: String,
    pub grpc: String,
    /// Ingest HTTP base URL (`/v1/ci-failures`, `/v1/logs`).
    pub ingest: String,
    /// Indexer gRPC endpoint (`tracelab.index.v1.Retrieval`).
    pub indexer: String,
    options: FleetOptions,
    processes: BTreeMap<String, Process>,
    logs: tempfile::TempDir,
    http: reqwest::Client,
}

/// This package's service binary `e2e-<name>` (the service crate's `main`,
/// built by this package). Cargo builds a package's
/// binaries before its integration tests, next to their `deps/` folder.
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target directory");
    let path = dir.join(format!("e2e-{name}"));
    assert!(
        path.is_file(),
        "{} is missing: run the tests with `cargo test -p tracelab-e2e`",
        path.display()
    );
    path
}

impl Fleet {
    /// Starts the five services — ingest, indexer, investigator, arbiter and
    /// `options.verifiers` verifiers — and waits until each reports ready.
    pub async fn start(backends: &Backends, options: FleetOptions) -> Fleet {
        tracelab_bus::install_crypto_provider();
        let prefix = unique_name("e2e");
        let mut fleet = Fleet {
            backends: backends.clone(),
            schema: prefix.clone(),
            prefix,
            api: String::new(),
            grpc: String::new(),
            ingest: String::new(),
            indexer: String::new(),
            options: options.clone(),
            processes: BTreeMap::new(),
            logs: tempfile::tempdir().expect("log dir"),
            http: reqwest::Client::new(),
        };
        let rest = free_port();
        let grpc = free_port();
        fleet.api = format!("http://127.0.0.1:{rest}");
        fleet.grpc = format!("http://127.0.0.1:{grpc}");
        fleet.spawn(
            "investigator",
            "investigator",
            &[
                format!("listen=127.0.0.1:{rest}"),
                format!("grpc_listen=127.0.0.1:{grpc}"),
                format!(
                    "verification_deadline_seconds={}",
                    options.verification_deadline_seconds
                ),
                // The tests call the API without tokens (auth has its own tests).
                "allow_unauthenticated=true".into(),
                format!("sandbox.kind={}", options.sandbox),
                "sandbox.allow_local=true".into(),
            ],
            rest,
        );
        let port = free_port();
        fleet.spawn(
            "arbiter",
            "arbiter",
            &[format!("listen=127.0.0.1:{port}"), "sweep_seconds=1".into()],
            port,
        );
        let (ingest, otlp) = (free_port(), free_port());
        fleet.ingest = format!("http://127.0.0.1:{ingest}");
        fleet.spawn(
            "ingest",
            "ingest",
            &[
                format!("listen=127.0.0.1:{ingest}"),
                format!("grpc_listen=127.0.0.1:{otlp}"),
                "allow_unauthenticated=true".into(),
            ],
            ingest,
        );
        let (health, retrieval) = (free_port(), free_port());
        fleet.indexer = format!("http://127.0.0.1:{retrieval}");
        fleet.spawn(
            "indexer",
            "indexer",
            &[
                format!("listen=127.0.0.1:{health}"),
                format!("grpc_listen=127.0.0.1:{retrieval}"),
                "allow_unauthenticated=true".into(),
            ],
            health,
        );
        for i in 1..=options.verifiers {
            fleet.add_verifier(&format!("verifier-{i}"));
        }
        fleet.wait_ready().await;
        fleet
    }

    fn common(&self) -> Vec<String> {
        vec![
            format!("fleet.nats_url={}", self.backends.nats),
            format!("fleet.postgres_url={}", self.backends.postgres),
            format!("fleet.postgres_schema={}", self.schema),
            format!("fleet.subject_prefix={}", self.prefix),
            "fleet.drain_seconds=30".into(),
            "fleet.outbox_relay_seconds=1".into(),
            "fleet.outbox_grace_seconds=2".into(),
            format!("fleet.stream_max_bytes={TEST_STREAM_BYTES}"),
            format!("ack_wait_seconds={}", self.options.ack_wait_seconds),
        ]
    }

    fn spawn(&mut self, name: &str, service: &str, extra: &[String], health_port: u16) {
        let log = self.logs.path().join(format!("{name}.log"));
        // A restarted process appends to the log of the one before it.
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .expect("log file");
        let mut command = Command::new(binary(service));
        if service == "investigator"
            && let Some(toml) = &self.options.investigator_config
        {
            let config = self.logs.path().join("investigator.toml");
            std::fs::write(&config, toml).expect("investigator settings file");
            command.arg("--config").arg(config);
        }
        let repositories = [
            format!(
                "fleet.repositories.cache_dir={}",
                self.logs.path().join(format!("{name}-repos")).display()
            ),
            format!(
                "fleet.repositories.local_roots=[{:?}]",
                std::env::temp_dir().display().to_string()
            ),
        ];
        for setting in self
            .common()
            .iter()
            .chain(&repositories)
            .chain(&self.options.repositories)
            .chain(extra)
        {
            command.arg("--set").arg(setting);
        }
        // The system's interpreters (Debian's python3 with pytest), not a
        // version manager's shims that the developer's PATH may put first.
        if service == "verifier" {
            command.envs(self.options.verifier_env.iter().map(|(k, v)| (k, v)));
        }
        command
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(file);
        let child = command.spawn().expect("start service");
        self.processes.insert(
            name.to_string(),
            Process {
                child,
                log,
                health: format!("http://127.0.0.1:{health_port}"),
                service: service.to_string(),
                extra: extra.to_vec(),
                health_port,
            },
        );
    }

    /// Starts one more verifier named `name`.
    pub fn add_verifier(&mut self, name: &str) {
        let port = free_port();
        let mut extra = vec![
            format!("listen=127.0.0.1:{port}"),
            format!("name={name}"),
            format!("concurrency={}", self.options.verifier_concurrency),
            format!("sandbox.kind={}", self.options.sandbox),
            "sandbox.allow_local=true".into(),
        ];
        extra.extend(self.options.verifier_settings.iter().cloned());
        self.spawn(name, "verifier", &extra, port);
    }

    /// Waits until every process answers `/readyz` with 200.
    pub async fn wait_ready(&mut self) {
        let names: Vec<String> = self.processes.keys().cloned().collect();
        for name in names {
            self.wait_ready_one(&name).await;
        }
    }

    pub async fn wait_ready_one(&mut self, name: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let url = format!("{}/readyz", self.processes[name].health);
            if let Ok(r) = self.http.get(&url).send().await
                && r.status().is_success()
            {
                return;
            }
            if let Ok(Some(status)) = self
                .processes
                .get_mut(name)
                .expect("process")
                .child
                .try_wait()
            {
                panic!(
                    "{name} exited with {status} before it was ready\n{}",
                    self.log_of(name)
                );
            }
            assert!(
                Instant::now() < deadline,
                "{name} not ready after 60 s\n{}",
                self.log_of(name)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `kill -9` of one process.
    pub fn kill(&mut self, name: &str) {
        let p = self.processes.get_mut(name).expect("process");
        let _ = p.child.kill();
        let _ = p.child.wait();
    }

    /// Starts `name` again as it was started (same ports and settings)
    /// after it was killed or terminated, and waits until it is ready.
    pub async fn restart(&mut self, name: &str) {
        let p = self.processes.get_mut(name).expect("process");
        if p.child.try_wait().expect("process status").is_none() {
            panic!("{name} is still running: kill or terminate it first");
        }
        let (service, extra, port) = (p.service.clone(), p.extra.clone(), p.health_port);
        self.spawn(name, &service, &extra, port);
        self.wait_ready_one(name).await;
    }

    /// SIGTERM, then waits for a clean exit; returns the exit status.
    pub fn terminate(&mut self, name: &str) -> std::process::ExitStatus {
        let p = self.processes.get_mut(name).expect("process");
        signal(p.child.id(), "TERM");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(Some(status)) = p.child.try_wait() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "{name} did not stop after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `GET /metrics` of one process (its health listener), as text.
    pub async fn metrics_of(&self, name: &str) -> String {
        let url = format!("{}/metrics", self.processes[name].health);
        let r = self.http.get(&url).send().await.expect("GET /metrics");
        assert!(r.status().is_success(), "{url}: {}", r.status());
        r.text().await.expect("metrics text")
    }

    /// Waits until `name`'s log says it started verifying a job.
    pub async fn wait_until_verifying(&self, name: &str) {
        let started = Instant::now();
        while !self.log_of(name).contains("verifying") {
            assert!(
                started.elapsed() < Duration::from_secs(180),
                "{name} never started verifying\n{}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub fn log_of(&self, name: &str) -> String {
        std::fs::read_to_string(&self.processes[name].log).unwrap_or_default()
    }

    /// Every process's log (for failure messages).
    pub fn logs(&self) -> String {
        self.processes
            .keys()
            .map(|n| {
                let log = self.log_of(n);
                let tail: Vec<&str> = log.lines().rev().take(40).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                format!("----- {n} -----\n{}\n", tail.join("\n"))
            })
            .collect()
    }

    /// This fleet's subjects and streams (as its services created them).
    pub fn topology(&self) -> tracelab_bus::Topology {
        tracelab_bus::Topology::with_prefix(&self.prefix).with_stream_limit(TEST_STREAM_BYTES)
    }

    /// The mirror cache of the process `name` (each process has its own).
    pub fn cache_dir_of(&self, name: &str) -> PathBuf {
        self.logs.path().join(format!("{name}-repos"))
    }

    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// `POST /api/investigations`; returns the new id.
    /// The fleet's store (its own schema), retried for up to 60 s while
    /// PostgreSQL is away (the crash tests restart it). Two connections: a
    /// test reads and writes one statement at a time.
    pub async fn store(&self) -> tracelab_store::PgStore {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let connected = tracelab_store::PgStore::connect(
                &self.backends.postgres,
                tracelab_store::PgOptions {
                    schema: Some(self.schema.clone()),
                    max_connections: 2,
                    ..tracelab_store::PgOptions::default()
                },
            )
            .await;
            match connected {
                Ok(store) => return store,
                Err(e) => {
                    assert!(Instant::now() < deadline, "cannot reach PostgreSQL: {e}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }

    pub async fn submit(&self, body: serde_json::Value) -> String {
        let r = self
            .http
            .post(format!("{}/api/investigations", self.api))
            .json(&body)
            .send()
            .await
            .expect("POST /api/investigations");
        let status = r.status();
        let v: serde_json::Value = r.json().await.expect("JSON");
        assert_eq!(status, 201, "{v}\n{}", self.logs());
        v["id"].as_str().expect("id").to_string()
    }

    pub async fn get(&self, path: &str) -> (u16, serde_json::Value) {
        let r = self
            .http
            .get(format!("{}{path}", self.api))
            .send()
            .await
            .expect("GET");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(serde_json::Value::Null))
    }

    /// A dashboard page (HTML) of the investigator, read with a bearer
    /// token as a script would: its status and body.
    pub async fn page(&self, path: &str, token: &str) -> (u16, String) {
        let r = self
            .http
            .get(format!("{}{path}", self.api))
            .bearer_auth(token)
            .send()
            .await
            .expect("GET page");
        let status = r.status().as_u16();
        (status, r.text().await.unwrap_or_default())
    }

    /// Polls until the investigation leaves the pipeline (WAITING_FOR_REVIEW
    /// or a terminal state); returns its last view.
    pub async fn wait_decided(&self, id: &str, within: Duration) -> serde_json::Value {
        let deadline = Instant::now() + within;
        loop {
            let (status, v) = self.get(&format!("/api/investigations/{id}")).await;
            if status == 200 {
                let state = v["state"].as_str().unwrap_or_default();
                if matches!(
                    state,
                    "WAITING_FOR_REVIEW" | "APPROVED" | "REJECTED" | "FAILED" | "BLOCKED"
                ) {
                    return v;
                }
            }
            assert!(
                Instant::now() < deadline,
                "investigation {id} not decided within {within:?}: {v}\n{}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("{}", self.logs());
        }
        for p in self.processes.values_mut() {
            let _ = p.child.kill();
            let _ = p.child.wait();
        }
        // Its streams go too: each holds a reservation on the server's file
        // store, and a server the suite runs against for long would run out.
        // (A thread with its own runtime: this may run inside a test's.)
        let (nats, topology) = (self.backends.nats.clone(), self.topology());
        let deleted = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(async {
                let bus = tracelab_bus::JetStreamBus::connect(&nats, topology)
                    .await
                    .ok()?;
                bus.delete_streams().await.ok()
            })
        })
        .join();
        if !matches!(deleted, Ok(Some(()))) {
            eprintln!("could not delete the streams of fleet {}", self.prefix);
        }
    }
}

/// Runs `deploy/local/backends.sh ARG` (restart-nats, crash-postgres, …)
/// and fails the test when it fails.
pub fn backends_script(arg: &str) {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/local/backends.sh");
    let status = Command::new(script).arg(arg).status().expect("backends.sh");
    assert!(status.success(), "backends.sh {arg} failed");
}

/// Sends `sig` (a name: TERM, STOP, CONT) with the `kill` command.
pub fn signal(pid: u32, sig: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status();
}

/// The JUnit XML of a real pytest run of `test_app.py` in `repo` (the
/// calculator scenarios), which must report one failure. Debian's python3
/// with python3-pytest, as the services' sandboxes use.
pub fn pytest_junit(repo: &std::path::Path) -> String {
    let out = tempfile::tempdir().expect("temp dir");
    let xml = out.path().join("junit.xml");
    let run = Command::new("/usr/bin/python3")
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml"])
        .arg(&xml)
        .arg("test_app.py")
        .current_dir(repo)
        .output()
        .expect("python3 -m pytest (Debian's python3-pytest)");
    // Exit code 1 is also what python3 says when pytest is missing.
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        !stderr.contains("No module named pytest"),
        "Debian's python3 has no pytest (apt-get install python3-pytest)"
    );
    assert_eq!(
        run.status.code(),
        Some(1),
        "pytest should report one failure: {}{stderr}",
        String::from_utf8_lossy(&run.stdout)
    );
    std::fs::read_to_string(xml).expect("the JUnit report")
}

/// The `tracelab` binary cargo built beside the test binaries.
pub fn tracelab_binary() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let path = exe
        .parent()
        .and_then(|p| p.parent())
        .expect("target dir")
        .join("tracelab");
    assert!(
        path.is_file(),
        "{} is missing: build it first (`cargo build -p tracelab`) or run `cargo test --workspace`",
        path.display()
    );
    path
}

/// `tracelab [extra…] --quiet investigate --repo REPO --test TEST --format
/// json --parallel 2` with `env` added; the JSON report it printed.
pub fn investigate_with_cli(
    extra: &[&str],
    env: &[(&str, &std::path::Path)],
    repo: &str,
    test: &str,
) -> serde_json::Value {
    let mut command = Command::new(tracelab_binary());
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command
        .args(extra)
        .args(["--quiet", "investigate", "--repo", repo, "--test", test])
        .args(["--format", "json", "--parallel", "2"])
        .output()
        .expect("run tracelab");
    assert!(
        out.status.success(),
        "tracelab {extra:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON report on stdout")
}
