//! The regression repositories an investigations run submits: generated
//! once with `tracelab_testkit::scenarios::linear_regression` into a
//! directory the services can read, listed with their known culprit in
//! `manifest.json` beside them, and reused by later runs of the same shape
//! (building repositories is not what is being measured).

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

const MANIFEST: &str = "manifest.json";

/// What every generated history looks like.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Shape {
    /// Commits per repository, the root included.
    pub commits: usize,
    /// How long the test sleeps before its assertion.
    pub test_seconds: f64,
}

/// One repository with its known answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Repo {
    pub path: PathBuf,
    pub test_command: String,
    /// The full sha of the commit that introduced the failure.
    pub culprit: String,
    /// Its position in the history (1-based from the root).
    pub culprit_at: usize,
}

#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    shape: Shape,
    repos: Vec<Repo>,
}

/// The repositories for a run and how many of them were made now.
#[derive(Debug)]
pub struct Prepared {
    pub repos: Vec<Repo>,
    pub generated: usize,
}

/// Where the culprit of repository `index` sits: spread over the history so
/// the culprit search does not always walk the same path.
pub fn culprit_at(index: usize, commits: usize) -> usize {
    1 + (index * 7 + 3) % (commits - 1)
}

/// Returns `count` repositories in `dir`, reusing those listed in its
/// manifest and generating the rest with `workers` threads.
pub fn prepare(dir: &Path, count: usize, shape: Shape, workers: usize) -> anyhow::Result<Prepared> {
    if shape.commits < 3 {
        bail!(
            "--commits {}: a regression history needs at least 3 commits",
            shape.commits
        );
    }
    if !(shape.test_seconds >= 0.0 && shape.test_seconds <= 600.0) {
        bail!(
            "--test-seconds {}: use a value between 0 and 600",
            shape.test_seconds
        );
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let dir = dir
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", dir.display()))?;
    let mut known = reusable(&dir, shape)?;
    let wanted: Vec<PathBuf> = (0..count).map(|i| repo_path(&dir, i)).collect();
    let missing: Vec<usize> = (0..count)
        .filter(|&i| !known.iter().any(|r| r.path == wanted[i]))
        .collect();
    let made = generate(&dir, &missing, shape, workers.max(1))?;
    let generated = made.len();
    known.extend(made);
    known.sort_by(|a, b| a.path.cmp(&b.path));
    if generated > 0 {
        write_manifest(&dir, shape, &known)?;
    }
    let repos = known
        .into_iter()
        .filter(|r| wanted.contains(&r.path))
        .collect();
    Ok(Prepared { repos, generated })
}

fn repo_path(dir: &Path, index: usize) -> PathBuf {
    dir.join(format!("repo-{index:04}"))
}

/// Repositories of the manifest that still exist; an error when the
/// directory holds another shape (a silent mix would skew the numbers).
fn reusable(dir: &Path, shape: Shape) -> anyhow::Result<Vec<Repo>> {
    let path = dir.join(MANIFEST);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let manifest: Manifest = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a loadtest manifest", path.display()))?;
    if manifest.shape != shape {
        bail!(
            "{} holds repositories with {} commits and {} s tests, not {} and {}; \
             use another --repos directory or remove this one",
            dir.display(),
            manifest.shape.commits,
            manifest.shape.test_seconds,
            shape.commits,
            shape.test_seconds
        );
    }
    Ok(manifest
        .repos
        .into_iter()
        .filter(|r| r.path.join(".git").exists())
        .collect())
}

fn write_manifest(dir: &Path, shape: Shape, repos: &[Repo]) -> anyhow::Result<()> {
    let manifest = Manifest {
        shape,
        repos: repos.to_vec(),
    };
    let tmp = dir.join(format!("{MANIFEST}.tmp"));
    std::fs::write(&tmp, serde_json::to_vec_pretty(&manifest)?)
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, dir.join(MANIFEST))
        .with_context(|| format!("cannot write the manifest in {}", dir.display()))?;
    Ok(())
}

fn generate(
    dir: &Path,
    indexes: &[usize],
    shape: Shape,
    workers: usize,
) -> anyhow::Result<Vec<Repo>> {
    let next = AtomicUsize::new(0);
    let made = Mutex::new(Vec::new());
    let failure = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..workers.min(indexes.len()) {
            scope.spawn(|| {
                while let Some(&index) = indexes.get(next.fetch_add(1, Ordering::Relaxed)) {
                    match generate_one(dir, index, shape) {
                        Ok(repo) => made.lock().expect("not poisoned").push(repo),
                        Err(e) => {
                            failure.lock().expect("not poisoned").get_or_insert(e);
                            return;
                        }
                    }
                }
            });
        }
    });
    if let Some(e) = failure.into_inner().expect("not poisoned") {
        return Err(e);
    }
    Ok(made.into_inner().expect("not poisoned"))
}

