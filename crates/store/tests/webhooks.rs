//! The webhook delivery log on both stores: attempts come back oldest
//! first, per investigation, with what the receiver answered.

mod common;

use common::{drop_schema, pg_store};
use tracelab_store::SqliteStore;
use tracelab_store::webhooks::WebhookDelivery;

fn attempt(investigation: &str, attempt: u32, status: Option<u16>) -> WebhookDelivery {
    WebhookDelivery {
        investigation_id: investigation.into(),
        event: "approved".into(),
        delivery_id: format!("{investigation}-approved-0"),
        url: "https://hooks.example/tracelab".into(),
        attempt,
        delivered: status.is_some_and(|s| (200..300).contains(&s)),
        http_status: status,
        error: (!status.is_some_and(|s| (200..300).contains(&s))).then(|| "HTTP 500".into()),
        at: None,
    }
}

/// Without the store's timestamp, which it sets.
fn recorded(mut rows: Vec<WebhookDelivery>) -> Vec<WebhookDelivery> {
    for r in &mut rows {
        assert!(r.at.is_some(), "the store sets the time");
        r.at = None;
    }
    rows
}

#[tokio::test]
async fn sqlite_keeps_every_attempt_in_order() {
    let store = SqliteStore::in_memory().await.unwrap();
    let tries = [
        attempt("a", 1, Some(500)),
        attempt("a", 2, None),
        attempt("a", 3, Some(204)),
    ];
    for t in &tries {
        store.record_webhook_delivery(t).await.unwrap();
    }
    store
        .record_webhook_delivery(&attempt("b", 1, Some(200)))
        .await
        .unwrap();
    assert_eq!(
        recorded(store.webhook_deliveries("a").await.unwrap()),
        tries
    );
    assert_eq!(store.webhook_deliveries("b").await.unwrap().len(), 1);
    assert!(store.webhook_deliveries("none").await.unwrap().is_empty());
}

#[tokio::test]
async fn postgres_keeps_every_attempt_in_order() {
    let Some((store, _url, schema)) = pg_store("webhooks").await else {
        return;
    };
    let tries = [
        attempt("a", 1, Some(500)),
        attempt("a", 2, None),
        attempt("a", 3, Some(204)),
    ];
    for t in &tries {
        store.record_webhook_delivery(t).await.unwrap();
    }
    store
        .record_webhook_delivery(&attempt("b", 1, Some(200)))
        .await
        .unwrap();
    assert_eq!(
        recorded(store.webhook_deliveries("a").await.unwrap()),
        tries
    );
    assert_eq!(store.webhook_deliveries("b").await.unwrap().len(), 1);
    drop_schema(&store, &schema).await;
}
