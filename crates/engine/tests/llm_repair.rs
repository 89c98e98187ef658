//! The LLM patch agent (`--repair llm`, #12) end to end on generated
//! repositories, against a scripted OpenAI-compatible server: a correct
//! answer is VERIFIED by the contract like a template candidate, and every
//! bad answer or server (garbage, cut off, hostile edits, down, slow) ends as
//! an INCONCLUSIVE or BLOCKED attempt of an investigation that completes.

mod support;

use std::sync::Arc;
use std::time::Duration;
use tracelab_domain::hypothesis::{Hypothesis, HypothesisKind, HypothesisStatus};
use tracelab_domain::report::Report;
use tracelab_domain::state::InvestigationState;
use tracelab_domain::verdict::Verdict;
use tracelab_engine::agents::experience::Experience;
use tracelab_engine::{EngineConfig, RepairMode};
use tracelab_llm::fake::{Answer, FakeChat, Seen, down_url};
use tracelab_llm::{ApiKey, LlmClient, LlmSettings};
use tracelab_testkit::FixtureRepo;
use tracelab_testkit::scenarios;
use tracelab_testkit::secrets::{planted, secrets_of};

/// Debian's python3 first (pytest is installed for it).
const SYSTEM_PATH: &str = "/usr/bin:/bin";
const KEY: &str = "sk-fake-9c1e77a04b2d4f5e8a3b6c0d1e2f3a4b";

/// The right fix for `scenarios::overfitting_trap` (no template has it).
const FIX: &str =
    "app.py\n<<<<<<< SEARCH\n    end = size\n=======\n    end = start + size\n>>>>>>> REPLACE\n";

async fn investigate(
    repo: &std::path::Path,
    test_command: &str,
    base_url: &str,
    tweak: impl FnOnce(&mut EngineConfig),
) -> Report {
    let mut settings = LlmSettings::new(base_url, "fake-coder");
    settings.api_key = ApiKey::new(KEY);
    let mut config = EngineConfig {
        parallelism: 2,
        command_timeout: Duration::from_secs(30),
        repair: RepairMode::Llm,
        chat_model: Some(Arc::new(LlmClient::new(settings).unwrap())),
        ..Default::default()
    };
    tweak(&mut config);
    let report = support::investigate_locally(config, SYSTEM_PATH, repo, test_command, "T-1")
        .await
        .expect("the investigation completes");
    assert_eq!(report.state, InvestigationState::WaitingForReview);
    report
}

async fn trap(script: Vec<Answer>, tweak: impl FnOnce(&mut EngineConfig)) -> (Report, Vec<Seen>) {
    let s = scenarios::overfitting_trap(4);
    let fake = FakeChat::start(script).await;
    let report = investigate(s.repo.path(), &s.test_command, &fake.base_url, tweak).await;
    assert_eq!(report.verdict, Verdict::Deterministic);
    (report, fake.seen())
}

fn repair_hypothesis(report: &Report) -> &Hypothesis {
    report
        .hypotheses
        .iter()
        .find(|h| h.kind == HypothesisKind::Patch)
        .expect("a repair hypothesis")
}

