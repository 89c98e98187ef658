//! Repair experience records (#16) on both stores: the one-machine SQLite
//! store keeps what `tracelab experience mine` reconstructs, the fleet's
//! PostgreSQL what the fleet mines. A record is stored once (its id is
//! stable for one repository, workflow, history and problem) and read back
//! whole; the recurring flag is not stored but computed over a
//! repository's records when they are read, so it follows new histories.
//!
//! `conformance` (feature `testsuite`) is the behaviour both must have.

use crate::pg_error;
use crate::postgres::PgStore;
use crate::sqlite::{self, SqliteStore};
use sqlx::Row;
use tracelab_domain::{Error, Result};
use tracelab_experience::ExperienceRecord;
use tracelab_experience::records::mark_recurring;

/// Where experience records are kept.
#[async_trait::async_trait]
pub trait ExperienceStore: Send + Sync {
    /// Stores the records whose id is not stored yet; returns how many
    /// were new.
    async fn put_experience(&self, records: &[ExperienceRecord]) -> Result<usize>;

    /// The records of `repository` (all when `None`) in the order they
    /// were stored, each repository's recurring problems flagged.
    async fn experience(&self, repository: Option<&str>) -> Result<Vec<ExperienceRecord>>;
}

fn to_json(r: &ExperienceRecord) -> Result<String> {
    serde_json::to_string(r)
        .map_err(|e| Error::internal(format!("experience record {}: {e}", r.id)))
}

fn from_json(id: &str, text: &str) -> Result<ExperienceRecord> {
    serde_json::from_str(text)
        .map_err(|e| Error::internal(format!("stored experience record {id} does not parse: {e}")))
}

/// The recurring flag is a property of a repository's whole set: computed
/// over every record of the repositories read.
fn flagged(mut all: Vec<ExperienceRecord>, repository: Option<&str>) -> Vec<ExperienceRecord> {
    mark_recurring(&mut all);
    all.retain(|r| repository.is_none_or(|want| r.repository == want));
    all
}

#[async_trait::async_trait]
impl ExperienceStore for SqliteStore {
    async fn put_experience(&self, records: &[ExperienceRecord]) -> Result<usize> {
        let mut tx = self.pool().begin().await.map_err(sqlite::db_error)?;
        let mut new = 0;
        for r in records {
            let done = sqlx::query(
                "INSERT INTO experience_records (id, repository, workflow, history, problem, record, mined_at) \
                 VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
            )
            .bind(&r.id)
            .bind(&r.repository)
            .bind(&r.workflow)
            .bind(&r.history)
            .bind(&r.problem)
            .bind(to_json(r)?)
            .bind(sqlite::now())
            .execute(&mut *tx)
            .await
            .map_err(sqlite::db_error)?;
            new += done.rows_affected() as usize;
        }
        tx.commit().await.map_err(sqlite::db_error)?;
        Ok(new)
    }

