//! The DAOS catalogue (`engine: daos`): [`DaosMedium`] is what DAOS gives
//! the engine (a `SlotMedium`); the engine's [`LogCatalogue`] does the
//! rest.
//!
//! Layout (`docs/format/daos.md`): a root KV in the root container maps
//! every dataset key to its container; each dataset has a container whose
//! dataset KV holds `meta` (key, schema) and a **log**: slots `f.0`, `f.1`,
//! … each holding one writer's whole flush (every entry of every
//! collocation it flushed, with the element keys and locations). A writer
//! publishes a flush with one conditional insert (`DAOS_COND_KEY_INSERT`)
//! into the first free slot: DAOS guarantees exactly one of several racing
//! writers gets a slot. A wipe destroys the container: the inserts of
//! writers still at work then fail.
//!
//! Readers follow the log from where they stopped: `refresh` is one
//! `kv_get` when nothing is new, plus one per new flush; lookups, list
//! and axes are then answered from memory. Listing therefore never costs
//! a `kv_get` per entry (the paper's design does): it costs one `kv_get`
//! per flush, each bringing all of that flush's entries.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use fieldstore_core::engine::log_catalogue::{LogCatalogue, MediumMaintenance};
use fieldstore_core::engine::slot_catalogue::{
    follow_slots, locks_in, Looked, SlotMedium, SlotReaderLog,
};
use fieldstore_core::engine::slots::{self, SlotLog, SlotRecord};
use fieldstore_core::engine::{check_held, stored_key, NotDatasets};
use fieldstore_core::maintenance::{
    list_lock_marker, list_locked_dataset, wiped_while_writing, Item, ItemKind, LIST_LOCK_PREFIX,
};
use fieldstore_core::record::maintenance::now_ns;
use fieldstore_core::record::Framing;
use fieldstore_core::{DatasetKey, Error, ErrorKind, Locks, Result, Schema};

use crate::client::class_error;
use crate::client::{Inserted, Kv};
use crate::config::DaosConfig;
use crate::format::{self, Meta};
use crate::layout::{self, dataset_label, slot_key};
use crate::session::{is_gone, Cont, Session};

/// The DAOS catalogue.
pub type DaosCatalogue = LogCatalogue<DaosMedium>;

/// What DAOS gives the engine's slot catalogue: a pool's root container
/// and the datasets' containers.
#[derive(Debug)]
pub struct DaosMedium {
    cfg: DaosConfig,
    session: &'static Session,
    root: Arc<Cont>,
    /// Containers found without a dataset's `meta`.
    not_datasets: NotDatasets,
}

impl DaosMedium {
    /// Open the catalogue a `daos:` section describes: load libdaos,
    /// connect to the pool, create the root container if missing.
    ///
    /// # Errors
    /// `InvalidConfig` for a bad section; `Unavailable` without libdaos or
    /// its agent; `NotFound` if the pool does not exist.
    pub fn open(section: &serde_json::Value) -> Result<DaosMedium> {
        DaosMedium::with_config(DaosConfig::from_value(section)?)
    }

