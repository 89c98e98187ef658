//! Acceptance tests against the real Docker engine.
//!
//! Set `TRACELAB_TEST_DOCKER=1` (or to a unix socket path) to run them; without
//! it they skip with a printed reason, unless `TRACELAB_REQUIRE_BACKENDS=1`,
//! which turns the skip into a failure. They need the local image
//! `tracelab-sandbox-base:bookworm` (`deploy/sandbox/build-base-image.sh`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tracelab_domain::ErrorKind;
use tracelab_sandbox_docker::{
    CommandSpec, DockerConfig, DockerSandbox, DockerSandboxProvider, Reap, Sandbox,
    SandboxProvider, run_parallel,
};

/// The provider for these tests, or `None` (skip) with the reason printed.
async fn provider(test: &str, config: DockerConfig) -> Option<DockerSandboxProvider> {
    let required = std::env::var("TRACELAB_REQUIRE_BACKENDS").is_ok_and(|v| v == "1");
    let setting = match std::env::var("TRACELAB_TEST_DOCKER") {
        Ok(value) if !value.is_empty() && value != "0" => value,
        _ => {
            assert!(
                !required,
                "{test}: TRACELAB_TEST_DOCKER is unset but TRACELAB_REQUIRE_BACKENDS=1"
            );
            eprintln!(
                "skipping {test}: set TRACELAB_TEST_DOCKER=1 (or a unix socket path) to run Docker tests"
            );
            return None;
        }
    };
    let mut config = config;
    if let Some(path) = setting
        .strip_prefix("unix://")
        .or(setting.starts_with('/').then_some(setting.as_str()))
    {
        config.socket = PathBuf::from(path);
    }
    match DockerSandboxProvider::connect(config).await {
        Ok(provider) => Some(provider),
        Err(error) => {
            panic!("{test}: TRACELAB_TEST_DOCKER is set but Docker is not usable: {error}")
        }
    }
}

fn label(test: &str) -> String {
    format!("test-{test}-{}", std::process::id())
}

fn small() -> DockerConfig {
    DockerConfig {
        memory_mib: 256,
        tmpfs_mib: 64,
        pids_limit: 128,
        ..DockerConfig::default()
    }
}

fn worktree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp worktree");
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

fn spec(argv: &[&str], timeout: Duration) -> CommandSpec {
    CommandSpec {
        argv: argv.iter().map(|s| s.to_string()).collect(),
        env: Vec::new(),
        timeout,
        output_limit: 64 * 1024,
    }
}

fn python(script: &str) -> CommandSpec {
    spec(&["python3", script], Duration::from_secs(20))
}

/// Closes the sandboxes and asserts nothing labelled for this test is left.
async fn finish(provider: &DockerSandboxProvider, label: &str, sandboxes: &[&dyn Sandbox]) {
    for sandbox in sandboxes {
        sandbox.close().await.expect("close");
        sandbox.close().await.expect("close is idempotent");
    }
    let left = provider
        .managed_containers(Some(label))
        .await
        .expect("list containers");
    assert!(left.is_empty(), "containers left behind: {left:?}");
}

/// How many processes the command user has in the container (the probe included).
async fn user_processes(sandbox: &DockerSandbox) -> usize {
    let probe = "import os\nn = 0\nfor p in os.listdir('/proc'):\n    try:\n        n += p.isdigit() and os.stat('/proc/' + p).st_uid == os.getuid()\n    except OSError:\n        pass\nprint(n)\n";
    let result = sandbox
        .exec(&spec(&["python3", "-c", probe], Duration::from_secs(10)))
        .await
        .unwrap();
    assert!(result.passed(), "{result:?}");
    result.output.trim().parse().unwrap()
}

#[tokio::test]
async fn the_docker_sandbox_conforms() {
    let mut config = small();
    config
        .allowlist
        .programs
        .push(tracelab_sandbox::conformance::MISSING_PROGRAM.into());
    let Some(provider) = provider("the_docker_sandbox_conforms", config).await else {
        return;
    };
    let label = label("conformance");
    tracelab_sandbox::conformance::run(&provider, &label).await;
    finish(&provider, &label, &[]).await;
}

