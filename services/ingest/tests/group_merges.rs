//! `POST /v1/groups/merges/{exact_key}/undo` in-process against real NATS
//! JetStream and PostgreSQL (`TRACELAB_TEST_NATS`, `TRACELAB_TEST_POSTGRES`):
//! a CI report whose two failures are one bug reached from two entry points
//! is merged by similarity; a viewer undoes the merge with a reason; the
//! sighting and its evidence row move back to their own group and the merge
//! history names who undid it and why.

mod common;

use common::Service;
use serde_json::{Value, json};
use sqlx::Row;
use tracelab_ingest::auth::TokenSetting;

const INTAKE: &str = "ci-token-0123456789abcdef";
const VIEWER: &str = "viewer-token-0123456789abcdef";

/// One pytest failure: `KeyError` in `checkout`, reached from `entry`.
fn case(name: &str, entry: &str, entry_fn: &str) -> String {
    format!(
        r#"<testcase classname="tests.test_orders" name="{name}" time="0.1"><failure message="KeyError: 'email'">Traceback (most recent call last):
  File "/work/shop/shop/{entry}", line 12, in {entry_fn}
    handle(request)
  File "/work/shop/shop/api.py", line 40, in handle
    return checkout(order)
  File "/work/shop/shop/orders.py", line 88, in checkout
    return order["email"]
KeyError: 'email'</failure></testcase>"#
    )
}

fn report() -> Value {
    let junit = format!(
        r#"<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="2" failures="2">{}{}</testsuite></testsuites>"#,
        case("test_checkout_web", "web.py", "serve"),
        case("test_checkout_worker", "worker.py", "run_job")
    );
    json!({
        "schema": 1,
        "repository": "acme/shop",
        "commit": "abc123",
        "branch": "feature/x",
        "job": {"provider": "github_actions", "id": "1/1", "name": "test"},
        "reports": [{"path": "reports/junit.xml", "content": junit}],
        "created_at": 1_715_710_200
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_undoes_a_merge_and_its_sighting_moves_back() {
    let Some(svc) = Service::start(|settings| {
        settings.allow_unauthenticated = false;
        settings.tokens = vec![TokenSetting {
            name: "github-actions".into(),
            token: INTAKE.into(),
        }];
        settings.viewer_tokens = vec![TokenSetting {
            name: "ana".into(),
            token: VIEWER.into(),
        }];
    })
    .await
    else {
        return;
    };
    let (client, http, pool) = (&svc.client, &svc.http, svc.pool.clone());

    let sent = client
        .post(format!("{http}/v1/ci-failures"))
        .bearer_auth(INTAKE)
        .json(&report())
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status().as_u16(), 202, "{:?}", sent.text().await);
    let merges = sqlx::query("SELECT exact_key, group_key FROM group_merges")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(
        merges.len(),
        1,
        "the second entry point merged into the first"
    );
    let exact: String = merges[0].get("exact_key");
    let group: String = merges[0].get("group_key");
    assert_ne!(exact, group);
    let count = |key: String| {
        let pool = pool.clone();
        async move {
            sqlx::query("SELECT count FROM failure_groups WHERE group_key = $1")
                .bind(key)
                .fetch_optional(&pool)
                .await
                .unwrap()
                .map(|r| r.get::<i64, _>("count"))
        }
    };
    assert_eq!(
        (count(group.clone()).await, count(exact.clone()).await),
        (Some(2), None)
    );

    let undo = |key: &str, token: Option<&str>, body: Value| {
        let mut r = client
            .post(format!("{http}/v1/groups/merges/{key}/undo"))
            .json(&body);
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        async move {
            let response = r.send().await.expect("the service answers");
            let status = response.status().as_u16();
            (
                status,
                response.json::<Value>().await.unwrap_or(Value::Null),
            )
        }
    };
    let why = json!({"reason": "the worker's retry path is its own bug"});
    // Who may: viewers, as for reading groups; intake tokens may not.
    assert_eq!(undo(&exact, None, why.clone()).await.0, 401);
    assert_eq!(undo(&exact, Some(INTAKE), why.clone()).await.0, 401);
    // Why is required.
    for bad in [
        json!({}),
        json!({"reason": "  "}),
        json!({"reason": "x", "by": "eve"}),
    ] {
        let (status, answer) = undo(&exact, Some(VIEWER), bad.clone()).await;
        assert_eq!(status, 400, "{bad}: {answer}");
        assert!(answer["error"].as_str().is_some_and(|e| !e.is_empty()));
    }
    assert_eq!(undo("stack:nope", Some(VIEWER), why.clone()).await.0, 404);
    assert_eq!(
        count(exact.clone()).await,
        None,
        "refused undos change nothing"
    );

    let (status, done) = undo(&exact, Some(VIEWER), why.clone()).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(
        (
            &done["merge"]["undone_by"],
            &done["merge"]["undo_reason"],
            &done["merge"]["moved"]
        ),
        (&json!("ana"), &why["reason"], &json!(1)),
        "{done}"
    );
    assert_eq!(
        (&done["from"]["count"], &done["own"]["count"]),
        (&json!(1), &json!(1))
    );
    assert_eq!(
        (count(group.clone()).await, count(exact.clone()).await),
        (Some(1), Some(1)),
        "the sighting moved back"
    );
    let rows = sqlx::query("SELECT group_key, exact_key FROM evidence ORDER BY group_key")
        .fetch_all(&pool)
        .await
        .unwrap();
    let mut keys: Vec<(String, Option<String>)> = rows
        .iter()
        .map(|r| (r.get("group_key"), r.get("exact_key")))
        .collect();
    keys.sort();
    let mut expected = vec![(group.clone(), None), (exact.clone(), None)];
    expected.sort();
    assert_eq!(keys, expected, "each evidence row in its own group");
    let history = sqlx::query("SELECT undone_by, undo_reason, moved FROM group_merges")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(
        (
            history.get::<Option<String>, _>("undone_by"),
            history.get::<Option<i64>, _>("moved")
        ),
        (Some("ana".to_owned()), Some(1))
    );
    assert_eq!(undo(&exact, Some(VIEWER), why).await.0, 404, "undone once");

    svc.stop().await;
}
