//! How alike two stack profiles are: frame weights by position, rarity and
//! origin, the weighted alignment, and the best match among known groups.

use super::{FrameToken, MAX_PROFILE_FRAMES, StackProfile};
use crate::group::GroupKey;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};

/// How many known traces contain each frame token: rare frames say more.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameStats {
    traces: u32,
    df: HashMap<String, u32>,
}

impl FrameStats {
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts a trace's distinct tokens.
    pub fn add(&mut self, p: &StackProfile) {
        self.traces = self.traces.saturating_add(1);
        let distinct: BTreeSet<&str> = p.frames.iter().map(|t| t.key.as_str()).collect();
        for k in distinct {
            let n = self.df.entry(k.to_owned()).or_insert(0);
            *n = n.saturating_add(1);
        }
    }

    /// `ln((n + 1) / (df + 1)) + 1`: 1 for a token in every trace, more for rarer ones.
    pub fn rarity(&self, key: &str) -> f64 {
        let n = f64::from(self.traces);
        let df = f64::from(self.df.get(key).copied().unwrap_or(0));
        ((n + 1.0) / (df + 1.0)).ln().max(0.0) + 1.0
    }
}

/// The knobs of the score and the merge threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SimilarityConfig {
    /// Exponent of the position weight `1 / (1 + i)^decay` (0 = all frames equal).
    pub position_decay: f64,
    /// Weight factor of frames that are not in-app.
    pub library_weight: f64,
    /// Score factor when both exception types are known and differ.
    pub type_mismatch: f64,
    /// Worth of a match on the function alone, the files differing (a
    /// function moved to another file between versions), against 1 for a
    /// match on both.
    pub moved_function: f64,
    /// Share of the score given to the masked messages' word overlap.
    pub message_weight: f64,
    /// A trace joins the most similar group at this score or above.
    pub threshold: f64,
}

/// The threshold chosen on the labelled real corpus (docs/ingest.md,
/// `cargo bench -p tracelab-evidence --bench real_grouping`).
pub const DEFAULT_THRESHOLD: f64 = 0.59;

impl Default for SimilarityConfig {
    fn default() -> Self {
        Self {
            position_decay: 0.75,
            library_weight: 0.3,
            type_mismatch: 0.5,
            moved_function: 0.5,
            message_weight: 0.3,
            threshold: DEFAULT_THRESHOLD,
        }
    }
}

/// Two frames the alignment matched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatchedFrame {
    pub key: String,
    /// Positions from the top (0 = innermost) in the first and the second trace.
    pub position_a: usize,
    pub position_b: usize,
}

/// How alike two traces are, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Similarity {
    /// The combined score in [0, 1].
    pub score: f64,
    /// The frame alignment alone.
    pub frame_score: f64,
    /// The masked messages' word overlap (Jaccard).
    pub message_score: f64,
    pub same_type: bool,
    /// Matched frames, innermost first.
    pub matched: Vec<MatchedFrame>,
}

fn weights(p: &StackProfile, stats: &FrameStats, cfg: &SimilarityConfig) -> Vec<f64> {
    p.frames
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let pos = (1.0 + i as f64).powf(-cfg.position_decay.max(0.0));
            let origin = if t.in_app { 1.0 } else { cfg.library_weight };
            pos * stats.rarity(&t.key) * origin
        })
        .collect()
}

fn jaccard(a: &[String], b: &[String]) -> f64 {
    let a: BTreeSet<&str> = a.iter().map(String::as_str).collect();
    let b: BTreeSet<&str> = b.iter().map(String::as_str).collect();
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let inter = a.intersection(&b).count() as f64;
    let union = a.union(&b).count() as f64;
    inter / union
}

/// The function part of a token (`file|function`), when it names one
/// worth matching on its own (not a module body or an anonymous function).
fn token_function(key: &str) -> Option<&str> {
    let (_, func) = key.split_once('|')?;
    let generic = [
        "<module>",
        "<anonymous>",
        "<lambda>",
        "main",
        "run",
        "call",
        "apply",
    ];
    (func.len() > 2 && !generic.contains(&func)).then_some(func)
}

/// A token whose file is a package's entry file (`heatermeter/__init__.py|setup`):
/// one function name in two packages' entry files is a plugin convention
/// (every Home Assistant integration has its `setup`), not a moved function.
fn package_entry(key: &str) -> bool {
    key.split_once('|')
        .is_some_and(|(file, _)| file.contains('/'))
}

