//! The sentence-transformers embedder (all-MiniLM-L6-v2 and other BERT
//! models with mean pooling). With the `candle` feature it runs the BERT
//! forward pass on the CPU ([`candle`]); without it the type still exists so
//! callers compile unchanged, and loading says the feature is off.

use crate::error::Result;
use crate::model_dir::ModelDir;
use std::path::Path;

#[cfg(feature = "candle")]
mod candle;
#[cfg(feature = "candle")]
pub use self::candle::SentenceEmbedder;

#[cfg(not(feature = "candle"))]
mod off;
#[cfg(not(feature = "candle"))]
pub use self::off::SentenceEmbedder;

#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Texts per forward pass. Texts are sorted by length first, so a batch
    /// pads little; 32 is the fastest of 1/8/32 measured on 2 cores
    /// (docs/benchmarks/embeddings.md).
    pub batch_size: usize,
    /// Cut inputs to fewer tokens than the model folder says (never more).
    pub max_length: Option<usize>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            batch_size: 32,
            max_length: None,
        }
    }
}

impl SentenceEmbedder {
    /// Checks the folder ([`ModelDir::open`]) and loads the model from it.
    pub fn from_dir(path: impl AsRef<Path>, options: &Options) -> Result<Self> {
        Self::load(&ModelDir::open(path)?, options)
    }
}
