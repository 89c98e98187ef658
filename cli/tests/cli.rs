//! The `tracelab` binary as users and CI scripts call it.

use serde_json::Value;
use std::process::{Command, Output};
use std::time::Duration;
use tracelab_testkit::scenarios;

fn tracelab(db: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tracelab"))
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .expect("tracelab runs")
}

#[test]
fn investigate_prints_the_json_contract_and_the_store_keeps_it() {
    let s = scenarios::regression_behind_broken_range();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let repo = s.repo.path().to_str().unwrap();
    let out = tracelab(
        &db,
        &[
            "investigate",
            "--repo",
            repo,
            "--test",
            &s.test_command,
            "--format",
            "json",
            "--parallel",
            "2",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("stdout is pure JSON");
    assert_eq!(report["verdict"], "regression");
    assert_eq!(report["state"], "WAITING_FOR_REVIEW");
    assert_eq!(report["culprit"]["commit"], s.culprit.as_deref().unwrap());
    assert_eq!(
        report["culprit"]["summary"],
        "Speed up add for small numbers"
    );
    assert!(report["flaky"].is_null());
    let h = &report["hypotheses"][0];
    for key in ["id", "agent", "kind", "status", "patch", "experiments"] {
        assert!(h.get(key).is_some(), "hypothesis lacks {key}");
    }
    assert_eq!(h["status"], "VERIFIED");
    assert_eq!(report["winner"]["id"], h["id"]);
    let steps: Vec<&str> = h["experiments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["step"].as_str().unwrap())
        .collect();
    assert_eq!(
        steps,
        [
            "reproduction",
            "regression_before",
            "regression_after",
            "existing_tests"
        ]
    );
    for e in h["experiments"].as_array().unwrap() {
        for key in [
            "command",
            "revision",
            "exit_code",
            "duration_ms",
            "output",
            "outcome",
            "sandbox",
        ] {
            assert!(e.get(key).is_some(), "experiment lacks {key}");
        }
    }
    assert!(
        !String::from_utf8_lossy(&out.stderr).is_empty(),
        "progress goes to stderr"
    );

    let id = report["id"].as_str().unwrap();
    let list = tracelab(&db, &["investigations", "list", "--format", "json"]);
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(list[0]["id"], id);
    let show = tracelab(&db, &["investigations", "show", id, "--format", "json"]);
    let shown: Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(shown["culprit"], report["culprit"]);
    let md = tracelab(&db, &["investigations", "show", id]);
    assert!(String::from_utf8_lossy(&md.stdout).contains("## Culprit"));

    let approve = tracelab(&db, &["investigations", "approve", id]);
    assert!(approve.status.success());
    assert!(String::from_utf8_lossy(&approve.stdout).contains("ai-debug/"));
    let again = tracelab(&db, &["investigations", "approve", id]);
    assert!(
        !again.status.success(),
        "only WAITING_FOR_REVIEW can be approved"
    );
    let again_err = String::from_utf8_lossy(&again.stderr);
    assert!(again_err.contains("is APPROVED"), "{again_err}");
}

#[test]
fn errors_are_one_line_and_exit_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let not_repo = dir.path().to_str().unwrap();
    let out = tracelab(
        &db,
        &["investigate", "--repo", not_repo, "--test", "python3 t.py"],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("error: ") && stderr.contains("not a git repository"));
    assert!(out.stdout.is_empty());

    let missing = tracelab(&db, &["investigations", "show", "nope"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no investigation nope"));

    // Evidence ids live in a fleet's store; one machine has none.
    let evidence = tracelab(
        &db,
        &["investigate", "--repo", not_repo, "--evidence", "ev-1"],
    );
    assert_eq!(evidence.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&evidence.stderr).contains("use it with --server"));
    let neither = tracelab(&db, &["investigate", "--repo", not_repo]);
    assert_eq!(
        neither.status.code(),
        Some(2),
        "clap: --test or --evidence is required"
    );
}

#[test]
fn ctrl_c_cleans_up_worktrees_and_marks_the_investigation_failed() {
    let s = scenarios::linear_regression(40, 30, 3.0);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let child = Command::new(env!("CARGO_BIN_EXE_tracelab"))
        .arg("--db")
        .arg(&db)
        .args([
            "investigate",
            "--repo",
            s.repo.path().to_str().unwrap(),
            "--test",
            &s.test_command,
            "--parallel",
            "2",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until probe worktrees exist, then interrupt.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while s.repo.worktrees().len() < 2 {
        assert!(std::time::Instant::now() < deadline, "no worktree appeared");
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        s.repo.worktrees().len(),
        1,
        "worktrees left: {:?}",
        s.repo.worktrees()
    );
    assert!(s.repo.git(&["branch", "--list", "ai-debug/*"]).is_empty());
    let list = tracelab(&db, &["investigations", "list", "--format", "json"]);
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(list[0]["state"], "FAILED");
    // No test process outlives the interruption: none runs in the investigation's workspace.
    let id = list[0]["id"].as_str().unwrap();
    let workspace_prefix = format!("tracelab-{}-", &id[id.len() - 8..]);
    let leftovers = || -> Vec<String> {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.ok()?.path().join("cwd")).ok())
            .map(|cwd| cwd.display().to_string())
            .filter(|cwd| cwd.contains(&workspace_prefix))
            .collect()
    };
    // Killed processes take a moment to exit on a loaded machine; one that
    // is still there after 10 s was not killed.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !leftovers().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let left = leftovers();
    assert!(left.is_empty(), "processes left in the workspace: {left:?}");
}

/// Docker tests need a daemon and the base image (`deploy/sandbox/build-base-image.sh`).
/// Without `TRACELAB_TEST_DOCKER` they skip, saying why; with
/// `TRACELAB_REQUIRE_BACKENDS=1` (CI) a skip is a failure.
fn docker_available() -> bool {
    tracelab_testkit::backends::backend("TRACELAB_TEST_DOCKER").is_some()
}

#[test]
fn the_demo_verifies_in_docker_with_the_same_verdict_as_locally() {
    if !docker_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let local = tracelab(&db, &["demo", "--format", "json", "--quiet"]);
    assert!(
        local.status.success(),
        "{}",
        String::from_utf8_lossy(&local.stderr)
    );
    let docker = tracelab(
        &db,
        &["demo", "--format", "json", "--quiet", "--sandbox", "docker"],
    );
    assert!(
        docker.status.success(),
        "{}",
        String::from_utf8_lossy(&docker.stderr)
    );
    let local: Value = serde_json::from_slice(&local.stdout).unwrap();
    let docker: Value = serde_json::from_slice(&docker.stdout).unwrap();
    assert_eq!(local["verdict"], "regression");
    assert_eq!(docker["verdict"], local["verdict"]);
    assert_eq!(docker["culprit"]["summary"], local["culprit"]["summary"]);
    assert_eq!(docker["winner"]["status"], "VERIFIED");
    let sandbox = docker["winner"]["experiments"][1]["sandbox"]
        .as_str()
        .unwrap();
    assert!(
        sandbox.starts_with("docker@sha256:"),
        "experiments record the image digest: {sandbox}"
    );
}

#[test]
fn parse_prints_one_redacted_failure_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.txt");
    std::fs::write(
        &trace,
        "Traceback (most recent call last):\n  File \"/home/ci/work/shop/shop/orders.py\", line 42, in place_order\n    charge(card)\n  File \"/home/ci/work/shop/shop/billing.py\", line 7, in charge\n    raise PaymentError(f\"card declined for {email}\")\nshop.billing.PaymentError: card declined for jane.doe@example.com\n",
    )
    .unwrap();
    let out = tracelab(
        &dir.path().join("t.db"),
        &["parse", "--format", "json", trace.to_str().unwrap()],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    let failure: Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(failure["kind"], "exception");
    assert_eq!(failure["language"], "python");
    assert!(
        failure["exception_type"]
            .as_str()
            .unwrap()
            .ends_with("PaymentError")
    );
    assert!(
        !text.contains("jane.doe@example.com"),
        "the email is redacted: {text}"
    );
    let frames = failure["frames"].as_array().unwrap();
    assert_eq!(
        frames.last().unwrap()["function"],
        "charge",
        "innermost frame last"
    );
    assert!(failure["stack_signature"].is_string() && failure["error_signature"].is_string());
    // The exact group key ingest would file it under (the stack signature
    // when there are in-app frames).
    let key = failure["group_key"].as_str().expect("group_key");
    assert!(
        key.contains(failure["stack_signature"].as_str().unwrap()),
        "{key} vs {}",
        failure["stack_signature"]
    );

    let garbage = dir.path().join("garbage.bin");
    std::fs::write(
        &garbage,
        (0..4096u32)
            .map(|i| (i * 7919 % 251) as u8)
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    let out = tracelab(
        &dir.path().join("t.db"),
        &["parse", garbage.to_str().unwrap()],
    );
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("binary"));
}

#[test]
fn index_and_locate_point_at_the_faulty_function() {
    let s = scenarios::regression_behind_broken_range();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let repo = s.repo.path().to_str().unwrap();
    let indexed = tracelab(&db, &["index", "--repo", repo, "--format", "json"]);
    assert!(
        indexed.status.success(),
        "{}",
        String::from_utf8_lossy(&indexed.stderr)
    );
    let summary: Value = serde_json::from_slice(&indexed.stdout).unwrap();
    assert_eq!(summary["commit"], s.head.as_str());
    assert!(summary["symbols"].as_u64().unwrap() >= 4);

    let evidence = dir.path().join("failure.txt");
    std::fs::write(
        &evidence,
        "Traceback (most recent call last):\n  File \"/ci/work/test_app.py\", line 11, in <module>\n    test_add()\n  File \"/ci/work/test_app.py\", line 7, in test_add\n    assert result == 4, f\"add(2, 2) returned {fmt(result)}\"\nAssertionError: add(2, 2) returned <5>\n",
    )
    .unwrap();
    let out = tracelab(
        &db,
        &[
            "locate",
            "--repo",
            repo,
            "--evidence",
            evidence.to_str().unwrap(),
            "--format",
            "json",
            "--top",
            "3",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let found: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(found["symbols"][0]["symbol"], "py:app.add");
    assert_eq!(found["files"][0]["path"], "app.py");
    for key in [
        "symbol",
        "path",
        "start_line",
        "end_line",
        "score",
        "reasons",
    ] {
        assert!(found["symbols"][0].get(key).is_some(), "symbol lacks {key}");
    }
    assert!(
        found["commits"]
            .as_array()
            .unwrap()
            .iter()
            .take(3)
            .any(|c| c["commit"] == s.culprit.as_deref().unwrap())
    );
}
