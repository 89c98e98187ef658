//! The crate's error type: one kind from the house's closed set per error,
//! so callers map it once to a gRPC/HTTP status.

use std::path::PathBuf;

/// The closed set of error kinds shared by TraceLab's library crates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    InvalidArgument,
    NotFound,
    Conflict,
    Unavailable,
    Timeout,
    Internal,
}

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
    #[error("coverage data: {0}")]
    Coverage(String),
    #[error("embedder: {0}")]
    Embedder(String),
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
            Error::InvalidArgument(_) | Error::Coverage(_) => ErrorKind::InvalidArgument,
            Error::Embedder(_) => ErrorKind::Unavailable,
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
