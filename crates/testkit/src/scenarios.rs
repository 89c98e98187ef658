//! Histories with a known answer. Tests run with `python3 <script>`.

use crate::FixtureRepo;

/// A fixture plus the facts a test checks against.
#[derive(Debug)]
pub struct Scenario {
    pub repo: FixtureRepo,
    pub test_command: String,
    /// Oldest commit (passes unless the scenario says otherwise).
    pub root: String,
    pub culprit: Option<String>,
    /// Commits where the test fails for another reason than the regression.
    pub broken: Vec<String>,
    pub head: String,
    /// State the fixture's tests keep outside the sandboxes (run counters
    /// shared by all of them), removed with the scenario.
    pub shared_state: Option<tempfile::TempDir>,
}

const APP_GOOD: &str =
    "def add(a, b):\n    return a + b\n\n\ndef scale(x, factor):\n    return x * factor\n";
const APP_BAD: &str = "def add(a, b):\n    # Fast path for small numbers.\n    if a < 10 and b < 10:\n        return a + b + (1 if a == b else 0)\n    return a + b\n\n\ndef scale(x, factor):\n    return x * factor\n";
const UTIL: &str = "def fmt(value):\n    return f\"<{value}>\"\n";
const TEST_APP: &str = "from app import add\nfrom util import fmt\n\n\ndef test_add():\n    result = add(2, 2)\n    assert result == 4, f\"add(2, 2) returned {fmt(result)}\"\n\n\nif __name__ == \"__main__\":\n    test_add()\n    print(\"ok\")\n";

impl Scenario {
    fn finish(
        repo: FixtureRepo,
        test_command: &str,
        root: String,
        culprit: Option<String>,
        broken: Vec<String>,
    ) -> Self {
        let head = repo.head();
        Scenario {
            repo,
            test_command: test_command.into(),
            root,
            culprit,
            broken,
            head,
            shared_state: None,
        }
    }
}

/// The first commit of the calculator histories: `app.py`, `util.py`, `test_app.py` (passing).
fn calculator(repo: &mut FixtureRepo) -> String {
    repo.commit(
        "Initial calculator",
        &[
            ("app.py", APP_GOOD),
            ("util.py", UTIL),
            ("test_app.py", TEST_APP),
        ],
    )
}

fn filler(repo: &mut FixtureRepo, i: usize) -> String {
    let notes = format!("release notes, entry {i}\n");
    repo.commit(&format!("Update notes ({i})"), &[("NOTES.md", &notes)])
}

/// A regression hidden behind a range where the test fails differently.
///
/// Commit layout (24 commits): 0 root (good); 4 removes `util.py`, so the test
/// fails with `ModuleNotFoundError` until 13 restores it; 17 is the culprit
/// (`add(2, 2)` returns 5, an `AssertionError`). `git bisect run` on exit codes
/// blames commit 4; a signature-aware search must blame 17.
pub fn regression_behind_broken_range() -> Scenario {
    let mut repo = FixtureRepo::new();
    let root = calculator(&mut repo);
    let mut broken = Vec::new();
    let mut culprit = None;
    for i in 1..24 {
        let sha = match i {
            4 => repo.remove("Move formatting helpers (WIP)", &["util.py"]),
            13 => repo.commit("Bring formatting helpers back", &[("util.py", UTIL)]),
            17 => repo.commit("Speed up add for small numbers", &[("app.py", APP_BAD)]),
            _ => filler(&mut repo, i),
        };
        if (4..13).contains(&i) {
            broken.push(sha.clone());
        }
        if i == 17 {
            culprit = Some(sha);
        }
    }
    Scenario::finish(repo, "python3 test_app.py", root, culprit, broken)
}

/// A linear history of `commits` commits whose test sleeps `test_seconds`;
/// commit number `culprit_at` (1-based from the root) introduces the failure.
pub fn linear_regression(commits: usize, culprit_at: usize, test_seconds: f64) -> Scenario {
    linear_regression_with_test(commits, culprit_at, test_seconds, "")
}

