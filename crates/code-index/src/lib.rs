//! TraceLab's code index: joins failure evidence to code.
//!
//! Placeholder while the modules land.

pub mod cache;
pub mod error;
pub mod extract;
pub mod history;
pub mod indexer;
pub mod lang;
pub mod model;
pub mod qualify;
pub mod snapshot;

pub use error::{Error, ErrorKind, Result};
pub use indexer::{IndexSummary, Indexer, default_cache_dir, index_repository};
pub use lang::Language;
pub use model::{CallEdge, Symbol, SymbolId, SymbolKind};
pub use snapshot::Snapshot;