    async fn experience(&self, repository: Option<&str>) -> Result<Vec<ExperienceRecord>> {
        let rows = sqlx::query(
            "SELECT id, record FROM experience_records \
             WHERE ?1 IS NULL OR repository = ?1 ORDER BY seq",
        )
        .bind(repository)
        .fetch_all(self.pool())
        .await
        .map_err(sqlite::db_error)?;
        let all = rows
            .iter()
            .map(|row| {
                let id: String = row.try_get("id").map_err(sqlite::db_error)?;
                let text: String = row.try_get("record").map_err(sqlite::db_error)?;
                from_json(&id, &text)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(flagged(all, repository))
    }
}

#[async_trait::async_trait]
impl ExperienceStore for PgStore {
    async fn put_experience(&self, records: &[ExperienceRecord]) -> Result<usize> {
        let mut tx = self.pool().begin().await.map_err(pg_error::db_error)?;
        let mut new = 0;
        for r in records {
            let record = serde_json::to_value(r)
                .map_err(|e| Error::internal(format!("experience record {}: {e}", r.id)))?;
            let done = sqlx::query(
                "INSERT INTO experience_records (id, repository, workflow, history, problem, record) \
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING",
            )
            .bind(&r.id)
            .bind(&r.repository)
            .bind(&r.workflow)
            .bind(&r.history)
            .bind(&r.problem)
            .bind(record)
            .execute(&mut *tx)
            .await
            .map_err(pg_error::db_error)?;
            new += done.rows_affected() as usize;
        }
        tx.commit().await.map_err(pg_error::db_error)?;
        Ok(new)
    }

    async fn experience(&self, repository: Option<&str>) -> Result<Vec<ExperienceRecord>> {
        let rows = sqlx::query(
            "SELECT id, record FROM experience_records \
             WHERE $1::text IS NULL OR repository = $1 ORDER BY seq",
        )
        .bind(repository)
        .fetch_all(self.pool())
        .await
        .map_err(pg_error::db_error)?;
        let all = rows
            .iter()
            .map(|row| {
                let id: String = row.try_get("id").map_err(pg_error::db_error)?;
                let value: serde_json::Value = row.try_get("record").map_err(pg_error::db_error)?;
                serde_json::from_value(value).map_err(|e| {
                    Error::internal(format!("stored experience record {id} does not parse: {e}"))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(flagged(all, repository))
    }
}

/// The behaviour every experience store must have (test support).
#[cfg(feature = "testsuite")]
pub mod conformance {
    use super::ExperienceStore;
    use tracelab_experience::ExperienceRecord;
    use tracelab_experience::records::{Concrete, FailureType, Pattern, Strategy};

    /// A record of `repository`'s `history` for `problem`.
    pub fn record(repository: &str, history: &str, problem: &str) -> ExperienceRecord {
        let id = tracelab_experience::records::stable_id(&[repository, "w", history, problem]);
        ExperienceRecord {
            id,
            history: history.into(),
            repository: repository.into(),
            workflow: "local: pytest -q".into(),
            problem: problem.into(),
            recurring: false,
            concrete: Concrete {
                signature: problem.into(),
                failure_type: FailureType::TestFailure,
                test: Some("test_app.py::test_window".into()),
                error_types: ["AssertionError".to_string()].into(),
                files: vec!["app.py".into()],
                symbols: vec!["window".into()],
                patch: "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-end = size\n+end = start + size\n".into(),
                validation: "pytest -q".into(),
                supporting_commits: vec![history.into()],
                fixed_at: history.into(),
                agreement: None,
                needs: vec![],
            },
            strategy: Strategy {
                check: "local/pytest".into(),
                failure_type: FailureType::TestFailure,
                validation: "pytest -q".into(),
                actions: vec![],
                conditions: vec!["naïve ✓ unicode survives".into()],
                failed_attempts: 1,
            },
            pattern: Pattern {
                failure_type: FailureType::TestFailure,
                mechanism: "TestFailure: AssertionError".into(),
                signals: vec![],
                approach: vec![],
            },
        }
    }

    pub async fn run(store: &dyn ExperienceStore) {
        let repo = format!(
            "/conformance/{}",
            tracelab_experience::records::stable_id(&[&format!(
                "{:?}",
                std::time::SystemTime::now()
            )])
        );
        assert!(store.experience(Some(&repo)).await.unwrap().is_empty());
        let a = record(&repo, "a1..a2", "local/pytest: test_window");
        let b = record(&repo, "b1..b2", "local/pytest: test_window");
        let c = record(&repo, "c1..c2", "local/lint");
        let other = record(
            &format!("{repo}-other"),
            "x1..x2",
            "local/pytest: test_window",
        );

        // Stored once: a second put of the same history adds nothing.
        assert_eq!(
            store.put_experience(&[a.clone(), c.clone()]).await.unwrap(),
            2
        );
        assert_eq!(
            store
                .put_experience(std::slice::from_ref(&a))
                .await
                .unwrap(),
            0
        );
        assert_eq!(
            store
                .put_experience(&[b.clone(), other.clone()])
                .await
                .unwrap(),
            2
        );

        // Read back whole, in the order stored, only the repository's.
        let read = store.experience(Some(&repo)).await.unwrap();
        let ids: Vec<&str> = read.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, vec![a.id.as_str(), c.id.as_str(), b.id.as_str()]);
        let mut expected = a.clone();
        expected.recurring = true;
        assert_eq!(read[0], expected, "a record survives the store unchanged");

        // Recurring: test_window in 2 of the 3 histories; lint in 1 of 3.
        assert!(read[0].recurring && read[2].recurring);
        assert!(!read[1].recurring);
        // The other repository has a single history: nothing recurs there.
        let all = store.experience(None).await.unwrap();
        assert!(all.len() >= 4);
        let o = all.iter().find(|r| r.id == other.id).unwrap();
        assert!(!o.recurring);
        assert!(all.iter().find(|r| r.id == a.id).unwrap().recurring);
    }
}
