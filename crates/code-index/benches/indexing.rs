//! Indexing speed against universal-ctags on the same real code base.
//!
//! The tree is copied into a fresh git repository. Cold: a new indexer
//! parses every file (all cores, and one thread for reference) vs
//! `ctags -R`. Warm: a new commit changes one file; the warm indexer parses
//! exactly that file, vs ctags re-scanning the tree. Both the in-memory
//! indexer (a long-running indexer service) and the persisted cache (a new
//! `tracelab index` process: load cache, index, save) are reported.
//!
//! Run: `cargo bench -p tracelab-code-index --bench indexing -- [SOURCE_DIR]`
//! (default: `$TRACELAB_BENCH_SRC`, else pip's sources, fetched with
//! `pip download --no-deps --no-binary :all: pip==24.2` and unpacked under
//! `/root/.cache/tracelab/bench/`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use tracelab_code_index::{Indexer, Language, index_repository};
use tracelab_testkit::FixtureRepo;

const RUNS: usize = 3;
/// Warm updates are short and the machine is shared: take the best of more.
const WARM_RUNS: usize = 7;

fn copy_tree(from: &Path, to: &Path, files: &mut Vec<PathBuf>, bytes: &mut u64) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        let target = to.join(entry.file_name());
        let ft = entry.file_type().unwrap();
        if ft.is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&path, &target, files, bytes);
        } else if ft.is_file() {
            std::fs::copy(&path, &target).unwrap();
            if Language::from_path(&target.to_string_lossy()).is_some() {
                *bytes += entry.metadata().unwrap().len();
                files.push(target);
            }
        }
    }
}

fn best<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..runs {
        let t = Instant::now();
        let out = f();
        best = best.min(t.elapsed());
        last = Some(out);
    }
    (best, last.unwrap())
}

fn ctags(dir: &Path, out: &Path) -> usize {
    let status = Command::new("ctags")
        .args([
            "-R",
            "--languages=Python,Rust,JavaScript,TypeScript,Go,Java",
            "--fields=+ne",
            "--exclude=.git",
            "-f",
        ])
        .arg(out)
        .arg(dir)
        .status()
        .expect("universal-ctags is installed (`ctags --version`)");
    assert!(status.success());
    std::fs::read_to_string(out)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("!_"))
        .count()
}

