//! The labelled real corpus (`tests/corpus/real/labels.json`) and the
//! pairwise evaluation shared by `tests/real_corpus.rs` and
//! `benches/real_grouping.rs`.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use tracelab_evidence::similar::{
    FrameStats, GroupIndex, SimilarityConfig, StackProfile, similarity,
};
use tracelab_evidence::{Failure, ParseOptions, parse, signature_path};

pub const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/real/");

pub struct Item {
    pub file: String,
    pub group: String,
    pub language: String,
    pub source: String,
    /// The first failure `parse` finds, if any.
    pub failure: Option<Failure>,
}

pub struct Corpus {
    pub items: Vec<Item>,
    /// Pairs of groups that look alike (same outer frames, same exception
    /// type or message) but are different bugs.
    pub near_misses: Vec<(String, String)>,
}

pub fn load() -> Corpus {
    let text = std::fs::read_to_string(format!("{ROOT}labels.json")).expect("labels.json");
    let labels: serde_json::Value = serde_json::from_str(&text).expect("labels.json is JSON");
    let items = labels["traces"]
        .as_array()
        .expect("traces")
        .iter()
        .map(|t| {
            let file = t["file"].as_str().expect("file").to_owned();
            let bytes = std::fs::read(format!("{ROOT}{file}")).expect("trace file");
            Item {
                failure: parse(&bytes, &ParseOptions::default())
                    .failures
                    .into_iter()
                    .next(),
                group: t["group"].as_str().expect("group").to_owned(),
                language: t["language"].as_str().expect("language").to_owned(),
                source: t["source"].as_str().expect("source").to_owned(),
                file,
            }
        })
        .collect();
    let near_misses = labels["near_misses"]
        .as_array()
        .expect("near_misses")
        .iter()
        .map(|p| {
            (
                p["a"].as_str().expect("a").to_owned(),
                p["b"].as_str().expect("b").to_owned(),
            )
        })
        .collect();
    Corpus { items, near_misses }
}

/// The exact group key, as ingest files a failure.
pub fn exact(f: &Failure) -> String {
    f.group_key().to_string()
}

/// The naive baseline: exception type + the innermost five in-app frames.
pub fn naive(f: &Failure) -> String {
    let frames: Vec<String> = f
        .frames
        .iter()
        .rev()
        .filter(|fr| fr.in_app)
        .take(5)
        .map(|fr| {
            format!(
                "{}|{}",
                fr.file.as_deref().map(signature_path).unwrap_or(""),
                fr.function.as_deref().unwrap_or("")
            )
        })
        .collect();
    format!(
        "{}#{}",
        f.exception_type.as_deref().unwrap_or(""),
        frames.join(";")
    )
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Counts {
    pub tp: u64,
    pub fp: u64,
    pub fn_: u64,
}

impl Counts {
    pub fn add(&mut self, same: bool, predicted: bool) {
        match (same, predicted) {
            (true, true) => self.tp += 1,
            (false, true) => self.fp += 1,
            (true, false) => self.fn_ += 1,
            (false, false) => {}
        }
    }
    pub fn precision(&self) -> f64 {
        if self.tp + self.fp == 0 {
            1.0
        } else {
            self.tp as f64 / (self.tp + self.fp) as f64
        }
    }
    pub fn recall(&self) -> f64 {
        if self.tp + self.fn_ == 0 {
            1.0
        } else {
            self.tp as f64 / (self.tp + self.fn_) as f64
        }
    }
    pub fn f1(&self) -> f64 {
        let (p, r) = (self.precision(), self.recall());
        if p + r == 0.0 {
            0.0
        } else {
            2.0 * p * r / (p + r)
        }
    }
}

/// Every pair's facts, computed once.
pub struct Pairs {
    pub n: usize,
    /// Similarity scores, row-major `n × n` (0 where a trace has no failure).
    pub score: Vec<f64>,
}

pub fn scores(c: &Corpus, cfg: &SimilarityConfig) -> Pairs {
    let profiles: Vec<Option<StackProfile>> = c
        .items
        .iter()
        .map(|i| i.failure.as_ref().map(StackProfile::from_failure))
        .collect();
    // Frame frequencies from every trace, labels unseen: what an index that
    // has seen this evidence would know.
    let mut stats = FrameStats::new();
    for p in profiles.iter().flatten() {
        stats.add(p);
    }
    let n = c.items.len();
    let mut score = vec![0.0; n * n];
    for i in 0..n {
        for j in i + 1..n {
            if let (Some(a), Some(b)) = (&profiles[i], &profiles[j]) {
                let s = similarity(a, b, &stats, cfg).score;
                score[i * n + j] = s;
                score[j * n + i] = s;
            }
        }
    }
    Pairs { n, score }
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    })
}

pub const FOLDS: u64 = 5;

/// The fold of a group: groups, never single traces, are held out.
pub fn fold(group: &str) -> u64 {
    fnv(group) % FOLDS
}

pub fn same_exact(c: &Corpus, i: usize, j: usize) -> bool {
    match (&c.items[i].failure, &c.items[j].failure) {
        (Some(a), Some(b)) => exact(a) == exact(b),
        _ => false,
    }
}

/// The threshold for predicting pairs of `held_out`, chosen on the pairs
/// of the other folds: the highest recall with precision ≥ 0.95, else the
/// best F1. Only the pairs the merge decides count (their exact keys
/// differ): a pair with one exact key is filed together whatever the
/// threshold, so its mistakes are the key's and cannot steer the choice.
pub fn choose_threshold(c: &Corpus, p: &Pairs, held_out: Option<u64>) -> f64 {
    choose_threshold_over(c, p, held_out, &|i, j| same_exact(c, i, j))
}

