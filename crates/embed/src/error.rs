//! The crate's error type: one kind from the house's closed set per error.
//! The `Embedder` port speaks `tracelab_code_index::Error`, so every error
//! also converts into its `Embedder` variant with the same one-line message.

use std::path::PathBuf;
pub use tracelab_code_index::ErrorKind;

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

impl From<Error> for tracelab_code_index::Error {
    fn from(e: Error) -> Self {
        tracelab_code_index::Error::Embedder(e.to_string())
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
