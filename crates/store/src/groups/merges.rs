//! Similar-issue merging in the fleet's group store: a failure whose exact
//! key has no group joins the most similar known group (the library's
//! [`best_match`] over the groups' stored stack profiles, same language,
//! most recently seen first) and the merge is written down with its score
//! and matched frames (`group_merges`, migration 0012). Later sightings of
//! that exact key follow the merge. Every sighting counted through this
//! path is kept under the group it was counted in and its own exact key
//! (`group_sightings`, migration 0017), so [`MergingGroupStore::unmerge`]
//! can undo a merge: the sightings it counted move back to the exact key's
//! own group ([`FailureGroup::give_back`]), who undid it and why are kept in
//! the merge history, and the exact key is never merged by similarity
//! again. Evidence rows keep their exact key (`evidence.exact_key`) and
//! move with their sightings.
//!
//! The rule ([`similar_group`]) and the statements (`rows.rs`) are shared
//! by both stores: PostgreSQL (`record_evidence`,
//! [`MergingGroupStore::record_similar`]) and SQLite, so the one-machine
//! store merges as the fleet's does.

use serde::{Deserialize, Serialize};
use tracelab_evidence::similar::{MatchedFrame, SimilarityConfig, StackProfile, best_match};
use tracelab_evidence::{Error, FailureGroup, GroupKey, Observation, Occurrence, Result};

/// Groups a new trace is compared with, at most (the most recently seen).
pub const MAX_CANDIDATES: i64 = 200;

/// Longest reason kept for undoing a merge, in bytes (longer ones are refused).
pub const MAX_UNDO_REASON: usize = 1000;

/// One exact key counted in another group by similarity, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergeRecord {
    /// The failure's own exact key.
    pub exact_key: GroupKey,
    /// The group it was counted in.
    pub group_key: GroupKey,
    pub score: f64,
    /// Frames the alignment matched (the new trace's positions first).
    pub matched: Vec<MatchedFrame>,
    /// Unix seconds of the merge, and of its undoing.
    pub merged_at: i64,
    pub undone_at: Option<i64>,
    /// Who undid it and why (set with `undone_at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undone_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo_reason: Option<String>,
    /// Sightings the undoing moved back to the exact key's own group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved: Option<u64>,
}

/// Who undoes a merge, when and why: kept in the merge history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undo {
    /// Unix seconds.
    pub at: i64,
    /// The person or token name.
    pub by: String,
    pub reason: String,
}

impl Undo {
    /// Refuses an empty name or reason, or a reason past [`MAX_UNDO_REASON`]:
    /// the history must say who and why.
    pub fn new(at: i64, by: &str, reason: &str) -> Result<Self> {
        let (by, reason) = (by.trim(), reason.trim());
        if by.is_empty() || reason.is_empty() {
            return Err(Error::InvalidArgument(
                "undoing a merge needs who undoes it and why".into(),
            ));
        }
        if reason.len() > MAX_UNDO_REASON {
            return Err(Error::InvalidArgument(format!(
                "the reason is {} bytes, more than {MAX_UNDO_REASON}",
                reason.len()
            )));
        }
        Ok(Self {
            at,
            by: by.to_owned(),
            reason: reason.to_owned(),
        })
    }
}

/// What undoing a merge did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unmerged {
    /// The merge, now with who undid it, why and how many sightings moved.
    pub merge: MergeRecord,
    /// The group the merge counted into, without the moved sightings.
    pub from: FailureGroup,
    /// The exact key's own group holding them; `None` when none were
    /// recorded (a merge made before migration 0017 kept no sightings).
    pub own: Option<FailureGroup>,
}

/// A group store that merges similar issues: the stores' one interface to
/// similar-issue merging, checked on both by `conformance::merges`.
#[async_trait::async_trait]
pub trait MergingGroupStore: Send + Sync {
    /// Counts `occ` in its group: the group of its exact key, the group an
    /// earlier merge of that key chose, or — when the key has no group yet
    /// and `profile` is like a known group's — that group, the merge
    /// recorded (returned when made now). Without merging configured, or
    /// without a profile, exactly [`GroupStore::record`](tracelab_evidence::GroupStore::record).
    async fn record_similar(
        &self,
        occ: &Occurrence,
        profile: Option<&StackProfile>,
    ) -> Result<(FailureGroup, Observation, Option<MergeRecord>)>;
    /// The merges into `group`, oldest first, undone ones included.
    async fn merges(&self, group: &GroupKey) -> Result<Vec<MergeRecord>>;
    /// Undoes the merge of `exact_key`: the sightings it counted in the
    /// other group move to the exact key's own group, whose next sightings
    /// it counts; it is never merged by similarity again; `undo` is kept in
    /// the merge history. `None`: no merge of that key to undo.
    async fn unmerge(&self, exact_key: &GroupKey, undo: &Undo) -> Result<Option<Unmerged>>;
}

/// The merge rule both stores apply to a new exact key: the best of the
/// candidate groups' profiles (same language, most recently seen first,
/// at most [`MAX_CANDIDATES`]) at the threshold or above.
pub(super) fn similar_group(
    exact: &GroupKey,
    profile: &StackProfile,
    candidates: &[(GroupKey, StackProfile)],
    cfg: &SimilarityConfig,
    now: i64,
) -> Option<MergeRecord> {
    if profile.frames.is_empty() {
        return None;
    }
    let (group_key, s) = best_match(profile, candidates, cfg)?;
    Some(MergeRecord {
        exact_key: exact.clone(),
        group_key,
        score: s.score,
        matched: s.matched,
        merged_at: now,
        undone_at: None,
        undone_by: None,
        undo_reason: None,
        moved: None,
    })
}

pub(super) fn json_error(e: serde_json::Error) -> Error {
    Error::Internal(format!("unreadable merge or profile: {e}"))
}
