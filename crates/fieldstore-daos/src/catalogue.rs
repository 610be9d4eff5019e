//! The DAOS catalogue (`engine: daos`).
//!
//! Layout (`docs/format/daos.md`): a root KV in the root container maps
//! every dataset key to its container; each dataset has a container whose
//! dataset KV holds `meta` (key, schema) and a **log**: slots `f.0`, `f.1`,
//! … each holding one writer's whole flush (every entry of every
//! collocation it flushed, with the element keys and locations). A writer
//! publishes a flush with one conditional insert (`DAOS_COND_KEY_INSERT`)
//! into the first free slot: DAOS guarantees exactly one of several racing
//! writers gets a slot, so slots fill without gaps, in the order flushes
//! became visible, without any lock. A flush is visible atomically (one
//! KV value) and never modified.
//!
//! Readers follow the log from where they stopped: `refresh` is one
//! `kv_get` when nothing is new, plus one per new flush; lookups, list
//! and axes are then answered from memory. Listing therefore never costs
//! a `kv_get` per entry (the paper's design does): it costs one `kv_get`
//! per flush, each bringing all of that flush's entries.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use fieldstore_core::engine::slots::{self, SlotCursor, SlotLog, SlotRecord};
use fieldstore_core::engine::{Log, LogMedium, LogReader};
use fieldstore_core::maintenance::{
    list_lock_marker, list_locked_dataset, locked, wiped_while_writing, Item, ItemKind,
    LIST_LOCK_PREFIX,
};
use fieldstore_core::record::maintenance::{self as records, now_ns, MaintenanceRecord};
use fieldstore_core::record::pending::PendingEntries;
use fieldstore_core::{
    Catalogue, CatalogueMaintenance, CatalogueWriter, ChangeWaiter, CollocationKey, Control,
    DamagedDatasets, DatasetKey, DatasetMover, DatasetReader, ElementKey, Error, ErrorKind,
    FieldLocation, Locks, Operation, PollingWaiter, Result, Schema,
};

use crate::client::class_error;
use crate::client::{Inserted, Kv};
use crate::config::DaosConfig;
use crate::format::{self, Flush, Meta};
use crate::layout::{self, dataset_label, slot_key};
use crate::session::{is_gone, Cont, Session};

/// The DAOS catalogue.
#[derive(Debug)]
pub struct DaosCatalogue {
    cfg: DaosConfig,
    session: &'static Session,
    root: Arc<Cont>,
}

impl DaosCatalogue {
    /// Open the catalogue a `daos:` section describes: load libdaos,
    /// connect to the pool, create the root container if missing.
    ///
    /// # Errors
    /// `InvalidConfig` for a bad section; `Unavailable` without libdaos or
    /// its agent; `NotFound` if the pool does not exist.
    pub fn open(section: &serde_json::Value) -> Result<DaosCatalogue> {
        DaosCatalogue::with_config(DaosConfig::from_value(section)?)
    }

    /// As [`DaosCatalogue::open`], from a parsed section.
    ///
    /// # Errors
    /// As [`DaosCatalogue::open`].
    pub fn with_config(cfg: DaosConfig) -> Result<DaosCatalogue> {
        let session = Session::get(cfg.library.as_deref())?;
        let root = session
            .container(
                &cfg.catalogue_pool,
                &cfg.root_container,
                Some(cfg.container_redundancy),
            )?
            .ok_or_else(|| Error::internal("root container neither opened nor created"))?;
        Ok(DaosCatalogue { cfg, session, root })
    }

    fn open_for_write(&self, dataset: &DatasetKey, schema: &Schema) -> Result<Arc<Cont>> {
        let cont = self
            .dataset_cont(dataset, true)?
            .ok_or_else(|| Error::internal("dataset container neither opened nor created"))?;
        self.check_meta(&cont, dataset, Some(schema))?;
        Ok(cont)
    }

