//! `tracelab parse`: evidence in, redacted failures with signatures out.
//!
//! With `--record`, each failure is also counted in this machine's failure
//! groups (the SQLite store of `--db`) by the fleet's rule: the group of its
//! exact key, or — a new key — the most similar known group, the merge kept
//! with its score and matched frames (`SqliteGroupStore::record_similar`).
//! `--unmerge KEY --reason WHY` undoes such a merge: the sightings it
//! counted move to the key's own group, and the merge history keeps the OS
//! user and the reason.

use crate::args::{Format, ParseArgs};
use anyhow::Context as _;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use tracelab_evidence::similar::StackProfile;
use tracelab_evidence::{GroupKey, Occurrence, ParseOptions, Severity, SimilarityConfig};
use tracelab_store::SqliteGroupStore;
use tracelab_store::groups::{MergeRecord, MergingGroupStore, Undo};

/// The group a failure was counted in by `--record`.
#[derive(Debug)]
struct Recorded {
    key: GroupKey,
    count: u64,
    observation: tracelab_evidence::Observation,
    /// Set when this failure's exact key was merged into the group now.
    merged: Option<MergeRecord>,
}

impl Recorded {
    /// `{"key", "count", "observation", "merged"?}` for `--format json`.
    fn to_json(&self) -> anyhow::Result<serde_json::Value> {
        let mut v = serde_json::json!({
            "key": self.key,
            "count": self.count,
            "observation": self.observation,
        });
        if let (Some(m), Some(o)) = (&self.merged, v.as_object_mut()) {
            o.insert("merged".into(), serde_json::to_value(m)?);
        }
        Ok(v)
    }
}

/// This machine's failure groups, merging similar issues as the fleet does.
async fn group_store(db: &Option<PathBuf>) -> anyhow::Result<SqliteGroupStore> {
    let path = db.clone().unwrap_or_else(crate::db::default_db);
    let store = SqliteGroupStore::open(&path)
        .await
        .with_context(|| format!("cannot open the store {}", path.display()))?;
    Ok(store.merging(SimilarityConfig::default()))
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// `--unmerge KEY --reason WHY`.
async fn unmerge(
    db: &Option<PathBuf>,
    key: &str,
    reason: &str,
    format: Format,
) -> anyhow::Result<ExitCode> {
    let store = group_store(db).await?;
    let undo = Undo::new(now(), &crate::db::os_user(), reason)?;
    let Some(done) = store.unmerge(&GroupKey(key.to_owned()), &undo).await? else {
        anyhow::bail!("{key} has no similarity merge to undo in this store");
    };
    let mut stdout = std::io::stdout().lock();
    match format {
        Format::Json => writeln!(stdout, "{}", serde_json::to_string(&done)?)?,
        Format::Markdown => writeln!(
            stdout,
            "undone: {key} left group {} ({} sightings moved back; {} now counts {}, {key} counts {})",
            done.merge.group_key,
            done.merge.moved.unwrap_or(0),
            done.from.key,
            done.from.count,
            done.own.as_ref().map_or(0, |g| g.count),
        )?,
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn run(args: ParseArgs, db: &Option<PathBuf>) -> anyhow::Result<ExitCode> {
    if let Some(key) = &args.unmerge {
        return unmerge(db, key, args.reason.as_deref().unwrap_or(""), args.format).await;
    }
    let source = args
        .input
        .clone()
        .context("an input file, or - for standard input, is needed")?;
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
    let input = if source == "-" {
        tracelab_evidence::read_bounded(std::io::stdin().lock(), &options.limits)
            .context("cannot read standard input")?
    } else {
        let file = std::fs::File::open(&source).with_context(|| format!("cannot open {source}"))?;
        tracelab_evidence::read_bounded(file, &options.limits)
            .with_context(|| format!("cannot read {source}"))?
    };
    let output = tracelab_evidence::parse(&input.bytes, &options);
    let index = match &args.group_against {
        Some(dir) => Some(group_index(dir, &options)?),
        None => None,
    };
    // Counted before anything is printed: a store that cannot be opened
    // fails the command without half an output.
    let mut recorded = Vec::new();
    if args.record {
        let store = group_store(db).await?;
        let at = now();
        for failure in &output.failures {
            let occ = Occurrence::from_failure(failure, at, None, None);
            let profile = StackProfile::from_failure(failure);
            let (group, observation, merged) = store
                .record_similar(&occ, Some(&profile))
                .await
                .context("cannot record the failure group")?;
            recorded.push(Recorded {
                key: group.key,
                count: group.count,
                observation,
                merged,
            });
        }
    }
    let mut stdout = std::io::stdout().lock();
    for (n, failure) in output.failures.iter().enumerate() {
        let recorded = recorded.get(n);
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
                    if let Some(r) = recorded {
                        object.insert("group".into(), r.to_json()?);
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
                if let Some(r) = recorded {
                    writeln!(stdout, "  {}", describe_recorded(r))?;
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
) -> anyhow::Result<tracelab_evidence::GroupIndex> {
    let mut paths: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    let mut index =
        tracelab_evidence::GroupIndex::new(tracelab_evidence::SimilarityConfig::default());
    for path in paths {
        let file = std::fs::File::open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        let input = tracelab_evidence::read_bounded(file, &options.limits)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let parsed = tracelab_evidence::parse(&input.bytes, options);
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
fn describe(a: &tracelab_evidence::similar::Assignment) -> String {
    use tracelab_evidence::similar::Join;
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

/// One line for the Markdown output of `--record`.
fn describe_recorded(r: &Recorded) -> String {
    use tracelab_evidence::Observation;
    match (&r.merged, &r.observation) {
        (Some(m), _) => format!(
            "recorded in group {} (merged: similar, score {:.2}, {} frames matched; undo with --unmerge {})",
            r.key,
            m.score,
            m.matched.len(),
            m.exact_key
        ),
        (None, Observation::New) => format!("recorded in group {} (new)", r.key),
        (None, Observation::Recurrence) => {
            format!("recorded in group {} (seen {} times)", r.key, r.count)
        }
        (None, Observation::Regression { .. }) => format!(
            "recorded in group {} (a regression: resolved before, seen {} times)",
            r.key, r.count
        ),
    }
}
