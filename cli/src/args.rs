//! Command-line flags.

use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0: any free port, printed in the URL).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8765")]
    pub listen: std::net::SocketAddr,
    /// Approved investigations get an "Open draft pull request" button for this
    /// GitHub repository (token: TRACELAB_GITHUB_TOKEN, API: TRACELAB_GITHUB_API_URL).
    #[arg(long, value_name = "OWNER/REPO", conflicts_with = "gitlab")]
    pub github: Option<String>,
    /// Or for this GitLab project (TRACELAB_GITLAB_TOKEN, TRACELAB_GITLAB_API_URL).
    #[arg(long, value_name = "GROUP/PROJECT")]
    pub gitlab: Option<String>,
    /// The git remote of the investigated repository the branch is pushed to.
    #[arg(long, value_name = "NAME", default_value = "origin")]
    pub remote: String,
    /// The branch pull requests target.
    #[arg(long, value_name = "BRANCH", default_value = "main")]
    pub base: String,
    /// Labels to put on pull requests (repeatable; default: tracelab).
    #[arg(long = "label", value_name = "LABEL")]
    pub labels: Vec<String>,
}

#[derive(Debug, Args)]
pub struct IndexArgs {
    #[arg(long)]
    pub repo: PathBuf,
    /// Revision to index (default HEAD).
    #[arg(long)]
    pub rev: Option<String>,
    #[arg(long, value_enum, default_value_t = Format::Markdown)]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct LocateArgs {
    #[arg(long)]
    pub repo: PathBuf,
    /// The failure output (test output, traceback or log); `-` for standard input. Optional with --test: the suite's output is used.
    #[arg(long, required_unless_present = "test")]
    pub evidence: Option<String>,
    /// Revision to search (default HEAD).
    #[arg(long)]
    pub rev: Option<String>,
    /// Results per list.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Hard filter: suspects in this language only (repeatable): python, rust, javascript, typescript, go, java.
    #[arg(long = "language", value_name = "LANG")]
    pub languages: Vec<String>,
    /// Hard filter: suspects under this path only, e.g. services/billing/.
    #[arg(long, value_name = "PATH")]
    pub path_prefix: Option<String>,
    /// Revision window: only commits after REV (e.g. the last good one) are suspects.
    #[arg(long, value_name = "REV")]
    pub since: Option<String>,
    #[arg(long, value_enum, default_value_t = Format::Markdown)]
    pub format: Format,
    /// A Python test command (pytest or unittest, no shell): its suite runs under coverage.py in a local sandbox at --rev and adds the `spectrum` (Ochiai) component.
    #[arg(long, value_name = "CMD")]
    pub test: Option<String>,
    /// The suite to run for coverage (default: --test without its test selection).
    #[arg(long, value_name = "CMD", requires = "test")]
    pub suite: Option<String>,
    /// Wall-clock limit for the coverage run, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub timeout: u64,
    /// Write a Repro Pack (revision, command, failing tests, environment delta, places of interest) for `tracelab repro`.
    #[arg(long, value_name = "FILE", requires = "test")]
    pub repro_pack: Option<std::path::PathBuf>,
    /// Add sentence-embedding similarity (all-MiniLM-L6-v2) from a local model folder; without a value: $TRACELAB_MODEL_DIR, else ~/.cache/tracelab/models/all-MiniLM-L6-v2 (deploy/models/fetch-minilm.sh). Needs a build with `--features embeddings`.
    #[arg(long, value_name = "MODEL_DIR", num_args = 0..=1)]
    pub embeddings: Option<Option<PathBuf>>,
    /// A running indexer service (e.g. http://127.0.0.1:8087) answers instead of this process; --repo must be a path it may read. Prints the same result.
    #[arg(long, env = "TRACELAB_INDEXER", value_name = "URL", conflicts_with_all = ["test", "embeddings"])]
    pub indexer: Option<String>,
}

