//! The DAOS store (`store: daos`): one byte array per field (the paper's
//! design, as FDB5's `DaosStore`).
//!
//! - The array's OID comes from a range reserved with one
//!   `daos_cont_alloc_oids` per `oids_per_alloc` fields; its header from
//!   `daos_obj_generate_oid2` (local).
//! - It is opened with `daos_array_open_with_attr` (local: no create RPC),
//!   written with one `daos_array_write` (one RPC per chunk touched), and
//!   closed (local). A write is durable when it returns, so `flush` has
//!   nothing left to do.
//! - The location carries the size and a CRC-32C of the bytes: reading is
//!   one `daos_array_read` of exactly that size, no `get_size` RPC, and
//!   damage is detected.
//!
//! Location URI: `daos://<pool>/<container>/<oid: 32 hex digits>`, with
//! `?chunk=<bytes>` when the chunk size is not 1 MiB.
//!
//! The OIDs are reserved under the writing process's lease on the
//! container (`crate::lease`): purge destroys the arrays of dead leases
//! that no entry points into (what killed writers left), and a writer
//! flushes only while its lease holds.

use std::sync::Arc;

use fieldstore_core::maintenance::{Claim, Item, ItemKind, Removed, Unit, UnitState};
use fieldstore_core::store::{read_verified, remove_claimed};
use fieldstore_core::{
    CollocationKey, DatasetKey, Error, ErrorKind, FieldLocation, Result, Store, StoreMaintenance,
    StoreWriter,
};

use crate::client::class_error;
use crate::client::{oid_hex, parse_oid_hex};
use crate::config::{DaosConfig, DEFAULT_CHUNK};
use crate::ffi::DAOS_OT_ARRAY_BYTE;
use crate::layout::dataset_label;
use crate::lease::{self, Recorded};
use crate::session::{is_gone, Cont, Session};

/// The DAOS store.
#[derive(Debug)]
pub struct DaosStore {
    cfg: DaosConfig,
    session: &'static Session,
}

impl DaosStore {
    /// Open the store a `daos:` section describes (loads libdaos and
    /// connects to the store pool).
    ///
    /// # Errors
    /// `InvalidConfig`, `Unavailable` (no libdaos or agent), `NotFound` (no
    /// such pool).
    pub fn open(section: &serde_json::Value) -> Result<DaosStore> {
        DaosStore::with_config(DaosConfig::from_value(section)?)
    }

    /// As [`DaosStore::open`], from a parsed section.
    ///
    /// # Errors
    /// As [`DaosStore::open`].
    pub fn with_config(cfg: DaosConfig) -> Result<DaosStore> {
        let session = Session::get(cfg.library.as_deref())?;
        session.pool(&cfg.store_pool)?;
        Ok(DaosStore { cfg, session })
    }
}

struct DaosStoreWriter {
    session: &'static Session,
    pool: String,
    label: String,
    redundancy: Option<u32>,
    cont: Arc<Cont>,
    class: u32,
    chunk: u64,
    per_alloc: u64,
    prefix: String,
    suffix: String,
    lease: std::time::Duration,
    kv_class: u32,
    /// The lease generation of the first array archived since the last
    /// flush: the flush is acknowledged only while it holds.
    batch: Option<u64>,
    /// The lease generation of the last flush's arrays, until the
    /// catalogue has published them ([`StoreWriter::confirm_published`]).
    published: Option<u64>,
    /// The arrays archived since the last flush: nothing can point to them
    /// until the store's flush returns, so a writer dropped before it
    /// destroys them (a long-lived process that drops a handle with
    /// unflushed fields would otherwise keep them until it ends).
    unflushed: Vec<crate::ffi::DaosObjId>,
}

/// A parsed location URI.
struct Parsed<'a> {
    pool: &'a str,
    container: &'a str,
    oid: crate::ffi::DaosObjId,
    chunk: u64,
}

