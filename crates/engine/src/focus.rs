//! What the first failure points at, turned into the culprit search's prior
//! ([`tracelab_domain::suspicion`]): the failure's application frames and
//! failing tests — with the functions each failing test calls, read from
//! its file at the bad revision — against what each candidate commit
//! changed outside test files (one `git log -p -U0` over the range).
//!
//! Everything here is best effort: an unreadable test file, an unknown
//! runner or a `git log` that fails leaves a weaker focus or no prior, and
//! the search splits by counts as before.

mod test_helpers;

use crate::context::Context;
use crate::git::Git;
use crate::oracle::relative_to_worktrees;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use tokio::sync::Mutex;
use tracelab_code_index::extract::parse_file;
use tracelab_code_index::model::ParsedFile;
use tracelab_domain::Language;
use tracelab_domain::oracle::is_test_path;
use tracelab_domain::suspicion::{
    Change, CommitPrior, Focus, commit_prior, strength, through_calls,
};
use tracelab_evidence::test_run::TestRun;

/// Failing tests whose bodies are read for the functions they call.
const MAX_TESTS_READ: usize = 5;

/// `git log -p` output read at most (a window with huge vendored commits
/// keeps what it read: the rest of its commits get no evidence).
const MAX_LOG_BYTES: usize = 32 << 20;

/// How long reading a range's changes may take (the search waits for it).
const MAX_READ_TIME: std::time::Duration = std::time::Duration::from_secs(3);

/// Changed files parsed at the bad revision for their calls, and the
/// largest one.
const MAX_FILES_PARSED: usize = 40;
const MAX_FILE_PARSED: usize = 512 << 10;

/// The best-scored commits whose hunks are placed in functions by parsing,
/// and the files read per commit.
const MAX_COMMITS_PLACED: usize = 12;
const MAX_FILES_PER_COMMIT: usize = 4;

/// Changed lines per commit whose identifiers are read.
const MAX_LINES_READ: usize = 4_000;

/// `git log`'s hunk headers name the enclosing function with git's own
/// language drivers (attributes passed by `core.attributesFile`).
const DIFF_DRIVERS: &str = "*.py diff=python\n*.rs diff=rust\n*.go diff=golang\n\
*.java diff=java\n*.kt diff=kotlin\n*.rb diff=ruby\n*.cs diff=csharp\n*.php diff=php\n\
*.c diff=cpp\n*.h diff=cpp\n*.cc diff=cpp\n*.cpp diff=cpp\n*.hpp diff=cpp\n";

/// The focus of one failure and, once read, what a search range changed.
#[derive(Debug)]
pub struct SearchFocus {
    pub focus: Focus,
    /// The last range read: its good revision and what was read (`None`
    /// when reading failed or took too long).
    range: Mutex<Option<(String, Option<RangeEvidence>)>>,
    /// A range's log already being read, since before the failure was known
    /// ([`RangeLogTask`]).
    prefetched: Mutex<Option<RangeLogTask>>,
}

/// What the commits of `good..bad` changed, read without the failure's
/// focus: the patches and the changed files' calls.
#[derive(Debug)]
struct RangeLog {
    log: LogRead,
    files: usize,
    calls: BTreeMap<String, Vec<String>>,
    calls_read: std::time::Duration,
    log_read: std::time::Duration,
}

/// A range's log read in a task of its own, started before the first
/// failure is known (the pipeline's first round runs the tests meanwhile);
/// aborted when dropped unused.
#[derive(Debug)]
pub struct RangeLogTask {
    good: String,
    task: tokio::task::JoinHandle<Option<RangeLog>>,
}

impl RangeLogTask {
    /// Starts reading what `good..bad` changed.
    pub fn start(ctx: &Context, good: &str) -> Self {
        let workspace = ctx.pool.workspace();
        let (git, scratch) = (workspace.git().clone(), workspace.root().to_path_buf());
        let (good_rev, bad) = (good.to_string(), ctx.bad.clone());
        let task =
            tokio::spawn(async move { read_range_log(&git, &scratch, &good_rev, &bad).await });
        Self {
            good: good.to_string(),
            task,
        }
    }

    async fn finish(mut self) -> Option<RangeLog> {
        (&mut self.task).await.ok().flatten()
    }
}

