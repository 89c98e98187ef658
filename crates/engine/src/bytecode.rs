//! Python's bytecode caches (`__pycache__`) kept across a probe slot's
//! checkouts, as they are for `git bisect run` in one tree: without them
//! every probe recompiles every module it imports (idna's 200 KB data
//! tables take longer to compile than its tests take to run).
//!
//! Python trusts a cached module while its source's mtime (in whole
//! seconds) and size match what the cache recorded, so a same-size edit
//! written within the second the cache was made goes unseen — and a probe
//! slot moves between revisions several times a second, often by exactly
//! such an edit (`> 63` to `> 64`). So the caches of every source whose
//! content a checkout or overlay changes are deleted before it, and only
//! the caches of unchanged sources survive.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The directory name Python keeps its caches under (PEP 3147).
pub const CACHE_DIR: &str = "__pycache__";

/// Where the caches of the source `path` (repository-relative) live, and
/// the prefix their names start with (`core.` for `idna/core.py`: the
/// interpreter's tag, pytest's rewrite tag and the optimisation level
/// follow). `None` for a path that is not a Python source.
pub fn cache_of(path: &str) -> Option<(PathBuf, String)> {
    let path = Path::new(path);
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(".py")?;
    if stem.is_empty() {
        return None;
    }
    let dir = path.parent().unwrap_or(Path::new("")).join(CACHE_DIR);
    Some((dir, format!("{stem}.")))
}

/// Whether `file` (a name in a cache directory) is a cache of the source
/// whose prefix is `prefix`.
fn caches(file: &str, prefix: &str) -> bool {
    file.starts_with(prefix) && file.ends_with(".pyc")
}

/// Deletes the caches of `sources` (repository-relative, as git names
/// them) under `root`, and a cache directory left empty with the empty
/// directories above it (a directory holding only `__pycache__`, or
/// nothing, would still import as a namespace package).
///
/// A cache that exists and cannot be deleted is an error: the probe must
/// not run beside it.
pub fn forget(
    root: &Path,
    sources: impl IntoIterator<Item = impl AsRef<str>>,
) -> std::io::Result<()> {
    let mut dirs: BTreeMap<PathBuf, Vec<String>> = BTreeMap::new();
    for (dir, prefix) in sources.into_iter().filter_map(|s| cache_of(s.as_ref())) {
        dirs.entry(dir).or_default().push(prefix);
    }
    for (dir, prefixes) in dirs {
        let dir = root.join(dir);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if prefixes.iter().any(|p| caches(name, p)) {
                match std::fs::remove_file(entry.path()) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                    _ => {}
                }
            }
        }
        // Fails, as it should, while other caches remain. A directory the
        // clean emptied goes with its cache, as git leaves no empty one.
        let mut emptied = dir.as_path();
        while emptied != root && std::fs::remove_dir(emptied).is_ok() {
            let Some(parent) = emptied.parent() else {
                break;
            };
            emptied = parent;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sources_caches_are_found_beside_it_by_its_stem() {
        assert_eq!(
            cache_of("idna/core.py"),
            Some((PathBuf::from("idna/__pycache__"), "core.".to_string()))
        );
        assert_eq!(
            cache_of("setup.py"),
            Some((PathBuf::from("__pycache__"), "setup.".to_string()))
        );
        assert_eq!(cache_of("src/lib.rs"), None);
        assert_eq!(cache_of("idna/.py"), None);
        assert!(caches("core.cpython-311.pyc", "core."));
        assert!(caches(
            "test_idna.cpython-311-pytest-7.2.1.pyc",
            "test_idna."
        ));
        assert!(caches("core.cpython-311.opt-1.pyc", "core."));
        assert!(!caches("core_extra.cpython-311.pyc", "core."));
        assert!(!caches("core.cpython-311.pyc.tmp", "core."));
    }

    #[test]
    fn forgetting_a_source_deletes_only_its_caches() {
        let root = tempfile::tempdir().unwrap();
        let cache = root.path().join("pkg").join(CACHE_DIR);
        std::fs::create_dir_all(&cache).unwrap();
        for f in [
            "core.cpython-311.pyc",
            "core.cpython-311-pytest-7.2.1.pyc",
            "codec.cpython-311.pyc",
        ] {
            std::fs::write(cache.join(f), b"").unwrap();
        }
        forget(root.path(), ["pkg/core.py", "README.md", "other/gone.py"]).unwrap();
        let mut left: Vec<String> = std::fs::read_dir(&cache)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["codec.cpython-311.pyc"]);

        std::fs::write(root.path().join("pkg").join("__init__.py"), b"").unwrap();
        forget(root.path(), ["pkg/codec.py"]).unwrap();
        assert!(!cache.exists(), "an emptied cache directory goes too");
        assert!(
            root.path().join("pkg").exists(),
            "a directory with files stays"
        );
    }

    #[test]
    fn a_package_the_clean_emptied_goes_with_its_cache() {
        let root = tempfile::tempdir().unwrap();
        let cache = root.path().join("a").join("gone").join(CACHE_DIR);
        std::fs::create_dir_all(&cache).unwrap();
        std::fs::write(cache.join("mod.cpython-311.pyc"), b"").unwrap();
        forget(root.path(), ["a/gone/mod.py"]).unwrap();
        assert!(
            !root.path().join("a").exists(),
            "no namespace package is left"
        );
        assert!(root.path().exists());
    }
}