fn calls(h: &Hypothesis) -> Vec<serde_json::Value> {
    h.detail.as_ref().unwrap()["model_run"]["calls"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The key reached the server in the Authorization header only, and is
/// nowhere in the report.
fn key_only_in_the_header(report: &Report, seen: &[Seen]) {
    for s in seen {
        assert_eq!(
            s.authorization.as_deref(),
            Some(format!("Bearer {KEY}").as_str())
        );
        assert!(!s.body.contains(KEY));
    }
    let json = serde_json::to_string(report).unwrap();
    assert!(!json.contains(KEY), "the key is in the report");
    assert!(!report.to_markdown().contains(KEY));
}

#[tokio::test]
async fn a_correct_answer_is_verified_by_the_contract() {
    let (report, seen) = trap(
        vec![Answer::Reply(format!("The end is off.\n\n```\n{FIX}```\n"))],
        |_| {},
    )
    .await;
    let winner = report.winner.clone().expect("a verified repair");
    assert_eq!(
        winner.status,
        HypothesisStatus::Verified,
        "{}",
        winner.status_reason
    );
    assert_eq!(winner.kind, HypothesisKind::Patch);
    let patch = winner.patch.clone().unwrap();
    assert!(patch.contains("+    end = start + size"), "{patch}");
    let detail = winner.detail.clone().unwrap();
    assert_eq!(detail["source"], "model");
    assert_eq!(detail["model"], "fake-coder");
    assert_eq!(detail["prompt_sha256"].as_str().unwrap().len(), 64);
    assert_eq!(detail["prompt_tokens"], 1200);
    assert!(detail["completion_tokens"].as_u64().unwrap() > 0);
    assert!(detail["tests_run"].as_array().unwrap().len() >= 2);
    // The neighbour tests judged it too.
    assert!(winner.experiments.iter().any(|e| {
        e.note
            .as_deref()
            .is_some_and(|n| n.contains("naming the patched function"))
    }));
    assert_eq!(seen.len(), 1);
    let body: serde_json::Value = serde_json::from_str(&seen[0].body).unwrap();
    let prompt = body["messages"][1]["content"].as_str().unwrap();
    assert!(prompt.contains("def window(xs, start, size):"), "{prompt}");
    assert!(
        prompt.contains("assert"),
        "the failing output is in the prompt"
    );
    key_only_in_the_header(&report, &seen);
    let md = report.to_markdown();
    assert!(md.contains("Source: model `fake-coder`"), "{md}");
}

#[tokio::test]
async fn a_second_attempt_gets_the_first_attempts_verification_output() {
    // Passes the failing test, breaks its neighbour: rejected by the contract.
    let overfit = "app.py\n<<<<<<< SEARCH\n    return xs[start:end]\n=======\n    return xs[start:end + 1]\n>>>>>>> REPLACE\n";
    let (report, seen) = trap(
        vec![Answer::Reply(overfit.into()), Answer::Reply(FIX.into())],
        |_| {},
    )
    .await;
    let winner = report.winner.clone().expect("the second answer verified");
    assert_eq!(winner.detail.as_ref().unwrap()["attempt"], 2);
    assert_eq!(seen.len(), 2);
    let second: serde_json::Value = serde_json::from_str(&seen[1].body).unwrap();
    let prompt = second["messages"][1]["content"].as_str().unwrap();
    assert!(prompt.contains("Your previous attempt"), "{prompt}");
    assert!(prompt.contains("test_window_from_the_start"), "{prompt}");
    assert!(
        winner.status_reason.contains("earlier"),
        "{}",
        winner.status_reason
    );
}

#[tokio::test]
async fn garbage_and_cut_off_answers_are_inconclusive() {
    let (report, seen) = trap(
        vec![
            Answer::Raw(200, "{\"choices\": [{\"message\": {\"content\": ".into()),
            Answer::Truncated("app.py\n<<<<<<< SEARCH\n    end = size\n=====".into()),
        ],
        |_| {},
    )
    .await;
    assert!(report.winner.is_none());
    let h = repair_hypothesis(&report);
    assert_eq!(
        h.status,
        HypothesisStatus::Inconclusive,
        "{}",
        h.status_reason
    );
    let calls = calls(h);
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0]["outcome"], "server error");
    assert!(
        calls[0]["reason"]
            .as_str()
            .unwrap()
            .contains("not a chat completion")
    );
    assert_eq!(calls[1]["outcome"], "truncated");
    assert!(h.patch.is_none());
    key_only_in_the_header(&report, &seen);
}

