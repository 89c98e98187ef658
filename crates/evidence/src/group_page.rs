//! Listing failure groups a page at a time: the filters a reader may give
//! (repository, state, language, seen since), the order (last seen, newest
//! first, ties by key in byte order) and a keyset cursor, so a page never
//! repeats or skips a group however many are recorded between two requests
//! (a group seen again moves to the front and is listed again from the start).
//!
//! The rule lives here, as pure functions; a store turns it into its query
//! and must return exactly what [`GroupQuery::apply`] returns over all its
//! groups (the stores' conformance suite checks that).

use crate::group::{FailureGroup, GroupKey, GroupStatus};
use crate::model::Language;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};

/// The most groups one page may hold.
pub const MAX_PAGE: usize = 500;

/// A group's state, as a filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupState {
    Open,
    Resolved,
}

impl GroupState {
    /// The state `status` is in.
    pub fn of(status: &GroupStatus) -> Self {
        match status {
            GroupStatus::Open => GroupState::Open,
            GroupStatus::Resolved { .. } => GroupState::Resolved,
        }
    }

    /// The stored name (`open`, `resolved`).
    pub fn as_str(self) -> &'static str {
        match self {
            GroupState::Open => "open",
            GroupState::Resolved => "resolved",
        }
    }
}

impl std::str::FromStr for GroupState {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "open" => Ok(GroupState::Open),
            "resolved" => Ok(GroupState::Resolved),
            other => Err(Error::InvalidArgument(format!(
                "state {other:?} is not open or resolved"
            ))),
        }
    }
}

/// Where the previous page ended: its last group's `last_seen` and key.
/// Written as `<last_seen>:<key>`; readers should treat it as opaque.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupCursor {
    pub last_seen: i64,
    pub key: GroupKey,
}

impl GroupCursor {
    /// The cursor just past `g`.
    pub fn after(g: &FailureGroup) -> Self {
        GroupCursor {
            last_seen: g.last_seen,
            key: g.key.clone(),
        }
    }

    /// True when `g` comes after the cursor in listing order.
    pub fn precedes(&self, g: &FailureGroup) -> bool {
        g.last_seen < self.last_seen
            || (g.last_seen == self.last_seen && g.key.0.as_bytes() > self.key.0.as_bytes())
    }
}

impl std::fmt::Display for GroupCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.last_seen, self.key)
    }
}

impl std::str::FromStr for GroupCursor {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let bad = || Error::InvalidArgument(format!("cursor {s:?} is not one this server gave"));
        let (at, key) = s.split_once(':').ok_or_else(bad)?;
        if key.is_empty() {
            return Err(bad());
        }
        Ok(GroupCursor {
            last_seen: at.parse().map_err(|_| bad())?,
            key: GroupKey(key.to_owned()),
        })
    }
}

impl Serialize for GroupCursor {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for GroupCursor {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Which groups to list; every filter is optional.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GroupQuery {
    /// Groups seen in this repository.
    pub repository: Option<String>,
    pub state: Option<GroupState>,
    pub language: Option<Language>,
    /// Groups last seen at or after this unix time.
    pub since: Option<i64>,
    /// Continue after the previous page (its `next`).
    pub after: Option<GroupCursor>,
    /// At most this many groups (capped at [`MAX_PAGE`]).
    pub limit: usize,
}

impl Default for GroupQuery {
    fn default() -> Self {
        GroupQuery {
            repository: None,
            state: None,
            language: None,
            since: None,
            after: None,
            limit: 50,
        }
    }
}

/// One page of groups and where the next one starts (`None`: this was the last).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupPage {
    pub groups: Vec<FailureGroup>,
    pub next: Option<GroupCursor>,
}

impl GroupQuery {
    /// The first `limit` groups, newest first.
    pub fn first(limit: usize) -> Self {
        GroupQuery {
            limit,
            ..GroupQuery::default()
        }
    }

    /// The limit a store uses: at most [`MAX_PAGE`].
    pub fn page_size(&self) -> usize {
        self.limit.min(MAX_PAGE)
    }

