//! Failure groups and the investigation policy, through the in-memory store.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use tracelab_evidence::{
    Decision, GroupStatus, GroupStore, InMemoryGroupStore, Observation, Occurrence, ParseOptions,
    Policy, Reason, SkipReason, Trigger, parse, triage,
};

/// The in-memory store never waits, so one poll completes it.
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("in-memory store returned Pending"),
    }
}

fn trace(root: &str, line: u32, func: &str) -> String {
    format!(
        "Traceback (most recent call last):\n  File \"{root}/shop/api.py\", line {}, in handle\n    checkout(order)\n  File \"{root}/shop/orders.py\", line {line}, in {func}\n    send_receipt(order)\nKeyError: 'email'\n",
        line + 40
    )
}

fn occurrence(text: &str, at: i64, commit: &str, branch: &str) -> Occurrence {
    let out = parse(text.as_bytes(), &ParseOptions::default());
    Occurrence::from_failure(&out.failures[0], at, Some(commit), Some(branch))
}

#[test]
fn same_bug_on_other_machines_and_lines_is_one_group() {
    let a = occurrence(
        &trace("/home/alice/shop", 58, "checkout"),
        100,
        "c1",
        "main",
    );
    let b = occurrence(
        &trace("/builds/acme/shop", 61, "checkout"),
        200,
        "c2",
        "main",
    );
    let c = occurrence(&trace("/app", 58, "refund"), 300, "c2", "main");
    assert_eq!(a.key, b.key);
    assert_ne!(
        a.key, c.key,
        "a different innermost function is a different group"
    );
    assert_eq!(a.title, "KeyError: '<q>'".replace("<q>", "email"));
}

#[test]
fn lifecycle_new_recurrence_resolution_regression() {
    let store = InMemoryGroupStore::new();
    let policy = Policy::default();
    let t = trace("/app", 58, "checkout");

    // First seen on a feature branch: grouped, not investigated.
    let (g, obs, d) = block_on(triage(
        &store,
        &policy,
        &occurrence(&t, 100, "f1", "feature/x"),
        &Trigger::Automatic,
        100,
    ))
    .unwrap();
    assert_eq!(obs, Observation::New);
    assert_eq!(
        d,
        Decision::Skip {
            reason: SkipReason::NotProtectedBranch
        }
    );
    assert_eq!((g.count, g.first_seen, g.last_seen), (1, 100, 100));

    // Seen on main: recurrence, but main is protected and the group is not new any more.
    let (g, obs, d) = block_on(triage(
        &store,
        &policy,
        &occurrence(&t, 200, "m1", "main"),
        &Trigger::Automatic,
        200,
    ))
    .unwrap();
    assert_eq!(obs, Observation::Recurrence);
    assert_eq!(
        d,
        Decision::Skip {
            reason: SkipReason::BelowThreshold {
                count: 2,
                commits: 2
            }
        }
    );
    assert_eq!(g.branches.len(), 2);

    // Third sighting on another commit: the recurrence threshold (3) is reached.
    let (g, _, d) = block_on(triage(
        &store,
        &policy,
        &occurrence(&t, 300, "m2", "main"),
        &Trigger::Automatic,
        300,
    ))
    .unwrap();
    assert_eq!(
        d,
        Decision::Investigate {
            reason: Reason::Recurrence {
                count: 3,
                commits: 3
            }
        }
    );
    assert_eq!(g.investigation.as_ref().map(|m| m.requested_at), Some(300));

    // Fourth: an investigation is already requested, so no duplicate.
    let (_, _, d) = block_on(triage(
        &store,
        &policy,
        &occurrence(&t, 400, "m3", "main"),
        &Trigger::Automatic,
        400,
    ))
    .unwrap();
    assert!(
        matches!(
            d,
            Decision::Skip {
                reason: SkipReason::AlreadyRequested { .. }
            }
        ),
        "{d:?}"
    );

    // Fixed, then back on main: a regression, investigated again.
    let key = g.key.clone();
    let resolved = block_on(store.resolve(&key, 500, Some("fix1".into()))).unwrap();
    assert_eq!(
        resolved.status,
        GroupStatus::Resolved {
            at: 500,
            commit: Some("fix1".into())
        }
    );
    let (g, obs, d) = block_on(triage(
        &store,
        &policy,
        &occurrence(&t, 600, "m4", "main"),
        &Trigger::Automatic,
        600,
    ))
    .unwrap();
    assert_eq!(
        obs,
        Observation::Regression {
            resolved_at: 500,
            resolved_in: Some("fix1".into())
        }
    );
    assert_eq!(
        d,
        Decision::Investigate {
            reason: Reason::Regression
        }
    );
    assert_eq!((g.regressions, g.status.clone()), (1, GroupStatus::Open));

    // A late-arriving occurrence from before the fix does not reopen it.
    block_on(store.resolve(&key, 700, None)).unwrap();
    let (g, obs, _) = block_on(triage(
        &store,
        &policy,
        &occurrence(&t, 650, "m4", "main"),
        &Trigger::Automatic,
        800,
    ))
    .unwrap();
    assert_eq!(obs, Observation::Recurrence);
    assert!(matches!(g.status, GroupStatus::Resolved { .. }));

    // Manual requests always go through.
    let (_, _, d) = block_on(triage(
        &store,
        &policy,
        &occurrence(&t, 900, "m5", "feature/y"),
        &Trigger::Manual {
            requested_by: "sre@acme".into(),
        },
        900,
    ))
    .unwrap();
    assert_eq!(
        d,
        Decision::Investigate {
            reason: Reason::Manual {
                requested_by: "sre@acme".into()
            }
        }
    );
    assert_eq!(block_on(store.list(10)).unwrap().len(), 1);
}

