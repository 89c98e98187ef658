//! TraceLab's Docker sandbox: hermetic verification in warm, locked-down
//! containers, driven through the Docker Engine API (bollard, local unix
//! socket, no TLS stack).
//!
//! Role: implements the domain ports [`SandboxProvider`] and [`Sandbox`] so
//! the verifier can prove a hypothesis by running commands where they can
//! neither reach the network nor harm the host.
//!
//! How a command travels through this crate:
//!
//! 1. [`DockerSandboxProvider::connect`] validates the [`DockerConfig`], checks
//!    the daemon answers and pins the image (base image, or a repository
//!    recipe built by [`DockerSandboxProvider::with_recipe`]) to its id.
//!    [`DockerSandboxProvider::reap`] removes what a crashed verifier left.
//! 2. `open(worktree, label)` hands the worktree to the sandbox uid, then
//!    creates and starts one container: the worktree bind-mounted at `/work`
//!    as the only writable path besides a `/tmp` tmpfs, `.git` read-only, no
//!    network, all capabilities dropped, `no-new-privileges`, read-only root,
//!    CPU/memory/pids limits, an init as PID 1 and `sleep infinity` to keep
//!    it warm, and `tracelab.*` labels.
//! 3. `exec(spec)` checks the allowlist, then runs argv by `docker exec`
//!    (no shell) as uid 10001 with a fixed minimal environment plus the
//!    spec's, streams and caps the output (head and tail), enforces the
//!    wall-clock limit by killing the command's processes, reads the exit
//!    code after the stream has drained, sweeps leftovers, and reports
//!    timeouts, memory-limit kills and unstartable programs as `blocked`.
//!    [`run_parallel`] spreads many re-runs over several sandboxes.
//! 4. `close()` (or, best effort, `Drop`) force-removes the container.
//!
//! [`check_patch_paths`] is the file-system half of patch safety the engine
//! runs before applying a patch. See `docs/sandbox.md` for the security model.

mod cgroup;
mod cleanup;
mod config;
mod environment;
mod error;
mod exec;
mod parallel;
mod patch_check;
mod provider;
mod recipe;
mod sandbox;

pub use config::{BASE_IMAGE, DockerConfig, Ownership, SECCOMP_PROFILE, WORKDIR};
pub use environment::{BASE_ENV, environment};
pub use parallel::{run_parallel, run_parallel_until};
pub use patch_check::check_patch_paths;
pub use provider::{
    DockerSandboxProvider, LABEL_IMAGE, LABEL_LABEL, LABEL_MANAGED, LABEL_OWNER_NS,
    LABEL_OWNER_PID, ManagedContainer, Reap,
};
pub use recipe::RECIPE_REPOSITORY;
pub use sandbox::DockerSandbox;
pub use tracelab_domain::ports::{CommandResult, CommandSpec, Sandbox, SandboxProvider};
pub use tracelab_domain::{Error, ErrorKind, Result};
/// The worktree hand-over (one walker for both sandboxes).
pub use tracelab_sandbox::ownership;
