//! The local sandbox: the fallback when no Docker daemon answers.
//!
//! A command travels like this: [`LocalSandbox`]'s `exec` refuses what
//! `CommandSpec::check` refuses (the allowlist, NUL bytes, bad variables, a
//! zero timeout), as the Docker sandbox does; spawns the argv (never a
//! shell) in the worktree as the leader of a new process group with a
//! minimal fixed environment; streams stdout and stderr into one
//! [`CappedOutput`] (head and tail, trimmed exactly like the domain's
//! `trim_output`; the Docker sandbox captures with it too); and waits up to
//! the wall-clock limit. On timeout, on completion, and when the future is
//! dropped, the whole process group is killed, so no grandchild outlives its
//! experiment (a child that leaves the group with `setsid` escapes it
//! unless the PID namespace of [`Isolation::Hardened`] is in force).
//!
//! With [`Isolation::None`] (the default) that is all: the command runs as the
//! service's user, with its network, its files and its processes in view.
//! With [`Isolation::Hardened`] the argv is wrapped (see `hardened/`) in
//! bubblewrap or `unshare` (network, PID, IPC, UTS and mount namespaces),
//! `setpriv` (a separate uid when the service is root) and `prlimit`
//! (CPU, address space, processes, open files, file size), as far as the
//! host allows; [`LocalSandboxProvider::guarantees`] says what is in force.
//! A PID namespace dies with its init, which is in the killed process group,
//! so the kill then reaches even processes that left the group. Neither mode
//! gives a memory cgroup or a disk quota; the Docker sandbox
//! (`tracelab-sandbox-docker`) has the former.
//!
//! `conformance` (feature `testsuite`) is the behaviour of the domain's
//! `Sandbox` port: this crate's tests run it on the local sandbox, with and
//! without hardening, and `tracelab-sandbox-docker`'s on Docker.

mod capped;
#[cfg(feature = "testsuite")]
pub mod conformance;
mod hardened;
pub mod ownership;
mod process;

pub use capped::CappedOutput;
pub use hardened::{FsView, Guarantees, HardenedConfig, Isolation, Limits, Mechanism};
pub use process::{LocalConfig, LocalSandbox, LocalSandboxProvider};
