//! `RadosCatalogue`: each dataset is one RADOS object whose data is an
//! append-only log of flush records and whose omap holds the index blocks
//! those records name. [`RadosMedium`] is what RADOS gives the engine's
//! [`LogCatalogue`]. Layout: `docs/format/rados.md`.
//!
//! A writer's flush is **one** compound write operation on the dataset
//! object: `omap_set` of this flush's index blocks (one per collocation and
//! element keyword list) **and** `append` of one FLUSH record naming them,
//! with their axes. RADOS applies a compound operation atomically, and
//! applies the operations on one object one after the other, so:
//!
//! - a reader sees a flush whole or not at all (the record is the only way
//!   to a block, and both arrive together);
//! - the order of the records in the log is the order in which flushes
//!   became visible: it defines "newer" for replaced fields, with no lock,
//!   no counter and no compare-and-set between writers;
//! - readers follow the log from where they stopped (`refresh` reads only
//!   the bytes appended since), and read index blocks on first use of a
//!   collocation, many per round trip.
//!
//! Compare-and-set is used where a value could be replaced: registering a
//! dataset in the root object's omap only if its key is absent.

use std::collections::HashSet;
use std::sync::Arc;

use fieldstore_core::engine::log_catalogue::{CatalogueMedium, LogCatalogue, MediumMaintenance};
use fieldstore_core::engine::{check_held, LogReader};
use fieldstore_core::maintenance::{
    list_lock_marker, list_locked_dataset, locked, wiped_while_writing, Item, ItemKind,
    LIST_LOCK_PREFIX,
};
use fieldstore_core::record::block;
use fieldstore_core::record::named::{self, NamedBlock};
use fieldstore_core::record::pending::PendingEntries;
use fieldstore_core::{
    DatasetKey, DatasetReader, DatasetReaderExt, Error, ErrorKind, Locks, Operation, Result, Schema,
};

use crate::config::RadosConfig;
use crate::format::{self, Enc};
use crate::naming::{self, ROOT};
use crate::rados::{OrMissing, Pool, WriteOp, ECANCELED, EEXIST, EFBIG, ENOENT};
use crate::reader::{log_from, Blocks, RadosLog, RadosReader};
use crate::registry::{head_lost, register, unregister, Registry, WIPING};
use crate::segments::{
    append_counted, append_error, append_log, last_segment, no_dataset, read_init, record, seal_of,
    seal_segment, segment_object, Seal, ARCHIVE_LOCKED, SEALED, WIPED_SEAL,
};
use crate::waiter::RadosWaiter;

/// Index entries per block (one omap value).
const BLOCK_ENTRIES: usize = 4096;
/// Bytes of omap values per write operation; a flush larger than this
/// writes its blocks in earlier operations (invisible until the record).
const OP_BYTES: usize = 8 << 20;
/// A writer checks the size of the log segment every this many flushes.
const STAT_EVERY: u32 = 16;
/// The omap key, on segment 0, holding the dataset's locks (one byte).
const LOCKS: &[u8] = b"!locks";
/// How long librados keeps a writer's notify open waiting for watchers'
/// acknowledgements (a watcher that died keeps its watch until the OSD
/// times it out, 30 s by default). The writer never waits for it, but
/// closing the handle waits for the notifies still in flight (librados
/// must not be shut down under one), so this bounds that wait. Watchers
/// receive a notify when it is sent; the timeout only ends the wait for
/// their acknowledgements.
const NOTIFY_TIMEOUT_MS: u64 = 1_000;

/// Tell the watchers of `object` that it changed (see [`crate::waiter`]):
/// an asynchronous notify, never waited for. A notify that cannot be sent
/// is dropped: watchers poll, so it costs them latency only.
///
/// Cost per flush: the writer's thread allocates a completion and queues
/// one message (microseconds); the completion's callback releases it when
/// the watchers acked or the timeout passed, on librados's thread. The OSD
/// handles one more operation per flush — no disk write, no PG log entry —
/// and sends one message per watcher. Measured by the ignored test
/// `notify_cost` (single-node cluster sharing 2 cores with the client, one
/// 100-byte field per flush): 0.66–0.70 ms per flush without notifies,
/// 0.68–0.75 ms with notifies and no watcher, 0.76–0.79 ms with two
/// watchers: at most 0.1 ms, the OSD's work on the shared cores.
fn notify(pool: &Pool, object: &str, enabled: bool) {
    if enabled {
        let _ = pool.notify_async(object, NOTIFY_TIMEOUT_MS);
    }
}