#[derive(Debug, Args)]
pub struct ParseArgs {
    /// A file, or `-` for standard input.
    #[arg(required_unless_present = "unmerge")]
    pub input: Option<String>,
    /// `json`: one JSON object per failure per line; `markdown`: a short human summary.
    #[arg(long, value_enum, default_value_t = Format::Markdown)]
    pub format: Format,
    /// A repository root on the machine that produced the evidence (repeatable); paths are made relative to it.
    #[arg(long = "repo-root", value_name = "PATH")]
    pub repo_roots: Vec<String>,
    /// Module or package prefixes that are application code (repeatable), e.g. `com.acme.`.
    #[arg(long = "in-app", value_name = "PREFIX")]
    pub in_app: Vec<String>,
    /// A file holding the key for redaction pseudonyms (default: the public development key).
    #[arg(long, value_name = "FILE")]
    pub redaction_key_file: Option<PathBuf>,
    /// A directory of earlier evidence (one file each, any format `parse` reads): print the group each failure would join, by exact key or similarity, with the score.
    #[arg(long, value_name = "DIR")]
    pub group_against: Option<PathBuf>,
    /// Count each failure in this machine's failure groups (the --db store): its exact key's group, or the most similar known group by the fleet's rule and threshold, the merge kept with its score and matched frames. Prints the group each joined.
    #[arg(long)]
    pub record: bool,
    /// Undo the similarity merge of this exact key (a `group_key` printed by --format json) in the --db store: the sightings it counted move to the key's own group, and it is never merged again. Needs --reason.
    #[arg(long, value_name = "EXACT_KEY", requires = "reason", conflicts_with_all = ["input", "record", "group_against"])]
    pub unmerge: Option<String>,
    /// Why the merge is undone: kept in the merge history with the OS user.
    #[arg(long, value_name = "TEXT", requires = "unmerge")]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Markdown,
    Json,
}

/// Where fixes beyond revert come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RepairArg {
    /// Only reverts of a culprit carry fixes.
    Off,
    /// Offline repair templates on the suspect functions (no network, no model).
    Templates,
    /// The LLM patch agent only: an OpenAI-compatible model server from
    /// TRACELAB_LLM_BASE_URL, TRACELAB_LLM_MODEL and TRACELAB_LLM_API_KEY
    /// (or TRACELAB_LLM_API_KEY_FILE).
    Llm,
    /// Templates first, then the LLM patch agent in the same hypothesis.
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SandboxKind {
    /// Worktree + process group on this machine (no network or resource isolation).
    Local,
    /// The same, under a separate uid when run as root, in new namespaces
    /// (bubblewrap or unshare) where the kernel allows, with rlimits
    /// (docs/sandbox.md lists what each mechanism isolates).
    Hardened,
    /// A locked-down Docker container per worktree (network none, read-only root, limits).
    Docker,
}

#[derive(Debug, Args)]
pub struct RunOptions {
    /// Sandboxes used at once (k of the k-ary culprit search). Default: the number of cores, at least 2.
    #[arg(long, value_name = "K")]
    pub parallel: Option<usize>,
    /// Wall-clock limit per command, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    pub timeout: u64,
    /// Re-runs used to classify a flaky test (default 50, at most 100).
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub max_runs: u32,
    /// Once the culprit search names a culprit, the re-runs at the bad
    /// revision stop after N failures in a row, and the culprit's fix must
    /// pass enough clean runs to confirm the failure is deterministic
    /// (4 failures, 3 passes). 0 always runs the sequential test to its own
    /// decision (17 failures in a row). Without a verified fix the re-runs
    /// are finished anyway.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub confirm_by_fix_after: u32,
    /// Probes run each revision's own tests, instead of the bad revision's
    /// failing test files laid over each probe's source (the default).
    #[arg(long)]
    pub tests_at_revision: bool,
    /// Hypotheses per investigation.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub max_hypotheses: usize,
    /// Fix candidates verified per hypothesis (candidates that do not apply do not count).
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub max_patch_attempts: usize,
    /// Fixes beyond revert, tried when no culprit fix is verified for a
    /// deterministic failure.
    #[arg(long, value_enum, default_value_t = RepairArg::Templates)]
    pub repair: RepairArg,
    /// Wall-clock budget for screening repair candidates with the failing test, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    pub repair_budget: u64,
    /// Tokens (prompt + reply) the LLM patch agent may use per investigation.
    #[arg(long, value_name = "N", default_value_t = 60_000)]
    pub llm_token_budget: u64,
    /// Wall-clock budget for the LLM patch agent's model calls per investigation, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    pub llm_budget: u64,
    /// Do not reuse past repairs (`tracelab experience mine`'s records in
    /// the store) through the experience agent.
    #[arg(long)]
    pub no_experience: bool,
    #[arg(long, value_enum, default_value_t = SandboxKind::Local)]
    pub sandbox: SandboxKind,
    /// Image for `--sandbox docker` (default tracelab-sandbox-base:bookworm, see deploy/sandbox/).
    #[arg(long, value_name = "REF")]
    pub image: Option<String>,
    /// A Dockerfile in the repository to build the sandbox image from (its FROM must be the base image).
    #[arg(long, value_name = "PATH")]
    pub recipe: Option<String>,
    /// Extra programs the test command may use (the default allowlist covers common runners).
    #[arg(long = "allow", value_name = "PROGRAM")]
    pub allow: Vec<String>,
    /// Let the test command pass code on the command line (`python3 -c`, `node -e`).
    #[arg(long)]
    pub allow_inline_code: bool,
    /// Let the test command's program be a path inside the repository (`./run-tests`).
    #[arg(long)]
    pub allow_repository_programs: bool,
    #[arg(long, value_enum, default_value_t = Format::Markdown)]
    pub format: Format,
    /// Write the report to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct InvestigateArgs {
    /// The git repository: any directory inside a checkout, or a URL
    /// (`https://…`, `ssh://…`, `git@host:path`, `git://…`) fetched into a
    /// mirror in the user's cache (with --server: the fleet fetches it).
    #[arg(long)]
    pub repo: PathBuf,
    /// The test command, run without a shell, e.g. "python3 -m pytest tests/test_calc.py".
    #[arg(long, required_unless_present = "evidence")]
    pub test: Option<String>,
    /// With --server: an evidence id the fleet's ingest answered with; the
    /// test command (re-running its failed test) and the failing commit come
    /// from it unless --test / --bad are given.
    #[arg(long, value_name = "EVIDENCE_ID")]
    pub evidence: Option<String>,
    /// A revision where the test passes. Found automatically when omitted.
    #[arg(long)]
    pub good: Option<String>,
    /// The revision where the test fails. Default: HEAD.
    #[arg(long)]
    pub bad: Option<String>,
    /// External issue id used in branch names (ai-debug/{ISSUE_ID}-h{N}).
    #[arg(long)]
    pub issue_id: Option<String>,
    #[command(flatten)]
    pub run: RunOptions,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Keep the demo repository and print its path.
    #[arg(long)]
    pub keep: bool,
    #[command(flatten)]
    pub run: RunOptions,
}

