//! The blob cache: parse results keyed by git blob id. A blob's content never
//! changes, so an unchanged file is parsed once, whatever commit, branch or
//! path it appears under. Persisted as one JSON file (`blobs.json`) in the
//! cache directory; written atomically (temp file + rename).

use crate::error::{Error, Result};
use crate::model::ParsedFile;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// Bumped when `ParsedFile` or the extraction rules change, so stale entries
/// are re-parsed instead of misread.
const FORMAT: u32 = 2;

#[derive(serde::Deserialize)]
struct OnDisk {
    format: u32,
    blobs: HashMap<String, ParsedFile>,
}

#[derive(serde::Serialize)]
struct OnDiskRef<'a> {
    format: u32,
    blobs: std::collections::BTreeMap<&'a str, &'a ParsedFile>,
}

#[derive(Debug, Default)]
pub struct BlobCache {
    blobs: RwLock<HashMap<String, Arc<ParsedFile>>>,
    parses: AtomicU64,
    dirty: std::sync::atomic::AtomicBool,
}

impl BlobCache {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn file_path(dir: &Path) -> PathBuf {
        dir.join("blobs.json")
    }

    /// Loads `dir/blobs.json`; a missing file is an empty cache, an entry
    /// written by another format version is dropped.
    pub fn load(dir: &Path) -> Result<Self> {
        let path = Self::file_path(dir);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::new()),
            Err(e) => return Err(Error::io(path, e)),
        };
        let disk: OnDisk = serde_json::from_slice(&bytes).map_err(|e| Error::Cache {
            path: path.clone(),
            message: e.to_string(),
        })?;
        if disk.format != FORMAT {
            return Ok(Self::new());
        }
        let blobs = disk
            .blobs
            .into_iter()
            .map(|(k, v)| (k, Arc::new(v)))
            .collect();
        Ok(Self {
            blobs: RwLock::new(blobs),
            ..Self::default()
        })
    }

    /// Writes the cache if it changed since it was loaded.
    pub fn save(&self, dir: &Path) -> Result<()> {
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let blobs = self.blobs.read().unwrap_or_else(|e| e.into_inner());
        // Serialise straight from the shared entries (no deep copy); sorted
        // keys keep the file stable between runs.
        let disk = OnDiskRef {
            format: FORMAT,
            blobs: blobs.iter().map(|(k, v)| (k.as_str(), &**v)).collect(),
        };
        let path = Self::file_path(dir);
        let tmp = dir.join(format!("blobs.json.tmp{}", std::process::id()));
        let bytes = serde_json::to_vec(&disk).map_err(|e| Error::Cache {
            path: path.clone(),
            message: e.to_string(),
        })?;
        std::fs::write(&tmp, bytes).map_err(|e| Error::io(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
        Ok(())
    }

    pub fn get(&self, oid: &str) -> Option<Arc<ParsedFile>> {
        self.blobs
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(oid)
            .cloned()
    }

    pub fn insert(&self, oid: String, parsed: Arc<ParsedFile>) {
        self.dirty.store(true, Ordering::Release);
        self.blobs
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(oid, parsed);
    }

    /// Records that a blob was actually parsed (not served from the cache).
    pub(crate) fn count_parse(&self, n: u64) {
        self.parses.fetch_add(n, Ordering::Relaxed);
    }

    /// How many blobs this cache has parsed since it was created or loaded.
    pub fn parse_count(&self) -> u64 {
        self.parses.load(Ordering::Relaxed)
    }

    pub fn len(&self) -> usize {
        self.blobs.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