    /// The dataset KV of a container.
    fn kv_of<'c>(&self, cont: &'c Cont) -> Result<Kv<'c>> {
        let oid = cont.kv_oid(layout::DATASET_KV_LO, self.cfg.kv_class)?;
        cont.c.kv(oid, true).map_err(class_error)
    }

    /// The dataset's container if it exists and holds this dataset; a stale
    /// cached handle (the container was destroyed) is dropped first.
    fn existing(&self, dataset: &DatasetKey) -> Result<Option<Arc<Cont>>> {
        for attempt in 0..2 {
            let Some(cont) = self.dataset_cont(dataset, false)? else {
                return Ok(None);
            };
            match self.check_meta(&cont, dataset, None) {
                Ok(true) => return Ok(Some(cont)),
                Ok(false) => return Ok(None),
                Err(e) if is_gone(&e) && attempt == 0 => {
                    self.session
                        .evict(&self.cfg.catalogue_pool, &dataset_label(dataset));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// Append a maintenance record to the dataset's log.
    fn append(&self, dataset: &DatasetKey, value: &[u8]) -> Result<()> {
        let cont = self.existing(dataset)?.ok_or_else(|| not_found(dataset))?;
        let kv = self.kv_of(&cont)?;
        publish(&cont, &kv, value, &mut || Ok(()))
            .map(|_| ())
            .map_err(|e| e.context(format!("appending to the log of {}", cont.c.name())))
    }

    fn root_kv(&self) -> Result<Kv<'_>> {
        let oid = self.root.kv_oid(layout::ROOT_KV_LO, self.cfg.kv_class)?;
        self.root.c.kv(oid, true).map_err(class_error)
    }

    /// The dataset's container, if it exists (`create`: make it).
    fn dataset_cont(&self, key: &DatasetKey, create: bool) -> Result<Option<Arc<Cont>>> {
        let label = dataset_label(key);
        self.session.container(
            &self.cfg.catalogue_pool,
            &label,
            create.then_some(self.cfg.container_redundancy),
        )
    }

    /// Read (or, with `schema`, create) the dataset's `meta` and check that
    /// the container holds this dataset.
    fn check_meta(&self, cont: &Cont, key: &DatasetKey, schema: Option<&Schema>) -> Result<bool> {
        if let Some(m) = cont.meta_checked.get() {
            return same_dataset(cont, m, key).map(|()| true);
        }
        let oid = cont.kv_oid(layout::DATASET_KV_LO, self.cfg.kv_class)?;
        let kv = cont.c.kv(oid, true).map_err(class_error)?;
        let what = || format!("daos://{}/{}", cont.c.name(), layout::META_KEY);
        let bytes = match kv.get(layout::META_KEY)? {
            Some(b) => b,
            None => {
                let Some(schema) = schema else {
                    return Ok(false);
                };
                let meta = Meta {
                    key: key.clone(),
                    schema: schema.text().to_string(),
                    created_ns: now_ns(),
                };
                let bytes = format::encode_meta(&meta);
                match kv.insert(layout::META_KEY, &bytes)? {
                    Inserted::Yes => {
                        // A new dataset: its log is empty, no need to look
                        // for its end.
                        cont.known_empty.store(true, Ordering::Relaxed);
                        bytes
                    }
                    // Another writer created the dataset meanwhile.
                    Inserted::Exists => kv.get(layout::META_KEY)?.ok_or_else(|| {
                        Error::corrupt(format!("{}: exists and then does not", what()))
                    })?,
                }
            }
        };
        let meta = format::decode_meta(&bytes, &what)?;
        same_dataset(cont, &meta, key)?;
        let _ = cont.schema.set(Arc::from(meta.schema.as_str()));
        let _ = cont.meta_checked.set(meta);
        Ok(true)
    }
}

fn same_dataset(cont: &Cont, meta: &Meta, key: &DatasetKey) -> Result<()> {
    if meta.key != *key {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "DAOS container {} holds dataset {}, not {} (their names collide)",
                cont.c.name(),
                meta.key.braced(),
                key.braced()
            ),
        ));
    }
    Ok(())
}

