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

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use fieldstore_core::engine::framed::{self, FramedRecords, Step};
use fieldstore_core::engine::log_catalogue::{CatalogueMedium, LogCatalogue, MediumMaintenance};
use fieldstore_core::engine::{check_held, EndLook, Entries, Log, LogMedium, LogReader};
use fieldstore_core::maintenance::{
    list_lock_marker, list_locked_dataset, locked, wiped_while_writing, Item, ItemKind,
    LIST_LOCK_PREFIX,
};
use fieldstore_core::record::block::{self, BlockFormat, ValueLen};
use fieldstore_core::record::maintenance as records;
use fieldstore_core::record::named::{self, NamedBlock};
use fieldstore_core::record::pending::PendingEntries;
use fieldstore_core::{
    DamageMayName, DatasetKey, DatasetReader, DatasetReaderExt, ElementKey, Error, ErrorKind,
    FieldLocation, Key, Locks, Operation, Result, Schema,
};

use crate::config::RadosConfig;
use crate::format::{self, Dec, Enc, Framed};
use crate::naming::{self, ROOT};
use crate::rados::{Errno, Pool, WriteOp, ECANCELED, EEXIST, EFBIG, ENOENT, EOPNOTSUPP, EPERM};
use crate::waiter::RadosWaiter;

/// Index entries per block (one omap value).
const BLOCK_ENTRIES: usize = 4096;
/// Bytes of omap values per write operation; a flush larger than this
/// writes its blocks in earlier operations (invisible until the record).
const OP_BYTES: usize = 8 << 20;
/// Blocks fetched per omap read.
const KEYS_PER_READ: usize = 512;
/// Datasets listed per omap page.
const PAGE: u64 = 1000;
/// The omap key of a sealed log segment: the number of the next segment.
/// (Block keys begin with a writer id, never with `!`.)
const SEALED: &[u8] = b"!sealed";
/// The omap key of a log segment counting the records appended to it
/// after INIT, in ASCII digits: the operation that appends a record adds 1
/// to it ([`append_counted`]), so that records cut off or removed behind
/// fieldstore's back are told from the log's end.
const RECORDS: &[u8] = b"!records";
/// The root's omap key counting the datasets registered in it, in ASCII
/// digits: the operation that sets a dataset's entry adds 1 to it, the one
/// that removes it takes 1 ([`count`]), so that a listing that finds fewer
/// entries than the count tells entries removed behind fieldstore's back
/// ([`RadosMedium::registered`]). Absent in a root written before it.
const DATASETS: &[u8] = b"!datasets";
/// A writer checks the size of the log segment every this many flushes.
const STAT_EVERY: u32 = 16;
/// The `!sealed` value of the last segment of a wiped dataset.
const WIPED_SEAL: &[u8] = b"wiped";
/// The omap key, on the last log segment, present while the dataset is
/// locked against archive: every flush compares it with the empty value.
const ARCHIVE_LOCKED: &[u8] = b"!archive-locked";
/// The omap key, on segment 0, holding the dataset's locks (one byte).
const LOCKS: &[u8] = b"!locks";
/// The prefix of the root's omap key `!wiping <dataset key>`, present while
/// a wipe removes the dataset's log segments: segment 0 missing while the
/// dataset is registered is a wipe under way only with it ([`head_lost`]).
const WIPING: &str = "!wiping ";
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

/// What a segment's `!sealed` key says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seal {
    /// Not sealed: the last segment.
    Open,
    /// Sealed; the log goes on in this segment.
    Next(u32),
    /// The dataset is wiped: nothing may be appended.
    Wiped,
}

/// The seal of segment `object`.
fn seal_of(pool: &Pool, object: &str) -> Result<Seal> {
    segment_end(pool, object)?
        .map(|(seal, _)| seal)
        .ok_or_else(|| ENOENT.error(format!("reading the seal of {}", pool.what(object))))
}

/// The seal of segment `object` and its `!records` count (`None` if no
/// record was appended since INIT, or only by a version before it), in
/// one omap read; `None` if the segment is gone (a wipe).
fn segment_end(pool: &Pool, object: &str) -> Result<Option<(Seal, Option<u64>)>> {
    let v = match pool.omap_get(object, &[SEALED, RECORDS]) {
        Ok(v) => v,
        Err(e) if e == ENOENT => return Ok(None),
        Err(e) => return Err(e.error(format!("reading the seal of {}", pool.what(object)))),
    };
    let (mut seal, mut records) = (Seal::Open, None);
    for (k, v) in v {
        if k == RECORDS {
            records = counter(&v).map(|n| n as u64);
        } else if v == WIPED_SEAL {
            seal = Seal::Wiped;
        } else if !v.is_empty() {
            seal = std::str::from_utf8(&v)
                .ok()
                .and_then(|t| t.parse().ok())
                .map(Seal::Next)
                .ok_or_else(|| Error::corrupt(format!("{}: bad seal {v:?}", pool.what(object))))?;
        }
    }
    Ok(Some((seal, records)))
}

/// Add to `op` the addition of `delta` (`1` or `-1`) to the counter at
/// omap key `key`, applied with the rest of `op`: the OSD's `numops`
/// object class (in Ceph's default class list; its methods are `add` and
/// `mul`).
fn count(op: &mut WriteOp, key: &[u8], delta: &str) {
    // Its input: the key and the number, each a Ceph-encoded string (a
    // little-endian u32 length, then the bytes).
    let mut input = Vec::with_capacity(key.len() + 10);
    for s in [key, delta.as_bytes()] {
        input.extend_from_slice(&(s.len() as u32).to_le_bytes());
        input.extend_from_slice(s);
    }
    op.exec(c"numops", c"add", &input);
}

/// The value of a counter [`count`] keeps: the `numops` class writes a
/// double, 10 significant digits.
fn counter(value: &[u8]) -> Option<f64> {
    std::str::from_utf8(value).ok()?.parse().ok()
}

/// Add to `op` the append of record `rec` to a log segment and the count
/// of its records (`!records`), applied together.
pub(crate) fn append_counted(op: &mut WriteOp, rec: &[u8]) {
    count(op, RECORDS, "1");
    op.append(rec);
}