/// [`choose_threshold`] with another first-level key (`same` says two
/// traces share it).
pub fn choose_threshold_over(
    c: &Corpus,
    p: &Pairs,
    held_out: Option<u64>,
    same: &dyn Fn(usize, usize) -> bool,
) -> f64 {
    let n = p.n;
    let mut best: Option<(bool, f64, f64)> = None; // (meets precision, recall or F1, threshold)
    for step in 20..=95 {
        let t = f64::from(step) / 100.0;
        let mut counts = Counts::default();
        for i in 0..n {
            for j in i + 1..n {
                let (gi, gj) = (&c.items[i].group, &c.items[j].group);
                if held_out.is_some_and(|f| fold(gi) == f || fold(gj) == f) || same(i, j) {
                    continue;
                }
                let predicted = p.score[i * n + j] >= t;
                counts.add(gi == gj, predicted);
            }
        }
        let meets = counts.precision() >= 0.95;
        let value = if meets { counts.recall() } else { counts.f1() };
        let better = match best {
            None => true,
            Some((m, v, _)) => (meets && !m) || (meets == m && value > v + 1e-12),
        };
        if better {
            best = Some((meets, value, t));
        }
    }
    best.map_or(0.6, |(_, _, t)| t)
}

/// What one method predicts for every pair.
pub struct Evaluation {
    pub overall: Counts,
    pub per_language: BTreeMap<String, Counts>,
    /// Near-miss pairs kept apart / all near-miss pairs.
    pub near_kept: u64,
    pub near_total: u64,
}

pub fn evaluate(c: &Corpus, predict: &dyn Fn(usize, usize) -> bool) -> Evaluation {
    evaluate_where(c, &|_, _| true, predict)
}

/// [`evaluate`] over the pairs `keep` accepts.
pub fn evaluate_where(
    c: &Corpus,
    keep: &dyn Fn(usize, usize) -> bool,
    predict: &dyn Fn(usize, usize) -> bool,
) -> Evaluation {
    let n = c.items.len();
    let near: HashMap<(&str, &str), ()> = c
        .near_misses
        .iter()
        .flat_map(|(a, b)| {
            [
                ((a.as_str(), b.as_str()), ()),
                ((b.as_str(), a.as_str()), ()),
            ]
        })
        .collect();
    let mut e = Evaluation {
        overall: Counts::default(),
        per_language: BTreeMap::new(),
        near_kept: 0,
        near_total: 0,
    };
    for i in 0..n {
        for j in i + 1..n {
            if !keep(i, j) {
                continue;
            }
            let (a, b) = (&c.items[i], &c.items[j]);
            let same = a.group == b.group;
            let predicted = predict(i, j);
            e.overall.add(same, predicted);
            if a.language == b.language {
                e.per_language
                    .entry(a.language.clone())
                    .or_default()
                    .add(same, predicted);
            }
            if near.contains_key(&(a.group.as_str(), b.group.as_str())) {
                e.near_total += 1;
                if !predicted {
                    e.near_kept += 1;
                }
            }
        }
    }
    e
}

/// The three methods, the similarity merge with thresholds chosen by
/// group 5-fold cross-validation (each pair judged with the threshold of
/// the fold of its first trace's group, chosen without that fold).
pub struct Report {
    pub exact: Evaluation,
    pub naive: Evaluation,
    pub similar: Evaluation,
    /// The merge's own decisions: the pairs whose exact keys differ.
    pub merge_only: Evaluation,
    pub fold_thresholds: Vec<f64>,
    pub full_threshold: f64,
    /// The incremental index (corpus order, the shipped threshold): pairwise on its groups.
    pub index: Evaluation,
    pub no_failure: Vec<String>,
}

pub fn report(c: &Corpus) -> Report {
    let cfg = SimilarityConfig::default();
    let p = scores(c, &cfg);
    let n = p.n;
    let key = |i: usize, k: &dyn Fn(&Failure) -> String| c.items[i].failure.as_ref().map(k);
    let exact_eval = evaluate(c, &|i, j| same_exact(c, i, j));
    let naive_eval = evaluate(c, &|i, j| match (key(i, &naive), key(j, &naive)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    });
    let fold_thresholds: Vec<f64> = (0..FOLDS)
        .map(|f| choose_threshold(c, &p, Some(f)))
        .collect();
    let similar_eval = evaluate(c, &|i, j| {
        let t = fold_thresholds[fold(&c.items[i].group) as usize];
        same_exact(c, i, j) || p.score[i * n + j] >= t
    });
    let merge_only = evaluate_where(c, &|i, j| !same_exact(c, i, j), &|i, j| {
        p.score[i * n + j] >= fold_thresholds[fold(&c.items[i].group) as usize]
    });
    let full_threshold = choose_threshold(c, &p, None);
    let mut index = GroupIndex::new(cfg);
    let mut group_of = vec![String::new(); n];
    for (i, item) in c.items.iter().enumerate() {
        if let Some(f) = &item.failure {
            group_of[i] = index.insert(f, &item.file).group.to_string();
        }
    }
    let index_eval = evaluate(c, &|i, j| {
        !group_of[i].is_empty() && group_of[i] == group_of[j]
    });
    Report {
        exact: exact_eval,
        naive: naive_eval,
        similar: similar_eval,
        merge_only,
        fold_thresholds,
        full_threshold,
        index: index_eval,
        no_failure: c
            .items
            .iter()
            .filter(|i| i.failure.is_none())
            .map(|i| i.file.clone())
            .collect(),
    }
}