/// Tags of definition kinds we also index (classes, functions, methods,
/// structs, interfaces, enums, traits, impls), from the kind letter after `;"`.
fn ctags_definitions(tags: &Path) -> usize {
    std::fs::read_to_string(tags)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("!_"))
        .filter(|l| {
            let kind = l
                .split(";\"\t")
                .nth(1)
                .and_then(|rest| rest.split('\t').next())
                .unwrap_or("");
            matches!(kind, "c" | "f" | "m" | "s" | "i" | "g" | "t" | "e" | "n")
        })
        .count()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let arg = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let src = arg
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("TRACELAB_BENCH_SRC").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("/root/.cache/tracelab/bench/pip-24.2/src"));
    if !src.is_dir() {
        eprintln!(
            "source tree {} not found: pass a directory, set TRACELAB_BENCH_SRC, or\n  \
             pip download --no-deps --no-binary :all: pip==24.2 -d /root/.cache/tracelab/bench && \
             tar xzf /root/.cache/tracelab/bench/pip-24.2.tar.gz -C /root/.cache/tracelab/bench",
            src.display()
        );
        std::process::exit(2);
    }
    let work = tempfile::tempdir().unwrap();
    let mut fixture = FixtureRepo::new();
    let repo_dir = fixture.path().to_path_buf();
    let (mut files, mut bytes) = (Vec::new(), 0u64);
    copy_tree(&src, &repo_dir, &mut files, &mut bytes);
    files.sort();
    fixture.commit("import", &[]);
    let repo = git2::Repository::open(&repo_dir).unwrap();
    let tags = work.path().join("tags");
    let threads = rayon::current_num_threads();
    println!(
        "Indexing benchmark on {} ({} source files, {:.1} MB), {threads} threads\n",
        src.display(),
        files.len(),
        bytes as f64 / 1e6
    );

    let (ctags_cold, ntags) = best(RUNS, || ctags(&repo_dir, &tags));
    let ndefs = ctags_definitions(&tags);
    let (cold, (snap, summary)) = best(RUNS, || Indexer::in_memory().index(&repo, None).unwrap());
    let t = Instant::now();
    let edges = snap.edges().len();
    let resolve = t.elapsed();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let (cold_1, _) = best(RUNS, || {
        // A Repository is not Sync: open one inside the single-thread pool.
        pool.install(|| {
            let repo = git2::Repository::open(&repo_dir).unwrap();
            Indexer::in_memory().index(&repo, None).unwrap().1
        })
    });

    // Warm: keep one indexer, commit a one-file change, index again.
    let warm_indexer = Indexer::in_memory();
    warm_indexer.index(&repo, None).unwrap();
    let cache_dir = work.path().join("cache");
    index_repository(&repo_dir, None, &cache_dir).unwrap();
    // The changed file: one of median size (a typical edit, neither the
    // largest module nor an empty __init__).
    let mut by_size: Vec<(u64, &PathBuf)> = files
        .iter()
        .map(|f| (std::fs::metadata(f).unwrap().len(), f))
        .collect();
    by_size.sort();
    let (target_size, target) = by_size[by_size.len() / 2];
    println!(
        "changed file: {} ({target_size} bytes)\n",
        target.strip_prefix(&repo_dir).unwrap().display()
    );
    let mut warm_best = Duration::MAX;
    let mut warm_graph = Duration::MAX;
    let mut persisted_best = Duration::MAX;
    let mut ctags_rescan = Duration::MAX;
    let mut parsed = Vec::new();
    for i in 0..WARM_RUNS {
        let mut text = std::fs::read_to_string(target).unwrap();
        let addition = match Language::from_path(&target.to_string_lossy()) {
            Some(Language::Python) => format!("\n\ndef bench_added_{i}():\n    return {i}\n"),
            Some(Language::Rust) => format!("\npub fn bench_added_{i}() -> u32 {{\n    {i}\n}}\n"),
            Some(Language::Go) => format!("\nfunc BenchAdded{i}() int {{\n\treturn {i}\n}}\n"),
            _ => format!("\nfunction benchAdded{i}() {{\n  return {i};\n}}\n"),
        };
        text.push_str(&addition);
        std::fs::write(target, text).unwrap();
        fixture.commit(&format!("change {i}"), &[]);
        let t = Instant::now();
        let (snap, s) = warm_indexer.index(&repo, None).unwrap();
        warm_best = warm_best.min(t.elapsed());
        let t = Instant::now();
        snap.edges();
        warm_graph = warm_graph.min(t.elapsed());
        parsed.push(s.parsed_files);
        let t = Instant::now();
        let s = index_repository(&repo_dir, None, &cache_dir).unwrap();
        persisted_best = persisted_best.min(t.elapsed());
        parsed.push(s.parsed_files);
        let t = Instant::now();
        ctags(&repo_dir, &tags);
        ctags_rescan = ctags_rescan.min(t.elapsed());
    }
    assert!(
        parsed.iter().all(|&p| p == 1),
        "warm indexing parsed {parsed:?} files; expected exactly 1 each time"
    );

    let mb = bytes as f64 / 1e6;
    println!("| run | time (ms) | MB/s | vs ctags -R |");
    println!("|---|---|---|---|");
    println!(
        "| ctags -R (universal-ctags, 1 thread) | {:.1} | {:.1} | 1.00 |",
        ms(ctags_cold),
        mb / ctags_cold.as_secs_f64()
    );
    println!(
        "| cold index, {threads} threads | {:.1} | {:.1} | {:.2}x ctags time |",
        ms(cold),
        mb / cold.as_secs_f64(),
        cold.as_secs_f64() / ctags_cold.as_secs_f64()
    );
    println!(
        "| cold index, 1 thread | {:.1} | {:.1} | {:.2}x ctags time |",
        ms(cold_1),
        mb / cold_1.as_secs_f64(),
        cold_1.as_secs_f64() / ctags_cold.as_secs_f64()
    );
    println!(
        "| warm update, in-memory cache (1 file parsed) | {:.1} | - | {:.1}x faster than ctags re-scan ({:.1} ms) |",
        ms(warm_best),
        ctags_rescan.as_secs_f64() / warm_best.as_secs_f64(),
        ms(ctags_rescan)
    );
    println!(
        "| warm update, new process + persisted cache (1 file parsed) | {:.1} | - | {:.1}x faster than ctags re-scan |",
        ms(persisted_best),
        ctags_rescan.as_secs_f64() / persisted_best.as_secs_f64()
    );
    println!(
        "| call-graph resolution, whole tree (lazy: on first query, not part of an update) | {:.1} (after the warm update: {:.1}) | - | - |",
        ms(resolve),
        ms(warm_graph)
    );
    println!(
        "\nsymbols: {} (ctags: {ntags} tags, {ndefs} of them classes/functions/methods); call sites: {}; resolved call edges: {edges}; parse diagnostics: {}",
        summary.symbols, summary.call_sites, summary.diagnostics
    );
    let ratio = ctags_rescan.as_secs_f64() / warm_best.as_secs_f64();
    println!(
        "warm update >= 10x faster than ctags re-scan: {}",
        if ratio >= 10.0 { "PASS" } else { "FAIL" }
    );
}
