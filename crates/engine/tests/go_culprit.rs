//! A Go regression end to end with the local sandbox and the real `go`
//! toolchain: the test command selects its test with a separated `-run X`
//! (the single-test command must not read `X` as a package), a failing
//! `t.Errorf` prints no frames, and the culprit — a real-looking commit that
//! also changed an unrelated method of the same name on another type —
//! is fixed by restoring only the method the failing test's name names.

mod support;

use std::time::Duration;
use tracelab_domain::experiment::{Outcome, Step};
use tracelab_domain::hypothesis::{HypothesisKind, HypothesisStatus};
use tracelab_domain::verdict::Verdict;
use tracelab_engine::EngineConfig;
use tracelab_testkit::FixtureRepo;

const GO_MOD: &str = "module example.com/flags\n\ngo 1.19\n";

const COUNT_GO: &str = "package flags\n\nimport \"strconv\"\n\n// Count counts how often a flag was given.\ntype countValue int\n\nfunc (c *countValue) Set(s string) error {\n\tif s == \"+1\" {\n\t\t*c = *c + 1\n\t\treturn nil\n\t}\n\tv, err := strconv.Atoi(s)\n\t*c = countValue(v)\n\treturn err\n}\n\n// Count applies the values of a counting flag in order.\nfunc Count(values ...string) (int, error) {\n\tvar c countValue\n\tfor _, v := range values {\n\t\tif err := c.Set(v); err != nil {\n\t\t\treturn 0, err\n\t\t}\n\t}\n\treturn int(c), nil\n}\n";

const IP_GO: &str = "package flags\n\nimport \"strings\"\n\ntype ipValue string\n\nfunc (i *ipValue) Set(s string) error {\n\t*i = ipValue(s)\n\treturn nil\n}\n\n// IP reads an address flag.\nfunc IP(s string) string {\n\tvar i ipValue\n\t_ = i.Set(s)\n\treturn strings.ToLower(string(i))\n}\n";

/// The unrelated change the culprit also makes: blanks around an address
/// are trimmed (tested by its own test, which the command does not run).
const IP_TRIMMED_GO: &str = "package flags\n\nimport \"strings\"\n\ntype ipValue string\n\nfunc (i *ipValue) Set(s string) error {\n\t*i = ipValue(strings.TrimSpace(s))\n\treturn nil\n}\n\n// IP reads an address flag.\nfunc IP(s string) string {\n\tvar i ipValue\n\t_ = i.Set(s)\n\treturn strings.ToLower(string(i))\n}\n";

const COUNT_TEST_GO: &str = "package flags\n\nimport \"testing\"\n\nfunc TestCount(t *testing.T) {\n\tgot, err := Count(\"+1\", \"+1\", \"+1\")\n\tif err != nil || got != 3 {\n\t\tt.Errorf(\"expected 3, got %d (%v)\", got, err)\n\t}\n}\n\nfunc TestCountValue(t *testing.T) {\n\tif got, _ := Count(\"4\"); got != 4 {\n\t\tt.Errorf(\"expected 4, got %d\", got)\n\t}\n}\n";

const IP_TEST_GO: &str = "package flags\n\nimport \"testing\"\n\nfunc TestIPBlanks(t *testing.T) {\n\tif got := IP(\" 10.0.0.1 \"); got != \"10.0.0.1\" {\n\t\tt.Errorf(\"got %q\", got)\n\t}\n}\n";

#[tokio::test]
async fn a_go_regression_is_found_and_fixed_by_restoring_only_the_method_its_test_names() {
    let mut repo = FixtureRepo::new();
    repo.commit(
        "Counting and address flags",
        &[
            ("go.mod", GO_MOD),
            ("count.go", COUNT_GO),
            ("ip.go", IP_GO),
            ("count_test.go", COUNT_TEST_GO),
        ],
    );
    for n in 0..4 {
        repo.commit(
            &format!("Notes {n}"),
            &[("NOTES.md", &format!("notes {n}\n"))],
        );
    }
    let culprit = repo.commit(
        "Trim blanks around addresses",
        &[
            ("ip.go", IP_TRIMMED_GO),
            ("ip_test.go", IP_TEST_GO),
            ("count.go", &COUNT_GO.replace("s == \"+1\"", "s == \"+2\"")),
        ],
    );
    for n in 4..7 {
        repo.commit(
            &format!("Notes {n}"),
            &[("NOTES.md", &format!("notes {n}\n"))],
        );
    }

    let config = EngineConfig {
        parallelism: 2,
        command_timeout: Duration::from_secs(120),
        ..Default::default()
    };
    // `-run TestCount` also selects TestCountValue; `-count=1` keeps go
    // test from answering from its cache.
    let report = support::investigate_locally(
        config,
        "/usr/local/bin:/usr/bin:/bin",
        repo.path(),
        "go test -count=1 -run TestCount .",
        "T-GO",
    )
    .await
    .expect("the investigation completes (is `go` installed?)");

    assert_eq!(report.verdict, Verdict::Regression, "{:?}", report.notes);
    let found = report.culprit.as_ref().expect("a culprit");
    assert_eq!(found.commit.commit, culprit, "{:?}", report.notes);
    assert!(found.verified, "{}", found.verification);
    let revert = report
        .hypotheses
        .iter()
        .find(|h| h.kind == HypothesisKind::Revert)
        .expect("a revert hypothesis");
    assert_eq!(
        revert.status,
        HypothesisStatus::Verified,
        "{}",
        revert.status_reason
    );
    // The failing test alone, by its exact name (a `-run` value left
    // behind would be read as a package and fail differently).
    let before = revert
        .experiments
        .iter()
        .find(|e| e.step == Step::RegressionBefore)
        .expect("the regression test before the fix");
    assert!(
        before.command.contains("-run=^TestCount$") && !before.command.contains(" TestCount "),
        "{}",
        before.command
    );
    assert_eq!(before.outcome, Outcome::Fail, "{}", before.output);
    // Only countValue.Set comes back: the culprit's trimming of addresses
    // (ipValue.Set, a method of the same name) is its own work, kept.
    let patch = revert.patch.as_deref().expect("the fix's patch");
    assert!(patch.contains("count.go"), "{patch}");
    assert!(!patch.contains("ip.go"), "{patch}");
    assert!(
        revert.status_reason.contains("countValue.Set")
            && !revert.status_reason.contains("ipValue.Set"),
        "{}",
        revert.status_reason
    );
}
