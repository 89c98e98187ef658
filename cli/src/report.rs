//! `tracelab report`: a CI step that collects the evidence of a failed job —
//! test report files, the tail of the job log, commit, branch, job, and an
//! environment fingerprint — into a `CiFailureReport` (the payload type the
//! ingest service reads) and prints it (`--dry-run`) or POSTs it to
//! `SERVER/v1/ci-failures`, retrying when the server says to (429/503 with
//! `Retry-After`). Contents are sent as they are: the server redacts before
//! it stores anything. Variable values are never read, only names. The
//! server and token are the global `--server`/`--token` (`TRACELAB_SERVER`,
//! `TRACELAB_TOKEN`): the fleet's API base URL.

use anyhow::{Context as _, bail};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;
use tracelab_evidence::RequestLimits;
use tracelab_evidence::ci::{
    self, CiContext, CiFailureReport, EnvFingerprint, LOCKFILES, LogTail, ReportFile,
};
use tracelab_evidence::{Limits, read_bounded};

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// JUnit XML files, as globs relative to --dir (repeatable), e.g. 'target/**/*.xml'.
    #[arg(long = "junit", value_name = "GLOB")]
    pub junit: Vec<String>,
    /// Other test output files (pytest, cargo test, go test -json, ...), as globs (repeatable).
    #[arg(long = "report", value_name = "GLOB")]
    pub reports: Vec<String>,
    /// The job log; its last --log-bytes bytes are sent.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// How much of the end of the log to send.
    #[arg(long, value_name = "BYTES", default_value_t = RequestLimits::default().max_log_bytes)]
    pub log_bytes: usize,
    /// The checkout: globs, git and lockfiles are looked up here.
    #[arg(long, value_name = "PATH", default_value = ".")]
    pub dir: PathBuf,
    /// Commit (default: the CI's variable, else `git rev-parse HEAD`).
    #[arg(long)]
    pub commit: Option<String>,
    /// Branch (default: the CI's variable, else the checked-out branch).
    #[arg(long)]
    pub branch: Option<String>,
    /// Job id (default: the CI's variable).
    #[arg(long)]
    pub job: Option<String>,
    /// Print the payload as JSON instead of sending it to the global --server.
    #[arg(long)]
    pub dry_run: bool,
    /// Seconds to wait for the server per attempt.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub timeout: u64,
    /// Send the body uncompressed (by default it is gzip, `Content-Encoding: gzip`).
    #[arg(long)]
    pub no_compress: bool,
}