#[test]
fn new_signature_on_protected_branch_is_investigated() {
    let store = InMemoryGroupStore::new();
    let policy = Policy {
        protected_branches: vec!["main".into(), "release/*".into()],
        ..Policy::default()
    };
    let occ = occurrence(&trace("/app", 58, "checkout"), 10, "r1", "release/2.4");
    let (_, obs, d) = block_on(triage(&store, &policy, &occ, &Trigger::Automatic, 10)).unwrap();
    assert_eq!(obs, Observation::New);
    assert_eq!(
        d,
        Decision::Investigate {
            reason: Reason::NewOnProtectedBranch {
                branch: "release/2.4".into()
            }
        }
    );
    assert!(
        block_on(store.get(&occ.key))
            .unwrap()
            .unwrap()
            .investigation
            .is_some()
    );
    assert!(
        block_on(store.resolve(&tracelab_evidence::GroupKey("stack:none".into()), 1, None))
            .is_err()
    );
}

/// The one group key of the single failure in `text`.
fn key_of(text: &str) -> tracelab_evidence::GroupKey {
    let out = parse(text.as_bytes(), &ParseOptions::default());
    assert_eq!(out.failures.len(), 1, "{text}");
    tracelab_evidence::GroupKey::for_failure(&out.failures[0])
}

#[test]
fn a_rust_panic_with_and_without_a_backtrace_is_one_group() {
    let bare = "thread 'main' panicked at src/main.rs:14:38:\ncalled `Option::unwrap()` on a `None` value\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
    let old = "thread 'main' panicked at 'called `Option::unwrap()` on a `None` value', src/main.rs:14:38\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
    let backtrace = "thread 'main' panicked at /home/dev/tally/src/main.rs:14:38:\ncalled `Option::unwrap()` on a `None` value\nstack backtrace:\n   0: rust_begin_unwind\n             at /rustc/129f3b9964af4d4a709d1383930ade12dfe7c081/library/std/src/panicking.rs:652:5\n   1: core::option::unwrap_failed\n             at /rustc/129f3b9964af4d4a709d1383930ade12dfe7c081/library/core/src/option.rs:1985:5\n   2: tally::first_amount\n             at ./src/main.rs:14:38\n   3: tally::main\n             at ./src/main.rs:22:17\nnote: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.\n";
    let full = include_str!("corpus/rust_panic_backtrace_full.txt");
    let k = key_of(bare);
    assert_eq!(key_of(old), k);
    assert_eq!(key_of(backtrace), k);
    assert_eq!(key_of(full), k);
    // Another message, another file or another line is another group.
    assert_ne!(key_of(&bare.replace("`None` value", "`Err` value: Io")), k);
    assert_ne!(key_of(&bare.replace("src/main.rs", "src/parse.rs")), k);
    assert_ne!(key_of(&bare.replace("main.rs:14:38", "main.rs:31:38")), k);
    assert!(k.0.ends_with(":14"), "{k}");
}

