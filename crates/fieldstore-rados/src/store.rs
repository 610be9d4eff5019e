//! `RadosStore`: field bytes in per-writer RADOS objects.
//!
//! Each writer (one handle × one dataset) writes its fields one after the
//! other into objects it alone writes, `<dataset>.<writer id>.<n>.data`, at
//! offsets it chooses itself, and rolls over to object `n + 1` before an
//! object would pass the size limit (`object_size`, capped by the
//! cluster's `osd_max_object_size`). Small fields are gathered into 4 MiB
//! writes; a field of 512 KiB or more gets an object of its own (same
//! naming, next number). Up to
//! `in_flight` asynchronous writes are in flight at once; `flush` waits for
//! every one to be committed. Why packed objects for small fields and one
//! object per large field: `docs/benchmarks.md` (RADOS store layout).
//!
//! A location is `rados://<pool>/<namespace>/<object>` with the offset,
//! length and CRC-32C of the bytes, checked on every read.
//!
//! Before its first object a writer creates and watches `<dataset>.<writer
//! id>.alive`; when done it creates `<dataset>.<writer id>.closed`, then
//! removes `.alive` (`crate::liveness`). A unit is idle once its writer
//! closed it or died; purge finds the units killed writers left by listing
//! the namespace.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fieldstore_core::maintenance::{Claim, Item, ItemKind, Removed, Unit, UnitState};
use fieldstore_core::store::{read_verified, remove_claimed};
use fieldstore_core::{
    CollocationKey, DatasetKey, Error, ErrorKind, FieldLocation, Result, Store, StoreMaintenance,
    StoreWriter,
};

use crate::config::RadosConfig;
use crate::liveness::{self, closed_object, Liveness};
use crate::naming;
use crate::rados::{OrMissing, Pending, Pool, ENOENT};

/// Small fields are gathered into writes of this size.
const CHUNK: usize = 4 << 20;
/// Fields at least this large get an object of their own.
const OWN_OBJECT: usize = 512 << 10;

/// The RADOS store (`store: rados`).
#[derive(Debug)]
pub struct RadosStore {
    pool: Arc<Pool>,
    /// Pools of locations written under another pool or namespace.
    others: Mutex<HashMap<(String, String), Arc<Pool>>>,
    /// Writers known to be done with their objects (closed, or dead), as
    /// `rados://<pool>/<namespace>/<writer prefix>`: a writer that closed
    /// or died never writes again, so a purge asks each writer once, not
    /// again for each of its objects when it inspects and claims them.
    done: Mutex<std::collections::HashSet<String>>,
    /// Roll over to a new object before one passes this size.
    object_size: u64,
    /// The largest single write the OSDs accept.
    max_write: usize,
    in_flight: usize,
    /// Each writer's lease (`rados.writer_lease`).
    writer_lease: Duration,
}

/// A size option of the client's view of the cluster configuration.
fn conf_bytes(pool: &Pool, option: &str) -> Option<u64> {
    pool.cluster().conf_get(option)?.trim().parse().ok()
}

impl RadosStore {
    /// Connect and open the configured pool.
    ///
    /// # Errors
    /// `Unavailable` if the cluster cannot be reached; `NotFound` if the
    /// pool does not exist; `Unsupported` without librados.
    pub fn open(config: &RadosConfig) -> Result<RadosStore> {
        let pool = Arc::new(config.open_pool()?);
        // osd_max_object_size is in bytes (128 MiB by default); osd_max_write_size in MiB (90).
        let limit = conf_bytes(&pool, "osd_max_object_size").unwrap_or(128 << 20);
        let max_write = conf_bytes(&pool, "osd_max_write_size").map_or(90 << 20, |m| m << 20);
        Ok(RadosStore {
            object_size: config.object_size.min(limit),
            max_write: (max_write as usize).clamp(1 << 20, 16 << 20),
            in_flight: config.in_flight.max(1),
            writer_lease: config.writer_lease,
            pool,
            others: Mutex::new(HashMap::new()),
            done: Mutex::default(),
        })
    }

    /// Open the store a `rados:` configuration section describes.
    ///
    /// # Errors
    /// As [`RadosConfig::from_value`] and [`RadosStore::open`].
    pub fn from_config(section: &serde_json::Value) -> Result<RadosStore> {
        RadosStore::open(&RadosConfig::from_value(section)?)
    }

    /// The size past which data objects roll over.
    pub fn object_size(&self) -> u64 {
        self.object_size
    }

