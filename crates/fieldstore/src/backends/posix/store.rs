//! `FileStore`: field bytes in per-writer data files.
//!
//! Each writer appends to its own data file (`<writer id>.data` in the
//! dataset directory), so writers never contend. Small fields are gathered
//! in a buffer and written together; large ones are written directly. A
//! location carries the CRC-32C of the field, checked on every read.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use fieldstore_core::{CollocationKey, DatasetKey, Error, FieldLocation, Result};

use super::layout;
use crate::config::Root;
use crate::store::{Store, StoreWriter};

/// Fields at least this large skip the write buffer.
const DIRECT_WRITE: usize = 1 << 20;
/// The write buffer's capacity.
const BUFFER: usize = 4 << 20;
/// Open data files kept by a reader.
const MAX_OPEN: usize = 512;

/// The POSIX store (`store: file`).
#[derive(Debug)]
pub struct FileStore {
    roots: Vec<Root>,
    open: Mutex<HashMap<PathBuf, Arc<File>>>,
}

impl FileStore {
    /// A store over `roots` (the same roots as the catalogue's).
    ///
    /// # Errors
    /// `NotFound` if no root exists.
    pub fn open(roots: &[Root]) -> Result<FileStore> {
        super::check_roots(roots)?;
        Ok(FileStore {
            roots: roots.to_vec(),
            open: Mutex::new(HashMap::new()),
        })
    }

    fn file(&self, path: &Path) -> Result<Arc<File>> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = open.get(path) {
            return Ok(f.clone());
        }
        let f = Arc::new(
            File::open(path).map_err(|e| Error::io(format!("data file {}", path.display()), e))?,
        );
        if open.len() >= MAX_OPEN {
            open.clear();
        }
        open.insert(path.to_path_buf(), f.clone());
        Ok(f)
    }
}

impl Store for FileStore {
    fn writer(&self, dataset: &DatasetKey) -> Result<Box<dyn StoreWriter>> {
        let dir = layout::dataset_dir_for_write(&self.roots, dataset)?;
        Ok(Box::new(FileStoreWriter {
            dir,
            path: PathBuf::new(),
            uri: Arc::from(""),
            file: None,
            written: 0,
            buffer: Vec::new(),
            unsynced: false,
            new_file: false,
        }))
    }

    fn read(&self, location: &FieldLocation, buf: &mut Vec<u8>) -> Result<()> {
        if location.scheme() != "file" {
            return Err(Error::invalid_input(format!(
                "not a file location: {}",
                location.uri
            )));
        }
        let path = Path::new(location.path());
        let file = self.file(path)?;
        let len = usize::try_from(location.length)
            .map_err(|_| Error::corrupt(format!("{location}: length out of range")))?;
        buf.clear();
        buf.resize(len, 0);
        file.read_exact_at(buf, location.offset).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                Error::corrupt(format!(
                    "{location}: the data file is shorter than the field (truncated?)"
                ))
            } else {
                Error::io(format!("reading {location}"), e)
            }
        })?;
        if let Some(want) = location.checksum {
            let got = crc32c::crc32c(buf);
            if got != want {
                buf.clear();
                return Err(Error::corrupt(format!(
                    "{location}: checksum mismatch (stored {want:08x}, read {got:08x}): the data file is damaged"
                )));
            }
        }
        Ok(())
    }

    fn scheme(&self) -> &'static str {
        "file"
    }
}

/// One writer's data file in one dataset.
struct FileStoreWriter {
    dir: PathBuf,
    path: PathBuf,
    uri: Arc<str>,
    file: Option<File>,
    /// Bytes in the file plus the buffer: the next field's offset.
    written: u64,
    buffer: Vec<u8>,
    unsynced: bool,
    new_file: bool,
}

impl FileStoreWriter {
    fn open_file(&mut self) -> Result<()> {
        layout::ensure_dir(&self.dir)?;
        let name = format!("{}.data", layout::writer_id());
        self.path = self.dir.join(name);
        let abs = std::path::absolute(&self.path).map_err(|e| Error::io(self.path.display(), e))?;
        self.uri = Arc::from(format!("file://{}", abs.display()));
        let f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&self.path)
            .map_err(|e| Error::io(format!("creating data file {}", self.path.display()), e))?;
        self.file = Some(f);
        self.new_file = true;
        Ok(())
    }

    fn write_out(&mut self, bytes: &[u8]) -> Result<()> {
        let Some(file) = self.file.as_mut() else {
            return Err(Error::internal("data file not open"));
        };
        file.write_all(bytes)
            .map_err(|e| Error::io(format!("writing {}", self.path.display()), e))
    }

    fn drain_buffer(&mut self) -> Result<()> {
        if !self.buffer.is_empty() {
            let buf = std::mem::take(&mut self.buffer);
            let r = self.write_out(&buf);
            self.buffer = buf;
            self.buffer.clear();
            r?;
        }
        Ok(())
    }
}

impl StoreWriter for FileStoreWriter {
    fn archive(&mut self, _collocation: &CollocationKey, data: &[u8]) -> Result<FieldLocation> {
        if self.file.is_none() {
            self.open_file()?;
        }
        let offset = self.written;
        if data.len() >= DIRECT_WRITE {
            self.drain_buffer()?;
            self.write_out(data)?;
        } else {
            if self.buffer.len() + data.len() > BUFFER {
                self.drain_buffer()?;
            }
            if self.buffer.capacity() == 0 {
                self.buffer.reserve(BUFFER);
            }
            self.buffer.extend_from_slice(data);
        }
        self.written += data.len() as u64;
        self.unsynced = true;
        Ok(
            FieldLocation::new(self.uri.clone(), offset, data.len() as u64)
                .with_checksum(crc32c::crc32c(data)),
        )
    }

    fn flush(&mut self) -> Result<()> {
        if !self.unsynced {
            return Ok(());
        }
        self.drain_buffer()?;
        if let Some(f) = &self.file {
            layout::sync_data(f, &self.path)?;
        }
        if self.new_file {
            // The data file's directory entry must be durable before any
            // index entry pointing into it is.
            layout::sync_dir(&self.dir)?;
            self.new_file = false;
        }
        self.unsynced = false;
        Ok(())
    }
}
