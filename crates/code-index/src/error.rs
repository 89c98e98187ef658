//! The crate's error type: one kind from the shared closed set
//! (`tracelab_domain::ErrorKind`) per error, so callers map it once to a
//! gRPC/HTTP status.

use std::path::PathBuf;

/// The closed set of kinds every TraceLab crate shares (with its HTTP,
/// gRPC and ack mappings), re-exported for callers of this crate.
pub use tracelab_domain::ErrorKind;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("git: {0}")]
    Git(#[from] git2::Error),
    #[error("revision {rev:?} not found: {message}")]
    RevisionNotFound { rev: String, message: String },
    #[error("io on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cache file {path} is corrupt: {message}")]
    Cache { path: PathBuf, message: String },
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("full-text index: {0}")]
    Search(String),
    /// A port's failure (embedder, vector index), with its kind.
    #[error(transparent)]
    Port(#[from] tracelab_domain::Error),
}

impl Error {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Git(e) if e.code() == git2::ErrorCode::NotFound => ErrorKind::NotFound,
            Error::Git(_) => ErrorKind::Internal,
            Error::RevisionNotFound { .. } => ErrorKind::NotFound,
            Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                ErrorKind::NotFound
            }
            Error::Io { .. } => ErrorKind::Unavailable,
            Error::Cache { .. } => ErrorKind::Internal,
            Error::InvalidArgument(_) => ErrorKind::InvalidArgument,
            Error::Search(_) => ErrorKind::Internal,
            Error::Port(e) => e.kind,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
