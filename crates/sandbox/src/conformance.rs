//! The behaviour every [`Sandbox`] must have (feature `testsuite`). The
//! local sandbox's tests run it with and without hardening, the Docker
//! sandbox's against a real engine; [`run`] panics with a message on the
//! first violation.
//!
//! The provider must allowlist `python3` and [`MISSING_PROGRAM`] (which must
//! not exist where commands run) and must not allowlist `sh`. The suite
//! writes its Python scripts into a fresh temporary worktree.
//!
//! Processes are found again by a random token in their argv, scanned in
//! `/proc` by a later command in the same sandbox, so the suite never relies
//! on pids (which a PID namespace renumbers) nor on the host seeing the
//! sandbox's processes.

use std::path::Path;
use std::time::{Duration, Instant};
use tracelab_domain::ErrorKind;
use tracelab_domain::experiment::trim_output;
use tracelab_domain::ports::{CommandSpec, Sandbox, SandboxProvider};

/// An allowlisted program that exists nowhere: a missing program is a
/// blocked result, not an error.
pub const MISSING_PROGRAM: &str = "tracelab-conformance-missing";

/// Runs every case on sandboxes of `provider`, opened with `label`.
pub async fn run(provider: &dyn SandboxProvider, label: &str) {
    a_missing_worktree_is_not_found(provider, label).await;
    let dir = worktree();
    let sandbox = provider
        .open(dir.path(), label)
        .await
        .expect("open a sandbox");
    let sandbox = sandbox.as_ref();
    let token = token(dir.path());
    describes_itself(sandbox);
    runs_the_argv_in_the_worktree_without_a_shell(sandbox).await;
    keeps_the_callers_environment_out(sandbox).await;
    reports_exit_codes_and_both_streams(sandbox).await;
    refuses_bad_commands_before_running_them(sandbox, dir.path()).await;
    a_missing_program_is_blocked(sandbox).await;
    trims_output_like_the_domain(sandbox).await;
    a_timeout_stops_the_command_and_its_children(sandbox, &token).await;
    dropping_the_future_stops_the_command(sandbox, dir.path(), &token).await;
    closing_is_idempotent_and_final(sandbox).await;
}

/// Scripts the cases run, written into every worktree.
const SCRIPTS: [(&str, &str); 6] = [
    (
        "args.py",
        "import os, sys\nprint(os.getcwd() != '', sys.argv[1:], open('data/probe.txt').read().strip())\n",
    ),
    (
        "env.py",
        "import json, os\nprint(json.dumps(dict(os.environ)))\n",
    ),
    (
        "exit.py",
        "import sys\nprint('to stdout', flush=True)\nprint('to stderr', file=sys.stderr, flush=True)\nsys.exit(int(sys.argv[1]))\n",
    ),
    (
        "mark.py",
        "import sys\nopen('ran-' + sys.argv[1], 'w').write('1')\n",
    ),
    (
        "sleeper.py",
        "import subprocess, sys, time\ntoken = sys.argv[1]\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', token])\nprint('sleeping', flush=True)\nopen('sleeper.started', 'w').write('1')\ntime.sleep(600)\n",
    ),
    // Waits up to 20 s for every process carrying the token (given
    // reversed, so the probe does not find itself) to be gone; zombies
    // count as gone.
    (
        "gone.py",
        "import os, sys, time\ntoken = sys.argv[1][::-1].encode()\ndeadline = time.time() + 20\nwhile True:\n    alive = []\n    for pid in os.listdir('/proc'):\n        if not pid.isdigit():\n            continue\n        try:\n            argv = open('/proc/%s/cmdline' % pid, 'rb').read().split(b'\\0')\n            state = open('/proc/%s/stat' % pid).read().rsplit(')', 1)[1].split()[0]\n        except (OSError, IndexError):\n            continue\n        if token in argv and state != 'Z':\n            alive.append(pid)\n    if not alive or time.time() > deadline:\n        break\n    time.sleep(0.1)\nprint('alive ' + ' '.join(alive) if alive else 'gone')\n",
    ),
];

fn worktree() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("tracelab-conformance-")
        .tempdir()
        .expect("temporary worktree");
    std::fs::create_dir(dir.path().join("data")).expect("data folder");
    std::fs::write(dir.path().join("data/probe.txt"), "in the worktree\n").expect("probe file");
    for (name, text) in SCRIPTS {
        std::fs::write(dir.path().join(name), text).expect("script");
    }
    dir
}

/// This run's token: the worktree's random name, unique among concurrent runs.
fn token(dir: &Path) -> String {
    dir.file_name()
        .expect("worktree name")
        .to_string_lossy()
        .into_owned()
}

