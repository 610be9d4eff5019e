//! `S3Store`: field bytes in S3 objects, one per writer flush.
//!
//! S3 objects are written whole and never changed, so a writer gathers the
//! fields it archives in memory and PUTs them as one object when it
//! flushes (`<dataset>/data/<writer id>.<n>`), or earlier once it holds
//! `write_buffer` bytes (then a flush is several objects). A location is
//! `s3://<bucket>/<key>` with the field's offset in the object, its length
//! and its CRC-32C; a read is one ranged GET of exactly the field, checked
//! against the CRC. Layout, leases and costs: `docs/format/s3.md`.
//!
//! A data object is written once, by one flush, before anything points
//! into it, and never written again: once any entry points into it, all of
//! that flush's do, and no other ever will. So a unit (an object) is in use
//! only between its PUT and the catalogue's publish; what purge must tell
//! apart there — a killed writer's object from a live writer's that is not
//! published yet — is the writer's lease (`crate::lease`).

use std::collections::HashSet;
use std::sync::Arc;

use fieldstore_core::maintenance::{Claim, Item, ItemKind, Removed, Unit, UnitState};
use fieldstore_core::store::{read_verified, remove_claimed};
use fieldstore_core::{
    CollocationKey, DatasetKey, Error, FieldLocation, Result, Store, StoreMaintenance, StoreWriter,
};

use crate::client::{Client, Listing};
use crate::config::S3Config;
use crate::lease::Lease;
use crate::naming;
use crate::prefetch::Prefetcher;

/// The S3 store (`store: s3`).
#[derive(Debug)]
pub struct S3Store {
    client: Arc<Client>,
    cfg: S3Config,
    /// Fields hinted by `prefetch`, fetched ahead (`crate::prefetch`).
    ahead: Prefetcher,
}

impl S3Store {
    /// Connect to the configured endpoint and check the bucket (creating
    /// it when missing and `create_bucket` allows).
    ///
    /// # Errors
    /// `Unavailable` naming the endpoint if it does not answer within the
    /// time-outs; `NotFound` if the bucket does not exist (and may not be
    /// created); `PermissionDenied` if the credentials are refused.
    pub fn open(cfg: &S3Config) -> Result<S3Store> {
        let client = Client::connect(cfg)?;
        Ok(S3Store {
            ahead: Prefetcher::new(client.clone(), cfg.timeout),
            client,
            cfg: cfg.clone(),
        })
    }

    /// Open the store an `s3:` configuration section describes.
    ///
    /// # Errors
    /// As [`S3Config::from_value`] and [`S3Store::open`].
    pub fn from_config(section: &serde_json::Value) -> Result<S3Store> {
        S3Store::open(&S3Config::from_value(section)?)
    }

    /// Read `buf.len()` bytes at `location`, a field or a range of one
    /// (unverified: `read_into` checks a whole field's length and CRC).
    fn read_once(&self, location: &FieldLocation, buf: &mut [u8]) -> Result<()> {
        let (bucket, key) = naming::parse_uri(&location.uri)?;
        let got = if self.ahead.take(location, buf) {
            buf.len()
        } else {
            self.client.get_range(bucket, key, location.offset, buf)?
        };
        if got < buf.len() {
            return Err(Error::corrupt(format!(
                "{location}: the S3 object ends {got} bytes into the field (truncated?)"
            )));
        }
        Ok(())
    }

    /// The dataset's data objects and leases: two listings, data first (an
    /// object listed has its writer's lease written before it, so the
    /// second listing sees that lease unless the writer ended it).
    fn listings(&self, dataset: &DatasetKey) -> Result<(Listing, Listing)> {
        let prefix = naming::dataset_prefix(dataset);
        let (client, bucket) = (&self.client, &self.cfg.bucket);
        let data = client.list(bucket, &naming::data_prefix(&prefix))?;
        let leases = client.list(bucket, &naming::lease_prefix(&prefix))?;
        Ok((data, leases))
    }
}

/// Writers whose leases are alive by `leases` (the server's times): last
/// written no more than two leases and a second before the listing.
fn live_writers(leases: &Listing) -> HashSet<String> {
    leases
        .objects
        .iter()
        .filter_map(|o| {
            let (writer, ms) = naming::lease_writer(&o.key)?;
            let age = leases.server_now_ms - o.modified_ms;
            (age <= 2 * ms as i64 + 1000).then(|| writer.to_string())
        })
        .collect()
}

/// Lease objects of `leases` that are dead (what wipe removes with a
/// dataset's objects).
fn dead_leases(leases: &Listing) -> Vec<String> {
    let live = live_writers(leases);
    leases
        .objects
        .iter()
        .filter(|o| naming::lease_writer(&o.key).is_some_and(|(w, _)| !live.contains(w)))
        .map(|o| o.key.clone())
        .collect()
}