    /// As [`DaosMedium::open`], from a parsed section.
    ///
    /// # Errors
    /// As [`DaosMedium::open`].
    pub fn with_config(cfg: DaosConfig) -> Result<DaosMedium> {
        let session = Session::get(cfg.library.as_deref())?;
        let root = session
            .container(
                &cfg.catalogue_pool,
                &cfg.root_container,
                Some(cfg.container_redundancy),
            )?
            .ok_or_else(|| Error::internal("root container neither opened nor created"))?;
        Ok(DaosMedium {
            cfg,
            session,
            root,
            not_datasets: NotDatasets::new(),
        })
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

    /// Forget the process's handle of the dataset's container (destroyed).
    fn evict(&self, key: &DatasetKey) {
        self.session
            .evict(&self.cfg.catalogue_pool, &dataset_label(key));
    }

    /// Read (or, with `schema`, create) the dataset's `meta` and check that
    /// the container holds this dataset.
    fn check_meta(&self, cont: &Cont, key: &DatasetKey, schema: Option<&Schema>) -> Result<bool> {
        if let Some(m) = cont.meta_checked.get() {
            return same_dataset(cont, m, key).map(|()| true);
        }
        let meta = match self.read_meta(cont)? {
            Some(m) => m,
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
                match self.kv_of(cont)?.insert(layout::META_KEY, &bytes)? {
                    Inserted::Yes => {
                        // A new dataset: its log is empty, no need to look
                        // for its end.
                        cont.known_empty.store(true, Ordering::Relaxed);
                        meta
                    }
                    // Another writer created the dataset meanwhile.
                    Inserted::Exists => self.read_meta(cont)?.ok_or_else(|| {
                        Error::corrupt(format!(
                            "daos://{}/{}: exists and then does not",
                            cont.c.name(),
                            layout::META_KEY
                        ))
                    })?,
                }
            }
        };
        same_dataset(cont, &meta, key)?;
        checked(cont, meta);
        Ok(true)
    }

    /// The container labelled `label` and its `meta`, if it has one.
    ///
    /// # Errors
    /// `NotFound` for a container destroyed (by a wipe) while looked at.
    fn read_label(&self, label: &str) -> Result<Option<(Meta, Arc<Cont>)>> {
        let read = || {
            let pool = &self.cfg.catalogue_pool;
            let Some(cont) = self.session.container(pool, label, None)? else {
                return Ok(None);
            };
            let meta = match cont.meta_checked.get() {
                Some(m) => Some(m.clone()),
                None => self.read_meta(&cont)?,
            };
            Ok(meta.map(|m| (m, cont)))
        };
        read().map_err(|e| {
            if is_gone(&e) {
                Error::new(ErrorKind::NotFound, format!("{label}: destroyed meanwhile"))
            } else {
                e
            }
        })
    }

    /// The container's `meta`, if it has one: one `kv_get`.
    fn read_meta(&self, cont: &Cont) -> Result<Option<Meta>> {
        let Some(bytes) = self.kv_of(cont)?.get(layout::META_KEY)? else {
            return Ok(None);
        };
        let what = || format!("daos://{}/{}", cont.c.name(), layout::META_KEY);
        format::decode_meta(&bytes, &what).map(Some)
    }
}

/// Remember `meta`, checked to name the dataset `cont` holds.
fn checked(cont: &Cont, meta: Meta) {
    let _ = cont.schema.set(Arc::from(meta.schema.as_str()));
    let _ = cont.meta_checked.set(meta);
}

fn same_dataset(cont: &Cont, meta: &Meta, key: &DatasetKey) -> Result<()> {
    let place = || format!("DAOS container {}", cont.c.name());
    check_held(&place, &meta.key, key)
}

/// A dataset KV's log slots, as the engine's slot log sees them.
struct KvSlots<'a> {
    kv: Kv<'a>,
    cont: &'a Cont,
    /// The object class of the tail hint array.
    array_class: u32,
}

