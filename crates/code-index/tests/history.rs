//! Commits, hunks mapped to touched symbols, file and symbol history, blame.

mod common;

use common::TestRepo;
use tracelab_code_index::Indexer;
use tracelab_code_index::history::{
    blame_lines, commit_changes, commits, file_history, symbol_history,
};

const V1: &str = "def parse(s):\n    return s.split(',')\n\n\ndef total(xs):\n    return sum(xs)\n\n\ndef unrelated():\n    return 0\n";
const V2: &str = "def parse(s):\n    return s.split(';')\n\n\ndef total(xs):\n    return sum(xs)\n\n\ndef unrelated():\n    return 0\n\n\ndef added():\n    return 1\n";

fn repo() -> (TestRepo, Vec<String>) {
    let repo = TestRepo::new();
    repo.write("app/core.py", V1);
    repo.write(
        "app/other.go",
        "package app\n\nfunc Other() int {\n\treturn 1\n}\n",
    );
    let c1 = repo.commit("initial import");
    repo.write("app/core.py", V2);
    let c2 = repo.commit("Use semicolons in parse\n\nAnd add a helper.");
    repo.write(
        "app/other.go",
        "package app\n\nfunc Other() int {\n\treturn 2\n}\n",
    );
    let c3 = repo.commit("bump other");
    (repo, vec![c1, c2, c3])
}

#[test]
fn commits_carry_metadata_newest_first() {
    let (repo, shas) = repo();
    let r = git2::Repository::open(repo.path()).unwrap();
    let all = commits(&r, None, 10, None).unwrap();
    assert_eq!(
        all.iter().map(|c| c.sha.clone()).collect::<Vec<_>>(),
        vec![shas[2].clone(), shas[1].clone(), shas[0].clone()]
    );
    assert_eq!(all[1].author, "Ada");
    assert_eq!(all[1].summary(), "Use semicolons in parse");
    assert_eq!(all[1].parents, vec![shas[0].clone()]);
    assert!(all[0].time > all[1].time);
    assert_eq!(commits(&r, None, 1, None).unwrap().len(), 1);
    assert_eq!(commits(&r, None, 10, Some(all[1].time)).unwrap().len(), 2);
}

#[test]
fn hunks_map_to_touched_symbols_on_both_sides() {
    let (repo, shas) = repo();
    let r = git2::Repository::open(repo.path()).unwrap();
    let indexer = Indexer::in_memory();
    let ch = commit_changes(&r, &indexer, &shas[1], None).unwrap();
    assert_eq!(ch.files.len(), 1);
    let f = &ch.files[0];
    assert_eq!((f.path(), f.status.as_str()), ("app/core.py", "modified"));
    assert_eq!(f.hunks.len(), 2);
    let names = |v: &[tracelab_code_index::history::TouchedSymbol]| {
        v.iter()
            .map(|s| s.qualified_name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&f.hunks[0].old_symbols), vec!["py:app.core.parse"]);
    assert_eq!(names(&f.hunks[0].new_symbols), vec!["py:app.core.parse"]);
    assert!(f.hunks[1].old_symbols.is_empty());
    assert_eq!(names(&f.hunks[1].new_symbols), vec!["py:app.core.added"]);
    assert_eq!(
        ch.touched_callables().into_iter().collect::<Vec<_>>(),
        vec!["py:app.core.added", "py:app.core.parse"]
    );

    // The root commit adds everything.
    let root = commit_changes(&r, &indexer, &shas[0], None).unwrap();
    assert_eq!(root.paths().len(), 2);
    assert!(root.touched_callables().contains("go:app.Other"));
}

#[test]
fn renames_are_detected() {
    let (repo, _) = repo();
    repo.git(&["mv", "app/core.py", "app/parsing.py"]);
    let sha = repo.commit("rename");
    let r = git2::Repository::open(repo.path()).unwrap();
    let ch = commit_changes(&r, &Indexer::in_memory(), &sha, None).unwrap();
    assert_eq!(ch.files.len(), 1);
    assert_eq!(ch.files[0].status, "renamed");
    assert_eq!(ch.files[0].old_path.as_deref(), Some("app/core.py"));
    assert!(ch.files[0].hunks.is_empty());
}

