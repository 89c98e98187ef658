//! `tracelab investigate --repair llm` (#12): the model server comes from
//! the environment, its absence is a clear error, and a scripted server's
//! right answer is VERIFIED end to end through the binary, the key never
//! printed.

use serde_json::Value;
use std::process::{Command, Output};
use tracelab_llm::fake::{Answer, FakeChat};
use tracelab_testkit::scenarios;

const KEY: &str = "sk-cli-test-0b5e4c1f9a7d2e8c6b3a1f0e";
const VARS: [&str; 5] = [
    "TRACELAB_LLM_BASE_URL",
    "TRACELAB_LLM_MODEL",
    "TRACELAB_LLM_API_KEY",
    "TRACELAB_LLM_API_KEY_FILE",
    "TRACELAB_LLM_TIMEOUT",
];

fn investigate(repo: &str, test: &str, env: &[(&str, &str)]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tracelab"));
    for v in VARS {
        cmd.env_remove(v);
    }
    cmd.envs(env.iter().copied())
        // Debian's python3 first (pytest is installed for it).
        .env("PATH", "/usr/bin:/bin")
        .arg("--db")
        .arg(dir.path().join("t.db"))
        .args([
            "investigate",
            "--repo",
            repo,
            "--test",
            test,
            "--format",
            "json",
            "--parallel",
            "2",
            "--repair",
            "llm",
        ])
        .output()
        .expect("tracelab runs")
}

#[test]
fn repair_llm_without_a_model_server_is_a_clear_error() {
    let s = scenarios::overfitting_trap(3);
    let out = investigate(s.repo.path().to_str().unwrap(), &s.test_command, &[]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("TRACELAB_LLM_BASE_URL"), "{stderr}");
    assert!(stderr.contains("TRACELAB_LLM_MODEL"), "{stderr}");
}

#[test]
fn repair_llm_verifies_the_scripted_servers_fix() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let fake = runtime.block_on(FakeChat::start(vec![Answer::Reply(
        "app.py\n<<<<<<< SEARCH\n    end = size\n=======\n    end = start + size\n>>>>>>> REPLACE\n"
            .into(),
    )]));
    let s = scenarios::overfitting_trap(3);
    let out = investigate(
        s.repo.path().to_str().unwrap(),
        &s.test_command,
        &[
            ("TRACELAB_LLM_BASE_URL", &fake.base_url),
            ("TRACELAB_LLM_MODEL", "fake-coder"),
            ("TRACELAB_LLM_API_KEY", KEY),
            ("TRACELAB_LOG", "debug"),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(report["winner"]["status"], "VERIFIED", "{report}");
    assert_eq!(report["winner"]["detail"]["source"], "model");
    assert_eq!(report["winner"]["detail"]["model"], "fake-coder");
    let seen = fake.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].authorization.as_deref(),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert!(!stderr.contains(KEY), "the key is in the log");
    assert!(!String::from_utf8_lossy(&out.stdout).contains(KEY));
}