fn spec(argv: &[&str]) -> CommandSpec {
    CommandSpec {
        argv: argv.iter().map(|s| s.to_string()).collect(),
        env: Vec::new(),
        timeout: Duration::from_secs(60),
        output_limit: 64 * 1024,
    }
}

async fn a_missing_worktree_is_not_found(provider: &dyn SandboxProvider, label: &str) {
    let dir = worktree();
    let missing = dir.path().join("no-such-worktree");
    match provider.open(&missing, label).await {
        Ok(_) => panic!("{}: opened a missing worktree", provider.name()),
        Err(error) => assert_eq!(error.kind, ErrorKind::NotFound, "{error}"),
    }
}

fn describes_itself(sandbox: &dyn Sandbox) {
    let described = sandbox.describe();
    assert!(
        !described.is_empty(),
        "describe() is stored with every experiment"
    );
    assert_eq!(sandbox.describe(), described, "describe() is stable");
}

async fn runs_the_argv_in_the_worktree_without_a_shell(sandbox: &dyn Sandbox) {
    let result = sandbox
        .exec(&spec(&[
            "python3",
            "args.py",
            "two words",
            "$HOME",
            "*",
            "a;b",
        ]))
        .await
        .expect("exec");
    assert!(result.passed(), "{result:?}");
    assert_eq!(
        result.output, "True ['two words', '$HOME', '*', 'a;b'] in the worktree\n",
        "argv reaches the program verbatim, run in the worktree"
    );
}

async fn keeps_the_callers_environment_out(sandbox: &dyn Sandbox) {
    let mut env = spec(&["python3", "env.py"]);
    env.env = vec![
        ("TRACELAB_CONFORMANCE".into(), "a value with spaces".into()),
        ("TZ".into(), "Europe/Paris".into()),
    ];
    let result = sandbox.exec(&env).await.expect("exec");
    assert!(result.passed(), "{result:?}");
    let seen: std::collections::BTreeMap<String, String> =
        serde_json::from_str(result.output.trim()).expect("the environment as JSON");
    assert_eq!(
        seen.get("TRACELAB_CONFORMANCE").map(String::as_str),
        Some("a value with spaces")
    );
    assert_eq!(
        seen.get("TZ").map(String::as_str),
        Some("Europe/Paris"),
        "the spec's variables override the fixed ones"
    );
    assert_eq!(seen.get("LANG").map(String::as_str), Some("C.UTF-8"));
    let home = std::env::var("HOME").unwrap_or_default();
    assert_ne!(
        seen.get("HOME"),
        Some(&home),
        "the command gets a HOME of its own, not the operator's dotfiles"
    );
    for (key, value) in std::env::vars() {
        if ["PATH", "LANG", "TZ"].contains(&key.as_str()) || value.is_empty() {
            continue;
        }
        assert_ne!(
            seen.get(&key),
            Some(&value),
            "the caller's {key} leaked into the command's environment"
        );
    }
    // Nothing of one command's environment is left for the next.
    let result = sandbox
        .exec(&spec(&["python3", "env.py"]))
        .await
        .expect("exec");
    assert!(
        !result.output.contains("TRACELAB_CONFORMANCE"),
        "{result:?}"
    );
}

async fn reports_exit_codes_and_both_streams(sandbox: &dyn Sandbox) {
    let ok = sandbox
        .exec(&spec(&["python3", "exit.py", "0"]))
        .await
        .expect("exec");
    assert!(ok.passed(), "{ok:?}");
    assert!(
        ok.output.contains("to stdout") && ok.output.contains("to stderr"),
        "both streams land in the one output: {ok:?}"
    );
    let failed = sandbox
        .exec(&spec(&["python3", "exit.py", "3"]))
        .await
        .expect("exec");
    assert_eq!(
        (failed.exit_code, failed.blocked.as_deref()),
        (Some(3), None),
        "{failed:?}"
    );
    assert!(!failed.passed());
}

