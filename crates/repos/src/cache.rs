//! The mirror cache: one bare mirror per repository key, fetched with the
//! git CLI when a request needs revisions it does not hold yet.
//!
//! A request travels like this: [`RepoCache::ensure`] takes the
//! repository's in-process mutex (so concurrent tasks queue instead of
//! fetching in parallel), then its file lock (so processes sharing the
//! cache directory do too), then either answers from the mirror — every
//! revision a full sha it already has: no network — or fetches, resolves
//! each revision to a commit, takes a lease on the mirror, releases the
//! locks and evicts least-recently-used mirrors beyond the size budget.

use crate::credentials::Credentials;
use crate::git::{self, Failure, Git};
use crate::layout::{self, Slot};
use crate::policy::{Policy, Source};
use crate::revision::Revision;
use crate::settings::RepositorySettings;
use crate::url::RepoUrl;
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use tracelab_domain::{Error, ErrorKind, Result};

/// The deployment's repository policy and this process's mirror cache.
/// Cheap to clone; clones share state.
#[derive(Clone)]
pub struct RepoCache {
    inner: Arc<Inner>,
}

struct Inner {
    dir: PathBuf,
    max_bytes: u64,
    timeout: Duration,
    policy: Policy,
    credentials: Credentials,
    git: Git,
    /// One async mutex per repository key: a fetch at a time, waiters
    /// queued. It guards the last fetch's failure when the server was
    /// unreachable or slow, which the callers that waited for it share
    /// instead of each waiting out another timeout.
    busy: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Option<Unreachable>>>>>,
}

impl std::fmt::Debug for RepoCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RepoCache")
            .field("dir", &self.inner.dir)
            .finish_non_exhaustive()
    }
}

/// A bare mirror holding the requested revisions. While it is alive its
/// lease keeps the mirror from being evicted (by any process).
#[derive(Debug)]
pub struct Mirror {
    /// For `git -C PATH worktree add`, `git rev-parse`, libgit2 `Repository::open`.
    pub path: PathBuf,
    /// The requested revisions as full commit shas, in the order asked.
    pub resolved: Vec<String>,
    /// Whether this call talked to the server.
    pub fetched: bool,
    _lease: File,
}

/// A fetch that failed because the server was unreachable or too slow.
struct Unreachable {
    at: SystemTime,
    error: Error,
}

/// A failure, and whether the mirror itself may be damaged (worth a health check).
struct Failed {
    error: Error,
    suspect: bool,
}

impl From<Error> for Failed {
    fn from(error: Error) -> Self {
        Self {
            error,
            suspect: false,
        }
    }
}

impl RepoCache {
    /// Creates the cache directory, validates the allow-list patterns, local
    /// roots and credential settings (an SSH key without known_hosts is
    /// InvalidArgument), and removes leftovers of clones a dead process cut.
    pub fn new(settings: &RepositorySettings) -> Result<Self> {
        if settings.fetch_timeout_seconds == 0 {
            return Err(Error::invalid(
                "fleet.repositories.fetch_timeout_seconds must be at least 1",
            ));
        }
        let dir = if settings.cache_dir.is_empty() {
            default_cache_dir()?
        } else {
            PathBuf::from(&settings.cache_dir)
        };
        let dir = std::fs::create_dir_all(&dir)
            .and_then(|()| dir.canonicalize())
            .map_err(|e| {
                Error::invalid(format!(
                    "fleet.repositories.cache_dir: cannot create {}: {e}",
                    dir.display()
                ))
            })?;
        let policy = Policy::new(&settings.allow, &settings.local_roots)?;
        let credentials = Credentials::new(&settings.credentials, settings.ambient_credentials)?;
        layout::sweep_all(&dir);
        Ok(Self {
            inner: Arc::new(Inner {
                git: Git::from_process_env(&dir, settings.ambient_credentials),
                dir,
                max_bytes: settings.cache_max_bytes,
                timeout: Duration::from_secs(settings.fetch_timeout_seconds),
                policy,
                credentials,
                busy: Mutex::default(),
            }),
        })
    }