    /// True when `g` passes every filter and lies after the cursor.
    pub fn matches(&self, g: &FailureGroup) -> bool {
        self.repository
            .as_ref()
            .is_none_or(|r| g.repositories.contains(r))
            && self.state.is_none_or(|s| GroupState::of(&g.status) == s)
            && self.language.is_none_or(|l| g.language == l)
            && self.since.is_none_or(|t| g.last_seen >= t)
            && self.after.as_ref().is_none_or(|c| c.precedes(g))
    }

    /// The page over `groups` (any order): what every store must return.
    pub fn apply<'a>(&self, groups: impl IntoIterator<Item = &'a FailureGroup>) -> GroupPage {
        let mut hits: Vec<&FailureGroup> = groups.into_iter().filter(|g| self.matches(g)).collect();
        hits.sort_by(|a, b| listing_order(a, b));
        let rows: Vec<FailureGroup> = hits
            .into_iter()
            .take(self.page_size() + 1)
            .cloned()
            .collect();
        self.page(rows)
    }

    /// The page from the rows a store fetched in listing order, with one row
    /// past the page size when there is more (that row only proves a next page).
    pub fn page(&self, mut rows: Vec<FailureGroup>) -> GroupPage {
        let size = self.page_size();
        let more = rows.len() > size;
        rows.truncate(size);
        let next = match rows.last() {
            Some(last) if more => Some(GroupCursor::after(last)),
            _ => None,
        };
        GroupPage { groups: rows, next }
    }
}

/// Last seen, newest first; ties by key in byte order.
pub fn listing_order(a: &FailureGroup, b: &FailureGroup) -> std::cmp::Ordering {
    b.last_seen
        .cmp(&a.last_seen)
        .then_with(|| a.key.0.as_bytes().cmp(b.key.0.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::Occurrence;
    use crate::model::FailureKind;

    fn group(key: &str, at: i64, repo: Option<&str>, lang: Language) -> FailureGroup {
        let mut o = Occurrence::new(GroupKey(key.into()), at, FailureKind::Exception, lang, "E");
        o.repository = repo.map(str::to_owned);
        FailureGroup::new(&o)
    }

    #[test]
    fn pages_walk_every_group_once_in_order() {
        let groups: Vec<FailureGroup> = (0..7)
            .map(|i| group(&format!("k{i}"), 100 + i / 2, None, Language::Python))
            .collect();
        let mut q = GroupQuery::first(3);
        let mut seen = Vec::new();
        loop {
            let page = q.apply(&groups);
            assert!(page.groups.len() <= 3);
            seen.extend(page.groups.iter().map(|g| g.key.0.clone()));
            match page.next {
                Some(c) => q.after = Some(c.to_string().parse().unwrap()),
                None => break,
            }
        }
        assert_eq!(seen, ["k6", "k4", "k5", "k2", "k3", "k0", "k1"]);
    }

    #[test]
    fn filters_combine() {
        let mut resolved = group("r", 50, Some("acme/api"), Language::Go);
        resolved.resolve(60, None);
        let groups = [
            group("a", 10, Some("acme/api"), Language::Python),
            group("b", 20, Some("acme/web"), Language::Python),
            resolved,
        ];
        let keys = |q: GroupQuery| -> Vec<String> {
            q.apply(&groups)
                .groups
                .into_iter()
                .map(|g| g.key.0)
                .collect()
        };
        let q = |f: fn(&mut GroupQuery)| {
            let mut q = GroupQuery::first(10);
            f(&mut q);
            q
        };
        assert_eq!(
            keys(q(|q| q.repository = Some("acme/api".into()))),
            ["r", "a"]
        );
        assert_eq!(keys(q(|q| q.state = Some(GroupState::Open))), ["b", "a"]);
        assert_eq!(keys(q(|q| q.language = Some(Language::Go))), ["r"]);
        assert_eq!(keys(q(|q| q.since = Some(20))), ["r", "b"]);
        assert!(keys(q(|q| q.limit = 0)).is_empty());
    }

    #[test]
    fn cursors_round_trip_and_bad_ones_are_refused() {
        let c = GroupCursor {
            last_seen: -5,
            key: GroupKey("stack:ab:cd".into()),
        };
        assert_eq!(c.to_string().parse::<GroupCursor>().unwrap(), c);
        for bad in ["", "x:k", "12", "12:"] {
            let err = bad.parse::<GroupCursor>().unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument, "{bad}");
        }
        assert!("closed".parse::<GroupState>().is_err());
    }
}
