//! Experience records at three levels, their retrieval scope and the
//! recurring-problem flag.
//!
//! - L1 [`Concrete`]: this repository's repair — signature, files,
//!   symbols, the attributed hunks as a patch, how to validate it, the
//!   commits that support it.
//! - L2 [`Strategy`]: the repair as ordered actions on *roles* (the source
//!   under test, a file the failure names, the dependency manifest) rather
//!   than names, with the conditions it applies under.
//! - L3 [`Pattern`]: the failure mechanism, its signals and the approach
//!   with repository names, paths and identifiers abstracted away.

use crate::development::DevelopmentView;
use crate::hunks::{self, NetHunk};
use crate::problems::Problem;
use crate::reconcile::{Outcome, Prerequisite, ProblemAttribution};
use crate::relations::{self, RelationKind};
use crate::text;
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;
use tracelab_domain::oracle::is_test_path;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// L1: retrieved for the same repository and workflow only.
    Concrete,
    /// L2: for the same repository.
    Strategy,
    /// L3: for any repository.
    Pattern,
}

/// The scope rule: whether a record of `record_repo`/`record_workflow` may
/// be retrieved at `level` for a failure in `repo`/`workflow`.
pub fn in_scope(
    level: Level,
    record_repo: &str,
    record_workflow: &str,
    repo: &str,
    workflow: &str,
) -> bool {
    match level {
        Level::Concrete => record_repo == repo && record_workflow == workflow,
        Level::Strategy => record_repo == repo,
        Level::Pattern => true,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureType {
    TestFailure,
    ImportError,
    Dependency,
    Build,
    Lint,
    Configuration,
    Check,
}

/// The role a file plays in a repair (L2 names roles, not files).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A test file.
    Test,
    /// The source file the failing test is named after.
    SourceUnderTest,
    /// A file the failure names (a frame, a lint line).
    NamedInFailure,
    Configuration,
    Manifest,
    Lockfile,
    /// Another source file.
    Source,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Add,
    Modify,
    Remove,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SymbolRole {
    /// The function or name the failure names.
    NamedInFailure,
    /// A definition the repair adds.
    New,
    /// Another existing function.
    Changed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Action {
    pub change: Change,
    pub target: Role,
    pub symbol: Option<SymbolRole>,
    pub lines_added: usize,
    pub lines_removed: usize,
}

impl Action {
    fn describe(&self) -> String {
        let change = match self.change {
            Change::Add => "add",
            Change::Modify => "modify",
            Change::Remove => "remove",
        };
        let symbol = match self.symbol {
            Some(SymbolRole::NamedInFailure) => "the function named in the failure in ",
            Some(SymbolRole::New) => "a new definition in ",
            Some(SymbolRole::Changed) => "an existing function in ",
            None => "lines in ",
        };
        let target = match self.target {
            Role::Test => "a test file",
            Role::SourceUnderTest => "the source under test",
            Role::NamedInFailure => "a file the failure names",
            Role::Configuration => "a configuration file",
            Role::Manifest => "the dependency manifest",
            Role::Lockfile => "the lockfile",
            Role::Source => "another source file",
        };
        format!("{change} {symbol}{target}")
    }
}

/// L1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Concrete {
    pub signature: String,
    pub failure_type: FailureType,
    pub test: Option<String>,
    pub error_types: BTreeSet<String>,
    pub files: Vec<String>,
    pub symbols: Vec<String>,
    /// The attributed hunks as a patch on the failing revision.
    pub patch: String,
    /// The command that shows the problem gone.
    pub validation: String,
    /// Commits that changed the attributed hunks, and the one after which
    /// CI saw the problem gone.
    pub supporting_commits: Vec<String>,
    pub fixed_at: String,
    pub agreement: Option<Outcome>,
    /// Problems (signatures) whose repair this one needs first.
    pub needs: Vec<String>,
}

/// L2.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Strategy {
    /// `job/step`: where this repository's CI shows the problem.
    pub check: String,
    pub failure_type: FailureType,
    pub validation: String,
    /// In the order the history made them.
    pub actions: Vec<Action>,
    pub conditions: Vec<String>,
    /// Reverted attempts on the repair's files before it succeeded.
    pub failed_attempts: usize,
}

/// L3.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pattern {
    pub failure_type: FailureType,
    pub mechanism: String,
    pub signals: Vec<String>,
    pub approach: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExperienceRecord {
    /// Stable for one repository, history and problem: mining again does
    /// not duplicate it.
    pub id: String,
    /// `FIRST..LAST` of the history.
    pub history: String,
    pub repository: String,
    pub workflow: String,
    pub problem: String,
    /// The signature occurs in at least half of the repository's histories.
    #[serde(default)]
    pub recurring: bool,
    pub concrete: Concrete,
    pub strategy: Strategy,
    pub pattern: Pattern,
}

/// FNV-1a, 64 bits: a short stable id without a hashing dependency.
pub fn stable_id(parts: &[&str]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.bytes().chain(std::iter::once(0)) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{hash:016x}")
}

fn has(haystack: &str, words: &[&str]) -> bool {
    let lower = haystack.to_ascii_lowercase();
    words.iter().any(|w| lower.contains(w))
}

fn role(path: &str, problem: &Problem) -> Role {
    if relations::is_lockfile(path) {
        return Role::Lockfile;
    }
    if relations::is_manifest(path) {
        return Role::Manifest;
    }
    if is_test_path(path) {
        return Role::Test;
    }
    if relations::is_config(path) {
        return Role::Configuration;
    }
    let tested = problem
        .test
        .as_deref()
        .map(|t| t.to_ascii_lowercase())
        .unwrap_or_default();
    if let Some(module) = text::module_name(path)
        && tested.contains(&format!("test_{}", module.to_ascii_lowercase()))
    {
        return Role::SourceUnderTest;
    }
    if problem.files.iter().any(|f| text::names_path(f, path)) || problem.message.contains(path) {
        return Role::NamedInFailure;
    }
    Role::Source
}

/// The kind of failure, from the error types, the step and what the repair touched.
pub fn failure_type(problem: &Problem, roles: &BTreeSet<Role>) -> FailureType {
    let types = &problem.error_types;
    let check = format!("{} {}", problem.step, problem.command);
    if types.contains("ModuleNotFoundError") || types.contains("ImportError") {
        return if roles.contains(&Role::Manifest) || roles.contains(&Role::Lockfile) {
            FailureType::Dependency
        } else {
            FailureType::ImportError
        };
    }
    if types.contains("SyntaxError")
        || types.contains("IndentationError")
        || problem.message.contains("error[E")
        || problem.message.contains("could not compile")
    {
        return FailureType::Build;
    }
    if has(
        &check,
        &[
            "lint", "flake8", "ruff", "pylint", "clippy", "fmt", "format", "style", "eslint",
        ],
    ) {
        return FailureType::Lint;
    }
    let only_manifests = !roles.is_empty()
        && roles
            .iter()
            .all(|r| matches!(r, Role::Manifest | Role::Lockfile));
    if has(&check, &["depend", "requirements", "lock"])
        || types.iter().any(|t| t.contains("Dependency"))
        || only_manifests
    {
        return FailureType::Dependency;
    }
    if has(&check, &["config", "settings"])
        || types.iter().any(|t| t.contains("Config"))
        || (!roles.is_empty() && roles.iter().all(|r| *r == Role::Configuration))
    {
        return FailureType::Configuration;
    }
    if problem.test.is_some() {
        return FailureType::TestFailure;
    }
    FailureType::Check
}

static ABSTRACT_PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[\w.-]*(?:/[\w.-]+)+|[\w-]+\.(?:py|rs|go|js|ts|toml|ini|cfg|txt|ya?ml|json|lock|rst|md)\b").expect("regex")
});
static ABSTRACT_QUOTED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"'[^']*'|"[^"]*""#).expect("regex"));
static ABSTRACT_NUMBER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b\d+\b").expect("regex"));
static ABSTRACT_IDENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b[a-z]+_[a-z0-9_]+\b|\b[A-Za-z]+[0-9]+[A-Za-z0-9]*\b").expect("regex")
});