/// The RADOS catalogue (`engine: rados`).
pub type RadosCatalogue = LogCatalogue<RadosMedium>;

/// What RADOS gives the engine's catalogue: a pool (and namespace) with
/// the root object and the datasets' log segments.
#[derive(Debug)]
pub struct RadosMedium {
    pool: Arc<Pool>,
    log_segment_size: u64,
    /// Notify watchers after each change (`rados.notify`).
    notify: bool,
    /// The root's registrations of datasets.
    registry: Registry,
}

impl RadosMedium {
    /// Connect and open the configured pool.
    ///
    /// # Errors
    /// `Unavailable` if the cluster cannot be reached; `NotFound` if the
    /// pool does not exist; `Unsupported` without librados.
    pub fn open(config: &RadosConfig) -> Result<RadosMedium> {
        let pool = Arc::new(config.open_pool()?);
        Ok(RadosMedium {
            registry: Registry::new(pool.clone()),
            pool,
            log_segment_size: config.log_segment_size,
            notify: config.notify,
        })
    }

    /// A [`RadosWaiter`]: what [`fieldstore_core::Catalogue::waiter`]
    /// gives, with its counters (notifications received, why the last wait
    /// returned).
    ///
    /// # Errors
    /// I/O errors listing the datasets.
    pub fn change_waiter(&self) -> Result<RadosWaiter> {
        RadosWaiter::new(self.pool.clone())
    }

    /// Open the medium a `rados:` configuration section describes.
    ///
    /// # Errors
    /// As [`RadosConfig::from_value`] and [`RadosMedium::open`].
    pub fn from_config(section: &serde_json::Value) -> Result<RadosMedium> {
        RadosMedium::open(&RadosConfig::from_value(section)?)
    }

    /// The datasets whose segment 0 exists but that `listed` (the root's
    /// entries) leaves out, found by one listing of the namespace (its cost
    /// grows with the namespace). One with something visible is
    /// registered again (its entry was lost behind fieldstore's back, or
    /// its first writer died before registering it); those whose log ends
    /// WIPED (a wipe interrupted after it unregistered them) are returned.
    fn find_unregistered(&self, listed: &[DatasetKey]) -> Result<Vec<DatasetKey>> {
        let listed: HashSet<String> = listed.iter().map(naming::dataset_object).collect();
        let heads = self
            .pool
            .list_objects(|n| n.ends_with(".catalogue") && !listed.contains(n))?;
        let mut wiped = Vec::new();
        for object in heads {
            let init = read_init(&self.pool, &object)?;
            let Some((key, ..)) = init.filter(|(k, ..)| naming::dataset_object(k) == object) else {
                continue;
            };
            let dataset = self.open(&key)?;
            match dataset.map(|d| self.open_reader(d)).transpose()?.flatten() {
                None => wiped.push(key),
                Some(r) if !r.collocations()?.is_empty() => {
                    if register(&self.pool, &object, &key, true)? {
                        notify(&self.pool, ROOT, self.notify)
                    }
                }
                Some(_) => {}
            }
        }
        Ok(wiped)
    }

    /// A reader of the dataset `dataset` opened, `None` if its log ends
    /// wiped.
    fn open_reader(&self, dataset: RadosDataset) -> Result<Option<RadosReader>> {
        let medium = RadosLog {
            pool: self.pool.clone(),
            object: dataset.object,
            key: dataset.key,
        };
        let reader = LogReader::open(medium, log_from(dataset.pos, dataset.schema))?;
        if reader.read().cursor.gone {
            return Ok(None);
        }
        Ok(Some(reader))
    }
}

