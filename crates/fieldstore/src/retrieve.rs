//! What `retrieve` returns: a reader over the fields, in request order.

use std::io::{self, Read};
use std::sync::Arc;

use fieldstore_core::{Error, FieldLocation, Key, Result};

use crate::store::Store;

/// Looks a field up again (its newest location, or `None` if it no longer
/// exists).
pub(crate) type Resolver = Arc<dyn Fn(&Key) -> Result<Option<FieldLocation>> + Send + Sync>;

/// The fields a request named, as one byte stream in request order.
/// Fields that do not exist are simply absent.
///
/// Bytes are read lazily, one field at a time; each field is verified
/// against its checksum before any of it is returned.
pub struct DataReader {
    store: Arc<dyn Store>,
    resolve: Option<Resolver>,
    fields: Vec<(Key, FieldLocation)>,
    next: usize,
    buf: Vec<u8>,
    pos: usize,
}

impl std::fmt::Debug for DataReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataReader")
            .field("fields", &self.fields.len())
            .field("next", &self.next)
            .finish()
    }
}

impl DataReader {
    pub(crate) fn new(store: Arc<dyn Store>, fields: Vec<(Key, FieldLocation)>) -> Self {
        DataReader {
            store,
            resolve: None,
            fields,
            next: 0,
            buf: Vec::new(),
            pos: 0,
        }
    }

    /// Look fields up again when their bytes are gone at read time.
    pub(crate) fn with_resolver(mut self, resolve: Resolver) -> Self {
        self.resolve = Some(resolve);
        self
    }

    /// The fields found, with their keys, in order.
    pub fn fields(&self) -> &[(Key, FieldLocation)] {
        &self.fields
    }

    /// Number of fields found.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Total bytes.
    pub fn size(&self) -> u64 {
        self.fields.iter().map(|(_, l)| l.length).sum()
    }

    /// Read the next whole field into `buf`; `Ok(None)` at the end.
    ///
    /// # Errors
    /// `Corrupt` if a field fails its checksum; I/O errors.
    pub fn next_field(&mut self, buf: &mut Vec<u8>) -> Result<Option<Key>> {
        loop {
            let Some((key, loc)) = self.fields.get(self.next) else {
                return Ok(None);
            };
            let err = match self.store.read(loc, buf) {
                Ok(()) => {
                    self.next += 1;
                    return Ok(Some(key.clone()));
                }
                Err(e) => e,
            };
            // The bytes are gone: a wipe, a purge of a version replaced
            // since the lookup, or a move. Look the field up again.
            let Some(resolve) = self
                .resolve
                .as_ref()
                .filter(|_| err.kind() == fieldstore_core::ErrorKind::NotFound)
            else {
                return Err(err);
            };
            match resolve(key)? {
                None => {
                    // The field no longer exists: it is absent.
                    self.fields.remove(self.next);
                }
                Some(newer) if newer != *loc => self.fields[self.next].1 = newer,
                Some(_) => return Err(err),
            }
        }
    }

    /// Read everything into one buffer.
    ///
    /// # Errors
    /// As [`DataReader::next_field`].
    pub fn read_all(mut self) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(self.size() as usize);
        let mut buf = Vec::new();
        while self.next_field(&mut buf)?.is_some() {
            out.extend_from_slice(&buf);
        }
        Ok(out)
    }
}

impl Read for DataReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.buf.len() {
            let mut buf = std::mem::take(&mut self.buf);
            match self.next_field(&mut buf) {
                Ok(Some(_)) => {
                    self.buf = buf;
                    self.pos = 0;
                }
                Ok(None) => return Ok(0),
                Err(e) => return Err(to_io(e)),
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

fn to_io(e: Error) -> io::Error {
    let kind = match e.kind() {
        fieldstore_core::ErrorKind::NotFound => io::ErrorKind::NotFound,
        fieldstore_core::ErrorKind::Corrupt => io::ErrorKind::InvalidData,
        fieldstore_core::ErrorKind::PermissionDenied => io::ErrorKind::PermissionDenied,
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, e)
}
