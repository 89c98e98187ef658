//! BERT on candle, as sentence-transformers runs it: WordPiece tokens with
//! [CLS]/[SEP], truncated to the folder's `max_seq_length`; the encoder's
//! last hidden states averaged over the real (unmasked) tokens; the mean
//! scaled to unit length. Texts are sorted by token count and cut into
//! batches, so each batch pads to a similar length.

use super::Options;
use crate::error::{Error, Result};
use crate::model_dir::ModelDir;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use sha2::{Digest, Sha256};
use tokenizers::{Encoding, Tokenizer, TruncationParams};
use tracelab_domain::vectors::Embedder;

pub struct SentenceEmbedder {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    id: String,
    dimension: usize,
    max_length: usize,
    batch_size: usize,
    pad_id: u32,
}

impl std::fmt::Debug for SentenceEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentenceEmbedder")
            .field("id", &self.id)
            .field("dimension", &self.dimension)
            .field("max_length", &self.max_length)
            .field("batch_size", &self.batch_size)
            .finish_non_exhaustive()
    }
}

impl SentenceEmbedder {
    /// Reads the weights into memory (about 90 MB for MiniLM) and builds the
    /// model on the CPU. The model id carries a hash of the weights, so
    /// cached vectors of another model version are never reused.
    pub fn load(dir: &ModelDir, options: &Options) -> Result<Self> {
        let config_error = |message: String| Error::ModelConfig {
            path: dir.path.clone(),
            message,
        };
        let text = std::fs::read_to_string(&dir.config).map_err(|e| Error::io(&dir.config, e))?;
        let config: Config =
            serde_json::from_str(&text).map_err(|e| config_error(format!("config.json: {e}")))?;
        let max_length = dir
            .max_length
            .min(options.max_length.unwrap_or(usize::MAX))
            .min(config.max_position_embeddings);
        if max_length < 2 {
            return Err(config_error(format!(
                "a maximum of {max_length} tokens leaves no room for [CLS] and [SEP]"
            )));
        }

        let mut tokenizer = Tokenizer::from_file(&dir.tokenizer)
            .map_err(|e| config_error(format!("tokenizer.json: {e}")))?;
        // tokenizer.json pads every input to 128 and cuts there; padding is
        // done per batch below, and the cut is sentence-transformers'.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length,
                ..TruncationParams::default()
            }))
            .map_err(|e| config_error(format!("tokenizer.json: {e}")))?;

        let weights = std::fs::read(&dir.weights).map_err(|e| Error::io(&dir.weights, e))?;
        let digest = Sha256::digest(&weights);
        let device = Device::Cpu;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(|e| config_error(format!("model.safetensors: {e}")))?;
        let model = BertModel::load(vb, &config).map_err(|e| {
            config_error(format!("model.safetensors does not match config.json: {e}"))
        })?;
        let hash: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
        Ok(Self {
            id: format!(
                "sbert-mean-{}d-{}tok@{hash}",
                config.hidden_size, max_length
            ),
            dimension: config.hidden_size,
            pad_id: u32::try_from(config.pad_token_id).unwrap_or(0),
            model,
            tokenizer,
            device,
            max_length,
            batch_size: options.batch_size.max(1),
        })
    }

    /// Inputs longer than this many tokens (with [CLS] and [SEP]) are cut.
    pub fn max_length(&self) -> usize {
        self.max_length
    }

    /// Token count of `text` after truncation, as the model sees it.
    pub fn token_count(&self, text: &str) -> Result<usize> {
        self.tokenizer
            .encode(text, true)
            .map(|e| e.len())
            .map_err(|e| Error::Model(format!("tokenizer: {e}")))
    }

    /// One forward pass over a batch: padded ids and mask, BERT, masked mean,
    /// L2 normalisation.
    fn forward(&self, batch: &[&Encoding]) -> candle_core::Result<Vec<Vec<f32>>> {
        let len = batch.iter().map(|e| e.len()).max().unwrap_or(0);
        let mut ids = Vec::with_capacity(batch.len() * len);
        let mut mask = Vec::with_capacity(batch.len() * len);
        for e in batch {
            let pad = len - e.len();
            ids.extend_from_slice(e.get_ids());
            ids.extend(std::iter::repeat_n(self.pad_id, pad));
            mask.extend_from_slice(e.get_attention_mask());
            mask.extend(std::iter::repeat_n(0u32, pad));
        }
        let ids = Tensor::from_vec(ids, (batch.len(), len), &self.device)?;
        let mask = Tensor::from_vec(mask, (batch.len(), len), &self.device)?;
        let token_types = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &token_types, Some(&mask))?;
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?.clamp(1e-9f32, f32::MAX)?;
        let mean = summed.broadcast_div(&counts)?;
        let norm = mean
            .sqr()?
            .sum_keepdim(1)?
            .sqrt()?
            .clamp(1e-12f32, f32::MAX)?;
        mean.broadcast_div(&norm)?.to_vec2::<f32>()
    }
}

impl Embedder for SentenceEmbedder {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn embed(&self, texts: &[&str]) -> tracelab_domain::Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| Error::Model(format!("tokenizer: {e}")))?;
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encodings[i].len());
        let mut out = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(self.batch_size) {
            let batch: Vec<&Encoding> = chunk.iter().map(|&i| &encodings[i]).collect();
            let vectors = self
                .forward(&batch)
                .map_err(|e| Error::Model(format!("forward pass: {e}")))?;
            for (&i, v) in chunk.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }
}
