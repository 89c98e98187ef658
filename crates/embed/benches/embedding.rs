//! Embedding throughput of all-MiniLM-L6-v2 on candle, and what the
//! content-hash cache saves. Prints texts/s per batch size for short texts
//! (log lines, frames, commit messages: ~20 tokens) and for code chunks like
//! the symbol texts `tracelab locate` embeds (40 lines of Rust, most cut at
//! the 256-token limit), then cold / warm-memory / warm-disk cache passes.
//!
//!     cargo bench -p tracelab-embed --bench embedding [-- --model DIR --short N --code N]
//!
//! The model folder: `--model`, else `TRACELAB_MODEL_DIR`, else the default
//! that `deploy/models/fetch-minilm.sh` writes.

use std::path::{Path, PathBuf};
use std::time::Instant;
use tracelab_embed::{CachingEmbedder, Embedder, Options, SentenceEmbedder, model_dir};

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut model, mut short_n, mut code_n) = (None, 256usize, 64usize);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--model" => model = args.next().map(PathBuf::from),
            "--short" => short_n = args.next().and_then(|v| v.parse().ok()).unwrap_or(short_n),
            "--code" => code_n = args.next().and_then(|v| v.parse().ok()).unwrap_or(code_n),
            _ => {} // cargo passes --bench
        }
    }
    let env = std::env::var_os("TRACELAB_MODEL_DIR").map(PathBuf::from);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let Some(dir) = model_dir::resolve(model.as_deref(), env.as_deref(), home.as_deref()) else {
        eprintln!("no model folder: pass --model DIR or set TRACELAB_MODEL_DIR");
        std::process::exit(2);
    };

    let short = short_texts(short_n);
    let code = code_chunks(code_n);
    let load = Instant::now();
    let probe = SentenceEmbedder::from_dir(&dir, &Options::default()).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    println!(
        "model {} loaded in {:.2} s",
        probe.model_id(),
        load.elapsed().as_secs_f64()
    );
    let tokens = |texts: &[String]| {
        texts
            .iter()
            .map(|t| probe.token_count(t).unwrap())
            .sum::<usize>() as f64
            / texts.len() as f64
    };
    println!(
        "threads: {}; short texts: {} (mean {:.1} tokens); code chunks: {} (mean {:.1} tokens)",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        short.len(),
        tokens(&short),
        code.len(),
        tokens(&code)
    );
    drop(probe);

    println!("\n| batch | short texts/s | code chunks/s |\n|---|---|---|");
    for batch in [1, 8, 32] {
        let e = SentenceEmbedder::from_dir(
            &dir,
            &Options {
                batch_size: batch,
                max_length: None,
            },
        )
        .unwrap();
        e.embed(&refs(&short[..8])).unwrap(); // warm-up
        println!(
            "| {batch} | {:.1} | {:.1} |",
            rate(&e, &short),
            rate(&e, &code)
        );
    }

    let tmp = tempfile::tempdir().unwrap();
    let cached = CachingEmbedder::new(
        SentenceEmbedder::from_dir(&dir, &Options::default()).unwrap(),
        100_000,
    )
    .with_disk(tmp.path())
    .unwrap();
    let mixed: Vec<String> = short.iter().chain(&code).cloned().collect();
    let cold = time(|| cached.embed(&refs(&mixed)).unwrap());
    let warm = time(|| cached.embed(&refs(&mixed)).unwrap());
    drop(cached);
    let reopened = CachingEmbedder::new(
        SentenceEmbedder::from_dir(&dir, &Options::default()).unwrap(),
        100_000,
    )
    .with_disk(tmp.path())
    .unwrap();
    let disk = time(|| reopened.embed(&refs(&mixed)).unwrap());
    assert_eq!(
        reopened.stats().computed,
        0,
        "every vector should come from disk"
    );
    let n = mixed.len() as f64;
    println!("\ncache over {} texts (batch 32):", mixed.len());
    println!("| pass | time | texts/s | speed-up |\n|---|---|---|---|");
    for (name, t) in [
        ("cold (model)", cold),
        ("warm, memory LRU", warm),
        ("warm, disk file (new process)", disk),
    ] {
        println!("| {name} | {:.4} s | {:.0} | {:.0}× |", t, n / t, cold / t);
    }
}

fn refs(texts: &[String]) -> Vec<&str> {
    texts.iter().map(String::as_str).collect()
}

fn time<T>(f: impl FnOnce() -> T) -> f64 {
    let start = Instant::now();
    std::hint::black_box(f());
    start.elapsed().as_secs_f64()
}

fn rate(e: &SentenceEmbedder, texts: &[String]) -> f64 {
    texts.len() as f64 / time(|| e.embed(&refs(texts)).unwrap())
}

/// Distinct log lines, frames, identifiers and commit messages.
fn short_texts(n: usize) -> Vec<String> {
    let services = [
        "billing",
        "ledger",
        "auth",
        "search",
        "checkout",
        "gateway",
        "scheduler",
    ];
    let words = [
        "invoice", "currency", "session", "token", "cart", "order", "retry", "cache",
    ];
    (0..n)
        .map(|i| {
            let s = services[i % services.len()];
            let w = words[(i / 7) % words.len()];
            match i % 5 {
                0 => format!(
                    "ERROR {s}: timeout after {}s calling {w} store at 10.0.{}.{}:8443",
                    5 + i % 30,
                    i % 7,
                    i % 250
                ),
                1 => format!("File \"src/{s}/{w}.py\", line {}, in load_{w}_{i}", 10 + i),
                2 => format!(
                    "at com.acme.{s}.{}Service.handle{}(Service.java:{})",
                    capital(w),
                    i,
                    100 + i
                ),
                3 => format!(
                    "Fix {w} handling in {s} when the {w} list is empty (#{})",
                    1000 + i
                ),
                _ => format!("{s}_{w}_lookup_failed_{i}: KeyError '{w}'"),
            }
        })
        .collect()
}

fn capital(w: &str) -> String {
    let mut c = w.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

/// 40-line chunks of this repository's own Rust code.
fn code_chunks(n: usize) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files: Vec<PathBuf> = ["code-index/src", "domain/src", "engine/src", "ingest/src"]
        .iter()
        .filter_map(|d| std::fs::read_dir(root.join(d)).ok())
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.sort();
    let mut chunks = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        chunks.extend(
            lines
                .chunks(40)
                .filter(|c| c.len() >= 10)
                .map(|c| c.join("\n")),
        );
        if chunks.len() >= n {
            break;
        }
    }
    chunks.truncate(n);
    chunks
}