/// A dataset as opened: its object (log segment 0), where its FLUSH
/// records begin and the schema it was created under (both unknown, 0 and
/// empty, when segment 0 was lost: the reader reads on from segment 1).
#[derive(Debug, Clone)]
pub struct RadosDataset {
    key: DatasetKey,
    object: String,
    pos: u64,
    schema: Arc<str>,
}

/// What a dataset's segment 0 says.
enum Head {
    /// Its INIT record: the key, where FLUSH records begin, the schema.
    Init((DatasetKey, u64, Arc<str>)),
    /// Missing, though the dataset is registered and not being wiped: lost
    /// behind fieldstore's back (`head_lost`).
    Lost,
    /// Missing: the dataset does not exist (yet, or any more).
    Absent,
}

/// Read segment 0, and the root if it is missing. A first writer creates
/// segment 0 before it registers the dataset, but it may create, flush and
/// register between this reader's read of segment 0 and its read of the
/// root: segment 0 is read once more before it counts as lost.
fn head(pool: &Pool, object: &str, key: &DatasetKey) -> Result<Head> {
    for _ in 0..2 {
        if let Some(init) = read_init(pool, object)? {
            return Ok(Head::Init(init));
        }
        if !head_lost(pool, key)? {
            return Ok(Head::Absent);
        }
    }
    Ok(Head::Lost)
}

/// Create the dataset object (exclusively, with its INIT record) unless it
/// exists; the schema it was created under.
fn ensure_dataset(
    pool: &Pool,
    object: &str,
    key: &DatasetKey,
    schema: &Schema,
) -> Result<Arc<str>> {
    let held = |(stored, _, stored_schema): (DatasetKey, u64, Arc<str>)| {
        check_held(&|| pool.what(object), &stored, key).map(|()| stored_schema)
    };
    match head(pool, object, key)? {
        Head::Init(init) => held(init),
        // Starting the log again would leave the records lost with segment
        // 0 unreported (its later segments would follow the new one).
        Head::Lost => Err(Error::corrupt(format!(
            "{} is missing, though dataset {key} is registered in {} and no wipe is under way: \
             its log lost segment 0 behind fieldstore's back; wipe the dataset before writing it \
             again",
            pool.what(object),
            pool.what(ROOT)
        ))),
        Head::Absent => {
            let mut p = Enc::default();
            p.str(&key.to_string());
            p.str(schema.text());
            let rec = format::FRAMING.framed(format::INIT, &p.0);
            let mut op = WriteOp::new()?;
            op.create_exclusive();
            op.append(&rec);
            match pool.operate(object, &op) {
                Ok(()) => Ok(Arc::from(schema.text())),
                // Another writer created it first: use theirs.
                Err(e) if e == EEXIST => held(read_init(pool, object)?.ok_or_else(|| {
                    Error::new(
                        ErrorKind::Io,
                        format!("{} vanished while being created", pool.what(object)),
                    )
                })?),
                Err(e) => Err(e.error(format!("creating {}", pool.what(object)))),
            }
        }
    }
}

impl CatalogueMedium for RadosMedium {
    type Dataset = RadosDataset;
    type Writer = RadosWriter;
    type Staged = RadosStaged;

    /// One read of segment 0's INIT record (and, if it is missing, one of
    /// the root and one more of segment 0: `head`).
    fn open(&self, key: &DatasetKey) -> Result<Option<RadosDataset>> {
        let object = naming::dataset_object(key);
        let (pos, schema) = match head(&self.pool, &object, key)? {
            Head::Init((stored, pos, schema)) => {
                check_held(&|| self.pool.what(&object), &stored, key)?;
                (pos, schema)
            }
            // Segment 0 removed behind fieldstore's back: a damaged log,
            // read on from segment 1 (`follow_log`).
            Head::Lost => (0, Arc::from("")),
            Head::Absent => return Ok(None),
        };
        Ok(Some(RadosDataset {
            key: key.clone(),
            object,
            pos,
            schema,
        }))
    }

    /// The root's entries (`Registry::datasets`), those it lost found
    /// by `find_unregistered`.
    fn registered(&self) -> Result<Vec<DatasetKey>> {
        self.registry
            .datasets(&|listed| self.find_unregistered(listed).map(drop))
    }

