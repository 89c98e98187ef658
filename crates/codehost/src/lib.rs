//! Opens the draft pull request for an approved diagnosis.
//!
//! ```text
//! open_draft_pull_request(pusher, host, request)
//!   1. check the request (branch names, project path, labels): nothing sent yet
//!   2. push the verified branch            (git CLI, deployment credentials)
//!   3. find the pull request for the branch, else create it as a draft
//!   4. add the labels it lacks
//! ```
//!
//! - [`body`]: the description a reviewer reads, rendered from a
//!   [`Report`](tracelab_domain::report::Report), scrubbed of secrets.
//! - [`Pusher`]: the push (module `push`).
//! - [`CodeHost`]: GitHub REST v3 or GitLab REST v4 (modules `github`,
//!   `gitlab`; shared HTTP and error mapping in `http`).
//!
//! # Choices, and why
//!
//! - **Push first, and the PR only after it succeeded.** A pull request
//!   needs its branch on the server; if the push fails, nothing exists on
//!   the host to clean up.
//! - **Idempotent at every step, so a retry is the recovery.** The push
//!   is a no-op when the branch is there at the same commit; the PR is
//!   looked up by branch (in any state) before one is created, and a
//!   "already exists" answer from a racing attempt leads to the existing
//!   one; only missing labels are added. After any failure — a 500 from the
//!   host, a timeout after the host created the PR — calling again
//!   finishes the job and creates nothing twice. No local state is kept:
//!   the host is the record.
//! - **Never overwrite, never merge.** The branch is pushed without
//!   `--force` (nor a lease): a branch of the same name at another commit
//!   is a Conflict naming both commits. The crate has no merge call at all.
//! - **The git CLI with `tracelab-repos`' credentials**, not the API's
//!   token: the push authenticates exactly as the fetch did (HTTPS through
//!   a credential helper fed from the environment, SSH with a pinned
//!   known_hosts), nothing secret on argv or in the URL, prompts off, hooks
//!   off, a scrubbed environment and a deadline killing the process group
//!   (`tracelab_repos::Credentials` chooses them, as for every fetch).
//! - **The API token is a [`Token`]**, which prints as `***`, from a file
//!   read at every request (rotation without restart), sent in one header
//!   marked sensitive, over https only (http only on loopback), with
//!   redirects off so it cannot follow a redirect elsewhere. Anything the
//!   host says is scrubbed of it before it is quoted.
//! - **One error vocabulary**: `tracelab_domain::Error`. 401/403 are
//!   PermissionDenied naming the host and the permission to grant; 404
//!   NotFound; 422 InvalidArgument with the host's message; 5xx, refused
//!   connections, timeouts and rate limits are Unavailable, the one
//!   retryable kind this crate returns (the git deadline too).
//! - **Drafts**: GitHub's `draft: true`; GitLab's `Draft: ` title prefix.
//! - **reqwest on rustls with ring**, like the rest of the workspace;
//!   [`install_crypto_provider`] runs before the first client is built.

pub mod body;
#[cfg(feature = "fakes")]
pub mod fakes;
pub mod github;
pub mod gitlab;
mod host;
mod http;
mod push;
mod request;
mod secret;

pub use github::GitHub;
pub use gitlab::GitLab;
pub use host::{CodeHost, CodeHostSettings, HostKind};
pub use http::install_crypto_provider;
pub use push::{Pushed, Pusher};
pub use request::{DEFAULT_LABELS, PullRequest, PullRequestRequest};
pub use secret::{Token, TokenSource};
pub use tracelab_domain::{Error, ErrorKind, Result};

/// Pushes `request.branch`, then finds or creates its draft pull request
/// on `host`, then adds the labels it lacks. Calling it again with the
/// same request returns the same pull request and creates nothing.
#[tracing::instrument(skip_all, fields(host = ?host.kind(), repository = %request.repository_url, branch = %request.branch))]
pub async fn open_draft_pull_request(
    pusher: &Pusher,
    host: &CodeHost,
    request: &PullRequestRequest,
) -> Result<PullRequest> {
    let target = host.check(request)?;
    let pushed = pusher
        .push_branch(&target.url, &request.local_repository, &request.branch)
        .await?;
    let opened = host.find_or_create(&target, request).await?;
    host.add_missing_labels(&target, &opened, &request.labels)
        .await?;
    tracing::info!(
        commit = %pushed.commit,
        number = opened.pr.number,
        url = %opened.pr.url,
        created = opened.created,
        "draft pull request ready"
    );
    Ok(opened.pr)
}
