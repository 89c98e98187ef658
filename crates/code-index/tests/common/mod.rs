//! Small git repositories for these tests: `tracelab_testkit::FixtureRepo`
//! with a day between commits and the author the history tests expect,
//! written file by file and committed all at once.
#![allow(dead_code)]

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use tracelab_testkit::FixtureRepo;

pub struct TestRepo {
    repo: RefCell<FixtureRepo>,
    path: PathBuf,
}

impl TestRepo {
    pub fn new() -> Self {
        let repo = FixtureRepo::with_clock(1_700_000_000, 86_400);
        repo.git(&["config", "user.name", "Ada"]);
        repo.git(&["config", "user.email", "ada@example.com"]);
        let path = repo.path().to_path_buf();
        TestRepo {
            repo: RefCell::new(repo),
            path,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn cache_dir(&self) -> PathBuf {
        self.path().join(".git").join("tracelab-test-cache")
    }

    pub fn git(&self, args: &[&str]) -> String {
        self.repo.borrow().git(args)
    }

    pub fn write(&self, path: &str, content: &str) {
        self.repo.borrow().write(path, content);
    }

    pub fn remove(&self, path: &str) {
        std::fs::remove_file(self.path().join(path)).unwrap();
    }

    /// Stages everything and commits; returns the new commit id.
    pub fn commit(&self, message: &str) -> String {
        self.repo.borrow_mut().commit(message, &[])
    }
}