fn generate_one(dir: &Path, index: usize, shape: Shape) -> anyhow::Result<Repo> {
    let dest = repo_path(dir, index);
    if dest.exists() {
        // Left by an interrupted run (not in the manifest): made again.
        std::fs::remove_dir_all(&dest)
            .with_context(|| format!("cannot remove the stale {}", dest.display()))?;
    }
    let culprit_at = culprit_at(index, shape.commits);
    // The testkit panics when git fails (it is made for tests); say which repository.
    let scenario = std::panic::catch_unwind(|| {
        tracelab_testkit::scenarios::linear_regression(
            shape.commits,
            culprit_at,
            shape.test_seconds,
        )
    })
    .map_err(|_| {
        anyhow::anyhow!(
            "git failed while generating {} (is git installed?)",
            dest.display()
        )
    })?;
    let culprit = scenario
        .culprit
        .clone()
        .context("a linear regression always has a culprit")?;
    let test_command = scenario.test_command.clone();
    let tmp = scenario.repo.into_path();
    move_repo(&tmp, &dest)?;
    Ok(Repo {
        path: dest,
        test_command,
        culprit,
        culprit_at,
    })
}

/// Renames the fixture into place; across file systems, clones it instead.
fn move_repo(from: &Path, to: &Path) -> anyhow::Result<()> {
    if std::fs::rename(from, to).is_ok() {
        return Ok(());
    }
    let out = Command::new("git")
        .args(["clone", "-q", "--no-hardlinks"])
        .arg(from)
        .arg(to)
        .output()
        .context("cannot run git clone")?;
    let _ = std::fs::remove_dir_all(from);
    if !out.status.success() {
        bail!(
            "git clone into {} failed: {}",
            to.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn culprits_stay_inside_the_history() {
        for commits in 3..40 {
            for i in 0..100 {
                let at = culprit_at(i, commits);
                assert!((1..commits).contains(&at), "{i} {commits} {at}");
            }
        }
        let spread: std::collections::BTreeSet<_> = (0..24).map(|i| culprit_at(i, 16)).collect();
        assert!(spread.len() >= 10, "{spread:?}");
    }

    #[test]
    fn bad_shapes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let shape = |commits, test_seconds| Shape {
            commits,
            test_seconds,
        };
        let e = prepare(dir.path(), 1, shape(2, 0.0), 1).unwrap_err();
        assert!(e.to_string().contains("at least 3"), "{e}");
        let e = prepare(dir.path(), 1, shape(8, f64::NAN), 1).unwrap_err();
        assert!(e.to_string().contains("between 0 and 600"), "{e}");
    }

    #[test]
    fn generates_then_reuses_and_refuses_another_shape() {
        let dir = tempfile::tempdir().unwrap();
        let shape = Shape {
            commits: 4,
            test_seconds: 0.0,
        };
        let first = prepare(dir.path(), 2, shape, 2).unwrap();
        assert_eq!(first.generated, 2);
        for repo in &first.repos {
            let out = Command::new("git")
                .arg("-C")
                .arg(&repo.path)
                .args(["rev-list", "--count", "HEAD"])
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "4");
            let log = Command::new("git")
                .arg("-C")
                .arg(&repo.path)
                .args(["log", "--format=%s", "-1"])
                .arg(&repo.culprit)
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&log.stdout).trim(),
                "Speed up add for small numbers"
            );
        }
        // One more: the first two are reused, one is made.
        let second = prepare(dir.path(), 3, shape, 2).unwrap();
        assert_eq!(second.generated, 1);
        assert_eq!(&second.repos[..2], &first.repos[..]);
        // Fewer than are there: the first ones, nothing made, the rest kept for later.
        let fewer = prepare(dir.path(), 1, shape, 2).unwrap();
        assert_eq!((fewer.generated, &fewer.repos[..]), (0, &first.repos[..1]));
        assert_eq!(prepare(dir.path(), 3, shape, 2).unwrap().generated, 0);
        let e = prepare(
            dir.path(),
            3,
            Shape {
                commits: 5,
                ..shape
            },
            1,
        )
        .unwrap_err();
        assert!(e.to_string().contains("another --repos"), "{e}");
    }
}
