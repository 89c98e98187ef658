//! Hostile commands against the hardened local sandbox: real processes, no mocks.
//!
//! Every case runs under each mechanism this host offers — bubblewrap,
//! `unshare`, and neither (uid switch and limits only) — and asserts what
//! that mechanism's [`Guarantees`] promise: blocked where they say so, and,
//! so that a claim cannot be hollow, reached where they say it is not in
//! force. Where it is harmless the same command also runs under
//! `Isolation::None` to show the control is what makes the difference.
//!
//! A missing mechanism is a skip with its reason, and a failure when
//! `TRACELAB_REQUIRE_BACKENDS=1` (CI installs `bubblewrap`; `unshare`,
//! `setpriv` and `prlimit` come with util-linux). Python programs run from
//! the worktree as files or with `-c`: `-c` is refused only for *requested*
//! commands (`Allowlist::parse`), which case 3 checks.

use std::collections::BTreeSet;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, Instant};
use tracelab_domain::ports::{CommandResult, CommandSpec, Sandbox, SandboxProvider};
use tracelab_sandbox::{
    FsView, Guarantees, HardenedConfig, Isolation, LocalConfig, LocalSandboxProvider, Mechanism,
};

const SECRET: &str = "hunter2-tracelab-fake-secret";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Bwrap,
    Unshare,
    /// No namespaces: `setpriv` and `prlimit` only.
    Bare,
}

const MODES: [Mode; 3] = [Mode::Bwrap, Mode::Unshare, Mode::Bare];

fn required() -> bool {
    std::env::var("TRACELAB_REQUIRE_BACKENDS").is_ok_and(|v| v == "1")
}

fn local_config() -> LocalConfig {
    // Debian's interpreters (python3-pytest), not a toolchain in the
    // service user's home, which the sandbox hides.
    LocalConfig {
        path: "/usr/local/bin:/usr/bin:/bin".into(),
        ..LocalConfig::default()
    }
}

/// A provider using exactly `mode`, or `None` (a skip) when this host lacks it.
fn hardened(mode: Mode, tweak: impl FnOnce(&mut HardenedConfig)) -> Option<LocalSandboxProvider> {
    let mut config = HardenedConfig {
        mechanisms: match mode {
            Mode::Bwrap => vec![Mechanism::Bwrap],
            Mode::Unshare => vec![Mechanism::Unshare],
            Mode::Bare => vec![],
        },
        require_namespaces: mode != Mode::Bare,
        ..HardenedConfig::default()
    };
    tweak(&mut config);
    match LocalSandboxProvider::with_isolation(local_config(), Isolation::Hardened(config)) {
        Ok(p) => Some(p),
        Err(e) => {
            let why = format!("{mode:?} is not available here: {e}");
            assert!(
                !required(),
                "TRACELAB_REQUIRE_BACKENDS=1 but {why} (install bubblewrap; run as root or allow user namespaces)"
            );
            eprintln!("skipped {mode:?}: {why}");
            None
        }
    }
}

fn spec(argv: &[&str], timeout: Duration) -> CommandSpec {
    CommandSpec {
        argv: argv.iter().map(|s| s.to_string()).collect(),
        env: vec![],
        timeout,
        output_limit: 64 * 1024,
    }
}

async fn run(sb: &dyn Sandbox, argv: &[&str]) -> CommandResult {
    sb.exec(&spec(argv, Duration::from_secs(60))).await.unwrap()
}

async fn open(provider: &LocalSandboxProvider, dir: &Path) -> Box<dyn Sandbox> {
    provider.open(dir, "hostile").await.unwrap()
}

fn unhardened() -> LocalSandboxProvider {
    LocalSandboxProvider::new(local_config())
}

/// A sleeping process holding a secret in its environment: the service's
/// stand-in (`cargo test`'s own environment holds nothing secret).
struct SecretHolder(std::process::Child);

impl SecretHolder {
    fn start() -> Self {
        let child = std::process::Command::new("sleep")
            .arg("120")
            .env(
                "TRACELAB_DATABASE_URL",
                format!("postgres://svc:{SECRET}@db/x"),
            )
            .spawn()
            .unwrap();
        Self(child)
    }
}

