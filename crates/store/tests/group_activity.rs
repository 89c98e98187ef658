//! `PgStore::group_activity` on a real PostgreSQL: evidence per day over the
//! window (edges included and excluded), the investigations that looked at
//! a group's evidence, newest first and once each, and groups with nothing.

mod common;

use common::{drop_schema, pg_store};
use time::{Duration, OffsetDateTime};

#[tokio::test]
async fn evidence_per_day_and_linked_investigations() {
    let Some((store, _url, schema)) = pg_store("group_activity").await else {
        return;
    };
    let until = OffsetDateTime::now_utc().replace_nanosecond(0).unwrap();
    let evidence = [
        ("e1", "g-a", until - Duration::hours(1)),
        ("e2", "g-a", until - Duration::hours(2)),
        ("e3", "g-a", until - Duration::days(3) - Duration::hours(1)),
        ("e4", "g-a", until - Duration::days(20)), // outside the window
        ("e5", "g-b", until - Duration::days(6) - Duration::hours(23)),
        ("e6", "g-other", until - Duration::hours(1)),
    ];
    for (id, group, at) in evidence {
        sqlx::query(
            "INSERT INTO evidence (id, kind, source, group_key, body, received_at) \
             VALUES ($1, 'junit', 'ci', $2, '{}'::jsonb, $3)",
        )
        .bind(id)
        .bind(group)
        .bind(at)
        .execute(store.pool())
        .await
        .unwrap();
    }
    for (id, state, created, evidence) in [
        (
            "inv-old",
            "APPROVED",
            until - Duration::days(5),
            vec!["e3", "e5"],
        ),
        (
            "inv-new",
            "RUNNING",
            until - Duration::hours(1),
            vec!["e1", "e2"],
        ),
    ] {
        sqlx::query(
            "INSERT INTO investigations (id, repository, test_command, state, created_at, updated_at) \
             VALUES ($1, 'r', 't', $2, $3, $3)",
        )
        .bind(id)
        .bind(state)
        .bind(created)
        .execute(store.pool())
        .await
        .unwrap();
        for e in evidence {
            sqlx::query("INSERT INTO investigation_evidence (investigation_id, evidence_id) VALUES ($1, $2)")
                .bind(id)
                .bind(e)
                .execute(store.pool())
                .await
                .unwrap();
        }
    }
    let keys: Vec<String> = ["g-a", "g-b", "g-none"].map(String::from).to_vec();
    let activity = store.group_activity(&keys, 7, until).await.unwrap();
    assert_eq!(activity.len(), 3, "every key, and only those asked for");
    assert_eq!(activity["g-a"].daily, [0, 0, 0, 1, 0, 0, 2]);
    assert_eq!(
        activity["g-a"].investigations,
        [
            ("inv-new".to_string(), "RUNNING".to_string()),
            ("inv-old".to_string(), "APPROVED".to_string()),
        ],
        "newest first, once each although two of its evidence link it"
    );
    assert_eq!(activity["g-b"].daily, [1, 0, 0, 0, 0, 0, 0]);
    assert_eq!(
        activity["g-b"].investigations,
        [("inv-old".to_string(), "APPROVED".to_string())]
    );
    assert_eq!(activity["g-none"].daily, [0; 7]);
    assert!(activity["g-none"].investigations.is_empty());
    drop_schema(&store, &schema).await;
}
