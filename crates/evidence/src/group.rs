//! Failure groups: a pure, IO-free model of "the same failure seen again",
//! and the policy that decides when a group deserves an investigation. The
//! store port and its in-memory implementation are in `group_store`.
//!
//! The model ([`FailureGroup::observe`], [`FailureGroup::resolve`],
//! [`decide`]) holds all the logic; a store only loads and saves groups, so a
//! PostgreSQL store (`SELECT ... FOR UPDATE`, call `observe`, `UPDATE ...
//! WHERE version = $n`) behaves exactly like [`crate::InMemoryGroupStore`].

use crate::model::{Failure, FailureKind, Language};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// Commits and branches remembered per group, at most (oldest kept).
pub const MAX_TRACKED: usize = 200;

/// What makes two failures "the same": `stack:<sig>[:<type sig>]` when the
/// failure has in-app frames with function names (plus its exception type), else `error:<sig>` refined by the
/// innermost in-app file when there is one (`error:<sig>@<file sig>`: two
/// `E0425` errors in different files are different problems).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct GroupKey(pub String);

impl GroupKey {
    pub fn for_failure(f: &Failure) -> Self {
        if let Some(key) = Self::rust_panic(f) {
            return key;
        }
        // An import error names what is missing; who imports it is incidental.
        if !crate::signature::missing_names(f.exception_type.as_deref(), &f.message).is_empty() {
            return GroupKey(format!("error:{}", f.error_signature));
        }
        match &f.stack_signature {
            // The exception type splits one code path failing in two ways
            // (a KeyError and a TypeError in the same function are two bugs).
            Some(s) => match &f.exception_type {
                Some(t) => GroupKey(format!(
                    "stack:{s}:{}",
                    &crate::signature::error_signature(Some(t), "")[..8]
                )),
                None => GroupKey(format!("stack:{s}")),
            },
            None => match crate::signature::location_signature(&f.frames) {
                Some(loc) => GroupKey(format!("error:{}@{}", f.error_signature, &loc[..8])),
                None => GroupKey(format!("error:{}", f.error_signature)),
            },
        }
    }
}

impl GroupKey {
    /// A Rust panic is keyed by its message and the line it panicked at
    /// (`thread 'main' panicked at src/main.rs:2:5` → `main.rs` line 2),
    /// never by its backtrace: the same panic is printed with a backtrace or
    /// without one depending on `RUST_BACKTRACE`, and both must land in one
    /// group. The line, not only the file: one file unwraps `None` at many
    /// lines, each its own bug (`error:<sig>@<file sig>:<line>`). A line
    /// shifted by an edit is a new key; similar-issue merging re-joins it
    /// when its backtrace matches.
    fn rust_panic(f: &Failure) -> Option<Self> {
        if f.language != Language::Rust || f.exception_type.as_deref() != Some("panic") {
            return None;
        }
        let location = f.context.get("location")?;
        let (file, rest) = split_location(location);
        let loc = crate::signature::file_signature(file);
        let key = format!("error:{}@{}", f.error_signature, &loc[..8]);
        Some(GroupKey(match location_line(rest) {
            Some(line) => format!("{key}:{line}"),
            None => key,
        }))
    }
}

/// The line of a location's `:line:col` or `:line` rest.
pub(crate) fn location_line(rest: &str) -> Option<u32> {
    rest.strip_prefix(':')?.split(':').next()?.parse().ok()
}

/// `path:line:col` (the path may hold colons, as on Windows) into the path
/// and the rest.
pub(crate) fn split_location(location: &str) -> (&str, &str) {
    let is_number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    // `path:line:col`, or `path:line` (Rust before 1.42 printed no column).
    let mut end = location.len();
    for _ in 0..2 {
        match location[..end].rfind(':') {
            Some(i) if is_number(&location[i + 1..end]) => end = i,
            _ => break,
        }
    }
    if end == location.len() || end == 0 {
        return (location, "");
    }
    (&location[..end], &location[end..])
}

impl Failure {
    /// The group key: stack signature when there are in-app frames, else the error signature.
    pub fn group_key(&self) -> GroupKey {
        GroupKey::for_failure(self)
    }
}

impl std::fmt::Display for GroupKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One sighting of a failure, with where and when it happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Occurrence {
    pub key: GroupKey,
    /// Unix time in seconds (the caller's clock; the model never reads one).
    pub at: i64,
    pub commit: Option<String>,
    pub branch: Option<String>,
    /// A one-line description (`ValueError: bad config`), redacted.
    pub title: String,
    pub kind: FailureKind,
    pub language: Language,
    pub test_id: Option<String>,
    /// The repository it happened in (`owner/name`), when the report named one.
    #[serde(default)]
    pub repository: Option<String>,
}