/// [`linear_regression`] whose test first appends one line to `run_log`
/// (an absolute path outside the repository): the name of the folder it
/// runs in, its pid and the revision checked out there. A side channel that counts how often the test
/// really ran, and where, independent of what the product records.
pub fn linear_regression_logged(
    commits: usize,
    culprit_at: usize,
    test_seconds: f64,
    run_log: &std::path::Path,
) -> Scenario {
    let log = run_log.display().to_string();
    assert!(
        run_log.is_absolute() && !log.contains(['"', '\\', '\n']),
        "the run log needs a plain absolute path: {log}"
    );
    let prologue = format!(
        "import os, subprocess\n_rev = subprocess.run([\"git\", \"rev-parse\", \"HEAD\"], capture_output=True, text=True).stdout.strip()\nwith open(\"{log}\", \"a\") as _log:\n    _log.write(f\"{{os.path.basename(os.getcwd())}} {{os.getpid()}} {{_rev}}\\n\")\n"
    );
    linear_regression_with_test(commits, culprit_at, test_seconds, &prologue)
}

fn linear_regression_with_test(
    commits: usize,
    culprit_at: usize,
    test_seconds: f64,
    prologue: &str,
) -> Scenario {
    assert!(culprit_at >= 1 && culprit_at < commits);
    let test = format!(
        "{prologue}import time\nfrom app import add\n\ntime.sleep({test_seconds})\nassert add(2, 2) == 4, f\"add(2, 2) returned {{add(2, 2)}}\"\nprint(\"ok\")\n"
    );
    let mut repo = FixtureRepo::new();
    let root = repo.commit(
        "Initial calculator",
        &[("app.py", APP_GOOD), ("test_app.py", &test)],
    );
    let mut culprit = None;
    for i in 1..commits {
        if i == culprit_at {
            culprit = Some(repo.commit("Speed up add for small numbers", &[("app.py", APP_BAD)]));
        } else {
            let counter = format!("{i}\n");
            repo.commit(
                &format!("Bump build counter to {i}"),
                &[("COUNTER", &counter)],
            );
        }
    }
    Scenario::finish(repo, "python3 test_app.py", root, culprit, Vec::new())
}

/// A test that fails a fraction `rate` of its runs at every commit (no
/// culprit), on a fixed schedule per sandbox (`spread_schedule`).
pub fn flaky(rate: f64, commits: usize) -> Scenario {
    let test = format!(
        "{}\n\nassert not fails_now(), \"race lost: the connection was taken\"\nprint(\"ok\")\n",
        spread_schedule(rate)
    );
    let mut repo = FixtureRepo::new();
    let root = repo.commit("Add a racy test", &[("test_race.py", &test)]);
    for i in 1..commits {
        filler(&mut repo, i);
    }
    Scenario::finish(repo, "python3 test_race.py", root, None, Vec::new())
}

/// Python defining `fails_now()`: the runs in one sandbox (counted in its
/// private `HOME`) follow `pattern` cyclically, `F` failing and `P`
/// passing. Deterministic "flakiness", so tests about rates cannot fail by
/// bad luck, whatever order the engine runs them in. Each pattern counts
/// its own runs: a sandbox that runs revisions with different patterns in
/// turn (a rate before a culprit and after it) sees each one's runs follow
/// its own pattern, not a mixture that depends on the engine's order.
fn schedule(pattern: &str) -> String {
    format!(
        "import os\n\nSCHEDULE = \"{pattern}\"\n\n\ndef fails_now():\n    path = os.path.join(os.environ[\"HOME\"], \"runs-\" + SCHEDULE)\n    n = int(open(path).read()) if os.path.exists(path) else 0\n    open(path, \"w\").write(str(n + 1))\n    return SCHEDULE[n % len(SCHEDULE)] == \"F\"\n"
    )
}

/// [`schedule`] failing a fraction `rate` of the runs, spread evenly over
/// every 20.
fn spread_schedule(rate: f64) -> String {
    let pattern: String = (0..20)
        .map(|i| {
            let before = (f64::from(i) * rate).floor();
            let after = (f64::from(i + 1) * rate).floor();
            if after > before { 'F' } else { 'P' }
        })
        .collect();
    schedule(&pattern)
}

/// The regression is introduced on a feature branch that is merged into main.
///
/// ```text
/// main:    root - m1 - m2 ------------ merge - m3 (HEAD)
///                   \                 /
/// feature:           f1 - f2 (culprit) - f3
/// ```
pub fn regression_in_merged_branch() -> Scenario {
    let mut repo = FixtureRepo::new();
    let root = calculator(&mut repo);
    filler(&mut repo, 1);
    repo.branch("feature");
    repo.commit(
        "Feature: add scale docs",
        &[("docs/scale.md", "scale(x, f) multiplies\n")],
    );
    let culprit = repo.commit("Feature: speed up add", &[("app.py", APP_BAD)]);
    repo.commit("Feature: more docs", &[("docs/add.md", "add(a, b) adds\n")]);
    repo.checkout("main");
    filler(&mut repo, 2);
    filler(&mut repo, 3);
    repo.merge("feature", "Merge branch 'feature'");
    filler(&mut repo, 4);
    Scenario::finish(repo, "python3 test_app.py", root, Some(culprit), Vec::new())
}