impl Store for S3Store {
    fn writer(&self, dataset: &DatasetKey) -> Result<Box<dyn StoreWriter>> {
        let prefix = naming::dataset_prefix(dataset);
        let writer = fieldstore_core::writer_id::next();
        let lease = Arc::new(Lease::new(
            self.client.clone(),
            &self.cfg.bucket,
            naming::lease_key(&prefix, &writer, self.cfg.writer_lease.as_millis() as u64),
            self.cfg.writer_lease,
        ));
        Ok(Box::new(S3StoreWriter {
            client: self.client.clone(),
            bucket: self.cfg.bucket.clone(),
            prefix,
            writer,
            lease,
            write_buffer: self.cfg.write_buffer,
            seq: 0,
            key: String::new(),
            uri: Arc::from(""),
            buf: Vec::new(),
            unflushed: Vec::new(),
            unpublished: Vec::new(),
            failed: None,
        }))
    }

    fn read(&self, location: &FieldLocation, buf: &mut Vec<u8>) -> Result<()> {
        fieldstore_core::store::read_by_resize(self, location, buf)
    }

    fn read_into(&self, location: &FieldLocation, out: &mut [u8]) -> Result<()> {
        read_verified(location, out, ": the S3 object is damaged", |out| {
            self.read_once(location, out)
        })
    }

    fn read_range(&self, location: &FieldLocation, offset: u64, out: &mut [u8]) -> Result<()> {
        self.read_once(&location.range(offset, out.len() as u64)?, out)
    }

    /// Fetch them in the background, neighbours in one object by one
    /// ranged GET (`crate::prefetch`).
    fn prefetch(&self, locations: &[FieldLocation]) {
        self.ahead.hint(locations);
    }

    fn scheme(&self) -> &'static str {
        "s3"
    }

    fn maintenance(&self) -> Option<&dyn StoreMaintenance> {
        Some(self)
    }
}

impl StoreMaintenance for S3Store {
    /// An object's size (a HEAD). Objects are never written again after
    /// their PUT, and one an entry points into is published: idle.
    fn inspect(&self, uri: &str) -> Result<Unit> {
        let (bucket, key) = naming::parse_uri(uri)?;
        let bytes = self.client.head(bucket, key)?;
        Ok(Unit {
            uri: uri.to_string(),
            state: bytes.map_or(UnitState::Missing, |_| UnitState::Idle),
            bytes,
        })
    }

    /// Held as soon as named: no writer adds to an object after its PUT,
    /// nor points into it after the flush that wrote it (a missing one is
    /// found on removal).
    fn claim(&self, uri: &str) -> Result<Claim<'_>> {
        naming::parse_uri(uri)?;
        let uri = uri.to_string();
        Ok(Claim::Held(Box::new(move || {
            let (bucket, key) = naming::parse_uri(&uri)?;
            self.client.delete(bucket, key)
        })))
    }

    fn remove(&self, uri: &str) -> Result<Removed> {
        remove_claimed(self.claim(uri)?)
    }

    /// The dataset's data objects that no entry points into and whose
    /// writer's lease is missing or dead: two listings.
    fn orphans(&self, dataset: &DatasetKey, referenced: &HashSet<String>) -> Result<Vec<Unit>> {
        let (data, leases) = self.listings(dataset)?;
        let live = live_writers(&leases);
        Ok(data
            .objects
            .into_iter()
            .filter_map(|o| {
                let writer = naming::data_writer(&o.key)?;
                let uri = naming::uri(&self.cfg.bucket, &o.key);
                (!live.contains(writer) && !referenced.contains(&uri)).then_some(Unit {
                    uri,
                    bytes: Some(o.size),
                    state: UnitState::Idle,
                })
            })
            .collect())
    }

    fn inventory(&self, dataset: &DatasetKey, _units: &[String]) -> Result<Vec<Item>> {
        let (data, leases) = self.listings(dataset)?;
        let dead: HashSet<String> = dead_leases(&leases).into_iter().collect();
        Ok(data
            .objects
            .iter()
            .chain(leases.objects.iter().filter(|o| dead.contains(&o.key)))
            .map(|o| {
                let uri = naming::uri(&self.cfg.bucket, &o.key);
                Item::new(ItemKind::Data, uri, Some(o.size))
            })
            .collect())
    }

    /// Every data object under the dataset's prefix, and the dead leases
    /// (a live writer's lease stays: its writer deletes it, and a purge
    /// must still see it alive).
    fn wipe(&self, dataset: &DatasetKey, units: &[String]) -> Result<()> {
        let (data, leases) = self.listings(dataset)?;
        let mut keys: Vec<String> = data.objects.into_iter().map(|o| o.key).collect();
        keys.extend(dead_leases(&leases));
        self.client.delete_many(&self.cfg.bucket, &keys)?;
        // Units outside the prefix (another bucket, or another naming).
        let listed: HashSet<String> = keys
            .iter()
            .map(|k| naming::uri(&self.cfg.bucket, k))
            .collect();
        for uri in units.iter().filter(|u| !listed.contains(*u)) {
            if let Ok((bucket, key)) = naming::parse_uri(uri) {
                self.client.delete(bucket, key)?;
            }
        }
        Ok(())
    }
}

