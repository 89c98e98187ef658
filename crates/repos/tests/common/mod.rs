//! Helpers shared by the integration tests: fixture histories served by
//! real git servers on loopback, and caches in temporary directories.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use tracelab_repos::{RepoCache, RepoUrl, RepositorySettings};
use tracelab_testkit::FixtureRepo;

/// A history `c1 … c4` on `main` with tag `v1` at `c2`.
pub struct History {
    pub repo: FixtureRepo,
    pub commits: Vec<String>,
}

pub fn history(commits: usize) -> History {
    let mut repo = FixtureRepo::new();
    let commits: Vec<String> = (1..=commits)
        .map(|i| repo.commit(&format!("c{i}"), &[("file.txt", &format!("version {i}\n"))]))
        .collect();
    if commits.len() >= 2 {
        repo.git(&["tag", "v1", &commits[1]]);
    }
    History { repo, commits }
}

/// A bare copy of `repo` at `base/name`, as a git server serves it.
pub fn serve(repo: &Path, base: &Path, name: &str) {
    git(
        base,
        &["clone", "-q", "--bare", repo.to_str().unwrap(), name],
    );
}

/// Runs git in `dir`, returns trimmed stdout; panics on failure.
pub use tracelab_testkit::git;

/// Settings with the cache in `cache` and every loopback URL allowed.
pub fn settings(cache: &Path) -> RepositorySettings {
    RepositorySettings {
        cache_dir: cache.display().to_string(),
        allow: vec!["127.0.0.1:*/**".into()],
        fetch_timeout_seconds: 60,
        ..Default::default()
    }
}

pub fn cache(cache: &Path) -> RepoCache {
    RepoCache::new(&settings(cache)).expect("cache")
}

pub fn url(s: &str) -> RepoUrl {
    RepoUrl::parse(s).expect("url")
}

/// Names in the cache directory ending in `.git` (complete mirrors).
pub fn mirrors(cache: &Path) -> Vec<String> {
    let mut names: Vec<String> = entries(cache)
        .into_iter()
        .filter(|n| n.ends_with(".git"))
        .collect();
    names.sort();
    names
}

pub fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|e| {
            e.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The one mirror directory in `cache`.
pub fn only_mirror(cache: &Path) -> PathBuf {
    let names = mirrors(cache);
    assert_eq!(names.len(), 1, "{names:?}");
    cache.join(&names[0])
}

/// `items` as owned strings, to compare with `Mirror::resolved`.
pub fn owned(items: &[&String]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}