async fn refuses_bad_commands_before_running_them(sandbox: &dyn Sandbox, dir: &Path) {
    let with = |argv: &[&str], env: &[(&str, &str)], timeout: Duration| CommandSpec {
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        timeout,
        ..spec(argv)
    };
    let minute = Duration::from_secs(60);
    let bad = [
        with(&[], &[], minute),
        with(&["sh", "-c", "echo > ran-sh"], &[], minute),
        with(&["python3", "mark.py", "op", "&&", "true"], &[], minute),
        with(&["python3", "mark.py", "nul\0"], &[], minute),
        with(&["python3", "mark.py", "key"], &[("A=B", "1")], minute),
        with(&["python3", "mark.py", "empty"], &[("", "1")], minute),
        with(&["python3", "mark.py", "value"], &[("A", "1\0")], minute),
        with(&["python3", "mark.py", "zero"], &[], Duration::ZERO),
    ];
    for spec in bad {
        match sandbox.exec(&spec).await {
            Ok(result) => panic!("{spec:?} ran: {result:?}"),
            Err(error) => assert_eq!(error.kind, ErrorKind::InvalidArgument, "{spec:?}: {error}"),
        }
    }
    let ran: Vec<_> = std::fs::read_dir(dir)
        .expect("worktree")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("ran-"))
        .collect();
    assert!(ran.is_empty(), "refused commands ran: {ran:?}");
}

async fn a_missing_program_is_blocked(sandbox: &dyn Sandbox) {
    let result = sandbox
        .exec(&spec(&[MISSING_PROGRAM, "--version"]))
        .await
        .expect("a missing program is a result, not an error");
    assert_eq!(result.exit_code, None, "{result:?}");
    assert!(
        result
            .blocked
            .as_deref()
            .is_some_and(|b| b.contains(MISSING_PROGRAM) && b.contains("not found")),
        "{result:?}"
    );
}

async fn trims_output_like_the_domain(sandbox: &dyn Sandbox) {
    let lines = 20_000;
    let script = format!("for i in range({lines}):\n    print('ligne é', i)\nprint('the end')\n");
    let whole: String = (0..lines)
        .map(|i| format!("ligne é {i}\n"))
        .chain(["the end\n".to_string()])
        .collect();
    for limit in [2001, 64 * 1024, whole.len()] {
        let mut loud = spec(&["python3", "-c", &script]);
        loud.output_limit = limit;
        let result = sandbox.exec(&loud).await.expect("exec");
        assert!(result.passed(), "{:?}", result.blocked);
        assert_eq!(
            result.output,
            trim_output(&whole, limit),
            "limit {limit}: head and tail kept, cut at character boundaries"
        );
    }
}

async fn a_timeout_stops_the_command_and_its_children(sandbox: &dyn Sandbox, token: &str) {
    // Ten seconds: ample for two Pythons to start on a loaded machine.
    let mut hang = spec(&["python3", "sleeper.py", token]);
    hang.timeout = Duration::from_secs(10);
    let started = Instant::now();
    let result = sandbox.exec(&hang).await.expect("exec");
    assert_eq!(
        (result.exit_code, result.blocked.as_deref()),
        (None, Some("timed out after 10 s")),
        "{result:?}"
    );
    assert!(
        result.output.contains("sleeping"),
        "output before the limit is kept: {result:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "stopped at the limit, not after its 600 s"
    );
    assert_gone(sandbox, token, "after a timeout").await;
}

async fn dropping_the_future_stops_the_command(sandbox: &dyn Sandbox, dir: &Path, token: &str) {
    let marker = dir.join("sleeper.started");
    let _ = std::fs::remove_file(&marker);
    let long = spec(&["python3", "sleeper.py", token]);
    // Dropped once the command surely runs (its marker exists), not after a
    // fixed time that a loaded machine may spend starting it.
    let deadline = Instant::now() + Duration::from_secs(60);
    {
        let exec = sandbox.exec(&long);
        tokio::pin!(exec);
        while !marker.exists() {
            assert!(Instant::now() < deadline, "the sleeper never started");
            tokio::select! {
                r = &mut exec => panic!("the sleeping command ended: {r:?}"),
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
        }
    }
    assert_gone(sandbox, token, "after its future was dropped").await;
}

async fn assert_gone(sandbox: &dyn Sandbox, token: &str, when: &str) {
    let reversed: String = token.chars().rev().collect();
    let probe = sandbox
        .exec(&spec(&["python3", "gone.py", &reversed]))
        .await
        .expect("exec");
    assert!(probe.passed(), "{probe:?}");
    assert_eq!(
        probe.output.trim(),
        "gone",
        "the command and its child live on {when}"
    );
}

async fn closing_is_idempotent_and_final(sandbox: &dyn Sandbox) {
    sandbox.close().await.expect("close");
    sandbox.close().await.expect("close is idempotent");
    match sandbox.exec(&spec(&["python3", "exit.py", "0"])).await {
        Ok(result) => panic!("a closed sandbox ran a command: {result:?}"),
        Err(error) => assert_eq!(error.kind, ErrorKind::Conflict, "{error}"),
    }
}