#[derive(Debug, Subcommand)]
pub enum InvestigationsCommand {
    /// The most recent investigations.
    List {
        #[arg(long, default_value_t = 20)]
        limit: u32,
        #[arg(long, value_enum, default_value_t = Format::Markdown)]
        format: Format,
    },
    /// One investigation's report.
    Show {
        id: String,
        #[arg(long, value_enum, default_value_t = Format::Markdown)]
        format: Format,
    },
    /// Approve a diagnosis waiting for review (its branch is kept for a pull request).
    Approve {
        id: String,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Reject a diagnosis waiting for review.
    Reject {
        id: String,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Open the draft pull request (GitHub) or merge request (GitLab) of an
    /// approved diagnosis: pushes its verified branch to the remote, then
    /// finds or creates the draft. Calling it again returns the same one.
    /// One machine: the API URL and token come from TRACELAB_GITHUB_API_URL
    /// and TRACELAB_GITHUB_TOKEN (TRACELAB_GITLAB_… for --gitlab). With
    /// --server the fleet's settings choose the code host.
    #[command(name = "pr")]
    PullRequest(PullRequestArgs),
}

#[derive(Debug, Args)]
pub struct PullRequestArgs {
    pub id: String,
    /// The git remote of the investigated repository to push the branch to (e.g. origin).
    #[arg(long, value_name = "NAME")]
    pub remote: Option<String>,
    /// Open a GitHub pull request on this repository.
    #[arg(long, value_name = "OWNER/REPO", conflicts_with = "gitlab")]
    pub github: Option<String>,
    /// Open a GitLab merge request on this project.
    #[arg(long, value_name = "GROUP/PROJECT")]
    pub gitlab: Option<String>,
    /// The branch the pull request targets.
    #[arg(long, value_name = "BRANCH", default_value = "main")]
    pub base: String,
    /// Labels to put on it (repeatable; default: tracelab).
    #[arg(long = "label", value_name = "LABEL")]
    pub labels: Vec<String>,
    /// `json` prints {"url", "number"}.
    #[arg(long, value_enum, default_value_t = Format::Markdown)]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct ReproArgs {
    /// A Repro Pack written by `tracelab locate --test CMD --repro-pack FILE`.
    #[arg(long)]
    pub pack: PathBuf,
    /// The repository holding the pack's revision.
    #[arg(long)]
    pub repo: PathBuf,
    /// Directory for the worktree (`DIR/worktree`), `DIR/repro.sh` and a copy
    /// of the pack; kept afterwards. Default: a temporary directory, removed.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Wall-clock limit for the run, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub timeout: u64,
    #[arg(long, value_enum, default_value_t = Format::Markdown)]
    pub format: Format,
}
