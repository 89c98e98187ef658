//! `tracelab index` and `tracelab locate`: the code index on one machine.
//! Indexing is CPU-bound and synchronous, so it runs on a blocking thread.

use crate::args::{Format, IndexArgs, LocateArgs};
use anyhow::Context as _;
use std::io::Read;
use std::process::ExitCode;
use tracelab_code_index::{LocateOptions, Locations};

pub async fn index(args: IndexArgs) -> anyhow::Result<ExitCode> {
    let summary = tokio::task::spawn_blocking(move || {
        let cache = tracelab_code_index::default_cache_dir(&args.repo)?;
        tracelab_code_index::index_repository(&args.repo, args.rev.as_deref(), &cache)
    })
    .await??;
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&summary)?),
        Format::Markdown => println!(
            "indexed {} at {}: {} files ({} parsed, {} from cache), {} symbols, {} parse diagnostics, {:.0} ms",
            summary.commit.get(..12).unwrap_or(&summary.commit),
            summary
                .cache_dir
                .as_ref()
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
            summary.files,
            summary.parsed_files,
            summary.cached_files,
            summary.symbols,
            summary.diagnostics,
            summary.elapsed_ms
        ),
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn locate(args: LocateArgs) -> anyhow::Result<ExitCode> {
    let evidence = if args.evidence == "-" {
        let mut text = String::new();
        std::io::stdin()
            .lock()
            .take(32 << 20)
            .read_to_string(&mut text)
            .context("cannot read standard input")?;
        text
    } else {
        let bytes = std::fs::read(&args.evidence)
            .with_context(|| format!("cannot read {}", args.evidence))?;
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let options = LocateOptions {
        rev: args.rev.clone(),
        top: args.top,
        ..LocateOptions::default()
    };
    let repo = args.repo.clone();
    let found = tokio::task::spawn_blocking(move || {
        tracelab_code_index::locate(&repo, &evidence, &options)
    })
    .await??;
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&found)?),
        Format::Markdown => print!("{}", render(&found)?),
    }
    Ok(ExitCode::SUCCESS)
}

/// A compact table per list, from the JSON form so it shows exactly what `--format json` does.
fn render(found: &Locations) -> anyhow::Result<String> {
    let value = serde_json::to_value(found)?;
    let mut out = String::new();
    for (list, key) in [
        ("Files", "path"),
        ("Symbols", "symbol"),
        ("Commits", "commit"),
    ] {
        out.push_str(&format!(
            "## {list}\n\n| score | {key} | reasons |\n|---|---|---|\n"
        ));
        for item in value[list.to_lowercase()].as_array().into_iter().flatten() {
            let name = item[key].as_str().unwrap_or("");
            let location = match (item["path"].as_str(), item["start_line"].as_u64()) {
                (Some(path), Some(start)) if key == "symbol" => format!(" ({path}:{start})"),
                _ => String::new(),
            };
            let reasons: Vec<String> = item["reasons"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| {
                    match (
                        r["component"].as_str(),
                        r["contribution"].as_f64(),
                        r["detail"].as_str(),
                    ) {
                        (Some(c), Some(v), Some(d)) => format!("{c} +{v:.3}: {d}"),
                        _ => r.to_string(),
                    }
                })
                .collect();
            out.push_str(&format!(
                "| {:.3} | `{name}`{location} | {} |\n",
                item["score"].as_f64().unwrap_or(0.0),
                reasons.join("; ")
            ));
        }
        out.push('\n');
    }
    Ok(out)
}