/// The test passes at every commit.
pub fn passing(commits: usize) -> Scenario {
    let mut repo = FixtureRepo::new();
    let root = calculator(&mut repo);
    for i in 1..commits {
        filler(&mut repo, i);
    }
    Scenario::finish(repo, "python3 test_app.py", root, None, Vec::new())
}

/// A test that only passes in UTC: it hard-codes a UTC hour for a timestamp
/// rendered in local time. Fails in every commit when `TZ` is not UTC.
pub fn timezone_dependent(commits: usize) -> Scenario {
    let test = "import time\n\nstamp = time.strftime(\"%H:%M\", time.localtime(0))\nassert stamp == \"00:00\", f\"expected 00:00, rendered {stamp}\"\nprint(\"ok\")\n";
    let mut repo = FixtureRepo::new();
    let root = repo.commit("Add report time test", &[("test_time.py", test)]);
    for i in 1..commits {
        filler(&mut repo, i);
    }
    Scenario::finish(repo, "python3 test_time.py", root, None, Vec::new())
}

/// A unittest suite where `test_b` passes alone and fails after `test_a`
/// pollutes a module-level cache (unittest runs tests in name order).
pub fn order_dependent() -> Scenario {
    let cache = "CACHE = {}\n\n\ndef price(item):\n    return CACHE.get(item, 10)\n";
    let tests = "import unittest\n\nimport shop\n\n\nclass ShopTest(unittest.TestCase):\n    def test_a_discount(self):\n        shop.CACHE[\"book\"] = 5\n        self.assertEqual(shop.price(\"book\"), 5)\n\n    def test_b_default_price(self):\n        self.assertEqual(shop.price(\"book\"), 10)\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n";
    let mut repo = FixtureRepo::new();
    let root = repo.commit(
        "Shop with a price cache",
        &[("shop.py", cache), ("test_shop.py", tests)],
    );
    filler(&mut repo, 1);
    Scenario::finish(
        repo,
        "python3 -m unittest test_shop",
        root,
        None,
        Vec::new(),
    )
}

/// A regression that makes the test fail only sometimes: from commit
/// `culprit_at` on, `add` is wrong when a race is lost (a fraction `rate` of
/// the runs, on a fixed schedule per sandbox).
pub fn flaky_regression(commits: usize, culprit_at: usize, rate: f64) -> Scenario {
    let racy = format!(
        "{}\n\ndef add(a, b):\n    # Cache lookups race with writers.\n    if fails_now():\n        return a + b + 1\n    return a + b\n\n\ndef scale(x, factor):\n    return x * factor\n",
        spread_schedule(rate)
    );
    let mut repo = FixtureRepo::new();
    let root = calculator(&mut repo);
    let mut culprit = None;
    for i in 1..commits {
        if i == culprit_at {
            culprit = Some(repo.commit("Cache add results", &[("app.py", &racy)]));
        } else {
            filler(&mut repo, i);
        }
    }
    Scenario::finish(repo, "python3 test_app.py", root, culprit, Vec::new())
}

const APP_TYPED_BAD: &str = "def add(a: int, b: int) -> int:\n    return a + b + (1 if a == b and a < 10 else 0)\n\n\ndef scale(x: float, factor: float) -> float:\n    return x * factor\n";

/// A regression carried forward through later commits that edit the same
/// function, so the culprit's textual revert conflicts at the bad revision.
///
/// `culprit_at` breaks `add(2, 2)` on one line; two commits later type hints
/// are added to `add`'s signature (the adjacent line) and to `scale`; later
/// commits touch `scale` again. `git revert` of the culprit conflicts; a
/// symbol-level restore of `add` applies.
pub fn carried_regression(commits: usize, culprit_at: usize) -> Scenario {
    assert!(culprit_at >= 1 && culprit_at + 3 < commits);
    let broken = "def add(a, b):\n    return a + b + (1 if a == b and a < 10 else 0)\n\n\ndef scale(x, factor):\n    return x * factor\n";
    let mut repo = FixtureRepo::new();
    let root = calculator(&mut repo);
    let mut culprit = None;
    for i in 1..commits {
        if i == culprit_at {
            culprit = Some(repo.commit("Bias add for small equal numbers", &[("app.py", broken)]));
        } else if i == culprit_at + 2 {
            repo.commit(
                "Type hints for the calculator",
                &[("app.py", APP_TYPED_BAD)],
            );
        } else if i > culprit_at + 2 && i % 5 == 0 {
            let app = APP_TYPED_BAD.replace(
                "    return x * factor\n",
                &format!("    # Revision {i}: factor is applied once.\n    return x * factor\n"),
            );
            repo.commit(&format!("Document scale ({i})"), &[("app.py", &app)]);
        } else {
            filler(&mut repo, i);
        }
    }
    Scenario::finish(repo, "python3 test_app.py", root, culprit, Vec::new())
}

