//! Similar-issue merging: the second grouping level above the exact
//! [`GroupKey`].
//!
//! The exact key hashes the innermost five in-app frames, so one bug reached
//! through another caller, printed by another version (a shifted frame, a
//! renamed checkout directory), or pasted without its header lands in a new
//! group. This module scores how alike two stack traces are, in the spirit of
//! TraceSim (Vasiliev et al., 2020) and ReBucket (Dang et al., 2012):
//!
//! - a trace becomes a [`StackProfile`]: frame tokens innermost first
//!   (`file name|function`, never line numbers), at most
//!   [`MAX_PROFILE_FRAMES`], plus the exception type and masked message;
//! - each frame weighs `position × rarity × origin`: `1 / (1 + i)^decay` for
//!   the `i`-th frame from the top, `ln((n + 1) / (df + 1)) + 1` for a token
//!   seen in `df` of `n` known traces ([`FrameStats`]), and
//!   [`SimilarityConfig::library_weight`] for frames that are not in-app;
//! - the frames are aligned in order (a weighted longest common
//!   subsequence, each match worth the geometric mean of its two weights);
//!   the frame score is twice the matched weight over both traces' total;
//! - a different exception type multiplies the score by
//!   [`SimilarityConfig::type_mismatch`]; the masked messages' word overlap
//!   contributes [`SimilarityConfig::message_weight`].
//!
//! A failure joins the group of its exact key when one exists, otherwise the
//! group holding its most similar trace when the score reaches
//! [`SimilarityConfig::threshold`]. A [`Merge`] records the score, the
//! matched frames and the exact key, so [`GroupIndex::unmerge`] can undo it.
//! Pure logic: no IO, no clock; time per comparison is bounded by the
//! profile caps (64 × 64 alignment cells), whatever the input's size.

mod index;
mod profile;
mod score;
#[cfg(test)]
mod tests;

pub use index::{Assignment, GroupIndex, Join, Member, Merge, SimilarGroup};
pub use profile::{FrameToken, StackProfile, package_of};
pub use score::{
    DEFAULT_THRESHOLD, FrameStats, MatchedFrame, Similarity, SimilarityConfig, best_match,
    similarity,
};

#[cfg(doc)]
use crate::group::GroupKey;

/// Frames kept per profile, innermost first.
pub const MAX_PROFILE_FRAMES: usize = 64;
/// Words of the masked message compared.
const MAX_MESSAGE_WORDS: usize = 32;
/// Members of a group a new trace is compared with (the first and the most recent).
pub const MAX_COMPARED_MEMBERS: usize = 8;