#[test]
fn an_import_error_is_keyed_by_the_names_it_misses_whoever_imports_them() {
    let trace = |app: &str, tail: &str| {
        format!(
            "Traceback (most recent call last):\n  File \"/srv/{app}/run.py\", line 1, in <module>\n    from {app} import create\n  File \"/srv/{app}/{app}/__init__.py\", line 2, in <module>\n    import flask\n  File \"/srv/venv/lib/python3.11/site-packages/flask/__init__.py\", line 5, in <module>\n    from jinja2 import escape\nImportError: cannot import name 'escape' from 'jinja2' {tail}\n"
        )
    };
    let k = key_of(&trace(
        "portal",
        "(/srv/venv/lib/python3.11/site-packages/jinja2/__init__.py)",
    ));
    assert_eq!(key_of(&trace("demo", "(unknown location)")), k);
    assert_eq!(key_of(&trace("demo", "")), k);
    // Another missing name is another bug, on the very same import chain.
    let other = trace("portal", "").replace("'escape' from 'jinja2'", "'Markup' from 'jinja2'");
    assert_ne!(key_of(&other), k);
    // A library-only stack whose message names a missing module attribute.
    let attr = |name: &str| {
        format!(
            "Traceback (most recent call last):\n  File \"/usr/lib/python3.10/site-packages/pyreadline/py3k_compat.py\", line 8, in callable\n    return isinstance(x, collections.Callable)\nAttributeError: module 'collections' has no attribute '{name}'\n"
        )
    };
    assert_ne!(key_of(&attr("Callable")), key_of(&attr("Mapping")));
}

#[test]
fn node_core_frames_are_not_in_app_and_do_not_sign() {
    let app = "    at startServer (/home/dev/projects/chat/src/server.js:48:10)\n    at Object.<anonymous> (/home/dev/projects/chat/src/index.js:5:1)\n";
    let core = [
        "    at Server.setupListenHandle [as _listen2] (net.js:1331:16)\n    at listenInCluster (net.js:1379:12)\n",
        "    at emitErrorNT (node:net:1358:8)\n    at process.processTicksAndRejections (node:internal/process/task_queues:82:21)\n",
        "    at EventEmitter.emit (events.js:400:28)\n    at processTicksAndRejections (internal/process/task_queues.js:95:5)\n",
        "    at async Promise.all (index 0)\n    at Readable.read (_stream_readable.js:470:10)\n",
    ];
    let header = "Error: listen EADDRINUSE: address already in use :::3000\n";
    let bare = parse(
        format!("{header}{app}").as_bytes(),
        &ParseOptions::default(),
    );
    for c in core {
        let out = parse(
            format!("{header}{c}{app}").as_bytes(),
            &ParseOptions::default(),
        );
        let f = &out.failures[0];
        let in_app: Vec<_> = f.frames.iter().filter(|fr| fr.in_app).collect();
        assert_eq!(in_app.len(), 2, "{c}: {:#?}", f.frames);
        assert_eq!(f.stack_signature, bare.failures[0].stack_signature, "{c}");
    }
}

#[test]
fn escaped_and_plain_windows_paths_are_one_group() {
    let plain = "Traceback (most recent call last):\n  File \"C:\\Users\\dev\\app\\main.py\", line 3, in <module>\n    main()\n  File \"C:\\Users\\dev\\app\\util.py\", line 9, in main\n    raise ValueError(\"x\")\nValueError: x\n";
    let escaped = plain.replace('\\', "\\\\");
    assert_eq!(key_of(plain), key_of(&escaped));
}