/// A regression that later work builds on: `culprit_at` capitalises
/// `greet`'s greeting (breaking `test_app.py::test_greet`), and two commits
/// later a newer test, `test_banner.py`, comes to expect the capital. Reverting the
/// culprit fixes the failing test and breaks the newer one, so no revert is
/// verified: the culprit is found but its fix is rejected. The test command
/// runs both files with pytest.
pub fn regression_later_work_depends_on(commits: usize, culprit_at: usize) -> Scenario {
    assert!(culprit_at >= 1 && culprit_at + 2 < commits);
    let greet = |word: &str| format!("def greet(name):\n    return \"{word} \" + name\n");
    let test_app =
        "from app import greet\n\n\ndef test_greet():\n    assert greet(\"bo\") == \"hello bo\"\n";
    let banner = |check: &str| {
        format!("from app import greet\n\n\ndef test_banner():\n    assert greet(\"all\"){check}\n")
    };
    let mut repo = FixtureRepo::new();
    let root = repo.commit(
        "Greetings",
        &[
            ("app.py", &greet("hello")),
            ("test_app.py", test_app),
            ("test_banner.py", &banner("")),
        ],
    );
    let mut culprit = None;
    for i in 1..commits {
        if i == culprit_at {
            culprit = Some(repo.commit("Capitalise greetings", &[("app.py", &greet("Hello"))]));
        } else if i == culprit_at + 2 {
            let capital = banner(".startswith(\"Hello\")");
            repo.commit("The banner is capitalised", &[("test_banner.py", &capital)]);
        } else {
            filler(&mut repo, i);
        }
    }
    Scenario::finish(
        repo,
        "python3 -m pytest -q -p no:cacheprovider test_app.py test_banner.py",
        root,
        culprit,
        Vec::new(),
    )
}

/// A regression entangled with work that came with it: `culprit_at` gives
/// `window` a `step` parameter and, with it, an off-by-one end (breaking
/// `test_app.py::test_window`); two commits later `test_step.py` comes to
/// use `step`. Neither the revert nor a symbol-level restore of `window` is
/// verified (both drop `step`, which the newer test needs); the repair
/// template that removes the `- 1` is.
pub fn regression_entangled_with_later_work(commits: usize, culprit_at: usize) -> Scenario {
    assert!(culprit_at >= 1 && culprit_at + 2 < commits);
    let good = "def window(xs, start, size):\n    end = start + size\n    return xs[start:end]\n";
    let broken = "def window(xs, start, size, step=1):\n    end = start + size - 1\n    return xs[start:end:step]\n";
    let test_app = "from app import window\n\n\ndef test_window():\n    assert window([1, 2, 3, 4], 1, 2) == [2, 3]\n";
    let step = |body: &str| format!("from app import window\n\n\ndef test_step():\n    {body}\n");
    let mut repo = FixtureRepo::new();
    let root = repo.commit(
        "Sliding windows",
        &[
            ("app.py", good),
            ("test_app.py", test_app),
            ("test_step.py", &step("assert window([1, 2, 3], 0, 3)")),
        ],
    );
    let mut culprit = None;
    for i in 1..commits {
        if i == culprit_at {
            culprit = Some(repo.commit("Windows with a step", &[("app.py", broken)]));
        } else if i == culprit_at + 2 {
            let uses_step = step("assert window([1, 2, 3, 4, 5, 6], 0, 6, 2) == [1, 3, 5]");
            repo.commit("Test windows with a step", &[("test_step.py", &uses_step)]);
        } else {
            filler(&mut repo, i);
        }
    }
    Scenario::finish(
        repo,
        "python3 -m pytest -q -p no:cacheprovider test_app.py test_step.py",
        root,
        culprit,
        Vec::new(),
    )
}