impl Catalogue for DaosCatalogue {
    fn writer(&self, dataset: &DatasetKey, schema: &Schema) -> Result<Box<dyn CatalogueWriter>> {
        let cont = match self.open_for_write(dataset, schema) {
            Err(e) if is_gone(&e) => {
                // A cached handle of a container a wipe destroyed.
                self.session
                    .evict(&self.cfg.catalogue_pool, &dataset_label(dataset));
                self.open_for_write(dataset, schema)?
            }
            r => r?,
        };
        // A dataset this process just created has no locks to read (one set
        // meanwhile is an append to the log, which the first flush notices).
        let fresh = cont.known_empty.load(Ordering::Relaxed)
            && cont.known_tail.load(Ordering::Relaxed) == 0;
        if !fresh && read_control(&self.kv_of(&cont)?, &cont)?.contains(Operation::Archive) {
            return Err(locked(dataset, Operation::Archive));
        }
        Ok(Box::new(DaosCatalogueWriter {
            control_epoch: cont.control_epoch.load(Ordering::SeqCst),
            cat: DaosCatalogueRef {
                cfg: self.cfg.clone(),
                root: self.root.clone(),
                session: self.session,
            },
            key: dataset.clone(),
            cont,
            id: fieldstore_core::writer_id::next(),
            pending: PendingEntries::new(),
        }))
    }

    fn datasets(&self) -> Result<Vec<DatasetKey>> {
        let kv = self.root_kv()?;
        let mut out = Vec::new();
        for k in kv.keys()? {
            if k.starts_with(LIST_LOCK_PREFIX) {
                continue;
            }
            let key = k.parse().map_err(|e| {
                Error::corrupt(format!(
                    "daos://{}: root KV key {k:?} is not a dataset key: {e}",
                    self.root.c.name()
                ))
            })?;
            out.push(DatasetKey(key));
        }
        out.sort();
        Ok(out)
    }

    fn reader(&self, dataset: &DatasetKey) -> Result<Option<Arc<dyn DatasetReader>>> {
        let Some(cont) = self.existing(dataset)? else {
            return Ok(None);
        };
        let medium = DaosLog {
            kv_class: self.cfg.kv_class,
            session: self.session,
            pool: self.cfg.catalogue_pool.clone(),
            key: dataset.clone(),
        };
        Ok(Some(Arc::new(LogReader::open(medium, log_of(Some(cont)))?)))
    }

    fn describe(&self, dataset: &DatasetKey) -> String {
        format!(
            "daos://{}/{}",
            self.cfg.catalogue_pool,
            dataset_label(dataset)
        )
    }

    fn waiter(&self) -> Result<Box<dyn ChangeWaiter>> {
        // DAOS has no notifications: poll.
        Ok(Box::new(PollingWaiter::new(
            std::time::Duration::from_millis(50),
        )))
    }

    fn maintenance(&self) -> Option<&dyn CatalogueMaintenance> {
        Some(self)
    }

    fn damaged_datasets(&self) -> Option<&dyn DamagedDatasets> {
        None
    }

    fn mover(&self) -> Option<&dyn DatasetMover> {
        None
    }

    fn queries(&self) -> Option<&dyn fieldstore_core::CatalogueQueries> {
        None
    }
}

impl CatalogueMaintenance for DaosCatalogue {
    /// None are hidden yet unfinished: a wipe destroys the container
    /// first and removes the registration last, so an interrupted wipe
    /// leaves its dataset listed (and empty) until a wipe finishes it.
    fn interrupted_wipes(&self) -> Result<Vec<DatasetKey>> {
        Ok(Vec::new())
    }

    fn list_locked(&self) -> Result<Option<Vec<DatasetKey>>> {
        let mut out = Vec::new();
        for k in self.root_kv()?.keys()? {
            out.extend(list_locked_dataset(&k));
        }
        Ok(Some(out))
    }

    fn locks(&self, dataset: &DatasetKey) -> Result<Locks> {
        match self.existing(dataset)? {
            Some(cont) => read_control(&self.kv_of(&cont)?, &cont),
            None => Ok(Locks::NONE),
        }
    }