fn parse_str(uri: &str) -> Option<Parsed<'_>> {
    let rest = uri.strip_prefix("daos://")?;
    let (path, query) = match rest.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (rest, None),
    };
    let mut parts = path.split('/');
    let (pool, container, oid) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || pool.is_empty() || container.is_empty() {
        return None;
    }
    let chunk = match query {
        None => DEFAULT_CHUNK,
        Some(q) => q.strip_prefix("chunk=")?.parse().ok().filter(|c| *c > 0)?,
    };
    Some(Parsed {
        pool,
        container,
        oid: parse_oid_hex(oid)?,
        chunk,
    })
}

impl Store for DaosStore {
    fn writer(&self, dataset: &DatasetKey) -> Result<Box<dyn StoreWriter>> {
        let label = dataset_label(dataset);
        let cont = self
            .session
            .container(
                &self.cfg.store_pool,
                &label,
                Some(self.cfg.container_redundancy),
            )?
            .ok_or_else(|| Error::internal("store container neither opened nor created"))?;
        crate::session::hold(&cont);
        Ok(Box::new(DaosStoreWriter {
            session: self.session,
            lease: self.cfg.writer_lease,
            kv_class: self.cfg.kv_class,
            batch: None,
            published: None,
            unflushed: Vec::new(),
            pool: self.cfg.store_pool.clone(),
            label: label.clone(),
            redundancy: self.cfg.container_redundancy,
            prefix: format!("daos://{}/{}/", self.cfg.store_pool, label),
            suffix: chunk_suffix(self.cfg.chunk_size),
            cont,
            class: self.cfg.array_class,
            chunk: self.cfg.chunk_size,
            per_alloc: self.cfg.oids_per_alloc,
        }))
    }

    fn read(&self, location: &FieldLocation, buf: &mut Vec<u8>) -> Result<()> {
        fieldstore_core::store::read_by_resize(self, location, buf)
    }

    fn read_into(&self, location: &FieldLocation, out: &mut [u8]) -> Result<()> {
        read_verified(location, out, ": the DAOS array is damaged", |out| {
            match self.read_once(location, out) {
                Err(e) if is_gone(&e) => {
                    // A cached handle of a container a wipe destroyed.
                    if let Some(p) = parse_str(&location.uri) {
                        self.session.evict(p.pool, p.container);
                    }
                    self.read_once(location, out)
                }
                r => r,
            }
        })
    }

    fn read_range(&self, location: &FieldLocation, offset: u64, out: &mut [u8]) -> Result<()> {
        self.read_into(&location.range(offset, out.len() as u64)?, out)
    }

    /// DAOS has no read-ahead hint worth an RPC.
    fn prefetch(&self, _locations: &[FieldLocation]) {}

    fn scheme(&self) -> &'static str {
        "daos"
    }

    fn maintenance(&self) -> Option<&dyn StoreMaintenance> {
        Some(self)
    }
}

impl StoreMaintenance for DaosStore {
    fn remove(&self, uri: &str) -> Result<Removed> {
        remove_claimed(self.claim(uri)?)
    }

    /// The arrays of dead leases on the dataset's store container that no
    /// entry points into: one size query per OID of their ranges. A dead
    /// lease with nothing left to destroy is removed from the lease KV
    /// (housekeeping, also in a dry run: it changes nothing a reader sees).
    fn orphans(
        &self,
        dataset: &DatasetKey,
        referenced: &std::collections::HashSet<String>,
    ) -> Result<Vec<Unit>> {
        let label = dataset_label(dataset);
        let Some(cont) = self.session.container(&self.cfg.store_pool, &label, None)? else {
            return Ok(Vec::new());
        };
        let kv = cont
            .c
            .kv(lease::lease_kv(&cont.c, self.cfg.kv_class)?, true)
            .map_err(class_error)?;
        let mut out = Vec::new();
        for key in kv.keys()? {
            let Some(recorded) = kv.get(&key)?.as_deref().and_then(Recorded::parse) else {
                continue;
            };
            if !recorded.is_dead() {
                continue;
            }
            let before = out.len();
            let suffix = chunk_suffix(recorded.chunk);
            for &(first, n) in &recorded.ranges {
                for lo in first..first.saturating_add(n) {
                    let oid = cont
                        .c
                        .generate_oid(0, lo, DAOS_OT_ARRAY_BYTE, recorded.class)
                        .map_err(class_error)?;
                    let uri = format!(
                        "daos://{}/{label}/{}{suffix}",
                        self.cfg.store_pool,
                        oid_hex(oid)
                    );
                    if referenced.contains(&uri) {
                        continue;
                    }
                    match cont
                        .c
                        .array(oid, recorded.chunk, false)
                        .and_then(|a| a.size())
                    {
                        Ok(0) => {}
                        Ok(bytes) => out.push(Unit {
                            uri,
                            bytes: Some(bytes),
                            state: UnitState::Idle,
                        }),
                        Err(e) if e.is(crate::ffi::der::NONEXIST) => {}
                        Err(e) => return Err(Error::from(e).context(&uri)),
                    }
                }
            }
            if out.len() == before {
                kv.remove(&key)?;
            }
        }
        Ok(out)
    }

