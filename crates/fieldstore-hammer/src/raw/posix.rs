//! Raw objects as POSIX files in the store's directory.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use fieldstore::{Error, Result};

use super::target::RawTarget;

/// Files in the store's directory (its first root).
pub(crate) struct PosixTarget {
    dir: PathBuf,
    files: HashMap<String, File>,
}

impl PosixTarget {
    /// Files in `dir` (created).
    ///
    /// # Errors
    /// I/O errors creating it.
    pub(crate) fn new(dir: PathBuf) -> Result<PosixTarget> {
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(dir.display(), e))?;
        Ok(PosixTarget {
            dir,
            files: HashMap::new(),
        })
    }

    fn file(&mut self, object: &str) -> Result<&File> {
        if !self.files.contains_key(object) {
            let path = self.dir.join(object);
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(|e| Error::io(path.display(), e))?;
            self.files.insert(object.to_string(), f);
        }
        self.files
            .get(object)
            .ok_or_else(|| Error::internal("raw file missing"))
    }
}

impl RawTarget for PosixTarget {
    fn describe(&self) -> String {
        format!("POSIX files in {}", self.dir.display())
    }
    fn write(&mut self, object: &str, offset: u64, data: &[u8]) -> Result<()> {
        let dir = self.dir.clone();
        self.file(object)?
            .write_all_at(data, offset)
            .map_err(|e| Error::io(dir.join(object).display(), e))
    }
    fn sync(&mut self, object: &str) -> Result<()> {
        let dir = self.dir.clone();
        self.file(object)?
            .sync_all()
            .map_err(|e| Error::io(dir.join(object).display(), e))
    }
    fn read(&mut self, object: &str, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let dir = self.dir.clone();
        let f = self.file(object)?;
        let mut n = 0;
        while n < buf.len() {
            match f.read_at(&mut buf[n..], offset + n as u64) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(dir.join(object).display(), e)),
            }
        }
        Ok(n)
    }
    fn remove(&mut self, object: &str) -> Result<()> {
        self.files.remove(object);
        let path = self.dir.join(object);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(path.display(), e)),
            _ => Ok(()),
        }
    }
}