/// A regression whose lines were rewritten later: neither a textual revert
/// nor a symbol-level restore applies, but the text the culprit wrote is
/// still there.
///
/// `culprit_at` turns `a + b` into `a - b`; two commits later `add` becomes
/// an alias of a new `plus` whose body keeps the culprit's `a - b` in a
/// rewritten statement.
pub fn regression_rewritten_later(commits: usize, culprit_at: usize) -> Scenario {
    assert!(culprit_at >= 1 && culprit_at + 3 < commits);
    let broken = APP_GOOD.replace("return a + b", "return a - b");
    let rewritten = "def plus(a, b):\n    total = a - b\n    return total\n\n\nadd = plus\n\n\ndef scale(x, factor):\n    return x * factor\n";
    let mut repo = FixtureRepo::new();
    let root = calculator(&mut repo);
    let mut culprit = None;
    for i in 1..commits {
        if i == culprit_at {
            culprit = Some(repo.commit("Subtract in add", &[("app.py", &broken)]));
        } else if i == culprit_at + 2 {
            repo.commit("add is an alias of plus", &[("app.py", rewritten)]);
        } else {
            filler(&mut repo, i);
        }
    }
    Scenario::finish(repo, "python3 test_app.py", root, culprit, Vec::new())
}

/// The culprit commit (a merged pull request, squashed) breaks `add` and
/// also edits the failing test's file (a new, passing test case). The fix
/// must revert `app.py` only: the test that judges it stays as it is.
pub fn culprit_edits_its_test(commits: usize, culprit_at: usize) -> Scenario {
    assert!(culprit_at >= 1 && culprit_at < commits);
    let test_more = TEST_APP
        .replace(
            "\n\nif __name__",
            "\n\ndef test_scale():\n    assert scale(2, 3) == 6\n\n\nif __name__",
        )
        .replace("from app import add\n", "from app import add, scale\n")
        .replace("    test_add()\n", "    test_scale()\n    test_add()\n");
    let mut repo = FixtureRepo::new();
    let root = calculator(&mut repo);
    let mut culprit = None;
    for i in 1..commits {
        if i == culprit_at {
            culprit = Some(repo.commit(
                "Speed up add; test scale (#42)",
                &[("app.py", APP_BAD), ("test_app.py", &test_more)],
            ));
        } else {
            filler(&mut repo, i);
        }
    }
    Scenario::finish(repo, "python3 test_app.py", root, culprit, Vec::new())
}

/// An old bug exposed by a new test: `culprit_at` breaks `add(2, 2)` while
/// the test only checks `add(2, 3)`; the newest commit extends the test to
/// `add(2, 2)` and fails. Running each probe's own test blames that newest
/// commit, which changes the test only (so it is not a culprit); running the
/// bad revision's test on every probe finds `culprit_at`.
pub fn old_bug_new_test(commits: usize, culprit_at: usize) -> Scenario {
    assert!(culprit_at >= 1 && culprit_at + 1 < commits);
    let weak_test = TEST_APP
        .replace("add(2, 2)", "add(2, 3)")
        .replace("== 4", "== 5");
    let mut repo = FixtureRepo::new();
    let root = repo.commit(
        "Initial calculator",
        &[
            ("app.py", APP_GOOD),
            ("util.py", UTIL),
            ("test_app.py", &weak_test),
        ],
    );
    let mut culprit = None;
    for i in 1..commits - 1 {
        if i == culprit_at {
            culprit = Some(repo.commit("Speed up add for small numbers", &[("app.py", APP_BAD)]));
        } else {
            filler(&mut repo, i);
        }
    }
    repo.commit("Test add with equal numbers", &[("test_app.py", TEST_APP)]);
    Scenario::finish(repo, "python3 test_app.py", root, culprit, Vec::new())
}