    fn inspect(&self, uri: &str) -> Result<Unit> {
        // Arrays are written once, by the archive that created them: never
        // in use afterwards. Their size is in the locations (no RPC here).
        parse_uri(uri)?;
        Ok(Unit {
            uri: uri.to_string(),
            bytes: None,
            state: UnitState::Idle,
        })
    }

    fn claim(&self, uri: &str) -> Result<Claim<'_>> {
        // An array is written once, by the archive that created it, before
        // anything indexes it: no writer appends to one afterwards, so it
        // is held as soon as it is named (a missing one is found on removal).
        parse_uri(uri)?;
        let uri = uri.to_string();
        Ok(Claim::Held(Box::new(move || self.destroy_array(&uri))))
    }

    fn inventory(&self, dataset: &DatasetKey, _units: &[String]) -> Result<Vec<Item>> {
        let label = dataset_label(dataset);
        Ok(self
            .session
            .container(&self.cfg.store_pool, &label, None)?
            .map(|c| Item::new(ItemKind::Data, format!("daos://{}", c.c.name()), None))
            .into_iter()
            .collect())
    }

    fn wipe(&self, dataset: &DatasetKey, _units: &[String]) -> Result<()> {
        // Every field array of the dataset is in its container: one destroy.
        self.session
            .destroy(&self.cfg.store_pool, &dataset_label(dataset))
            .map(|_| ())
    }
}

/// A location URI's `?chunk=` query: none for the default chunk size.
fn chunk_suffix(chunk: u64) -> String {
    if chunk == DEFAULT_CHUNK {
        String::new()
    } else {
        format!("?chunk={chunk}")
    }
}

fn parse_uri(uri: &str) -> Result<Parsed<'_>> {
    parse_str(uri).ok_or_else(|| Error::invalid_input(format!("not a DAOS field location: {uri}")))
}

impl DaosStore {
    /// Read a field into `buf`, which is `location.length` bytes long (unverified).
    fn read_once(&self, location: &FieldLocation, buf: &mut [u8]) -> Result<()> {
        let p = parse_uri(&location.uri)?;
        let cont = self
            .session
            .container(p.pool, p.container, None)?
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::NotFound,
                    format!("{}: no such DAOS container", location.uri),
                )
            })?;
        let arr = cont.c.array(p.oid, p.chunk, false).map_err(class_error)?;
        let got = arr
            .read(location.offset, buf)
            .map_err(|e| Error::from(e).context(&location.uri))?;
        if got < location.length {
            if got == 0 {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!("{location}: no such field (the array is empty)"),
                ));
            }
            return Err(Error::corrupt(format!(
                "{location}: field cut short: {got} of {} bytes",
                location.length
            )));
        }
        Ok(())
    }
}

