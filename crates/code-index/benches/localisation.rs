//! Localisation benchmark: failing-test output → the functions the fix
//! changes. Each case is a small repository (initial commit, an unrelated
//! commit, the bug-introducing commit, another unrelated commit); the
//! expected functions are the callables the bug commit touched, i.e. what
//! reverting it (the fix) changes. Compares the hybrid locator with two
//! baselines: the innermost in-repository stack frame, and BM25 alone.
//! The revision window starts after the initial import (the last revision
//! where the tests passed), as CI history would give it.
//!
//! Run: `cargo bench -p tracelab-code-index --bench localisation`

#[path = "localisation/go.rs"]
mod go;
#[path = "localisation/java.rs"]
mod java;
#[path = "localisation/javascript.rs"]
mod javascript;
#[path = "localisation/python.rs"]
mod python;
#[path = "localisation/rust.rs"]
mod rust;

use regex::Regex;
use std::collections::BTreeSet;
use std::time::Instant;
use tracelab_code_index::history::commit_changes;
use tracelab_code_index::{Indexer, LocateOptions, Locator};
use tracelab_testkit::FixtureRepo;

pub struct Project {
    pub name: &'static str,
    pub files: &'static [(&'static str, &'static str)],
    /// Unrelated changes committed before and after the bug: (path, appended text).
    pub noise_before: (&'static str, &'static str),
    pub noise_after: (&'static str, &'static str),
}

pub struct Case {
    pub name: &'static str,
    pub kind: &'static str,
    pub project: &'static Project,
    /// (path, from, to): the bug, applied to the project's files.
    pub bug: &'static [(&'static str, &'static str, &'static str)],
    /// Failing output; `{L:path#snippet}` is the line of `snippet` in `path`
    /// at the buggy revision.
    pub evidence: &'static str,
}

fn stem(path: &str) -> &str {
    let file = path.rsplit('/').next().unwrap_or(path);
    file.split('.').next().unwrap_or(file)
}

struct Built {
    _fixture: FixtureRepo,
    repo: git2::Repository,
    /// The imported project: the last revision where the tests passed.
    good_commit: String,
    bug_commit: String,
    evidence: String,
}

fn build(case: &Case) -> Built {
    // Three days between commits, as a project's history would have them.
    let mut fixture = FixtureRepo::with_clock(1_750_000_000, 3 * 86_400);
    let root = fixture.path().to_path_buf();
    let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
    for (p, c) in case.project.files {
        fixture.write(p, c);
    }
    let good_commit = fixture.commit("Initial import", &[]);
    let (np, nt) = case.project.noise_before;
    fixture.write(np, &(read(np) + nt));
    fixture.commit(&format!("Add helper to {}", stem(np)), &[]);
    for (p, from, to) in case.bug {
        let text = read(p);
        assert!(text.contains(from), "{}: {from:?} not in {p}", case.name);
        fixture.write(p, &text.replacen(from, to, 1));
    }
    let bug_commit = fixture.commit(&format!("Clean up {}", stem(case.bug[0].0)), &[]);
    let (np, nt) = case.project.noise_after;
    fixture.write(np, &(read(np) + nt));
    fixture.commit(&format!("Add helper to {}", stem(np)), &[]);
    let repo = git2::Repository::open(&root).unwrap();

    let placeholder = Regex::new(r"\{L:([^#}]+)#([^}]+)\}").unwrap();
    let evidence = placeholder
        .replace_all(case.evidence, |c: &regex::Captures| {
            let text = read(&c[1]);
            let line = text
                .lines()
                .position(|l| l.contains(&c[2]))
                .unwrap_or_else(|| panic!("{}: {:?} not found in {}", case.name, &c[2], &c[1]));
            (line + 1).to_string()
        })
        .into_owned();
    Built {
        _fixture: fixture,
        repo,
        good_commit,
        bug_commit,
        evidence,
    }
}

/// 1-based rank of the first item in `expected`, if any.
fn rank(list: &[String], expected: &BTreeSet<String>) -> Option<usize> {
    list.iter()
        .position(|x| expected.contains(x))
        .map(|i| i + 1)
}

#[derive(Default)]
struct Tally {
    file: Vec<Option<usize>>,
    func: Vec<Option<usize>>,
}

