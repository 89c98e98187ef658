//! Which repositories a caller may name: local paths under the configured
//! roots. The path is checked twice — as written (so `..` cannot climb out
//! and a path outside the roots is refused before the service touches it)
//! and after canonicalisation (so a symlink inside a root cannot point out
//! of it).

use std::path::{Component, Path, PathBuf};
use tonic::Status;

#[derive(Debug, Clone)]
pub struct Roots {
    /// Canonical root directories.
    roots: Vec<PathBuf>,
    /// The roots as configured (normalised): a request naming a path through
    /// a symlinked root (`/tmp` → `/private/tmp`) passes the first check.
    written: Vec<PathBuf>,
    allow_any: bool,
}

/// `path` with `.` dropped and `..` applied lexically (no file system).
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

impl Roots {
    /// Canonicalises `roots`; a root that does not exist is a configuration error.
    pub fn new(roots: &[PathBuf], allow_any: bool) -> anyhow::Result<Self> {
        let mut canonical = Vec::new();
        for r in roots {
            let c = std::fs::canonicalize(r)
                .map_err(|e| anyhow::anyhow!("repository root {}: {e}", r.display()))?;
            canonical.push(c);
        }
        Ok(Self {
            roots: canonical,
            written: roots.iter().map(|r| normalise(r)).collect(),
            allow_any,
        })
    }

    pub fn is_open(&self) -> bool {
        self.allow_any
    }

    pub fn is_closed(&self) -> bool {
        self.roots.is_empty() && !self.allow_any
    }

    fn inside(&self, path: &Path) -> bool {
        self.allow_any || self.roots.iter().any(|r| path.starts_with(r))
    }

    fn refused(&self, shown: &str) -> Status {
        if self.roots.is_empty() {
            Status::permission_denied(format!(
                "repository {shown} refused: no repository_roots are configured (set repository_roots, or allow_any_repository = true on a development machine)"
            ))
        } else {
            Status::permission_denied(format!(
                "repository {shown} is outside the configured repository_roots ({})",
                self.roots
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        }
    }

    /// The canonical path of the repository `requested` names, if it may be used.
    pub fn check(&self, requested: &str) -> Result<PathBuf, Status> {
        if requested.trim().is_empty() {
            return Err(Status::invalid_argument("repository is empty"));
        }
        let path = Path::new(requested);
        if !path.is_absolute() {
            return Err(Status::invalid_argument(format!(
                "repository {requested:?} must be an absolute path on the indexer's machine"
            )));
        }
        let shown = format!("{requested:?}");
        let lexical = normalise(path);
        if !self.inside(&lexical) && !self.written.iter().any(|r| lexical.starts_with(r)) {
            return Err(self.refused(&shown));
        }
        let canonical = std::fs::canonicalize(path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Status::not_found(format!("repository {shown} does not exist"))
            } else {
                Status::invalid_argument(format!("repository {shown}: {e}"))
            }
        })?;
        if !self.inside(&canonical) {
            return Err(self.refused(&format!("{shown} (resolves to {})", canonical.display())));
        }
        Ok(canonical)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    #[test]
    fn paths_outside_the_roots_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let repo = root.join("repo");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        let roots = Roots::new(std::slice::from_ref(&root), false).unwrap();
        let s = |p: &Path| p.to_str().unwrap().to_string();

        let ok = roots.check(&s(&repo)).unwrap();
        assert_eq!(ok, std::fs::canonicalize(&repo).unwrap());
        assert_eq!(
            roots
                .check(&format!("{}/./repo/../repo", s(&root)))
                .unwrap(),
            ok
        );
        for bad in [
            s(&outside),
            format!("{}/../outside", s(&root)),
            s(&root.join("link")),
            "/etc".to_string(),
        ] {
            let e = roots.check(&bad).unwrap_err();
            assert_eq!(e.code(), Code::PermissionDenied, "{bad}: {e:?}");
            assert!(e.message().contains("outside"), "{}", e.message());
        }
        assert_eq!(
            roots.check("relative/repo").unwrap_err().code(),
            Code::InvalidArgument
        );
        assert_eq!(
            roots.check(&s(&root.join("missing"))).unwrap_err().code(),
            Code::NotFound
        );
    }

    #[test]
    fn no_roots_refuse_everything_unless_any_is_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_str().unwrap();
        let closed = Roots::new(&[], false).unwrap();
        assert!(closed.is_closed());
        let e = closed.check(path).unwrap_err();
        assert_eq!(e.code(), Code::PermissionDenied);
        assert!(
            e.message().contains("no repository_roots"),
            "{}",
            e.message()
        );
        let open = Roots::new(&[], true).unwrap();
        assert!(open.check(path).is_ok());
    }

    #[test]
    fn a_missing_root_is_a_configuration_error() {
        let e = Roots::new(&[PathBuf::from("/no/such/root/anywhere")], false).unwrap_err();
        assert!(e.to_string().contains("/no/such/root"), "{e}");
    }
}