/// Text with repository names, paths, quoted names, numbers and the given
/// identifiers replaced by placeholders (L3 must not identify the project).
pub fn abstract_text(text: &str, names: &BTreeSet<String>) -> String {
    let mut out = ABSTRACT_PATH.replace_all(text, "<path>").into_owned();
    out = ABSTRACT_QUOTED.replace_all(&out, "<name>").into_owned();
    let mut names: Vec<&String> = names.iter().filter(|n| n.len() >= 3).collect();
    names.sort_by_key(|n| std::cmp::Reverse(n.len()));
    for name in names {
        let word = Regex::new(&format!(r"\b{}\b", regex::escape(name))).expect("escaped");
        out = word.replace_all(&out, "<id>").into_owned();
    }
    out = ABSTRACT_IDENT.replace_all(&out, "<id>").into_owned();
    ABSTRACT_NUMBER.replace_all(&out, "<n>").into_owned()
}

/// Everything that names the project in one record's sources.
fn project_names(repository: &str, problem: &Problem, hunks: &[&NetHunk]) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = BTreeSet::new();
    for part in repository.split(['/', ':', '.', '@']) {
        names.insert(part.to_string());
    }
    names.insert(problem.job.clone());
    names.insert(problem.step.clone());
    if let Some(test) = &problem.test {
        names.extend(test.split(['.', ':', '/']).map(str::to_string));
    }
    for h in hunks {
        names.extend(h.symbols());
        names.extend(h.path.split('/').map(str::to_string));
        names.insert(text::stem(&h.path).to_string());
        names.extend(h.identifiers());
    }
    for f in &problem.files {
        names.extend(f.split('/').map(str::to_string));
        names.insert(text::stem(f).to_string());
    }
    names.retain(|n| !n.is_empty() && !problem.error_types.contains(n));
    names
}