/// The error of an operation that appends to a log segment (one with
/// [`append_counted`]): refused (EPERM) or not understood (EOPNOTSUPP),
/// it is said to be the `numops` class call, the likeliest cause.
fn append_error(e: Errno, what: impl std::fmt::Display) -> Error {
    if e != EPERM && e != EOPNOTSUPP {
        return e.error(what);
    }
    let os = std::io::Error::from_raw_os_error(e.0);
    Error::new(
        ErrorKind::Unsupported,
        format!(
            "{what}: {os}: the OSDs refused a call of the `numops` object class, which \
             fieldstore's log needs: the class is not loaded or not allowed (Ceph's \
             `osd_class_load_list`, `osd_class_default_list`), or this client's key lacks the \
             OSD capability to call classes (`x`) or to write (`w`)"
        ),
    )
    .with_source(os)
}

/// The last segment of the log whose segment 0 is `base` and its seal
/// (`Open`, or `Wiped`); `None` if no segment exists. With segment 0 gone
/// (a wipe's last step, or damage: [`head_lost`]), the last of the
/// segments after it: what a wipe still has to remove.
fn last_segment(pool: &Pool, base: &str) -> Result<Option<(u32, Seal)>> {
    let (mut k, mut first) = (0, 0);
    loop {
        let obj = segment_object(base, k);
        match pool.stat(&obj) {
            Ok(_) => {}
            Err(e) if e == ENOENT && k == 0 => {
                (k, first) = (1, 1);
                continue;
            }
            Err(e) if e == ENOENT => return Ok((k != first).then_some((k, Seal::Open))),
            Err(e) => return Err(e.error(format!("reading {}", pool.what(&obj)))),
        }
        match seal_of(pool, &obj)? {
            Seal::Next(n) => k = n,
            Seal::Open => {
                // The next segment exists, though this one is not marked
                // sealed: its sealer died between creating the next one
                // and sealing this one, or its `!sealed` key was lost
                // (damage; its SEAL record is there). Seal it (again), so
                // that nothing is appended after a SEAL, and go on.
                let next = segment_object(base, k + 1);
                match pool.stat(&next) {
                    Ok(_) => match seal_segment(pool, base, k)? {
                        Some(n) => k = n,
                        None => return Ok(Some((k, Seal::Wiped))),
                    },
                    Err(e) if e == ENOENT => return Ok(Some((k, Seal::Open))),
                    Err(e) => return Err(e.error(format!("reading {}", pool.what(&next)))),
                }
            }
            Seal::Wiped => return Ok(Some((k, Seal::Wiped))),
        }
    }
}

/// Whether the log of `key` lost its segment 0 behind fieldstore's back:
/// the dataset is still registered in the root, and no wipe marked it as
/// being wiped ([`WIPING`]; a wipe removes segment 0, then the
/// registration). One omap read of the root, paid only when segment 0 is
/// missing.
fn head_lost(pool: &Pool, key: &DatasetKey) -> Result<bool> {
    let k = key.to_string();
    let wiping = format!("{WIPING}{k}");
    match pool.omap_get(ROOT, &[k.as_bytes(), wiping.as_bytes()]) {
        Ok(v) => Ok(v.len() == 1 && v[0].0 == k.as_bytes()),
        Err(e) if e == ENOENT => Ok(false),
        Err(e) => Err(e.error(format!("reading {}", pool.what(ROOT)))),
    }
}

/// Seal log segment `segment` of the log whose segment 0 is `base` (unless
/// another writer did) and return the segment the log goes on in (`None`:
/// the dataset is wiped): create the next segment, then, atomically on
/// this one, mark it sealed and append a SEAL record naming the next.
/// Once sealed, no flush can be appended to a segment, so every record of
/// segment k precedes every record of segment k + 1.
fn seal_segment(pool: &Pool, base: &str, segment: u32) -> Result<Option<u32>> {
    let obj = segment_object(base, segment);
    let next = segment + 1;
    let next_obj = segment_object(base, next);
    let mut p = Enc::default();
    p.u32(next);
    let mut rec = Vec::new();
    format::FRAMING.frame(&mut rec, format::SEAL, &p.0);
    for _ in 0..1000 {
        // The next segment inherits the archive lock; the seal applies
        // only if the lock did not change meanwhile.
        let lock: Vec<u8> = pool
            .omap_get(&obj, &[ARCHIVE_LOCKED])
            .map_err(|e| e.error(format!("reading the locks of {}", pool.what(&obj))))?
            .into_iter()
            .next()
            .map(|(_, v)| v)
            .unwrap_or_default();
        let mut create = WriteOp::new()?;
        create.create();
        if lock.is_empty() {
            create.omap_rm_keys(&[ARCHIVE_LOCKED]);
        } else {
            create.omap_set(&[(ARCHIVE_LOCKED, &lock)]);
        }
        pool.operate(&next_obj, &create)
            .map_err(|e| e.error(format!("creating {}", pool.what(&next_obj))))?;
        let mut op = WriteOp::new()?;
        op.assert_exists();
        op.omap_cmp_eq(SEALED, b"");
        op.omap_cmp_eq(ARCHIVE_LOCKED, &lock);
        op.omap_set(&[(SEALED, next.to_string().as_bytes())]);
        append_counted(&mut op, &rec);
        match pool.operate(&obj, &op) {
            Ok(()) => return Ok(Some(next)),
            Err(e) if e == ECANCELED => match seal_of(pool, &obj)? {
                Seal::Next(n) => return Ok(Some(n)),
                Seal::Wiped => return Ok(None),
                // The lock changed: copy it again.
                Seal::Open => {}
            },
            Err(e) if e == ENOENT => return Ok(None),
            Err(e) => return Err(append_error(e, format!("sealing {}", pool.what(&obj)))),
        }
    }
    Err(Error::internal(format!(
        "{}: the seal kept failing",
        pool.what(&obj)
    )))
}