#[tokio::test]
async fn passing_and_failing_tests() {
    let Some(provider) = provider("passing_and_failing_tests", small()).await else {
        return;
    };
    let label = label("pass-fail");
    let dir = worktree(&[
        (
            "test_pass.py",
            "import os\nprint('ok', os.getuid(), os.getcwd(), os.environ['HOME'], os.environ['TZ'], os.environ.get('SEED'))\n",
        ),
        (
            "test_fail.py",
            "import sys\nprint('about to fail', file=sys.stderr)\nassert 1 + 1 == 3, 'arithmetic'\n",
        ),
        (
            "suite/test_math.py",
            "def test_add():\n    assert 1 + 1 == 2\n\ndef test_broken():\n    assert 1 + 1 == 3\n",
        ),
    ]);
    let sandbox = provider.open_docker(dir.path(), &label).await.unwrap();
    assert_eq!(
        sandbox.describe(),
        format!("docker@{}", provider.image_id())
    );
    assert!(sandbox.describe().starts_with("docker@sha256:"));

    let mut pass = python("test_pass.py");
    pass.env.push(("SEED".into(), "42".into()));
    let result = sandbox.exec(&pass).await.unwrap();
    assert!(result.passed(), "{result:?}");
    assert_eq!(result.output, "ok 10001 /work /tmp UTC 42\n");

    let result = sandbox.exec(&python("test_fail.py")).await.unwrap();
    assert_eq!(result.exit_code, Some(1));
    assert!(result.blocked.is_none());
    assert!(
        result.output.contains("about to fail")
            && result.output.contains("AssertionError: arithmetic")
    );

    // The real pytest runs too, and the worktree is writable (its cache).
    let result = sandbox
        .exec(&spec(
            &["python3", "-m", "pytest", "-q", "suite"],
            Duration::from_secs(30),
        ))
        .await
        .unwrap();
    assert_eq!(result.exit_code, Some(1), "{}", result.output);
    assert!(
        result.output.contains("1 failed, 1 passed"),
        "{}",
        result.output
    );
    assert!(dir.path().join(".pytest_cache").is_dir());

    // The engine writes as root on the host between commands; the command can still write.
    std::fs::create_dir(dir.path().join("generated")).unwrap();
    std::fs::write(dir.path().join("generated/data.txt"), "root wrote this\n").unwrap();
    let append = "open('generated/data.txt', 'a').write('sandbox too\\n'); open('generated/new.txt', 'w').write('x')";
    let result = sandbox
        .exec(&spec(&["python3", "-c", append], Duration::from_secs(10)))
        .await
        .unwrap();
    assert!(result.passed(), "{result:?}");

    // A program that is not allowlisted never reaches Docker; a missing one is blocked.
    let refused = sandbox
        .exec(&spec(&["bash", "-c", "id"], Duration::from_secs(5)))
        .await
        .unwrap_err();
    assert_eq!(refused.kind, ErrorKind::InvalidArgument);
    let missing = sandbox
        .exec(&spec(&["cargo", "test"], Duration::from_secs(5)))
        .await
        .unwrap();
    assert_eq!(missing.exit_code, None);
    assert_eq!(
        missing.blocked.as_deref(),
        Some("program \"cargo\" not found in the sandbox image"),
        "{missing:?}"
    );

    finish(&provider, &label, &[&sandbox]).await;
    let closed = sandbox.exec(&python("test_pass.py")).await.unwrap_err();
    assert_eq!(closed.kind, ErrorKind::Conflict);
}

#[tokio::test]
async fn flaky_test_reruns_over_several_containers() {
    let Some(provider) = provider("flaky_test_reruns_over_several_containers", small()).await
    else {
        return;
    };
    let label = label("flaky");
    let dir = worktree(&[(
        "test_flaky.py",
        "import random, sys\nsys.exit(1 if random.random() < 0.3 else 0)\n",
    )]);
    let mut sandboxes: Vec<Box<dyn Sandbox>> = Vec::new();
    for _ in 0..3 {
        sandboxes.push(provider.open(dir.path(), &label).await.unwrap());
    }
    let started = Instant::now();
    let results = run_parallel(&sandboxes, &python("test_flaky.py"), 50)
        .await
        .unwrap();
    let elapsed = started.elapsed();
    assert_eq!(results.len(), 50);
    assert!(
        results
            .iter()
            .all(|r| r.blocked.is_none() && matches!(r.exit_code, Some(0 | 1))),
        "{results:?}"
    );
    let failures = results.iter().filter(|r| r.exit_code == Some(1)).count();
    // Binomial(50, 0.3): mean 15, sd 3.2; 4..=30 is more than 3 sd either side.
    assert!(
        (4..=30).contains(&failures),
        "{failures} failures in 50 runs"
    );
    eprintln!("50 flaky re-runs over 3 containers: {failures} failures in {elapsed:?}");
    let refs: Vec<&dyn Sandbox> = sandboxes.iter().map(|s| s.as_ref()).collect();
    finish(&provider, &label, &refs).await;
}

