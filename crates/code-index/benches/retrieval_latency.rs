//! Retrieval latency at 100k and 1M symbols (synthetic): p50/p99 of a full
//! `Locator::locate` (frames, call-graph overlap, BM25, scoring, ranking)
//! and of the BM25 step alone (tantivy, in RAM), over many different
//! failure texts, plus the time to build that BM25 index.
//!
//! Run: `cargo bench -p tracelab-code-index --bench retrieval_latency [-- SIZES]`
//! e.g. `-- 100000 1000000` (the default).

use std::sync::Arc;
use std::time::Instant;
use tracelab_code_index::lexical::LexicalIndex;
use tracelab_code_index::model::{CallSite, Def, ParsedFile, SymbolKind};
use tracelab_code_index::tokenize::tokens;
use tracelab_code_index::{Language, LocateOptions, Locator, Snapshot};

const FUNCS_PER_FILE: usize = 20;
const QUERIES: usize = 300;

/// A small deterministic PRNG (xorshift64*), so runs are comparable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn vocabulary() -> Vec<String> {
    let stems = [
        "parse", "load", "store", "fetch", "cache", "order", "price", "user", "account", "token",
        "session", "config", "render", "queue", "retry", "batch", "index", "query", "filter",
        "merge", "split", "encode", "decode", "hash", "lock", "write", "read", "flush", "commit",
        "apply", "build", "check", "valid", "route", "handler", "client",
    ];
    let suffixes = ["", "er", "ed", "ing", "s", "or", "map", "set", "list", "id"];
    let mut v = Vec::new();
    for s in stems {
        for x in suffixes {
            v.push(format!("{s}{x}"));
        }
    }
    v
}

fn camel(words: &[&str]) -> String {
    let mut out = words[0].to_string();
    for w in &words[1..] {
        let mut c = w.chars();
        if let Some(f) = c.next() {
            out.extend(f.to_uppercase());
            out.push_str(c.as_str());
        }
    }
    out
}

struct Corpus {
    locator: Locator,
    bm25: LexicalIndex,
    /// Seconds to build `bm25` alone.
    bm25_build: f64,
    queries: Vec<String>,
}