    /// Decides what `repository` names: a URL allowed by `allow` →
    /// [`Source::Url`]; a local path under `local_roots` →
    /// [`Source::Local`]; a URL not allowed or a path outside the roots →
    /// PermissionDenied saying which rule applies; malformed →
    /// InvalidArgument. No network.
    pub fn classify(&self, repository: &str) -> Result<Source> {
        self.inner.policy.classify(repository)
    }

    /// The cache directory (canonical).
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Bytes used by all mirrors (walks the cache directory).
    pub fn used_bytes(&self) -> u64 {
        layout::used_bytes(&self.inner.dir)
    }

    /// A bare mirror of `url` holding every revision in `revisions` (full or
    /// short shas, branch or tag names, `HEAD`, expressions like `main~3`),
    /// fetched if needed, each resolved to a full commit sha (same order).
    ///
    /// Full shas already in the mirror need no network (a cache hit), even
    /// when the server is down or the repository is gone. Anything else
    /// fetches first, so a branch name means where the branch is now; with
    /// the server unreachable that is an error, not a stale answer.
    #[tracing::instrument(skip_all, fields(repository = %url.key()))]
    pub async fn ensure(&self, url: &RepoUrl, revisions: &[&str]) -> Result<Mirror> {
        let asked = SystemTime::now();
        let revisions = revisions
            .iter()
            .map(|r| Revision::parse(r))
            .collect::<Result<Vec<_>>>()?;
        self.inner.policy.check_url(url)?;
        let inner = &*self.inner;
        let slot = Slot::new(&inner.dir, url);

        let mutex = {
            let mut busy = inner.busy.lock().expect("busy map");
            busy.entry(url.key().to_string()).or_default().clone()
        };
        let mut queued = mutex.lock().await;
        let lock_path = slot.lock_path();
        let locked = tokio::task::spawn_blocking(move || layout::lock(&lock_path))
            .await
            .map_err(|e| Error::internal(format!("mirror lock task stopped: {e}")))?
            .map_err(|e| {
                Error::unavailable(format!("cannot lock the mirror of {url}: {e}")).with_source(e)
            })?;
        slot.sweep();

        let mut session = Session::new(inner, url, &slot);
        session.unreachable = queued
            .as_ref()
            .filter(|last| last.at >= asked)
            .map(|last| last.error.clone());
        let outcome = session.ensure(&revisions, asked).await;
        *queued = match &outcome {
            Err(f) if f.error.kind.is_transient() => Some(Unreachable {
                at: SystemTime::now(),
                error: f.error.clone(),
            }),
            _ => None,
        };
        let (resolved, fetched) = match outcome {
            Ok(done) => done,
            Err(failed) => {
                // Only a failure that could be the mirror's earns the (slow)
                // health check, and a damaged mirror one fresh clone.
                if !(failed.suspect && slot.mirror.exists() && session.is_broken().await) {
                    return Err(failed.error);
                }
                tracing::warn!(mirror = %slot.mirror.display(), error = %failed.error, "the mirror is damaged; cloning it again");
                slot.discard();
                Session::new(inner, url, &slot)
                    .ensure(&revisions, asked)
                    .await
                    .map_err(|f| f.error)?
            }
        };
        let lease = layout::lease(&slot.lease_path()).map_err(|e| {
            Error::unavailable(format!("cannot lease the mirror of {url}: {e}")).with_source(e)
        })?;
        layout::touch_used(&slot.mirror);
        // Others may fetch now; the lease keeps this mirror from eviction.
        drop(locked);
        drop(queued);

        if fetched {
            let (dir, budget, keep) = (inner.dir.clone(), inner.max_bytes, slot.mirror.clone());
            let evicted = tokio::task::spawn_blocking(move || layout::evict(&dir, budget, &keep))
                .await
                .unwrap_or_default();
            for mirror in &evicted {
                tracing::info!(mirror = %mirror.display(), "evicted a least-recently-used mirror");
            }
            metrics::counter!("tracelab_repo_evictions_total").increment(evicted.len() as u64);
        } else {
            metrics::counter!("tracelab_repo_cache_hits_total").increment(1);
        }
        Ok(Mirror {
            path: slot.mirror.clone(),
            resolved,
            fetched,
            _lease: lease,
        })
    }
}

