//! The local sandbox: the fallback when no Docker daemon answers.
//!
//! A command travels like this: [`LocalSandbox::exec`] checks the allowlist,
//! spawns the argv (never a shell) in the worktree as the leader of a new
//! process group with a minimal fixed environment, streams stdout and stderr
//! into one [`CappedOutput`], and waits up to the wall-clock limit. On timeout,
//! on completion, and when the future is dropped, the whole process group is
//! killed, so no grandchild outlives its experiment.
//!
//! With [`Isolation::None`] (the default) that is all: the command runs as the
//! service's user, with its network, its files and its processes in view.
//! With [`Isolation::Hardened`] the argv is wrapped (see `hardened.rs`) in
//! bubblewrap or `unshare` (network, PID, IPC, UTS and mount namespaces),
//! `setpriv` (a separate uid when the service is root) and `prlimit`
//! (CPU, address space, processes, open files, file size), as far as the
//! host allows; [`LocalSandboxProvider::guarantees`] says what is in force.
//! A PID namespace dies with its init, which is in the killed process group,
//! so the kill then reaches even processes that left the group. Neither mode
//! gives a memory cgroup or a disk quota; the Docker sandbox
//! (`tracelab-sandbox-docker`) has the former.

mod capped;
mod hardened;
pub mod ownership;
mod process;

pub use capped::CappedOutput;
pub use hardened::{FsView, Guarantees, HardenedConfig, Isolation, Limits, Mechanism};
pub use process::{LocalConfig, LocalSandbox, LocalSandboxProvider};