#[tokio::test]
async fn hostile_edits_are_refused_and_counted() {
    let s = scenarios::overfitting_trap(4);
    // A tracked symlink to the suspect's file: writing through it is refused.
    std::os::unix::fs::symlink("app.py", s.repo.path().join("alias.py")).unwrap();
    s.repo.git(&["add", "alias.py"]);
    s.repo.git(&["commit", "-q", "-m", "An alias"]);
    let tests_before = std::fs::read_to_string(s.repo.path().join("test_app.py")).unwrap();
    let git_config = std::fs::read_to_string(s.repo.path().join(".git/config")).unwrap();
    let fake = FakeChat::start(vec![
        // The oracle rule: the failing test's own file.
        Answer::Reply("test_app.py\n<<<<<<< SEARCH\n    assert window([1, 2, 3, 4], 1, 2) == [2, 3]\n=======\n    assert True\n>>>>>>> REPLACE\n".into()),
        // Outside the repository.
        Answer::Reply("../outside.py\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n".into()),
        // Inside .git.
        Answer::Reply(".git/config\n<<<<<<< SEARCH\n[core]\n=======\n[core]\n\thooksPath = /tmp\n>>>>>>> REPLACE\n".into()),
        // Through a symlink.
        Answer::Reply("alias.py\n<<<<<<< SEARCH\n    end = size\n=======\n    end = start + size\n>>>>>>> REPLACE\n".into()),
    ])
    .await;
    let report = investigate(s.repo.path(), &s.test_command, &fake.base_url, |c| {
        c.max_patch_attempts = 4
    })
    .await;
    let h = repair_hypothesis(&report);
    assert_eq!(
        h.status,
        HypothesisStatus::Inconclusive,
        "{}",
        h.status_reason
    );
    let run = &h.detail.as_ref().unwrap()["model_run"];
    assert_eq!(run["refused_edits"], 4, "{run}");
    let reasons: Vec<String> = calls(h)
        .iter()
        .map(|c| c["reason"].as_str().unwrap().to_string())
        .collect();
    assert!(reasons[0].contains("oracle rule"), "{reasons:?}");
    assert!(reasons[1].contains(".."), "{reasons:?}");
    assert!(reasons[2].contains(".git"), "{reasons:?}");
    assert!(reasons[3].contains("alias.py is a symlink"), "{reasons:?}");
    assert_eq!(
        std::fs::read_to_string(s.repo.path().join("test_app.py")).unwrap(),
        tests_before
    );
    assert_eq!(
        std::fs::read_to_string(s.repo.path().join(".git/config")).unwrap(),
        git_config
    );
    assert!(!s.repo.path().parent().unwrap().join("outside.py").exists());
}

#[tokio::test]
async fn a_server_that_is_down_blocks_the_attempt_and_the_investigation_completes() {
    let s = scenarios::overfitting_trap(4);
    let report = investigate(s.repo.path(), &s.test_command, &down_url().await, |_| {}).await;
    let h = repair_hypothesis(&report);
    assert_eq!(h.status, HypothesisStatus::Blocked);
    assert!(
        h.status_reason.contains("cannot reach"),
        "{}",
        h.status_reason
    );
    assert!(!h.status_reason.contains(KEY));
    assert!(report.winner.is_none());
}

