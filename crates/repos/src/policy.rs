//! What a request may name: URLs matching the deployment's allow-list, and
//! local paths under its local roots. Everything else is refused with the
//! rule that refused it, so a user can tell a typo from a policy.

use crate::url::{RepoUrl, looks_like_url, redact};
use std::path::{Component, Path, PathBuf};
use tracelab_domain::{Error, Result};

/// What a request's `repository` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A URL the allow-list admits; fetch it into the cache.
    Url(RepoUrl),
    /// A local repository under a configured root (canonical path).
    Local(PathBuf),
}

/// The allow-list and local roots, validated.
#[derive(Debug, Clone)]
pub(crate) struct Policy {
    allow: Vec<String>,
    roots: Vec<Root>,
}

#[derive(Debug, Clone)]
struct Root {
    /// As configured, made absolute and `..`-free.
    lexical: PathBuf,
    /// With symlinks resolved.
    canonical: PathBuf,
}

impl Policy {
    pub(crate) fn new(allow: &[String], local_roots: &[String]) -> Result<Self> {
        let allow = allow
            .iter()
            .map(|p| normalise_pattern(p))
            .collect::<Result<Vec<_>>>()?;
        let roots = local_roots
            .iter()
            .map(|r| {
                let path = Path::new(r);
                if !path.is_absolute() {
                    return Err(Error::invalid(format!(
                        "fleet.repositories.local_roots: {r:?} is not an absolute path"
                    )));
                }
                let canonical = path.canonicalize().map_err(|e| {
                    Error::invalid(format!("fleet.repositories.local_roots: {r:?}: {e}"))
                })?;
                Ok(Root {
                    lexical: lexical(path),
                    canonical,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { allow, roots })
    }

    pub(crate) fn classify(&self, repository: &str) -> Result<Source> {
        if looks_like_url(repository) {
            let url = RepoUrl::parse(repository)?;
            self.check_url(&url)?;
            return Ok(Source::Url(url));
        }
        self.check_local(repository).map(Source::Local)
    }

    pub(crate) fn check_url(&self, url: &RepoUrl) -> Result<()> {
        if self.allow.is_empty() {
            return Err(Error::permission_denied(format!(
                "{url} is not allowed: this deployment fetches no repository URLs (fleet.repositories.allow is empty)"
            )));
        }
        let with_port = url.key_with_port();
        if self.allow.iter().any(|p| {
            glob(p.as_bytes(), url.key().as_bytes()) || glob(p.as_bytes(), with_port.as_bytes())
        }) {
            return Ok(());
        }
        Err(Error::permission_denied(format!(
            "{url} is not allowed: its key {} matches none of fleet.repositories.allow {:?}",
            url.key(),
            self.allow
        )))
    }

    fn check_local(&self, repository: &str) -> Result<PathBuf> {
        if repository.is_empty() {
            return Err(Error::invalid("the repository is empty"));
        }
        if repository.chars().any(char::is_control) {
            return Err(Error::invalid(
                "the repository path contains control characters",
            ));
        }
        let shown = redact(repository);
        // A service resolving a relative path against its own working
        // folder would surprise everyone; callers send absolute paths.
        if !std::path::Path::new(repository).is_absolute() {
            return Err(Error::invalid(format!(
                "{shown} must be an absolute path on the service's machine, or a repository URL"
            )));
        }
        if self.roots.is_empty() {
            return Err(Error::permission_denied(format!(
                "{shown} is a local path, and this deployment allows none (fleet.repositories.local_roots is empty); name the repository by URL"
            )));
        }
        let outside = || {
            let roots: Vec<_> = self
                .roots
                .iter()
                .map(|r| r.lexical.display().to_string())
                .collect();
            Error::permission_denied(format!(
                "{shown} is outside the local roots this deployment allows (fleet.repositories.local_roots: {roots:?})"
            ))
        };
        let absolute =
            std::path::absolute(repository).map_err(|e| Error::invalid(format!("{shown}: {e}")))?;
        let named = lexical(&absolute);
        if !self
            .roots
            .iter()
            .any(|r| named.starts_with(&r.lexical) || named.starts_with(&r.canonical))
        {
            return Err(outside());
        }
        let canonical = named
            .canonicalize()
            .map_err(|e| Error::not_found(format!("{shown}: {e}")).with_source(e))?;
        if !self
            .roots
            .iter()
            .any(|r| canonical.starts_with(&r.canonical))
        {
            return Err(outside());
        }
        Ok(canonical)
    }
}

/// A pattern as keys are spelled: host part lower-cased, no trailing `/`
/// or `.git`.
fn normalise_pattern(pattern: &str) -> Result<String> {
    let bad = |why: &str| {
        Err(Error::invalid(format!(
            "fleet.repositories.allow: {pattern:?} {why}"
        )))
    };
    if pattern.is_empty() {
        return bad("is empty");
    }
    if pattern.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return bad("contains whitespace");
    }
    if pattern.contains("://") {
        return bad("has a scheme; patterns match host[:port]/path (e.g. \"github.com/acme/*\")");
    }
    let (host, path) = pattern.split_at(pattern.find('/').unwrap_or(pattern.len()));
    let path = path.trim_end_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    Ok(format!("{}{path}", host.to_ascii_lowercase()))
}

/// Glob match: `**` matches anything, `*` anything but `/`.
fn glob(pattern: &[u8], s: &[u8]) -> bool {
    match pattern {
        [] => s.is_empty(),
        [b'*', b'*', rest @ ..] => (0..=s.len()).any(|i| glob(rest, &s[i..])),
        [b'*', rest @ ..] => {
            for i in 0..=s.len() {
                if glob(rest, &s[i..]) {
                    return true;
                }
                if s.get(i) == Some(&b'/') {
                    break;
                }
            }
            false
        }
        [c, rest @ ..] => s.first() == Some(c) && glob(rest, &s[1..]),
    }
}

/// `path` with `.` and `..` resolved by name, not by the file system.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, key: &str) -> bool {
        glob(
            normalise_pattern(pattern).unwrap().as_bytes(),
            key.as_bytes(),
        )
    }