    fn describe(&self, key: &DatasetKey) -> String {
        self.pool.what(&naming::dataset_object(key))
    }

    fn reader(
        self: Arc<Self>,
        _: &DatasetKey,
        dataset: RadosDataset,
    ) -> Result<Option<Arc<dyn DatasetReader>>> {
        Ok(self
            .open_reader(dataset)?
            .map(|r| Arc::new(r) as Arc<dyn DatasetReader>))
    }

    /// Creates the dataset object with its INIT record unless it exists.
    /// Archive locks are checked in each flush's own operation.
    fn writer(&self, key: &DatasetKey, schema: &Schema) -> Result<(RadosDataset, RadosWriter)> {
        let object = naming::dataset_object(key);
        let schema = ensure_dataset(&self.pool, &object, key, schema)?;
        let dataset = RadosDataset {
            key: key.clone(),
            object,
            pos: 0,
            schema,
        };
        let writer = RadosWriter {
            writer: fieldstore_core::writer_id::next(),
            ..RadosWriter::default()
        };
        Ok((dataset, writer))
    }

    fn schema(&self, dataset: &RadosDataset) -> Arc<str> {
        dataset.schema.clone()
    }

    /// Blocks: per collocation, runs of one keyword list, at most
    /// `BLOCK_ENTRIES` entries each, keyed by writer, flush and number;
    /// the FLUSH record names them.
    fn stage(
        &self,
        _: &DatasetKey,
        _: &RadosDataset,
        w: &mut RadosWriter,
        pending: PendingEntries,
    ) -> Result<RadosStaged> {
        w.flushes += 1;
        let (mut blocks, mut named) = (Vec::new(), Vec::new());
        for (collocation, entries) in pending.groups_at_most(BLOCK_ENTRIES) {
            let (payload, axes) = block::encode(&Blocks, collocation, entries);
            let key = format!("{}.{:08}.{:05}", w.writer, w.flushes, blocks.len());
            blocks.push((key.clone(), format::FRAMING.framed(format::BLOCK, &payload)));
            named.push(NamedBlock {
                place: key,
                count: entries.len() as u32,
                collocation: collocation.clone(),
                axes,
            });
        }
        let record = named::encode_flush(Some(&w.writer), &named, &mut |e, key| e.str(key));
        let record = format::FRAMING.framed(format::FLUSH, &record);
        Ok(RadosStaged { blocks, record })
    }

    /// The blocks, in operations of at most `OP_BYTES`; the last one
    /// also appends the record, which makes them all visible at once.
    /// Every operation requires the segment not to be sealed and the
    /// dataset not locked against archive; on a sealed segment the flush
    /// goes again to the next.
    fn publish(
        &self,
        key: &DatasetKey,
        dataset: &RadosDataset,
        w: &mut RadosWriter,
        staged: RadosStaged,
    ) -> Result<()> {
        let object = &dataset.object;
        if !w.located {
            // The first flush finds the last segment by its seals, and
            // finishes a seal that is unfinished or lost its `!sealed` key
            // ([`last_segment`]), rather than append after a SEAL record.
            match last_segment(&self.pool, object)? {
                Some((k, Seal::Open)) => w.segment = k,
                _ => return Err(wiped_while_writing(key)),
            }
            w.located = true;
        }
        let mut hops = 0;
        while !self.flush_to_segment(key, object, w, &staged)? {
            hops += 1;
            if hops > 10_000 {
                return Err(Error::internal(format!(
                    "{}: no unsealed log segment found",
                    self.pool.what(object)
                )));
            }
        }
        // Visible now: wake the watchers of the dataset's head object
        // (whatever segment the record went to), without waiting for them.
        notify(&self.pool, object, self.notify);
        w.since_stat += 1;
        if w.since_stat >= STAT_EVERY || self.log_segment_size < (1 << 20) {
            w.since_stat = 0;
            let obj = segment_object(object, w.segment);
            let what = || format!("checking the size of {}", self.pool.what(&obj));
            let Some(size) = self.pool.stat(&obj).or_missing(what)? else {
                return Err(wiped_while_writing(key));
            };
            if size >= self.log_segment_size {
                self.seal(key, object, w)?;
            }
        }
        if !w.registered {
            // A new dataset: the watchers of the root learn of it.
            if register(&self.pool, object, key, false)? {
                notify(&self.pool, ROOT, self.notify);
            }
            w.registered = true;
        }
        Ok(())
    }