#[tokio::test]
async fn network_is_unreachable() {
    let Some(provider) = provider("network_is_unreachable", small()).await else {
        return;
    };
    let label = label("network");
    let script = r#"import socket
failures = []
try:
    socket.create_connection(("1.1.1.1", 53), timeout=3)
    print("CONNECTED")
except OSError as e:
    failures.append(f"connect: {e}")
try:
    socket.getaddrinfo("example.com", 443)
    print("RESOLVED")
except OSError as e:
    failures.append(f"dns: {e}")
print("\n".join(failures))
raise SystemExit(0 if len(failures) == 2 else 1)
"#;
    let dir = worktree(&[("test_net.py", script)]);
    let sandbox = provider.open_docker(dir.path(), &label).await.unwrap();
    let result = sandbox.exec(&python("test_net.py")).await.unwrap();
    assert!(result.passed(), "{result:?}");
    assert!(
        result
            .output
            .contains("connect: [Errno 101] Network is unreachable"),
        "{}",
        result.output
    );
    assert!(result.output.contains("dns:"), "{}", result.output);
    finish(&provider, &label, &[&sandbox]).await;
}

#[tokio::test]
async fn fork_bomb_is_stopped_by_the_pids_limit() {
    let config = DockerConfig {
        pids_limit: 64,
        ..small()
    };
    let Some(provider) = provider("fork_bomb_is_stopped_by_the_pids_limit", config).await else {
        return;
    };
    let label = label("forkbomb");
    let bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError as e:\n        print('fork failed:', e, flush=True)\n        os._exit(3)\n";
    let dir = worktree(&[("test_bomb.py", bomb)]);
    let sandbox = provider.open_docker(dir.path(), &label).await.unwrap();
    let started = Instant::now();
    let result = sandbox
        .exec(&spec(&["python3", "test_bomb.py"], Duration::from_secs(20)))
        .await
        .unwrap();
    // The limit plus the kill retries (each an exec that cannot start while
    // the pids are exhausted) and a container restart: bounded, not fast.
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "the command did not end"
    );
    assert!(!result.passed(), "{result:?}");
    // Either it collapsed by itself (fork failed everywhere) or the limit killed it.
    assert!(
        result.output.contains("Resource temporarily unavailable") || result.blocked.is_some(),
        "{result:?}"
    );
    // Nothing of it survives, and the sandbox still works.
    assert_eq!(user_processes(&sandbox).await, 1);
    finish(&provider, &label, &[&sandbox]).await;
}

#[tokio::test]
async fn memory_hog_is_killed_and_reported() {
    let config = DockerConfig {
        memory_mib: 128,
        tmpfs_mib: 16,
        ..small()
    };
    let Some(provider) = provider("memory_hog_is_killed_and_reported", config).await else {
        return;
    };
    let label = label("memory");
    let dir = worktree(&[(
        "test_hog.py",
        "chunks = []\nwhile True:\n    chunks.append(bytearray(16 * 1024 * 1024))\n",
    )]);
    let sandbox = provider.open_docker(dir.path(), &label).await.unwrap();
    let result = sandbox.exec(&python("test_hog.py")).await.unwrap();
    assert_eq!(
        result.blocked.as_deref(),
        Some("killed: memory limit 128 MiB exceeded (exit status 137)"),
        "{result:?}"
    );
    assert_eq!(result.exit_code, None);
    // The container survives its command's death and stays usable.
    let after = sandbox
        .exec(&spec(
            &["python3", "-c", "print('alive')"],
            Duration::from_secs(10),
        ))
        .await
        .unwrap();
    assert!(after.passed() && after.output == "alive\n", "{after:?}");
    finish(&provider, &label, &[&sandbox]).await;
}