impl Drop for SecretHolder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Live (not zombie) processes whose command line contains `marker`.
fn live_with_marker(marker: &str) -> Vec<i32> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for e in entries.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if !String::from_utf8_lossy(&cmdline).contains(marker) {
            continue;
        }
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z'))
            || stat.is_empty()
        {
            continue;
        }
        found.push(pid);
    }
    found
}

/// Waits (bounded) until no live process carries `marker`; returns the leftovers.
async fn leftovers(marker: &str) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let live = live_with_marker(marker);
        if live.is_empty() || Instant::now() > deadline {
            return live;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

// ---------------------------------------------------------------- 1

const READ_ENVIRON: &str = r#"
import sys
for pid in sys.argv[1:]:
    try:
        data = open(f"/proc/{pid}/environ", "rb").read()
        print(pid, "READ", "SECRET" if b"hunter2" in data else "clean")
    except Exception as e:
        print(pid, "DENIED", type(e).__name__)
try:
    print("init", open("/proc/1/cmdline", "rb").read().split(b"\0")[0].decode())
except Exception as e:
    print("init", "DENIED", type(e).__name__)
"#;

#[tokio::test]
async fn proc_environ_of_init_of_the_service_and_of_its_children_is_out_of_reach() {
    let holder = SecretHolder::start();
    let helper = holder.0.id().to_string();
    let service = std::process::id().to_string();
    let host_init = String::from_utf8_lossy(&std::fs::read("/proc/1/cmdline").unwrap())
        .split('\0')
        .next()
        .unwrap_or_default()
        .to_string();
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "environ.py", READ_ENVIRON);
    let argv = [
        "python3",
        "environ.py",
        "1",
        helper.as_str(),
        service.as_str(),
    ];

    // Without isolation the secret is right there: the control matters.
    let r = run(&*open(&unhardened(), dir.path()).await, &argv).await;
    assert!(
        r.output.contains(&format!("{helper} READ SECRET")),
        "unhardened: {r:?}"
    );

    for mode in MODES {
        let Some(provider) = hardened(mode, |_| {}) else {
            continue;
        };
        let g = provider.guarantees();
        let r = run(&*open(&provider, dir.path()).await, &argv).await;
        assert!(r.passed(), "{mode:?}: {r:?}");
        assert!(
            !r.output.contains("SECRET"),
            "{mode:?}: a secret leaked: {}",
            r.output
        );
        if g.processes {
            // Its own PID namespace: pid 1 is the sandbox's init, not the host's.
            let init = r.output.lines().find(|l| l.starts_with("init ")).unwrap();
            assert_ne!(init, format!("init {host_init}"), "{mode:?}: {}", r.output);
            assert!(
                init.contains("bwrap") || init.contains("sh") || init.contains("python3"),
                "{mode:?}: {init}"
            );
        } else {
            // Same PID namespace: only the uid switch keeps root's environments unreadable.
            assert!(g.user.is_some(), "{mode:?}: nothing protects /proc");
            for pid in ["1", &helper, &service] {
                assert!(
                    r.output.contains(&format!("{pid} DENIED")),
                    "{mode:?} pid {pid}: {}",
                    r.output
                );
            }
        }
    }
}

// ---------------------------------------------------------------- 2

const CONNECT: &str = r#"
import socket, sys
for host, port in [("127.0.0.1", int(sys.argv[1])), ("192.0.2.1", 80)]:
    try:
        socket.create_connection((host, port), timeout=3).close()
        print(host, "CONNECTED")
    except OSError as e:
        print(host, "FAILED", e.errno, type(e).__name__)
"#;

#[tokio::test]
async fn network_calls_out_are_refused() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "connect.py", CONNECT);
    let argv = ["python3", "connect.py", port.as_str()];

    let r = run(&*open(&unhardened(), dir.path()).await, &argv).await;
    assert!(
        r.output.contains("127.0.0.1 CONNECTED"),
        "unhardened: {r:?}"
    );

    for mode in MODES {
        let Some(provider) = hardened(mode, |_| {}) else {
            continue;
        };
        let r = run(&*open(&provider, dir.path()).await, &argv).await;
        assert!(r.passed(), "{mode:?}: {r:?}");
        if provider.guarantees().network {
            // Its own loopback has no listener (111; 101 where `unshare` had
            // no `ip` to bring loopback up); there is no route out at all.
            assert!(
                r.output.contains("127.0.0.1 FAILED 111")
                    || r.output.contains("127.0.0.1 FAILED 101"),
                "{mode:?}: {}",
                r.output
            );
            assert!(
                r.output.contains("192.0.2.1 FAILED 101"),
                "{mode:?}: {}",
                r.output
            );
        } else {
            // Honesty: without a network namespace the host's ports are reachable.
            assert!(
                r.output.contains("127.0.0.1 CONNECTED"),
                "{mode:?}: {}",
                r.output
            );
        }
    }
}

