//! A real git remote (git's smart HTTP behind Basic auth, from
//! `tracelab-testkit`), a local repository holding the verified branch,
//! a report to render, and a log capture.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracelab_codehost::{PullRequestRequest, Pusher};
use tracelab_domain::experiment::{Experiment, Outcome, RunCounts, Step};
use tracelab_domain::hypothesis::{
    AgentKind, CommitInfo, Hypothesis, HypothesisKind, HypothesisStatus,
};
use tracelab_domain::ids::{HypothesisId, InvestigationId};
use tracelab_domain::report::{Culprit, Report};
use tracelab_domain::state::InvestigationState;
use tracelab_domain::verdict::Verdict;
use tracelab_repos::{CredentialSetting, RepositorySettings};
use tracelab_testkit::FixtureRepo;
pub use tracelab_testkit::git;
use tracelab_testkit::git_server::GitHttp;

pub const BRANCH: &str = "ai-debug/PVS-421-h2";
pub const GIT_USER: &str = "ci-bot";
/// The git server's password: must never show up in an error.
pub const GIT_PASSWORD: &str = "git-pw-5f1e2d3c4b";
/// The API token the fakes accept: must never show up anywhere.
pub const API_TOKEN: &str = "ghp_apiTOKEN0123456789abcdefSECRET";
pub const PATCH: &str = "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a + b + 1\n+    return a + b\n";

/// A repository `acme/shop` served over smart HTTP with Basic auth, and a
/// local clone of it whose `BRANCH` holds one commit more than `main`.
pub struct Remote {
    pub local: FixtureRepo,
    pub served: tempfile::TempDir,
    pub server: GitHttp,
    pub main: String,
    pub commit: String,
    _secrets: tempfile::TempDir,
    pub settings: RepositorySettings,
}

impl Remote {
    pub fn new() -> Self {
        Self::with_repositories(&["acme/shop.git"])
    }

