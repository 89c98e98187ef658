//! What `tracelab index` / `tracelab locate --format json` do, for trying the
//! library by hand before the CLI wires it:
//!
//! `cargo run --release -p tracelab-code-index --example locate -- REPO [EVIDENCE_FILE] [--rev REV] [--top N]`
//!
//! Without an evidence file it only indexes and prints the summary.

use std::path::PathBuf;
use tracelab_code_index::{LocateOptions, default_cache_dir, index_repository, locate};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut positional = Vec::new();
    let mut opts = LocateOptions::default();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rev" => opts.rev = args.next(),
            "--top" => opts.top = args.next().ok_or("--top N")?.parse()?,
            _ => positional.push(a),
        }
    }
    let repo = PathBuf::from(
        positional
            .first()
            .ok_or("usage: locate REPO [EVIDENCE_FILE] [--rev REV] [--top N]")?,
    );
    let started = std::time::Instant::now();
    match positional.get(1) {
        None => {
            let summary = index_repository(&repo, opts.rev.as_deref(), &default_cache_dir(&repo)?)?;
            println!("{}", serde_json::to_string_pretty(&summary)?);
        }
        Some(evidence) => {
            let text = std::fs::read_to_string(evidence)?;
            let found = locate(&repo, &text, &opts)?;
            println!("{}", serde_json::to_string_pretty(&found)?);
        }
    }
    eprintln!("{:.0} ms", started.elapsed().as_secs_f64() * 1e3);
    Ok(())
}
