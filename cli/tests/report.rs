//! `tracelab report` as a CI step runs it: on a temporary git checkout with a
//! JUnit file and a log, printing (`--dry-run`) or POSTing to a tiny HTTP
//! server on a real loopback socket.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};
use tracelab_testkit::FixtureRepo;

const JUNIT: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="0" failures="1" tests="2">
<testcase classname="tests.test_calc" name="test_add" time="0.001"/>
<testcase classname="tests.test_calc" name="test_div" time="0.002"><failure message="ZeroDivisionError: division by zero">def test_div():
&gt;       assert div(1, 0) == 0
E       ZeroDivisionError: division by zero</failure></testcase>
</testsuite></testsuites>
"#;

/// A checkout on branch `main` with a lockfile, a JUnit report and a long log.
fn checkout() -> (FixtureRepo, String) {
    let mut repo = FixtureRepo::new();
    let head = repo.commit("init", &[("Cargo.lock", "version = 4\n")]);
    let root = repo.path();
    std::fs::create_dir_all(root.join("target/reports/nested")).unwrap();
    std::fs::write(root.join("target/reports/nested/junit.xml"), JUNIT).unwrap();
    std::fs::write(root.join("target/reports/notes.txt"), "not xml").unwrap();
    let mut log = String::new();
    for i in 0..20_000 {
        log.push_str(&format!("step {i}: compiling something\n"));
    }
    log.push_str("FAILED tests/test_calc.py::test_div - ZeroDivisionError\n");
    std::fs::write(root.join("ci.log"), log).unwrap();
    (repo, head)
}

/// Runs `tracelab report` with a clean environment plus `env`.
fn report(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tracelab"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        // The real HOME: rustup finds its toolchains there.
        .env(
            "HOME",
            std::env::var_os("HOME").unwrap_or_else(|| dir.into()),
        )
        .current_dir(dir)
        .arg("report")
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("tracelab runs")
}

fn sha256_hex(bytes: &[u8]) -> String {
    // The digest is checked against the library's own function (tested on a known vector there).
    tracelab_evidence::ci::lockfile_digest(bytes)
}

#[test]
fn dry_run_prints_the_payload() {
    let (dir, head) = checkout();
    let out = report(
        dir.path(),
        &[
            "--junit",
            "target/**/*.xml",
            "--log",
            "ci.log",
            "--log-bytes",
            "4096",
            "--dry-run",
        ],
        &[
            ("MY_SERVICE_TOKEN", "hunter2"),
            ("AWS_SECRET_ACCESS_KEY", "x"),
            ("LANG", "C.UTF-8"),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let p: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(p["schema"], 1);
    assert_eq!(p["commit"], head.as_str());
    assert_eq!(p["branch"], "main");
    assert_eq!(p["job"]["provider"], "local");
    let reports = p["reports"].as_array().unwrap();
    assert_eq!(reports.len(), 1, "only the XML file matches: {reports:?}");
    assert_eq!(reports[0]["path"], "target/reports/nested/junit.xml");
    assert_eq!(reports[0]["content"], JUNIT);
    let log = p["log"]["content"].as_str().unwrap();
    assert!(
        log.len() <= 4096 && log.ends_with("ZeroDivisionError\n"),
        "{log}"
    );
    assert!(
        log.starts_with("step "),
        "the tail starts at a line: {:?}",
        &log[..20]
    );
    assert!(p["log"]["truncated_bytes"].as_u64().unwrap() > 400_000);
    let env = &p["environment"];
    assert_eq!(env["os"], std::env::consts::OS);
    assert_eq!(env["arch"], std::env::consts::ARCH);
    assert_eq!(
        env["lockfiles"]["Cargo.lock"],
        sha256_hex(b"version = 4\n").as_str()
    );
    let names: Vec<&str> = env["env_names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["HOME", "LANG", "PATH"],
        "names only, secret-looking ones dropped"
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("hunter2"),
        "values are never sent"
    );
    if Command::new("rustc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        assert!(
            env["toolchains"]["rustc"]
                .as_str()
                .unwrap()
                .starts_with("rustc "),
            "{env}"
        );
    }
    assert!(p["created_at"].as_i64().unwrap() > 1_700_000_000);
}

#[test]
fn ci_variables_win_over_git_and_flags_win_over_both() {
    let (dir, _) = checkout();
    let ci = [
        ("GITLAB_CI", "true"),
        ("CI_COMMIT_SHA", "cafe"),
        ("CI_COMMIT_REF_NAME", "release/1.2"),
        ("CI_JOB_ID", "4242"),
        (
            "CI_PROJECT_URL",
            "https://gitlab-ci-token:secret@gitlab.example.com/g/r",
        ),
    ];
    let out = report(dir.path(), &["--log", "ci.log", "--dry-run"], &ci);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (p["commit"].as_str(), p["branch"].as_str()),
        (Some("cafe"), Some("release/1.2"))
    );
    assert_eq!(p["job"]["id"], "4242");
    assert_eq!(p["job"]["provider"], "gitlab_ci");
    assert_eq!(p["repository"], "https://gitlab.example.com/g/r");
    let out = report(
        dir.path(),
        &[
            "--log",
            "ci.log",
            "--dry-run",
            "--commit",
            "beef",
            "--job",
            "7",
        ],
        &ci,
    );
    let p: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (p["commit"].as_str(), p["job"]["id"].as_str()),
        (Some("beef"), Some("7"))
    );
}