    /// Segment 0's `!locks` key.
    fn locks(&self, dataset: &RadosDataset) -> Result<Locks> {
        let what = || format!("reading the locks of {}", self.pool.what(&dataset.object));
        let v = self
            .pool
            .omap_get(&dataset.object, &[LOCKS])
            .or_missing(what)?;
        Ok(v.into_iter()
            .flatten()
            .next()
            .and_then(|(_, b)| b.first().copied())
            .map_or(Locks::NONE, Locks::from_bits))
    }

    /// Segment 0 keeps the set (for `locks`); then, in one operation on
    /// the last segment, the key flushes compare and the CONTROL record.
    fn set_locks(&self, dataset: &RadosDataset, locks: Locks, control: &[u8]) -> Result<()> {
        let object = &dataset.object;
        let mut op = WriteOp::new()?;
        op.assert_exists();
        op.omap_set(&[(LOCKS, &[locks.bits()])]);
        match self.pool.operate(object, &op) {
            Ok(()) => {}
            Err(e) if e == ENOENT => return Err(no_dataset(&self.pool, object, &dataset.key)),
            Err(e) => return Err(e.error(format!("locking {}", self.pool.what(object)))),
        }
        let archive = locks.contains(Operation::Archive);
        let rec = format::FRAMING.framed(format::CONTROL, control);
        append_log(&self.pool, object, &dataset.key, &rec, &|op| {
            if archive {
                op.omap_set(&[(ARCHIVE_LOCKED, b"1")]);
            } else {
                op.omap_rm_keys(&[ARCHIVE_LOCKED]);
            }
        })?;
        notify(&self.pool, object, self.notify);
        Ok(())
    }

    /// The log is never rewritten: a record at its end.
    fn append(&self, dataset: &RadosDataset, kind: u16, payload: &[u8]) -> Result<()> {
        let rec = format::FRAMING.framed(kind, payload);
        append_log(&self.pool, &dataset.object, &dataset.key, &rec, &|_| {})?;
        notify(&self.pool, &dataset.object, self.notify);
        Ok(())
    }

    fn waiter(&self) -> Result<Box<dyn fieldstore_core::ChangeWaiter>> {
        Ok(Box::new(self.change_waiter()?))
    }
}

impl MediumMaintenance for RadosMedium {
    /// The root's `!list-locked ` keys, a page per read.
    fn list_locked(&self) -> Result<Option<Vec<DatasetKey>>> {
        let mut out = Vec::new();
        self.registry.keys(LIST_LOCK_PREFIX, &mut |k, _| {
            out.extend(list_locked_dataset(&String::from_utf8_lossy(k)));
            Ok(())
        })?;
        Ok(Some(out))
    }

    /// Dataset listings read the root only.
    fn mark_list_locked(&self, key: &DatasetKey, control: Option<&[u8]>) -> Result<()> {
        let marker = list_lock_marker(key);
        let mut op = WriteOp::new()?;
        match control {
            Some(_) => op.omap_set(&[(marker.as_bytes(), b"1")]),
            None => op.omap_rm_keys(&[marker.as_bytes()]),
        }
        self.pool
            .operate(ROOT, &op)
            .map_err(|e| e.error(format!("marking a list lock in {}", self.pool.what(ROOT))))
    }

    /// Logs the root does not register (`find_unregistered`, paid by
    /// `status` and `wipe`; by `list` only when the root's count says it
    /// lost entries). A wipe unregisters a dataset last, so one that ends
    /// WIPED is a wipe interrupted (the next wipe finishes it).
    fn interrupted_wipes(&self) -> Result<Vec<DatasetKey>> {
        self.find_unregistered(&self.registry.read()?.0)
    }

