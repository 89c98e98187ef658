//! Content addressing: a commit that changes one file parses exactly one file,
//! in memory and across processes (the persisted cache).

mod common;

use common::TestRepo;
use tracelab_code_index::{Indexer, index_repository};

fn repo_with_files() -> TestRepo {
    let repo = TestRepo::new();
    for i in 0..5 {
        repo.write(
            &format!("pkg/m{i}.py"),
            &format!("def f{i}():\n    return {i}\n"),
        );
    }
    repo.write("lib/x.go", "package lib\n\nfunc X() int { return 1 }\n");
    repo.write("README.md", "not code\n");
    repo.commit("initial");
    repo
}

#[test]
fn second_commit_parses_only_the_changed_file() {
    let repo = repo_with_files();
    let r = git2::Repository::open(repo.path()).unwrap();
    let indexer = Indexer::in_memory();
    let (_, first) = indexer.index(&r, None).unwrap();
    assert_eq!((first.files, first.parsed_files), (6, 6));
    assert_eq!(indexer.cache().parse_count(), 6);

    repo.write(
        "pkg/m2.py",
        "def f2():\n    return 22\n\n\ndef g2():\n    return f2()\n",
    );
    repo.commit("change m2");
    let (snap, second) = indexer.index(&r, None).unwrap();
    assert_eq!((second.parsed_files, second.cached_files), (1, 5));
    assert_eq!(indexer.cache().parse_count(), 7);
    assert!(snap.by_qualified_name("py:pkg.m2.g2").is_some());

    // Re-indexing the first commit parses nothing: its blobs are all known.
    let (_, again) = indexer.index(&r, Some("HEAD~1")).unwrap();
    assert_eq!(again.parsed_files, 0);
    assert_eq!(indexer.cache().parse_count(), 7);
}

#[test]
fn identical_blobs_at_two_paths_parse_once_and_keep_their_own_names() {
    let repo = TestRepo::new();
    repo.write("a/util.py", "def same():\n    pass\n");
    repo.write("b/util.py", "def same():\n    pass\n");
    repo.commit("twins");
    let r = git2::Repository::open(repo.path()).unwrap();
    let indexer = Indexer::in_memory();
    let (snap, summary) = indexer.index(&r, None).unwrap();
    assert_eq!((summary.files, summary.parsed_files), (2, 1));
    assert!(snap.by_qualified_name("py:a.util.same").is_some());
    assert!(snap.by_qualified_name("py:b.util.same").is_some());
}

#[test]
fn the_persisted_cache_survives_a_new_process() {
    let repo = repo_with_files();
    let cache = repo.cache_dir();
    let first = index_repository(repo.path(), None, &cache).unwrap();
    assert_eq!(first.parsed_files, 6);
    repo.write("pkg/m0.py", "def f0():\n    return -1\n");
    repo.commit("change m0");
    let second = index_repository(repo.path(), None, &cache).unwrap();
    assert_eq!(
        (second.parsed_files, second.cached_files, second.files),
        (1, 5, 6)
    );
    // The one new parse was appended to the log, not a rewritten snapshot.
    let log = std::fs::read_to_string(cache.join("blobs.log")).unwrap();
    assert_eq!(log.lines().count(), 1);
    let third = index_repository(repo.path(), Some("HEAD~1"), &cache).unwrap();
    assert_eq!(third.parsed_files, 0);
    assert_eq!(
        index_repository(repo.path(), None, &cache)
            .unwrap()
            .parsed_files,
        0
    );

    // A torn last line (a crash mid-append) costs a re-parse, not an error.
    std::fs::write(
        cache.join("blobs.log"),
        format!("{log}{{\"format\": 2, \"oid\": \"ab"),
    )
    .unwrap();
    assert_eq!(
        index_repository(repo.path(), None, &cache)
            .unwrap()
            .parsed_files,
        0
    );
    std::fs::write(cache.join("blobs.log"), "").unwrap();
    assert_eq!(
        index_repository(repo.path(), None, &cache)
            .unwrap()
            .parsed_files,
        1
    );
}
