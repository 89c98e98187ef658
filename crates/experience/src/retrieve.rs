//! Retrieval for the experience agent: the target failure decomposed into
//! problems, and for each the records that may help, per level, under the
//! scope rule (L1 same repository and workflow, L2 same repository, L3
//! any), recurring problems first.
//!
//! Matching is hybrid and deterministic: the problem's **signature** (the
//! failing test's id), its **group** (the error types, for failures no test
//! names), and the **files and symbols** the failure points at. Embeddings
//! are not used yet.

use crate::model::Failure;
use crate::records::{ExperienceRecord, FailureType, Level, in_scope};
use std::collections::BTreeSet;

/// Where the failure under investigation happens.
#[derive(Debug, Clone)]
pub struct Target<'a> {
    /// As the miner recorded it (the repository's path on one machine).
    pub repository: &'a str,
    /// The CI workflow, when the failure comes from one. Without it (a
    /// local investigation of one test command), an L1 record is of the
    /// same workflow when its workflow ran that command.
    pub workflow: Option<&'a str>,
    /// The failing command.
    pub command: &'a str,
}

/// One record found for one problem.
#[derive(Debug, Clone, PartialEq)]
pub struct Retrieved<'r> {
    /// Index into the decomposed failures.
    pub problem: usize,
    pub level: Level,
    pub record: &'r ExperienceRecord,
    pub score: f64,
    /// Why it matched: `signature`, `group`, `file app.py`, `symbol window`.
    pub reasons: Vec<String>,
}

/// Records kept per problem and level.
pub const TOP_K: usize = 3;

/// Whether `record`'s workflow is the target's (see [`Target::workflow`]).
pub fn same_workflow(record: &ExperienceRecord, target: &Target<'_>) -> bool {
    match target.workflow {
        Some(w) => record.workflow == w,
        None => {
            let command = target.command.trim();
            record.concrete.validation.trim() == command
                || workflow_commands(&record.workflow).any(|c| c == command)
        }
    }
}

/// The commands of a mined workflow (`job: cmd ; cmd`).
fn workflow_commands(workflow: &str) -> impl Iterator<Item = &str> {
    let commands = workflow.split_once(": ").map(|(_, c)| c).unwrap_or("");
    commands
        .split(" ; ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
}

/// Whether `level` of `record` may be retrieved for the target.
fn scoped(level: Level, record: &ExperienceRecord, target: &Target<'_>) -> bool {
    match level {
        Level::Concrete => record.repository == target.repository && same_workflow(record, target),
        _ => in_scope(
            level,
            &record.repository,
            &record.workflow,
            target.repository,
            "",
        ),
    }
}

/// How well `record` matches `failure`, with the reasons; `None` when it
/// does not match at `level` at all.
fn score(record: &ExperienceRecord, failure: &Failure, level: Level) -> Option<(f64, Vec<String>)> {
    let c = &record.concrete;
    let mut reasons = Vec::new();
    let mut score = 0.0;
    let signature = match (&c.test, &failure.test) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    };
    let group = !c.error_types.is_empty()
        && c.error_types == failure.error_types
        && (c.test.is_none() || failure.test.is_none() || signature);
    if signature {
        score += 4.0;
        reasons.push("signature".to_string());
    } else if group {
        score += 2.0;
        reasons.push("group".to_string());
    }
    let frames: BTreeSet<&str> = failure.frames.iter().map(|(f, _)| f.as_str()).collect();
    for file in &c.files {
        if frames
            .iter()
            .any(|f| *f == file || f.ends_with(&format!("/{file}")))
        {
            score += 1.0;
            reasons.push(format!("file {file}"));
        }
    }
    for symbol in &c.symbols {
        let last = symbol.rsplit(['.', ':']).next().unwrap_or(symbol);
        if names(&failure.message, last) {
            score += 0.5;
            reasons.push(format!("symbol {last}"));
        }
    }
    let matched = match level {
        // A concrete or contextual repair is reused only for the same problem.
        Level::Concrete | Level::Strategy => signature || group,
        // A pattern transfers on its mechanism: the same error types.
        Level::Pattern => {
            signature
                || (!c.error_types.is_empty()
                    && c.error_types.is_subset(&failure.error_types)
                    && pattern_type_fits(record.pattern.failure_type, failure))
        }
    };
    matched.then_some((score, reasons))
}

