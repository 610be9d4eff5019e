//! Raw objects as S3 objects: S3 has no writes at an offset, so each
//! transfer is an object of its own, `<name>.<offset>` — a PUT of the
//! transfer's bytes — and each read a GET of one of them: raw PUT and GET
//! of the transfer size, at the phase's concurrency.

use fieldstore::{ErrorKind, Result};
use fieldstore_s3::{RawObjects, S3Config};

use super::target::RawTarget;

/// Objects in the store's bucket.
pub(crate) struct S3Target {
    objects: RawObjects,
}

impl S3Target {
    /// Objects in the bucket of `config`.
    ///
    /// # Errors
    /// As [`RawObjects::open`].
    pub(crate) fn open(config: &S3Config) -> Result<S3Target> {
        Ok(S3Target {
            objects: RawObjects::open(config)?,
        })
    }
}

impl RawTarget for S3Target {
    fn describe(&self) -> String {
        format!("{} (one object per transfer)", self.objects.describe())
    }
    fn write(&mut self, object: &str, offset: u64, data: &[u8]) -> Result<()> {
        self.objects.put(&format!("{object}.{offset}"), data)
    }
    fn sync(&mut self, _object: &str) -> Result<()> {
        // A PUT is answered once the object is durable.
        Ok(())
    }
    fn read(&mut self, object: &str, offset: u64, buf: &mut [u8]) -> Result<usize> {
        match self.objects.get(&format!("{object}.{offset}"), 0, buf) {
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(0),
            r => r,
        }
    }
    fn remove(&mut self, object: &str) -> Result<()> {
        self.objects.remove_prefix(&format!("{object}."))
    }
}