/// Append a record to the end of the log, with `more` added to the same
/// atomic operation on the last segment.
fn append_log(
    pool: &Pool,
    base: &str,
    key: &DatasetKey,
    rec: &[u8],
    more: &dyn Fn(&mut WriteOp),
) -> Result<()> {
    let mut segment = match last_segment(pool, base)? {
        None => {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!("no dataset {} in {}", key.braced(), pool.what(base)),
            ))
        }
        Some((_, Seal::Wiped)) | Some((_, Seal::Next(_))) => return Err(wiped_while_writing(key)),
        Some((k, Seal::Open)) => k,
    };
    for _ in 0..10_000 {
        let obj = segment_object(base, segment);
        let mut op = WriteOp::new()?;
        op.assert_exists();
        op.omap_cmp_eq(SEALED, b"");
        more(&mut op);
        append_counted(&mut op, rec);
        match pool.operate(&obj, &op) {
            Ok(()) => return Ok(()),
            Err(e) if e == ECANCELED => match seal_of(pool, &obj)? {
                Seal::Next(n) => segment = n,
                Seal::Wiped => return Err(wiped_while_writing(key)),
                Seal::Open => {}
            },
            Err(e) if e == ENOENT => return Err(wiped_while_writing(key)),
            Err(e) => return Err(append_error(e, format!("appending to {}", pool.what(&obj)))),
        }
    }
    Err(Error::internal(format!(
        "{}: no unsealed log segment found",
        pool.what(base)
    )))
}

/// A framed record of `kind` with a timestamp and then `body`.
fn record(kind: u16, body: &dyn Fn(&mut Enc)) -> Vec<u8> {
    let mut p = Enc::default();
    p.u64(records::now_ns());
    body(&mut p);
    let mut rec = Vec::new();
    format::FRAMING.frame(&mut rec, kind, &p.0);
    rec
}

/// The object of log segment `k` of the dataset whose object is `base`.
fn segment_object(base: &str, k: u32) -> String {
    if k == 0 {
        base.to_string()
    } else {
        format!("{base}.{k}")
    }
}

/// The datasets a root registers, and its count as stored, if it has one
/// ([`RadosMedium::registry`]).
type Registry = (Vec<DatasetKey>, Option<Vec<u8>>);

/// What [`RadosMedium::root_keys`] calls with each key and its value.
type KeyVisitor<'a> = dyn FnMut(&[u8], &[u8]) -> Result<()> + 'a;

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
    /// The OSDs refused to let this client set the root's count (a key
    /// without write access): listings no longer try.
    count_refused: AtomicBool,
}