impl Drop for RangeLogTask {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What the candidates between one good revision and bad changed, and the
/// focus followed through the calls of the code they changed.
#[derive(Debug, Clone)]
struct RangeEvidence {
    changes: Arc<HashMap<String, Change>>,
    focus: Arc<Focus>,
}

impl SearchFocus {
    pub fn new(focus: Focus) -> Self {
        Self {
            focus,
            range: Mutex::new(None),
            prefetched: Mutex::new(None),
        }
    }

    /// The same focus, with a range's log already being read.
    pub fn with_prefetched(self, task: Option<RangeLogTask>) -> Self {
        Self {
            prefetched: Mutex::new(task),
            ..self
        }
    }

    /// Reads what the candidates after `good` changed, once per `good`:
    /// `git log` over the range, then the changed files at the bad revision
    /// for their calls. `None` when `git log` failed.
    pub async fn read_range(&self, ctx: &Context, good: &str) -> Option<()> {
        self.evidence(ctx, good).await.map(|_| ())
    }

    /// What the range after `good` changed, read once per `good`, within
    /// [`MAX_READ_TIME`]: the search waits for it, and a prior is not worth
    /// more than a round or two of probes.
    async fn evidence(&self, ctx: &Context, good: &str) -> Option<RangeEvidence> {
        let mut cached = self.range.lock().await;
        if let Some((g, read)) = cached.as_ref()
            && g == good
        {
            return read.clone();
        }
        let prefetched = self.prefetched.lock().await.take();
        let started = std::time::Instant::now();
        let log = match prefetched.filter(|t| t.good == good) {
            Some(task) => task.finish().await,
            None => {
                let workspace = ctx.pool.workspace();
                read_range_log(workspace.git(), workspace.root(), good, &ctx.bad).await
            }
        };
        // The search waits at most MAX_READ_TIME for the log and the
        // placement together.
        let waited = started.elapsed();
        let left = MAX_READ_TIME.saturating_sub(waited);
        let read = match log {
            Some(log) => tokio::time::timeout(left, placed(ctx, &self.focus, log, waited))
                .await
                .ok(),
            None => None,
        };
        *cached = Some((good.to_string(), read.clone()));
        read
    }