/// `$XDG_CACHE_HOME/tracelab/repos`, else `~/.cache/tracelab/repos`.
fn default_cache_dir() -> Result<PathBuf> {
    let xdg = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .map(|h| h.join(".cache"));
    xdg.or(home)
        .map(|base| base.join("tracelab").join("repos"))
        .ok_or_else(|| {
            Error::invalid(
                "fleet.repositories.cache_dir is empty and neither XDG_CACHE_HOME nor HOME is set",
            )
        })
}

/// One `ensure` with the repository's locks held.
struct Session<'a> {
    inner: &'a Inner,
    url: &'a RepoUrl,
    slot: &'a Slot,
    /// Clone or fetch, lookups included, end by this time.
    deadline: Instant,
    /// Why a fetch that ended while this call waited could not reach the
    /// server: answer with that rather than try again at once.
    unreachable: Option<Error>,
}

impl<'a> Session<'a> {
    fn new(inner: &'a Inner, url: &'a RepoUrl, slot: &'a Slot) -> Self {
        Self {
            inner,
            url,
            slot,
            deadline: Instant::now() + inner.timeout,
            unreachable: None,
        }
    }

    /// The resolved revisions and whether the server was asked.
    async fn ensure(
        &self,
        revisions: &[Revision],
        asked: SystemTime,
    ) -> Result<(Vec<String>, bool), Failed> {
        let mirror = &self.slot.mirror;
        if !mirror.join("HEAD").is_file() {
            if let Some(error) = &self.unreachable {
                return Err(error.clone().into());
            }
            if mirror.exists() {
                self.slot.discard();
            }
            self.first_clone().await?;
            return Ok((self.resolve(revisions).await?, true));
        }
        // Known full shas need nothing from the server; and a fetch that
        // finished while this call waited for the lock is as good as its own.
        let worth_a_look =
            revisions.iter().all(|r| r.full_sha) || layout::fetched_since(mirror, asked);
        if worth_a_look
            && let Ok(found) = self.lookup(revisions).await
            && let Some(all) = found.into_iter().collect::<Option<Vec<_>>>()
        {
            return Ok((all, false));
        }
        if let Some(error) = &self.unreachable {
            return Err(error.clone().into());
        }
        self.fetch(mirror).await?;
        Ok((self.resolve(revisions).await?, true))
    }

    /// Clones into a temporary sibling and renames it into place once
    /// fetched, so a cut clone never leaves a mirror that looks complete.
    async fn first_clone(&self) -> Result<(), Failed> {
        let temp = self.slot.temp_path();
        let name = temp
            .file_name()
            .expect("temp name")
            .to_string_lossy()
            .into_owned();
        let made = async {
            self.local(
                &self.inner.dir,
                &["init", "--bare", "-q", "--template=", &name],
                None,
            )
            .await?;
            self.local(
                &temp,
                &["remote", "add", "origin", self.url.fetch_url()],
                None,
            )
            .await?;
            self.local(
                &temp,
                &[
                    "config",
                    "--add",
                    "remote.origin.fetch",
                    "+refs/tags/*:refs/tags/*",
                ],
                None,
            )
            .await?;
            self.fetch_origin(&temp).await?;
            std::fs::rename(&temp, &self.slot.mirror).map_err(|e| {
                Error::internal(format!(
                    "cannot move the new mirror of {} into place: {e}",
                    self.url
                ))
            })?;
            Ok::<_, Failed>(())
        }
        .await;
        if made.is_err() {
            layout::remove(&temp);
        }
        made
    }