impl KvSlots<'_> {
    /// The dataset's tail hint array (opening it is local: no RPC).
    fn hint_array(&self) -> Result<crate::client::Array<'_>> {
        let oid = self
            .cont
            .c
            .generate_oid(
                layout::HINT_ARRAY_HI,
                0,
                crate::ffi::DAOS_OT_ARRAY_BYTE,
                self.array_class,
            )
            .map_err(class_error)?;
        self.cont
            .c
            .array(oid, layout::HINT_CHUNK, true)
            .map_err(class_error)
    }
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

    /// A writer that lost a race: one `kv_get` of `from` (most losers were
    /// beaten by one writer), else the tail hint (one `array_get_size`)
    /// and a gallop from just past it. A writer many others passed since
    /// its last flush finds the end in three looks or so, not ~2 log₂ of
    /// the slots they took.
    fn end_from(&self, from: u64) -> Result<Option<u64>> {
        if !self.exists(from)? {
            return Ok(Some(from));
        }
        // The hint is at or past `from` when there is one.
        let past = self.hint_past(from, true)?.map_or(from + 1, |h| h + 1);
        Ok(Some(slots::first_free(self, past)?))
    }

    /// The last slot this process saw; cold, the tail hint: the size of
    /// the hint array less one (one `array_get_size`), a slot that exists;
    /// for a log written before the hint was an array, its `tail` key (one
    /// `kv_get` more).
    fn hint_past(&self, n: u64, cold: bool) -> Result<Option<u64>> {
        let seen = self.cont.known_tail.load(Ordering::Relaxed);
        if seen > n {
            return Ok(Some(seen - 1));
        }
        if !cold {
            return Ok(None);
        }
        let hint = match self.hint_array()?.size()? {
            0 => {
                let old = self.kv.get(layout::OLD_TAIL_KEY)?;
                let old = old.and_then(|h| <[u8; 8]>::try_from(h.as_slice()).ok());
                old.map(u64::from_le_bytes)
            }
            size => Some(size - 1),
        };
        Ok(hint.filter(|&h| h >= n))
    }

    /// One `array_write` of one byte at offset `n`: an array's size only
    /// grows, so racing writers storing their hints out of order cannot
    /// lower it.
    fn set_hint(&self, n: u64) -> Result<()> {
        Ok(self.hint_array()?.write(n, &[1])?)
    }

    fn name(&self, n: u64) -> String {
        format!("daos://{}/{}", self.cont.c.name(), slot_key(n))
    }
}

impl SlotMedium for DaosMedium {
    type Dataset = Arc<Cont>;

    const FRAMING: Framing = format::FRAMING;

    /// One `kv_get` reads any slot.
    const SLOT_BUFFER: usize = format::MAX_INLINE;

