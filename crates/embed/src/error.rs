//! The crate's error type: one kind from the shared closed set per error.
//! The `Embedder` port (`tracelab_domain::vectors`) speaks domain errors, so
//! every error also converts into one of the same kind.

use std::path::PathBuf;
pub use tracelab_domain::ErrorKind;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "model folder {path} does not exist; fetch it with deploy/models/fetch-minilm.sh \
         (or point --embeddings / TRACELAB_MODEL_DIR at a sentence-transformers folder)"
    )]
    ModelDirMissing { path: PathBuf },
    #[error(
        "model folder {path} is incomplete: missing {missing}; expected a sentence-transformers \
         folder such as the one deploy/models/fetch-minilm.sh writes"
    )]
    ModelDirIncomplete { path: PathBuf, missing: String },
    #[error("model folder {path}: {message}")]
    ModelConfig { path: PathBuf, message: String },
    /// The tokenizer or the forward pass failed.
    #[error("model: {0}")]
    Model(String),
    #[error(
        "sentence embeddings need tracelab-embed's `candle` cargo feature, which this build \
         does not have (for the tracelab binary: cargo build --release --features embeddings)"
    )]
    FeatureOff,
    #[error("io on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("embedding cache {path}: {message}")]
    Cache { path: PathBuf, message: String },
}

impl Error {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::ModelDirMissing { .. } => ErrorKind::NotFound,
            Error::ModelDirIncomplete { .. } | Error::ModelConfig { .. } => {
                ErrorKind::InvalidArgument
            }
            Error::FeatureOff | Error::Io { .. } => ErrorKind::Unavailable,
            Error::Model(_) | Error::Cache { .. } => ErrorKind::Internal,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// The `Embedder` port speaks domain errors: same kind, `embedder: ` before
/// the message, this error kept as the source.
impl From<Error> for tracelab_domain::Error {
    fn from(e: Error) -> Self {
        tracelab_domain::Error::new(e.kind(), format!("embedder: {e}")).with_source(e)
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
