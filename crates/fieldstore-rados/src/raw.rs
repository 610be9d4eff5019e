//! Raw objects: bytes at offsets of named objects in the configured pool
//! and namespace, with none of the store's format — what a benchmark
//! measures the store against (`fieldstore hammer --raw`, IOR-style).

use fieldstore_core::Result;

use crate::config::RadosConfig;
use crate::rados::{Pool, ENOENT};

/// The configured pool, for raw object I/O.
///
/// # Contract
/// A write returns once the cluster has committed it (the same
/// acknowledgement the store's flush waits for), so no separate sync
/// exists. Objects are created by their first write; names are the
/// caller's, so a caller keeps its raw objects apart from the store's
/// (they share the pool) by a prefix of its own.
#[derive(Debug)]
pub struct RawObjects {
    pool: Pool,
}

impl RawObjects {
    /// Connect (or reuse this process's connection) and open the pool
    /// and namespace of `config`.
    ///
    /// # Errors
    /// `Unsupported` without librados; `Unavailable` without a cluster;
    /// `NotFound` for a missing pool.
    pub fn open(config: &RadosConfig) -> Result<RawObjects> {
        Ok(RawObjects {
            pool: config.open_pool()?,
        })
    }

    /// Write `data` at `offset` of `oid` and wait until it is committed.
    ///
    /// # Errors
    /// As librados, naming the object.
    pub fn write(&self, oid: &str, offset: u64, data: &[u8]) -> Result<()> {
        self.pool
            .aio_write(oid, data.to_vec(), Some(offset))?
            .wait()
            .map_err(|(e, what)| e.error(format!("writing {what}")))
    }

    /// Read up to `buf.len()` bytes at `offset` of `oid`; returns how many
    /// were read (fewer at the object's end).
    ///
    /// # Errors
    /// As librados, naming the object (`NotFound` for a missing object).
    pub fn read(&self, oid: &str, offset: u64, buf: &mut [u8]) -> Result<usize> {
        self.pool
            .read(oid, offset, buf)
            .map_err(|e| e.error(format!("reading {}", self.pool.what(oid))))
    }

    /// Remove `oid`; a missing object is not an error.
    ///
    /// # Errors
    /// As librados, naming the object.
    pub fn remove(&self, oid: &str) -> Result<()> {
        match self.pool.remove(oid) {
            Err(ENOENT) => Ok(()),
            r => r.map_err(|e| e.error(format!("removing {}", self.pool.what(oid)))),
        }
    }
}