    /// Serves the same history under each of `names`.
    pub fn with_repositories(names: &[&str]) -> Self {
        let mut local = FixtureRepo::new();
        let main = local.commit(
            "add",
            &[("app.py", "def add(a, b):\n    return a + b + 1\n")],
        );
        let served = tempfile::tempdir().unwrap();
        for name in names {
            let bare = served.path().join(name);
            std::fs::create_dir_all(bare.parent().unwrap()).unwrap();
            git(
                served.path(),
                &[
                    "clone",
                    "--bare",
                    "-q",
                    local.path().to_str().unwrap(),
                    bare.to_str().unwrap(),
                ],
            );
        }
        local.branch(BRANCH);
        let commit = local.commit(
            "fix add",
            &[("app.py", "def add(a, b):\n    return a + b\n")],
        );
        local.checkout("main");
        let server = GitHttp::start(served.path(), Some((GIT_USER, GIT_PASSWORD))).unwrap();
        let secrets = tempfile::tempdir().unwrap();
        let password_file = secrets.path().join("git-password");
        std::fs::write(&password_file, format!("{GIT_PASSWORD}\n")).unwrap();
        let settings = RepositorySettings {
            credentials: vec![CredentialSetting {
                prefix: format!("http://127.0.0.1:{}/", server.port()),
                username: GIT_USER.into(),
                password_file: password_file.to_str().unwrap().into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        Self {
            local,
            served,
            server,
            main,
            commit,
            _secrets: secrets,
            settings,
        }
    }

    pub fn pusher(&self) -> Pusher {
        Pusher::new(&self.settings)
            .unwrap()
            .with_timeout(Duration::from_secs(60))
    }

    pub fn url(&self, name: &str) -> String {
        self.server.url(name)
    }

    /// Where the server's `branch` of `name` points.
    pub fn branch_on_server(&self, name: &str, branch: &str) -> Option<String> {
        remote_branch(&self.served.path().join(name), branch)
    }

    /// Points the server's `branch` of `name` at `commit` (someone else's branch).
    pub fn set_server_branch(&self, name: &str, branch: &str, commit: &str) {
        git(
            &self.served.path().join(name),
            &["update-ref", &format!("refs/heads/{branch}"), commit],
        );
    }

    /// Pushes the local `BRANCH` straight into the server's repository
    /// `name` (as another attempt would have).
    pub fn push_behind_our_back(&self, name: &str) {
        let bare = self.served.path().join(name);
        git(
            self.local.path(),
            &["push", "-q", bare.to_str().unwrap(), BRANCH],
        );
    }

    /// The request for `BRANCH` of `acme/shop`.
    pub fn request(&self) -> PullRequestRequest {
        self.request_for("acme/shop.git")
    }

    pub fn request_for(&self, name: &str) -> PullRequestRequest {
        PullRequestRequest {
            repository_url: self.url(name),
            branch: BRANCH.into(),
            base_branch: "main".into(),
            title: "Fix add() returning one too many".into(),
            body: tracelab_codehost::body::render(&report()),
            labels: vec!["tracelab".into(), "needs-review".into()],
            local_repository: self.local.path().to_path_buf(),
            project: None,
        }
    }
}

pub use tracelab_codehost::fakes::remote_branch;

fn experiment(step: Step, outcome: Outcome, runs: u32, failures: u32) -> Experiment {
    Experiment {
        step,
        command: "API_TOKEN=planted-env-secret python3 -m pytest tests/test_app.py::test_add"
            .into(),
        revision: "0123456789abcdef0123456789abcdef01234567".into(),
        exit_code: Some(if outcome == Outcome::Pass { 0 } else { 1 }),
        duration_ms: 120,
        outcome,
        output: "AssertionError\nAWS_SECRET_ACCESS_KEY=planted-output-secret\n".into(),
        sandbox: "local".into(),
        note: Some("planted-note-secret".into()),
        counts: Some(RunCounts {
            runs,
            failures,
            other: 0,
        }),
    }
}

/// An approved regression whose revert was verified.
pub fn report() -> Report {
    let id = InvestigationId("0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b".into());
    let culprit = CommitInfo {
        commit: "c0ffee0123456789c0ffee0123456789c0ffee01".into(),
        summary: "Make add() count the carry @release-team".into(),
        author: "Dana Developer".into(),
        date: "2026-01-01T00:02:00Z".into(),
    };
    let mut winner = Hypothesis::new(
        HypothesisId::new(&id, 2),
        2,
        AgentKind::GitHistory,
        HypothesisKind::Revert,
        "Revert c0ffee01: add() returns one too many",
    );
    winner.status = HypothesisStatus::Verified;
    winner.status_reason = "reproduced (5/5 runs failed), failed before the fix, passed after it (5 runs), existing tests pass".into();
    winner.patch = Some(PATCH.into());
    winner.branch = Some(BRANCH.into());
    winner.culprit = Some(culprit.clone());
    winner.detail = Some(serde_json::json!({"env": "planted-detail-secret"}));
    winner.experiments = vec![
        experiment(Step::Reproduction, Outcome::Fail, 5, 5),
        experiment(Step::RegressionBefore, Outcome::Fail, 1, 1),
        experiment(Step::RegressionAfter, Outcome::Pass, 5, 0),
        experiment(Step::ExistingTests, Outcome::Pass, 1, 0),
    ];
    Report {
        id,
        state: InvestigationState::Approved,
        verdict: Verdict::Regression,
        culprit: Some(Culprit {
            commit: culprit,
            confidence: 0.987,
            verified: true,
            verification: "the revert passed the four-part contract".into(),
        }),
        flaky: None,
        hypotheses: vec![winner.clone()],
        winner: Some(winner),
        repository: "https://github.com/acme/shop".into(),
        test_command: "API_TOKEN=planted-env-secret python3 -m pytest tests/test_app.py::test_add"
            .into(),
        bad: "badbadbadbadbadbadbadbadbadbadbadbadbad0".into(),
        good: Some("900d900d900d900d900d900d900d900d900d900d".into()),
        failure: Some("AssertionError in test_add: assert 4 == 3".into()),
        reproduction: None,
        bisect: None,
        suspects: Vec::new(),
        notes: vec!["planted-notes-secret".into()],
        created_at: time::OffsetDateTime::UNIX_EPOCH,
        duration_ms: 1234,
        transitions: Vec::new(),
    }
}

/// What `tracing` printed (see [`Logs::global`]).
#[derive(Clone, Default)]
pub struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    /// Everything every test of this binary logs, at TRACE, from a global
    /// subscriber installed once. (A thread-local `set_default` lost events
    /// under a loaded parallel run: callsite interest is cached process-wide.)
    pub fn global() -> Logs {
        static LOGS: std::sync::OnceLock<Logs> = std::sync::OnceLock::new();
        LOGS.get_or_init(|| {
            let logs = Logs::default();
            let writer = logs.clone();
            let subscriber = tracing_subscriber::fmt()
                .with_max_level(tracing::Level::TRACE)
                .with_ansi(false)
                .with_writer(move || writer.clone())
                .finish();
            tracing::subscriber::set_global_default(subscriber).expect("one global subscriber");
            logs
        })
        .clone()
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}