    fn inventory(&self, dataset: &DatasetKey) -> Result<Vec<Item>> {
        let object = naming::dataset_object(dataset);
        let mut items = Vec::new();
        if let Some((last, _)) = last_segment(&self.pool, &object)? {
            for k in 0..=last {
                let obj = segment_object(&object, k);
                if let Ok(size) = self.pool.stat(&obj) {
                    items.push(Item::new(
                        ItemKind::Catalogue,
                        self.pool.what(&obj),
                        Some(size),
                    ));
                }
            }
        }
        items.push(Item::new(
            ItemKind::Catalogue,
            format!("{} key {dataset}", self.pool.what(ROOT)),
            None,
        ));
        Ok(items)
    }

    fn wipe(
        &self,
        dataset: &DatasetKey,
        _unsafe_wipe_all: bool,
        store_step: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        let object = naming::dataset_object(dataset);
        // 1. Hide: seal the last segment as wiped and append WIPED, in one
        //    operation. Readers see everything or nothing from there on;
        //    flushes, which require the segment unsealed, fail.
        let mut last = None;
        for _ in 0..10_000 {
            let Some((k, seal)) = last_segment(&self.pool, &object)? else {
                break;
            };
            last = Some(k);
            if seal == Seal::Wiped {
                break;
            }
            let obj = segment_object(&object, k);
            let mut op = WriteOp::new()?;
            op.assert_exists();
            op.omap_cmp_eq(SEALED, b"");
            op.omap_set(&[(SEALED, WIPED_SEAL)]);
            append_counted(&mut op, &record(format::WIPED, &|_| {}));
            match self.pool.operate(&obj, &op) {
                Ok(()) => {
                    notify(&self.pool, &object, self.notify);
                    break;
                }
                Err(e) if e == ECANCELED || e == ENOENT => continue,
                Err(e) => return Err(append_error(e, format!("wiping {}", self.pool.what(&obj)))),
            }
        }
        // 2. The store's part.
        store_step()?;
        // 3. The log, segment 0 last (its INIT names the dataset until the
        //    end), marked in the root as being wiped first (so that segment
        //    0 missing is not taken for damage, `head_lost`), then the
        //    registration and the mark — the registration set again if a
        //    writer created the dataset anew meanwhile.
        let k = dataset.to_string();
        let wiping = format!("{WIPING}{k}");
        let mut op = WriteOp::new()?;
        op.omap_set(&[(wiping.as_bytes(), b"1")]);
        self.pool.operate(ROOT, &op).map_err(|e| {
            e.error(format!(
                "marking {k} as being wiped in {}",
                self.pool.what(ROOT)
            ))
        })?;
        if let Some(last) = last {
            for k in (0..=last).rev() {
                let obj = segment_object(&object, k);
                let what = || format!("removing {}", self.pool.what(&obj));
                self.pool.remove(&obj).or_missing(what)?;
            }
        }
        let marker = list_lock_marker(dataset);
        if unregister(&self.pool, &k, &[marker.as_bytes(), wiping.as_bytes()])? {
            notify(&self.pool, ROOT, self.notify);
        }
        if let Some((_, seal)) = last_segment(&self.pool, &object)? {
            if seal != Seal::Wiped && register(&self.pool, &object, dataset, false)? {
                notify(&self.pool, ROOT, self.notify);
            }
        }
        Ok(())
    }
}
/// Where a writer stands between flushes.
#[derive(Debug, Default)]
pub struct RadosWriter {
    /// Whether this writer saw the dataset registered in the root.
    registered: bool,
    /// The log segment this writer appends to (the last one it knows).
    segment: u32,
    /// Whether `segment` was found by [`last_segment`] (at the first flush).
    located: bool,
    /// Flushes since the segment's size was last checked.
    since_stat: u32,
    writer: String,
    flushes: u64,
}

/// A flush written ahead: its blocks (omap key, framed value) and its
/// framed FLUSH record. Nothing is sent before the commit: the blocks go
/// in the record's own operation (or the ones just before it).
pub struct RadosStaged {
    blocks: Vec<(String, Vec<u8>)>,
    record: Vec<u8>,
}

