//! The groups known so far: where a failure goes (exact key, similar group
//! or a new one), the merge records, and undoing a merge.

use super::{
    FrameStats, MAX_COMPARED_MEMBERS, MatchedFrame, Similarity, SimilarityConfig, StackProfile,
    similarity,
};
use crate::group::GroupKey;
use crate::model::Failure;
use serde::{Deserialize, Serialize};

/// Why a trace is in the group it is in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "how", rename_all = "snake_case")]
pub enum Join {
    /// A new group of its own.
    New,
    /// The group already holds a trace with the same exact key.
    Exact,
    /// Merged by similarity with `nearest` (a member's label).
    Similar {
        score: f64,
        nearest: String,
        matched: Vec<MatchedFrame>,
    },
}

/// Where a failure goes (or would go).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Assignment {
    /// The group's id: the exact key of its first member.
    pub group: GroupKey,
    /// The failure's own exact key, kept so a merge can be undone.
    pub exact_key: GroupKey,
    #[serde(flatten)]
    pub join: Join,
}

/// One trace in a group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Member {
    pub key: GroupKey,
    /// The caller's name for it (a file, an evidence id).
    pub label: String,
    pub profile: StackProfile,
    /// Set when the member joined by similarity: the undo record.
    pub merge: Option<Merge>,
}

/// The record of a similarity merge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Merge {
    pub score: f64,
    pub nearest: String,
    pub matched: Vec<MatchedFrame>,
}

/// A group: traces of one exact key or more, merged by similarity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimilarGroup {
    pub id: GroupKey,
    pub members: Vec<Member>,
}

/// The groups known so far and the frame statistics they give.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupIndex {
    pub config: SimilarityConfig,
    stats: FrameStats,
    groups: Vec<SimilarGroup>,
}

impl GroupIndex {
    pub fn new(config: SimilarityConfig) -> Self {
        Self {
            config,
            stats: FrameStats::new(),
            groups: Vec::new(),
        }
    }

    pub fn groups(&self) -> &[SimilarGroup] {
        &self.groups
    }

    pub fn stats(&self) -> &FrameStats {
        &self.stats
    }

    /// Where `f` would go, without adding it.
    pub fn nearest(&self, f: &Failure) -> Assignment {
        let key = f.group_key();
        self.place(&key, &StackProfile::from_failure(f)).0
    }

    fn place(&self, key: &GroupKey, profile: &StackProfile) -> (Assignment, Option<usize>) {
        if let Some(g) = self
            .groups
            .iter()
            .position(|g| g.members.iter().any(|m| &m.key == key))
        {
            let a = Assignment {
                group: self.groups[g].id.clone(),
                exact_key: key.clone(),
                join: Join::Exact,
            };
            return (a, Some(g));
        }
        let mut best: Option<(usize, usize, Similarity)> = None;
        for (gi, g) in self.groups.iter().enumerate() {
            let n = g.members.len();
            // The first member and the most recent ones: bounded work per group.
            let recent = n.saturating_sub(MAX_COMPARED_MEMBERS - 1).max(1);
            for mi in std::iter::once(0).chain(recent..n) {
                let s = similarity(profile, &g.members[mi].profile, &self.stats, &self.config);
                if best.as_ref().is_none_or(|(_, _, b)| s.score > b.score) {
                    best = Some((gi, mi, s));
                }
            }
        }
        match best {
            Some((gi, mi, s)) if s.score >= self.config.threshold && s.score > 0.0 => {
                let g = &self.groups[gi];
                let a = Assignment {
                    group: g.id.clone(),
                    exact_key: key.clone(),
                    join: Join::Similar {
                        score: s.score,
                        nearest: g.members[mi].label.clone(),
                        matched: s.matched,
                    },
                };
                (a, Some(gi))
            }
            _ => (
                Assignment {
                    group: key.clone(),
                    exact_key: key.clone(),
                    join: Join::New,
                },
                None,
            ),
        }
    }

    /// Files `f` under its group (exact, similar or new) and returns why.
    pub fn insert(&mut self, f: &Failure, label: &str) -> Assignment {
        self.insert_profile(f.group_key(), StackProfile::from_failure(f), label)
    }

    /// [`insert`](Self::insert) for a profile already built.
    pub fn insert_profile(
        &mut self,
        key: GroupKey,
        profile: StackProfile,
        label: &str,
    ) -> Assignment {
        self.stats.add(&profile);
        let (a, at) = self.place(&key, &profile);
        let merge = match &a.join {
            Join::Similar {
                score,
                nearest,
                matched,
            } => Some(Merge {
                score: *score,
                nearest: nearest.clone(),
                matched: matched.clone(),
            }),
            _ => None,
        };
        let member = Member {
            key: key.clone(),
            label: label.to_owned(),
            profile,
            merge,
        };
        match at {
            Some(g) => self.groups[g].members.push(member),
            None => self.groups.push(SimilarGroup {
                id: key,
                members: vec![member],
            }),
        }
        a
    }

    /// Undoes the merges of every member with exact key `key`: they leave
    /// their group and form one of their own. Returns how many moved.
    pub fn unmerge(&mut self, key: &GroupKey) -> usize {
        let mut moved = Vec::new();
        for g in &mut self.groups {
            if &g.id == key {
                continue;
            }
            let (out, keep): (Vec<Member>, Vec<Member>) = std::mem::take(&mut g.members)
                .into_iter()
                .partition(|m| &m.key == key);
            g.members = keep;
            moved.extend(out);
        }
        self.groups.retain(|g| !g.members.is_empty());
        let n = moved.len();
        if n > 0 {
            for m in &mut moved {
                m.merge = None;
            }
            self.groups.push(SimilarGroup {
                id: key.clone(),
                members: moved,
            });
        }
        n
    }
}
