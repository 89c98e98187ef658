//! Sentence embeddings for TraceLab's code index, behind the
//! `tracelab_code_index::embed::Embedder` port.
//!
//! A text travels like this: [`CachingEmbedder`] hashes it with the model id
//! (sha256) and answers from its in-memory LRU or its on-disk file when it
//! has seen it; otherwise it hands the unseen, de-duplicated texts to the
//! wrapped embedder — normally [`SentenceEmbedder`], which tokenizes them,
//! sorts them by length into batches, runs BERT (all-MiniLM-L6-v2) on candle,
//! mean-pools the hidden states over the attention mask and L2-normalises.
//!
//! The model is read from a local sentence-transformers folder only
//! ([`ModelDir`], written by `deploy/models/fetch-minilm.sh`); nothing is
//! downloaded at build or run time. The forward pass needs the `candle`
//! feature (off by default because candle-transformers takes minutes to
//! build); without it the cache and the folder checks still work and
//! loading a model returns [`Error::FeatureOff`].

pub mod cache;
pub mod error;
pub mod model_dir;
pub mod sentence;

pub use cache::{CacheStats, CachingEmbedder};
pub use error::{Error, ErrorKind, Result};
pub use model_dir::ModelDir;
pub use sentence::{Options, SentenceEmbedder};
pub use tracelab_domain::vectors::Embedder;
