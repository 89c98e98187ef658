//! TraceLab's code index: joins failure evidence to code — stack frames to
//! symbols, symbols to the commits and hunks that touched them, failure text
//! to suspect files, functions and commits.
//!
//! **Indexing** (`tracelab index`, [`index_repository`]): [`indexer`] walks a
//! commit's tree with git2, asks the [`cache`] for each blob id and parses
//! only unseen blobs, in parallel, with tree-sitter ([`extract`]: definitions,
//! calls, imports, parse diagnostics). [`snapshot`] places the definitions
//! under qualified names ([`qualify`]) and resolves call edges, import-aware
//! where cheap. [`history`] maps each commit's hunks to the symbols they
//! touch on both sides, and blames frame lines.
//!
//! **A query** (`tracelab locate`, [`locate()`]): the failure text goes to
//! [`evidence`], which pulls out stack frames (the domain's `Frame`,
//! innermost last) and maps them to repository files. [`locate::Locator`] turns frames into symbols and
//! their call-graph neighbourhood ([`callgraph`]) — the *symbol overlap* —,
//! measures *path proximity* to the frames, runs the text through the
//! [`lexical`] (tantivy BM25) index of symbols and commit messages
//! ([`tokenize`] splits identifiers), optionally through an [`embed::Embedder`] and a
//! [`vector::VectorIndex`] (ports in `tracelab_domain::vectors`), adds *time decay* from the revision window, and
//! ranks with [`score`] after hard filters (language, path prefix, revision
//! window, tests). Every result carries each component's value, weight and a
//! human reason; with per-test coverage the locator blends in spectrum-based
//! fault localisation ([`sbfl`], Ochiai), reported as the *spectrum*
//! component. The code-path agent (`tracelab_engine::agents::code_path`)
//! calls [`locate()`]. Getting that coverage (a Python suite under
//! coverage.py in a sandbox) and the Repro Pack that lets the failure be run
//! again are `tracelab-coverage`'s: it runs tests, this crate does not.
//!
//! **Undoing a culprit** ([`symbol_revert`]): when a whole-commit revert
//! conflicts with later edits, [`restore_symbols`] puts back only the
//! definitions the culprit changed, matched by qualified name across the
//! culprit's parent, the culprit and the current revision.
//!
//! Partial results are data: a file that does not parse still yields what
//! was understood plus [`model::Diagnostic`]s. Errors are [`Error`], one
//! [`ErrorKind`] each.

pub mod cache;
pub mod callgraph;
pub mod embed;
pub mod error;
pub mod evidence;
pub mod extract;
pub mod history;
pub mod indexer;
pub mod lang;
pub mod lexical;
pub mod locate;
pub mod model;
pub mod qualify;
pub mod sbfl;
pub mod score;
pub mod snapshot;
pub mod symbol_revert;
pub mod tokenize;
pub mod vector;

pub use error::{Error, ErrorKind, Result};
pub use indexer::{IndexSummary, Indexer, default_cache_dir, index_repository};
pub use lang::Language;
pub use locate::{LocateOptions, Locations, Locator, locate};
pub use model::{CallEdge, Symbol, SymbolId, SymbolKind};
pub use snapshot::Snapshot;
pub use symbol_revert::{FileVersions, Restored, changed_symbols, restore_symbols};