/// The failing test's file uses an API added after the good revision:
/// `api_at` adds `app.double` and a test of it to `test_app.py`, and
/// `culprit_at` breaks `add` (later, or earlier: the bug is then older than
/// the test file's new API). The bad revision's test file cannot even be
/// imported on the root's source, so the search must fall back to each
/// revision's own tests to judge the root good.
pub fn test_uses_newer_api(commits: usize, api_at: usize, culprit_at: usize) -> Scenario {
    assert!(
        api_at >= 1 && culprit_at >= 1 && api_at != culprit_at && culprit_at.max(api_at) < commits
    );
    const DOUBLE: &str = "\n\ndef double(x):\n    return 2 * x\n";
    let test_double = TEST_APP
        .replace("from app import add\n", "from app import add, double\n")
        .replace(
            "\n\nif __name__",
            "\n\ndef test_double():\n    assert double(3) == 6\n\n\nif __name__",
        )
        .replace("    test_add()\n", "    test_double()\n    test_add()\n");
    let app = |bugged: bool, api: bool| {
        let body = if bugged { APP_BAD } else { APP_GOOD };
        format!("{body}{}", if api { DOUBLE } else { "" })
    };
    let mut repo = FixtureRepo::new();
    let root = calculator(&mut repo);
    let mut culprit = None;
    for i in 1..commits {
        if i == api_at {
            repo.commit(
                "Add double()",
                &[
                    ("app.py", &app(culprit_at < api_at, true)),
                    ("test_app.py", &test_double),
                ],
            );
        } else if i == culprit_at {
            culprit = Some(repo.commit(
                "Speed up add for small numbers",
                &[("app.py", &app(true, api_at < culprit_at))],
            ));
        } else {
            filler(&mut repo, i);
        }
    }
    Scenario::finish(repo, "python3 test_app.py", root, culprit, Vec::new())
}

/// A connection pool whose `acquire` fails on a fixed schedule per sandbox:
/// run n (counted in the sandbox's private `HOME`) fails when
/// `n % every == 1`. Deterministic "flakiness", so tests about rates are not
/// themselves flaky; the second run in a fresh sandbox always fails.
fn scheduled_pool(every: u32) -> String {
    let pattern: String = (0..every.max(2))
        .map(|i| if i == 1 { 'F' } else { 'P' })
        .collect();
    patterned_pool(&pattern)
}

const TEST_RACE: &str =
    "from pool import acquire\n\nassert acquire(), \"race lost: no connection\"\nprint(\"ok\")\n";

/// The pool's outcomes follow `pattern` cyclically, one letter per run in
/// a sandbox (`P` pass, `F` fail): a flaky test whose every window of
/// `pattern.len()` runs has the same failure rate, whatever the order the
/// engine runs it in.
fn patterned_pool(pattern: &str) -> String {
    format!(
        "{}\n\ndef acquire():\n    return not fails_now()\n",
        schedule(pattern)
    )
}

/// A flaky test whose failure rate rises at `culprit_at`: its outcomes
/// follow the `before` pattern, then the `after` one (see `patterned_pool`).
pub fn flakiness_regression(
    commits: usize,
    culprit_at: usize,
    before: &str,
    after: &str,
) -> Scenario {
    pool_history(commits, culprit_at, (before, after), |_, _| false)
}

/// [`flakiness_regression`] whose commits from `lucky_from` on (before the
/// tip) pass their first `lucky` runs, then follow `after`: a stretch of
/// luck that fools a sequential rate test into judging a revision past
/// the culprit good. Their runs are counted in a file outside the
/// sandboxes (under `shared_state`, locked), so each revision's runs are
/// numbered across the pool's slots in the order they start, whichever
/// sandbox runs them: the luck lasts exactly `lucky` runs.
pub fn flakiness_regression_with_luck(
    commits: usize,
    culprit_at: usize,
    lucky_from: usize,
    lucky: u32,
    (before, after): (&str, &str),
) -> Scenario {
    assert!(culprit_at < lucky_from && lucky_from + 1 < commits);
    let state = tempfile::tempdir().expect("a directory for the run counters");
    let mut scenario = pool_history(commits, culprit_at, (before, after), |repo, i| {
        if (lucky_from..commits - 1).contains(&i) {
            let counter = state.path().join(format!("runs-{i}"));
            let pool = lucky_pool(&counter.to_string_lossy(), lucky, after);
            repo.commit(&format!("Tune the pool, step {i}"), &[("pool.py", &pool)]);
        } else if i == commits - 1 {
            repo.commit(
                "Tune the pool, done",
                &[("pool.py", &patterned_pool(after))],
            );
        } else {
            return false;
        }
        true
    });
    scenario.shared_state = Some(state);
    scenario
}