    /// The prior over `commits` (oldest first), or `None` when the failure
    /// names nothing any of them changed; with the focus it used.
    pub async fn prior(
        &self,
        ctx: &Context,
        good: &str,
        commits: &[String],
    ) -> Option<(CommitPrior, Arc<Focus>)> {
        if self.focus.is_empty() {
            return None;
        }
        let evidence = self.evidence(ctx, good).await?;
        let per_commit: Vec<Change> = commits
            .iter()
            .map(|c| evidence.changes.get(c).cloned().unwrap_or_default())
            .collect();
        commit_prior(&evidence.focus, &per_commit).map(|p| (p, evidence.focus))
    }
}

/// What `good..bad` changed (`git log -p`) and what the changed files'
/// definitions call at bad, read beside each other (the file names come
/// from a much cheaper `git log`), within [`MAX_READ_TIME`]. `None` when
/// `git log` failed or took too long.
async fn read_range_log(git: &Git, scratch: &Path, good: &str, bad: &str) -> Option<RangeLog> {
    tokio::time::timeout(
        MAX_READ_TIME,
        read_range_log_untimed(git, scratch, good, bad),
    )
    .await
    .ok()
    .flatten()
}

async fn read_range_log_untimed(
    git: &Git,
    scratch: &Path,
    good: &str,
    bad: &str,
) -> Option<RangeLog> {
    let started = std::time::Instant::now();
    let calls = async {
        let files = changed_files(git, good, bad).await.ok()?;
        let calls = read_calls(git, bad, &files).await;
        Some((files.len(), calls, started.elapsed()))
    };
    let (log, calls) = futures::future::join(read_changes(git, scratch, good, bad), calls).await;
    let log = log.ok()?;
    let (files, calls, calls_read) = calls?;
    Some(RangeLog {
        log,
        files,
        calls,
        calls_read,
        log_read: started.elapsed(),
    })
}

/// The range's evidence under the failure's `focus`: the focus followed
/// through the changed code's calls, and the best-scored commits' hunks
/// placed in the functions they really changed before the final scores.
/// `waited` is how long the search waited for the log.
async fn placed(
    ctx: &Context,
    focus: &Focus,
    range: RangeLog,
    waited: std::time::Duration,
) -> RangeEvidence {
    let git = ctx.pool.workspace().git();
    let started = std::time::Instant::now();
    let RangeLog {
        log: LogRead { mut changes, hunks },
        files,
        calls,
        calls_read,
        log_read,
    } = range;
    let focus = through_calls(focus, &calls);
    let shas: Vec<&String> = changes.keys().collect();
    let per_commit: Vec<Change> = shas.iter().map(|s| changes[*s].clone()).collect();
    let mut leaders: Vec<String> = Vec::new();
    if let Some(prior) = commit_prior(&focus, &per_commit) {
        leaders = prior
            .ranked()
            .into_iter()
            .take(MAX_COMMITS_PLACED)
            .map(|(i, _)| shas[i].clone())
            .collect();
    }
    let hunks = &hunks;
    let placed = futures::future::join_all(leaders.iter().map(|sha| async move {
        let files = hunks.get(sha).map(Vec::as_slice).unwrap_or_default();
        (sha, functions_changed(git, sha, files).await)
    }))
    .await;
    for (sha, functions) in placed {
        if let (Some(functions), Some(change)) = (functions, changes.get_mut(sha)) {
            change.place_in_functions(functions.iter().map(String::as_str));
        }
    }
    tracing::debug!(
        commits = changes.len(),
        files,
        calls_ms = calls_read.as_millis() as u64,
        log_and_calls_ms = log_read.as_millis() as u64,
        waited_ms = waited.as_millis() as u64,
        placed_ms = started.elapsed().as_millis() as u64,
        "culprit search range read"
    );
    RangeEvidence {
        changes: Arc::new(changes),
        focus: Arc::new(focus),
    }
}

/// What the definitions in the changed `files` (as they are at `bad`) call,
/// by lowercase function name. Unreadable, unknown or huge files are skipped.
async fn read_calls(git: &Git, bad: &str, files: &[String]) -> BTreeMap<String, Vec<String>> {
    let texts = futures::future::join_all(
        files
            .iter()
            .filter(|f| Language::from_path(f).is_some())
            .take(MAX_FILES_PARSED)
            .map(|f| async move { (f, git.show_file(bad, f).await) }),
    )
    .await;
    let texts: Vec<(String, String)> = texts
        .into_iter()
        .filter_map(|(path, text)| Some((path.clone(), text.ok()??)))
        .filter(|(_, text)| text.len() <= MAX_FILE_PARSED)
        .collect();
    // Parsing is CPU work: off the async workers.
    tokio::task::spawn_blocking(move || {
        let mut calls: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (path, text) in texts {
            let Some(language) = Language::from_path(&path) else {
                continue;
            };
            for def in parse_file(language, &path, text.as_bytes()).defs {
                calls
                    .entry(def.name.to_ascii_lowercase())
                    .or_default()
                    .extend(def.calls.into_iter().map(|c| c.name));
            }
        }
        calls
    })
    .await
    .unwrap_or_default()
}

/// The focus of the failure in `output` (the first failing run at the bad
/// revision).
pub async fn failure_focus(ctx: &Context, output: &str) -> Focus {
    let workspace = ctx.pool.workspace();
    let relative = relative_to_worktrees(output, workspace.root());
    let run = TestRun::read(ctx.test.runner, &relative);
    let mut focus = Focus::default();
    for frame in run.frames().into_iter().filter(|f| f.in_app) {
        let Some(file) = frame.file.as_deref() else {
            continue;
        };
        if is_test_path(file) {
            continue;
        }
        if let Some(function) = &frame.function {
            focus.add(last_name(function), strength::FRAME_FUNCTION);
        }
        let name = file.rsplit('/').next().unwrap_or(file);
        focus.add(
            name.split('.').next().unwrap_or(name),
            strength::FRAME_MODULE,
        );
    }
    let frame_files: Vec<String> = crate::oracle::output_files(output, workspace.root())
        .into_iter()
        .filter(|f| is_test_path(f))
        .collect();
    // Failing tests often share a file: each is read and parsed once.
    let mut parsed_files: HashMap<String, Option<(Language, ParsedFile)>> = HashMap::new();
    for id in run.failing_tests().iter().take(MAX_TESTS_READ) {
        let test = TestId::parse(id);
        for name in &test.names {
            focus.add(strip_test_affixes(name), strength::TEST_NAME);
        }
        let Some((function, outer)) = test.names.split_last() else {
            continue;
        };
        let class = outer.last().map(String::as_str);
        let files = match &test.file {
            Some(f) => vec![f.clone()],
            None => frame_files.clone(),
        };
        for file in files.iter().take(3) {
            if !parsed_files.contains_key(file) {
                let read = match Language::from_path(file) {
                    Some(language) => match workspace.git().show_file(&ctx.bad, file).await {
                        Ok(Some(text)) => {
                            Some((language, parse_file(language, file, text.as_bytes())))
                        }
                        _ => None,
                    },
                    None => None,
                };
                parsed_files.insert(file.clone(), read);
            }
            let Some((language, parsed)) = &parsed_files[file] else {
                continue;
            };
            let calls = test_helpers::test_calls(parsed, function, class);
            let git = workspace.git();
            let helpers =
                test_helpers::test_helpers(git, &ctx.bad, file, *language, parsed, &calls).await;
            // Each helper between the test and the call halves its
            // strength, as each call does in `through_calls`.
            for (callee, helpers_between) in test_helpers::through_helpers(calls, &helpers) {
                let strength = strength::TEST_CALLEE * 0.5f64.powi(helpers_between as i32);
                focus.add(&callee, strength);
            }
        }
    }
    focus
}

/// A failing test's id split into its file (when it names one) and its
/// names, outermost first: `tests/t.py::FirstTests::test_default[1]` →
/// `tests/t.py`, `[FirstTests, test_default]`; `test_x (pkg.t.Cls)` →
/// `[pkg, t, Cls, test_x]`; `TestFoo/sub` → `[TestFoo, sub]`.
#[derive(Debug, PartialEq)]
struct TestId {
    file: Option<String>,
    names: Vec<String>,
}

impl TestId {
    fn parse(id: &str) -> Self {
        let id = id.split('[').next().unwrap_or(id);
        let (head, inner) = match id.split_once(" (") {
            // unittest: `name (module.Class)`.
            Some((name, rest)) => (rest.trim_end_matches(')').to_string(), Some(name)),
            None => (id.to_string(), None),
        };
        let mut file = None;
        let mut names = Vec::new();
        for part in head.split("::") {
            let last = part.rsplit('/').next().unwrap_or(part);
            if Language::from_path(part).is_some() || (part.contains('/') && last.contains('.')) {
                file = Some(part.to_string());
                continue;
            }
            names.extend(
                part.split(['.', '/', ' '])
                    .filter(|n| !n.is_empty())
                    .map(str::to_string),
            );
        }
        names.extend(inner.map(str::to_string));
        Self { file, names }
    }
}

/// `test_default` → `default`, `FirstTests` → `First`, `TestParse` → `Parse`.
fn strip_test_affixes(name: &str) -> &str {
    let name = name
        .strip_prefix("test_")
        .or_else(|| name.strip_prefix("Test"))
        .or_else(|| name.strip_prefix("test"))
        .unwrap_or(name);
    name.strip_suffix("Tests")
        .or_else(|| name.strip_suffix("Test"))
        .or_else(|| name.strip_suffix("_test"))
        .unwrap_or(name)
}

/// `Class.method`, `mod::func`, `pkg/file.go:Func` → the last name.
fn last_name(function: &str) -> &str {
    function
        .rsplit(['.', ':', '/', ' '])
        .find(|s| !s.is_empty())
        .unwrap_or(function)
}

/// Every commit's changes outside test files in `good..bad`.
async fn read_changes(
    git: &Git,
    scratch: &Path,
    good: &str,
    bad: &str,
) -> tracelab_domain::Result<LogRead> {
    let attributes = scratch.join("tracelab-diff-drivers");
    if !attributes.exists() {
        tokio::fs::write(&attributes, DIFF_DRIVERS)
            .await
            .map_err(|e| {
                tracelab_domain::Error::unavailable(format!("cannot write {attributes:?}: {e}"))
            })?;
    }
    let config = format!("core.attributesFile={}", attributes.display());
    let range = format!("{good}..{bad}");
    let log = git
        .read_limited(
            &[
                "-c",
                &config,
                "log",
                "--no-color",
                "--no-ext-diff",
                "--no-renames",
                "--format=%x00%H",
                "-p",
                "-U0",
                &range,
            ],
            MAX_LOG_BYTES,
        )
        .await?;
    Ok(parse_log(&log))
}

/// Files no failing test runs, apart from the tests themselves:
/// benchmarks, examples, documentation (by directory or by format),
/// changelogs, CI configuration and Python type stubs (`.pyi`, read by
/// type checkers, never imported). A change there names the code (a
/// benchmark named after the API it measures, a stub or a changelog line
/// naming every function it touches) but cannot have broken a test.
fn is_beside_the_code(path: &str) -> bool {
    const DIRS: &[&str] = &[
        "benches",
        "bench",
        "benchmarks",
        "examples",
        "example",
        "docs",
        "doc",
        ".github",
        ".circleci",
        ".gitlab",
    ];
    const FORMATS: &[&str] = &["md", "markdown", "rst", "adoc", "asciidoc", "pyi"];
    const NOTES: &[&str] = &[
        "changelog",
        "changes",
        "history",
        "news",
        "authors",
        "readme",
    ];
    let in_dir = path
        .split('/')
        .next()
        .is_some_and(|top| path.contains('/') && DIRS.contains(&top.to_ascii_lowercase().as_str()));
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    let (stem, format) = name.rsplit_once('.').unwrap_or((name.as_str(), ""));
    let notes = NOTES.contains(&stem) && Language::from_path(path).is_none();
    in_dir || FORMATS.contains(&format) || notes
}

/// What `git log -p -U0` over a range showed.
#[derive(Debug, Default)]
struct LogRead {
    changes: HashMap<String, Change>,
    /// Where each commit's hunks sit, by file (non-test, parseable files).
    hunks: HashMap<String, Vec<(String, Vec<Hunk>)>>,
}

/// A hunk's line ranges: removed lines in the parent, added ones in the commit.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Hunk {
    old: (u32, u32),
    new: (u32, u32),
}