/// Scores two profiles. A profile without frames scores 0 against anything:
/// without a stack there is nothing to merge on beyond the exact key.
pub fn similarity(
    a: &StackProfile,
    b: &StackProfile,
    stats: &FrameStats,
    cfg: &SimilarityConfig,
) -> Similarity {
    let fa = &a.frames[..a.frames.len().min(MAX_PROFILE_FRAMES)];
    let fb = &b.frames[..b.frames.len().min(MAX_PROFILE_FRAMES)];
    let same_type = match (&a.exception_type, &b.exception_type) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    };
    let message_score = jaccard(&a.message_words, &b.message_words);
    let apart = Similarity {
        score: 0.0,
        frame_score: 0.0,
        message_score,
        same_type,
        matched: Vec::new(),
    };
    // Without a stack there is nothing to merge on beyond the exact key;
    // two imports of different missing names are two bugs.
    let other_names = !a.missing.is_empty() && !b.missing.is_empty() && a.missing != b.missing;
    // Raised by two third-party packages: two packages' code failing, even
    // on one message and under one framework's frames.
    let other_raisers = matches!((&a.raised_in, &b.raised_in), (Some(x), Some(y)) if x != y);
    if fa.is_empty() || fb.is_empty() || other_names || other_raisers {
        return apart;
    }
    let wa = weights(a, stats, cfg);
    let wb = weights(b, stats, cfg);
    let (n, m) = (fa.len(), fb.len());
    // dp[i][j]: best matched weight of fa[..i] and fb[..j].
    let mut dp = vec![0.0f64; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    let moved = cfg.moved_function.clamp(0.0, 1.0);
    // What matching frame i of a with frame j of b is worth (0: no match).
    let worth = |i: usize, j: usize| -> f64 {
        let (x, y) = (&fa[i].key, &fb[j].key);
        let factor = if x == y {
            1.0
        } else if moved > 0.0
            && !package_entry(x)
            && !package_entry(y)
            && token_function(x).is_some_and(|f| token_function(y) == Some(f))
        {
            moved
        } else {
            return 0.0;
        };
        factor * (wa[i] * wb[j]).sqrt()
    };
    // A failure raised in app code is a bug of that function: when either
    // trace was raised in app code, two traces whose innermost app functions
    // differ (the same framework frames above another integration's or
    // provider's code) are different bugs. Raised in a library by both, the
    // app frames are callers and only weigh.
    let function = |t: &FrameToken| t.key.contains('|');
    let raised_in_app = |f: &[FrameToken]| f.iter().find(|t| function(t)).is_some_and(|t| t.in_app);
    let innermost_app = |f: &[FrameToken]| f.iter().position(|t| t.in_app && function(t));
    if (raised_in_app(fa) || raised_in_app(fb))
        && let (Some(i), Some(j)) = (innermost_app(fa), innermost_app(fb))
        && worth(i, j) == 0.0
    {
        return apart;
    }
    for i in 1..=n {
        for j in 1..=m {
            let mut best = dp[at(i - 1, j)].max(dp[at(i, j - 1)]);
            let w = worth(i - 1, j - 1);
            if w > 0.0 {
                best = best.max(dp[at(i - 1, j - 1)] + w);
            }
            dp[at(i, j)] = best;
        }
    }
    let mut matched = Vec::new();
    let (mut i, mut j) = (n, m);
    while i > 0 && j > 0 {
        let w = worth(i - 1, j - 1);
        if w > 0.0 && (dp[at(i, j)] - (dp[at(i - 1, j - 1)] + w)).abs() < 1e-12 {
            matched.push(MatchedFrame {
                key: fa[i - 1].key.clone(),
                position_a: i - 1,
                position_b: j - 1,
            });
            i -= 1;
            j -= 1;
        } else if dp[at(i - 1, j)] >= dp[at(i, j - 1)] {
            i -= 1;
        } else {
            j -= 1;
        }
    }
    matched.reverse();
    let total: f64 = wa.iter().sum::<f64>() + wb.iter().sum::<f64>();
    let frame_score = if total > 0.0 {
        (2.0 * dp[at(n, m)] / total).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let mw = cfg.message_weight.clamp(0.0, 1.0);
    let mut score = if n == 1 && m == 1 {
        // Two panics known only by where they happened (no backtrace): one
        // file panics for many reasons, so the message must agree too.
        frame_score * message_score
    } else if a.message_words.is_empty() || b.message_words.is_empty() {
        // A trace pasted without its message says nothing against one with.
        frame_score
    } else {
        (1.0 - mw) * frame_score + mw * message_score * frame_score.min(1.0).sqrt()
    };
    // Raised in library code by both: the library's frames say where, and
    // one library raises several errors from one place (a loader that finds
    // no binding, or one for another runtime), so only the message says
    // which. Messages sharing less than half their words lower the score in
    // proportion.
    let library_raised =
        |f: &[FrameToken]| f.iter().find(|t| function(t)).is_some_and(|t| !t.in_app);
    if library_raised(fa)
        && library_raised(fb)
        && !a.message_words.is_empty()
        && !b.message_words.is_empty()
    {
        score *= (2.0 * message_score).min(1.0);
    }
    if !same_type {
        score *= cfg.type_mismatch.clamp(0.0, 1.0);
    }
    Similarity {
        score: score.clamp(0.0, 1.0),
        frame_score,
        message_score,
        same_type,
        matched,
    }
}

/// The known group a new trace is most like, when it reaches the threshold:
/// its key and the similarity (score, matched frames). Frame frequencies
/// come from the candidates themselves and the new trace (the store's
/// groups are the corpus), so a frame every group shares says little.
/// Work is bounded by the candidates given times the 64 × 64 alignment.
pub fn best_match(
    profile: &StackProfile,
    candidates: &[(GroupKey, StackProfile)],
    cfg: &SimilarityConfig,
) -> Option<(GroupKey, Similarity)> {
    let mut stats = FrameStats::new();
    stats.add(profile);
    for (_, p) in candidates {
        stats.add(p);
    }
    let mut best: Option<(&GroupKey, Similarity)> = None;
    for (key, p) in candidates {
        let s = similarity(profile, p, &stats, cfg);
        if best.as_ref().is_none_or(|(_, b)| s.score > b.score) {
            best = Some((key, s));
        }
    }
    best.filter(|(_, s)| s.score >= cfg.threshold && s.score > 0.0)
        .map(|(k, s)| (k.clone(), s))
}
