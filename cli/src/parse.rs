//! `tracelab parse`: evidence in, redacted failures with signatures out.

use crate::args::{Format, ParseArgs};
use anyhow::Context as _;
use std::io::Write;
use std::process::ExitCode;
use tracelab_ingest::{ParseOptions, Severity};

pub fn run(args: ParseArgs) -> anyhow::Result<ExitCode> {
    let mut options = ParseOptions {
        repo_roots: args.repo_roots,
        in_app_prefixes: args.in_app,
        ..ParseOptions::default()
    };
    if let Some(path) = &args.redaction_key_file {
        let key = std::fs::read(path)
            .with_context(|| format!("cannot read the redaction key {}", path.display()))?;
        let key = key.strip_suffix(b"\n").unwrap_or(&key).to_vec();
        anyhow::ensure!(
            key.len() >= 16,
            "the redaction key in {} is shorter than 16 bytes",
            path.display()
        );
        options.redaction_key = key;
    }
    let input = if args.input == "-" {
        tracelab_ingest::read_bounded(std::io::stdin().lock(), &options.limits)
            .context("cannot read standard input")?
    } else {
        let file = std::fs::File::open(&args.input)
            .with_context(|| format!("cannot open {}", args.input))?;
        tracelab_ingest::read_bounded(file, &options.limits)
            .with_context(|| format!("cannot read {}", args.input))?
    };
    let output = tracelab_ingest::parse(&input.bytes, &options);
    let index = match &args.group_against {
        Some(dir) => Some(group_index(dir, &options)?),
        None => None,
    };
    let mut stdout = std::io::stdout().lock();
    for failure in &output.failures {
        match args.format {
            Format::Json => {
                // The failure plus its exact group key: what the fleet's
                // ingest groups it under.
                let mut value = serde_json::to_value(failure)?;
                if let Some(object) = value.as_object_mut() {
                    object.insert("group_key".into(), failure.group_key().to_string().into());
                    if let Some(index) = &index {
                        object.insert(
                            "similar_group".into(),
                            serde_json::to_value(index.nearest(failure))?,
                        );
                    }
                }
                writeln!(stdout, "{}", serde_json::to_string(&value)?)?
            }
            Format::Markdown => {
                let value = serde_json::to_value(failure)?;
                let field = |k: &str| {
                    value
                        .get(k)
                        .and_then(|v| v.as_str())
                        .unwrap_or("")
                        .to_string()
                };
                let top = failure
                    .frames
                    .last()
                    .map(|f| format!(" at {}", serde_json::to_string(f).unwrap_or_default()))
                    .unwrap_or_default();
                writeln!(
                    stdout,
                    "- {} [{}] {}{}: {}{top}\n  stack {} · error {}",
                    field("kind"),
                    field("language"),
                    failure
                        .test_id
                        .as_deref()
                        .map(|t| format!("{t} "))
                        .unwrap_or_default(),
                    failure.exception_type.as_deref().unwrap_or("failure"),
                    failure.message.lines().next().unwrap_or(""),
                    failure.stack_signature.as_deref().unwrap_or("-"),
                    failure.error_signature
                )?;
                if let Some(index) = &index {
                    writeln!(stdout, "  {}", describe(&index.nearest(failure)))?;
                }
            }
        }
    }
    for d in &output.diagnostics {
        let level = if d.severity == Severity::Error {
            "error"
        } else {
            "note"
        };
        eprintln!("{level}: {} ({})", d.message, d.code);
    }
    if output.failures.is_empty() {
        eprintln!("no failure found ({:?} input)", output.format);
    }
    Ok(ExitCode::SUCCESS)
}

/// `--group-against DIR`: every file in DIR (sorted by name, not recursive)
/// parsed like the input and filed into a similar-issue index in that order.
fn group_index(
    dir: &std::path::Path,
    options: &ParseOptions,
) -> anyhow::Result<tracelab_ingest::GroupIndex> {
    let mut paths: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    let mut index = tracelab_ingest::GroupIndex::new(tracelab_ingest::SimilarityConfig::default());
    for path in paths {
        let file = std::fs::File::open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        let input = tracelab_ingest::read_bounded(file, &options.limits)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let parsed = tracelab_ingest::parse(&input.bytes, options);
        let several = parsed.failures.len() > 1;
        for (n, f) in parsed.failures.iter().enumerate() {
            let label = if several {
                format!("{name}#{}", n + 1)
            } else {
                name.clone()
            };
            index.insert(f, &label);
        }
    }
    Ok(index)
}

/// One line for the Markdown output.
fn describe(a: &tracelab_ingest::similar::Assignment) -> String {
    use tracelab_ingest::similar::Join;
    match &a.join {
        Join::New => format!("group {} (new: nothing similar in the directory)", a.group),
        Join::Exact => format!("group {} (same exact key)", a.group),
        Join::Similar {
            score,
            nearest,
            matched,
        } => format!(
            "group {} (similar to {nearest}, score {score:.2}, {} frames matched)",
            a.group,
            matched.len()
        ),
    }
}