impl Hunk {
    /// `-a,b +c,d` (a count of 1 may be left out).
    fn parse(ranges: &str) -> Option<Self> {
        let mut parts = ranges.split_whitespace();
        let range = |s: &str| -> Option<(u32, u32)> {
            let (start, len) = s.split_once(',').unwrap_or((s, "1"));
            Some((start.parse().ok()?, len.parse().ok()?))
        };
        let old = range(parts.next()?.strip_prefix('-')?)?;
        let new = range(parts.next()?.strip_prefix('+')?)?;
        Some(Self { old, new })
    }
}

/// Changes by commit from `git log --format=%x00%H -p -U0` output.
fn parse_log(log: &str) -> LogRead {
    let mut read = LogRead::default();
    let mut current: Option<(String, Change)> = None;
    let mut in_tests = false;
    for line in log.lines() {
        if let Some(sha) = line.strip_prefix('\0') {
            if let Some((sha, change)) = current.take() {
                read.changes.insert(sha, change);
            }
            current = Some((sha.trim().to_string(), Change::default()));
            in_tests = false;
            continue;
        }
        let Some((sha, change)) = current.as_mut() else {
            continue;
        };
        if let Some(paths) = line.strip_prefix("diff --git ") {
            let path = paths
                .rsplit_once(" b/")
                .map(|(_, b)| b)
                .unwrap_or(paths)
                .trim_matches('"');
            in_tests = is_test_path(path) || is_beside_the_code(path);
            if !in_tests {
                change.add_file(path);
                if Language::from_path(path).is_some() {
                    read.hunks
                        .entry(sha.clone())
                        .or_default()
                        .push((path.to_string(), Vec::new()));
                }
            }
            continue;
        }
        if in_tests || line.starts_with("+++ ") || line.starts_with("--- ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("@@") {
            if let Some((ranges, header)) = rest.split_once("@@") {
                change.add_function_context(header);
                if let (Some(hunk), Some((_, hunks))) = (
                    Hunk::parse(ranges),
                    read.hunks.get_mut(sha.as_str()).and_then(|f| f.last_mut()),
                ) {
                    hunks.push(hunk);
                }
            }
        } else if (line.starts_with('+') || line.starts_with('-')) && change.lines < MAX_LINES_READ
        {
            change.add_line(&line[1..]);
        } else if line.starts_with('+') || line.starts_with('-') {
            change.lines += 1;
        }
    }
    if let Some((sha, change)) = current {
        read.changes.insert(sha, change);
    }
    read
}

