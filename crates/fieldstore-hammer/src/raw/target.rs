//! The seam between the raw phases and a backend.

use fieldstore::Result;

/// Where raw objects live: bytes at offsets of named objects.
///
/// # Contract
/// `write` stores the bytes at the offset (creating the object); once
/// `sync` of that object returns, they are durable. `read` returns how
/// many bytes exist at the offset (fewer at the end). `remove` of a missing
/// object succeeds. Object names are [`OBJECT_PREFIX`](super::OBJECT_PREFIX)-prefixed by the
/// caller.
pub trait RawTarget {
    /// What and where, for the report.
    fn describe(&self) -> String;
    /// Write `data` at `offset` of `object`.
    ///
    /// # Errors
    /// The backend's.
    fn write(&mut self, object: &str, offset: u64, data: &[u8]) -> Result<()>;
    /// Make `object`'s writes durable.
    ///
    /// # Errors
    /// The backend's.
    fn sync(&mut self, object: &str) -> Result<()>;
    /// Read at `offset` of `object` into `buf`; returns the bytes read.
    ///
    /// # Errors
    /// The backend's.
    fn read(&mut self, object: &str, offset: u64, buf: &mut [u8]) -> Result<usize>;
    /// Remove `object`.
    ///
    /// # Errors
    /// The backend's.
    fn remove(&mut self, object: &str) -> Result<()>;
    /// Would-be RPCs so far (the DAOS stand-in counts them), else `None`.
    fn rpcs(&self) -> Option<u64> {
        None
    }
}
