//! Built without `candle`: a `SentenceEmbedder` cannot exist, and loading
//! one is a clear error instead of a missing type.

use super::Options;
use crate::error::{Error, Result};
use crate::model_dir::ModelDir;
use std::convert::Infallible;
use tracelab_domain::vectors::Embedder;

#[derive(Debug)]
pub struct SentenceEmbedder {
    never: Infallible,
}

impl SentenceEmbedder {
    /// Always [`Error::FeatureOff`].
    pub fn load(_dir: &ModelDir, _options: &Options) -> Result<Self> {
        Err(Error::FeatureOff)
    }
}

impl Embedder for SentenceEmbedder {
    fn model_id(&self) -> &str {
        match self.never {}
    }

    fn dimension(&self) -> usize {
        match self.never {}
    }

    fn embed(&self, _texts: &[&str]) -> tracelab_domain::Result<Vec<Vec<f32>>> {
        match self.never {}
    }
}