fn corpus(symbols: usize, rng: &mut Rng) -> Corpus {
    let vocab = vocabulary();
    let files = symbols / FUNCS_PER_FILE;
    let mut parsed_files = Vec::with_capacity(files);
    let mut texts = Vec::with_capacity(symbols);
    let mut names_per_file = Vec::with_capacity(files);
    for f in 0..files {
        let mut defs = Vec::with_capacity(FUNCS_PER_FILE);
        let mut names = Vec::new();
        for i in 0..FUNCS_PER_FILE {
            let w: Vec<&str> = (0..3)
                .map(|_| vocab[rng.below(vocab.len())].as_str())
                .collect();
            let name = camel(&w);
            let calls = (0..3)
                .map(|_| CallSite {
                    name: names
                        .get(rng.below(names.len().max(1)))
                        .cloned()
                        .unwrap_or_else(|| name.clone()),
                    qualifier: None,
                    line: (i * 10 + 3) as u32,
                })
                .collect();
            let body: Vec<&str> = (0..12)
                .map(|_| vocab[rng.below(vocab.len())].as_str())
                .collect();
            texts.push(format!(
                "{name} {name} {name} {} {}",
                w.join(" "),
                body.join(" ")
            ));
            defs.push(Def {
                name: name.clone(),
                local: name.clone(),
                kind: SymbolKind::Function,
                parent: None,
                start_line: (i * 10 + 1) as u32,
                end_line: (i * 10 + 9) as u32,
                signature: format!("def {name}(x):"),
                doc: None,
                calls,
            });
            names.push(name);
        }
        let parsed = ParsedFile {
            language: Language::Python,
            module_hint: None,
            defs,
            imports: Vec::new(),
            diagnostics: Vec::new(),
            lines: (FUNCS_PER_FILE * 10) as u32,
        };
        let dir = format!("pkg{}/sub{}", f % 97, f % 13);
        parsed_files.push((
            format!("{dir}/mod{f}.py"),
            format!("{f:040x}"),
            Arc::new(parsed),
        ));
        names_per_file.push(names);
    }
    // Snapshot::build sorts files by path; texts must follow symbol order.
    let mut order: Vec<usize> = (0..files).collect();
    order.sort_by(|&a, &b| parsed_files[a].0.cmp(&parsed_files[b].0));
    let mut sorted_texts = Vec::with_capacity(symbols);
    for &f in &order {
        sorted_texts.extend(
            texts[f * FUNCS_PER_FILE..(f + 1) * FUNCS_PER_FILE]
                .iter()
                .cloned(),
        );
    }
    let paths: Vec<String> = parsed_files.iter().map(|p| p.0.clone()).collect();
    let snapshot = Snapshot::build("synthetic".into(), 0, parsed_files);
    let t = Instant::now();
    let bm25 = LexicalIndex::build(&sorted_texts).unwrap();
    let bm25_build = t.elapsed().as_secs_f64();
    let locator =
        Locator::without_history(snapshot, sorted_texts, &LocateOptions::default()).unwrap();
    // Resolve the call graph now (it is lazy) so no query pays for it.
    locator.snapshot.edges();
    let queries = (0..QUERIES)
        .map(|_| {
            let f = rng.below(files);
            let g = rng.below(files);
            let (i, j) = (rng.below(FUNCS_PER_FILE), rng.below(FUNCS_PER_FILE));
            format!(
                "Traceback (most recent call last):\n  File \"/ci/{}\", line {}, in {}\n    x = {}(y)\n  File \"/ci/{}\", line {}, in {}\n    raise KeyError(key)\nKeyError: '{}'\n",
                paths[g],
                j * 10 + 3,
                names_per_file[g][j],
                names_per_file[f][i],
                paths[f],
                i * 10 + 5,
                names_per_file[f][i],
                vocab[rng.below(vocab.len())]
            )
        })
        .collect();
    Corpus {
        locator,
        bm25,
        bm25_build,
        queries,
    }
}

fn percentiles(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    let at = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    (at(0.5), at(0.99))
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![100_000, 1_000_000]
    } else {
        sizes
    };
    println!(
        "Retrieval latency, synthetic Python-like symbols ({FUNCS_PER_FILE} per file), {QUERIES} queries each\n"
    );
    println!(
        "| symbols | build (s) | BM25 index build (s) | locate p50 (ms) | locate p99 (ms) | BM25 top-300 p50 (ms) | BM25 p99 (ms) |"
    );
    println!("|---|---|---|---|---|---|---|");
    let mut rng = Rng(0x9E3779B97F4A7C15);
    for n in sizes {
        let t = Instant::now();
        let c = corpus(n, &mut rng);
        let build = t.elapsed().as_secs_f64();
        let mut locate_ms = Vec::new();
        let mut bm25_ms = Vec::new();
        let mut found = 0;
        for q in &c.queries {
            let t = Instant::now();
            let loc = c.locator.locate(q).unwrap();
            locate_ms.push(t.elapsed().as_secs_f64() * 1e3);
            found += usize::from(!loc.symbols.is_empty());
            let toks = tokens(q);
            let t = Instant::now();
            let hits = c.bm25.search(&toks, 300).unwrap();
            bm25_ms.push(t.elapsed().as_secs_f64() * 1e3);
            assert!(!hits.is_empty());
        }
        assert_eq!(found, c.queries.len());
        let (lp50, lp99) = percentiles(locate_ms);
        let (bp50, bp99) = percentiles(bm25_ms);
        println!(
            "| {n} | {build:.1} | {:.1} | {lp50:.2} | {lp99:.2} | {bp50:.2} | {bp99:.2} |",
            c.bm25_build
        );
    }
}