/// Runs the step; `server` and `token` are the global `--server`/`--token`.
pub async fn run(
    args: ReportArgs,
    server: Option<&str>,
    token: Option<&str>,
) -> anyhow::Result<ExitCode> {
    if !args.dry_run && server.is_none() {
        bail!(
            "give --server URL (or TRACELAB_SERVER) to send the report, or --dry-run to print it"
        );
    }
    let limits = RequestLimits::default();
    let report = collect(&args, &limits).await?;
    let body = fit(report, &limits)?;
    match server {
        #[cfg(feature = "server")]
        Some(server) if !args.dry_run => {
            let (body, encoding) = if args.no_compress {
                (body, None)
            } else {
                (gzip(&body)?, Some("gzip"))
            };
            crate::upload::send(
                server,
                token,
                body,
                encoding,
                Duration::from_secs(args.timeout),
            )
            .await
        }
        #[cfg(not(feature = "server"))]
        Some(_) if !args.dry_run => {
            let _ = (token, gzip, Duration::ZERO);
            Err(crate::built::without("server", "sending a report"))
        }
        _ => {
            let value: serde_json::Value = serde_json::from_slice(&body)?;
            println!("{}", serde_json::to_string_pretty(&value)?);
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn collect(args: &ReportArgs, limits: &RequestLimits) -> anyhow::Result<CiFailureReport> {
    let dir = &args.dir;
    anyhow::ensure!(dir.is_dir(), "--dir {} is not a directory", dir.display());
    let ctx = CiContext::from_env(|name| std::env::var(name).ok());
    let git = Git::read(dir).await;
    let mut report = CiFailureReport::new();
    report.repository = ctx.repository.or(git.remote);
    report.commit = args.commit.clone().or(ctx.commit).or(git.commit);
    report.branch = args.branch.clone().or(ctx.branch).or(git.branch);
    report.job = ctx.job;
    if args.job.is_some() {
        report.job.id = args.job.clone();
    }
    report.job.provider.get_or_insert_with(|| "local".into());
    report.reports = report_files(dir, &args.junit, &args.reports, limits)?;
    if let Some(path) = &args.log {
        report.log = Some(log_tail(path, args.log_bytes.min(limits.max_log_bytes))?);
    }
    if report.reports.is_empty() && report.log.is_none() {
        bail!("nothing to report: no report file matched and no --log was given");
    }
    report.environment = fingerprint(dir, limits).await;
    report.created_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs() as i64);
    Ok(report)
}

fn report_files(
    dir: &Path,
    junit: &[String],
    others: &[String],
    limits: &RequestLimits,
) -> anyhow::Result<Vec<ReportFile>> {
    let mut paths = std::collections::BTreeSet::new();
    for pattern in junit.iter().chain(others) {
        let full = dir.join(pattern);
        let full = full.to_str().context("the glob is not valid UTF-8")?;
        let mut matched = false;
        for entry in glob::glob(full).with_context(|| format!("bad glob {pattern:?}"))? {
            match entry {
                Ok(p) if p.is_file() => {
                    matched = true;
                    paths.insert(p);
                }
                Ok(_) => {}
                Err(e) => eprintln!("warning: {e}"),
            }
        }
        if !matched {
            eprintln!("warning: no file matches {pattern:?}");
        }
    }
    if paths.len() > limits.max_report_files {
        eprintln!(
            "warning: {} report files matched; sending the first {}",
            paths.len(),
            limits.max_report_files
        );
    }
    let file_limits = Limits {
        max_input_bytes: limits.max_file_bytes,
        ..Limits::default()
    };
    paths
        .into_iter()
        .take(limits.max_report_files)
        .map(|p| {
            let file =
                std::fs::File::open(&p).with_context(|| format!("cannot open {}", p.display()))?;
            let input = read_bounded(file, &file_limits)
                .with_context(|| format!("cannot read {}", p.display()))?;
            if input.dropped > 0 {
                eprintln!(
                    "warning: {} is large; sending its first and last {} bytes",
                    p.display(),
                    limits.max_file_bytes / 2
                );
            }
            Ok(ReportFile {
                path: relative(dir, &p),
                content: String::from_utf8_lossy(&input.bytes).into_owned(),
                truncated_bytes: input.dropped,
            })
        })
        .collect()
}

fn relative(dir: &Path, p: &Path) -> String {
    p.strip_prefix(dir)
        .unwrap_or(p)
        .to_string_lossy()
        .into_owned()
}

/// The last `max` bytes of a log, read from the end (the log may be huge).
fn log_tail(path: &Path, max: usize) -> anyhow::Result<LogTail> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let mut file = std::fs::File::open(path)
        .with_context(|| format!("cannot open the log {}", path.display()))?;
    let len = file.metadata()?.len();
    // One byte more than kept, so the tail can start after a newline.
    let start = len.saturating_sub(max as u64 + 1);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::with_capacity((len - start) as usize);
    file.take(max as u64 + 1).read_to_end(&mut bytes)?;
    let (tail, cut) = if start == 0 {
        ci::log_tail(&bytes, max)
    } else {
        // Never start in the middle of the byte before the kept part.
        let (t, c) = ci::log_tail(&bytes, max);
        (t, c.max(1))
    };
    Ok(LogTail {
        path: path.to_string_lossy().into_owned(),
        content: String::from_utf8_lossy(tail).into_owned(),
        truncated_bytes: start + cut,
    })
}

/// What git says about the checkout (each part optional: a tarball has none).
#[derive(Default)]
struct Git {
    commit: Option<String>,
    branch: Option<String>,
    remote: Option<String>,
}

impl Git {
    async fn read(dir: &Path) -> Self {
        let (commit, branch, remote) = tokio::join!(
            first_line("git", &["rev-parse", "HEAD"], dir, false),
            first_line("git", &["rev-parse", "--abbrev-ref", "HEAD"], dir, false),
            first_line("git", &["config", "--get", "remote.origin.url"], dir, false),
        );
        Git {
            commit,
            // Detached checkouts (most CI jobs) say "HEAD".
            branch: branch.filter(|b| b != "HEAD"),
            remote: remote.map(|u| ci::sanitize_url(&u)),
        }
    }
}

/// The first non-empty line a program prints (stdout, or stderr when
/// `stderr_too`, for `java -version`); `None` when it is missing, fails or hangs.
async fn first_line(program: &str, args: &[&str], dir: &Path, stderr_too: bool) -> Option<String> {
    let child = tokio::process::Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(10), child)
        .await
        .ok()?
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let pick = |b: &[u8]| {
        String::from_utf8_lossy(b)
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(|l| l.chars().take(200).collect::<String>())
    };
    pick(&out.stdout).or_else(|| if stderr_too { pick(&out.stderr) } else { None })
}