/// A pattern about imports does not explain an assertion and vice versa.
fn pattern_type_fits(t: FailureType, failure: &Failure) -> bool {
    match t {
        FailureType::ImportError | FailureType::Dependency => failure
            .error_types
            .iter()
            .any(|e| e.contains("Import") || e.contains("ModuleNotFound")),
        _ => true,
    }
}

/// For each failure and level, the best [`TOP_K`] records in scope:
/// recurring first, then by score, then newest history last-mined first
/// (the order of `records` breaks ties).
pub fn retrieve<'r>(
    records: &'r [ExperienceRecord],
    failures: &[Failure],
    target: &Target<'_>,
) -> Vec<Retrieved<'r>> {
    let mut out = Vec::new();
    for (problem, failure) in failures.iter().enumerate() {
        for level in [Level::Concrete, Level::Strategy, Level::Pattern] {
            let mut found: Vec<Retrieved<'r>> = records
                .iter()
                .filter(|r| scoped(level, r, target))
                // A record retrieved at a narrower level is not repeated wider.
                .filter(|r| narrowest(level, r, target))
                .filter_map(|r| {
                    let (score, reasons) = score(r, failure, level)?;
                    Some(Retrieved {
                        problem,
                        level,
                        record: r,
                        score,
                        reasons,
                    })
                })
                .collect();
            found.sort_by(|a, b| {
                b.record
                    .recurring
                    .cmp(&a.record.recurring)
                    .then(b.score.total_cmp(&a.score))
            });
            out.extend(found.into_iter().take(TOP_K));
        }
    }
    out
}

fn narrowest(level: Level, record: &ExperienceRecord, target: &Target<'_>) -> bool {
    match level {
        Level::Concrete => true,
        Level::Strategy => !scoped(Level::Concrete, record, target),
        Level::Pattern => !scoped(Level::Strategy, record, target),
    }
}

/// Whether `text` has `name` as a whole identifier (short names like
/// `nth` included, unlike the matching words of the views).
fn names(text: &str, name: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    !name.is_empty()
        && text.match_indices(name).any(|(i, _)| {
            let before = text[..i].chars().next_back();
            let after = text[i + name.len()..].chars().next();
            !before.is_some_and(ident) && !after.is_some_and(ident)
        })
}