impl Occurrence {
    pub fn from_failure(f: &Failure, at: i64, commit: Option<&str>, branch: Option<&str>) -> Self {
        let first_line = f.message.lines().next().unwrap_or("");
        let title = match &f.exception_type {
            Some(t) if !first_line.is_empty() => format!("{t}: {first_line}"),
            Some(t) => t.clone(),
            None => first_line.to_owned(),
        };
        Occurrence {
            key: GroupKey::for_failure(f),
            at,
            commit: commit.map(str::to_owned),
            branch: branch.map(str::to_owned),
            title: crate::input::truncate_str(&title, 200).to_owned(),
            kind: f.kind,
            language: f.language,
            test_id: f.test_id.clone(),
            repository: None,
        }
    }

    /// A sighting described rather than parsed (tests, fixtures, imports of
    /// groups known elsewhere): no commit, branch or test until
    /// [`on`](Self::on) and [`in_test`](Self::in_test) add them.
    pub fn new(key: GroupKey, at: i64, kind: FailureKind, language: Language, title: &str) -> Self {
        Occurrence {
            key,
            at,
            commit: None,
            branch: None,
            title: crate::input::truncate_str(title, 200).to_owned(),
            kind,
            language,
            test_id: None,
            repository: None,
        }
    }

    /// Where it happened, as [`Occurrence::from_failure`] takes it.
    pub fn on(mut self, commit: Option<&str>, branch: Option<&str>) -> Self {
        self.commit = commit.map(str::to_owned);
        self.branch = branch.map(str::to_owned);
        self
    }

    /// The test that failed.
    pub fn in_test(mut self, test_id: &str) -> Self {
        self.test_id = Some(test_id.to_owned());
        self
    }

    /// The repository it happened in.
    pub fn in_repository(mut self, repository: Option<&str>) -> Self {
        self.repository = repository.map(str::to_owned);
        self
    }
}

/// Whether the group's failure is considered fixed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum GroupStatus {
    Open,
    Resolved { at: i64, commit: Option<String> },
}

/// A recorded request for an investigation of this group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvestigationMark {
    pub requested_at: i64,
    pub reason: Reason,
}

/// All sightings of one failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureGroup {
    pub key: GroupKey,
    pub title: String,
    pub kind: FailureKind,
    pub language: Language,
    pub first_seen: i64,
    pub last_seen: i64,
    pub count: u64,
    /// Affected commits (at most [`MAX_TRACKED`]).
    pub commits: BTreeSet<String>,
    /// Affected branches (at most [`MAX_TRACKED`]).
    pub branches: BTreeSet<String>,
    pub test_ids: BTreeSet<String>,
    /// Repositories it was seen in (at most [`MAX_TRACKED`]).
    #[serde(default)]
    pub repositories: BTreeSet<String>,
    pub status: GroupStatus,
    /// Times the group came back after being resolved.
    pub regressions: u32,
    pub investigation: Option<InvestigationMark>,
    /// Incremented on every change; stores use it for optimistic concurrency.
    pub version: u64,
}

/// What an occurrence meant for its group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Observation {
    /// First sighting.
    New,
    /// Seen before, still open.
    Recurrence,
    /// Seen again after it was resolved.
    Regression {
        resolved_at: i64,
        resolved_in: Option<String>,
    },
}

fn track(set: &mut BTreeSet<String>, v: &Option<String>) {
    if let Some(v) = v
        && set.len() < MAX_TRACKED
    {
        set.insert(v.clone());
    }
}

impl FailureGroup {
    /// A group holding its first occurrence.
    pub fn new(occ: &Occurrence) -> Self {
        let mut g = FailureGroup {
            key: occ.key.clone(),
            title: occ.title.clone(),
            kind: occ.kind,
            language: occ.language,
            first_seen: occ.at,
            last_seen: occ.at,
            count: 1,
            commits: BTreeSet::new(),
            branches: BTreeSet::new(),
            test_ids: BTreeSet::new(),
            repositories: BTreeSet::new(),
            status: GroupStatus::Open,
            regressions: 0,
            investigation: None,
            version: 1,
        };
        track(&mut g.commits, &occ.commit);
        track(&mut g.branches, &occ.branch);
        track(&mut g.test_ids, &occ.test_id);
        track(&mut g.repositories, &occ.repository);
        g
    }

    /// Adds an occurrence. Out-of-order occurrences (older than `last_seen`)
    /// are counted but do not reopen a group resolved after them.
    pub fn observe(&mut self, occ: &Occurrence) -> Observation {
        debug_assert_eq!(occ.key, self.key);
        self.count += 1;
        self.version += 1;
        self.first_seen = self.first_seen.min(occ.at);
        self.last_seen = self.last_seen.max(occ.at);
        track(&mut self.commits, &occ.commit);
        track(&mut self.branches, &occ.branch);
        track(&mut self.test_ids, &occ.test_id);
        track(&mut self.repositories, &occ.repository);
        match self.status.clone() {
            GroupStatus::Resolved { at, commit } if occ.at >= at => {
                self.status = GroupStatus::Open;
                self.regressions += 1;
                Observation::Regression {
                    resolved_at: at,
                    resolved_in: commit,
                }
            }
            _ => Observation::Recurrence,
        }
    }

