//! The description rendered from a report, and the request built from it.

use crate::fixtures::*;
use tracelab_codehost::body::{render, title};
use tracelab_codehost::{DEFAULT_LABELS, ErrorKind, PullRequestRequest};
use tracelab_domain::hypothesis::HypothesisStatus;

#[test]
fn the_body_holds_the_diagnosis() {
    let report = report();
    let md = render(&report);
    for expected in [
        "## TraceLab diagnosis",
        "| Verdict | `regression` |",
        "| Culprit | `c0ffee012345` Make add() count the carry &#64;release-team |",
        "| Search confidence | 0.987 |",
        "| Fix for it verified | yes |",
        "98.7% confident",
        "A fix that undoes it was **verified**",
        "### Fix: hypothesis 2",
        "**VERIFIED** under the four-part contract",
        "| 1 | the failure reproduces at the bad revision | `0123456789ab` | 5 (5) | fail | yes |",
        "| 2 | the regression test fails before the fix | `0123456789ab` | 1 (1) | fail | yes |",
        "| 3 | the regression test passes after the fix | `0123456789ab` | 5 (0) | pass | yes |",
        "| 4 | the relevant existing tests pass after the fix | `0123456789ab` | 1 (0) | pass | yes |",
        "git checkout badbadbadbadbadbadbadbadbadbadbadbadbad0\nAPI_TOKEN=*** python3 -m pytest tests/test_app.py::test_add",
        "(`***` stands for a value withheld from this description.)",
        "At the good revision `900d900d900d900d900d900d900d900d900d900d` it passes.",
        "On this pull request's branch `ai-debug/PVS-421-h2` it passes.",
        "1 file changed, +1 −1 lines",
        "- `app.py`",
    ] {
        assert!(md.contains(expected), "{expected:?} missing from:\n{md}");
    }
    assert_eq!(
        title(&report),
        "TraceLab: Revert c0ffee01: add() returns one too many"
    );
}

#[test]
fn nothing_secret_reaches_the_body() {
    let mut report = report();
    // The redaction corpus in every place the body does not show…
    let corpus = tracelab_testkit::secrets::planted();
    let planted: Vec<String> = corpus
        .iter()
        .map(|(_, value, line)| line.replace("{}", value))
        .collect();
    let winner = report.winner.as_mut().unwrap();
    winner.experiments[0].output = planted.join("\n");
    winner.experiments[0].note = Some(planted.join(" "));
    winner.detail = Some(serde_json::json!({ "output": planted }));
    report.notes = planted.clone();
    report.transitions.clear();
    let md = render(&report);
    for (kind, value, _) in &corpus {
        for secret in tracelab_testkit::secrets::secrets_of(kind, value) {
            assert!(!md.contains(&secret), "{kind} {secret} leaked");
        }
    }
    // …and credential shapes in the places it does show.
    for leaked in [
        "planted-env-secret",
        "planted-output-secret",
        "planted-note-secret",
        "planted-detail-secret",
        "planted-notes-secret",
    ] {
        assert!(!md.contains(leaked), "{leaked} in:\n{md}");
    }
    assert!(
        !md.contains(PATCH),
        "the diff is the change, not the description"
    );
}

#[test]
fn only_a_verified_fix_on_a_branch_becomes_a_request() {
    let report = report();
    let request = PullRequestRequest::for_report(
        &report,
        "https://github.com/acme/shop",
        "main",
        "/srv/repos/shop",
    )
    .unwrap();
    assert_eq!(request.branch, BRANCH);
    assert_eq!(request.labels, DEFAULT_LABELS);
    assert_eq!(request.title, title(&report));
    assert_eq!(request.body, render(&report));

    let mut rejected = report.clone();
    rejected.winner.as_mut().unwrap().status = HypothesisStatus::Rejected;
    let e = PullRequestRequest::for_report(&rejected, "u", "main", "/x").unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    assert!(e.message.contains("not VERIFIED"), "{e}");
    let mut none = report.clone();
    none.winner = None;
    assert!(PullRequestRequest::for_report(&none, "u", "main", "/x").is_err());
    let mut no_branch = report;
    no_branch.winner.as_mut().unwrap().branch = None;
    assert!(PullRequestRequest::for_report(&no_branch, "u", "main", "/x").is_err());
}
