//! Grouping quality on the labelled corpus of real traces
//! (`tests/corpus/real/`, labels in `labels.json`): pairwise precision and
//! recall of the exact group key, a naive hash (exception type + innermost
//! five in-app frames) and similar-issue merging, overall, per language and
//! on near-miss pairs. The merge threshold is chosen by group 5-fold
//! cross-validation: a pair is judged with a threshold chosen without its
//! group's fold.
//!
//! Run: `cargo bench -p tracelab-evidence --bench real_grouping`

#[path = "../tests/support/real_corpus.rs"]
mod real_corpus;

use real_corpus::{Counts, Evaluation};

fn row(name: &str, c: &Counts) -> String {
    format!(
        "| {name} | {:.3} | {:.3} | {:.3} | {} / {} / {} |",
        c.precision(),
        c.recall(),
        c.f1(),
        c.tp,
        c.fp,
        c.fn_
    )
}

fn print(name: &str, e: &Evaluation) {
    println!("{}", row(name, &e.overall));
}

fn main() {
    let started = std::time::Instant::now();
    let corpus = real_corpus::load();
    let r = real_corpus::report(&corpus);
    let groups: std::collections::BTreeMap<&str, usize> =
        corpus.items.iter().fold(Default::default(), |mut m, i| {
            *m.entry(i.group.as_str()).or_default() += 1;
            m
        });
    let multi = groups.values().filter(|&&n| n > 1).count();
    let n = corpus.items.len();
    println!(
        "corpus: {n} traces, {} groups ({multi} with two traces or more), {} pairs, {} near-miss group pairs",
        groups.len(),
        n * (n - 1) / 2,
        corpus.near_misses.len()
    );
    println!(
        "no failure found in {} traces: {}",
        r.no_failure.len(),
        r.no_failure.join(", ")
    );
    println!("\n| method | precision | recall | F1 | TP / FP / FN |\n|---|---|---|---|---|");
    print("exact group key", &r.exact);
    print("naive hash (type + 5 in-app frames)", &r.naive);
    print("similar-issue merge (5-fold CV threshold)", &r.similar);
    print(
        "… its own decisions (pairs with different exact keys)",
        &r.merge_only,
    );
    print(
        &format!(
            "incremental index (threshold {:.2}, in-sample)",
            real_corpus_threshold()
        ),
        &r.index,
    );
    println!(
        "\nfold thresholds: {:?}; threshold chosen on all pairs: {:.2}",
        r.fold_thresholds, r.full_threshold
    );
    println!("\nnear-miss pairs kept apart:");
    for (name, e) in [
        ("exact", &r.exact),
        ("naive", &r.naive),
        ("similar (CV)", &r.similar),
        ("its own decisions", &r.merge_only),
        ("index", &r.index),
    ] {
        println!(
            "  {name}: {} / {} ({:.1} %)",
            e.near_kept,
            e.near_total,
            100.0 * e.near_kept as f64 / e.near_total.max(1) as f64
        );
    }
    println!("\nper language (precision / recall): exact | naive | similar (CV)");
    for lang in r.exact.per_language.keys() {
        let g = |e: &Evaluation| {
            let c = e.per_language.get(lang).copied().unwrap_or_default();
            format!("{:.2} / {:.2}", c.precision(), c.recall())
        };
        println!(
            "  {lang}: {} | {} | {}",
            g(&r.exact),
            g(&r.naive),
            g(&r.similar)
        );
    }
    println!("\nwall time: {:.2?}", started.elapsed());
}

fn real_corpus_threshold() -> f64 {
    tracelab_evidence::similar::DEFAULT_THRESHOLD
}