    /// Marks the group fixed (e.g. its test passed on the protected branch, or a reviewer said so).
    pub fn resolve(&mut self, at: i64, commit: Option<String>) {
        self.status = GroupStatus::Resolved { at, commit };
        self.investigation = None;
        self.version += 1;
    }

    /// Records that an investigation was requested.
    pub fn mark_investigation(&mut self, at: i64, reason: Reason) {
        self.investigation = Some(InvestigationMark {
            requested_at: at,
            reason,
        });
        self.version += 1;
    }

    /// An undone similarity merge: the sightings of another exact key that
    /// this group counted (`moved`) leave it. The count drops by as many;
    /// a commit, branch, test or repository leaves the group only when no
    /// sighting that stays (`kept`: the group's other recorded sightings)
    /// has it too; first and last seen are taken from `kept` when a moved
    /// sighting was the earliest or the latest. Status, regressions and the
    /// investigation mark stay: they were decided on the group as a whole.
    ///
    /// Returns the group the moved sightings form on their own (`own`, the
    /// exact key's group when it already has one, else a new one, counted
    /// in time order), or `own` unchanged when nothing moved.
    pub fn give_back(
        &mut self,
        moved: &[Occurrence],
        kept: &[Occurrence],
        own: Option<FailureGroup>,
    ) -> Option<FailureGroup> {
        if moved.is_empty() {
            return own;
        }
        let n = u64::try_from(moved.len()).unwrap_or(u64::MAX);
        // The group's own first sighting always stays: it is never emptied.
        self.count = self.count.saturating_sub(n).max(1);
        self.version += 1;
        type Field = fn(&Occurrence) -> &Option<String>;
        let fields: [(Field, &mut BTreeSet<String>); 4] = [
            (|o| &o.commit, &mut self.commits),
            (|o| &o.branch, &mut self.branches),
            (|o| &o.test_id, &mut self.test_ids),
            (|o| &o.repository, &mut self.repositories),
        ];
        for (field, set) in fields {
            for v in moved.iter().filter_map(|o| field(o).as_ref()) {
                if !kept.iter().any(|o| field(o).as_ref() == Some(v)) {
                    set.remove(v);
                }
            }
        }
        let kept_at = || kept.iter().map(|o| o.at);
        if moved.iter().any(|o| o.at >= self.last_seen)
            && let Some(last) = kept_at().max()
        {
            self.last_seen = last.max(self.first_seen);
        }
        if moved.iter().any(|o| o.at <= self.first_seen)
            && let Some(first) = kept_at().min()
        {
            self.first_seen = first.min(self.last_seen);
        }
        let mut moved: Vec<&Occurrence> = moved.iter().collect();
        moved.sort_by_key(|o| o.at);
        let mut own = own;
        for o in moved {
            let o = Occurrence {
                key: own
                    .as_ref()
                    .map_or_else(|| o.key.clone(), |g| g.key.clone()),
                ..o.clone()
            };
            match &mut own {
                Some(g) => {
                    g.observe(&o);
                }
                None => own = Some(FailureGroup::new(&o)),
            }
        }
        own
    }
}

/// When groups get investigated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Policy {
    /// Branch names or prefixes ending in `*` (`main`, `release/*`).
    pub protected_branches: Vec<String>,
    /// Occurrences after which a group is investigated wherever it happens.
    pub recurrence_threshold: u64,
    /// Distinct commits a recurrence must span (one commit re-run N times is flakiness evidence, not recurrence).
    pub recurrence_min_commits: usize,
    /// Seconds after which a group whose investigation was requested may be requested again.
    pub reinvestigate_after: i64,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            protected_branches: vec!["main".into(), "master".into(), "release/*".into()],
            recurrence_threshold: 3,
            recurrence_min_commits: 2,
            reinvestigate_after: 7 * 24 * 3600,
        }
    }
}

impl Policy {
    pub fn is_protected(&self, branch: Option<&str>) -> bool {
        let Some(b) = branch else { return false };
        self.protected_branches
            .iter()
            .any(|p| match p.strip_suffix('*') {
                Some(prefix) => b.starts_with(prefix),
                None => b == p,
            })
    }
}

/// How the decision was asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Trigger {
    /// An occurrence arrived.
    Automatic,
    /// Someone asked (CLI, API).
    Manual { requested_by: String },
}