#[tokio::test]
async fn only_the_worktree_and_tmp_are_writable() {
    let Some(provider) = provider("only_the_worktree_and_tmp_are_writable", small()).await else {
        return;
    };
    let label = label("readonly");
    let script = r#"import os
for path in ["/etc/x", "/usr/x", "/x", "/home/sandbox/x", "/work/.git/config", "/work/.git/hooks/post-checkout"]:
    try:
        open(path, "w").write("x")
        print("WROTE", path)
    except OSError as e:
        print("refused", path, e.strerror)
try:
    os.rename("/work/.git", "/work/git-moved")
    print("MOVED .git")
except OSError as e:
    print("refused rename", e.strerror)
open("/work/out.txt", "w").write("ok")
open("/tmp/scratch", "w").write("ok")
print("caps", [l for l in open("/proc/self/status") if l.startswith(("CapEff", "NoNewPrivs"))])
"#;
    let dir = worktree(&[
        ("test_write.py", script),
        (".git/config", "[core]\n"),
        (".git/hooks/.keep", ""),
    ]);
    let sandbox = provider.open_docker(dir.path(), &label).await.unwrap();
    let result = sandbox.exec(&python("test_write.py")).await.unwrap();
    assert!(result.passed(), "{result:?}");
    assert!(
        !result.output.contains("WROTE") && !result.output.contains("MOVED"),
        "{}",
        result.output
    );
    assert!(
        result
            .output
            .contains("refused /etc/x Read-only file system"),
        "{}",
        result.output
    );
    assert!(
        result
            .output
            .contains("refused /work/.git/config Read-only file system"),
        "{}",
        result.output
    );
    assert!(
        result.output.contains("CapEff:\\t0000000000000000"),
        "{}",
        result.output
    );
    assert!(
        result.output.contains("NoNewPrivs:\\t1"),
        "{}",
        result.output
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.txt")).unwrap(),
        "ok"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!dir.path().join(".git/hooks/post-checkout").exists());
    finish(&provider, &label, &[&sandbox]).await;
}

#[tokio::test]
async fn hanging_test_is_killed_at_the_limit() {
    let Some(provider) = provider("hanging_test_is_killed_at_the_limit", small()).await else {
        return;
    };
    let label = label("hang");
    // A child in its own session that ignores SIGTERM, and a parent that never ends.
    let script = r#"import subprocess, time
subprocess.Popen(["python3", "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"], start_new_session=True)
print("hanging", flush=True)
time.sleep(600)
"#;
    let dir = worktree(&[("test_hang.py", script)]);
    let sandbox = provider.open_docker(dir.path(), &label).await.unwrap();
    let started = Instant::now();
    let result = sandbox
        .exec(&spec(&["python3", "test_hang.py"], Duration::from_secs(10)))
        .await
        .unwrap();
    let elapsed = started.elapsed();
    assert_eq!(
        result.blocked.as_deref(),
        Some("timed out after 10 s"),
        "{result:?}"
    );
    assert_eq!(result.exit_code, None);
    // Ten seconds is ample for python to start under load; the upper bound
    // only proves the command was stopped, not left to run its 600 s.
    assert!(result.output.contains("hanging"), "{result:?}");
    assert!(
        elapsed >= Duration::from_secs(10) && elapsed < Duration::from_secs(60),
        "{elapsed:?}"
    );
    assert_eq!(
        user_processes(&sandbox).await,
        1,
        "the detached child must be gone too"
    );
    finish(&provider, &label, &[&sandbox]).await;
}