/// The connection pool's history: its first commit follows `before`, the
/// culprit `after`; every other commit is what `other(repo, i)` commits,
/// or a filler when it commits nothing (returns false).
fn pool_history(
    commits: usize,
    culprit_at: usize,
    (before, after): (&str, &str),
    mut other: impl FnMut(&mut FixtureRepo, usize) -> bool,
) -> Scenario {
    assert!(culprit_at >= 1 && culprit_at < commits);
    let mut repo = FixtureRepo::new();
    let root = repo.commit(
        "Add a connection pool",
        &[
            ("pool.py", &patterned_pool(before)),
            ("test_race.py", TEST_RACE),
        ],
    );
    let mut culprit = None;
    for i in 1..commits {
        if i == culprit_at {
            culprit = Some(repo.commit(
                "Share the connection pool",
                &[("pool.py", &patterned_pool(after))],
            ));
        } else if !other(&mut repo, i) {
            filler(&mut repo, i);
        }
    }
    Scenario::finish(repo, "python3 test_race.py", root, culprit, Vec::new())
}

/// A pool that passes the first `lucky` runs counted in `counter`, then
/// follows `pattern` (`P` pass, `F` fail) cyclically.
fn lucky_pool(counter: &str, lucky: u32, pattern: &str) -> String {
    format!(
        "import fcntl\nimport os\n\nCOUNTER = {counter:?}\nLUCKY = {lucky}\nPATTERN = \"{pattern}\"\n\n\ndef run_number():\n    fd = os.open(COUNTER, os.O_RDWR | os.O_CREAT)\n    fcntl.flock(fd, fcntl.LOCK_EX)\n    n = len(os.read(fd, 4096))\n    os.write(fd, b\"x\")\n    os.close(fd)\n    return n\n\n\ndef acquire():\n    n = run_number()\n    return n < LUCKY or PATTERN[(n - LUCKY) % len(PATTERN)] == \"P\"\n"
    )
}

/// A test failing one run in `every` (per sandbox) at every commit.
pub fn scheduled_flaky(every: u32, commits: usize) -> Scenario {
    let mut repo = FixtureRepo::new();
    let root = repo.commit(
        "Add a connection pool",
        &[
            ("pool.py", &scheduled_pool(every)),
            ("test_race.py", TEST_RACE),
        ],
    );
    for i in 1..commits {
        filler(&mut repo, i);
    }
    Scenario::finish(repo, "python3 test_race.py", root, None, Vec::new())
}

const WINDOW_BUGGY: &str = "def window(xs, start, size):\n    \"\"\"The `size` items of `xs` from `start` on.\"\"\"\n    end = start + size - 1\n    return xs[start:end]\n\n\ndef total(xs):\n    return sum(xs)\n";
const WINDOW_TESTS: &str = "from app import total, window\n\n\ndef test_window():\n    assert window([1, 2, 3, 4], 1, 2) == [2, 3]\n\n\ndef test_window_past_the_end():\n    assert window([1, 2, 3], 2, 5) == [3]\n\n\ndef test_total():\n    assert total([1, 2, 3]) == 6\n";

/// A bug present since the first commit: no revision passes, so there is no
/// culprit to revert, and only a repair of the code can fix it. `window`
/// drops the last item (`end = start + size - 1`); the fix is `- 0` or no
/// `- 1`. The test command runs one pytest test; its file holds neighbours.
pub fn bug_since_the_first_commit(commits: usize) -> Scenario {
    let mut repo = FixtureRepo::new();
    let root = repo.commit(
        "Sliding windows",
        &[("app.py", WINDOW_BUGGY), ("test_app.py", WINDOW_TESTS)],
    );
    for i in 1..commits {
        filler(&mut repo, i);
    }
    Scenario::finish(
        repo,
        "python3 -m pytest -q -p no:cacheprovider test_app.py::test_window",
        root,
        None,
        Vec::new(),
    )
}

const WINDOW_WRONG_END: &str =
    "def window(xs, start, size):\n    end = size\n    return xs[start:end]\n";
const WINDOW_NEIGHBOURS: &str = "from app import window\n\n\ndef test_window():\n    assert window([1, 2, 3, 4], 1, 2) == [2, 3]\n\n\ndef test_window_from_the_start():\n    assert window([1, 2, 3, 4, 5], 0, 3) == [1, 2, 3]\n";

/// A bug no template fixes (`end = size` should be `end = start + size`),
/// where one template (`xs[start:end + 1]`) makes the failing test pass and
/// breaks its neighbour `test_window_from_the_start`, which passes before.
pub fn overfitting_trap(commits: usize) -> Scenario {
    let mut repo = FixtureRepo::new();
    let root = repo.commit(
        "Windows",
        &[
            ("app.py", WINDOW_WRONG_END),
            ("test_app.py", WINDOW_NEIGHBOURS),
        ],
    );
    for i in 1..commits {
        filler(&mut repo, i);
    }
    Scenario::finish(
        repo,
        "python3 -m pytest -q -p no:cacheprovider test_app.py::test_window",
        root,
        None,
        Vec::new(),
    )
}