    /// The dataset's container if it exists and holds this dataset; a
    /// stale cached handle (the container was destroyed) is dropped first.
    fn open(&self, dataset: &DatasetKey) -> Result<Option<Arc<Cont>>> {
        for attempt in 0..2 {
            let Some(cont) = self.dataset_cont(dataset, false)? else {
                return Ok(None);
            };
            match self.check_meta(&cont, dataset, None) {
                Ok(true) => return Ok(Some(cont)),
                Ok(false) => return Ok(None),
                Err(e) if is_gone(&e) && attempt == 0 => self.evict(dataset),
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    fn create(&self, dataset: &DatasetKey, schema: &Schema) -> Result<Arc<Cont>> {
        match self.open_for_write(dataset, schema) {
            Err(e) if is_gone(&e) => {
                // A cached handle of a container a wipe destroyed.
                self.evict(dataset);
                self.open_for_write(dataset, schema)
            }
            r => r,
        }
    }

    fn schema(&self, cont: &Arc<Cont>) -> Arc<str> {
        cont.schema.get().cloned().unwrap_or_else(|| Arc::from(""))
    }

    /// Once per process: the root KV maps the key to the container.
    fn register(&self, dataset: &DatasetKey, cont: &Arc<Cont>) -> Result<()> {
        if cont.registered.load(Ordering::Relaxed) {
            return Ok(());
        }
        let value = format::encode_dataset(cont.c.label(), now_ns());
        self.root_kv()?.insert(&dataset.to_string(), &value)?;
        cont.registered.store(true, Ordering::Relaxed);
        Ok(())
    }

    fn registered(&self) -> Result<Vec<DatasetKey>> {
        let keys = self.root_kv()?.keys()?;
        let datasets = keys.iter().filter(|k| !k.starts_with(LIST_LOCK_PREFIX));
        let root = || format!("daos://{} (root KV)", self.root.c.name());
        datasets.map(|k| stored_key(k, &root)).collect()
    }

    /// One listing of the pool's containers (`daos_pool_list_cont`), and
    /// for each container no registration names (but the root), one open
    /// and one `kv_get` of its `meta`: a dataset being created before its
    /// first flush, a store's container, a dataset whose root KV entry
    /// was lost, or what is not fieldstore's (not looked at again for a
    /// minute).
    fn unregistered(&self, registered: &[DatasetKey]) -> Result<Vec<(DatasetKey, Arc<Cont>)>> {
        let pool = self.session.pool(&self.cfg.catalogue_pool)?;
        let labels = pool.containers()?.into_iter();
        let ours = labels.filter(|l| *l != self.cfg.root_container);
        let found = self
            .not_datasets
            .sift(ours, registered, dataset_label, |label| {
                Ok(self
                    .read_label(label)?
                    .map(|(m, c)| (m.key.clone(), (m, c))))
            })?;
        let found = found.into_iter().map(|(key, (meta, cont))| {
            checked(&cont, meta);
            (key, cont)
        });
        Ok(found.collect())
    }

    fn describe(&self, dataset: &DatasetKey) -> String {
        format!(
            "daos://{}/{}",
            self.cfg.catalogue_pool,
            dataset_label(dataset)
        )
    }

    fn slots<'a>(&'a self, cont: &'a Arc<Cont>) -> Result<Box<dyn SlotLog + 'a>> {
        Ok(Box::new(KvSlots {
            kv: self.kv_of(cont)?,
            cont,
            array_class: self.cfg.array_class,
        }))
    }

    /// Follows an INDIRECT record to the array holding the flush.
    fn decode(&self, cont: &Arc<Cont>, slot: u64, value: &[u8]) -> Result<SlotRecord> {
        let what = || format!("daos://{}/{}", cont.c.name(), slot_key(slot));
        let (kind, payload) = format::FRAMING.unframe_exact(value, &what)?;
        match kind {
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
                let crc = crc32c::crc32c(&buf);
                if got != ind.length || crc != ind.crc {
                    let sum = if crc == ind.crc { "ok" } else { "mismatch" };
                    return Err(Error::corrupt(format!(
                        "{}: {got} of {} bytes, checksum {sum}",
                        awhat(),
                        ind.length,
                    )));
                }
                let p = format::FRAMING.unframe_kind(&buf, format::FLUSH, "a FLUSH", &awhat)?;
                format::decode_flush(p, &awhat).map(SlotRecord::Flush)
            }
            _ => SlotRecord::decode(kind, payload, &what),
        }
    }

    /// A container destroyed under the reader (a wipe) ends the
    /// incarnation: its handle is dropped, and the next open finds the
    /// dataset gone or created anew.
    fn follow(&self, cont: &Arc<Cont>, log: &mut SlotReaderLog<Arc<Cont>>) -> Result<Looked> {
        let followed = self
            .slots(cont)
            .and_then(|slots| follow_slots(self, cont, log, &*slots));
        match followed {
            Ok(_) => {
                if let Some(last) = log.cursor.slots.next.checked_sub(1) {
                    cont.saw_slot(last);
                }
                Ok(Looked::Current)
            }
            Err(e) if is_gone(&e) => {
                self.session.evict(&self.cfg.catalogue_pool, cont.c.label());
                Ok(Looked::Ended)
            }
            Err(e) => Err(e),
        }
    }

    /// Inline if it fits a slot (`format::MAX_INLINE`); else the framed
    /// flush goes to a byte array and the slot holds a pointer to it (an
    /// INDIRECT record).
    fn flush_value(&self, cont: &Arc<Cont>, framed: Vec<u8>) -> Result<Vec<u8>> {
        if framed.len() <= format::MAX_INLINE {
            return Ok(framed);
        }
        let lo = cont.next_oid(self.cfg.oids_per_alloc)?;
        let oid = cont
            .c
            .generate_oid(0, lo, crate::ffi::DAOS_OT_ARRAY_BYTE, self.cfg.array_class)
            .map_err(class_error)?;
        let arr = cont
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

    /// What the process's writers and readers saw of the log.
    fn known_end(&self, cont: &Arc<Cont>) -> u64 {
        cont.known_tail.load(Ordering::Relaxed)
    }

    /// What this process saw of the log, else (cold) the tail hint, a slot
    /// that exists, written after every slot published.
    fn start(&self, cont: &Arc<Cont>, log: &dyn SlotLog) -> Result<u64> {
        let known = self.known_end(cont);
        if known > 0 || cont.known_empty.load(Ordering::Relaxed) {
            return Ok(known);
        }
        Ok(log.hint_past(0, true)?.map_or(0, |h| h + 1))
    }

    /// Remembered for `known_end`.
    fn published(&self, cont: &Arc<Cont>, slot: u64) -> Result<()> {
        cont.saw_slot(slot);
        Ok(())
    }

    /// A container destroyed under the writer: a wipe.
    fn flush_failed(&self, dataset: &DatasetKey, cont: &Arc<Cont>, e: Error) -> Error {
        if is_gone(&e) {
            cont.registered.store(false, Ordering::Relaxed);
            self.evict(dataset);
            wiped_while_writing(dataset)
        } else {
            e.context(format!("publishing a flush of {}", cont.c.name()))
        }
    }

    /// The dataset KV's `control` value.
    fn locks(&self, cont: &Arc<Cont>) -> Result<Locks> {
        let value = self.kv_of(cont)?.get(layout::CONTROL_KEY)?;
        let what = || format!("daos://{}/{}", cont.c.name(), layout::CONTROL_KEY);
        locks_in(&format::FRAMING, value.as_deref(), &what)
    }

    fn set_locks(&self, cont: &Arc<Cont>, control: &[u8]) -> Result<()> {
        Ok(self.kv_of(cont)?.put(layout::CONTROL_KEY, control)?)
    }
}

impl MediumMaintenance for DaosMedium {
    fn list_locked(&self) -> Result<Option<Vec<DatasetKey>>> {
        let keys = self.root_kv()?.keys()?;
        Ok(Some(
            keys.iter().filter_map(|k| list_locked_dataset(k)).collect(),
        ))
    }

    /// The root KV's `!list-locked <key>`, holding the CONTROL record.
    fn mark_list_locked(&self, dataset: &DatasetKey, control: Option<&[u8]>) -> Result<()> {
        let marker = list_lock_marker(dataset);
        let root = self.root_kv()?;
        match control {
            Some(c) => root.put(&marker, &format::FRAMING.framed(format::CONTROL, c))?,
            None => root.remove(&marker)?,
        }
        Ok(())
    }

    fn inventory(&self, dataset: &DatasetKey) -> Result<Vec<Item>> {
        let mut items = Vec::new();
        if let Some(cont) = self.open(dataset)? {
            let name = cont.c.name();
            items.push(Item::new(
                ItemKind::Catalogue,
                format!("daos://{name}"),
                None,
            ));
            for k in self.kv_of(&cont)?.keys()? {
                let ours = k == layout::META_KEY
                    || k == layout::OLD_TAIL_KEY
                    || k == layout::CONTROL_KEY
                    || k.strip_prefix("f.")
                        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
                if !ours {
                    let uri = format!("daos://{name}/{k}");
                    items.push(Item::new(ItemKind::Unknown, uri, None));
                }
            }
        }
        if self.root_kv()?.exists(&dataset.to_string())? {
            let uri = format!("daos://{}/{}", self.root.c.name(), dataset);
            items.push(Item::new(ItemKind::Catalogue, uri, None));
        }
        Ok(items)
    }

    fn wipe(
        &self,
        dataset: &DatasetKey,
        _unsafe_wipe_all: bool,
        store_step: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        // 1. One destroy: every reader sees the whole dataset or nothing
        //    (with one pool, the field arrays go with it).
        let label = dataset_label(dataset);
        self.session.destroy(&self.cfg.catalogue_pool, &label)?;
        // 2. The store's part.
        store_step()?;
        // 3. The registration. A writer may have created the dataset anew
        //    meanwhile: it is then registered again.
        let root = self.root_kv()?;
        root.remove(&list_lock_marker(dataset))?;
        root.remove(&dataset.to_string())?;
        if let Some(cont) = self.open(dataset)? {
            let value = format::encode_dataset(cont.c.label(), now_ns());
            root.insert(&dataset.to_string(), &value)?;
        }
        Ok(())
    }
}