/// What the records of one history are built from.
pub struct Sources<'a> {
    pub repository: &'a str,
    pub workflow: &'a str,
    pub revisions: &'a [String],
    pub hunks: &'a [NetHunk],
    pub problems: &'a [Problem],
    pub development: &'a DevelopmentView,
    pub prerequisites: &'a [Prerequisite],
}

/// One record per repaired problem with at least one attributed hunk.
pub fn build(sources: &Sources<'_>, attributions: &[ProblemAttribution]) -> Vec<ExperienceRecord> {
    let history = format!(
        "{}..{}",
        sources.revisions.first().map(String::as_str).unwrap_or(""),
        sources.revisions.last().map(String::as_str).unwrap_or("")
    );
    attributions
        .iter()
        .filter(|a| !a.kept.is_empty())
        .filter_map(|a| {
            let problem = &sources.problems[a.problem];
            let gone = problem.disappeared_at?;
            Some(record(sources, &history, a, problem, gone))
        })
        .collect()
}

fn record(
    s: &Sources<'_>,
    history: &str,
    a: &ProblemAttribution,
    problem: &Problem,
    gone: usize,
) -> ExperienceRecord {
    let mut kept: Vec<&NetHunk> = a.kept.iter().map(|&h| &s.hunks[h]).collect();
    // In the order the history made them.
    kept.sort_by_key(|h| {
        (
            s.development.introduced(h.index).unwrap_or(usize::MAX),
            h.index,
        )
    });
    let mut files: Vec<String> = Vec::new();
    for h in &kept {
        if !files.contains(&h.path) {
            files.push(h.path.clone());
        }
    }
    let symbols: BTreeSet<String> = kept.iter().flat_map(|h| h.symbols()).collect();
    let mut commits: BTreeSet<usize> = kept
        .iter()
        .flat_map(|h| s.development.touched_by(h.index))
        .collect();
    commits.insert(gone);
    let roles: BTreeSet<Role> = files.iter().map(|f| role(f, problem)).collect();
    let failure_type = failure_type(problem, &roles);
    let mut by_file: Vec<&NetHunk> = kept.clone();
    by_file.sort_by_key(|h| h.index);
    let named: BTreeSet<String> = text::identifiers(&problem.message);
    let actions: Vec<Action> = kept
        .iter()
        .map(|h| {
            let change = match (h.added.is_empty(), h.removed.is_empty()) {
                (false, true) => Change::Add,
                (true, false) => Change::Remove,
                _ => Change::Modify,
            };
            let symbol = if h.symbols().iter().any(|x| named.contains(x)) {
                Some(SymbolRole::NamedInFailure)
            } else if !h.defines.is_empty()
                && h.added.iter().any(|l| hunks::defined_name(l).is_some())
            {
                Some(SymbolRole::New)
            } else if h.enclosing.is_some() {
                Some(SymbolRole::Changed)
            } else {
                None
            };
            Action {
                change,
                target: role(&h.path, problem),
                symbol,
                lines_added: h.added.len(),
                lines_removed: h.removed.len(),
            }
        })
        .collect();
    let needs: Vec<String> = s
        .prerequisites
        .iter()
        .filter(|p| p.after == a.problem)
        .map(|p| s.problems[p.before].key.clone())
        .collect();
    let failed_attempts = s
        .development
        .attempts
        .iter()
        .filter(|t| t.reverted.is_some() && t.introduced <= gone && files.contains(&t.path))
        .count();
    let mut conditions = vec![format!("the check {}/{} fails", problem.job, problem.step)];
    if !problem.error_types.is_empty() {
        let types: Vec<&str> = problem.error_types.iter().map(String::as_str).collect();
        conditions.push(format!("it fails with {}", types.join(", ")));
    }
    for p in s.prerequisites.iter().filter(|p| p.after == a.problem) {
        conditions.push(format!(
            "after repairing {} ({})",
            s.problems[p.before].key,
            relation_words(p.relation)
        ));
    }
    let names = project_names(s.repository, problem, &kept);
    let error_lines: Vec<&str> = problem
        .message
        .lines()
        .map(str::trim)
        .filter(|l| {
            problem
                .error_types
                .iter()
                .any(|t| l.starts_with(t.as_str()))
                || l.contains(": L") && l.contains(':')
                || l.starts_with("E ")
        })
        .take(3)
        .collect();
    let signals: Vec<String> = if error_lines.is_empty() {
        problem
            .message
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(|l| vec![abstract_text(l, &names)])
            .unwrap_or_default()
    } else {
        error_lines
            .iter()
            .map(|l| abstract_text(l, &names))
            .collect()
    };
    let mechanism = if problem.error_types.is_empty() {
        format!("{failure_type:?} reported by a check")
    } else {
        let types: Vec<&str> = problem.error_types.iter().map(String::as_str).collect();
        format!("{failure_type:?}: {}", types.join(", "))
    };
    ExperienceRecord {
        id: stable_id(&[s.repository, s.workflow, history, &problem.key]),
        history: history.to_string(),
        repository: s.repository.to_string(),
        workflow: s.workflow.to_string(),
        problem: problem.key.clone(),
        recurring: false,
        concrete: Concrete {
            signature: problem.key.clone(),
            failure_type,
            test: problem.test.clone(),
            error_types: problem.error_types.clone(),
            files,
            symbols: symbols.into_iter().collect(),
            patch: hunks::render(&by_file),
            validation: problem.command.clone(),
            supporting_commits: commits.iter().map(|&i| s.revisions[i].clone()).collect(),
            fixed_at: s.revisions[gone].clone(),
            agreement: a.agreement,
            needs,
        },
        strategy: Strategy {
            check: format!("{}/{}", problem.job, problem.step),
            failure_type,
            validation: problem.command.clone(),
            actions: actions.clone(),
            conditions,
            failed_attempts,
        },
        pattern: Pattern {
            failure_type,
            mechanism,
            signals,
            approach: actions.iter().map(Action::describe).collect(),
        },
    }
}