    #[test]
    fn globs() {
        let table = [
            ("github.com/acme/*", "github.com/acme/shop", true),
            ("github.com/acme/*", "github.com/acme/shop/sub", false),
            ("github.com/acme/*", "github.com/acme-evil/shop", false),
            ("github.com/acme/*", "github.com.evil.io/acme/shop", false),
            ("GitHub.com/acme/*/", "github.com/acme/shop", true),
            ("github.com/acme/shop.git", "github.com/acme/shop", true),
            ("git.example.com/**", "git.example.com/a/b/c", true),
            ("git.example.com/**", "git.example.com:8443/a", false),
            ("127.0.0.1:*/**", "127.0.0.1:9418/x/y", true),
            ("127.0.0.1:*/**", "127.0.0.2:9418/x", false),
            ("*.example.com/team/*", "git.example.com/team/x", true),
            ("*.example.com/team/*", "a.b/c.example.com/team/x", false),
            ("**", "anything/at/all", true),
        ];
        for (pattern, key, expected) in table {
            assert_eq!(matches(pattern, key), expected, "{pattern} vs {key}");
        }
    }

    #[test]
    fn bad_patterns_are_refused() {
        for p in ["", "https://github.com/*", "a b/*"] {
            assert!(Policy::new(&[p.to_string()], &[]).is_err(), "{p:?}");
        }
    }

    #[test]
    fn lexical_resolution() {
        assert_eq!(lexical(Path::new("/a/b/../c/./d")), PathBuf::from("/a/c/d"));
        assert_eq!(lexical(Path::new("/a/../../etc")), PathBuf::from("/etc"));
    }
}