    fn pool_for(&self, pool: &str, namespace: &str) -> Result<Arc<Pool>> {
        if pool == self.pool.pool && namespace == self.pool.namespace {
            return Ok(self.pool.clone());
        }
        let mut others = self.others.lock().unwrap_or_else(|p| p.into_inner());
        let k = (pool.to_string(), namespace.to_string());
        if let Some(p) = others.get(&k) {
            return Ok(p.clone());
        }
        let p = Arc::new(Pool::open(self.pool.cluster().clone(), pool, namespace)?);
        others.insert(k, p.clone());
        Ok(p)
    }
}

impl Store for RadosStore {
    fn writer(&self, dataset: &DatasetKey) -> Result<Box<dyn StoreWriter>> {
        Ok(Box::new(RadosStoreWriter {
            pool: self.pool.clone(),
            prefix: format!(
                "{}.{}",
                naming::dataset_name(dataset),
                fieldstore_core::writer_id::next()
            ),
            object_size: self.object_size,
            max_write: self.max_write,
            in_flight: self.in_flight,
            seq: 0,
            object: String::new(),
            uri: Arc::from(""),
            used: 0,
            buf: Vec::new(),
            buf_at: 0,
            pending: VecDeque::new(),
            failed: None,
            lease: self.writer_lease,
            liveness: None,
        }))
    }

    fn read(&self, location: &FieldLocation, buf: &mut Vec<u8>) -> Result<()> {
        fieldstore_core::store::read_by_resize(self, location, buf)
    }

    fn read_into(&self, location: &FieldLocation, buf: &mut [u8]) -> Result<()> {
        read_verified(location, buf, ": the RADOS object is damaged", |buf| {
            self.read_once(location, buf)
        })
    }

    fn read_range(&self, location: &FieldLocation, offset: u64, out: &mut [u8]) -> Result<()> {
        self.read_once(&location.range(offset, out.len() as u64)?, out)
    }

    /// RADOS has no read-ahead hint.
    fn prefetch(&self, _locations: &[FieldLocation]) {}

    fn scheme(&self) -> &'static str {
        "rados"
    }

    fn maintenance(&self) -> Option<&dyn StoreMaintenance> {
        Some(self)
    }
}

impl RadosStore {
    /// Read `buf.len()` bytes at `location`, a field or a range of one
    /// (unverified: `read_into` checks a whole field's length and checksum).
    fn read_once(&self, location: &FieldLocation, buf: &mut [u8]) -> Result<()> {
        let (pool, ns, object) = naming::parse_uri(&location.uri)?;
        let pool = self.pool_for(&pool, &ns)?;
        let len = buf.len();
        let mut done = 0;
        while done < len {
            let want = (len - done).min(64 << 20);
            let n = pool
                .read(
                    object,
                    location.offset + done as u64,
                    &mut buf[done..done + want],
                )
                .map_err(|e| {
                    if e == ENOENT {
                        Error::new(
                            ErrorKind::NotFound,
                            format!("{location}: no such RADOS object"),
                        )
                    } else {
                        e.error(format!("reading {location}"))
                    }
                })?;
            if n == 0 {
                return Err(Error::corrupt(format!(
                    "{location}: the RADOS object ends {} bytes into the field (truncated?)",
                    done
                )));
            }
            done += n;
        }
        Ok(())
    }
}

impl StoreMaintenance for RadosStore {
    fn remove(&self, uri: &str) -> Result<Removed> {
        remove_claimed(self.claim(uri)?)
    }

    /// The data objects of `dataset` in this store's namespace that no
    /// entry points into and whose writer closed them or died: one listing
    /// of the namespace, then the writers' states all at once (up to a
    /// lease when a writer was killed less than a lease ago).
    fn orphans(
        &self,
        dataset: &DatasetKey,
        referenced: &std::collections::HashSet<String>,
    ) -> Result<Vec<Unit>> {
        let name = naming::dataset_name(dataset);
        let ours = |object: &str| writer_prefix(object).is_some_and(|p| is_writer_of(p, &name));
        let objects = self.pool.list_objects(ours)?;
        let mut by_writer: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for object in &objects {
            let Some(prefix) = writer_prefix(object) else {
                continue;
            };
            let uri = naming::uri(&self.pool.pool, &self.pool.namespace, object);
            if !referenced.contains(&uri) {
                by_writer.entry(prefix).or_default().push(object);
            }
        }
        let done = self.done_writers(&self.pool, by_writer.keys().copied())?;
        let mut out = Vec::new();
        for (prefix, objects) in by_writer {
            if !done.contains(prefix) {
                continue;
            }
            for object in objects {
                let what = || format!("reading {}", self.pool.what(object));
                if let Some(bytes) = self.pool.stat(object).or_missing(what)? {
                    out.push(Unit {
                        uri: naming::uri(&self.pool.pool, &self.pool.namespace, object),
                        bytes: Some(bytes),
                        state: UnitState::Idle,
                    });
                }
            }
        }
        Ok(out)
    }

