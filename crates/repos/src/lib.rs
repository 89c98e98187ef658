//! Repositories by URL. TraceLab services fetch the code a request names
//! instead of reading shared checkouts; this crate owns how.
//!
//! - [`url`]: parsing and normalising repository URLs. Every spelling of a
//!   repository (`git@github.com:acme/shop.git`, `https://GitHub.com/acme/shop/`)
//!   reduces to one key, `github.com/acme/shop`, which the allow-list is
//!   matched against and the mirror is named by. URLs carrying credentials
//!   are refused, so a URL can be stored and shown as it is.
//! - [`policy`]: the deployment's allow-list of URL patterns and local roots
//!   ([`RepoCache::classify`]): PermissionDenied names the rule that refused.
//! - `credentials`: server-side credentials by URL prefix, handed to one git
//!   process through its environment (never argv, never the URL). The
//!   user's own helpers and ssh-agent only with `ambient_credentials` (the
//!   one-machine CLI).
//! - [`cache`]: bare mirrors fetched with the git CLI ([`RepoCache::ensure`]).
//!
//! # Choices, and why
//!
//! - **The git CLI, not libgit2**, for fetching: protocol v2, smart HTTP with
//!   credential helpers and the system's OpenSSH, without OpenSSL in the
//!   services. Every git runs with a scrubbed environment (PATH, HOME,
//!   proxy and CA variables only), `LC_ALL=C`, no prompts, hooks disabled,
//!   `GIT_ALLOW_PROTOCOL` limited to the URL's scheme, stdin closed, in its
//!   own process group that is killed at the deadline.
//! - **Remote-tracking mirrors, not `--mirror`**: branches land in
//!   `refs/remotes/origin/*`, tags in `refs/tags/*`; `refs/heads/*` belongs
//!   to callers (their `ai-debug/…` branches and worktrees), which a pruning
//!   `--mirror` fetch would delete. `--prune` removes branches *and tags*
//!   the server deleted (tags come from an explicit refspec), so a name
//!   never resolves to something the server no longer has.
//! - **Names resolve against the server's refs**: `main` is
//!   `refs/tags/main`, else `refs/remotes/origin/main` (git's own order);
//!   `HEAD` is the server's default branch (`remote set-head --auto`);
//!   callers' branches are never consulted.
//! - **Cache hits need no network**: when every revision is a full sha the
//!   mirror has, nothing is fetched — which also serves cached commits when
//!   the server is down or the repository is gone. Any symbolic revision
//!   fetches first: serving a stale `main` while the server is unreachable
//!   would investigate the wrong commit, so that is Unavailable (retried).
//! - **One fetch per repository at a time**: an async mutex per key in the
//!   process and a `flock` per mirror across processes. A caller that waited
//!   while another fetch finished shares that fetch's result — in the
//!   process also its failure when the server was unreachable or too slow,
//!   so queued callers do not each wait out the timeout again.
//! - **Atomic clones**: `git init --bare` into a temporary sibling, fetch,
//!   rename. A clone cut by a timeout or a dead process leaves only a
//!   `.tmp-` directory, removed on the repository's next use or at start-up.
//! - **Damage is repaired once**: after a failure that could be the mirror's
//!   (not a refused login or an unreachable server), `git fsck
//!   --connectivity-only` decides; a broken mirror is deleted and cloned
//!   again. Not on every use: fsck is slow on big repositories.
//! - **Size budget by LRU**: after each fetch, mirrors not used for longest
//!   are evicted until all fit, except the one just ensured, those being
//!   fetched, and those leased by a live [`Mirror`] in any process (a shared
//!   `flock`).
//! - **Errors** are `tracelab_domain::Error`, one line for a user, never
//!   holding a secret: URLs cannot carry one and a password is scrubbed
//!   from anything git printed.
//!
//! Metrics: `tracelab_repo_fetches_total{outcome}` (`ok` or an error kind),
//! `tracelab_repo_fetch_seconds`, `tracelab_repo_cache_hits_total`,
//! `tracelab_repo_evictions_total`.
//!
//! This crate reads the process environment only for `XDG_CACHE_HOME`/`HOME`
//! (the default cache directory) and the variables it passes on to git.

pub mod cache;
mod credentials;
pub mod git;
mod layout;
pub mod policy;
mod revision;
pub mod settings;
pub mod url;

pub use cache::{Mirror, RepoCache};
pub use credentials::{Auth, Credentials};
pub use policy::Source;
pub use settings::{CredentialSetting, RepositorySettings};
pub use tracelab_domain::{Error, ErrorKind, Result};
pub use url::{RepoUrl, Scheme, looks_like_url};