/// Whether an L1 record still fits the repository: every file its patch
/// changes exists (`content` answers a path's text at the revision under
/// investigation) and, when it names symbols, at least one of them is still
/// defined or used there. `Err` says why not.
pub fn applicable(
    record: &ExperienceRecord,
    created: &BTreeSet<String>,
    content: &dyn Fn(&str) -> Option<String>,
) -> Result<(), String> {
    let mut texts = Vec::new();
    for file in &record.concrete.files {
        if created.contains(file) {
            continue;
        }
        match content(file) {
            Some(t) => texts.push(t),
            None => return Err(format!("{file} no longer exists")),
        }
    }
    let symbols: Vec<&str> = record
        .concrete
        .symbols
        .iter()
        .map(|s| s.rsplit(['.', ':']).next().unwrap_or(s))
        .collect();
    if symbols.is_empty() || texts.is_empty() {
        return Ok(());
    }
    let present = texts.iter().any(|t| symbols.iter().any(|s| names(t, s)));
    if present {
        Ok(())
    } else {
        Err(format!(
            "none of its symbols ({}) is left in its files",
            symbols.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{Concrete, Pattern, Strategy};

    fn record(id: &str, repo: &str, workflow: &str, test: Option<&str>) -> ExperienceRecord {
        ExperienceRecord {
            id: id.into(),
            history: "a..b".into(),
            repository: repo.into(),
            workflow: workflow.into(),
            problem: format!("local/pytest: {}", test.unwrap_or("?")),
            recurring: false,
            concrete: Concrete {
                signature: String::new(),
                failure_type: FailureType::TestFailure,
                test: test.map(str::to_string),
                error_types: ["AssertionError".to_string()].into(),
                files: vec!["app.py".into()],
                symbols: vec!["window".into()],
                patch: String::new(),
                validation: workflow_commands(workflow).next().unwrap_or("").into(),
                supporting_commits: vec![],
                fixed_at: "b".into(),
                agreement: None,
                needs: vec![],
            },
            strategy: Strategy {
                check: "local/pytest".into(),
                failure_type: FailureType::TestFailure,
                validation: "pytest -q".into(),
                actions: vec![],
                conditions: vec![],
                failed_attempts: 0,
            },
            pattern: Pattern {
                failure_type: FailureType::TestFailure,
                mechanism: "TestFailure: AssertionError".into(),
                signals: vec![],
                approach: vec![],
            },
        }
    }

    fn failure(test: &str) -> Failure {
        Failure {
            test: Some(test.into()),
            error_types: ["AssertionError".to_string()].into(),
            message: "assert window(xs, 1, 2) == [2, 3]".into(),
            frames: vec![("probe-0/app.py".into(), 3)],
        }
    }

    const T: Target<'static> = Target {
        repository: "/r",
        workflow: None,
        command: "pytest -q",
    };

    #[test]
    fn l1_only_for_the_same_repository_and_workflow() {
        let records = vec![
            record("same", "/r", "local: pytest -q", Some("t::a")),
            record("other-workflow", "/r", "local: make check", Some("t::a")),
            record("other-repo", "/s", "local: pytest -q", Some("t::a")),
        ];
        let found = retrieve(&records, &[failure("t::a")], &T);
        let at = |id: &str| {
            found
                .iter()
                .find(|f| f.record.id == id)
                .map(|f| f.level)
                .unwrap()
        };
        assert_eq!(at("same"), Level::Concrete);
        assert_eq!(at("other-workflow"), Level::Strategy);
        assert_eq!(at("other-repo"), Level::Pattern);
        assert_eq!(found.len(), 3, "each record once, at its narrowest level");
    }

    #[test]
    fn a_given_workflow_is_compared_exactly() {
        let mut r = record("x", "/r", "ci.yml", Some("t::a"));
        r.concrete.validation = "pytest -q".into();
        assert!(
            same_workflow(&r, &T),
            "without a workflow: the record's check is the command"
        );
        let mut t = T.clone();
        t.workflow = Some("ci.yml");
        assert!(same_workflow(&r, &t));
        t.workflow = Some("release.yml");
        assert!(!same_workflow(&r, &t));
        t.workflow = None;
        t.command = "make lint";
        assert!(!same_workflow(&r, &t));
    }

    #[test]
    fn another_test_is_not_the_same_problem() {
        let records = vec![record("x", "/r", "local: pytest -q", Some("t::b"))];
        let found = retrieve(&records, &[failure("t::a")], &T);
        assert!(found.iter().all(|f| f.level == Level::Pattern), "{found:?}");
    }

    #[test]
    fn recurring_problems_are_ranked_first() {
        let mut strong = record("strong", "/r", "local: pytest -q", Some("t::a"));
        strong.concrete.symbols = vec!["window".into()];
        let mut weak = record("recurring", "/r", "local: pytest -q", Some("t::a"));
        weak.concrete.files = vec!["other.py".into()];
        weak.concrete.symbols = vec![];
        weak.recurring = true;
        let records = vec![strong, weak];
        let found = retrieve(&records, &[failure("t::a")], &T);
        assert_eq!(found[0].record.id, "recurring");
        assert!(found[1].score > found[0].score);
        assert!(found[1].reasons.contains(&"file app.py".to_string()));
    }

    #[test]
    fn applicability_needs_the_files_and_a_symbol() {
        let mut r = record("x", "/r", "w", Some("t::a"));
        let none = BTreeSet::new();
        // Short names count, as whole identifiers only.
        r.concrete.symbols = vec!["py:pkg.recipes.nth".into()];
        assert!(applicable(&r, &none, &|_| Some("def nth(xs, n):".into())).is_ok());
        assert!(applicable(&r, &none, &|_| Some("def nth_or_last(xs):".into())).is_err());
        r.concrete.symbols = vec!["window".into()];
        assert!(applicable(&r, &none, &|_| Some("def window(): pass".into())).is_ok());
        assert!(
            applicable(&r, &none, &|_| None)
                .unwrap_err()
                .contains("app.py no longer exists")
        );
        assert!(
            applicable(&r, &none, &|_| Some("def other(): pass".into()))
                .unwrap_err()
                .contains("window")
        );
        let created: BTreeSet<String> = ["app.py".to_string()].into();
        assert!(applicable(&r, &created, &|_| None).is_ok());
    }
}
