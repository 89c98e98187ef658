//! What the dashboard's `/groups` page shows beside each failure group
//! (the groups themselves come from `GroupStore::page`): how many pieces of
//! evidence arrived on each of the last days, and the investigations that
//! looked at the group's evidence. Read from the `evidence` and
//! `investigation_evidence` tables of the fleet's PostgreSQL.

use crate::PgStore;
use crate::pg_error::db_error;
use sqlx::Row;
use std::collections::HashMap;
use time::OffsetDateTime;
use tracelab_domain::Result;

/// The most investigations listed per group, newest first.
pub const MAX_LINKED: usize = 10;

/// One group's activity.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupActivity {
    /// Evidence per day, oldest first; the last entry is the day ending at `until`.
    pub daily: Vec<u64>,
    /// `(investigation id, state)`, newest first, at most [`MAX_LINKED`].
    pub investigations: Vec<(String, String)>,
}

/// The day bucket (0 = oldest) of `at` in the `days` days ending at
/// `until`, or `None` outside them.
pub fn day_bucket(at: OffsetDateTime, until: OffsetDateTime, days: u32) -> Option<usize> {
    let before = until - at;
    if before.is_negative() {
        return None;
    }
    let ago = before.whole_days();
    (ago < i64::from(days)).then(|| (i64::from(days) - 1 - ago) as usize)
}

impl PgStore {
    /// The activity of each group in `keys` over the `days` days ending at
    /// `until`; every key is in the answer (all zero when nothing arrived).
    pub async fn group_activity(
        &self,
        keys: &[String],
        days: u32,
        until: OffsetDateTime,
    ) -> Result<HashMap<String, GroupActivity>> {
        let days = days.clamp(1, 366);
        let mut out: HashMap<String, GroupActivity> = keys
            .iter()
            .map(|k| {
                (
                    k.clone(),
                    GroupActivity {
                        daily: vec![0; days as usize],
                        investigations: Vec::new(),
                    },
                )
            })
            .collect();
        if keys.is_empty() {
            return Ok(out);
        }
        let since = until - time::Duration::days(i64::from(days));
        let rows = sqlx::query(
            "SELECT group_key, received_at FROM evidence \
             WHERE group_key = ANY($1) AND received_at > $2 AND received_at <= $3",
        )
        .bind(keys)
        .bind(since)
        .bind(until)
        .fetch_all(self.pool())
        .await
        .map_err(db_error)?;
        for row in rows {
            let key: String = row.try_get("group_key").map_err(db_error)?;
            let at: OffsetDateTime = row.try_get("received_at").map_err(db_error)?;
            if let (Some(a), Some(day)) = (out.get_mut(&key), day_bucket(at, until, days)) {
                a.daily[day] += 1;
            }
        }
        let rows = sqlx::query(
            "SELECT DISTINCT e.group_key, i.id, i.state, i.created_at \
             FROM investigation_evidence ie \
             JOIN evidence e ON e.id = ie.evidence_id \
             JOIN investigations i ON i.id = ie.investigation_id \
             WHERE e.group_key = ANY($1) \
             ORDER BY i.created_at DESC, i.id DESC",
        )
        .bind(keys)
        .fetch_all(self.pool())
        .await
        .map_err(db_error)?;
        for row in rows {
            let key: String = row.try_get("group_key").map_err(db_error)?;
            if let Some(a) = out.get_mut(&key)
                && a.investigations.len() < MAX_LINKED
            {
                a.investigations.push((
                    row.try_get("id").map_err(db_error)?,
                    row.try_get("state").map_err(db_error)?,
                ));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_counted_back_from_the_end() {
        let until = OffsetDateTime::UNIX_EPOCH + time::Duration::days(30);
        let at = |days_ago: f64| until - time::Duration::seconds_f64(days_ago * 86_400.0);
        assert_eq!(day_bucket(at(0.0), until, 14), Some(13));
        assert_eq!(day_bucket(at(0.5), until, 14), Some(13));
        assert_eq!(day_bucket(at(1.0), until, 14), Some(12));
        assert_eq!(day_bucket(at(13.9), until, 14), Some(0));
        assert_eq!(day_bucket(at(14.0), until, 14), None);
        assert_eq!(
            day_bucket(until + time::Duration::seconds(1), until, 14),
            None
        );
    }
}