    fn control(&self, dataset: &DatasetKey, action: Control, operations: Locks) -> Result<Locks> {
        let cont = self.existing(dataset)?.ok_or_else(|| not_found(dataset))?;
        let kv = self.kv_of(&cont)?;
        let locks = read_control(&kv, &cont)?.apply(action, operations);
        let value = format::encode_control(locks.bits(), now_ns());
        // Writers read the key; readers follow the log.
        kv.put(layout::CONTROL_KEY, &value)?;
        cont.control_epoch.fetch_add(1, Ordering::SeqCst);
        publish(&cont, &kv, &value, &mut || Ok(()))?;
        // Listings of datasets list the root KV only: they find list locks
        // there.
        let marker = list_lock_marker(dataset);
        let root = self.root_kv()?;
        if locks.contains(Operation::List) {
            root.put(&marker, &value)?;
        } else {
            root.remove(&marker)?;
        }
        Ok(locks)
    }

    fn inventory(&self, dataset: &DatasetKey) -> Result<Vec<Item>> {
        let mut items = Vec::new();
        if let Some(cont) = self.existing(dataset)? {
            items.push(Item::new(
                ItemKind::Catalogue,
                format!("daos://{}", cont.c.name()),
                None,
            ));
            for k in self.kv_of(&cont)?.keys()? {
                let ours = k == layout::META_KEY
                    || k == layout::TAIL_KEY
                    || k == layout::CONTROL_KEY
                    || k.strip_prefix("f.")
                        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
                if !ours {
                    items.push(Item::new(
                        ItemKind::Unknown,
                        format!("daos://{}/{k}", cont.c.name()),
                        None,
                    ));
                }
            }
        }
        let root = self.root_kv()?;
        if root.exists(&dataset.to_string())? {
            items.push(Item::new(
                ItemKind::Catalogue,
                format!("daos://{}/{}", self.root.c.name(), dataset),
                None,
            ));
        }
        Ok(items)
    }

    fn wipe(
        &self,
        dataset: &DatasetKey,
        _unsafe_wipe_all: bool,
        store_step: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        let label = dataset_label(dataset);
        // 1. One destroy: every reader sees the whole dataset or nothing
        //    (with one pool, the field arrays go with it).
        self.session.destroy(&self.cfg.catalogue_pool, &label)?;
        // 2. The store's part.
        store_step()?;
        // 3. The registration. A writer may have created the dataset anew
        //    meanwhile: it is then registered again.
        let root = self.root_kv()?;
        root.remove(&list_lock_marker(dataset))?;
        root.remove(&dataset.to_string())?;
        if let Some(cont) = self.existing(dataset)? {
            let value = format::encode_dataset(cont.c.label(), now_ns());
            root.insert(&dataset.to_string(), &value)?;
        }
        Ok(())
    }

    fn wipe_collocations(
        &self,
        dataset: &DatasetKey,
        collocations: &[CollocationKey],
        units: &[String],
    ) -> Result<()> {
        self.append(dataset, &format::encode_wipe(collocations, units, now_ns()))
    }

    fn reclaim(
        &self,
        dataset: &DatasetKey,
        units: &[String],
        _hidden: &[CollocationKey],
        dry_run: bool,
    ) -> Result<Vec<Item>> {
        // Log slots are never deleted (readers rely on the log having no
        // gaps): only the field arrays are reclaimed, by the store.
        if !dry_run && !units.is_empty() {
            self.append(dataset, &format::encode_reclaim(units, now_ns()))?;
        }
        Ok(Vec::new())
    }
}

fn not_found(dataset: &DatasetKey) -> Error {
    Error::new(
        ErrorKind::NotFound,
        format!("no dataset {} in the DAOS catalogue", dataset.braced()),
    )
}

/// The dataset's locks, from its `control` key.
fn read_control(kv: &Kv<'_>, cont: &Cont) -> Result<Locks> {
    let Some(v) = kv.get(layout::CONTROL_KEY)? else {
        return Ok(Locks::NONE);
    };
    let what = || format!("daos://{}/{}", cont.c.name(), layout::CONTROL_KEY);
    let (kind, payload) = format::FRAMING.unframe_exact(&v, &what)?;
    if kind != format::CONTROL {
        return Err(Error::corrupt(format!("{}: record type {kind}", what())));
    }
    Ok(Locks::from_bits(records::decode_control(payload, &what)?))
}