impl Tally {
    fn push(&mut self, file: Option<usize>, func: Option<usize>) {
        self.file.push(file);
        self.func.push(func);
    }

    fn row(&self, name: &str) -> String {
        let n = self.func.len() as f64;
        let within =
            |v: &[Option<usize>], k: usize| v.iter().filter(|r| r.is_some_and(|r| r <= k)).count();
        let pct = |c: usize| format!("{:>2}/{} ({:>3.0}%)", c, n as usize, 100.0 * c as f64 / n);
        let mrr = self
            .func
            .iter()
            .map(|r| r.map_or(0.0, |r| 1.0 / r as f64))
            .sum::<f64>()
            / n;
        format!(
            "| {name:<22} | {} | {} | {} | {} | {mrr:.2} |",
            pct(within(&self.file, 1)),
            pct(within(&self.file, 5)),
            pct(within(&self.func, 1)),
            pct(within(&self.func, 5)),
        )
    }
}

fn show(r: Option<usize>) -> String {
    r.map_or("-".into(), |r| r.to_string())
}

fn main() {
    let cases: Vec<&Case> = python::CASES
        .iter()
        .chain(javascript::CASES)
        .chain(go::CASES)
        .chain(java::CASES)
        .chain(rust::CASES)
        .collect();
    let started = Instant::now();
    let (mut hybrid, mut frame, mut bm25) = (Tally::default(), Tally::default(), Tally::default());
    let mut commit_top1 = 0;
    let mut per_case = Vec::new();
    for case in &cases {
        let built = build(case);
        let indexer = Indexer::in_memory();
        let changes = commit_changes(&built.repo, &indexer, &built.bug_commit, None).unwrap();
        let expected = changes.touched_callables();
        assert!(
            !expected.is_empty(),
            "{}: the bug touches no function",
            case.name
        );
        let expected_files = changes.paths();
        // The regression window: commits since the last passing revision.
        let opts = LocateOptions {
            top: 50,
            since_rev: Some(built.good_commit.clone()),
            ..LocateOptions::default()
        };
        let locator = Locator::build(&built.repo, &indexer, &opts).unwrap();
        let loc = locator.locate(&built.evidence).unwrap();
        let files: Vec<String> = loc.files.iter().map(|f| f.path.clone()).collect();
        let syms: Vec<String> = loc.symbols.iter().map(|s| s.symbol.clone()).collect();
        let (h_file, h_func) = (rank(&files, &expected_files), rank(&syms, &expected));
        hybrid.push(h_file, h_func);
        let (ff, fs) = locator.baseline_innermost_frame(&built.evidence);
        let (f_file, f_func) = (rank(&ff, &expected_files), rank(&fs, &expected));
        frame.push(f_file, f_func);
        let (bf, bs) = locator.baseline_bm25(&built.evidence).unwrap();
        let (b_file, b_func) = (rank(&bf, &expected_files), rank(&bs, &expected));
        bm25.push(b_file, b_func);
        let c_rank = loc
            .commits
            .iter()
            .position(|c| c.commit == built.bug_commit)
            .map(|i| i + 1);
        if c_rank == Some(1) {
            commit_top1 += 1;
        }
        per_case.push(format!(
            "| {:<30} | {:<38} | {:>6} | {:>5} | {:>4} | {:>6} | {} |",
            case.name,
            case.kind,
            show(h_func),
            show(f_func),
            show(b_func),
            show(c_rank),
            syms.first().map_or("", String::as_str),
        ));
    }
    let n = cases.len();
    println!(
        "Localisation benchmark: {n} cases, {:.1} s\n",
        started.elapsed().as_secs_f64()
    );
    println!(
        "| method                 | file top-1   | file top-5   | function top-1 | function top-5 | MRR (function) |"
    );
    println!("|---|---|---|---|---|---|");
    for (name, t) in [
        ("hybrid (locate)", &hybrid),
        ("innermost frame", &frame),
        ("BM25 alone", &bm25),
    ] {
        println!("{}", t.row(name));
    }
    println!("\nculprit commit ranked first by locate: {commit_top1}/{n}\n");
    println!("| case | kind | hybrid | frame | bm25 | commit | hybrid's top function |");
    println!("|---|---|---|---|---|---|---|");
    for line in per_case {
        println!("{line}");
    }
}
