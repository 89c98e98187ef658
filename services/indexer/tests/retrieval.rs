//! The indexer over gRPC, started in-process against the real PostgreSQL:
//! its answers equal the library's, the roots are enforced, past failures
//! come from `failure_groups`.

mod common;

use common::{TRACEBACK, shop, start, start_with_tokens};
use tonic::Code;
use tracelab_code_index::{LocateOptions, locate};
use tracelab_evidence::{FailureKind, GroupKey, GroupStore, Language, Occurrence};
use tracelab_index_client::wire;
use tracelab_proto::index::v1 as pb;
use tracelab_store::{PgGroupStore, PgOptions};

fn path(p: &std::path::Path) -> String {
    p.to_str().unwrap().to_string()
}

/// The same JSON: same keys, order, names and texts; numbers equal up to
/// 1e-6. The library itself is not bit-for-bit reproducible: its tantivy
/// index is written by several threads, so documents land in segments in a
/// different order from run to run and BM25 sums differ in the last bits
/// (seen here: 0.07208402454853058 vs 0.07208401709794998).
fn same_json(a: &serde_json::Value, b: &serde_json::Value, at: &str) {
    use serde_json::Value;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!((x - y).abs() <= 1e-6, "{at}: {x} != {y}");
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{at}: lengths");
            for (i, (x, y)) in x.iter().zip(y).enumerate() {
                same_json(x, y, &format!("{at}[{i}]"));
            }
        }
        (Value::Object(x), Value::Object(y)) => {
            assert_eq!(
                x.keys().collect::<Vec<_>>(),
                y.keys().collect::<Vec<_>>(),
                "{at}: keys"
            );
            for (k, v) in x {
                same_json(v, &y[k], &format!("{at}.{k}"));
            }
        }
        _ => assert_eq!(a, b, "{at}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_locate_and_neighbourhood_answer_like_the_library() {
    let (repo, bug) = shop();
    let Some(mut running) = start(vec![repo.path().to_path_buf()], 2).await else {
        return;
    };
    let c = &mut running.client;
    let repository = path(repo.path());

    let first = c
        .index(pb::IndexRequest {
            repository: repository.clone(),
            rev: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(first.commit, repo.head());
    assert_eq!(first.files, 4);
    assert_eq!(first.parsed_files, 4);
    assert!(first.symbols >= 5, "{first:?}");
    assert!(first.cache_dir.starts_with(&path(running.cache.path())));
    let again = c
        .index(pb::IndexRequest {
            repository: repository.clone(),
            rev: "HEAD~1".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again.commit, bug);
    assert_eq!((again.parsed_files, again.cached_files), (0, 4), "reused");

    for (rev, top) in [("", 5u32), (bug.as_str(), 3), ("", 0)] {
        let answer = c
            .locate(pb::LocateRequest {
                repository: repository.clone(),
                evidence: TRACEBACK.into(),
                rev: rev.into(),
                top,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let remote = wire::locations_back(answer).unwrap();
        // The library in this process, with its own (default) cache.
        let local = locate(
            repo.path(),
            TRACEBACK,
            &LocateOptions {
                rev: Some(rev.to_string()).filter(|r| !r.is_empty()),
                top: if top == 0 { 10 } else { top as usize },
                ..LocateOptions::default()
            },
        )
        .unwrap();
        same_json(
            &serde_json::to_value(&remote).unwrap(),
            &serde_json::to_value(&local).unwrap(),
            &format!("rev {rev:?} top {top}"),
        );
        let top5: Vec<&str> = remote
            .symbols
            .iter()
            .take(5)
            .map(|s| s.symbol.as_str())
            .collect();
        assert!(top5.contains(&"py:shop.pricing.discount"), "{top5:?}");
        assert!(remote.commits.iter().any(|c| c.commit == bug));
        if rev.is_empty() {
            assert_eq!(remote.commits[0].commit, bug);
        }
        assert!(!remote.symbols[0].reasons.is_empty());
    }

    // Hard filters travel and give what the library gives with the same options.
    let filtered = |languages: Vec<String>, path_prefix: &str, include_tests: bool| {
        let mut c = c.clone();
        let repository = repository.clone();
        let path_prefix = path_prefix.to_string();
        async move {
            let answer = c
                .locate(pb::LocateRequest {
                    repository,
                    evidence: TRACEBACK.into(),
                    top: 10,
                    languages,
                    path_prefix,
                    include_tests,
                    ..Default::default()
                })
                .await?
                .into_inner();
            Ok::<_, tonic::Status>(wire::locations_back(answer).unwrap())
        }
    };
    let tests_too = filtered(vec!["python".into()], "", true).await.unwrap();
    let local = locate(
        repo.path(),
        TRACEBACK,
        &LocateOptions {
            top: 10,
            languages: vec![tracelab_code_index::Language::Python],
            include_tests: true,
            ..LocateOptions::default()
        },
    )
    .unwrap();
    same_json(
        &serde_json::to_value(&tests_too).unwrap(),
        &serde_json::to_value(&local).unwrap(),
        "python, tests included",
    );
    let only_tests = filtered(Vec::new(), "tests/", true).await.unwrap();
    assert!(!only_tests.symbols.is_empty());
    assert!(
        only_tests
            .symbols
            .iter()
            .all(|s| s.path.starts_with("tests/")),
        "{only_tests:?}"
    );
    let no_go = filtered(vec!["go".into()], "", false).await.unwrap();
    assert!(
        no_go.symbols.is_empty(),
        "a Python repository has no Go suspects: {no_go:?}"
    );
    let unknown = filtered(vec!["cobol".into()], "", false).await.unwrap_err();
    assert_eq!(unknown.code(), tonic::Code::InvalidArgument, "{unknown}");

    let n = c
        .neighbourhood(pb::NeighbourhoodRequest {
            repository: repository.clone(),
            rev: String::new(),
            symbol: "py:shop.pricing.discount".into(),
            depth: 1,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(n.commit, repo.head());
    let callers: Vec<&str> = n.callers.iter().map(|x| x.symbol.as_str()).collect();
    assert_eq!(callers, ["py:shop.cart.Cart.checkout"]);
    assert_eq!(n.callers[0].via_line, 10);
    assert_eq!(n.callers[0].kind, "method");
    // A plain name that names one symbol works; depth 2 reaches the test.
    let n2 = c
        .neighbourhood(pb::NeighbourhoodRequest {
            repository: repository.clone(),
            rev: String::new(),
            symbol: "discount".into(),
            depth: 2,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(n2.symbol, "py:shop.pricing.discount");
    assert!(
        n2.callers
            .iter()
            .any(|x| x.distance == 2 && x.symbol.contains("test_checkout_half")),
        "{:?}",
        n2.callers
    );
    let checkout = c
        .neighbourhood(pb::NeighbourhoodRequest {
            repository: repository.clone(),
            rev: String::new(),
            symbol: "py:shop.cart.Cart.checkout".into(),
            depth: 1,
        })
        .await
        .unwrap()
        .into_inner();
    let callees: Vec<&str> = checkout.callees.iter().map(|x| x.symbol.as_str()).collect();
    assert!(callees.contains(&"py:shop.pricing.discount"), "{callees:?}");
    assert!(callees.contains(&"py:shop.pricing.tax"), "{callees:?}");
    let missing = c
        .neighbourhood(pb::NeighbourhoodRequest {
            repository: repository.clone(),
            rev: String::new(),
            symbol: "py:shop.nothing".into(),
            depth: 1,
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Code::NotFound, "{missing:?}");
    let deep = c
        .neighbourhood(pb::NeighbourhoodRequest {
            repository,
            rev: String::new(),
            symbol: "discount".into(),
            depth: 50,
        })
        .await
        .unwrap_err();
    assert_eq!(deep.code(), Code::InvalidArgument);

    // A check that takes over its 2 s on a loaded machine answers 503 once;
    // readiness is a state to reach, so poll it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let (code, body) = loop {
        let (code, body) = common::http_get(&running.health, "/readyz").await;
        if code == 200 || std::time::Instant::now() > deadline {
            break (code, body);
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("\"postgres\":\"ok\""), "{body}");
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repositories_outside_the_roots_and_bad_input_get_clear_errors() {
    let root = tempfile::tempdir().unwrap();
    let outside = shop().0;
    let Some(mut running) = start(vec![root.path().to_path_buf()], 1).await else {
        return;
    };
    let not_a_repo = root.path().join("plain");
    std::fs::create_dir(&not_a_repo).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.path().join("link")).unwrap();
    let c = &mut running.client;
    let locate = |repository: String| pb::LocateRequest {
        repository,
        evidence: TRACEBACK.into(),
        rev: String::new(),
        top: 5,
        ..Default::default()
    };

    for refused in [
        path(outside.path()),
        format!(
            "{}/../{}",
            path(root.path()),
            outside.path().file_name().unwrap().to_str().unwrap()
        ),
        path(&root.path().join("link")),
    ] {
        let e = c.locate(locate(refused.clone())).await.unwrap_err();
        assert_eq!(e.code(), Code::PermissionDenied, "{refused}: {e:?}");
        assert!(
            e.message()
                .contains("outside the local roots this deployment allows"),
            "{}",
            e.message()
        );
        let e = c
            .index(pb::IndexRequest {
                repository: refused,
                rev: String::new(),
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::PermissionDenied);
    }
    let e = c.locate(locate(path(&not_a_repo))).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(
        e.message().contains("is not a git repository"),
        "{}",
        e.message()
    );
    let e = c
        .locate(locate(path(&root.path().join("missing"))))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{e:?}");
    let e = c.locate(locate("relative/path".into())).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");

    // Inside the roots: an unknown revision and empty evidence.
    let (inside, _) = shop();
    let repo_in_root = root.path().join("shop");
    tracelab_testkit::git(
        root.path(),
        &["clone", "-q", &path(inside.path()), &path(&repo_in_root)],
    );
    let e = c
        .index(pb::IndexRequest {
            repository: path(&repo_in_root),
            rev: "no-such-branch".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{e:?}");
    assert!(e.message().contains("no-such-branch"), "{}", e.message());
    let mut empty = locate(path(&repo_in_root));
    empty.evidence = "  ".into();
    let e = c.locate(empty).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    let ok = c
        .locate(locate(path(&repo_in_root)))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(ok.symbols.len().min(1), 1);
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_on_one_repository_share_one_sound_cache() {
    let (repo, bug) = shop();
    let Some(running) = start(vec![repo.path().to_path_buf()], 4).await else {
        return;
    };
    let repository = path(repo.path());
    let mut tasks = Vec::new();
    for i in 0..8 {
        let mut c = running.client.clone();
        let repository = repository.clone();
        let rev = if i % 2 == 0 {
            String::new()
        } else {
            bug.clone()
        };
        tasks.push(tokio::spawn(async move {
            if i % 3 == 0 {
                c.index(pb::IndexRequest { repository, rev })
                    .await
                    .map(|_| None)
            } else {
                c.locate(pb::LocateRequest {
                    repository,
                    evidence: TRACEBACK.into(),
                    rev,
                    top: 5,
                    ..Default::default()
                })
                .await
                .map(|r| Some(r.into_inner()))
            }
        }));
    }
    let mut answers = Vec::new();
    for t in tasks {
        if let Some(a) = t.await.unwrap().unwrap() {
            answers.push(a.symbols[0].symbol.clone());
        }
    }
    assert!(
        answers.iter().all(|s| s == "py:shop.pricing.discount"),
        "{answers:?}"
    );
    // What the service saved loads cleanly and holds every blob.
    let dir = std::fs::read_dir(running.cache.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let indexer = tracelab_code_index::Indexer::open(&dir).unwrap();
    assert!(indexer.cache().len() >= 5, "{}", indexer.cache().len());
    running.stop().await;
}

fn occurrence(key: &str, at: i64, commit: &str) -> Occurrence {
    Occurrence::new(
        GroupKey(key.into()),
        at,
        FailureKind::TestFailure,
        Language::Python,
        "ZeroDivisionError: division by zero",
    )
    .on(Some(commit), Some("main"))
    .in_test("tests/test_cart.py::test_checkout_half")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_failures_come_from_the_failure_groups() {
    let (repo, bug) = shop();
    let Some(mut running) = start(vec![repo.path().to_path_buf()], 1).await else {
        return;
    };
    let groups = PgGroupStore::connect(
        &running.settings.fleet.postgres_url,
        PgOptions {
            schema: Some(running.settings.fleet.postgres_schema.clone()),
            ..PgOptions::default()
        },
    )
    .await
    .unwrap();
    let stack = "00112233aabbccdd";
    let here = format!("stack:{stack}:0badc0de");
    let elsewhere = format!("stack:{stack}:12345678");
    groups.record(&occurrence(&here, 100, &bug)).await.unwrap();
    groups
        .record(&occurrence(&here, 200, &repo.head()))
        .await
        .unwrap();
    groups
        .record(&occurrence(
            &elsewhere,
            300,
            "deadbeefdeadbeefdeadbeefdeadbeefdeadbeef",
        ))
        .await
        .unwrap();
    groups
        .resolve(&GroupKey(elsewhere.clone()), 400, Some("cafebabe".into()))
        .await
        .unwrap();

    let c = &mut running.client;
    let ask = |repository: String| pb::PastFailuresRequest {
        error_signature: String::new(),
        stack_signature: stack.into(),
        repository,
        limit: 0,
    };
    let all = c
        .past_failures(ask(String::new()))
        .await
        .unwrap()
        .into_inner()
        .failures;
    let keys: Vec<&str> = all.iter().map(|f| f.key.as_str()).collect();
    assert_eq!(keys, [elsewhere.as_str(), here.as_str()], "newest first");
    assert!(all[0].fixed);
    assert_eq!(all[0].status, "resolved");
    assert_eq!(all[0].resolved_commit, "cafebabe");
    let mine = &all[1];
    assert_eq!(mine.count, 2);
    assert_eq!((mine.first_seen, mine.last_seen), (100, 200));
    assert_eq!(mine.status, "open");
    assert!(!mine.fixed);
    assert_eq!(mine.kind, "test_failure");
    let mut commits = vec![bug.clone(), repo.head()];
    commits.sort();
    assert_eq!(mine.commits, commits);

    // Narrowed to the repository: only the group seen at one of its commits.
    let narrowed = c
        .past_failures(ask(path(repo.path())))
        .await
        .unwrap()
        .into_inner()
        .failures;
    assert_eq!(narrowed.len(), 1);
    assert_eq!(narrowed[0].key, here);

    let e = c
        .past_failures(pb::PastFailuresRequest::default())
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    let e = c.past_failures(ask("/etc".into())).await.unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_tokens_configured_every_call_needs_one() {
    let (repo, _) = shop();
    let root = repo.path().to_path_buf();
    let token = tracelab_service::tokens::NamedToken {
        name: "ci".into(),
        token: "indexer-token-0123456789".into(),
    };
    let Some(server) = start_with_tokens(vec![root], 1, vec![token]).await else {
        return;
    };
    let request = || pb::LocateRequest {
        repository: repo.path().display().to_string(),
        evidence: TRACEBACK.into(),
        top: 3,
        ..Default::default()
    };
    let refused = server.client.clone().locate(request()).await.unwrap_err();
    assert_eq!(refused.code(), Code::Unauthenticated, "{refused}");
    assert!(refused.message().contains("missing bearer token"));
    let wrong =
        tracelab_index_client::locate(&server.url, Some("not-the-token-0123456"), request())
            .await
            .unwrap_err();
    assert!(wrong.to_string().contains("unknown token"), "{wrong}");
    let found =
        tracelab_index_client::locate(&server.url, Some("indexer-token-0123456789"), request())
            .await
            .unwrap();
    assert!(!found.symbols.is_empty());
    server.stop().await;
}