impl RadosMedium {
    /// Connect and open the configured pool.
    ///
    /// # Errors
    /// `Unavailable` if the cluster cannot be reached; `NotFound` if the
    /// pool does not exist; `Unsupported` without librados.
    pub fn open(config: &RadosConfig) -> Result<RadosMedium> {
        Ok(RadosMedium {
            pool: Arc::new(config.open_pool()?),
            log_segment_size: config.log_segment_size,
            notify: config.notify,
            count_refused: AtomicBool::new(false),
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

    /// Visit the root's omap keys that start with `prefix` and their
    /// values, a page of `PAGE` per read.
    fn root_keys(&self, prefix: &str, visit: &mut KeyVisitor<'_>) -> Result<()> {
        let mut after = String::new();
        loop {
            let (page, more) = match self.pool.omap_page(ROOT, &after, prefix, PAGE) {
                Ok(p) => p,
                Err(e) if e == ENOENT => return Ok(()),
                Err(e) => return Err(e.error(format!("reading {}", self.pool.what(ROOT)))),
            };
            for (k, v) in &page {
                visit(k, v)?;
            }
            match page.last() {
                Some((k, _)) if more => after = String::from_utf8_lossy(k).into_owned(),
                _ => return Ok(()),
            }
        }
    }

    /// Set the root's count ([`DATASETS`]) to `n` if it is still
    /// `counted` (empty: absent). Best effort: a client the OSDs refuse
    /// (no write access) stops trying.
    fn set_count(&self, counted: &[u8], n: usize) {
        if self.count_refused.load(Ordering::Relaxed) {
            return;
        }
        let Ok(mut op) = WriteOp::new() else {
            return;
        };
        op.omap_cmp_eq(DATASETS, counted);
        op.omap_set(&[(DATASETS, n.to_string().as_bytes())]);
        if let Err(e) = self.pool.operate(ROOT, &op) {
            let refused = e.kind() == ErrorKind::PermissionDenied;
            self.count_refused.store(refused, Ordering::Relaxed);
        }
    }

    /// The datasets the root registers, and its count ([`DATASETS`]) as
    /// stored, if it has one.
    fn registry(&self) -> Result<Registry> {
        let (mut keys, mut counted) = (Vec::new(), None);
        self.root_keys("", &mut |k, v| {
            if k == DATASETS {
                counted = Some(v.to_vec());
            } else if !k.starts_with(b"!") {
                // `!` keys are marks (`!list-locked <key>`), not datasets.
                let text = String::from_utf8_lossy(k);
                let key: Key = text.parse().map_err(|e| {
                    let root = self.pool.what(ROOT);
                    Error::corrupt(format!("{root}: bad dataset key {text:?}: {e}"))
                })?;
                keys.push(DatasetKey(key));
            }
            Ok(())
        })?;
        Ok((keys, counted))
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
            .list_objects(|n| n.ends_with(".catalogue") && !listed.contains(n))
            .map_err(|e| e.error(format!("listing the objects of {}", self.pool)))?;
        let mut wiped = Vec::new();
        for object in heads {
            let init = read_init(&self.pool, &object)?;
            let Some((key, ..)) = init.filter(|(k, ..)| naming::dataset_object(k) == object) else {
                continue;
            };
            let reader = match self.open(&key)? {
                Some(d) => self.open_reader(d)?,
                None => None,
            };
            match reader {
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

/// Read the log segment `object` from `pos` to its end (as far as it is
/// whole); `None` if the segment is gone.
fn read_from(pool: &Pool, object: &str, pos: u64) -> Result<Option<Vec<u8>>> {
    let mut out = Vec::new();
    let mut step = 256 << 10;
    loop {
        let start = out.len();
        out.resize(start + step, 0);
        let n = match pool.read(object, pos + start as u64, &mut out[start..]) {
            Ok(n) => n,
            Err(e) if e == ENOENT => return Ok(None),
            Err(e) => return Err(e.error(format!("reading the log of {}", pool.what(object)))),
        };
        out.truncate(start + n);
        if n < step {
            return Ok(Some(out));
        }
        step = (step * 2).min(16 << 20);
    }
}

/// The INIT record of a dataset object: its key, where FLUSH records
/// begin and the text of the schema it was created under; `None` if the
/// object does not exist. Reads only the record.
fn read_init(pool: &Pool, object: &str) -> Result<Option<(DatasetKey, u64, Arc<str>)>> {
    let what = || format!("{} at offset 0", pool.what(object));
    let read = |len: usize| -> Result<Option<Vec<u8>>> {
        let mut buf = vec![0u8; len];
        match pool.read(object, 0, &mut buf) {
            Ok(n) => {
                buf.truncate(n);
                Ok(Some(buf))
            }
            Err(e) if e == ENOENT => Ok(None),
            Err(e) => Err(e.error(format!("reading {}", pool.what(object)))),
        }
    };
    let Some(mut buf) = read(64 << 10)? else {
        return Ok(None);
    };
    if let (Framed::Incomplete, true) = (
        format::FRAMING.unframe(&buf, &what)?,
        buf.len() >= format::HEADER,
    ) {
        // A long schema: read the whole record.
        let len = u32::from_le_bytes([buf[8], buf[9], buf[10], buf[11]]) as usize;
        buf = read(format::HEADER + len)?.unwrap_or_default();
    }
    framed::init(&format::FRAMING, &buf, &what).map(Some)
}

/// Create the dataset object (exclusively, with its INIT record) unless it
/// exists; the schema it was created under.
fn ensure_dataset(
    pool: &Pool,
    object: &str,
    key: &DatasetKey,
    schema: &Schema,
) -> Result<Arc<str>> {
    match read_init(pool, object)? {
        Some((stored, _, stored_schema)) => {
            check_held(&|| pool.what(object), &stored, key)?;
            Ok(stored_schema)
        }
        // Starting the log again would leave the records lost with segment
        // 0 unreported (its later segments would follow the new one).
        None if head_lost(pool, key)? => Err(Error::corrupt(format!(
            "{} is missing, though dataset {key} is registered in {} and no wipe is under way: \
             its log lost segment 0 behind fieldstore's back; wipe the dataset before writing it \
             again",
            pool.what(object),
            pool.what(ROOT)
        ))),
        None => {
            let mut p = Enc::default();
            p.str(&key.to_string());
            p.str(schema.text());
            let mut rec = Vec::new();
            format::FRAMING.frame(&mut rec, format::INIT, &p.0);
            let mut op = WriteOp::new()?;
            op.create_exclusive();
            op.append(&rec);
            match pool.operate(object, &op) {
                Ok(()) => Ok(Arc::from(schema.text())),
                Err(e) if e == EEXIST => {
                    // Another writer created it first: use theirs.
                    let (stored, _, stored_schema) = read_init(pool, object)?.ok_or_else(|| {
                        Error::new(
                            ErrorKind::Io,
                            format!("{} vanished while being created", pool.what(object)),
                        )
                    })?;
                    check_held(&|| pool.what(object), &stored, key)?;
                    Ok(stored_schema)
                }
                Err(e) => Err(e.error(format!("creating {}", pool.what(object)))),
            }
        }
    }
}

/// Register a dataset in the root object's omap (after its first flush, so
/// that a dataset is listed once something in it is visible): set the
/// entry only if it is absent (a missing key compares equal to the empty
/// value; stored values are never empty), adding 1 to the root's count
/// ([`DATASETS`]) in the same operation unless the entry is set again
/// after it was lost (`lost`: the count still counts it). Whether this
/// call set it.
fn register(pool: &Pool, object: &str, key: &DatasetKey, lost: bool) -> Result<bool> {
    let k = key.to_string();
    let registered = |pool: &Pool| -> Result<Option<Vec<u8>>> {
        match pool.omap_get(ROOT, &[k.as_bytes()]) {
            Ok(mut v) => Ok(v.pop().map(|(_, v)| v)),
            Err(e) if e == ENOENT => Ok(None),
            Err(e) => Err(e.error(format!("reading {}", pool.what(ROOT)))),
        }
    };
    let mut current = registered(pool)?;
    if current.is_none() {
        let mut op = WriteOp::new()?;
        op.omap_cmp_eq(k.as_bytes(), b"");
        op.omap_set(&[(k.as_bytes(), object.as_bytes())]);
        if !lost {
            count(&mut op, DATASETS, "1");
        }
        match pool.operate(ROOT, &op) {
            Ok(()) => return Ok(true),
            Err(e) if e == ECANCELED || e == ENOENT => current = registered(pool)?,
            Err(e) => {
                return Err(e.error(format!("registering dataset {key} in {}", pool.what(ROOT))))
            }
        }
        if current.is_none() {
            // The root object did not exist yet (cmp on a missing object
            // fails): create it by setting the entry (then count it).
            let mut op = WriteOp::new()?;
            op.omap_set(&[(k.as_bytes(), object.as_bytes())]);
            if !lost {
                count(&mut op, DATASETS, "1");
            }
            pool.operate(ROOT, &op).map_err(|e| {
                e.error(format!("registering dataset {key} in {}", pool.what(ROOT)))
            })?;
            return Ok(true);
        }
    }
    match current {
        Some(v) if v == object.as_bytes() => Ok(false),
        Some(v) => Err(Error::new(
            ErrorKind::InvalidConfig,
            format!(
                "dataset {key} is registered in {} as object '{}', not '{object}'",
                pool.what(ROOT),
                String::from_utf8_lossy(&v)
            ),
        )),
        None => Ok(false),
    }
}

/// Remove the root's entry `key` (a dataset key's canonical form) and the
/// marks `also` in one operation, which takes 1 from the root's count
/// ([`DATASETS`]) if the entry was there. Whether the root exists.
fn unregister(pool: &Pool, key: &str, also: &[&[u8]]) -> Result<bool> {
    let mut keys = vec![key.as_bytes()];
    keys.extend_from_slice(also);
    for present in [true, false] {
        let mut op = WriteOp::new()?;
        if present {
            op.omap_cmp_gt(key.as_bytes(), b"");
            count(&mut op, DATASETS, "-1");
        }
        op.omap_rm_keys(&keys);
        match pool.operate(ROOT, &op) {
            Ok(()) => return Ok(true),
            Err(e) if e == ENOENT => return Ok(false),
            Err(e) if e == ECANCELED && present => {}
            Err(e) => {
                let what = format!("unregistering {key} from {}", pool.what(ROOT));
                return Err(append_error(e, what));
            }
        }
    }
    Ok(true)
}

impl CatalogueMedium for RadosMedium {
    type Dataset = RadosDataset;
    type Writer = RadosWriter;
    type Staged = RadosStaged;

    /// One read of segment 0's INIT record (and, if it is missing, one of
    /// the root: `head_lost`).
    fn open(&self, key: &DatasetKey) -> Result<Option<RadosDataset>> {
        let object = naming::dataset_object(key);
        let (pos, schema) = match read_init(&self.pool, &object)? {
            Some((stored, pos, schema)) => {
                check_held(&|| self.pool.what(&object), &stored, key)?;
                (pos, schema)
            }
            // Segment 0 removed behind fieldstore's back: a damaged log,
            // read on from segment 1 (`follow_log`).
            None if head_lost(&self.pool, key)? => (0, Arc::from("")),
            None => return Ok(None),
        };
        Ok(Some(RadosDataset {
            key: key.clone(),
            object,
            pos,
            schema,
        }))
    }

    /// The root's entries. A root that holds fewer entries than its
    /// count (`!datasets`) lost some behind fieldstore's back: the
    /// datasets they named are looked for (one listing of the namespace,
    /// `find_unregistered`) and registered again, so that a
    /// listing of the datasets never leaves out one with something visible.
    /// The count is then set to what the root holds, if it did not change
    /// meanwhile (best effort: a reader may not be allowed to write), so
    /// that a loss is looked for once, and a root from before the count
    /// gets one.
    fn registered(&self) -> Result<Vec<DatasetKey>> {
        let short = |(keys, counted): &Registry| {
            counted.as_deref().and_then(counter).unwrap_or(0.0) > keys.len() as f64
        };
        let mut read = self.registry()?;
        if short(&read) {
            // Read again first: a root of many pages is not read at one
            // instant.
            read = self.registry()?;
        }
        if short(&read) {
            self.find_unregistered(&read.0)?;
            read = self.registry()?;
        }
        let (keys, counted) = read;
        let settled = counted.as_deref().and_then(counter) == Some(keys.len() as f64);
        if !settled && (counted.is_some() || !keys.is_empty()) {
            self.set_count(&counted.unwrap_or_default(), keys.len());
        }
        Ok(keys)
    }

    fn describe(&self, key: &DatasetKey) -> String {
        self.pool.what(&naming::dataset_object(key))
    }

    fn reader(
        self: Arc<Self>,
        key: &DatasetKey,
        dataset: RadosDataset,
    ) -> Result<Option<Arc<dyn DatasetReader>>> {
        let _ = key;
        let reader = self.open_reader(dataset)?;
        Ok(reader.map(|r| Arc::new(r) as Arc<dyn DatasetReader>))
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
            registered: false,
            segment: 0,
            located: false,
            since_stat: 0,
            writer: fieldstore_core::writer_id::next(),
            flushes: 0,
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
            let size = match self.pool.stat(&obj) {
                Ok(s) => s,
                Err(e) if e == ENOENT => return Err(wiped_while_writing(key)),
                Err(e) => {
                    return Err(e.error(format!("checking the size of {}", self.pool.what(&obj))))
                }
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
        match self.pool.omap_get(&dataset.object, &[LOCKS]) {
            Ok(v) => Ok(v
                .into_iter()
                .next()
                .and_then(|(_, b)| b.first().copied())
                .map_or(Locks::NONE, Locks::from_bits)),
            Err(e) if e == ENOENT => Ok(Locks::NONE),
            Err(e) => Err(e.error(format!(
                "reading the locks of {}",
                self.pool.what(&dataset.object)
            ))),
        }
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
            Err(e) if e == ENOENT => {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!(
                        "no dataset {} in {}",
                        dataset.key.braced(),
                        self.pool.what(object)
                    ),
                ))
            }
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
        self.root_keys(LIST_LOCK_PREFIX, &mut |k, _| {
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
        self.find_unregistered(&self.registry()?.0)
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
                match self.pool.remove(&obj) {
                    Ok(()) => {}
                    Err(e) if e == ENOENT => {}
                    Err(e) => return Err(e.error(format!("removing {}", self.pool.what(&obj)))),
                }
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
#[derive(Debug)]
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

/// The index blocks of this backend: values with a `u32` length, units
/// named by their URI.
struct Blocks;

impl BlockFormat for Blocks {
    const VALUES: ValueLen = ValueLen::U32;
    const UNIT: &'static str = "location";
    fn unit_name<'u>(&self, uri: &'u str) -> Cow<'u, str> {
        Cow::Borrowed(uri)
    }
    fn unit_uri(&self, name: &str) -> Arc<str> {
        Arc::from(name)
    }
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
        match seal_segment(&self.pool, object, w.segment)? {
            Some(n) => {
                w.segment = n;
                Ok(())
            }
            None => Err(wiped_while_writing(key)),
        }
    }
}

/// Where a block lives: its log segment and its omap key there.
type Place = (u32, String);

/// A record's place in the log, for the engine: its segment and offset.
fn log_at(segment: u32, offset: u64) -> u64 {
    (u64::from(segment) << 40) | offset
}

/// Where a RADOS reader stopped in its dataset's log.
#[derive(Debug)]
pub struct RadosCursor {
    /// The log segment being followed.
    segment: u32,
    /// Bytes of that segment consumed.
    pos: u64,
    /// The log ended in WIPED, or the dataset object is gone: nothing is
    /// visible, until a dataset is created anew under the same name.
    gone: bool,
    /// When the end of the log was last checked against its segment's
    /// seal and count (never, before a reader's first refresh; an idle
    /// reader checks again after `LOOK_AGAIN`; see `follow`).
    looked_at: EndLook,
    /// Records read in this segment (after INIT in segment 0; damaged
    /// ones too, when they can be counted: `Framing::records_in`), to
    /// compare with its `!records` count.
    records: u64,
    /// A damaged region in this segment whose records could not be
    /// counted: a count higher than the records read may be only those,
    /// so it is reported as records that may have been lost.
    uncountable: bool,
    /// A shortfall of this segment's records was reported (or a cut below
    /// the reader): not again.
    reported: bool,
    /// The segment was found shorter than `pos`, and that reported.
    cut_below: bool,
}

impl RadosCursor {
    /// Go on at the start of log segment `segment`.
    fn enter(&mut self, segment: u32) {
        self.segment = segment;
        self.pos = 0;
        self.records = 0;
        self.uncountable = false;
        self.reported = false;
        self.cut_below = false;
    }
}

/// What a RADOS reader knows of its dataset.
type ReaderLog = Log<Place, RadosCursor>;

/// A log read from `pos` of segment 0 (just after INIT) of a dataset
/// created under `schema` (empty: unknown).
fn log_from(pos: u64, schema: Arc<str>) -> ReaderLog {
    Log::new(
        schema,
        RadosCursor {
            segment: 0,
            pos,
            gone: false,
            looked_at: EndLook::default(),
            records: 0,
            uncountable: false,
            reported: false,
            cut_below: false,
        },
    )
}

/// The log of a dataset that is gone.
fn gone_log() -> ReaderLog {
    let mut log = log_from(0, Arc::from(""));
    log.cursor.gone = true;
    log
}

/// One dataset's log in RADOS, as the engine's reader follows it: the
/// dataset object's segments, and the index blocks in their omaps.
#[derive(Debug)]
pub struct RadosLog {
    pool: Arc<Pool>,
    object: String,
    key: DatasetKey,
}

/// A read view of one dataset that follows its log, and the dataset itself
/// when it is wiped (it becomes empty, then shows the dataset created anew).
pub type RadosReader = LogReader<RadosLog>;

impl RadosLog {
    /// Read the log again from the start (a dataset created anew, or one
    /// whose objects a wipe is removing).
    fn restart(&self, st: &mut ReaderLog) -> Result<bool> {
        match read_init(&self.pool, &self.object)? {
            Some((stored, pos, schema)) => {
                check_held(&|| self.pool.what(&self.object), &stored, &self.key)?;
                *st = log_from(pos, schema);
                Ok(true)
            }
            None => {
                *st = gone_log();
                Ok(false)
            }
        }
    }

    fn decode_block(
        &self,
        object: &str,
        key: &str,
        value: &[u8],
    ) -> Result<Vec<(ElementKey, FieldLocation)>> {
        let what = || format!("{} omap key '{key}'", self.pool.what(object));
        let payload =
            format::FRAMING.unframe_kind(value, format::BLOCK, "an index block", &what)?;
        Ok(block::decode(&Blocks, payload, &what)?.entries)
    }
}

impl RadosLog {
    /// The collocations and units of the index blocks in the omaps of the
    /// segments read so far that no FLUSH record read names: those of
    /// damaged records (and of flushes whose last operation never applied,
    /// and of wiped collocations: more, never fewer). Anything when one of
    /// them does not decode. Per segment, one listing of its omap's keys a
    /// page, then the unnamed blocks only: paid once per operation on a
    /// damaged dataset that asks (a lookup of a collocation the reader does
    /// not know, a wipe, a purge), the engine keeping the answer until the
    /// reader next follows the log.
    ///
    /// # Errors
    /// RADOS errors reading the omaps.
    fn unnamed_blocks(&self, st: &ReaderLog) -> Result<DamageMayName> {
        let named: HashSet<&Place> = st
            .index
            .all_blocks()
            .flat_map(|(_, blocks, _)| blocks.iter().map(|b| &b.place))
            .collect();
        let (mut collocations, mut units) = (BTreeSet::new(), BTreeSet::new());
        for segment in 0..=st.cursor.segment {
            let obj = segment_object(&self.object, segment);
            let what = |e: Errno| {
                e.error(format!(
                    "reading the index blocks of {}",
                    self.pool.what(&obj)
                ))
            };
            let mut unnamed = Vec::new();
            let mut after = Vec::new();
            loop {
                let (keys, more) = match self.pool.omap_keys(&obj, &after, PAGE) {
                    Ok(p) => p,
                    // Removed behind fieldstore's back: its blocks may
                    // have held anything.
                    Err(e) if e == ENOENT => return Ok(DamageMayName::Anything),
                    Err(e) => return Err(what(e)),
                };
                for k in &keys {
                    let key = String::from_utf8_lossy(k).into_owned();
                    if !key.starts_with('!') && !named.contains(&(segment, key)) {
                        unnamed.push(k.clone());
                    }
                }
                match keys.last() {
                    Some(last) if more => after.clone_from(last),
                    _ => break,
                }
            }
            for batch in unnamed.chunks(KEYS_PER_READ) {
                let keys: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
                let got = match self.pool.omap_get(&obj, &keys) {
                    Ok(got) => got,
                    Err(e) if e == ENOENT => return Ok(DamageMayName::Anything),
                    Err(e) => return Err(what(e)),
                };
                for (_, v) in &got {
                    let what = String::new;
                    let block = match format::FRAMING.unframe(v, &what) {
                        Ok(Framed::Record(format::BLOCK, p, n)) if n == v.len() => {
                            block::decode(&Blocks, p, &what).ok()
                        }
                        _ => None,
                    };
                    let Some(b) = block else {
                        return Ok(DamageMayName::Anything);
                    };
                    let Ok(c) = b.collocation.parse() else {
                        return Ok(DamageMayName::Anything);
                    };
                    collocations.insert(c);
                    units.extend(b.entries.iter().map(|(_, l)| l.uri.to_string()));
                }
            }
        }
        Ok(DamageMayName::Only {
            collocations,
            units,
        })
    }

    fn follow_log(&self, st: &mut ReaderLog) -> Result<()> {
        if st.cursor.gone && !self.restart(st)? {
            return Ok(());
        }
        'segments: loop {
            let obj = segment_object(&self.object, st.cursor.segment);
            // From one byte before `pos`: a segment shorter than where this
            // reader stopped (cut behind fieldstore's back, as appends are
            // whole and never undone) shows in the same read.
            let back = usize::from(st.cursor.pos > 0);
            let Some(buf) = read_from(&self.pool, &obj, st.cursor.pos - back as u64)? else {
                // Segment 0 gone: the dataset was wiped, unless it is
                // still registered and not being wiped (`head_lost`). A
                // later segment missing: being removed by a wipe (a
                // segment is created before the seal that names it).
                let k = st.cursor.segment;
                if (k == 0 || self.pool.stat(&self.object) == Err(ENOENT))
                    && !head_lost(&self.pool, &self.key)?
                {
                    *st = gone_log();
                    return Ok(());
                }
                // A wipe removes segments from the last down: with
                // the next one still there, this one was removed
                // behind fieldstore's back. Damage; read on after it.
                let next = segment_object(&self.object, k + 1);
                if k == 0 || self.pool.stat(&next).is_ok() {
                    let why = if k == 0 {
                        format!(
                            "the dataset is registered in {} and no wipe is under way",
                            self.pool.what(ROOT)
                        )
                    } else {
                        format!("{} exists", self.pool.what(&next))
                    };
                    st.index.damaged_region(
                        log_at(k, 0),
                        format!(
                            "{}: log segment {k} missing, though {why} (removed behind \
                             fieldstore's back); reading on in the next segment",
                            self.pool.what(&obj),
                        ),
                    );
                    st.cursor.enter(k + 1);
                    continue 'segments;
                }
                return Ok(());
            };
            let (start, segment) = (st.cursor.pos, st.cursor.segment);
            if buf.len() < back && !st.cursor.cut_below {
                // Records appended after the cut lie below `pos`, where
                // this reader does not read: damage, reported once (and
                // the count, which goes on from the records cut off, is
                // no longer compared: it would report the same cut).
                st.cursor.cut_below = true;
                st.cursor.reported = true;
                st.index.damaged_region(
                    log_at(segment, start),
                    format!(
                        "{}: shorter than offset {start}, where this reader stopped: cut behind \
                         fieldstore's back",
                        self.pool.what(&obj),
                    ),
                );
            }
            let buf = buf.get(back..).unwrap_or_default();
            let used = framed::walk(st, &format::FRAMING, buf, start, self)?;
            if st.cursor.gone {
                return Ok(()); // At a WIPED record.
            }
            if st.cursor.segment != segment {
                continue 'segments; // At a SEAL record.
            }
            st.cursor.pos += used as u64;
            // The end of this segment's records: the end of the log, unless
            // the segment is sealed and its SEAL record was cut off, or
            // records were cut off (checked when something new was read, at
            // a reader's first refresh, and by an idle refresh once
            // `LOOK_AGAIN` has passed: else an idle refresh costs one read,
            // as before).
            if used > 0 || st.cursor.looked_at.due() {
                st.cursor.looked_at.now();
                let (seal, count) = segment_end(&self.pool, &obj)?.unzip();
                // Unsealed, `!records` counts the records read, unless
                // some were appended since the read above, or the log was
                // cut or a record removed (damage). Fewer counted than read:
                // a writer of a version before the count appended some.
                let count = count.flatten().filter(|&c| c > st.cursor.records);
                if let (Some(Seal::Open), Some(count), false) = (seal, count, st.cursor.reported) {
                    match read_from(&self.pool, &obj, st.cursor.pos)? {
                        // Removed meanwhile (a wipe): the next refresh sees it.
                        None => return Ok(()),
                        Some(more) if !more.is_empty() => continue 'segments,
                        Some(_) => {
                            let at = st.cursor.pos;
                            self.shortfall(st, &obj, count, at, &format!("its end at offset {at}"));
                        }
                    }
                }
                if let Some(Seal::Next(n)) = seal {
                    // Sealed since the read above (the SEAL record is there
                    // now), or the record is gone.
                    let Some(more) = read_from(&self.pool, &obj, st.cursor.pos)? else {
                        // Removed meanwhile (a wipe): the next refresh sees it.
                        return Ok(());
                    };
                    if more.is_empty() {
                        st.index.damaged_region(
                            log_at(st.cursor.segment, st.cursor.pos),
                            format!(
                                "{}: sealed (its `!sealed` key names segment {n}), but its log \
                                 ends at offset {} without a SEAL record: cut short behind \
                                 fieldstore's back; reading on in segment {n}",
                                self.pool.what(&obj),
                                st.cursor.pos
                            ),
                        );
                        st.cursor.enter(n);
                    }
                    continue 'segments;
                }
            }
            return Ok(());
        }
    }

    /// At the SEAL record (offset `at`) of segment `obj`, the last record
    /// appended to it: its `!records` key counting more records than were
    /// read means records were removed from the segment behind
    /// fieldstore's back (its bytes rewritten, the SEAL kept). Damage at
    /// the SEAL's place: the lost records are older than every later
    /// segment's, so only answers found up to here are in doubt. One omap
    /// read per sealed segment crossed (one per 64 MiB of log, by default).
    fn check_sealed_count(&self, st: &mut ReaderLog, obj: &str, at: u64) -> Result<()> {
        if st.cursor.reported {
            return Ok(());
        }
        let count = match segment_end(&self.pool, obj)? {
            Some((_, Some(count))) if count > st.cursor.records => count,
            _ => return Ok(()),
        };
        self.shortfall(
            st,
            obj,
            count,
            at,
            &format!("its SEAL record at offset {at}"),
        );
        Ok(())
    }

    /// Segment `obj` counts `count` records, more than were read up to
    /// `end` (offset `at`): a damaged region there, reported once a segment
    /// ([`RadosCursor::reported`]). With a damaged region whose records
    /// could not be counted, they may be those, or lost: a cut after such
    /// damage must not go unseen, so it is damage all the same.
    fn shortfall(&self, st: &mut ReaderLog, obj: &str, count: u64, at: u64, end: &str) {
        st.cursor.reported = true;
        let what = self.pool.what(obj);
        let read = st.cursor.records;
        let counts =
            format!("{what}: its `!records` key counts {count} records, but its log holds");
        let lost = "records were cut off or removed behind fieldstore's back";
        let problem = if st.cursor.uncountable {
            format!(
                "{counts} {read} that could be counted up to {end}, after damaged bytes whose \
                 records could not be: {lost}, or they are those"
            )
        } else {
            format!("{counts} {read} up to {end}: {lost}")
        };
        self.damaged(st, at, problem);
    }
}

/// The records of a log segment, as the engine's walk reads them.
impl FramedRecords<Place, RadosCursor> for RadosLog {
    fn what(&self, st: &ReaderLog, at: u64) -> String {
        let obj = segment_object(&self.object, st.cursor.segment);
        format!("{} at offset {at}", self.pool.what(&obj))
    }

    fn place(&self, st: &ReaderLog, at: u64) -> u64 {
        log_at(st.cursor.segment, at)
    }

    /// Counted, to compare with the segment's `!records`.
    fn met(&self, st: &mut ReaderLog, _: u16, _: u64) {
        st.cursor.records += 1;
    }

    fn flush(&self, st: &mut ReaderLog, payload: &[u8], at: u64) -> Result<()> {
        let what = || self.what(st, at);
        let blocks = named::decode_flush(payload, &what, true, &|d| Ok(d.str()?.to_string()))?;
        for b in blocks {
            let place = (st.cursor.segment, b.place);
            st.index.add_block(b.collocation, place, b.axes);
        }
        Ok(())
    }

    /// Damaged, its records counted (`Framing::records_in`: each damaged in
    /// its header or in its payload, not both), so that the segment's count
    /// still shows records cut off or removed after them; or not countable.
    fn skipped(&self, st: &mut ReaderLog, region: &[u8], at: u64, problem: String) {
        match format::FRAMING.records_in(region) {
            Some(n) => st.cursor.records += n,
            None => st.cursor.uncountable = true,
        }
        self.damaged(st, at, problem);
    }

    /// WIPED ends the incarnation; SEAL moves the cursor to the next
    /// segment.
    fn own(&self, st: &mut ReaderLog, kind: u16, p: &[u8], at: u64, rest: &[u8]) -> Result<Step> {
        let what = || self.what(st, at);
        match kind {
            format::WIPED => {
                // Everything before is wiped. The objects are being
                // removed; a dataset may be created anew after.
                *st = gone_log();
                Ok(Step::Leave)
            }
            format::SEAL => {
                let next = Dec::new(p, &what).u32()?;
                if next != st.cursor.segment + 1 {
                    return Err(Error::corrupt(format!(
                        "{}: seal names segment {next}, not {}",
                        what(),
                        st.cursor.segment + 1
                    )));
                }
                // Nothing follows a SEAL but another SEAL (a seal finished
                // again after its `!sealed` key was lost): anything else was
                // appended after the seal, when the key was gone, and is out
                // of the log's order.
                let resealed = matches!(
                    format::FRAMING.unframe(rest, &what),
                    Ok(Framed::Record(format::SEAL, ..))
                );
                let obj = segment_object(&self.object, st.cursor.segment);
                if !rest.is_empty() && !resealed {
                    let problem = format!(
                        "{}: {} bytes after the SEAL record at offset {at} (appended after the \
                         segment was sealed, its `!sealed` key lost): not read",
                        self.pool.what(&obj),
                        rest.len(),
                    );
                    self.damaged(st, at + (format::HEADER + p.len()) as u64, problem);
                } else if !resealed {
                    self.check_sealed_count(st, &obj, at)?;
                }
                st.cursor.enter(next);
                Ok(Step::Leave)
            }
            // Unknown record types from newer versions are skipped.
            _ => Ok(Step::Read),
        }
    }
}

impl LogMedium for RadosLog {
    type Place = Place;
    type Cursor = RadosCursor;

    fn follow(&self, log: &mut ReaderLog) -> Result<()> {
        self.follow_log(log)
    }

    /// Read the blocks at `places`, a run of one segment's omap keys at a
    /// time. A segment that vanished is a wipe this reader has not read
    /// yet, or removed behind fieldstore's back (`NotFound`); a key
    /// missing from its omap is damage.
    fn read_blocks(&self, _: &mut ReaderLog, places: &[Place]) -> Result<Vec<Entries>> {
        let mut out = Vec::with_capacity(places.len());
        for run in places.chunk_by(|a, b| a.0 == b.0) {
            for batch in run.chunks(KEYS_PER_READ) {
                let obj = segment_object(&self.object, batch[0].0);
                let keys: Vec<&[u8]> = batch.iter().map(|(_, k)| k.as_bytes()).collect();
                let got = match self.pool.omap_get(&obj, &keys) {
                    Ok(got) => got,
                    Err(e) if e == ENOENT => {
                        let gone =
                            || Err(e.error(format!("index blocks of {}", self.pool.what(&obj))));
                        out.extend(batch.iter().map(|_| gone()));
                        continue;
                    }
                    Err(e) => {
                        let what = format!("reading index blocks of {}", self.pool.what(&obj));
                        return Err(e.error(what));
                    }
                };
                // Not taken out: two records may name one block (a record
                // appended twice behind fieldstore's back).
                let got: HashMap<Vec<u8>, Vec<u8>> = got.into_iter().collect();
                out.extend(batch.iter().map(|(_, k)| match got.get(k.as_bytes()) {
                    None => Err(Error::corrupt(format!(
                        "{}: index block '{k}' named by the log is missing from the omap",
                        self.pool.what(&obj)
                    ))),
                    Some(value) => self.decode_block(&obj, k, value),
                }));
            }
        }
        Ok(out)
    }

    /// A damaged FLUSH record's blocks are intact in the omap, so they
    /// tell what it may have named (`unnamed_blocks`).
    fn damage_may_name(&self, log: &mut ReaderLog) -> Result<DamageMayName> {
        self.unnamed_blocks(log)
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