fn relation_words(r: RelationKind) -> &'static str {
    match r {
        RelationKind::Import => "it imports what that repair provides",
        RelationKind::CallerCallee => "it calls what that repair changes",
        RelationKind::SameSymbol => "the same function",
        RelationKind::TestSource => "a test of that repair",
        RelationKind::ConfigConsumer => "it reads configuration that repair changes",
        RelationKind::ManifestCode => "it uses a dependency that repair declares",
    }
}

/// `(repository, problem)` pairs whose signature occurs in at least half
/// of the repository's histories (counting the histories that produced
/// records, and only from two histories on).
pub fn recurring(records: &[ExperienceRecord]) -> BTreeSet<(String, String)> {
    let mut histories: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut seen: BTreeMap<(&str, &str), BTreeSet<&str>> = BTreeMap::new();
    for r in records {
        histories
            .entry(&r.repository)
            .or_default()
            .insert(&r.history);
        seen.entry((&r.repository, &r.problem))
            .or_default()
            .insert(&r.history);
    }
    seen.into_iter()
        .filter(|((repo, _), hs)| {
            let total = histories[repo].len();
            total >= 2 && hs.len() * 2 >= total
        })
        .map(|((repo, problem), _)| (repo.to_string(), problem.to_string()))
        .collect()
}

