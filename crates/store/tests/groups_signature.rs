//! `PgGroupStore::find_by_signature`: an error or stack signature → the
//! failure groups it names, against a real PostgreSQL (one schema per test).

mod common;

use tracelab_evidence::GroupStore;
use tracelab_store::groups::conformance::occurrence;
use tracelab_store::{PgGroupStore, PgOptions};

#[tokio::test]
async fn signatures_find_their_groups_newest_first() {
    let Some(url) = common::backend("TRACELAB_TEST_POSTGRES") else {
        return;
    };
    let schema = common::unique_prefix("gsig");
    let store = PgGroupStore::connect(
        &url,
        PgOptions {
            schema: Some(schema),
            ..PgOptions::default()
        },
    )
    .await
    .expect("connect and migrate");
    let stack = "0123456789abcdef";
    let error = "fedcba9876543210";
    for (key, at) in [
        (format!("stack:{stack}:aaaaaaaa"), 10),
        (format!("stack:{stack}:bbbbbbbb"), 30),
        (format!("error:{error}@cccccccc"), 20),
        ("stack:1111111111111111".to_string(), 40),
        (format!("error:{stack}"), 50), // a stack signature is not an error signature
    ] {
        store
            .record(&occurrence(&key, at, Some("c1"), Some("main")))
            .await
            .unwrap();
    }
    store
        .record(&occurrence(
            &format!("stack:{stack}:aaaaaaaa"),
            15,
            Some("c2"),
            Some("main"),
        ))
        .await
        .unwrap();

    let by_stack = store.find_by_signature("", stack, 10).await.unwrap();
    let keys: Vec<&str> = by_stack.iter().map(|g| g.key.0.as_str()).collect();
    assert_eq!(
        keys,
        [
            format!("stack:{stack}:bbbbbbbb"),
            format!("stack:{stack}:aaaaaaaa")
        ]
    );
    assert_eq!(by_stack[1].count, 2);
    assert_eq!(by_stack[1].commits.len(), 2);

    let both = store.find_by_signature(error, stack, 10).await.unwrap();
    assert_eq!(both.len(), 3);
    assert_eq!(both[1].key.0, format!("error:{error}@cccccccc"));
    // Upper case and prefixes work; the limit applies.
    let prefix = store
        .find_by_signature("", &stack[..8].to_uppercase(), 1)
        .await
        .unwrap();
    assert_eq!(prefix.len(), 1);
    assert!(
        store
            .find_by_signature("", "9999999999999999", 10)
            .await
            .unwrap()
            .is_empty()
    );

    for (e, s) in [("", ""), ("xyz%", ""), ("", "ab"), ("' OR 1=1 --", "")] {
        let err = store.find_by_signature(e, s, 10).await.unwrap_err();
        assert_eq!(
            err.kind(),
            tracelab_evidence::ErrorKind::InvalidArgument,
            "{err}"
        );
    }
}
