//! A [`FailureGroup`] as table columns, shared by the PostgreSQL and SQLite
//! stores (they differ only in how sets and JSON are encoded).

use serde::Serialize;
use serde::de::DeserializeOwned;
use tracelab_evidence::{
    Error, FailureGroup, GroupKey, GroupQuery, GroupStatus, InvestigationMark, Language, Result,
};

/// The column list, in the order every query uses.
macro_rules! group_columns {
    () => {
        "group_key, title, kind, language, first_seen, last_seen, count, commits, branches, \
         test_ids, status, resolved_at, resolved_commit, regressions, investigation, version, \
         repositories"
    };
}
pub(crate) use group_columns;

/// One row of `failure_groups`.
#[derive(Debug, Clone)]
pub(crate) struct Columns {
    pub key: String,
    pub title: String,
    pub kind: String,
    pub language: String,
    pub first_seen: i64,
    pub last_seen: i64,
    pub count: i64,
    pub commits: Vec<String>,
    pub branches: Vec<String>,
    pub test_ids: Vec<String>,
    pub status: &'static str,
    pub resolved_at: Option<i64>,
    pub resolved_commit: Option<String>,
    pub regressions: i32,
    pub investigation: Option<serde_json::Value>,
    pub version: i64,
    pub repositories: Vec<String>,
}

/// A unit enum's serde name (`log_error`, `python`).
fn enum_name<T: Serialize>(value: &T) -> Result<String> {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => Ok(s),
        other => Err(Error::Internal(format!("cannot store {other:?} as a name"))),
    }
}

fn from_name<T: DeserializeOwned>(column: &str, name: &str) -> Result<T> {
    serde_json::from_value(serde_json::Value::String(name.to_owned()))
        .map_err(|e| Error::Internal(format!("stored {column} {name:?} is unknown: {e}")))
}

fn to_i64(column: &str, v: u64) -> Result<i64> {
    i64::try_from(v)
        .map_err(|_| Error::InvalidArgument(format!("{column} {v} is too large to store")))
}

fn to_u64(column: &str, v: i64) -> Result<u64> {
    u64::try_from(v).map_err(|_| Error::Internal(format!("stored {column} {v} is negative")))
}

impl Columns {
    pub fn from_group(g: &FailureGroup) -> Result<Self> {
        let (status, resolved_at, resolved_commit) = match &g.status {
            GroupStatus::Open => ("open", None, None),
            GroupStatus::Resolved { at, commit } => ("resolved", Some(*at), commit.clone()),
        };
        Ok(Columns {
            key: g.key.0.clone(),
            title: g.title.clone(),
            kind: enum_name(&g.kind)?,
            language: enum_name(&g.language)?,
            first_seen: g.first_seen,
            last_seen: g.last_seen,
            count: to_i64("count", g.count)?,
            commits: g.commits.iter().cloned().collect(),
            branches: g.branches.iter().cloned().collect(),
            test_ids: g.test_ids.iter().cloned().collect(),
            status,
            resolved_at,
            resolved_commit,
            regressions: i32::try_from(g.regressions).map_err(|_| {
                Error::InvalidArgument(format!("regressions {} too large to store", g.regressions))
            })?,
            investigation: g
                .investigation
                .as_ref()
                .map(serde_json::to_value)
                .transpose()
                .map_err(|e| {
                    Error::Internal(format!("cannot encode the investigation mark: {e}"))
                })?,
            version: to_i64("version", g.version)?,
            repositories: g.repositories.iter().cloned().collect(),
        })
    }

    pub fn into_group(self) -> Result<FailureGroup> {
        let status = match (self.status, self.resolved_at) {
            ("open", _) => GroupStatus::Open,
            ("resolved", Some(at)) => GroupStatus::Resolved {
                at,
                commit: self.resolved_commit,
            },
            (s, at) => {
                return Err(Error::Internal(format!(
                    "group {} has status {s:?} with resolved_at {at:?}",
                    self.key
                )));
            }
        };
        let investigation = self
            .investigation
            .map(serde_json::from_value::<InvestigationMark>)
            .transpose()
            .map_err(|e| {
                Error::Internal(format!(
                    "group {}: unreadable investigation mark: {e}",
                    self.key
                ))
            })?;
        Ok(FailureGroup {
            kind: from_name("kind", &self.kind)?,
            language: from_name("language", &self.language)?,
            key: GroupKey(self.key),
            title: self.title,
            first_seen: self.first_seen,
            last_seen: self.last_seen,
            count: to_u64("count", self.count)?,
            commits: self.commits.into_iter().collect(),
            branches: self.branches.into_iter().collect(),
            test_ids: self.test_ids.into_iter().collect(),
            repositories: self.repositories.into_iter().collect(),
            status,
            regressions: u32::try_from(self.regressions).map_err(|_| {
                Error::Internal(format!(
                    "stored regressions {} is negative",
                    self.regressions
                ))
            })?,
            investigation,
            version: to_u64("version", self.version)?,
        })
    }
}

/// The status column read back as the `&'static str` [`Columns`] holds.
pub(crate) fn status_name(s: &str) -> Result<&'static str> {
    match s {
        "open" => Ok("open"),
        "resolved" => Ok("resolved"),
        other => Err(Error::Internal(format!(
            "unknown group status {other:?} in store"
        ))),
    }
}

/// A language as the `language` column stores it.
pub(crate) fn language_name(l: Language) -> Result<String> {
    enum_name(&l)
}

/// Rows a page query fetches: the page and one more, which only tells
/// whether a next page exists.
pub(crate) fn page_rows(q: &GroupQuery) -> i64 {
    i64::try_from(q.page_size() + 1).unwrap_or(i64::MAX)
}