impl StoreWriter for DaosStoreWriter {
    fn archive(&mut self, _: &CollocationKey, data: &[u8]) -> Result<FieldLocation> {
        match self.archive_once(data) {
            Err(e) if is_gone(&e) => {
                // The container was destroyed under the writer (a wipe):
                // write into the dataset's container as it is now. The
                // catalogue writer's flush reports the wipe.
                self.session.evict(&self.pool, &self.label);
                self.cont = self
                    .session
                    .container(&self.pool, &self.label, Some(self.redundancy))?
                    .ok_or_else(|| Error::internal("store container neither opened nor created"))?;
                crate::session::hold(&self.cont);
                // What was archived before is gone with the container (the
                // catalogue's flush fails); what follows is under the new
                // container's lease.
                self.abandon();
                self.archive_once(data)
            }
            r => r,
        }
    }

    fn flush(&mut self) -> Result<()> {
        // daos_array_write returns once the bytes are durable on the
        // engines: nothing is buffered here. Acknowledged only if no purge
        // can have found this writer's process dead and destroyed arrays
        // the flush will point to.
        if let Some(generation) = self.batch {
            self.cont.lease.confirm(generation)?;
        }
        self.published = self.batch.take();
        self.unflushed.clear();
        Ok(())
    }

    /// The lease held, unbroken, from the flush through the catalogue's
    /// publish: [`lease::Lease::confirm`] again, now that the entries are
    /// visible. A writer stopped past its lease in between finds its lease
    /// ended (renewed too late, or its key removed by the purge that
    /// destroyed its arrays) and fails the flush instead of acknowledging
    /// fields that are gone.
    fn confirm_published(&mut self) -> Result<()> {
        let published = self.published.take();
        published.map_or(Ok(()), |generation| self.cont.lease.confirm(generation))
    }

    /// Arrays are complete once written: nothing is held until indexed.
    fn indexed(&mut self) {}

    /// One array per field: a failed flush's arrays are orphans, which a
    /// purge destroys once this process's lease is dead, or a wipe of the
    /// dataset (see [`StoreMaintenance::orphans`]).
    fn abandon(&mut self) {
        self.batch = None;
        self.published = None;
        self.unflushed.clear();
    }
}

impl Drop for DaosStoreWriter {
    /// Destroy the arrays archived since the last flush (best effort: what
    /// fails stays for a purge once this process's lease is dead).
    fn drop(&mut self) {
        for oid in self.unflushed.drain(..) {
            let _ = self
                .cont
                .c
                .array(oid, self.chunk, true)
                .and_then(|a| a.destroy());
        }
    }
}

impl DaosStoreWriter {
    fn archive_once(&mut self, data: &[u8]) -> Result<FieldLocation> {
        let (lo, generation) = self.cont.lease.next_oid(
            &self.cont.c,
            self.per_alloc,
            self.lease,
            (self.class, self.chunk, self.kv_class),
        )?;
        self.batch.get_or_insert(generation);
        let oid = self
            .cont
            .c
            .generate_oid(0, lo, DAOS_OT_ARRAY_BYTE, self.class)
            .map_err(class_error)?;
        let arr = self
            .cont
            .c
            .array(oid, self.chunk, true)
            .map_err(class_error)?;
        if !data.is_empty() {
            arr.write(0, data)?;
        }
        drop(arr);
        self.unflushed.push(oid);
        Ok(FieldLocation::new(
            format!("{}{}{}", self.prefix, oid_hex(oid), self.suffix),
            0,
            data.len() as u64,
        )
        .with_checksum(fieldstore_core::checksum::of_field(data)))
    }
}

impl DaosStore {
    /// Destroy a field's array; a missing one (or container) is fine.
    fn destroy_array(&self, uri: &str) -> Result<()> {
        let p = parse_uri(uri)?;
        let Some(cont) = self.session.container(p.pool, p.container, None)? else {
            return Ok(());
        };
        let result = cont
            .c
            .array(p.oid, p.chunk, true)
            .and_then(|arr| arr.destroy());
        match result {
            Ok(()) => Ok(()),
            Err(e) if e.is(crate::ffi::der::NONEXIST) => Ok(()),
            Err(e) if e.is(crate::ffi::der::NO_HDL) => {
                self.session.evict(p.pool, p.container);
                Ok(())
            }
            Err(e) => Err(Error::from(e).context(uri)),
        }
    }
}
