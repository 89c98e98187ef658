//! The blob cache: parse results keyed by git blob id. A blob's content never
//! changes, so an unchanged file is parsed once, whatever commit, branch or
//! path it appears under. Persisted in the cache directory as `blobs.json`
//! (a snapshot, written atomically: temp file + rename) plus `blobs.log`
//! (JSON lines appended by later runs), so a run that parsed one file writes
//! one line instead of the whole cache. The log is folded into the snapshot
//! when it grows past a quarter of it. A torn last line (a crash mid-append)
//! is skipped on load: that blob is simply parsed again.

use crate::error::{Error, Result};
use crate::model::ParsedFile;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

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

#[derive(serde::Serialize, serde::Deserialize)]
struct LogLine<P> {
    format: u32,
    oid: String,
    parsed: P,
}

#[derive(Debug, Default)]
pub struct BlobCache {
    blobs: RwLock<HashMap<String, Arc<ParsedFile>>>,
    parses: AtomicU64,
    /// Blob ids inserted since the cache was loaded or last saved.
    pending: Mutex<Vec<String>>,
    /// Entries in `blobs.json` as loaded or last written (0: none).
    in_snapshot: AtomicU64,
}

impl BlobCache {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn file_path(dir: &Path) -> PathBuf {
        dir.join("blobs.json")
    }

    fn log_path(dir: &Path) -> PathBuf {
        dir.join("blobs.log")
    }

    /// Loads `dir/blobs.json` and `dir/blobs.log`; missing files are an
    /// empty cache, entries of another format version are dropped.
    pub fn load(dir: &Path) -> Result<Self> {
        let cache = Self::new();
        let path = Self::file_path(dir);
        match std::fs::read(&path) {
            Ok(bytes) => {
                let disk: OnDisk = serde_json::from_slice(&bytes).map_err(|e| Error::Cache {
                    path: path.clone(),
                    message: e.to_string(),
                })?;
                if disk.format == FORMAT {
                    cache
                        .in_snapshot
                        .store(disk.blobs.len() as u64, Ordering::Relaxed);
                    let mut blobs = cache.blobs.write().unwrap_or_else(|e| e.into_inner());
                    blobs.extend(disk.blobs.into_iter().map(|(k, v)| (k, Arc::new(v))));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(path, e)),
        }
        let log = Self::log_path(dir);
        match std::fs::read_to_string(&log) {
            Ok(text) => {
                let mut blobs = cache.blobs.write().unwrap_or_else(|e| e.into_inner());
                for line in text.lines() {
                    if let Ok(entry) = serde_json::from_str::<LogLine<ParsedFile>>(line)
                        && entry.format == FORMAT
                    {
                        blobs.insert(entry.oid, Arc::new(entry.parsed));
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(log, e)),
        }
        Ok(cache)
    }

    /// Writes what changed since the cache was loaded: appends to the log,
    /// or rewrites the snapshot (and drops the log) when the log would grow
    /// past a quarter of the snapshot.
    pub fn save(&self, dir: &Path) -> Result<()> {
        let pending = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()));
        if pending.is_empty() {
            return Ok(());
        }
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let blobs = self.blobs.read().unwrap_or_else(|e| e.into_inner());
        let in_snapshot = self.in_snapshot.load(Ordering::Relaxed) as usize;
        let log = Self::log_path(dir);
        let logged = std::fs::metadata(&log).map_or(0, |m| m.len());
        let snapshot_bytes = std::fs::metadata(Self::file_path(dir)).map_or(0, |m| m.len());
        if in_snapshot > 0 && pending.len() * 4 < in_snapshot && logged * 4 < snapshot_bytes {
            let mut lines = Vec::new();
            for oid in &pending {
                let Some(parsed) = blobs.get(oid) else {
                    continue;
                };
                let line = LogLine {
                    format: FORMAT,
                    oid: oid.clone(),
                    parsed: &**parsed,
                };
                serde_json::to_writer(&mut lines, &line).map_err(|e| Error::Cache {
                    path: log.clone(),
                    message: e.to_string(),
                })?;
                lines.push(b'\n');
            }
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log)
                .map_err(|e| Error::io(&log, e))?;
            // One write: appends from concurrent runs do not interleave lines.
            f.write_all(&lines).map_err(|e| Error::io(&log, e))?;
            return Ok(());
        }
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
        match std::fs::remove_file(&log) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::io(&log, e)),
            _ => {}
        }
        self.in_snapshot
            .store(blobs.len() as u64, Ordering::Relaxed);
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
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(oid.clone());
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