/// One writer's objects in one dataset.
struct S3StoreWriter {
    client: Arc<Client>,
    bucket: String,
    /// `<dataset>/`.
    prefix: String,
    /// This writer's id.
    writer: String,
    lease: Arc<Lease>,
    /// PUT once this many bytes are held.
    write_buffer: usize,
    /// Number of the last object named.
    seq: u64,
    /// The object `buf` goes to ("" before the first field).
    key: String,
    uri: Arc<str>,
    /// The fields archived into the current object, not yet PUT.
    buf: Vec<u8>,
    /// Objects PUT since the last flush: nothing can point into them yet.
    unflushed: Vec<String>,
    /// Objects of the last flush, until the catalogue has published them.
    unpublished: Vec<String>,
    /// The first failure: every later archive and flush reports it.
    failed: Option<Error>,
}

impl S3StoreWriter {
    fn check(&self) -> Result<()> {
        let Some(e) = &self.failed else { return Ok(()) };
        let why = format!("an earlier write of this writer failed: {e}");
        Err(Error::new(e.kind(), why))
    }

    /// `r`; a failure is kept, for every later archive and flush to report.
    fn keep_failure(&mut self, r: Result<()>) -> Result<()> {
        if let Err(e) = &r {
            self.failed = Some(Error::new(e.kind(), e.to_string()));
        }
        r
    }

    /// PUT the fields held as the current object (under the lease).
    fn put_buffer(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let r = self
            .lease
            .take()
            .and_then(|()| self.lease.confirm())
            .and_then(|()| self.client.put(&self.bucket, &self.key, &self.buf, None));
        self.keep_failure(r)?;
        self.buf.clear();
        self.unflushed.push(std::mem::take(&mut self.key));
        Ok(())
    }

    /// Remove objects nothing points into (best effort: what stays is an
    /// orphan for purge once this writer's lease is gone).
    fn remove(&self, keys: &[String]) {
        if !keys.is_empty() {
            let _ = self.client.delete_many(&self.bucket, keys);
        }
    }
}

impl StoreWriter for S3StoreWriter {
    fn archive(&mut self, _collocation: &CollocationKey, data: &[u8]) -> Result<FieldLocation> {
        self.check()?;
        if !self.buf.is_empty() && self.buf.len() + data.len() > self.write_buffer {
            self.put_buffer()?;
        }
        if self.buf.is_empty() {
            self.seq += 1;
            self.key = naming::data_key(&self.prefix, &self.writer, self.seq);
            self.uri = Arc::from(naming::uri(&self.bucket, &self.key));
        }
        let at = self.buf.len() as u64;
        self.buf.extend_from_slice(data);
        let location = FieldLocation::new(self.uri.clone(), at, data.len() as u64)
            .with_checksum(fieldstore_core::checksum::of_field(data));
        if self.buf.len() >= self.write_buffer {
            self.put_buffer()?;
        }
        Ok(location)
    }

    fn flush(&mut self) -> Result<()> {
        self.check()?;
        self.put_buffer()?;
        if !self.unflushed.is_empty() {
            // Acknowledged only if no purge can have found this writer
            // dead and removed the objects the flush will point into.
            self.keep_failure(self.lease.confirm())?;
        }
        self.unpublished.append(&mut self.unflushed);
        Ok(())
    }

    fn indexed(&mut self) {
        self.unpublished.clear();
    }

    /// The lease held, unbroken, from the flush through the catalogue's
    /// publish ([`Lease::confirm`] again, now that the entries are
    /// visible): a writer stopped past its lease in between fails its flush
    /// instead of acknowledging fields a purge removed.
    fn confirm_published(&mut self) -> Result<()> {
        if self.unpublished.is_empty() {
            return Ok(());
        }
        self.keep_failure(self.lease.confirm())
    }

    /// The objects of the failed flush and those PUT since go now.
    fn abandon(&mut self) {
        let mut keys = std::mem::take(&mut self.unpublished);
        keys.append(&mut self.unflushed);
        self.buf.clear();
        self.remove(&keys);
    }
}

impl Drop for S3StoreWriter {
    /// Objects PUT since the last flush are removed (nothing points into
    /// them), then the lease: what the writer wrote is published or an
    /// orphan now.
    fn drop(&mut self) {
        let keys = std::mem::take(&mut self.unflushed);
        self.remove(&keys);
        self.lease.end();
    }
}