    fn inspect(&self, uri: &str) -> Result<Unit> {
        let (pool, object) = self.unit(uri)?;
        let what = || format!("reading {}", pool.what(object));
        let Some(bytes) = pool.stat(object).or_missing(what)? else {
            return Ok(Unit {
                uri: uri.to_string(),
                bytes: None,
                state: UnitState::Missing,
            });
        };
        // Only a writer that closed its objects, or died, is known to be
        // done with them (a live one appends to its newest, and will flush
        // what it archived there).
        let done = match writer_prefix(object) {
            Some(prefix) => self.done_writers(&pool, [prefix])?.contains(prefix),
            None => false,
        };
        Ok(Unit {
            uri: uri.to_string(),
            bytes: Some(bytes),
            state: if done {
                UnitState::Idle
            } else {
                UnitState::InUse
            },
        })
    }

    /// The writers of all these units asked at once (`liveness::states`:
    /// at most one lease in total, when writers were killed less than a
    /// lease ago or their watches outlived them), then each unit inspected
    /// with what is now known (done writers are remembered).
    fn inspect_all(&self, uris: &[String]) -> Vec<Result<Unit>> {
        let mut by_pool: HashMap<String, (Arc<Pool>, Vec<&str>)> = HashMap::new();
        for uri in uris {
            if let Ok((pool, object)) = self.unit(uri) {
                if let Some(prefix) = writer_prefix(object) {
                    by_pool
                        .entry(pool.to_string())
                        .or_insert_with(|| (pool.clone(), Vec::new()))
                        .1
                        .push(prefix);
                }
            }
        }
        for (pool, prefixes) in by_pool.values() {
            // Errors show again in the inspections below.
            let _ = self.done_writers(pool, prefixes.iter().copied());
        }
        uris.iter().map(|u| self.inspect(u)).collect()
    }

    fn claim(&self, uri: &str) -> Result<Claim<'_>> {
        // A closed writer's objects get no more appends and no new
        // references (its flushes all came before it closed them); a dead
        // one's neither (its flushes fail: `Liveness::confirm`).
        Ok(match self.inspect(uri)?.state {
            UnitState::InUse => Claim::InUse,
            UnitState::Missing => Claim::Missing,
            UnitState::Idle => {
                let uri = uri.to_string();
                Claim::Held(Box::new(move || {
                    let (pool, object) = self.unit(&uri)?;
                    pool.remove(object)
                        .or_missing(|| format!("removing {}", pool.what(object)))
                        .map(drop)
                }))
            }
        })
    }

    fn inventory(&self, _dataset: &DatasetKey, units: &[String]) -> Result<Vec<Item>> {
        let mut out = Vec::new();
        let mut markers = std::collections::BTreeSet::new();
        for uri in units {
            let (pool, object) = self.unit(uri)?;
            if let Ok(size) = pool.stat(object) {
                out.push(Item::new(ItemKind::Data, uri.clone(), Some(size)));
            }
            if let Some(m) = markers_of(object) {
                if let Ok(size) = pool.stat(&m) {
                    if markers.insert(m.clone()) {
                        out.push(Item::new(ItemKind::Data, pool.what(&m), Some(size)));
                    }
                }
            }
        }
        Ok(out)
    }

    fn wipe(&self, _dataset: &DatasetKey, units: &[String]) -> Result<()> {
        for uri in units {
            let (pool, object) = self.unit(uri)?;
            for o in std::iter::once(object.to_string()).chain(markers_of(object)) {
                pool.remove(&o)
                    .or_missing(|| format!("removing {}", pool.what(&o)))?;
            }
        }
        Ok(())
    }
}

/// The writer of data object `<prefix>.<n>.data`: `<prefix>`
/// (`<dataset>.<writer id>`).
fn writer_prefix(object: &str) -> Option<&str> {
    let rest = object.strip_suffix(".data")?;
    let (prefix, n) = rest.rsplit_once('.')?;
    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then_some(prefix)
}

/// Whether writer `prefix` writes into the dataset named `name`: the rest
/// is exactly a writer id (`<host>.<pid>.<start>.<counter>`), so that a
/// dataset whose name continues this one's with a dot is not taken for it.
fn is_writer_of(prefix: &str, name: &str) -> bool {
    let Some(id) = prefix.strip_prefix(name).and_then(|r| r.strip_prefix('.')) else {
        return false;
    };
    fieldstore_core::writer_id::parse(id).is_some()
}

