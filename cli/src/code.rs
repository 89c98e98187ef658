//! `tracelab index` and `tracelab locate`: the code index on one machine.
//! Indexing is CPU-bound and synchronous, so it runs on a blocking thread.
//! `locate --test` first runs the suite under coverage (`crate::repro`).

use crate::args::{Format, IndexArgs, LocateArgs};
use anyhow::Context as _;
use std::io::Read;
use std::process::ExitCode;
use tracelab_code_index::{LocateOptions, Locations};
use tracelab_coverage::ReproPack;

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

pub async fn locate(args: LocateArgs, token: Option<&str>) -> anyhow::Result<ExitCode> {
    let evidence = match args.evidence.as_deref() {
        Some("-") => {
            let mut text = String::new();
            std::io::stdin()
                .lock()
                .take(32 << 20)
                .read_to_string(&mut text)
                .context("cannot read standard input")?;
            Some(text)
        }
        Some(path) => {
            let bytes = std::fs::read(path).with_context(|| format!("cannot read {path}"))?;
            Some(String::from_utf8_lossy(&bytes).into_owned())
        }
        None => None,
    };
    // With --test: per-test coverage of the suite at the same revision.
    let covered = match &args.test {
        Some(test) => {
            let (sha, command, spectrum) = crate::repro::spectrum_at(
                &args.repo,
                args.rev.as_deref(),
                test,
                args.suite.as_deref(),
                std::time::Duration::from_secs(args.timeout),
            )
            .await?;
            let failed = spectrum.failing.len();
            eprintln!(
                "coverage: {} tests ran, {failed} failed ({})",
                spectrum.runs.len(),
                if failed == 0 {
                    "no spectrum component: nothing failed under coverage".to_string()
                } else {
                    spectrum
                        .failing
                        .iter()
                        .map(|t| t.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            );
            Some((sha, command, spectrum))
        }
        None => None,
    };
    let evidence = match (evidence, &covered) {
        (Some(text), _) => text,
        (None, Some((_, _, spectrum))) => spectrum.output.clone(),
        (None, None) => anyhow::bail!("--evidence FILE or --test CMD is needed"),
    };
    if let Some(url) = &args.indexer {
        let found = remote_locate(url, token, &args, evidence).await?;
        match args.format {
            Format::Json => println!("{}", serde_json::to_string_pretty(&found)?),
            Format::Markdown => print!("{}", render(&found)?),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let options = LocateOptions {
        // The commit the coverage ran at, so both describe the same code.
        rev: covered
            .as_ref()
            .map(|(sha, _, _)| sha.clone())
            .or(args.rev.clone()),
        top: args.top,
        languages: args
            .languages
            .iter()
            .map(|name| {
                tracelab_code_index::Language::parse(name).with_context(|| {
                    format!("unknown --language {name}: python, rust, javascript, typescript, go or java")
                })
            })
            .collect::<anyhow::Result<_>>()?,
        path_prefix: args.path_prefix.clone(),
        since_rev: args.since.clone(),
        spectrum: covered
            .as_ref()
            .map(|(_, _, s)| std::sync::Arc::from(s.runs.clone())),
        embedder: match args.embeddings.clone() {
            Some(dir) => Some(tokio::task::spawn_blocking(move || embedder(dir)).await??),
            None => None,
        },
        ..LocateOptions::default()
    };
    let repo = args.repo.clone();
    let found = tokio::task::spawn_blocking(move || {
        tracelab_code_index::locate(&repo, &evidence, &options)
    })
    .await??;
    if let (Some(path), Some((sha, command, spectrum))) = (&args.repro_pack, &covered) {
        let pack = ReproPack::from_spectrum(sha, command, spectrum, &found);
        std::fs::write(path, serde_json::to_string_pretty(&pack)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!(
            "repro pack: {} ({} failing test(s)); run it with `tracelab repro --pack {} --repo {}`",
            path.display(),
            pack.failing_tests.len(),
            path.display(),
            args.repo.display()
        );
    }
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&found)?),
        Format::Markdown => print!("{}", render(&found)?),
    }
    Ok(ExitCode::SUCCESS)
}

/// `--indexer URL`: the indexer service locates; the repository path is
/// made absolute because the service resolves it on its own.
#[cfg(feature = "indexer")]
async fn remote_locate(
    url: &str,
    token: Option<&str>,
    args: &LocateArgs,
    evidence: String,
) -> anyhow::Result<Locations> {
    let repo = std::fs::canonicalize(&args.repo)
        .with_context(|| format!("cannot resolve --repo {}", args.repo.display()))?;
    let request = tracelab_proto::index::v1::LocateRequest {
        repository: repo.display().to_string(),
        evidence,
        rev: args.rev.clone().unwrap_or_default(),
        top: u32::try_from(args.top).context("--top is too large")?,
        languages: args.languages.clone(),
        path_prefix: args.path_prefix.clone().unwrap_or_default(),
        since_rev: args.since.clone().unwrap_or_default(),
        ..Default::default()
    };
    Ok(tracelab_index_client::locate(url, token, request).await?)
}

#[cfg(not(feature = "indexer"))]
async fn remote_locate(
    _url: &str,
    _token: Option<&str>,
    _args: &LocateArgs,
    _evidence: String,
) -> anyhow::Result<Locations> {
    Err(crate::built::without("indexer", "--indexer"))
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

/// `--embeddings [MODEL_DIR]`: all-MiniLM-L6-v2 from a local folder behind
/// the content-hash cache, whose file under
/// `$XDG_CACHE_HOME/tracelab/embeddings` (or `~/.cache/...`) lets the next
/// run skip every unchanged symbol and commit text.
fn embedder(
    flag: Option<std::path::PathBuf>,
) -> anyhow::Result<std::sync::Arc<dyn tracelab_code_index::embed::Embedder>> {
    use std::path::PathBuf;
    use tracelab_embed::{CachingEmbedder, Options, SentenceEmbedder, cache, model_dir};
    let env = std::env::var_os("TRACELAB_MODEL_DIR").map(PathBuf::from);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let dir = model_dir::resolve(flag.as_deref(), env.as_deref(), home.as_deref())
        .context("--embeddings: give MODEL_DIR or set TRACELAB_MODEL_DIR")?;
    let model = SentenceEmbedder::from_dir(&dir, &Options::default())?;
    let cached = CachingEmbedder::new(model, cache::DEFAULT_CAPACITY);
    let cache_dir = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or(home.map(|h| h.join(".cache")))
        .map(|d| d.join("tracelab/embeddings"));
    let Some(cache_dir) = cache_dir else {
        return Ok(std::sync::Arc::new(cached));
    };
    Ok(std::sync::Arc::new(cached.with_disk(&cache_dir)?))
}
