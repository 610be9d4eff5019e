//! Raw objects: whole S3 objects in the configured bucket, PUT and read
//! by ranged GET with none of the store's format — what a benchmark
//! measures the store against (`fieldstore hammer --raw`, IOR-style),
//! through the same client (signing, connection pool, time-outs).

use std::sync::Arc;

use fieldstore_core::Result;

use crate::client::Client;
use crate::config::S3Config;

/// The configured bucket, for raw object I/O.
///
/// # Contract
/// A PUT returns once the server has answered 200: the object is durable
/// and readable (the same acknowledgement the store's flush waits for), so
/// no separate sync exists. Keys are the caller's: a caller keeps its raw
/// objects apart from the store's by a prefix of its own.
#[derive(Debug)]
pub struct RawObjects {
    client: Arc<Client>,
    bucket: String,
}

impl RawObjects {
    /// A client of the configured endpoint and bucket (created when
    /// missing, as the store does).
    ///
    /// # Errors
    /// As [`crate::store::S3Store::open`].
    pub fn open(cfg: &S3Config) -> Result<RawObjects> {
        crate::store::S3Store::open(cfg)?;
        Ok(RawObjects {
            client: Client::new(cfg)?,
            bucket: cfg.bucket.clone(),
        })
    }

    /// PUT `data` as object `key`.
    ///
    /// # Errors
    /// As any request, naming the object.
    pub fn put(&self, key: &str, data: &[u8]) -> Result<()> {
        self.client.put(&self.bucket, key, data, None)
    }

    /// Read up to `buf.len()` bytes of `key` from `offset` (one ranged
    /// GET); returns how many came (fewer at the object's end).
    ///
    /// # Errors
    /// `NotFound` for a missing object; as any request.
    pub fn get(&self, key: &str, offset: u64, buf: &mut [u8]) -> Result<usize> {
        self.client.get_range(&self.bucket, key, offset, buf)
    }

    /// Remove every object whose key starts with `prefix`.
    ///
    /// # Errors
    /// As any request.
    pub fn remove_prefix(&self, prefix: &str) -> Result<()> {
        let listing = self.client.list(&self.bucket, prefix)?;
        let keys: Vec<String> = listing.objects.into_iter().map(|o| o.key).collect();
        self.client.delete_many(&self.bucket, &keys)
    }

    /// The endpoint and bucket, for reports.
    pub fn describe(&self) -> String {
        let (bucket, endpoint) = (&self.bucket, &self.client.endpoint);
        format!("S3 objects in bucket {bucket} at {endpoint}")
    }
}