/// The marker a wipe removes with a data object: its writer's `.closed`.
/// Not `.alive`: a live writer's flush would then fail as if a purge had
/// found it dead, where it must fail because the dataset was wiped; a
/// writer removes its `.alive` when it closes (a killed one's stays).
fn markers_of(object: &str) -> Option<String> {
    writer_prefix(object).map(closed_object)
}

impl RadosStore {
    /// Which of the writers `prefixes` (of `pool`) are done with their
    /// objects: closed, or dead ([`liveness::states`] for those not known
    /// to be done already).
    ///
    /// # Errors
    /// As [`liveness::states`].
    fn done_writers<'p>(
        &self,
        pool: &Pool,
        prefixes: impl IntoIterator<Item = &'p str>,
    ) -> Result<std::collections::HashSet<String>> {
        let key = |prefix: &str| naming::uri(&pool.pool, &pool.namespace, prefix);
        let mut done = std::collections::HashSet::new();
        let mut ask = Vec::new();
        {
            let known = self.done.lock().unwrap_or_else(|p| p.into_inner());
            for prefix in prefixes {
                if known.contains(&key(prefix)) {
                    done.insert(prefix.to_string());
                } else {
                    ask.push(prefix);
                }
            }
        }
        if ask.is_empty() {
            return Ok(done);
        }
        let states = liveness::states(pool, ask)?;
        let mut known = self.done.lock().unwrap_or_else(|p| p.into_inner());
        for (prefix, state) in states {
            if state.is_done() {
                known.insert(key(&prefix));
                done.insert(prefix);
            }
        }
        Ok(done)
    }

    /// The pool and object of a unit's URI.
    fn unit<'u>(&self, uri: &'u str) -> Result<(Arc<Pool>, &'u str)> {
        let (pool, ns, object) = naming::parse_uri(uri)?;
        Ok((self.pool_for(&pool, &ns)?, object))
    }
}

/// One writer's objects in one dataset.
struct RadosStoreWriter {
    pool: Arc<Pool>,
    /// `<dataset>.<writer id>`: objects are `<prefix>.<n>.data`.
    prefix: String,
    object_size: u64,
    max_write: usize,
    in_flight: usize,
    /// Number of the last object named.
    seq: u64,
    /// The object small fields go to ("" before the first).
    object: String,
    uri: Arc<str>,
    /// Bytes of the current object given to fields so far.
    used: u64,
    /// Small fields not yet sent, and their offset in the current object.
    buf: Vec<u8>,
    buf_at: u64,
    pending: VecDeque<Pending>,
    /// The first failed write: every later archive and flush reports it.
    failed: Option<Error>,
    lease: Duration,
    /// The watch that shows this writer alive, from its first object on.
    liveness: Option<Liveness>,
}

impl RadosStoreWriter {
    /// A new object name and its URI; the first shows the writer alive
    /// before anything of it is written.
    fn new_object(&mut self) -> Result<(String, Arc<str>)> {
        if self.liveness.is_none() {
            self.liveness = Some(Liveness::register(&self.pool, &self.prefix, self.lease)?);
        }
        self.seq += 1;
        let object = format!("{}.{}.data", self.prefix, self.seq);
        let uri = Arc::from(naming::uri(&self.pool.pool, &self.pool.namespace, &object));
        Ok((object, uri))
    }

    fn check(&self) -> Result<()> {
        let Some(e) = &self.failed else { return Ok(()) };
        let why = format!("an earlier write of this writer failed: {e}");
        Err(Error::new(e.kind(), why))
    }

    /// Wait for the oldest writes until at most `keep` are in flight.
    fn settle(&mut self, keep: usize) {
        let n = self.pending.len().saturating_sub(keep);
        for p in self.pending.drain(..n) {
            if let Err((e, what)) = p.wait() {
                self.failed
                    .get_or_insert_with(|| e.error(format!("writing {what}")));
            }
        }
    }

    fn send(&mut self, object: &str, data: Vec<u8>, at: u64) -> Result<()> {
        self.settle(self.in_flight - 1);
        self.check()?;
        let p = self.pool.aio_write(object, data, Some(at))?;
        self.pending.push_back(p);
        Ok(())
    }

    fn send_buffer(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let data = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK));
        let object = std::mem::take(&mut self.object);
        let r = self.send(&object, data, self.buf_at);
        self.object = object;
        r
    }
}