#[test]
fn nothing_to_send_or_nowhere_to_send_is_a_clear_error() {
    let (dir, _) = checkout();
    let out = report(dir.path(), &["--junit", "none/*.xml", "--dry-run"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no file matches \"none/*.xml\"") && err.contains("nothing to report"),
        "{err}"
    );
    let out = report(dir.path(), &["--log", "ci.log"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--server"));
}

/// One HTTP request as the server saw it.
struct Seen {
    request_line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// Serves one connection per canned response (`Connection: close`), in order.
fn server(responses: Vec<&'static str>) -> (String, std::thread::JoinHandle<Vec<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let mut seen = Vec::new();
        for response in responses {
            let (stream, _) = listener.accept().unwrap();
            stream
                .set_read_timeout(Some(std::time::Duration::from_secs(20)))
                .unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            let mut headers = Vec::new();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                let (k, v) = line.split_once(':').unwrap();
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
            }
            let len: usize = headers
                .iter()
                .find(|(k, _)| k == "content-length")
                .map(|(_, v)| v.parse().unwrap())
                .expect("the client sends a Content-Length");
            let mut body = vec![0; len];
            reader.read_exact(&mut body).unwrap();
            // What the server sees after `Content-Encoding: gzip`.
            if headers
                .iter()
                .any(|(k, v)| k == "content-encoding" && v == "gzip")
            {
                let mut plain = Vec::new();
                flate2::read::GzDecoder::new(&body[..])
                    .read_to_end(&mut plain)
                    .unwrap();
                headers.push(("x-test-wire-bytes".into(), len.to_string()));
                body = plain;
            }
            (&stream).write_all(response.as_bytes()).unwrap();
            seen.push(Seen {
                request_line: request_line.trim_end().to_owned(),
                headers,
                body,
            });
        }
        seen
    });
    (url, handle)
}

#[test]
fn posts_to_the_server_and_honours_retry_after() {
    let (dir, head) = checkout();
    let (url, server) = server(vec![
        "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 0\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        "HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nContent-Length: 15\r\nConnection: close\r\n\r\n{\"accepted\":1}\n",
    ]);
    let out = report(
        dir.path(),
        &[
            "--junit",
            "target/**/*.xml",
            "--server",
            &format!("{url}/"),
            "--timeout",
            "20",
        ],
        &[("TRACELAB_TOKEN", "t0ken")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "{\"accepted\":1}"
    );
    assert!(
        stderr.contains("429") && stderr.contains("retrying"),
        "{stderr}"
    );
    let seen = server.join().unwrap();
    assert_eq!(seen.len(), 2, "one refused attempt, one accepted");
    for s in &seen {
        assert_eq!(s.request_line, "POST /v1/ci-failures HTTP/1.1");
        let header = |name: &str| {
            s.headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(header("content-type"), Some("application/json"));
        assert_eq!(header("content-encoding"), Some("gzip"));
        let wire: usize = header("x-test-wire-bytes").unwrap().parse().unwrap();
        assert!(
            wire < s.body.len(),
            "{wire} bytes on the wire for {}",
            s.body.len()
        );
        assert_eq!(header("authorization"), Some("Bearer t0ken"));
        let p: Value = serde_json::from_slice(&s.body).unwrap();
        assert_eq!(p["commit"], head.as_str());
        assert_eq!(p["reports"][0]["path"], "target/reports/nested/junit.xml");
    }
    let accepted: tracelab_evidence::CiFailureReport =
        serde_json::from_slice(&seen[1].body).unwrap();
    assert_eq!(
        accepted.reports.len(),
        1,
        "the body is the shared payload type"
    );
}

#[test]
fn a_refusal_that_retrying_cannot_fix_fails_the_step() {
    let (dir, _) = checkout();
    let (url, server) = server(vec![
        "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 9\r\nConnection: close\r\n\r\ntoo large",
    ]);
    let out = report(
        dir.path(),
        &["--log", "ci.log", "--server", &url, "--no-compress"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("413") && err.contains("too large"), "{err}");
    let seen = server.join().unwrap();
    assert_eq!(seen.len(), 1, "no retry after a 413");
    assert!(
        seen[0].headers.iter().all(|(k, _)| k != "content-encoding"),
        "--no-compress sends plain JSON"
    );
    let _: Value = serde_json::from_slice(&seen[0].body).unwrap();
}