/// Sets [`ExperienceRecord::recurring`] on every record.
pub fn mark_recurring(records: &mut [ExperienceRecord]) {
    let flagged = recurring(records);
    for r in records {
        r.recurring = flagged.contains(&(r.repository.clone(), r.problem.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_rules_widen_with_the_level() {
        let same = ("acme/shop", "ci.yml");
        assert!(in_scope(
            Level::Concrete,
            "acme/shop",
            "ci.yml",
            same.0,
            same.1
        ));
        assert!(!in_scope(
            Level::Concrete,
            "acme/shop",
            "nightly.yml",
            same.0,
            same.1
        ));
        assert!(in_scope(
            Level::Strategy,
            "acme/shop",
            "nightly.yml",
            same.0,
            same.1
        ));
        assert!(!in_scope(
            Level::Strategy,
            "acme/other",
            "ci.yml",
            same.0,
            same.1
        ));
        assert!(in_scope(
            Level::Pattern,
            "acme/other",
            "x.yml",
            same.0,
            same.1
        ));
    }

    fn record(repo: &str, history: &str, problem: &str) -> ExperienceRecord {
        let pattern = Pattern {
            failure_type: FailureType::Check,
            mechanism: String::new(),
            signals: vec![],
            approach: vec![],
        };
        ExperienceRecord {
            id: stable_id(&[repo, history, problem]),
            history: history.into(),
            repository: repo.into(),
            workflow: "ci".into(),
            problem: problem.into(),
            recurring: false,
            concrete: Concrete {
                signature: problem.into(),
                failure_type: FailureType::Check,
                test: None,
                error_types: BTreeSet::new(),
                files: vec![],
                symbols: vec![],
                patch: String::new(),
                validation: String::new(),
                supporting_commits: vec![],
                fixed_at: String::new(),
                agreement: None,
                needs: vec![],
            },
            strategy: Strategy {
                check: String::new(),
                failure_type: FailureType::Check,
                validation: String::new(),
                actions: vec![],
                conditions: vec![],
                failed_attempts: 0,
            },
            pattern,
        }
    }

    #[test]
    fn a_signature_in_half_of_the_histories_is_recurring() {
        let mut records = vec![
            record("a", "h1", "ci/lint"),
            record("a", "h1", "ci/unit: t.test_x"),
            record("a", "h2", "ci/lint"),
            record("a", "h3", "ci/unit: t.test_y"),
            record("a", "h4", "ci/unit: t.test_z"),
            // Another repository's histories do not count for `a`.
            record("b", "h9", "ci/lint"),
        ];
        mark_recurring(&mut records);
        let flagged: Vec<(&str, &str)> = records
            .iter()
            .filter(|r| r.recurring)
            .map(|r| (r.repository.as_str(), r.history.as_str()))
            .collect();
        // ci/lint: 2 of 4 histories of `a`; the tests once each; `b` has one history.
        assert_eq!(flagged, vec![("a", "h1"), ("a", "h2")]);
    }

    #[test]
    fn one_history_makes_nothing_recurring() {
        let mut records = vec![record("a", "h1", "ci/lint")];
        mark_recurring(&mut records);
        assert!(!records[0].recurring);
    }

    #[test]
    fn abstraction_removes_paths_names_and_numbers() {
        let names = BTreeSet::from(["more_itertools".to_string(), "fast_pairs".to_string()]);
        let out = abstract_text(
            "ImportError: cannot import name 'fast_pairs' from 'more_itertools.recipes' (src/more_itertools/recipes.py) line 12 fast_pairs",
            &names,
        );
        assert_eq!(
            out,
            "ImportError: cannot import name <name> from <name> (<path>) line <n> <id>"
        );
    }

    fn problem(step: &str, test: Option<&str>, types: &[&str]) -> Problem {
        Problem {
            key: format!("ci/{step}"),
            job: "ci".into(),
            step: step.into(),
            command: step.into(),
            test: test.map(str::to_string),
            error_types: types.iter().map(|t| t.to_string()).collect(),
            message: String::new(),
            frames: vec![],
            files: BTreeSet::new(),
            statuses: vec![],
            first_failed: 0,
            last_failed: 0,
            disappeared_at: Some(1),
        }
    }

    #[test]
    fn failure_types_come_from_errors_checks_and_what_the_repair_touched() {
        let none = BTreeSet::new();
        let ft = |p: &Problem, paths: &[&str]| {
            let roles = paths.iter().map(|f| role(f, p)).collect();
            failure_type(p, &roles)
        };
        let lint = problem("python3 tools/lint.py", None, &[]);
        assert_eq!(failure_type(&lint, &none), FailureType::Lint);
        let deps = problem("python3 tools/check_deps.py", None, &["DependencyError"]);
        assert_eq!(
            ft(&deps, &["requirements/runtime.txt"]),
            FailureType::Dependency
        );
        let missing = problem("unit", None, &["ModuleNotFoundError"]);
        assert_eq!(ft(&missing, &["pkg/compat.py"]), FailureType::ImportError);
        assert_eq!(ft(&missing, &["requirements.txt"]), FailureType::Dependency);
        let lock = problem("build", None, &[]);
        assert_eq!(ft(&lock, &["Cargo.lock"]), FailureType::Dependency);
        let config = problem("python3 tools/check_config.py", None, &["ConfigError"]);
        assert_eq!(
            ft(&config, &["ci/settings.ini"]),
            FailureType::Configuration
        );
        let test = problem(
            "unit",
            Some("tests.test_calc.T.test_add"),
            &["AssertionError"],
        );
        assert_eq!(ft(&test, &["app/calc.py"]), FailureType::TestFailure);
        assert_eq!(role("app/calc.py", &test), Role::SourceUnderTest);
        let syntax = problem("unit", None, &["SyntaxError"]);
        assert_eq!(failure_type(&syntax, &none), FailureType::Build);
    }

    #[test]
    fn ids_are_stable_and_distinct() {
        assert_eq!(stable_id(&["a", "b"]), stable_id(&["a", "b"]));
        assert_ne!(stable_id(&["a", "b"]), stable_id(&["ab", ""]));
    }
}