/// A culprit whose failure looks deterministic for its first runs and is
/// flaky after them, and whose fix no revert gives: `culprit_at` makes
/// `shout` raise while a per-sandbox schedule says the resource is busy (8
/// runs busy, then one in two) and, in the same function, adds the `quiet`
/// flag that `test_quiet.py` comes to use two commits later. Every revert
/// of `shout` drops `quiet` and breaks that newer test, so the re-runs at
/// bad that stopped for the culprit's fix must go on, and they find the
/// failure flaky. The test command runs both files with pytest.
pub fn regression_turning_flaky_without_a_fix(commits: usize, culprit_at: usize) -> Scenario {
    assert!(culprit_at >= 1 && culprit_at + 2 < commits);
    let good = "def shout(name):\n    return name.upper()\n";
    let bad = format!(
        "{}\n\nBUSY = fails_now()\n\n\ndef shout(name, quiet=False):\n    if BUSY and not quiet:\n        raise RuntimeError(\"resource busy\")\n    return name.lower() if quiet else name.upper()\n",
        schedule("FFFFFFFFPFPFPFPFPFPF")
    );
    let test_app =
        "from app import shout\n\n\ndef test_shout():\n    assert shout(\"bo\") == \"BO\"\n";
    let placeholder = "def test_placeholder():\n    assert True\n";
    let quiet = "from app import shout\n\n\ndef test_quiet():\n    assert shout(\"BO\", quiet=True) == \"bo\"\n";
    let mut repo = FixtureRepo::new();
    let root = repo.commit(
        "Shouting",
        &[
            ("app.py", good),
            ("test_app.py", test_app),
            ("test_quiet.py", placeholder),
        ],
    );
    let mut culprit = None;
    for i in 1..commits {
        if i == culprit_at {
            culprit = Some(repo.commit("Shout through the shared resource", &[("app.py", &bad)]));
        } else if i == culprit_at + 2 {
            repo.commit("Test quiet shouting", &[("test_quiet.py", quiet)]);
        } else {
            filler(&mut repo, i);
        }
    }
    Scenario::finish(
        repo,
        "python3 -m pytest -q -p no:cacheprovider test_app.py test_quiet.py",
        root,
        culprit,
        Vec::new(),
    )
}

/// A regression the failing test names: `test_app.py::test_add` calls
/// `add`, which `culprit_at` breaks. Every other commit edits `app.py` too
/// (`scale`, with the revision in a comment), so only the function a change
/// sits in tells the culprit apart; with `decoy_at`, that earlier commit
/// edits `add`'s body harmlessly (a comment), so the failure points at two
/// commits. Runs with pytest.
pub fn regression_the_test_names(
    commits: usize,
    culprit_at: usize,
    decoy_at: Option<usize>,
) -> Scenario {
    assert!(culprit_at >= 1 && culprit_at < commits);
    assert!(decoy_at.is_none_or(|d| d >= 1 && d < culprit_at));
    let app = |i: usize| {
        let mut add = String::from("def add(a, b):\n");
        if decoy_at.is_some_and(|d| i >= d) {
            add.push_str("    # Integers and floats alike.\n");
        }
        if i >= culprit_at {
            add.push_str(
                "    if a < 10 and b < 10:\n        return a + b + (1 if a == b else 0)\n",
            );
        }
        add.push_str("    return a + b\n");
        format!(
            "{add}\n\ndef scale(x, factor):\n    # Revised in change {i}.\n    return x * factor\n"
        )
    };
    let test = "from app import add\n\n\ndef test_add():\n    result = add(2, 2)\n    assert result == 4, f\"add(2, 2) returned {result}\"\n";
    let mut repo = FixtureRepo::new();
    let root = repo.commit(
        "Initial calculator",
        &[("app.py", &app(0)), ("test_app.py", test)],
    );
    let mut culprit = None;
    for i in 1..commits {
        let message = if i == culprit_at {
            "Fast path for small numbers in add".to_string()
        } else if decoy_at == Some(i) {
            "Document what add accepts".to_string()
        } else {
            format!("Revise scale ({i})")
        };
        let sha = repo.commit(&message, &[("app.py", &app(i))]);
        if i == culprit_at {
            culprit = Some(sha);
        }
    }
    Scenario::finish(
        repo,
        "python3 -m pytest -q -p no:cacheprovider test_app.py",
        root,
        culprit,
        Vec::new(),
    )
}
