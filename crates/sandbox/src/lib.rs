//! The local sandbox: the fallback when no Docker daemon answers.
//!
//! A command travels like this: [`LocalSandbox::exec`] checks the allowlist,
//! spawns the argv (never a shell) in the worktree as the leader of a new
//! process group with a minimal fixed environment, streams stdout and stderr
//! into one [`CappedOutput`], and waits up to the wall-clock limit. On timeout,
//! on completion, and when the future is dropped, the whole process group is
//! killed, so no grandchild outlives its experiment.
//!
//! What it does *not* give: network isolation, a read-only root, or CPU and
//! memory limits. Those need the Docker sandbox (`tracelab-sandbox-docker`).

mod capped;
mod process;

pub use capped::CappedOutput;
pub use process::{LocalConfig, LocalSandbox, LocalSandboxProvider};
