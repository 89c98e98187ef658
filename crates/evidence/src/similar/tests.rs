//! The similarity tests: profiles, scores, best matches and merges.

use super::*;
use crate::group::GroupKey;
use crate::model::{Failure, Frame, Language};

fn fr(file: &str, func: &str, in_app: bool) -> Frame {
    Frame {
        file: Some(file.into()),
        function: Some(func.into()),
        line: Some(1),
        in_app,
    }
}

fn failure(ty: &str, msg: &str, frames: Vec<Frame>) -> Failure {
    let mut f = Failure::new(crate::FailureKind::Exception, crate::Language::Python);
    f.exception_type = Some(ty.into());
    f.message = msg.into();
    f.frames = frames;
    f.stack_signature = crate::stack_signature(&f.frames, 5);
    f.error_signature = crate::error_signature(f.exception_type.as_deref(), &f.message);
    f
}

#[test]
fn identical_traces_score_one_and_a_shifted_caller_still_matches() {
    let stats = FrameStats::new();
    let cfg = SimilarityConfig::default();
    let a = failure(
        "KeyError",
        "'email'",
        vec![
            fr("app/main.py", "main", true),
            fr("app/api.py", "handle", true),
            fr("app/orders.py", "checkout", true),
        ],
    );
    let pa = StackProfile::from_failure(&a);
    let s = similarity(&pa, &pa, &stats, &cfg);
    assert!((s.score - 1.0).abs() < 1e-9, "{s:?}");
    assert_eq!(s.matched.len(), 3);
    // Another outer caller: the innermost frames still carry most weight.
    let b = failure(
        "KeyError",
        "'email'",
        vec![
            fr("app/cli.py", "run", true),
            fr("app/api.py", "handle", true),
            fr("app/orders.py", "checkout", true),
        ],
    );
    let s = similarity(&pa, &StackProfile::from_failure(&b), &stats, &cfg);
    assert!(s.score > 0.7 && s.score < 1.0, "{s:?}");
    assert_eq!(s.matched[0].key, "orders.py|checkout");
}

#[test]
fn another_innermost_function_or_type_lowers_the_score() {
    let stats = FrameStats::new();
    let cfg = SimilarityConfig::default();
    let outer = |inner: &str| {
        vec![
            fr("app/main.py", "main", true),
            fr("app/api.py", "handle", true),
            fr("app/orders.py", inner, true),
        ]
    };
    let a = StackProfile::from_failure(&failure("KeyError", "x", outer("checkout")));
    let b = StackProfile::from_failure(&failure("KeyError", "x", outer("refund")));
    let c = StackProfile::from_failure(&failure("TypeError", "x", outer("checkout")));
    let ab = similarity(&a, &b, &stats, &cfg).score;
    let ac = similarity(&a, &c, &stats, &cfg).score;
    assert!(ab < cfg.threshold, "{ab}");
    assert!(ac < cfg.threshold, "{ac}");
    let empty = StackProfile::from_failure(&failure("KeyError", "x", Vec::new()));
    assert_eq!(similarity(&a, &empty, &stats, &cfg).score, 0.0);
}

#[test]
fn node_core_frames_match_across_versions_and_moved_functions_count_half() {
    let js = |frames: Vec<Frame>| {
        let mut f = failure("TypeError", "path must be a string", frames);
        f.language = crate::Language::Javascript;
        StackProfile::from_failure(&f)
    };
    let old = js(vec![
        fr("/app/server.js", "serve", true),
        fr("path.js", "Object.join", false),
        fr("internal/validators.js", "validateString", false),
    ]);
    let new = js(vec![
        fr("/app/server.js", "serve", true),
        fr("node:path", "Object.join", false),
        fr("node:internal/validators", "validateString", false),
    ]);
    assert_eq!(old.frames, new.frames, "one token per core frame");
    let stats = FrameStats::new();
    let cfg = SimilarityConfig::default();
    // The same function in a renamed file: matched, at half worth.
    let a = StackProfile::from_failure(&failure(
        "RuntimeError",
        "x",
        vec![
            fr("launch.py", "<module>", true),
            fr("launch.py", "prepare_environment", true),
        ],
    ));
    let b = StackProfile::from_failure(&failure(
        "RuntimeError",
        "x",
        vec![
            fr("launch.py", "<module>", true),
            fr("launch_utils.py", "prepare_environment", true),
        ],
    ));
    let moved = similarity(&a, &b, &stats, &cfg);
    assert_eq!(moved.matched.len(), 2, "{moved:?}");
    let strict = SimilarityConfig {
        moved_function: 0.0,
        ..cfg.clone()
    };
    // Without moved matches, the innermost app functions differ: apart.
    let apart = similarity(&a, &b, &stats, &strict);
    assert_eq!((apart.score, apart.matched.len()), (0.0, 0));
    assert!(moved.score > apart.score && moved.score < 1.0);
}