#[derive(Debug)]
struct DaosCatalogueRef {
    cfg: DaosConfig,
    root: Arc<Cont>,
    session: &'static Session,
}

/// One writer's session with one dataset.
struct DaosCatalogueWriter {
    /// The container's `control_epoch` when the locks were last checked.
    control_epoch: u64,
    cat: DaosCatalogueRef,
    key: DatasetKey,
    cont: Arc<Cont>,
    id: String,
    pending: PendingEntries,
}

impl DaosCatalogueWriter {
    fn kv(&self) -> Result<Kv<'_>> {
        let oid = self
            .cont
            .kv_oid(layout::DATASET_KV_LO, self.cat.cfg.kv_class)?;
        self.cont.c.kv(oid, true).map_err(class_error)
    }

    /// Register the dataset in the root KV (once per process).
    fn register(&self) -> Result<()> {
        if self.cont.registered.load(Ordering::Relaxed) {
            return Ok(());
        }
        let root = &self.cat.root;
        let oid = root.kv_oid(layout::ROOT_KV_LO, self.cat.cfg.kv_class)?;
        let kv = root.c.kv(oid, true).map_err(class_error)?;
        let value = format::encode_dataset(self.cont.c.label(), now_ns());
        kv.insert(&self.key.to_string(), &value)?;
        self.cont.registered.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// The value of this flush's log slot: the framed flush, or, if too
    /// large, a pointer to a byte array holding it.
    fn slot_value(&self, flush: &Flush) -> Result<Vec<u8>> {
        let framed = format::FRAMING.framed(format::FLUSH, &format::encode_flush(flush));
        if framed.len() <= format::MAX_INLINE {
            return Ok(framed);
        }
        let lo = self.cont.next_oid(self.cat.cfg.oids_per_alloc)?;
        let oid = self
            .cont
            .c
            .generate_oid(
                0,
                lo,
                crate::ffi::DAOS_OT_ARRAY_BYTE,
                self.cat.cfg.array_class,
            )
            .map_err(class_error)?;
        let arr = self
            .cont
            .c
            .array(oid, format::SPILL_CHUNK, true)
            .map_err(class_error)?;
        arr.write(0, &framed)?;
        Ok(format::encode_indirect(&format::Indirect {
            lo: oid.lo,
            hi: oid.hi,
            length: framed.len() as u64,
            crc: crc32c::crc32c(&framed),
        }))
    }
}

/// A dataset KV's log slots, as the engine's slot log sees them.
struct KvSlots<'a> {
    kv: &'a Kv<'a>,
    cont: &'a Cont,
}

impl SlotLog for KvSlots<'_> {
    fn get(&self, n: u64, buf: &mut Vec<u8>) -> Result<bool> {
        Ok(self.kv.get_into(&slot_key(n), buf)?)
    }

    fn exists(&self, n: u64) -> Result<bool> {
        Ok(self.kv.exists(&slot_key(n))?)
    }

    fn insert(&self, n: u64, value: &[u8]) -> Result<bool> {
        Ok(self.kv.insert(&slot_key(n), value)? == Inserted::Yes)
    }

    fn name(&self, n: u64) -> String {
        format!("daos://{}/{}", self.cont.c.name(), slot_key(n))
    }
}

/// Insert `value` into the first free log slot ([`slots::publish`]),
/// starting from what this process saw, or cold from the tail hint;
/// returns the slot.
fn publish(
    cont: &Cont,
    kv: &Kv<'_>,
    value: &[u8],
    check: &mut dyn FnMut() -> Result<()>,
) -> Result<u64> {
    let mut slot = cont.known_tail.load(Ordering::Relaxed);
    if slot == 0 && !cont.known_empty.load(Ordering::Relaxed) {
        // Cold: start from the hint (a slot that exists), if any.
        if let Some(h) = kv.get(layout::TAIL_KEY)? {
            if let Ok(b) = <[u8; 8]>::try_from(h.as_slice()) {
                slot = u64::from_le_bytes(b) + 1;
            }
        }
    }
    let slot = slots::publish(&KvSlots { kv, cont }, slot, value, check)?;
    cont.saw_slot(slot);
    if slot > 0 && slot % layout::TAIL_EVERY == 0 {
        kv.put(layout::TAIL_KEY, &slot.to_le_bytes())?;
    }
    Ok(slot)
}