/// Why a group is investigated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Reason {
    NewOnProtectedBranch { branch: String },
    Regression,
    Recurrence { count: u64, commits: usize },
    Manual { requested_by: String },
}

/// Why it is not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SkipReason {
    /// New, but only on an unprotected branch (a work-in-progress PR).
    NotProtectedBranch,
    /// An investigation was already requested recently.
    AlreadyRequested { at: i64 },
    /// Seen, but not often enough yet.
    BelowThreshold { count: u64, commits: usize },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    Investigate { reason: Reason },
    Skip { reason: SkipReason },
}

impl Decision {
    pub fn should_investigate(&self) -> bool {
        matches!(self, Decision::Investigate { .. })
    }
}

/// Decides whether `group` (already updated with the occurrence) needs an investigation.
pub fn decide(
    policy: &Policy,
    group: &FailureGroup,
    observation: &Observation,
    occ: &Occurrence,
    trigger: &Trigger,
    now: i64,
) -> Decision {
    if let Trigger::Manual { requested_by } = trigger {
        return Decision::Investigate {
            reason: Reason::Manual {
                requested_by: requested_by.clone(),
            },
        };
    }
    if let Some(mark) = &group.investigation
        && now - mark.requested_at < policy.reinvestigate_after
        && !matches!(observation, Observation::Regression { .. })
    {
        return Decision::Skip {
            reason: SkipReason::AlreadyRequested {
                at: mark.requested_at,
            },
        };
    }
    let protected = policy.is_protected(occ.branch.as_deref());
    match observation {
        Observation::Regression { .. } if protected || occ.branch.is_none() => {
            return Decision::Investigate {
                reason: Reason::Regression,
            };
        }
        Observation::New if protected => {
            return Decision::Investigate {
                reason: Reason::NewOnProtectedBranch {
                    branch: occ.branch.clone().unwrap_or_default(),
                },
            };
        }
        _ => {}
    }
    let commits = group.commits.len();
    if group.count >= policy.recurrence_threshold && commits >= policy.recurrence_min_commits {
        return Decision::Investigate {
            reason: Reason::Recurrence {
                count: group.count,
                commits,
            },
        };
    }
    if matches!(observation, Observation::New) && !protected {
        return Decision::Skip {
            reason: SkipReason::NotProtectedBranch,
        };
    }
    Decision::Skip {
        reason: SkipReason::BelowThreshold {
            count: group.count,
            commits,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sighting(key: &str, at: i64, commit: &str, branch: &str) -> Occurrence {
        Occurrence::new(
            GroupKey(key.into()),
            at,
            FailureKind::Exception,
            Language::Python,
            "KeyError: 'email'",
        )
        .on(Some(commit), Some(branch))
    }

    #[test]
    fn an_undone_merge_gives_back_its_sightings_and_keeps_what_others_share() {
        let own = [
            sighting("a", 100, "c1", "main"),
            sighting("a", 300, "c3", "main"),
        ];
        // b's sightings, counted in a by a merge: one on a commit a shares, one the latest.
        let moved = [
            sighting("b", 200, "c1", "feature"),
            sighting("b", 400, "c4", "feature"),
        ];
        let mut a = FailureGroup::new(&own[0]);
        a.observe(&moved[0].clone_into_key("a"));
        a.observe(&own[1]);
        a.observe(&moved[1].clone_into_key("a"));
        assert_eq!((a.count, a.last_seen), (4, 400));

        let b = a.give_back(&moved, &own, None).expect("b's own group");
        assert_eq!((a.count, a.first_seen, a.last_seen), (2, 100, 300));
        assert_eq!(
            Vec::from_iter(a.commits.iter().map(String::as_str)),
            ["c1", "c3"]
        );
        assert_eq!(
            Vec::from_iter(a.branches.iter().map(String::as_str)),
            ["main"]
        );
        assert_eq!(
            (b.key.0.as_str(), b.count, b.first_seen, b.last_seen),
            ("b", 2, 200, 400)
        );
        assert_eq!(
            Vec::from_iter(b.commits.iter().map(String::as_str)),
            ["c1", "c4"]
        );
        assert_eq!(b.status, GroupStatus::Open);

        // Nothing moved: nothing changes.
        let before = a.clone();
        assert_eq!(a.give_back(&[], &own, None), None);
        assert_eq!(a, before);
        // The exact key already has a group: the sightings join it.
        let existing = FailureGroup::new(&sighting("b", 50, "c0", "feature"));
        let b = a.give_back(&moved[..1], &own, Some(existing)).unwrap();
        assert_eq!((b.count, b.first_seen, b.last_seen), (2, 50, 200));
    }

    impl Occurrence {
        fn clone_into_key(&self, key: &str) -> Occurrence {
            Occurrence {
                key: GroupKey(key.into()),
                ..self.clone()
            }
        }
    }
}
