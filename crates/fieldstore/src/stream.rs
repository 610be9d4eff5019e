//! The bytes of a list of retrieved fields as one seekable stream: what the
//! Python package's `DataHandle` and the C API's `fdb_datareader_t` read.
//!
//! Each field is read whole through the store, which verifies its checksum
//! before any of its bytes is handed out; one field is held in memory at a
//! time; the store is told which fields come next as the stream goes
//! ([`Readahead`]), as a [`DataReader`](crate::DataReader) does. A seek
//! into another field reads that field whole.

use std::sync::Arc;

use fieldstore_core::{Error, FieldLocation, Result};

use crate::readahead::Readahead;
use fieldstore_core::store::Store;

/// Whether a field of `len` bytes is read straight into the caller's
/// buffer with `room` bytes left: when it fits and the buffer is not much
/// larger (a reader reading field by field). Measured (docs/benchmarks.md,
/// *C API* and *Python reads*): straight in saves a copy into a buffer the
/// caller reuses (C, 1 MiB fields), but was some 5 % slower into a large
/// cold destination (Python's `readinto` of 64 MiB), where the copy
/// through the reader's buffer, kept in the CPU cache, wins.
pub(crate) fn reads_direct(len: u64, room: usize) -> bool {
    let room = room as u64;
    len > 0 && len <= room && room < 2 * len
}

/// The fields of one retrieve, as a stream of bytes.
///
/// Invariants: `starts[i]` is the stream offset of field `i`'s first byte
/// and `starts[fields.len()]` the total size; when `current == Some(i)`,
/// `buf` holds field `i`'s bytes, verified.
pub struct FieldStream {
    store: Arc<dyn Store>,
    fields: Vec<FieldLocation>,
    starts: Vec<u64>,
    pos: u64,
    current: Option<usize>,
    buf: Vec<u8>,
    readahead: Readahead,
}

impl std::fmt::Debug for FieldStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FieldStream")
            .field("fields", &self.fields.len())
            .field("size", &self.size())
            .field("pos", &self.pos)
            .finish()
    }
}

impl FieldStream {
    /// A stream over `fields`, read through `store` (a handle's
    /// [`FieldStore::store`](crate::handle::FieldStore::store)).
    pub fn new(store: Arc<dyn Store>, fields: Vec<FieldLocation>) -> FieldStream {
        let mut starts = Vec::with_capacity(fields.len() + 1);
        let mut at = 0u64;
        starts.push(0);
        for f in &fields {
            at += f.length;
            starts.push(at);
        }
        FieldStream {
            store,
            fields,
            starts,
            pos: 0,
            current: None,
            buf: Vec::new(),
            readahead: Readahead::new(),
        }
    }

    /// Total bytes.
    pub fn size(&self) -> u64 {
        self.starts.last().copied().unwrap_or(0)
    }

    /// Number of fields.
    pub fn count(&self) -> usize {
        self.fields.len()
    }

    /// The current position.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Bytes from the position to the end (0 past the end).
    pub fn remaining(&self) -> u64 {
        self.size().saturating_sub(self.pos)
    }

    /// Move to byte `pos` (past the end reads nothing).
    pub fn seek(&mut self, pos: u64) {
        self.pos = pos;
    }

    /// Go back to the start and release the field held in memory.
    pub fn rewind(&mut self) {
        self.pos = 0;
        self.current = None;
        self.buf = Vec::new();
    }

    /// Copy the next bytes into `out`: as many as fit, or as are left;
    /// returns how many (0 at the end). A field that starts at the position
    /// and fits whole in what is left of `out` (which is not much larger
    /// than the field) is read straight into it ([`Store::read_into`]);
    /// others go through the stream's buffer.
    ///
    /// # Errors
    /// `Corrupt` if a field fails its checksum or its length (none of its
    /// bytes counts as read; bytes of fields before it in `out` do, but the
    /// call fails, so the position is after them); I/O errors.
    pub fn read(&mut self, out: &mut [u8]) -> Result<usize> {
        let want = self.remaining().min(out.len() as u64) as usize;
        let mut done = 0;
        while done < want {
            // The field holding `pos`: the last one starting at or before
            // it (so zero-length fields are stepped over).
            let i = self.starts.partition_point(|&s| s <= self.pos) - 1;
            if i >= self.fields.len() {
                return Err(Error::internal("read past the end of the retrieved fields"));
            }
            let len = self.fields[i].length;
            if self.current != Some(i)
                && self.pos == self.starts[i]
                && reads_direct(len, want - done)
            {
                // The whole field fits: read it straight into `out`, one
                // copy instead of two (file → buffer → caller), verified
                // there before any of it counts as read.
                let span = &mut out[done..done + len as usize];
                self.hint(i);
                self.store.read_into(&self.fields[i], span)?;
                done += len as usize;
                self.pos += len;
                continue;
            }
            if self.current != Some(i) {
                self.load(i)?;
            }
            let from = (self.pos - self.starts[i]) as usize;
            let n = (self.buf.len() - from).min(want - done);
            out[done..done + n].copy_from_slice(&self.buf[from..from + n]);
            done += n;
            self.pos += n as u64;
        }
        Ok(done)
    }

    /// Tell the store what comes after field `i` ([`Readahead`]).
    fn hint(&mut self, i: usize) {
        let fields = &self.fields;
        self.readahead
            .before_read(&*self.store, i, fields.len(), |j| &fields[j]);
    }

    fn load(&mut self, i: usize) -> Result<()> {
        self.hint(i);
        self.current = None;
        self.store.read(&self.fields[i], &mut self.buf)?;
        if self.buf.len() as u64 != self.fields[i].length {
            return Err(Error::corrupt(format!(
                "{}: read {} bytes, the index says {}",
                self.fields[i],
                self.buf.len(),
                self.fields[i].length
            )));
        }
        self.current = Some(i);
        Ok(())
    }
}