/// Toolchains that answer, lockfiles at the root, OS/arch, variable names.
async fn fingerprint(dir: &Path, limits: &RequestLimits) -> EnvFingerprint {
    let probes: [(&str, &str, &[&str]); 7] = [
        ("rustc", "rustc", &["--version"]),
        ("cargo", "cargo", &["--version"]),
        ("python3", "python3", &["--version"]),
        ("node", "node", &["--version"]),
        ("go", "go", &["version"]),
        ("java", "java", &["-version"]),
        ("gcc", "gcc", &["--version"]),
    ];
    let versions =
        futures::future::join_all(probes.iter().map(|(name, program, args)| async move {
            (*name, first_line(program, args, dir, true).await)
        }))
        .await;
    let mut fp = EnvFingerprint {
        os: std::env::consts::OS.to_owned(),
        arch: std::env::consts::ARCH.to_owned(),
        ..EnvFingerprint::default()
    };
    for (name, version) in versions {
        if let Some(v) = version {
            fp.toolchains.insert(name.to_owned(), v);
        }
    }
    for lockfile in LOCKFILES {
        if let Ok(bytes) = std::fs::read(dir.join(lockfile)) {
            fp.lockfiles
                .insert((*lockfile).to_owned(), ci::lockfile_digest(&bytes));
        }
    }
    fp.env_names = ci::env_names(
        std::env::vars_os().map(|(k, _)| k.to_string_lossy().into_owned()),
        limits.max_env_names,
    );
    fp
}

/// Serialises the report, dropping the largest report files while the body
/// is over the server's limit (JSON escaping grows XML by its quotes).
fn fit(mut report: CiFailureReport, limits: &RequestLimits) -> anyhow::Result<Vec<u8>> {
    loop {
        let body = serde_json::to_vec(&report)?;
        if body.len() <= limits.max_body_bytes {
            if let Err(refusal) = report.check(limits) {
                bail!("the report would be refused: {refusal}");
            }
            return Ok(body);
        }
        let Some((largest, _)) = report
            .reports
            .iter()
            .enumerate()
            .max_by_key(|(_, r)| r.content.len())
        else {
            bail!(
                "the report is {} bytes even without report files (limit {})",
                body.len(),
                limits.max_body_bytes
            );
        };
        let dropped = report.reports.remove(largest);
        eprintln!(
            "warning: the report is over {} bytes; leaving out {}",
            limits.max_body_bytes, dropped.path
        );
    }
}

/// Why one attempt to send failed, and whether another may succeed.
/// Test reports and logs shrink 5–20× with gzip; the body limit applies to
/// the decompressed size on the server, so compressing only saves transfer.
fn gzip(body: &[u8]) -> anyhow::Result<Vec<u8>> {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(body)?;
    Ok(encoder.finish()?)
}