// ---------------------------------------------------------------- 3

#[tokio::test]
async fn inline_code_and_repository_programs_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    // A planted interpreter in the checkout.
    write(
        dir.path(),
        "python3",
        "#!/bin/sh\nid -u > planted-ran.txt\n",
    );
    std::fs::set_permissions(
        dir.path().join("python3"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    for mode in MODES {
        let Some(provider) = hardened(mode, |_| {}) else {
            continue;
        };
        let allowlist = &provider.config().allowlist;
        for requested in [
            "python3 -c 'import os; print(os.environ)'",
            "python3 -Bc 'import socket'",
            "./python3 -m pytest",
            "bin/../python3 t.py",
        ] {
            assert!(
                allowlist.parse(requested).is_err(),
                "{mode:?}: {requested:?} was accepted"
            );
        }
        let sb = open(&provider, dir.path()).await;
        // Not an allowlisted program at all: refused by exec itself.
        let err = sb
            .exec(&spec(&["sh", "-c", "id"], Duration::from_secs(10)))
            .await
            .unwrap_err();
        assert!(err.message.contains("not allowlisted"), "{mode:?}: {err}");
        assert!(!dir.path().join("planted-ran.txt").exists());
        // A command TraceLab builds itself is checked by `check` only, so a
        // planted `./python3` would run — but inside the sandbox.
        let r = run(&*sb, &["./python3"]).await;
        assert!(r.passed(), "{mode:?}: {r:?}");
        let uid = std::fs::read_to_string(dir.path().join("planted-ran.txt")).unwrap();
        if let Some((sandbox_uid, _)) = provider.guarantees().user {
            assert_eq!(uid.trim(), sandbox_uid.to_string(), "{mode:?}");
        }
        std::fs::remove_file(dir.path().join("planted-ran.txt")).unwrap();
    }
}

// ---------------------------------------------------------------- 4

const READ_LINK: &str = r#"
for name in ["leak-open", "leak-private"]:
    try:
        print(name, "READ", open(name).read().strip())
    except OSError as e:
        print(name, "FAILED", type(e).__name__)
"#;

#[tokio::test]
async fn symlinks_to_secrets_outside_the_worktree_cannot_be_read() {
    let secrets = tempfile::tempdir().unwrap();
    // World-readable (only a mount can hide it) and owner-only (the uid switch suffices).
    let open_secret = secrets.path().join("open.txt");
    let private_secret = secrets.path().join("private.txt");
    std::fs::write(&open_secret, SECRET).unwrap();
    std::fs::write(&private_secret, SECRET).unwrap();
    std::fs::set_permissions(
        secrets.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    std::fs::set_permissions(
        &open_secret,
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    std::fs::set_permissions(
        &private_secret,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(&open_secret, dir.path().join("leak-open")).unwrap();
    std::os::unix::fs::symlink(&private_secret, dir.path().join("leak-private")).unwrap();
    write(dir.path(), "readlink.py", READ_LINK);
    let argv = ["python3", "readlink.py"];

    let r = run(&*open(&unhardened(), dir.path()).await, &argv).await;
    assert!(
        r.output.contains(&format!("leak-open READ {SECRET}"))
            && r.output.contains(&format!("leak-private READ {SECRET}")),
        "unhardened: {r:?}"
    );

    for mode in MODES {
        let hidden = secrets.path().to_path_buf();
        let Some(provider) = hardened(mode, |c| c.hidden_paths.push(hidden)) else {
            continue;
        };
        let g = provider.guarantees();
        let r = run(&*open(&provider, dir.path()).await, &argv).await;
        assert!(r.passed(), "{mode:?}: {r:?}");
        if g.hidden_paths {
            assert!(!r.output.contains(SECRET), "{mode:?}: {}", r.output);
            assert!(
                r.output.contains("leak-open FAILED FileNotFoundError"),
                "{mode:?}: {}",
                r.output
            );
        } else {
            // No mount namespace: only file permissions against the sandbox uid.
            assert!(g.user.is_some(), "{mode:?}: nothing protects the files");
            assert!(
                r.output.contains("leak-private FAILED PermissionError"),
                "{mode:?}: {}",
                r.output
            );
            assert!(
                r.output.contains(&format!("leak-open READ {SECRET}")),
                "{mode:?}: guarantees say hidden paths are not hidden: {}",
                r.output
            );
        }
    }
}

/// A worktree without `.git`: a command plants `.git -> <secrets>`, hoping
/// the next run binds `.git` (read-only, but visible) through the link.
#[tokio::test]
async fn a_planted_git_symlink_does_not_mount_secrets_into_the_next_run() {
    let secrets = tempfile::tempdir().unwrap();
    std::fs::write(secrets.path().join("key"), SECRET).unwrap();
    std::fs::set_permissions(
        secrets.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let target = secrets.path().display().to_string();
    let key = secrets.path().join("key").display().to_string();
    for mode in MODES {
        let hidden = secrets.path().to_path_buf();
        let Some(provider) = hardened(mode, |c| c.hidden_paths.push(hidden)) else {
            continue;
        };
        if !provider.guarantees().hidden_paths {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let sb = open(&provider, dir.path()).await;
        let plant = format!("import os; os.symlink({target:?}, '.git')");
        let r = run(&*sb, &["python3", "-c", &plant]).await;
        assert!(r.passed(), "{mode:?}: {r:?}");
        let read = format!(
            "for p in [{key:?}, '.git/key']:\n    try: print(p, open(p).read())\n    except OSError as e: print(p, 'FAILED', type(e).__name__)"
        );
        let r = run(&*sb, &["python3", "-c", &read]).await;
        assert!(r.passed(), "{mode:?}: {r:?}");
        assert!(!r.output.contains(SECRET), "{mode:?}: {}", r.output);
    }
}

// ---------------------------------------------------------------- 5

const FORK_BOMB: &str = r#"
import os, sys, time
refused = 0
while True:
    try:
        os.fork()
    except OSError:
        refused += 1
        time.sleep(0.01)
"#;

#[tokio::test]
async fn a_fork_bomb_ends_at_its_limits_and_leaves_nothing_behind() {
    for (i, mode) in MODES.into_iter().enumerate() {
        // Its own uid, so the process limit it exhausts is not the one the
        // other tests' commands (uid 10001) run under.
        let uid = 10077 + i as u32;
        let Some(provider) = hardened(mode, |c| {
            c.user = (uid, uid);
            c.limits.processes = Some(64);
        }) else {
            continue;
        };
        let dir = tempfile::tempdir().unwrap();
        let marker = format!("forkbomb-{}-{mode:?}", std::process::id());
        write(dir.path(), "bomb.py", FORK_BOMB);
        let sb = open(&provider, dir.path()).await;
        let started = Instant::now();
        let r = sb
            .exec(&spec(
                &["python3", "bomb.py", &marker],
                Duration::from_secs(5),
            ))
            .await
            .unwrap();
        assert_eq!(
            r.blocked.as_deref(),
            Some("timed out after 5 s"),
            "{mode:?}: {r:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(30), "{mode:?}");
        let left = leftovers(&marker).await;
        assert!(
            left.is_empty(),
            "{mode:?}: fork bomb processes survived: {left:?}"
        );
        // The host (and the sandbox) still start processes.
        assert!(
            std::process::Command::new("true")
                .status()
                .unwrap()
                .success()
        );
        let r = run(&*sb, &["python3", "--version"]).await;
        assert!(r.passed(), "{mode:?}: {r:?}");
    }
}

// ---------------------------------------------------------------- 6

const FILL_DISK: &str = r#"
import errno
written = 0
try:
    with open("big.bin", "wb") as f:
        for _ in range(64):
            f.write(b"x" * 65536)
            f.flush()
            written += 65536
    print("WROTE", written)
except OSError as e:
    print("STOPPED", errno.errorcode.get(e.errno), written)
"#;

#[tokio::test]
async fn a_disk_fill_stops_at_the_file_size_limit() {
    const LIMIT: u64 = 1 << 20;
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "fill.py", FILL_DISK);
    let argv = ["python3", "fill.py"];

    let r = run(&*open(&unhardened(), dir.path()).await, &argv).await;
    assert!(r.output.contains("WROTE 4194304"), "unhardened: {r:?}");

    for mode in MODES {
        let Some(provider) = hardened(mode, |c| c.limits.file_size_bytes = Some(LIMIT)) else {
            continue;
        };
        std::fs::remove_file(dir.path().join("big.bin")).unwrap();
        let r = run(&*open(&provider, dir.path()).await, &argv).await;
        // Python ignores SIGXFSZ, so the write fails with EFBIG instead.
        assert!(r.output.contains("STOPPED EFBIG"), "{mode:?}: {r:?}");
        let size = std::fs::metadata(dir.path().join("big.bin")).unwrap().len();
        assert!(size <= LIMIT, "{mode:?}: {size} bytes written");
    }
}

// ---------------------------------------------------------------- 7

const TEST_FILE: &str = "def test_add():\n    assert 1 + 1 == 2\n";

const WRITE_AND_PLANT: &str = r#"
import os, shutil
open("built.txt", "w").write("built")
for path in [".git/hooks/pre-commit", ".git/config"]:
    try:
        open(path, "a").write("\n[core]\n\tfsmonitor = /tmp/evil\n")
        print(path, "WRITTEN")
    except OSError as e:
        print(path, "REFUSED", type(e).__name__)
# Replacing .git wholesale: move it away, or delete it.
for name, attempt in [("rename", lambda: os.rename(".git", "moved-git")),
                      ("rmtree", lambda: shutil.rmtree(".git"))]:
    try:
        attempt()
        print(".git", name, "DONE")
    except OSError as e:
        print(".git", name, "REFUSED", type(e).__name__)
"#;

#[tokio::test]
async fn normal_tests_still_work_but_git_metadata_stays_read_only() {
    for mode in MODES {
        let Some(provider) = hardened(mode, |_| {}) else {
            continue;
        };
        let g = provider.guarantees();
        let dir = tempfile::tempdir().unwrap();
        tracelab_testkit::git(dir.path(), &["init", "-q"]);
        write(dir.path(), "test_add.py", TEST_FILE);
        write(dir.path(), "write.py", WRITE_AND_PLANT);
        let config_before = std::fs::read(dir.path().join(".git/config")).unwrap();
        let sb = open(&provider, dir.path()).await;

        let r = run(&*sb, &["python3", "-m", "pytest", "-q", "test_add.py"]).await;
        assert!(r.passed(), "{mode:?}: {r:?}");
        assert!(r.output.contains("1 passed"), "{mode:?}: {}", r.output);

        let r = run(&*sb, &["git", "status", "--porcelain"]).await;
        assert!(r.passed(), "{mode:?}: {r:?}");
        assert!(
            r.output.contains("?? test_add.py"),
            "{mode:?}: {}",
            r.output
        );

        let r = run(&*sb, &["python3", "write.py"]).await;
        assert!(r.passed(), "{mode:?}: {r:?}");
        let built = dir.path().join("built.txt");
        assert_eq!(std::fs::read_to_string(&built).unwrap(), "built");
        if let Some((uid, _)) = g.user {
            assert_eq!(std::fs::metadata(&built).unwrap().uid(), uid, "{mode:?}");
        }
        assert!(g.git_read_only, "{mode:?}: {}", provider.describe());
        assert!(
            r.output.contains(".git/hooks/pre-commit REFUSED")
                && r.output.contains(".git/config REFUSED")
                && r.output.contains(".git rename REFUSED")
                && r.output.contains(".git rmtree REFUSED"),
            "{mode:?}: {}",
            r.output
        );
        assert!(dir.path().join(".git/HEAD").exists(), "{mode:?}");
        assert!(!dir.path().join(".git/hooks/pre-commit").exists());
        assert_eq!(
            std::fs::read(dir.path().join(".git/config")).unwrap(),
            config_before
        );
        // Files the engine adds between commands (as root) are handed over too.
        write(dir.path(), "added_by_engine.py", "x = 1\n");
        std::fs::create_dir(dir.path().join("pkg")).unwrap();
        let r = run(
            &*sb,
            &["python3", "-c", "open('pkg/out.txt','w').write('ok'); open('added_by_engine.py','a').write('y = 2\\n')"],
        )
        .await;
        assert!(r.passed(), "{mode:?}: {r:?}");
        sb.close().await.unwrap();
    }
}

// ---------------------------------------------------------------- kills, environment, reporting

const DETACH: &str = r#"
import subprocess, sys, time
subprocess.Popen(["python3", "-c", "import time; time.sleep(120)", sys.argv[1]], start_new_session=True)
time.sleep(120)
"#;

#[tokio::test]
async fn the_timeout_kills_even_a_child_that_left_the_process_group() {
    for mode in MODES {
        let Some(provider) = hardened(mode, |_| {}) else {
            continue;
        };
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "detach.py", DETACH);
        let marker = format!("detached-{}-{mode:?}", std::process::id());
        let sb = open(&provider, dir.path()).await;
        let r = sb
            .exec(&spec(
                &["python3", "detach.py", &marker],
                Duration::from_secs(3),
            ))
            .await
            .unwrap();
        assert_eq!(
            r.blocked.as_deref(),
            Some("timed out after 3 s"),
            "{mode:?}"
        );
        if provider.guarantees().processes {
            let left = leftovers(&marker).await;
            assert!(left.is_empty(), "{mode:?}: {left:?} survived");
        } else {
            // As its guarantees say: without a PID namespace a new session
            // escapes the group kill. Clean up after it.
            let left = live_with_marker(&marker);
            eprintln!("{mode:?}: detached processes survived, as documented: {left:?}");
            for pid in left {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }
}

#[tokio::test]
async fn dropping_the_exec_future_kills_the_sandbox() {
    for mode in MODES {
        let Some(provider) = hardened(mode, |_| {}) else {
            continue;
        };
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "detach.py", DETACH);
        let marker = format!("dropped-{}-{mode:?}", std::process::id());
        let sb = open(&provider, dir.path()).await;
        let spec = spec(&["python3", "detach.py", &marker], Duration::from_secs(60));
        let dropped = tokio::time::timeout(Duration::from_secs(3), sb.exec(&spec)).await;
        assert!(dropped.is_err(), "{mode:?}: finished early");
        if provider.guarantees().processes {
            let left = leftovers(&marker).await;
            assert!(left.is_empty(), "{mode:?}: {left:?} survived the drop");
        } else {
            // Documented: without a PID namespace a new session escapes.
            let left = live_with_marker(&marker);
            for pid in left {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }
}

#[tokio::test]
async fn the_environment_is_built_from_scratch() {
    let _holder = SecretHolder::start();
    let dir = tempfile::tempdir().unwrap();
    let program = "import os; print(' '.join(sorted(os.environ)))";
    for mode in MODES {
        let Some(provider) = hardened(mode, |_| {}) else {
            continue;
        };
        let sb = open(&provider, dir.path()).await;
        let mut s = spec(&["python3", "-c", program], Duration::from_secs(30));
        s.env.push(("EXTRA".into(), "1".into()));
        let r = sb.exec(&s).await.unwrap();
        assert!(r.passed(), "{mode:?}: {r:?}");
        let names: BTreeSet<&str> = r.output.split_whitespace().collect();
        let expected: BTreeSet<&str> = ["EXTRA", "HOME", "LANG", "PATH", "TRACELAB_SANDBOX", "TZ"]
            .into_iter()
            .collect();
        // Python itself may add LC_CTYPE when coercing the C locale;
        // bubblewrap sets PWD (to the worktree) after its --chdir.
        let extra: Vec<_> = names
            .difference(&expected)
            .filter(|n| **n != "LC_CTYPE" && **n != "PWD")
            .collect();
        assert!(extra.is_empty(), "{mode:?}: leaked {extra:?}");
        // The spec's variables reach the command alone: a preload meant for
        // a privileged wrapper (bwrap, setpriv run as root) is seen once, by python.
        let mut s = spec(&["python3", "--version"], Duration::from_secs(30));
        s.env
            .push(("LD_PRELOAD".into(), "/nonexistent/tracelab-evil.so".into()));
        let r = sb.exec(&s).await.unwrap();
        assert!(r.passed(), "{mode:?}: {r:?}");
        assert_eq!(
            r.output.matches("cannot be preloaded").count(),
            1,
            "{mode:?}: {}",
            r.output
        );
        assert_eq!(sb.describe(), provider.guarantees().label());
    }
}

#[tokio::test]
async fn guarantees_say_what_is_and_is_not_in_force() {
    let none = unhardened().guarantees();
    assert_eq!(none, Guarantees::none());
    assert_eq!(none.label(), "local");
    assert!(
        unhardened()
            .describe()
            .contains("NOT in force: no isolation")
    );
    for mode in MODES {
        let Some(provider) = hardened(mode, |_| {}) else {
            continue;
        };
        let g = provider.guarantees();
        let text = provider.describe();
        eprintln!("{mode:?}: {text}");
        assert!(text.contains("NOT in force"), "{text}");
        assert!(text.contains("kernel is shared"), "{text}");
        assert!(g.limits.is_some(), "{text}");
        match mode {
            Mode::Bwrap => {
                assert_eq!(g.mechanism, Some(Mechanism::Bwrap));
                assert_eq!(g.filesystem, FsView::Minimal);
                assert!(g.network && g.processes && g.ipc_uts && g.hidden_paths);
                assert_eq!(provider.guarantees().label(), "local+bwrap");
            }
            Mode::Unshare => {
                assert_eq!(g.mechanism, Some(Mechanism::Unshare));
                assert_eq!(g.filesystem, FsView::HostMasked);
                assert!(g.network && g.processes && g.ipc_uts && g.hidden_paths);
            }
            Mode::Bare => {
                assert_eq!(g.mechanism, None);
                assert_eq!(g.filesystem, FsView::Host);
                assert!(!g.network && !g.processes && !g.hidden_paths);
                assert!(text.contains("no network namespace"), "{text}");
                assert_eq!(provider.guarantees().label(), "local+limits");
            }
        }
    }
}

#[tokio::test]
async fn a_command_killed_by_a_signal_fails_under_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    let argv = [
        "python3",
        "-c",
        "import os, signal; os.kill(os.getpid(), signal.SIGTERM)",
    ];
    let r = run(&*open(&unhardened(), dir.path()).await, &argv).await;
    assert_eq!(r.exit_code, None, "unhardened: {r:?}");
    for mode in MODES {
        let Some(provider) = hardened(mode, |_| {}) else {
            continue;
        };
        let r = run(&*open(&provider, dir.path()).await, &argv).await;
        assert!(!r.passed(), "{mode:?}: {r:?}");
        if provider.guarantees().processes {
            // The namespace's init (bwrap, sh) reports the death as 128 + N.
            assert_eq!(r.exit_code, Some(128 + 15), "{mode:?}: {r:?}");
        } else {
            assert_eq!(r.exit_code, None, "{mode:?}: {r:?}");
            assert!(r.blocked.is_some(), "{mode:?}: {r:?}");
        }
    }
}

/// The engine's worktrees live inside a `0700` temporary folder of the
/// service; a script run by its path (`python3 test_app.py`, which Python
/// opens by its absolute path) must still be reachable by the command uid,
/// without that folder becoming listable. Found by the fleet's first run
/// under the hardened runner: every probe failed with "Permission denied".
#[tokio::test]
async fn a_worktree_inside_a_private_folder_runs_scripts_by_path() {
    for mode in MODES {
        let Some(provider) = hardened(mode, |_| {}) else {
            continue;
        };
        let outer = tempfile::tempdir().unwrap();
        std::fs::set_permissions(outer.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let before = 0o700;
        let worktree = outer.path().join("probe-0");
        std::fs::create_dir(&worktree).unwrap();
        write(&worktree, "test_app.py", "print('ran by path')\n");
        let sb = open(&provider, &worktree).await;
        let r = run(&*sb, &["python3", "test_app.py"]).await;
        assert!(r.passed(), "{mode:?}: {r:?}");
        assert!(r.output.contains("ran by path"), "{mode:?}: {}", r.output);
        let after = std::fs::metadata(outer.path())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        if provider.guarantees().user.is_some() {
            assert_eq!(after, before | 0o001, "{mode:?}: search only, not read");
        }
        sb.close().await.unwrap();
    }
}