#[test]
fn file_and_symbol_history() {
    let (repo, shas) = repo();
    let r = git2::Repository::open(repo.path()).unwrap();
    let fh: Vec<_> = file_history(&r, None, "app/core.py", 10)
        .unwrap()
        .into_iter()
        .map(|c| c.sha)
        .collect();
    assert_eq!(fh, vec![shas[1].clone(), shas[0].clone()]);
    let indexer = Indexer::in_memory();
    let parse = symbol_history(&r, &indexer, None, "app/core.py", "py:app.core.parse", 10).unwrap();
    assert_eq!(
        parse.iter().map(|(c, _)| c.sha.clone()).collect::<Vec<_>>(),
        vec![shas[1].clone(), shas[0].clone()]
    );
    let total = symbol_history(&r, &indexer, None, "app/core.py", "py:app.core.total", 10).unwrap();
    assert_eq!(
        total.iter().map(|(c, _)| c.sha.clone()).collect::<Vec<_>>(),
        vec![shas[0].clone()]
    );
}

#[test]
fn blame_names_the_commit_of_each_frame_line() {
    let (repo, shas) = repo();
    let r = git2::Repository::open(repo.path()).unwrap();
    let b = blame_lines(&r, None, "app/core.py", &[2, 6, 13]).unwrap();
    assert_eq!(
        b.iter()
            .map(|l| (l.line, l.commit.clone()))
            .collect::<Vec<_>>(),
        vec![
            (2, shas[1].clone()),
            (6, shas[0].clone()),
            (13, shas[1].clone())
        ]
    );
    assert_eq!(b[0].summary, "Use semicolons in parse");
    // At the first commit line 2 came from the first commit.
    let old = blame_lines(&r, Some(&shas[0]), "app/core.py", &[2]).unwrap();
    assert_eq!(old[0].commit, shas[0]);
}

#[test]
fn touched_symbols_in_every_language() {
    let repo = TestRepo::new();
    let files = [
        (
            "src/lib.rs",
            "pub struct W;\n\nimpl W {\n    pub fn a(&self) -> u8 {\n        1\n    }\n\n    pub fn b(&self) -> u8 {\n        2\n    }\n}\n",
        ),
        (
            "pkg/s.go",
            "package pkg\n\nfunc A() int {\n\treturn 1\n}\n\nfunc B() int {\n\treturn 2\n}\n",
        ),
        (
            "src/main/java/p/C.java",
            "package p;\n\nclass C {\n    int a() {\n        return 1;\n    }\n\n    int b() {\n        return 2;\n    }\n}\n",
        ),
        (
            "web/m.ts",
            "export function a(): number {\n  return 1;\n}\n\nexport function b(): number {\n  return 2;\n}\n",
        ),
        (
            "web/n.js",
            "class K {\n  a() {\n    return 1;\n  }\n\n  b() {\n    return 2;\n  }\n}\n",
        ),
    ];
    for (p, c) in files {
        repo.write(p, c);
    }
    repo.commit("initial");
    for (p, c) in files {
        // Change only the second function of each file.
        let changed = c.replacen("2", "3", 1);
        repo.write(p, &changed);
    }
    let sha = repo.commit("change the b functions");
    let r = git2::Repository::open(repo.path()).unwrap();
    let ch = commit_changes(&r, &Indexer::in_memory(), &sha, None).unwrap();
    assert_eq!(
        ch.touched_callables().into_iter().collect::<Vec<_>>(),
        vec![
            "go:pkg.B",
            "java:p.C.b",
            "js:web/n#K.b",
            "rs:crate::W::b",
            "ts:web/m#b"
        ]
    );
    // Containers are touched too (the Java class, the JS class), callables filter them out.
    assert!(ch.touched_symbols().contains("java:p.C"));
}