/// The files changed in `good..bad` outside tests (and beside the code),
/// most often changed first: the ones whose calls are read.
async fn changed_files(git: &Git, good: &str, bad: &str) -> tracelab_domain::Result<Vec<String>> {
    let range = format!("{good}..{bad}");
    let names = git
        .read_limited(
            &["log", "--no-renames", "--format=", "--name-only", &range],
            MAX_LOG_BYTES,
        )
        .await?;
    Ok(by_frequency(&names))
}

/// The paths of `git log --name-only` output outside tests and beside the
/// code, most often named first (then by name).
fn by_frequency(names: &str) -> Vec<String> {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for path in names.lines().map(str::trim).filter(|p| !p.is_empty()) {
        if !is_test_path(path) && !is_beside_the_code(path) {
            *counts.entry(path).or_default() += 1;
        }
    }
    let mut files: Vec<(&str, usize)> = counts.into_iter().collect();
    files.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    files.into_iter().map(|(f, _)| f.to_string()).collect()
}

/// The functions `commit`'s hunks really sit in, replacing git's
/// hunk-header guess: a header names the function *before* a hunk, so
/// lines added between two functions would count as changes of the
/// first. Each file is parsed as the commit left it (the lines a hunk
/// added or rewrote); as its parent had it only for hunks that just
/// remove lines (a deleted function), since a rewritten line sits in the
/// same function on both sides and parsing the parent too doubled the
/// search's wait for its prior. `None` when no file could be read.
async fn functions_changed(
    git: &Git,
    commit: &str,
    files: &[(String, Vec<Hunk>)],
) -> Option<std::collections::BTreeSet<String>> {
    let parent = format!("{commit}^");
    let mut texts = Vec::new();
    for (path, hunks) in files.iter().take(MAX_FILES_PER_COMMIT) {
        let Some(language) = Language::from_path(path) else {
            continue;
        };
        let (added, removed) = lines_to_place(hunks);
        for (rev, lines) in [(commit, added), (parent.as_str(), removed)] {
            if lines.is_empty() {
                continue;
            }
            if let Ok(Some(text)) = git.show_file(rev, path).await
                && text.len() <= MAX_FILE_PARSED
            {
                texts.push((language, path.clone(), text, lines));
            }
        }
    }
    if texts.is_empty() {
        return None;
    }
    // Parsing is CPU work: off the async workers, so the leaders' files
    // are parsed side by side once the probes leave a core free.
    tokio::task::spawn_blocking(move || {
        let mut names = std::collections::BTreeSet::new();
        for (language, path, text, lines) in texts {
            let defs = parse_file(language, &path, text.as_bytes()).defs;
            for line in lines {
                for def in defs
                    .iter()
                    .filter(|d| d.start_line <= line && line <= d.end_line)
                {
                    names.insert(def.name.clone());
                }
            }
        }
        names
    })
    .await
    .ok()
}