#[test]
fn traces_raised_in_different_app_functions_or_missing_different_names_stay_apart() {
    let stats = FrameStats::new();
    let cfg = SimilarityConfig::default();
    // The same framework frames above another integration's code.
    let setup = |pkg: &str| {
        StackProfile::from_failure(&failure(
            "AttributeError",
            "'HomeAssistant' object has no attribute 'helpers'",
            vec![
                fr(
                    "lib/homeassistant/setup.py",
                    "_async_setup_component",
                    false,
                ),
                fr("lib/python3.9/threading.py", "run", false),
                fr(
                    &format!("custom_components/{pkg}/__init__.py"),
                    "setup",
                    true,
                ),
            ],
        ))
    };
    let s = similarity(&setup("heatermeter"), &setup("amberelectric"), &stats, &cfg);
    assert_eq!(s.score, 0.0, "{s:?}");
    assert_eq!(
        similarity(&setup("heatermeter"), &setup("heatermeter"), &stats, &cfg).score,
        1.0
    );
    // Raised in a library by both: the app callers only weigh.
    let lib = |caller: &str| {
        StackProfile::from_failure(&failure(
            "RegexMatchError",
            "get_throttling_function_name: could not find match for multiple",
            vec![
                fr(caller, "main", true),
                fr("site-packages/pytube/__main__.py", "streams", false),
                fr("site-packages/pytube/__main__.py", "fmt_streams", false),
                fr("site-packages/pytube/extract.py", "apply_signature", false),
                fr(
                    "site-packages/pytube/cipher.py",
                    "get_throttling_plan",
                    false,
                ),
                fr(
                    "site-packages/pytube/cipher.py",
                    "get_throttling_function_name",
                    false,
                ),
            ],
        ))
    };
    assert!(similarity(&lib("app.py"), &lib("y2v.py"), &stats, &cfg).score >= cfg.threshold);
    // Import errors of different names, on the same import chain.
    let import = |msg: &str| {
        StackProfile::from_failure(&failure(
            "ImportError",
            msg,
            vec![
                fr("site-packages/flask/__init__.py", "<module>", false),
                fr("site-packages/jinja2/__init__.py", "<module>", false),
            ],
        ))
    };
    let a =
        import("cannot import name 'soft_unicode' from 'markupsafe' (/x/markupsafe/__init__.py)");
    let b = import("cannot import name 'escape' from 'jinja2' (/x/jinja2/__init__.py)");
    assert_eq!(a.missing, ["soft_unicode", "markupsafe"]);
    assert_eq!(similarity(&a, &b, &stats, &cfg).score, 0.0);
    assert_eq!(similarity(&a, &a, &stats, &cfg).score, 1.0);
}

#[test]
fn packages_are_read_from_every_install_layout() {
    for (path, package) in [
        (
            "eslint-plugin-jsdoc/dist/rules/noUndefinedTypes.cjs",
            Some("eslint-plugin-jsdoc"),
        ),
        (
            "/app/node_modules/a/node_modules/@babel/core/lib/x.js",
            Some("@babel/core"),
        ),
        ("@scope/pkg@1.2.0/index.js", Some("@scope/pkg")),
        (
            "/usr/lib/python3/dist-packages/requests/api.py",
            Some("requests"),
        ),
        ("six.py", None),
        (
            "github.com/rivo/tview@v0.0.0-2021/textview.go",
            Some("github.com/rivo/tview"),
        ),
        (
            "/r/.cargo/registry/src/index.crates.io-6f17/serde_json-1.0.100/src/de.rs",
            Some("serde_json"),
        ),
        ("events.js", None),
        ("./x", None),
    ] {
        assert_eq!(package_of(path).as_deref(), package, "{path}");
    }
}

#[test]
fn library_errors_stay_apart_by_the_package_that_raised_them_or_their_message() {
    let stats = FrameStats::new();
    let cfg = SimilarityConfig::default();
    // One framework's frames above two plugins' rules, one message.
    let rule = |plugin: &str, file: &str, function: &str| {
        let mut f = failure(
            "TypeError",
            "context.getScope is not a function",
            vec![
                fr(
                    "eslint/lib/linter/node-event-generator.js",
                    "applySelector",
                    false,
                ),
                fr("eslint/lib/linter/safe-emitter.js", "Object.emit", false),
                fr("eslint/lib/linter/linter.js", "ruleErrorHandler", false),
                fr(&format!("{plugin}/lib/rules/{file}"), function, false),
            ],
        );
        f.language = Language::Javascript;
        StackProfile::from_failure(&f)
    };
    let a = rule("eslint-plugin-a", "x.js", "CallExpression");
    let b = rule("eslint-plugin-b", "y.js", "ExpressionStatement");
    assert_eq!(a.raised_in.as_deref(), Some("eslint-plugin-a"));
    assert_eq!(similarity(&a, &b, &stats, &cfg).score, 0.0);
    assert_eq!(similarity(&a, &a, &stats, &cfg).score, 1.0);
    // One loader raising two errors from one place: the message says which.
    let loader = |msg: &str| {
        let mut f = failure(
            "Error",
            msg,
            vec![
                fr("internal/modules/cjs/loader.js", "Module._compile", false),
                fr("node-sass/lib/index.js", "<anonymous>", false),
                fr("node-sass/lib/binding.js", "module.exports", false),
            ],
        );
        f.language = Language::Javascript;
        StackProfile::from_failure(&f)
    };
    let runtime = loader(
        "Node Sass does not yet support your current environment: OS X 64-bit with Unsupported runtime (72)",
    );
    let again = loader(
        "Node Sass does not yet support your current environment: Linux 64-bit with Unsupported runtime (83)",
    );
    let binding = loader(
        "Missing binding /x/vendor/darwin-x64-48/binding.node Node Sass could not find a binding for your current environment",
    );
    assert!(similarity(&runtime, &again, &stats, &cfg).score >= cfg.threshold);
    let other = similarity(&runtime, &binding, &stats, &cfg);
    assert!(other.score < 0.5 * other.frame_score, "{other:?}");
}