impl StoreWriter for RadosStoreWriter {
    fn archive(&mut self, _collocation: &CollocationKey, data: &[u8]) -> Result<FieldLocation> {
        self.check()?;
        let len = data.len() as u64;
        if len > self.object_size {
            return Err(Error::invalid_input(format!(
                "a field of {len} bytes does not fit in one RADOS object of at most {} bytes \
                 (rados.object_size, capped by the cluster's osd_max_object_size)",
                self.object_size
            )));
        }
        let crc = fieldstore_core::checksum::of_field(data);
        if data.len() >= OWN_OBJECT {
            let (object, uri) = self.new_object()?;
            let mut done = 0;
            while done < data.len() {
                let n = (data.len() - done).min(self.max_write);
                self.send(&object, data[done..done + n].to_vec(), done as u64)?;
                done += n;
            }
            return Ok(FieldLocation::new(uri, 0, len).with_checksum(crc));
        }
        if self.object.is_empty() || self.used + len > self.object_size {
            self.send_buffer()?;
            (self.object, self.uri) = self.new_object()?;
            self.used = 0;
        }
        let at = self.used;
        if self.buf.is_empty() {
            self.buf_at = at;
        }
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.send_buffer()?;
        }
        self.used += len;
        Ok(FieldLocation::new(self.uri.clone(), at, len).with_checksum(crc))
    }

    fn flush(&mut self) -> Result<()> {
        self.send_buffer()?;
        self.settle(0);
        self.check()?;
        // Acknowledged only if no purge can have found this writer dead
        // and removed objects the flush will point into.
        if let Some(l) = &self.liveness {
            if let Err(e) = l.confirm() {
                self.failed = Some(e);
                return self.check();
            }
        }
        Ok(())
    }

    /// Objects are in use until the writer closes them (its marker
    /// object): nothing more to say once indexed.
    fn indexed(&mut self) {}

    /// The watch held, unbroken, from the flush through the catalogue's
    /// publish: [`Liveness::confirm`] again, now that the entries are
    /// visible. A writer stopped past its lease in between finds its watch
    /// dropped by the OSD (the purge that removed its objects got no answer
    /// from it) and fails the flush instead of acknowledging fields that
    /// are gone.
    fn confirm_published(&mut self) -> Result<()> {
        if let Some(l) = &self.liveness {
            if let Err(e) = l.confirm() {
                // Every later flush of this writer fails too.
                self.failed = Some(Error::new(e.kind(), e.to_string()));
                return Err(e);
            }
        }
        Ok(())
    }

    /// The bytes of a failed flush stay in the writer's objects until it
    /// closes them; purge removes an object once no newest entry points
    /// into it, wipe with the dataset.
    fn abandon(&mut self) {}
}

impl Drop for RadosStoreWriter {
    /// Done with its objects: say so with the marker object
    /// `<prefix>.closed`, so that purge may remove them once they hold only
    /// replaced fields; then stop showing itself alive (`.closed` first, so
    /// that one of the two always exists).
    fn drop(&mut self) {
        if self.seq == 0 {
            return;
        }
        self.settle(0);
        let closed = crate::rados::WriteOp::new().is_ok_and(|mut op| {
            op.create();
            self.pool.operate(&closed_object(&self.prefix), &op).is_ok()
        });
        if let Some(l) = self.liveness.take() {
            l.end(closed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_objects_name_their_writer() {
        let w = "od:0001:enfo:20231201:1200.vm-1.42.1795729125380246188.3";
        assert_eq!(writer_prefix(&format!("{w}.7.data")), Some(w));
        assert_eq!(writer_prefix(&format!("{w}.closed")), None);
        assert_eq!(writer_prefix(&format!("{w}.alive")), None);
        assert_eq!(writer_prefix(&format!("{w}..data")), None);
        assert_eq!(
            writer_prefix("od:0001:enfo:20231201:1200.catalogue.2"),
            None
        );
        assert_eq!(
            markers_of(&format!("{w}.7.data")),
            Some(format!("{w}.closed"))
        );
    }

    #[test]
    fn writers_belong_to_exactly_one_dataset() {
        let name = "od:0001:enfo:20231201:1200";
        assert!(is_writer_of(&format!("{name}.vm_1.42.17957.3"), name));
        // A dataset whose name continues this one's with a dot.
        assert!(!is_writer_of(&format!("{name}.5:x.vm.42.17957.3"), name));
        assert!(!is_writer_of(&format!("{name}.x.vm.42.17957.3"), name));
        assert!(!is_writer_of(&format!("{name}x.vm.42.17957.3"), name));
        assert!(!is_writer_of(&format!("{name}.vm.42.17957"), name));
        assert!(!is_writer_of(&format!("{name}.v m.42.17957.3"), name));
        assert!(!is_writer_of("other.vm.42.17957.3", name));
    }
}
