//! Raw objects: bytes at offsets of named objects in the configured pool
//! and namespace, with none of the store's format — what a benchmark
//! measures the store against (`fieldstore hammer --raw`, IOR-style) — and
//! whole objects with their omaps, listed, read and written as they are
//! (the format tests' dumps of a namespace,
//! `crates/fieldstore-rados/tests/format_fixtures.rs`).

use fieldstore_core::{Error, Result};

use crate::config::RadosConfig;
use crate::rados::{OrMissing, Pool, WriteOp, ENOENT};

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
        let what = || format!("removing {}", self.pool.what(oid));
        self.pool.remove(oid).or_missing(what).map(drop)
    }

    /// The names of every object in the namespace, sorted (one listing of
    /// the pool: its time grows with the pool).
    ///
    /// # Errors
    /// As librados.
    pub fn list(&self) -> Result<Vec<String>> {
        let mut names = self.pool.list_objects(|_| true)?;
        names.sort();
        Ok(names)
    }

    /// The whole data of `oid`.
    ///
    /// # Errors
    /// As librados, naming the object (`NotFound` for a missing object).
    pub fn read_all(&self, oid: &str) -> Result<Vec<u8>> {
        let size = self
            .pool
            .stat(oid)
            .map_err(|e| e.error(format!("sizing {}", self.pool.what(oid))))?;
        let mut buf = vec![0u8; size as usize];
        let n = self.read(oid, 0, &mut buf)?;
        if n != buf.len() {
            return Err(Error::corrupt(format!(
                "{}: read {n} bytes of {size} (changed meanwhile?)",
                self.pool.what(oid)
            )));
        }
        Ok(buf)
    }

    /// Every omap pair of `oid`, in key order (none for an object without
    /// an omap).
    ///
    /// # Errors
    /// As librados, naming the object.
    pub fn omap(&self, oid: &str) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut out = Vec::new();
        let what = || format!("reading the omap of {}", self.pool.what(oid));
        let found = self.pool.omap_each(oid, "", 1000, what, |k, v| {
            out.push((k, v));
            Ok(())
        })?;
        found.then_some(out).ok_or_else(|| ENOENT.error(what()))
    }

    /// Create `oid` holding `data` and the omap pairs `omap`, in one
    /// operation (atomic); an existing object is refused (EEXIST).
    ///
    /// # Errors
    /// As librados, naming the object.
    pub fn create(&self, oid: &str, data: &[u8], omap: &[(&[u8], &[u8])]) -> Result<()> {
        let mut op = WriteOp::new()?;
        op.create_exclusive();
        if !data.is_empty() {
            op.append(data);
        }
        if !omap.is_empty() {
            op.omap_set(omap);
        }
        self.pool
            .operate(oid, &op)
            .map_err(|e| e.error(format!("creating {}", self.pool.what(oid))))
    }
}
