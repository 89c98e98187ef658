//! The investigation engine: the pipeline of DESIGN.md, composed from ports.
//!
//! A request travels like this: [`Engine::investigate`] validates the
//! repository, revisions and test command, creates the investigation in the
//! store, and opens a [`workspace::Workspace`] (temporary worktrees) with a
//! [`pool::Pool`] of k sandboxes. The test-behaviour agent re-runs the test at
//! the bad revision until the sequential test classifies it (CONTEXT_LOADING);
//! the git-history and test-behaviour agents then run concurrently
//! (INVESTIGATING); the culprit's revert is verified under the four-part
//! contract on its own `ai-debug/...` branch (VERIFYING); the arbiter picks
//! the winner by evidence (ARBITRATING); the report is stored
//! (WAITING_FOR_REVIEW). Every transition is persisted as it happens.

pub mod agents;
mod background;
mod bytecode;
pub mod classification;
pub mod config;
pub mod context;
pub mod focus;
pub mod git;
pub mod investigate;
pub mod journal;
pub mod oracle;
pub mod overlay;
pub mod phases;
pub mod pool;
pub mod probe;
pub mod progress;
pub mod repair;
pub mod retrieval;
pub mod session;
pub mod verify;
pub mod workspace;
pub mod worktree_lock;

pub use config::{EngineConfig, InvestigateRequest};
pub use investigate::{Aborted, Engine};
pub use progress::{Progress, Silent};
pub use repair::RepairMode;