#[test]
fn a_location_known_only_by_its_line_matches_that_line_only() {
    let panic = |loc: &str| {
        let mut f = failure(
            "panic",
            "called `Option::unwrap()` on a `None` value",
            Vec::new(),
        );
        f.language = Language::Rust;
        f.context.insert("location".into(), loc.into());
        StackProfile::from_failure(&f)
    };
    let stats = FrameStats::new();
    let cfg = SimilarityConfig::default();
    let a = panic("zellij-server/src/panes/grid.rs:702:71");
    assert_eq!(a.frames[0].key, "grid.rs:702");
    let same = similarity(&a, &panic("src/panes/grid.rs:702:5"), &stats, &cfg);
    assert!(same.score >= cfg.threshold, "{same:?}");
    let other = similarity(
        &a,
        &panic("zellij-server/src/panes/grid.rs:1424:46"),
        &stats,
        &cfg,
    );
    assert_eq!(other.score, 0.0);
}

#[test]
fn best_match_picks_the_most_similar_group_above_the_threshold() {
    let cfg = SimilarityConfig::default();
    let p = |inner: &str, outer: &str| {
        StackProfile::from_failure(&failure(
            "KeyError",
            "'email'",
            vec![
                fr(outer, "main", true),
                fr("app/api.py", "handle", true),
                fr("app/orders.py", inner, true),
            ],
        ))
    };
    let candidates = vec![
        (GroupKey("refund".into()), p("refund", "app/main.py")),
        (GroupKey("checkout".into()), p("checkout", "app/main.py")),
    ];
    let (key, s) =
        best_match(&p("checkout", "app/worker.py"), &candidates, &cfg).expect("a similar group");
    assert_eq!(key.0, "checkout");
    assert!(s.score >= cfg.threshold && !s.matched.is_empty(), "{s:?}");
    let other = StackProfile::from_failure(&failure(
        "KeyError",
        "'email'",
        vec![fr("lib/x.py", "parse", true)],
    ));
    assert!(best_match(&other, &candidates, &cfg).is_none());
    assert!(best_match(&other, &[], &cfg).is_none());
}

#[test]
fn frequent_frames_weigh_less() {
    let mut stats = FrameStats::new();
    let common =
        StackProfile::from_failure(&failure("E", "", vec![fr("lib/loop.py", "run", true)]));
    for _ in 0..50 {
        stats.add(&common);
    }
    assert!(stats.rarity("loop.py|run") < stats.rarity("never.py|seen"));
    assert!((stats.rarity("loop.py|run") - 1.0).abs() < 0.05);
}

#[test]
fn merges_are_recorded_and_can_be_undone() {
    let mut index = GroupIndex::new(SimilarityConfig::default());
    let frames = |extra: &str| {
        vec![
            fr(extra, "main", true),
            fr("app/api.py", "handle", true),
            fr("app/orders.py", "checkout", true),
        ]
    };
    let a = failure("KeyError", "'email'", frames("app/main.py"));
    let b = failure("KeyError", "'email'", frames("app/worker.py"));
    assert_ne!(a.group_key(), b.group_key());
    assert_eq!(index.insert(&a, "a").join, Join::New);
    assert_eq!(index.insert(&a, "a2").join, Join::Exact);
    let joined = index.insert(&b, "b");
    let Join::Similar { score, matched, .. } = &joined.join else {
        panic!("expected a similarity merge: {joined:?}");
    };
    assert!(*score >= index.config.threshold);
    assert!(!matched.is_empty());
    assert_eq!(joined.group, a.group_key());
    assert_eq!(joined.exact_key, b.group_key());
    assert_eq!(index.groups().len(), 1);
    assert_eq!(index.unmerge(&b.group_key()), 1);
    assert_eq!(index.groups().len(), 2);
    assert!(index.groups()[1].members[0].merge.is_none());
    // Nothing left to undo.
    assert_eq!(index.unmerge(&b.group_key()), 0);
}