impl CatalogueWriter for DaosCatalogueWriter {
    fn schema_text(&self) -> Option<Arc<str>> {
        self.cont.schema.get().cloned()
    }

    fn insert(
        &mut self,
        collocation: &CollocationKey,
        element: &ElementKey,
        location: &FieldLocation,
    ) -> Result<()> {
        self.pending.insert(collocation, element, location);
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        let flush = Flush {
            timestamp_ns: now_ns(),
            writer: self.id.clone(),
            blocks: format::blocks(pending),
        };
        let epoch = self.cont.control_epoch.load(Ordering::SeqCst);
        let result = (|| {
            let value = self.slot_value(&flush)?;
            self.register()?;
            let kv = self.kv()?;
            let key = &self.key;
            if epoch != self.control_epoch
                && read_control(&kv, &self.cont)?.contains(Operation::Archive)
            {
                // This process changed the locks since the last check.
                return Err(locked(key, Operation::Archive));
            }
            publish(&self.cont, &kv, &value, &mut || {
                if read_control(&kv, &self.cont)?.contains(Operation::Archive) {
                    return Err(locked(key, Operation::Archive));
                }
                Ok(())
            })
            .map(|_| ())
        })();
        if result.is_ok() {
            self.control_epoch = epoch;
        }
        result.map_err(|e| {
            if is_gone(&e) {
                // The container was destroyed under the writer: a wipe.
                self.cont.registered.store(false, Ordering::Relaxed);
                self.cat
                    .session
                    .evict(self.cont.c.pool_label(), self.cont.c.label());
                wiped_while_writing(&self.key)
            } else if e.kind() == ErrorKind::Locked {
                e
            } else {
                e.context(format!("publishing a flush of {}", self.cont.c.name()))
            }
        })
    }

    /// Unknown: the slot insert that publishes a flush may have taken
    /// effect when it reports an error.
    fn last_flush_invisible(&self) -> bool {
        false
    }
}

/// What a reader knows of its dataset. Blocks come with their entries
/// (inline in FLUSH records), so they have no place.
type ReaderLog = Log<(), DaosCursor>;

/// Where a DAOS reader stopped in its dataset's log.
#[derive(Debug)]
struct DaosCursor {
    /// The dataset's container; `None`: the dataset is gone.
    cont: Option<Arc<Cont>>,
    /// Where in the container's log slots.
    slots: SlotCursor,
}

/// A log at its start in `cont` (`None`: the dataset is gone).
fn log_of(cont: Option<Arc<Cont>>) -> ReaderLog {
    Log::new(
        Arc::from(""),
        DaosCursor {
            cont,
            slots: SlotCursor {
                buf: Vec::with_capacity(format::MAX_INLINE),
                ..SlotCursor::default()
            },
        },
    )
}

/// One dataset's log in DAOS, as the engine's reader follows it: the
/// slots of its container's KV. When the container is destroyed (a wipe),
/// the reader becomes empty, and follows a container created anew under
/// the same label.
#[derive(Debug)]
struct DaosLog {
    kv_class: u32,
    session: &'static Session,
    pool: String,
    key: DatasetKey,
}

impl DaosLog {
    /// The container under the dataset's label now, if it holds the
    /// dataset (after a destroy, possibly a new one).
    fn reopen(&self) -> Result<Option<Arc<Cont>>> {
        let label = dataset_label(&self.key);
        self.session.evict(&self.pool, &label);
        let Some(cont) = self.session.container(&self.pool, &label, None)? else {
            return Ok(None);
        };
        let oid = cont.kv_oid(layout::DATASET_KV_LO, self.kv_class)?;
        let kv = cont.c.kv(oid, true).map_err(class_error)?;
        let Some(bytes) = kv.get(layout::META_KEY)? else {
            return Ok(None);
        };
        let what = || format!("daos://{}/{}", cont.c.name(), layout::META_KEY);
        let meta = format::decode_meta(&bytes, &what)?;
        same_dataset(&cont, &meta, &self.key)?;
        drop(kv);
        Ok(Some(cont))
    }

