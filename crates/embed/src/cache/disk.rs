//! The on-disk layer of the embedding cache: one append-only file per model
//! id, a header naming the model and dimension, then fixed-size records
//! `(sha256 key, dimension × f32 little-endian)`. Only the keys are read at
//! open; a vector is read when it is asked for. Appends and the open-time
//! repair take an advisory file lock, so several `tracelab` processes can
//! share one cache folder. A record cut short by a crash is dropped at open.

use super::Key;
use crate::error::{Error, Result};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

const MAGIC: &[u8; 8] = b"TLEMBV01";
const KEY_LEN: usize = 32;

pub struct DiskCache {
    path: PathBuf,
    dimension: usize,
    state: Mutex<State>,
}

impl std::fmt::Debug for DiskCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiskCache")
            .field("path", &self.path)
            .field("dimension", &self.dimension)
            .finish_non_exhaustive()
    }
}

struct State {
    file: File,
    /// Key → byte offset of its vector.
    index: HashMap<Key, u64>,
}

impl DiskCache {
    /// Opens (or creates) the cache file for `model_id` in `dir`.
    pub fn open(dir: &Path, model_id: &str, dimension: usize) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let path = dir.join(file_name(model_id));
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        let header = header(model_id, dimension);
        file.lock().map_err(|e| Error::io(&path, e))?;
        let scanned = scan(&file, &path, &header, dimension);
        // Unlocking cannot meaningfully fail once the file is open; the
        // lock also goes away when the file is closed.
        let _ = file.unlock();
        let index = scanned?;
        Ok(Self {
            path,
            dimension,
            state: Mutex::new(State { file, index }),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stored vectors (distinct keys).
    pub fn len(&self) -> usize {
        self.lock().index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The stored vector of each key, `None` where there is none.
    pub fn get_many(&self, keys: &[Key]) -> Result<Vec<Option<Vec<f32>>>> {
        let mut state = self.lock();
        let mut bytes = vec![0u8; self.dimension * 4];
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            let Some(&offset) = state.index.get(key) else {
                out.push(None);
                continue;
            };
            let file = &mut state.file;
            file.seek(SeekFrom::Start(offset))
                .and_then(|_| file.read_exact(&mut bytes))
                .map_err(|e| Error::io(&self.path, e))?;
            out.push(Some(
                bytes
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            ));
        }
        Ok(out)
    }

    /// Appends vectors whose keys are not stored yet, in one write.
    pub fn put_many(&self, entries: &[(Key, &[f32])]) -> Result<()> {
        let mut state = self.lock();
        let record = KEY_LEN + self.dimension * 4;
        let mut fresh: Vec<&(Key, &[f32])> = Vec::new();
        for entry in entries {
            if entry.1.len() != self.dimension {
                return Err(self.error(format!(
                    "a vector of {} floats cannot go into a cache of dimension {}",
                    entry.1.len(),
                    self.dimension
                )));
            }
            if !state.index.contains_key(&entry.0) && !fresh.iter().any(|f| f.0 == entry.0) {
                fresh.push(entry);
            }
        }
        if fresh.is_empty() {
            return Ok(());
        }
        let mut buf = Vec::with_capacity(fresh.len() * record);
        for (key, vector) in &fresh {
            buf.extend_from_slice(key);
            vector
                .iter()
                .for_each(|x| buf.extend_from_slice(&x.to_le_bytes()));
        }
        let file = &mut state.file;
        file.lock().map_err(|e| Error::io(&self.path, e))?;
        let written = file
            .metadata()
            .and_then(|m| file.write_all(&buf).map(|()| m.len()));
        let _ = file.unlock();
        let start = written.map_err(|e| Error::io(&self.path, e))?;
        for (i, (key, _)) in fresh.iter().enumerate() {
            let offset = start + (i * record + KEY_LEN) as u64;
            state.index.insert(*key, offset);
        }
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves the index consistent
        // (inserts happen after the write), so a poisoned lock is usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn error(&self, message: String) -> Error {
        Error::Cache {
            path: self.path.clone(),
            message,
        }
    }
}

/// A readable, collision-free file name: the model id made filename-safe,
/// plus a short hash of the exact id.
fn file_name(model_id: &str) -> String {
    let safe: String = model_id
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let hash = Sha256::digest(model_id.as_bytes());
    format!(
        "{safe}-{:02x}{:02x}{:02x}{:02x}.vectors",
        hash[0], hash[1], hash[2], hash[3]
    )
}

fn header(model_id: &str, dimension: usize) -> Vec<u8> {
    let mut h = MAGIC.to_vec();
    h.extend_from_slice(&(dimension as u32).to_le_bytes());
    h.extend_from_slice(&(model_id.len() as u32).to_le_bytes());
    h.extend_from_slice(model_id.as_bytes());
    h
}

/// Writes the header of a new file or checks an old one, drops a partial
/// last record and indexes the keys. Runs under the file lock.
fn scan(file: &File, path: &Path, header: &[u8], dimension: usize) -> Result<HashMap<Key, u64>> {
    let io = |e| Error::io(path, e);
    let corrupt = |message: String| Error::Cache {
        path: path.to_path_buf(),
        message,
    };
    let len = file.metadata().map_err(io)?.len();
    if len == 0 {
        (&*file).write_all(header).map_err(io)?;
        return Ok(HashMap::new());
    }
    let mut reader = BufReader::with_capacity(1 << 16, file);
    reader.seek(SeekFrom::Start(0)).map_err(io)?;
    let mut found = vec![0u8; header.len()];
    if len < header.len() as u64 || reader.read_exact(&mut found).is_err() || found != header {
        return Err(corrupt(
            "the file was written for another model id or dimension, or is not an embedding \
             cache; delete it to start afresh"
                .into(),
        ));
    }
    let record = (KEY_LEN + dimension * 4) as u64;
    let records = (len - header.len() as u64) / record;
    let end = header.len() as u64 + records * record;
    if end < len {
        file.set_len(end).map_err(io)?;
    }
    let mut index = HashMap::with_capacity(records as usize);
    let mut key = [0u8; KEY_LEN];
    for i in 0..records {
        reader.read_exact(&mut key).map_err(io)?;
        let offset = header.len() as u64 + i * record + KEY_LEN as u64;
        index.entry(key).or_insert(offset);
        reader.seek_relative((dimension * 4) as i64).map_err(io)?;
    }
    Ok(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_safe_and_distinct() {
        let a = file_name("sbert/384d@abc");
        assert!(
            a.starts_with("sbert_384d_abc-") && a.ends_with(".vectors"),
            "{a}"
        );
        assert_ne!(file_name("a/b"), file_name("a_b"));
    }

    #[test]
    fn header_names_model_and_dimension() {
        let h = header("m", 3);
        assert_eq!(&h[..8], MAGIC);
        assert_eq!(&h[8..12], &3u32.to_le_bytes());
        assert_eq!(&h[12..16], &1u32.to_le_bytes());
        assert_eq!(&h[16..], b"m");
    }
}