    /// Fetches into an existing mirror, first pointing `origin` at the URL
    /// asked for now (another spelling of the key may have created it) and
    /// clearing ref locks a killed fetch left (the lock is held, so no fetch
    /// of ours is running; callers only write `refs/heads`).
    async fn fetch(&self, mirror: &Path) -> Result<(), Failed> {
        let origin = self
            .local(mirror, &["config", "--get", "remote.origin.url"], None)
            .await
            .unwrap_or_default();
        if origin.trim() != self.url.fetch_url() {
            self.local(
                mirror,
                &["remote", "set-url", "origin", self.url.fetch_url()],
                None,
            )
            .await?;
        }
        for area in ["refs/remotes/origin", "refs/tags"] {
            remove_lock_files(&mirror.join(area));
        }
        self.fetch_origin(mirror).await
    }

    /// `git fetch --prune origin`: branches and tags as the server has them
    /// now (a force-pushed branch moves, a deleted one goes); callers'
    /// `refs/heads/*` are outside the refspecs and never touched.
    async fn fetch_origin(&self, dir: &Path) -> Result<(), Failed> {
        let started = Instant::now();
        let result = self
            .network(dir, &["fetch", "--prune", "origin"], "fetching")
            .await;
        let outcome = match &result {
            Ok(_) => "ok",
            Err(f) => f.error.kind.name(),
        };
        metrics::counter!("tracelab_repo_fetches_total", "outcome" => outcome).increment(1);
        metrics::histogram!("tracelab_repo_fetch_seconds").record(started.elapsed().as_secs_f64());
        tracing::info!(
            seconds = started.elapsed().as_secs_f64(),
            outcome,
            "fetched"
        );
        result?;
        layout::mark_fetched(dir);
        Ok(())
    }

    /// Each revision as a full commit sha, after a fetch: `HEAD` follows
    /// the server's default branch; a full sha no branch or tag holds is
    /// fetched by itself (protocol v2 servers allow it).
    async fn resolve(&self, revisions: &[Revision]) -> Result<Vec<String>, Failed> {
        let mirror = &self.slot.mirror;
        if revisions.iter().any(|r| r.wants_head) {
            match self
                .network(
                    mirror,
                    &["remote", "set-head", "origin", "--auto"],
                    "asking for the default branch of",
                )
                .await
            {
                Err(f)
                    if f.error.kind.is_transient()
                        || f.error.kind == ErrorKind::PermissionDenied =>
                {
                    return Err(f);
                }
                _ => {}
            }
        }
        let mut found = self.lookup(revisions).await?;
        let missing: Vec<&str> = revisions
            .iter()
            .zip(&found)
            .filter(|(r, f)| r.full_sha && f.is_none())
            .map(|(r, _)| r.text.as_str())
            .collect();
        if !missing.is_empty() {
            let mut args = vec!["fetch", "origin"];
            args.extend(missing);
            match self.network(mirror, &args, "fetching commits from").await {
                Ok(_) => found = self.lookup(revisions).await?,
                Err(f)
                    if f.error.kind.is_transient()
                        || f.error.kind == ErrorKind::PermissionDenied =>
                {
                    return Err(f);
                }
                // The server does not have it or will not give it by sha.
                Err(_) => {}
            }
        }
        revisions
            .iter()
            .zip(found)
            .map(|(r, sha)| {
                sha.ok_or_else(|| Failed {
                    error: Error::not_found(format!(
                        "the revision {} is not in {} (no such commit, branch or tag)",
                        r.text, self.url
                    )),
                    suspect: true,
                })
            })
            .collect()
    }