    /// Decode a slot's value (following an INDIRECT record).
    fn decode(&self, cont: &Cont, slot: u64, value: &[u8]) -> Result<SlotRecord> {
        let what = || format!("daos://{}/{}", cont.c.name(), slot_key(slot));
        let (kind, payload) = format::FRAMING.unframe_exact(value, &what)?;
        match kind {
            format::FLUSH => format::decode_flush(payload, &what).map(SlotRecord::Flush),
            format::WIPE | format::RECLAIM | format::CONTROL => {
                MaintenanceRecord::decode(kind, payload, &what)
                    .map(|r| r.map_or(SlotRecord::Unknown, SlotRecord::Maintenance))
            }
            format::INDIRECT => {
                let ind = format::decode_indirect(payload, &what)?;
                let oid = crate::ffi::DaosObjId {
                    lo: ind.lo,
                    hi: ind.hi,
                };
                let arr = cont
                    .c
                    .array(oid, format::SPILL_CHUNK, false)
                    .map_err(class_error)?;
                let mut buf = vec![0u8; ind.length as usize];
                let got = arr.read(0, &mut buf)?;
                let awhat = || {
                    format!(
                        "daos://{}/{} (flush of {})",
                        cont.c.name(),
                        crate::client::oid_hex(oid),
                        slot_key(slot)
                    )
                };
                if got != ind.length || crc32c::crc32c(&buf) != ind.crc {
                    return Err(Error::corrupt(format!(
                        "{}: {got} of {} bytes, checksum {}",
                        awhat(),
                        ind.length,
                        if crc32c::crc32c(&buf) == ind.crc {
                            "ok"
                        } else {
                            "mismatch"
                        }
                    )));
                }
                let p = format::FRAMING.unframe_kind(&buf, format::FLUSH, "a FLUSH", &awhat)?;
                format::decode_flush(p, &awhat).map(SlotRecord::Flush)
            }
            // Record types of newer versions are skipped, as on every
            // backend (META and DATASET are never log slots: damage).
            format::META | format::DATASET => Err(Error::corrupt(format!(
                "{}: record type {kind}, expected a log record",
                what()
            ))),
            _ => Ok(SlotRecord::Unknown),
        }
    }

    /// Read new slots of `cont`'s log ([`slots::follow`]).
    fn follow_cont(&self, log: &mut ReaderLog, cont: &Cont) -> Result<()> {
        let oid = cont.kv_oid(layout::DATASET_KV_LO, self.kv_class)?;
        let kv = cont.c.kv(oid, true).map_err(class_error)?;
        let slots = KvSlots { kv: &kv, cont };
        let cursor = &mut log.cursor.slots;
        slots::follow(
            &slots,
            &mut log.index,
            &mut log.torn,
            cursor,
            &mut |slot, value| self.decode(cont, slot, value),
        )?;
        if cursor.next > 0 {
            cont.saw_slot(cursor.next - 1);
        }
        Ok(())
    }
}

impl LogMedium for DaosLog {
    type Place = ();
    type Cursor = DaosCursor;

    fn follow(&self, log: &mut ReaderLog) -> Result<()> {
        let cont = match log.cursor.cont.clone() {
            Some(c) => c,
            None => match self.reopen()? {
                Some(c) => {
                    *log = log_of(Some(c.clone()));
                    c
                }
                None => return Ok(()),
            },
        };
        match self.follow_cont(log, &cont) {
            Err(e) if is_gone(&e) => {
                // Destroyed by a wipe: empty, or a dataset created anew.
                let now = self.reopen()?;
                *log = log_of(now.clone());
                match now {
                    Some(c) => self.follow_cont(log, &c),
                    None => Ok(()),
                }
            }
            r => r,
        }
    }

    fn schema_text(&self, log: &ReaderLog) -> Option<Arc<str>> {
        log.cursor
            .cont
            .as_ref()
            .and_then(|c| c.schema.get().cloned())
    }
}