#[tokio::test]
async fn leftovers_are_reaped_and_dropped_sandboxes_removed() {
    let Some(provider) = provider(
        "leftovers_are_reaped_and_dropped_sandboxes_removed",
        small(),
    )
    .await
    else {
        return;
    };
    let label = label("reap");
    let dir = worktree(&[]);
    // A sandbox nobody closes (as after a crash) is found by its label.
    let leaked = provider
        .open_docker(dir.path(), &format!("{label}-leaked"))
        .await
        .unwrap();
    std::mem::forget(leaked);
    assert_eq!(
        provider
            .managed_containers(Some(&label))
            .await
            .unwrap()
            .len(),
        1
    );
    // Its owner (this process) is alive: not an orphan.
    provider.reap(Reap::Orphans).await.unwrap();
    assert_eq!(
        provider
            .managed_containers(Some(&label))
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        provider
            .reap(Reap::LabelPrefix(label.clone()))
            .await
            .unwrap(),
        1
    );
    // Dropping without close removes the container in the background.
    let dropped = provider
        .open_docker(dir.path(), &format!("{label}-dropped"))
        .await
        .unwrap();
    drop(dropped);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !provider
        .managed_containers(Some(&label))
        .await
        .unwrap()
        .is_empty()
    {
        assert!(Instant::now() < deadline, "dropped sandbox was not removed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    finish(&provider, &label, &[]).await;
}

#[tokio::test]
async fn repository_recipe_is_built_once_and_reused() {
    let Some(provider) = provider("repository_recipe_is_built_once_and_reused", small()).await
    else {
        return;
    };
    let label = label("recipe");
    let context = worktree(&[
        (
            "ci/sandbox.Dockerfile",
            "FROM tracelab-sandbox-base:bookworm\nCOPY ci/marker.txt /opt/tracelab-marker.txt\n",
        ),
        ("ci/marker.txt", "built from the repository recipe\n"),
    ]);
    let first = provider
        .with_recipe(context.path(), "ci/sandbox.Dockerfile")
        .await
        .unwrap();
    assert_ne!(first.image_id(), provider.image_id());
    assert!(first.config().image.starts_with("tracelab-sandbox-recipe:"));
    let started = Instant::now();
    let again = provider
        .with_recipe(context.path(), "ci/sandbox.Dockerfile")
        .await
        .unwrap();
    assert_eq!(again.image_id(), first.image_id());
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the recipe was rebuilt"
    );

    let dir = worktree(&[]);
    let sandbox = first.open_docker(dir.path(), &label).await.unwrap();
    assert_eq!(sandbox.describe(), format!("docker@{}", first.image_id()));
    let read = spec(
        &[
            "python3",
            "-c",
            "print(open('/opt/tracelab-marker.txt').read(), end='')",
        ],
        Duration::from_secs(10),
    );
    let result = sandbox.exec(&read).await.unwrap();
    assert_eq!(
        result.output, "built from the repository recipe\n",
        "{result:?}"
    );

    let pulling = worktree(&[("Dockerfile", "FROM python:3.12-slim\n")]);
    let refused = provider
        .with_recipe(pulling.path(), "Dockerfile")
        .await
        .unwrap_err();
    assert_eq!(refused.kind, ErrorKind::InvalidArgument);
    assert!(
        refused.message.contains("images cannot be pulled"),
        "{refused}"
    );
    finish(&first, &label, &[&sandbox]).await;
}

#[tokio::test]
async fn missing_daemon_is_unavailable() {
    let config = DockerConfig {
        socket: Path::new("/nonexistent/docker.sock").to_path_buf(),
        ..DockerConfig::default()
    };
    let error = DockerSandboxProvider::connect(config).await.unwrap_err();
    assert_eq!(error.kind, ErrorKind::Unavailable, "{error}");
}

#[tokio::test]
async fn linked_worktree_git_file_is_read_only() {
    let Some(provider) = provider("linked_worktree_git_file_is_read_only", small()).await else {
        return;
    };
    let label = label("linked");
    let mut repo = tracelab_testkit::FixtureRepo::new();
    repo.commit("init", &[("app.py", "print('hi')\n")]);
    let linked = repo.path().join("linked");
    repo.git(&["worktree", "add", "-q", linked.to_str().unwrap()]);
    assert!(linked.join(".git").is_file());
    let sandbox = provider.open_docker(&linked, &label).await.unwrap();
    let script = "try:\n    open('/work/.git', 'w').write('gitdir: /tmp/evil')\n    print('WROTE')\nexcept OSError as e:\n    print('refused', e.strerror)\n";
    let result = sandbox
        .exec(&spec(&["python3", "-c", script], Duration::from_secs(10)))
        .await
        .unwrap();
    assert_eq!(
        result.output, "refused Read-only file system\n",
        "{result:?}"
    );
    assert!(
        std::fs::read_to_string(linked.join(".git"))
            .unwrap()
            .starts_with("gitdir: /")
    );
    // The engine's root git still works in the handed-over worktree.
    tracelab_testkit::git(&linked, &["-c", "safe.directory=*", "status", "--short"]);
    finish(&provider, &label, &[&sandbox]).await;
}

/// The explicit seccomp profile is in force in every command, and it
/// refuses what it says it refuses while ordinary work (threads, child
/// processes) still runs; `nofile` is the configured limit.
#[tokio::test]
async fn the_seccomp_profile_and_the_file_limit_hold() {
    let config = DockerConfig {
        open_files: 512,
        ..small()
    };
    let Some(provider) = provider("the_seccomp_profile_and_the_file_limit_hold", config).await
    else {
        return;
    };
    let label = label("seccomp");
    let script = r#"import ctypes, errno, os, resource, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
def refused(name, number, *args):
    result = libc.syscall(number, *args)
    code = ctypes.get_errno()
    print(f"{name}: {'refused ' + errno.errorcode.get(code, str(code)) if result == -1 else 'ALLOWED'}")
status = open("/proc/self/status").read()
print("seccomp mode:", [l.split()[1] for l in status.splitlines() if l.startswith("Seccomp:")][0])
refused("unshare", 272, 0x10000000)        # CLONE_NEWUSER
refused("keyctl", 250, 0)
refused("ptrace", 101, 0, 0, 0, 0)         # PTRACE_TRACEME
refused("io_uring_setup", 425, 1, 0)
refused("bpf", 321, 0, 0, 0)
refused("clone3", 435, 0, 0)
print("nofile:", resource.getrlimit(resource.RLIMIT_NOFILE))
t = threading.Thread(target=lambda: None); t.start(); t.join()
print("child:", subprocess.run(["true"]).returncode)
"#;
    let dir = worktree(&[("probe.py", script)]);
    let sandbox = provider.open_docker(dir.path(), &label).await.unwrap();
    let result = sandbox.exec(&python("probe.py")).await.unwrap();
    assert!(result.passed(), "{result:?}");
    let out = &result.output;
    for line in [
        "seccomp mode: 2",
        "unshare: refused EPERM",
        "keyctl: refused EPERM",
        "ptrace: refused EPERM",
        "io_uring_setup: refused EPERM",
        "bpf: refused EPERM",
        "clone3: refused ENOSYS",
        "nofile: (512, 512)",
        "child: 0",
    ] {
        assert!(out.contains(line), "missing {line:?} in:\n{out}");
    }
    finish(&provider, &label, &[&sandbox]).await;
}

/// gVisor: where the engine has the `runsc` runtime registered, a sandbox
/// runs under it (its kernel answers, not the host's). Skips, saying so,
/// where it is not registered: gVisor is optional.
#[tokio::test]
async fn gvisor_runs_the_sandbox_where_the_engine_has_runsc() {
    let config = DockerConfig {
        runtime: Some("runsc".into()),
        ..small()
    };
    let Some(plain) = provider("gvisor", small()).await else {
        return;
    };
    if !plain.runtimes().await.unwrap().iter().any(|r| r == "runsc") {
        eprintln!("skipping gvisor: the Docker engine has no runsc runtime registered");
        let refused = DockerSandboxProvider::connect(DockerConfig {
            socket: plain.config().socket.clone(),
            ..config
        })
        .await
        .expect_err("a runtime the engine lacks is refused at connect");
        assert!(refused.message.contains("runsc"), "{refused}");
        return;
    }
    let provider_with_runsc = |config: DockerConfig| {
        let socket = plain.config().socket.clone();
        async move {
            DockerSandboxProvider::connect(DockerConfig { socket, ..config })
                .await
                .unwrap()
        }
    };
    let provider = provider_with_runsc(config).await;
    let label = label("gvisor");
    let dir = worktree(&[("probe.py", "print(open('/proc/version').read())\n")]);
    let sandbox = provider.open_docker(dir.path(), &label).await.unwrap();
    let result = sandbox.exec(&python("probe.py")).await.unwrap();
    assert!(result.passed(), "{result:?}");
    assert!(
        result.output.contains("gVisor") || result.output.contains("4.4.0"),
        "{}",
        result.output
    );
    finish(&provider, &label, &[&sandbox]).await;
}