    /// Looks every revision's candidates up in one `git cat-file` process;
    /// `None` where none names a commit.
    async fn lookup(&self, revisions: &[Revision]) -> Result<Vec<Option<String>>, Failed> {
        let names: Vec<(usize, &str)> = revisions
            .iter()
            .enumerate()
            .flat_map(|(i, r)| r.candidates.iter().map(move |c| (i, c.as_str())))
            .collect();
        let mut found = vec![None; revisions.len()];
        if names.is_empty() {
            return Ok(found);
        }
        let input: String = names
            .iter()
            .map(|(_, n)| format!("{n}^{{commit}}\n"))
            .collect();
        let out = self
            .local(
                &self.slot.mirror,
                &["cat-file", "--batch-check=%(objectname) %(objecttype)"],
                Some(input.into_bytes()),
            )
            .await?;
        let mut ambiguous = vec![false; revisions.len()];
        for ((i, _), line) in names.iter().zip(out.lines()) {
            match line.rsplit_once(' ') {
                Some((sha, "commit")) if found[*i].is_none() => found[*i] = Some(sha.to_string()),
                Some((_, "ambiguous")) => ambiguous[*i] = true,
                _ => {}
            }
        }
        if let Some(i) = (0..revisions.len()).find(|&i| found[i].is_none() && ambiguous[i]) {
            return Err(Error::invalid(format!(
                "the revision {} is ambiguous in {}; give more characters of the sha",
                revisions[i].text, self.url
            ))
            .into());
        }
        Ok(found)
    }

    /// Whether the mirror is damaged: not a repository any more, or objects
    /// its refs need are missing or corrupt. Slow on big repositories, so
    /// only asked after a failure that could be the mirror's.
    async fn is_broken(&self) -> bool {
        let deadline = Instant::now() + self.inner.timeout;
        let run = |args: &'static [&'static str]| {
            self.inner
                .git
                .run(&self.slot.mirror, args, &[], None, deadline)
        };
        if run(&["rev-parse", "--git-dir"]).await.is_err() {
            return true;
        }
        let fsck = run(&[
            "fsck",
            "--connectivity-only",
            "--no-dangling",
            "--no-progress",
        ])
        .await;
        matches!(fsck, Err(Failure::Exit(_)))
    }

    /// A git command that stays on this machine.
    async fn local(
        &self,
        dir: &Path,
        args: &[&str],
        stdin: Option<Vec<u8>>,
    ) -> Result<String, Failed> {
        self.inner
            .git
            .run(dir, args, &[], stdin, self.deadline)
            .await
            .map_err(|failure| {
                let error = match failure {
                    Failure::Timeout => Error::timeout(format!(
                        "git {} in the mirror of {} took longer than {} s (fleet.repositories.fetch_timeout_seconds)",
                        args[0],
                        self.url,
                        self.inner.timeout.as_secs()
                    )),
                    Failure::Start(e) => Error::unavailable(format!("cannot run git: {e}")).with_source(e),
                    Failure::Exit(stderr) => Error::internal(format!(
                        "git {} in the mirror of {} failed: {}",
                        args[0],
                        self.url,
                        git::last_line(&stderr, None)
                    )),
                };
                Failed {
                    suspect: error.kind == ErrorKind::Internal,
                    error,
                }
            })
    }

    /// A git command that talks to the server, with the credentials
    /// configured for the URL.
    async fn network(&self, dir: &Path, args: &[&str], what: &str) -> Result<String, Failed> {
        let auth = self.inner.credentials.auth(self.url)?;
        self.inner
            .git
            .run(dir, args, &auth.env, None, self.deadline)
            .await
            .map_err(|failure| {
                let error = git::network_error(
                    what,
                    self.url,
                    failure,
                    auth.secret.as_deref(),
                    self.inner.timeout,
                );
                Failed {
                    suspect: error.kind == ErrorKind::Internal,
                    error,
                }
            })
    }
}

/// Removes `*.lock` files under `dir` (ref locks of a killed fetch).
fn remove_lock_files(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            remove_lock_files(&path);
        } else if path.extension().is_some_and(|x| x == "lock") {
            tracing::warn!(lock = %path.display(), "removing a ref lock a killed fetch left");
            let _ = std::fs::remove_file(&path);
        }
    }
}