/// The lines to place, on the commit's side (every line a hunk added or
/// rewrote) and on its parent's (the lines of hunks that add nothing).
fn lines_to_place(hunks: &[Hunk]) -> (Vec<u32>, Vec<u32>) {
    let span = |(start, len): (u32, u32)| start..start + len;
    let added = hunks.iter().flat_map(|h| span(h.new)).collect();
    let removed = hunks
        .iter()
        .filter(|h| h.new.1 == 0)
        .flat_map(|h| span(h.old))
        .collect();
    (added, removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_ids_split_into_file_and_names() {
        assert_eq!(
            TestId::parse("tests/test_more.py::FirstTests::test_default[a-1]"),
            TestId {
                file: Some("tests/test_more.py".into()),
                names: vec!["FirstTests".into(), "test_default".into()],
            }
        );
        assert_eq!(
            TestId::parse("test_x (pkg.test_mod.Cls)").names,
            vec!["pkg", "test_mod", "Cls", "test_x"]
        );
        assert_eq!(
            TestId::parse("tests::parses_ranges").names,
            vec!["tests", "parses_ranges"]
        );
        assert_eq!(
            TestId::parse("TestFoo/empty").names,
            vec!["TestFoo", "empty"]
        );
        assert_eq!(strip_test_affixes("test_default"), "default");
        assert_eq!(strip_test_affixes("FirstTests"), "First");
        assert_eq!(last_name("Buffer.format"), "format");
        assert_eq!(last_name("semver::matches_greater"), "matches_greater");
    }

    #[test]
    fn the_log_gives_each_commit_its_changes_outside_tests() {
        let log = "\0aaa\n\ndiff --git a/pkg/more.py b/pkg/more.py\nindex 1..2 100644\n--- a/pkg/more.py\n+++ b/pkg/more.py\n@@ -264 +264 @@ def first(iterable, default=_marker):\n-    if default is _marker:\n+    if default is not _marker:\ndiff --git a/tests/test_more.py b/tests/test_more.py\n--- a/tests/test_more.py\n+++ b/tests/test_more.py\n@@ -1 +1,2 @@ class FirstTests:\n+    def test_first_again(self): pass\n\0bbb\n\ndiff --git a/setup.cfg b/setup.cfg\n@@ -1 +1 @@\n-old words\n+new words\ndiff --git a/README.md b/README.md\n@@ -1 +1 @@\n-old readme\n+new readme\n";
        let read = parse_log(log);
        assert_eq!(
            by_frequency(
                "pkg/more.py\ntests/test_more.py\n\nREADME.md\n\npkg/more.py\ndocs/api.rst\n"
            ),
            vec!["pkg/more.py"]
        );
        assert_eq!(
            read.hunks["aaa"],
            vec![(
                "pkg/more.py".to_string(),
                vec![Hunk {
                    old: (264, 1),
                    new: (264, 1)
                }]
            )]
        );
        assert_eq!(Hunk::parse(" -10,0 +11,2 ").map(|h| h.new), Some((11, 2)));
        let changes = read.changes;
        let a = &changes["aaa"];
        assert!(a.in_functions.contains("first"));
        assert!(a.on_lines.contains("_marker"));
        assert!(a.on_lines.contains("more"), "the file's stem");
        assert!(
            !a.in_functions.contains("firsttests"),
            "test files are left out"
        );
        assert!(!a.on_lines.contains("test_first_again"));
        assert_eq!(a.lines, 2);
        assert!(changes["bbb"].on_lines.contains("words"));
        assert!(
            !changes["bbb"].on_lines.contains("readme"),
            "documentation is left out"
        );
    }

    #[test]
    fn the_parent_side_is_placed_only_for_hunks_that_add_nothing() {
        let rewrite = Hunk {
            old: (10, 2),
            new: (10, 3),
        };
        let deletion = Hunk {
            old: (40, 5),
            new: (38, 0),
        };
        let insertion = Hunk {
            old: (60, 0),
            new: (58, 1),
        };
        assert_eq!(
            lines_to_place(&[rewrite, deletion, insertion]),
            (vec![10, 11, 12, 58], vec![40, 41, 42, 43, 44])
        );
        assert_eq!(lines_to_place(&[rewrite]).1, Vec::<u32>::new());
    }

    #[test]
    fn benchmarks_examples_docs_and_ci_are_left_out_like_tests() {
        let log = "\0aaa\n\ndiff --git a/benches/parse.rs b/benches/parse.rs\n@@ -3 +3 @@ fn parse_version_req(b: &mut Bencher) {\n-    black_box(req)\n+    hint::black_box(req)\ndiff --git a/.github/workflows/ci.yml b/.github/workflows/ci.yml\n@@ -1 +1 @@\n-  rust: [stable]\n+  rust: [stable, beta]\ndiff --git a/src/eval.rs b/src/eval.rs\n@@ -9 +9 @@ fn matches_greater(cmp: &Comparator, ver: &Version) -> bool {\n-    ver.major > cmp.major\n+    ver.major < cmp.major\n";
        let read = parse_log(log);
        assert_eq!(read.hunks.keys().collect::<Vec<_>>(), vec!["aaa"]);
        let a = &read.changes["aaa"];
        assert!(a.function_words.contains("greater"), "{a:?}");
        assert!(!a.function_words.contains("req"), "{a:?}");
        assert!(!a.on_lines.contains("black_box") && !a.on_lines.contains("beta"));
        assert!(!is_beside_the_code("docs.rs") && is_beside_the_code("Docs/index.md"));
        for beside in [
            "HISTORY.rst",
            "CHANGELOG",
            "idna/core.pyi",
            "guide.md",
            "NEWS.txt",
        ] {
            assert!(is_beside_the_code(beside), "{beside}");
        }
        for code in [
            "idna/core.py",
            "src/history.rs",
            "setup.py",
            "requirements.txt",
        ] {
            assert!(!is_beside_the_code(code), "{code}");
        }
    }
}