#[tokio::test]
async fn a_slow_server_hits_the_wall_budget() {
    let started = std::time::Instant::now();
    let (report, seen) = trap(
        vec![Answer::Slow(
            Duration::from_secs(60),
            Box::new(Answer::Reply(FIX.into())),
        )],
        |c| c.llm_wall_budget = Duration::from_secs(2),
    )
    .await;
    let h = repair_hypothesis(&report);
    assert_eq!(h.status, HypothesisStatus::Blocked, "{}", h.status_reason);
    assert!(
        h.status_reason.contains("did not answer"),
        "{}",
        h.status_reason
    );
    assert_eq!(seen.len(), 1);
    assert!(
        started.elapsed() < Duration::from_secs(55),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn no_planted_secret_in_the_failure_the_source_the_neighbourhood_or_past_fixes_reaches_the_server()
 {
    // Values a Python string literal can hold as they are, one of each kind.
    let mut kinds = std::collections::BTreeSet::new();
    // Each value in its realistic line, as the redaction corpus plants it.
    let chosen: Vec<(&str, String, String)> = planted()
        .into_iter()
        .map(|(k, v, ctx)| (k, v.clone(), ctx.replace("{}", &v)))
        .filter(|(_, _, line)| !line.contains(['"', '\\', '\n', '\'']))
        .filter(|(k, _, _)| kinds.insert(*k))
        .collect();
    assert!(chosen.len() >= 10, "{} kinds", chosen.len());
    let listed: String = chosen
        .iter()
        .map(|(_, _, line)| format!("    \"{line}\",\n"))
        .collect();
    // The suspect calls `clip`, and `report.summary` calls the suspect: the
    // index's call neighbourhood puts both in the prompt, each with
    // secrets in the lines shown.
    let first = &chosen[0].2;
    let last = &chosen[chosen.len() - 1].2;
    let app = format!(
        "SETTINGS = [\n{listed}]\n\n\ndef clip(n, xs):\n    fallback = \"{last}\"\n    return min(n, len(xs))\n\n\ndef window(xs, start, size):\n    token = SETTINGS[0]\n    end = clip(size, xs)\n    return xs[start:end]\n"
    );
    let report_py = format!(
        "from app import window\n\n\ndef summary(xs):\n    return (window(xs, 0, 2), \"{first}\")\n"
    );
    let tests = "from app import SETTINGS, window\n\n\ndef test_window():\n    assert window([1, 2, 3, 4], 1, 2) == [2, 3], \" \".join(SETTINGS)\n";
    let mut repo = FixtureRepo::new();
    repo.commit(
        "Windows",
        &[
            ("app.py", &app),
            ("report.py", &report_py),
            ("test_app.py", tests),
        ],
    );
    repo.commit("Notes", &[("NOTES.md", "notes\n")]);
    let command = "python3 -m pytest -q -p no:cacheprovider test_app.py::test_window";
    // A past fix of the same failing test in this repository and workflow
    // (an L1 experience record), with secrets in its diff. Its hunk is not
    // in the code any more, so the experience agent cannot re-apply it and
    // the model gets it as an example.
    let secret_lines: String = chosen
        .iter()
        .map(|(_, _, line)| format!("+    # {line}\n"))
        .collect();
    let patch = format!(
        "--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n def window(xs, start, size):\n-    stop = size\n+    stop = start + size\n{secret_lines}"
    );
    let record: tracelab_experience::ExperienceRecord = serde_json::from_value(serde_json::json!({
        "id": "a1b2c3d4e5f60718",
        "history": "aaaa..bbbb",
        "repository": "planted/repo",
        "workflow": format!("local: {command}"),
        "problem": "test_app.py::test_window",
        "concrete": {
            "signature": "test_app.py::test_window",
            "failure_type": "test_failure",
            "test": "test_app.py::test_window",
            "error_types": ["AssertionError"],
            "files": ["app.py"],
            "symbols": ["window"],
            "patch": patch,
            "validation": command,
            "supporting_commits": ["bbbb"],
            "fixed_at": "bbbbccccdddd0000",
            "agreement": null,
            "needs": []
        },
        "strategy": {
            "check": "local/test",
            "failure_type": "test_failure",
            "validation": command,
            "actions": [],
            "conditions": [],
            "failed_attempts": 0
        },
        "pattern": {
            "failure_type": "test_failure",
            "mechanism": "wrong slice end",
            "signals": [],
            "approach": ["compute the end from the start"]
        }
    }))
    .expect("an experience record");
    let fake = FakeChat::start(vec![Answer::Reply("no edit".into())]).await;
    let report = investigate(repo.path(), command, &fake.base_url, |c| {
        c.max_patch_attempts = 1;
        c.experience = Some(Arc::new(Experience {
            records: vec![record],
            workflow: None,
            repository: Some("planted/repo".into()),
        }));
    })
    .await;
    let seen = fake.seen();
    assert_eq!(
        seen.len(),
        1,
        "{:?}",
        repair_hypothesis(&report).status_reason
    );
    let body: serde_json::Value = serde_json::from_str(&seen[0].body).unwrap();
    let prompt = body["messages"][1]["content"].as_str().unwrap();
    assert!(prompt.contains("def window(xs, start, size):"), "{prompt}");
    assert!(prompt.contains("AssertionError"), "{prompt}");
    // The call neighbourhood from the index: the caller with its calling
    // line (redacted like the rest), the callee (a suspect here, so its
    // body is the one shown above).
    assert!(prompt.contains("call neighbourhood"), "{prompt}");
    assert!(
        prompt.contains(
            "Called by:\n- `py:report.summary` (report.py:5): `return (window(xs, 0, 2),"
        ),
        "{prompt}"
    );
    assert!(
        prompt.contains("Calls:\n- `py:app.clip` (app.py"),
        "{prompt}"
    );
    // The past fix, as its diff.
    assert!(prompt.contains("Past fixes of this failure"), "{prompt}");
    assert!(prompt.contains("Record a1b2c3d4e5f6"), "{prompt}");
    assert!(prompt.contains("+    stop = start + size"), "{prompt}");
    let leaked: Vec<String> = chosen
        .iter()
        .flat_map(|(k, v, _)| {
            secrets_of(k, v)
                .into_iter()
                .filter(|s| seen[0].body.contains(s.as_str()))
                .map(move |s| format!("{k}: {s}"))
        })
        .collect();
    assert!(leaked.is_empty(), "sent to the model: {leaked:?}");
}

#[tokio::test]
async fn with_repair_all_the_model_follows_templates_that_were_not_verified() {
    // The templates' one passing candidate overfits (rejected by the
    // neighbour tests), then the model's answer is proven in the same
    // hypothesis.
    let (report, seen) = trap(vec![Answer::Reply(FIX.into())], |c| {
        c.repair = RepairMode::All
    })
    .await;
    let winner = report.winner.clone().expect("the model's edit verified");
    let detail = winner.detail.clone().unwrap();
    assert_eq!(detail["source"], "model", "{detail}");
    assert_eq!(
        detail["attempt"], 2,
        "one template attempt, then the model's"
    );
    assert!(
        detail["screening"]["screened"]
            .as_array()
            .is_some_and(|s| !s.is_empty())
    );
    assert_eq!(seen.len(), 1);
    assert_eq!(
        report
            .hypotheses
            .iter()
            .filter(|h| h.kind == HypothesisKind::Patch)
            .count(),
        1
    );

    // A template that is verified leaves the model alone.
    let s = scenarios::bug_since_the_first_commit(4);
    let fake = FakeChat::start(vec![Answer::Reply(FIX.into())]).await;
    let report = investigate(s.repo.path(), &s.test_command, &fake.base_url, |c| {
        c.repair = RepairMode::All
    })
    .await;
    let winner = report.winner.clone().expect("a verified template");
    assert_eq!(winner.detail.as_ref().unwrap()["source"], "repair_template");
    assert!(fake.seen().is_empty());
}

#[tokio::test]
async fn after_a_revert_that_is_not_verified_the_model_sees_the_culprits_diff() {
    // Both reverts drop the `step` parameter a newer test needs; the model
    // is shown what the culprit changed and answers with its one line.
    let s = scenarios::regression_entangled_with_later_work(8, 2);
    let fix = "app.py\n<<<<<<< SEARCH\n    end = start + size - 1\n=======\n    end = start + size\n>>>>>>> REPLACE\n";
    let fake = FakeChat::start(vec![Answer::Reply(fix.into())]).await;
    let report = investigate(s.repo.path(), &s.test_command, &fake.base_url, |_| {}).await;
    assert_eq!(report.verdict, Verdict::Regression, "{:?}", report.notes);
    let winner = report.winner.clone().expect("the model's edit is verified");
    assert_eq!(winner.detail.clone().unwrap()["source"], "model");
    let seen = fake.seen();
    let body: serde_json::Value = serde_json::from_str(&seen[0].body).unwrap();
    let prompt = body["messages"][1]["content"].as_str().unwrap();
    let culprit = s.culprit.clone().unwrap();
    assert!(
        prompt.contains(&format!(
            "The commit that introduced the failure: {}",
            &culprit[..12]
        )),
        "{prompt}"
    );
    assert!(prompt.contains("+    end = start + size - 1"), "{prompt}");
    assert!(prompt.contains("-    end = start + size\n"), "{prompt}");
}

/// The right fix of `scenarios::overfitting_trap` as a unified diff, with
/// wrong line numbers in its hunk header (hunks are placed by their text).
const DIFF_FIX: &str = "Here is the patch:\n\n```diff\ndiff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -7,3 +7,3 @@ def window(xs, start, size):\n def window(xs, start, size):\n-    end = size\n+    end = start + size\n     return xs[start:end]\n```\n";

#[tokio::test]
async fn a_unified_diff_is_verified_by_the_contract() {
    let (report, seen) = trap(vec![Answer::Reply(DIFF_FIX.into())], |_| {}).await;
    let winner = report.winner.clone().expect("a verified repair");
    assert_eq!(
        winner.status,
        HypothesisStatus::Verified,
        "{}",
        winner.status_reason
    );
    assert_eq!(winner.detail.as_ref().unwrap()["source"], "model");
    let patch = winner.patch.clone().unwrap();
    assert!(patch.contains("+    end = start + size"), "{patch}");
    let h = repair_hypothesis(&report);
    assert_eq!(calls(h)[0]["outcome"], "edit screened and proven");
    assert!(
        winner.experiments.iter().any(|e| e
            .note
            .as_deref()
            .is_some_and(|n| n.contains("naming the patched function"))),
        "the neighbour tests judged the diff too"
    );
    let body: serde_json::Value = serde_json::from_str(&seen[0].body).unwrap();
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("unified diff"), "{system}");
}

#[tokio::test]
async fn hostile_and_malformed_diffs_are_refused_or_unparsable_and_counted() {
    let s = scenarios::overfitting_trap(4);
    std::os::unix::fs::symlink("app.py", s.repo.path().join("alias.py")).unwrap();
    s.repo.git(&["add", "alias.py"]);
    s.repo.git(&["commit", "-q", "-m", "An alias"]);
    let tests_before = std::fs::read_to_string(s.repo.path().join("test_app.py")).unwrap();
    let git_config = std::fs::read_to_string(s.repo.path().join(".git/config")).unwrap();
    let hunk = "@@ -1,3 +1,3 @@\n def window(xs, start, size):\n-    end = size\n+    end = start + size\n";
    let fake = FakeChat::start(vec![
        // The oracle rule: the failing test's own file.
        Answer::Reply("--- a/test_app.py\n+++ b/test_app.py\n@@ -5 +5 @@\n-    assert window([1, 2, 3, 4], 1, 2) == [2, 3]\n+    assert True\n".into()),
        // Outside the repository.
        Answer::Reply(format!("--- a/../outside.py\n+++ b/../outside.py\n{hunk}")),
        // Inside .git.
        Answer::Reply("diff --git a/.git/config b/.git/config\n--- a/.git/config\n+++ b/.git/config\n@@ -1 +1,2 @@\n [core]\n+\thooksPath = /tmp\n".into()),
        // A new symlink over the suspect's file.
        Answer::Reply("diff --git a/app.py b/app.py\nnew file mode 120000\n--- /dev/null\n+++ b/app.py\n@@ -0,0 +1 @@\n+/etc/passwd\n".into()),
        // Through a tracked symlink.
        Answer::Reply(format!("--- a/alias.py\n+++ b/alias.py\n{hunk}")),
        // A new file.
        Answer::Reply("--- /dev/null\n+++ b/sitecustomize.py\n@@ -0,0 +1 @@\n+import os\n".into()),
        // Malformed: a hunk without a file header.
        Answer::Reply(hunk.into()),
        // Malformed: a context that is not in the file.
        Answer::Reply("--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n def window(xs, begin, size):\n-    end = size\n+    end = begin + size\n".into()),
    ])
    .await;
    let report = investigate(s.repo.path(), &s.test_command, &fake.base_url, |c| {
        c.max_patch_attempts = 8
    })
    .await;
    assert!(report.winner.is_none());
    let h = repair_hypothesis(&report);
    assert_eq!(
        h.status,
        HypothesisStatus::Inconclusive,
        "{}",
        h.status_reason
    );
    let run = &h.detail.as_ref().unwrap()["model_run"];
    let calls = calls(h);
    let outcome = |i: usize| calls[i]["outcome"].as_str().unwrap().to_string();
    let reason = |i: usize| calls[i]["reason"].as_str().unwrap().to_string();
    assert_eq!(calls.len(), 8, "{calls:?}");
    assert_eq!(run["refused_edits"], 7, "{run}");
    assert!(reason(0).contains("oracle rule"), "{}", reason(0));
    assert!(reason(1).contains("leaves the repository"), "{}", reason(1));
    assert!(reason(2).contains(".git"), "{}", reason(2));
    assert!(reason(3).contains("symlink"), "{}", reason(3));
    assert!(reason(4).contains("alias.py is a symlink"), "{}", reason(4));
    assert!(
        reason(5).contains("creates sitecustomize.py"),
        "{}",
        reason(5)
    );
    assert_eq!(outcome(6), "unparsable", "{}", reason(6));
    assert!(reason(6).contains("file headers"), "{}", reason(6));
    assert_eq!(outcome(7), "refused", "{}", reason(7));
    assert!(reason(7).contains("occurs 0 times"), "{}", reason(7));
    assert_eq!(
        std::fs::read_to_string(s.repo.path().join("test_app.py")).unwrap(),
        tests_before
    );
    assert_eq!(
        std::fs::read_to_string(s.repo.path().join(".git/config")).unwrap(),
        git_config
    );
    assert!(!s.repo.path().parent().unwrap().join("outside.py").exists());
    assert!(!s.repo.path().join("sitecustomize.py").exists());
}
