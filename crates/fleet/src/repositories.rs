//! Where a service finds the code an event names. A request names its
//! repository by URL (`https://…`, `ssh://…`, `git@host:…`, `git://…`) or,
//! where the deployment configured local roots, by a path under one of them.
//! The API only admits what the deployment allows ([`Repositories::admit`],
//! no network); each worker — the investigator and every verifier, on
//! whatever machine — fetches what it needs into its own mirror cache
//! ([`Repositories::checkout`]), so no checkout is shared between services
//! and a job carries a URL and revisions, never a path on someone's disk.

use std::path::PathBuf;
use tracelab_domain::{Error, ErrorKind, Result};
use tracelab_repos::{Mirror, RepoCache, RepositorySettings, Source};

/// The deployment's repository policy and this process's mirror cache.
#[derive(Clone)]
pub struct Repositories {
    cache: RepoCache,
}

impl std::fmt::Debug for Repositories {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repositories").finish_non_exhaustive()
    }
}

/// A local git folder holding an event's revisions; the mirror it lives in
/// is not evicted while this is held.
#[derive(Debug)]
pub struct Checkout {
    pub path: PathBuf,
    /// The requested revisions as full commit shas (same order).
    pub resolved: Vec<String>,
    _mirror: Option<Mirror>,
}

impl Repositories {
    pub fn new(settings: &RepositorySettings) -> anyhow::Result<Self> {
        let cache =
            RepoCache::new(settings).map_err(|e| anyhow::anyhow!("repository settings: {e}"))?;
        Ok(Self { cache })
    }

    /// What a request's `repository` becomes in the stored investigation and
    /// its events: the URL as git is given it (credentials are refused, never
    /// stored), or the canonical local path. Refuses what the deployment does
    /// not allow (PermissionDenied, with the reason) and malformed names
    /// (InvalidArgument). Does not touch the network.
    pub fn admit(&self, repository: &str) -> Result<String> {
        match self.cache.classify(repository)? {
            Source::Url(url) => Ok(url.fetch_url().to_string()),
            Source::Local(path) => {
                if !path.join(".git").exists() && !is_bare(&path) {
                    return Err(Error::invalid(format!(
                        "{} is not a git repository",
                        path.display()
                    )));
                }
                Ok(path.display().to_string())
            }
        }
    }

    /// A local folder holding `revisions` of `repository` (fetched into this
    /// process's cache for a URL). An unknown revision, a repository that is
    /// gone or credentials the server refuses end the work with a reason
    /// (not retried); a server that does not answer is Unavailable (retried).
    pub async fn checkout(&self, repository: &str, revisions: &[&str]) -> Result<Checkout> {
        match self.cache.classify(repository)? {
            Source::Url(url) => {
                let mirror = self.cache.ensure(&url, revisions).await?;
                Ok(Checkout {
                    path: mirror.path.clone(),
                    resolved: mirror.resolved.clone(),
                    _mirror: Some(mirror),
                })
            }
            Source::Local(path) => Ok(Checkout {
                path,
                resolved: revisions.iter().map(|r| r.to_string()).collect(),
                _mirror: None,
            }),
        }
    }

    /// Bytes this process's mirrors take (reported as a gauge).
    pub fn cache_bytes(&self) -> u64 {
        self.cache.used_bytes()
    }
}

/// Whether a checkout failure is the investigation's (it ends with the
/// reason) rather than the infrastructure's (the message is retried).
pub fn is_final(error: &Error) -> bool {
    !matches!(error.kind, ErrorKind::Unavailable | ErrorKind::Timeout)
}

fn is_bare(path: &std::path::Path) -> bool {
    path.join("HEAD").is_file() && path.join("objects").is_dir() && path.join("refs").is_dir()
}