impl RadosMedium {
    /// Send a flush to writer `w`'s current segment: `Ok(false)` if the
    /// segment turned out to be sealed (the writer then moved to the next
    /// one).
    fn flush_to_segment(
        &self,
        key: &DatasetKey,
        object: &str,
        w: &mut RadosWriter,
        staged: &RadosStaged,
    ) -> Result<bool> {
        let (pool, blocks) = (&self.pool, &staged.blocks);
        let obj = segment_object(object, w.segment);
        let what = || format!("flushing to {}", pool.what(&obj));
        let mut i = 0;
        loop {
            let mut size = 0;
            let mut j = i;
            while j < blocks.len() && (j == i || size + blocks[j].1.len() <= OP_BYTES) {
                size += blocks[j].1.len();
                j += 1;
            }
            let pairs: Vec<(&[u8], &[u8])> = blocks[i..j]
                .iter()
                .map(|(k, v)| (k.as_bytes(), v.as_slice()))
                .collect();
            let mut op = WriteOp::new()?;
            op.assert_exists();
            op.omap_cmp_eq(SEALED, b"");
            // An archive lock is a key on the last segment: one comparison
            // in the flush's own operation, no extra round trip.
            op.omap_cmp_eq(ARCHIVE_LOCKED, b"");
            op.omap_set(&pairs);
            let last = j == blocks.len();
            if last {
                append_counted(&mut op, &staged.record);
            }
            match pool.operate(&obj, &op) {
                Ok(()) => {}
                Err(e) if e == ECANCELED => {
                    match seal_of(pool, &obj)? {
                        Seal::Next(n) => w.segment = n,
                        Seal::Wiped => return Err(wiped_while_writing(key)),
                        Seal::Open => {
                            let lock = pool.omap_get(&obj, &[ARCHIVE_LOCKED]).map_err(|e| {
                                e.error(format!("reading the locks of {}", pool.what(&obj)))
                            })?;
                            if lock.iter().any(|(_, v)| !v.is_empty()) {
                                return Err(locked(key, Operation::Archive));
                            }
                            // Unlocked meanwhile: try again.
                        }
                    }
                    return Ok(false);
                }
                Err(e) if e == EFBIG => {
                    // The segment reached the cluster's object size limit.
                    self.seal(key, object, w)?;
                    return Ok(false);
                }
                // The dataset's objects were removed: a wipe.
                Err(e) if e == ENOENT => return Err(wiped_while_writing(key)),
                Err(e) => return Err(append_error(e, what())),
            }
            if last {
                return Ok(true);
            }
            i = j;
        }
    }

    /// Seal writer `w`'s segment (unless another writer did) and move to
    /// the next ([`seal_segment`]).
    fn seal(&self, key: &DatasetKey, object: &str, w: &mut RadosWriter) -> Result<()> {
        w.segment =
            seal_segment(&self.pool, object, w.segment)?.ok_or_else(|| wiped_while_writing(key))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An object class the OSDs do not load fails the whole operation,
    /// and the error says what the log needs: on a real cluster, as OSDs
    /// without `numops` would answer every flush.
    #[test]
    fn a_missing_object_class_is_unsupported_and_says_so() {
        let Some(c) = fieldstore_testkit::ceph::cluster() else {
            return;
        };
        let mut config = RadosConfig::new(c.pool.clone());
        config.conf = Some(c.conf.clone());
        config.namespace = fieldstore_testkit::ceph::namespace("cls");
        let pool = config.open_pool().expect("the pool");
        let mut op = WriteOp::new().expect("an op");
        op.create();
        op.exec(c"nosuchclass", c"add", b"");
        op.append(b"never");
        let e = pool
            .operate("x", &op)
            .expect_err("a call of a missing class");
        let err = append_error(e, "appending to x");
        assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
        assert!(err.to_string().contains("numops"), "{err}");
        assert_eq!(pool.stat("x"), Err(ENOENT), "the failed operation applied");
    }
}
