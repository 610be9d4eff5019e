//! The S3 catalogue (`engine: s3`): a dataset's log is a row of S3
//! objects, one whole record each, on the engine's slot log
//! ([`fieldstore_core::engine::slots`]); layout and costs in
//! `docs/format/s3.md`.
//!
//! **The commit.** A writer publishes a flush with one conditional PUT
//! (`If-None-Match: *`) of the first free log object,
//! `<dataset>/<inc>/log/<slot>`: the server creates it only if it does not
//! exist, so of racing writers exactly one gets a slot, the slots fill
//! without gaps in the order flushes became visible, and no writer waits
//! for another. A flush is one object, so it is visible whole or not at
//! all, and never changed.
//!
//! **Incarnations.** `<dataset>/meta` names the dataset's key, schema and
//! incarnation `<inc>` (created with a conditional PUT, so racing creators
//! agree). A wipe deletes `meta` first, then appends a WIPED record to the
//! old log (readers following it stop there and open the dataset anew),
//! then deletes the store's part and the old incarnation's objects. A
//! writer checks after each publish that `meta` still names its
//! incarnation: if not, its flush may have landed after the WIPED record,
//! and it fails instead of acknowledging what nobody will read.
//!
//! **Locks** are `<dataset>/<inc>/control` (read by writers when they start
//! and whenever another append took the slot they tried) and a CONTROL
//! record in the log (for readers); list locks also put a marker under
//! `%list-locked/`, which listings of datasets read.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use fieldstore_core::engine::slots::{self, FollowEnd, SlotCursor, SlotLog, SlotRecord};
use fieldstore_core::engine::{Log, LogMedium, LogReader};
use fieldstore_core::maintenance::{locked, wiped_while_writing, Item, ItemKind};
use fieldstore_core::record::inline::{self, Flush};
use fieldstore_core::record::maintenance::{self as records, now_ns, MaintenanceRecord};
use fieldstore_core::record::pending::PendingEntries;
use fieldstore_core::record::{kind, Dec, Enc, Framed, Framing};
use fieldstore_core::{
    Catalogue, CatalogueMaintenance, CatalogueWriter, ChangeWaiter, CollocationKey, Control,
    DamagedDatasets, DatasetKey, DatasetMover, DatasetReader, ElementKey, Error, ErrorKind,
    FieldLocation, Locks, Operation, PollingWaiter, Result, Schema,
};

use crate::client::Client;
use crate::config::S3Config;
use crate::naming::{self, dataset_prefix, LIST_LOCKED, PROBE, REGISTRY};

/// The framing of every catalogue object: magic `FSS3`, format version 1.
const FRAMING: Framing = Framing::new(*b"FSS3");

/// The S3 catalogue.
#[derive(Debug, Clone)]
pub struct S3Catalogue {
    client: Arc<Client>,
    bucket: String,
}

/// A dataset's `meta`: what it is, and which incarnation is current.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Meta {
    key: DatasetKey,
    schema: Arc<str>,
    incarnation: String,
}

/// One incarnation's log slots.
struct Slots<'a> {
    cat: &'a S3Catalogue,
    /// `<dataset>/<inc>/`.
    prefix: String,
}

impl Slots<'_> {
    /// The first `max` slots after slot `n` (`None`: from the start) that
    /// hold a value, in order: one listing.
    fn after(&self, n: Option<u64>, max: usize) -> Result<Vec<u64>> {
        let log = naming::log_prefix(&self.prefix);
        let after = n.map_or_else(|| log.clone(), |n| naming::slot_key(&self.prefix, n));
        let keys = self
            .cat
            .client
            .keys_after(&self.cat.bucket, &log, &after, max)?;
        Ok(keys
            .iter()
            .filter_map(|k| k[log.len()..].parse().ok())
            .collect())
    }
}

impl SlotLog for Slots<'_> {
    fn get(&self, n: u64, buf: &mut Vec<u8>) -> Result<bool> {
        let key = naming::slot_key(&self.prefix, n);
        self.cat.client.get(&self.cat.bucket, &key, buf)
    }

    fn exists(&self, n: u64) -> Result<bool> {
        let key = naming::slot_key(&self.prefix, n);
        Ok(self.cat.client.head(&self.cat.bucket, &key)?.is_some())
    }

    /// One listing of at most one key: a gap of any length is found.
    fn next_after(&self, n: u64) -> Result<Option<u64>> {
        Ok(self.after(Some(n), 1)?.first().copied())
    }

    /// One listing per 1,000 slots after `from - 1` (no gap is filled: the
    /// end is after the last slot listed).
    fn end_from(&self, from: u64) -> Result<Option<u64>> {
        let mut end = from;
        loop {
            let page = self.after(end.checked_sub(1), 1000)?;
            match page.last() {
                Some(&last) => end = last + 1,
                None => return Ok(Some(end)),
            }
            if page.len() < 1000 {
                return Ok(Some(end));
            }
        }
    }

    /// One listing per 1,000 slots: a cold reader fetches them in parallel.
    fn listed(&self) -> Result<Option<Vec<u64>>> {
        let log = naming::log_prefix(&self.prefix);
        let listing = self.cat.client.list(&self.cat.bucket, &log)?;
        let slots = listing
            .objects
            .iter()
            .filter_map(|o| o.key[log.len()..].parse().ok());
        Ok(Some(slots.collect()))
    }

    fn insert(&self, n: u64, value: &[u8]) -> Result<bool> {
        let key = naming::slot_key(&self.prefix, n);
        self.cat.client.put_new(&self.cat.bucket, &key, value)
    }

    fn name(&self, n: u64) -> String {
        naming::uri(&self.cat.bucket, &naming::slot_key(&self.prefix, n))
    }
}

impl S3Catalogue {
    /// Connect to the configured endpoint and check the bucket (creating
    /// it when missing and `create_bucket` allows).
    ///
    /// # Errors
    /// As [`crate::S3Store::open`].
    pub fn open(cfg: &S3Config) -> Result<S3Catalogue> {
        let cat = S3Catalogue {
            client: Client::connect(cfg)?,
            bucket: cfg.bucket.clone(),
        };
        cat.check_conditional_put()?;
        Ok(cat)
    }

    /// Refuse a server that ignores `If-None-Match: *`: there two writers
    /// would replace each other's flushes in one slot, losing one in
    /// silence. A probe object is created twice (the second must be
    /// refused), then removed: three requests, at the first open of each
    /// endpoint and bucket in a process.
    fn check_conditional_put(&self) -> Result<()> {
        static CHECKED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
        let place = format!("{} {}", self.client.endpoint, self.bucket);
        if CHECKED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&place)
        {
            return Ok(());
        }
        let probe = format!("{PROBE}{}", fieldstore_core::writer_id::next());
        // Two bodies: `put_new` tells its own object by its bytes.
        let first = self.client.put_new(&self.bucket, &probe, b"1")?;
        let second = self.client.put_new(&self.bucket, &probe, b"2")?;
        self.client.delete(&self.bucket, &probe)?;
        if first && !second {
            CHECKED
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(place);
            return Ok(());
        }
        Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "the S3 server at {} does not honour If-None-Match: * on PUT, which the S3 \
                 catalogue's commit needs (engine: toc with store: s3 works without it)",
                self.client.endpoint
            ),
        ))
    }

    /// Open the catalogue an `s3:` configuration section describes.
    ///
    /// # Errors
    /// As [`S3Config::from_value`] and [`S3Catalogue::open`].
    pub fn from_config(section: &serde_json::Value) -> Result<S3Catalogue> {
        S3Catalogue::open(&S3Config::from_value(section)?)
    }

    fn slots(&self, dataset: &DatasetKey, inc: &str) -> Slots<'_> {
        let prefix = naming::incarnation_prefix(&dataset_prefix(dataset), inc);
        Slots { cat: self, prefix }
    }

    /// The dataset's `meta`, if it exists (checked to name this dataset).
    fn meta(&self, dataset: &DatasetKey) -> Result<Option<Meta>> {
        let key = naming::meta_key(&dataset_prefix(dataset));
        let mut buf = Vec::new();
        if !self.client.get(&self.bucket, &key, &mut buf)? {
            return Ok(None);
        }
        let what = || naming::uri(&self.bucket, &key);
        let mut d = Dec::new(
            FRAMING.unframe_kind(&buf, kind::INIT, "a META", &what)?,
            &what,
        );
        let meta = Meta {
            key: DatasetKey(d.key()?),
            schema: Arc::from(d.str()?),
            incarnation: d.str()?.to_string(),
        };
        d.u64()?;
        d.end()?;
        if meta.key != *dataset {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "{} holds dataset {}, not {} (their names collide)",
                    what(),
                    meta.key.braced(),
                    dataset.braced()
                ),
            ));
        }
        Ok(Some(meta))
    }

    /// The dataset's `meta`, created if missing (racing creators agree:
    /// the first conditional PUT wins, the others read it).
    fn meta_or_create(&self, dataset: &DatasetKey, schema: &Schema) -> Result<Meta> {
        if let Some(m) = self.meta(dataset)? {
            return Ok(m);
        }
        let meta = Meta {
            key: dataset.clone(),
            schema: Arc::from(schema.text()),
            incarnation: format!("i{}", fieldstore_core::writer_id::next()),
        };
        let mut e = Enc::default();
        e.str(&dataset.to_string());
        e.str(&meta.schema);
        e.str(&meta.incarnation);
        e.u64(now_ns());
        let key = naming::meta_key(&dataset_prefix(dataset));
        if self
            .client
            .put_new(&self.bucket, &key, &FRAMING.framed(kind::INIT, &e.0))?
        {
            return Ok(meta);
        }
        // Another writer created it first: its `meta` is the one.
        self.meta(dataset)?.ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!(
                    "{}: created by another writer, then gone (a wipe?)",
                    naming::uri(&self.bucket, &key)
                ),
            )
        })
    }

    /// The locks of an incarnation, from its `control` object.
    fn control_of(&self, dataset: &DatasetKey, inc: &str) -> Result<Locks> {
        let key = naming::control_key(&self.slots(dataset, inc).prefix);
        let mut buf = Vec::new();
        if !self.client.get(&self.bucket, &key, &mut buf)? {
            return Ok(Locks::NONE);
        }
        let what = || naming::uri(&self.bucket, &key);
        let payload = FRAMING.unframe_kind(&buf, kind::CONTROL, "a CONTROL", &what)?;
        Ok(Locks::from_bits(records::decode_control(payload, &what)?))
    }

    /// Append a maintenance record to incarnation `inc`'s log.
    fn append(&self, dataset: &DatasetKey, inc: &str, kind: u16, payload: &[u8]) -> Result<()> {
        let log = self.slots(dataset, inc);
        let from = slots::first_free(&log, 0)?;
        slots::publish(&log, from, &FRAMING.framed(kind, payload), &mut || Ok(())).map(|_| ())
    }

    /// The dataset's current incarnation, which must exist.
    fn current(&self, dataset: &DatasetKey) -> Result<String> {
        Ok(self
            .meta(dataset)?
            .ok_or_else(|| not_found(dataset))?
            .incarnation)
    }
}

fn not_found(dataset: &DatasetKey) -> Error {
    Error::new(
        ErrorKind::NotFound,
        format!("no dataset {} in the S3 catalogue", dataset.braced()),
    )
}

impl Catalogue for S3Catalogue {
    fn writer(&self, dataset: &DatasetKey, schema: &Schema) -> Result<Box<dyn CatalogueWriter>> {
        let meta = self.meta_or_create(dataset, schema)?;
        // The end of the log first, then the locks: a lock set after this
        // look appends its CONTROL record at `next` or later, so this
        // writer's first publish finds its slot taken and reads the locks
        // again; one set before it is in the `control` object already.
        let next = slots::first_free(&self.slots(dataset, &meta.incarnation), 0)?;
        if self
            .control_of(dataset, &meta.incarnation)?
            .contains(Operation::Archive)
        {
            return Err(locked(dataset, Operation::Archive));
        }
        Ok(Box::new(S3CatalogueWriter {
            registered: false,
            cat: self.clone(),
            key: dataset.clone(),
            meta,
            next,
            id: fieldstore_core::writer_id::next(),
            pending: PendingEntries::new(),
        }))
    }

    fn datasets(&self) -> Result<Vec<DatasetKey>> {
        let mut out = Vec::new();
        for o in self.client.list(&self.bucket, REGISTRY)?.objects {
            let name = &o.key[REGISTRY.len()..];
            let key = name.parse().map_err(|e| {
                Error::corrupt(format!(
                    "{}: not a dataset key: {e}",
                    naming::uri(&self.bucket, &o.key)
                ))
            })?;
            out.push(DatasetKey(key));
        }
        out.sort();
        Ok(out)
    }

    fn reader(&self, dataset: &DatasetKey) -> Result<Option<Arc<dyn DatasetReader>>> {
        let Some(meta) = self.meta(dataset)? else {
            return Ok(None);
        };
        let medium = S3Log {
            cat: self.clone(),
            key: dataset.clone(),
        };
        Ok(Some(Arc::new(LogReader::open(medium, log_of(Some(meta)))?)))
    }

    fn describe(&self, dataset: &DatasetKey) -> String {
        naming::uri(&self.bucket, &dataset_prefix(dataset))
    }

    fn waiter(&self) -> Result<Box<dyn ChangeWaiter>> {
        // S3 has no notifications: poll, backing off to 50 ms.
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

impl CatalogueMaintenance for S3Catalogue {
    /// None: a wipe removes the registration last, so an interrupted wipe
    /// leaves its dataset listed (and empty) until a wipe finishes it.
    fn interrupted_wipes(&self) -> Result<Vec<DatasetKey>> {
        Ok(Vec::new())
    }

    fn list_locked(&self) -> Result<Option<Vec<DatasetKey>>> {
        let listing = self.client.list(&self.bucket, LIST_LOCKED)?;
        let names = listing.objects.iter().map(|o| &o.key[LIST_LOCKED.len()..]);
        Ok(Some(
            names
                .filter_map(|n| n.parse().ok().map(DatasetKey))
                .collect(),
        ))
    }

    fn locks(&self, dataset: &DatasetKey) -> Result<Locks> {
        match self.meta(dataset)? {
            Some(m) => self.control_of(dataset, &m.incarnation),
            None => Ok(Locks::NONE),
        }
    }

    fn control(&self, dataset: &DatasetKey, action: Control, operations: Locks) -> Result<Locks> {
        let inc = self.current(dataset)?;
        let locks = self.control_of(dataset, &inc)?.apply(action, operations);
        let payload = records::encode_control(locks.bits(), now_ns());
        // Writers read the object; readers follow the log.
        let key = naming::control_key(&self.slots(dataset, &inc).prefix);
        let value = FRAMING.framed(kind::CONTROL, &payload);
        self.client.put(&self.bucket, &key, &value, None)?;
        self.append(dataset, &inc, kind::CONTROL, &payload)?;
        let marker = format!("{LIST_LOCKED}{dataset}");
        if locks.contains(Operation::List) {
            self.client.put(&self.bucket, &marker, b"", None)?;
        } else {
            self.client.delete(&self.bucket, &marker)?;
        }
        Ok(locks)
    }

    fn inventory(&self, dataset: &DatasetKey) -> Result<Vec<Item>> {
        let prefix = dataset_prefix(dataset);
        let inc = self.meta(dataset)?.map(|m| m.incarnation);
        let mut items = Vec::new();
        for o in self.client.list(&self.bucket, &prefix)?.objects {
            let rest = &o.key[prefix.len()..];
            if rest.starts_with("data/") || rest.starts_with("lease/") {
                continue; // the store's
            }
            let current = inc.as_ref().and_then(|i| rest.strip_prefix(i.as_str()));
            let ours = rest == "meta"
                || current.is_some_and(|r| r == "/control" || r.starts_with("/log/"));
            let kind = match (ours, rest.starts_with('i')) {
                (true, _) => ItemKind::Catalogue,
                (false, true) => ItemKind::Leftover,
                (false, false) => ItemKind::Unknown,
            };
            items.push(Item::new(
                kind,
                naming::uri(&self.bucket, &o.key),
                Some(o.size),
            ));
        }
        let registry = format!("{REGISTRY}{dataset}");
        if self.client.head(&self.bucket, &registry)?.is_some() {
            let uri = naming::uri(&self.bucket, &registry);
            items.push(Item::new(ItemKind::Catalogue, uri, None));
        }
        Ok(items)
    }

    fn wipe(
        &self,
        dataset: &DatasetKey,
        unsafe_wipe_all: bool,
        store_step: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        let prefix = dataset_prefix(dataset);
        // 1. No new reader or writer finds this incarnation; writers still
        //    at work fail their next flush (they check `meta` after it).
        let old = self.meta(dataset)?;
        self.client
            .delete(&self.bucket, &naming::meta_key(&prefix))?;
        // 2. Readers following the log stop at WIPED, and see nothing.
        if let Some(m) = &old {
            self.append(dataset, &m.incarnation, kind::WIPED, &[])?;
        }
        // 3. The store's part, then the catalogue's: the old incarnation's
        //    objects (with `unsafe_wipe_all`, also what fieldstore did not
        //    write), unless a writer made a new one meanwhile.
        store_step()?;
        let now = self.meta(dataset)?.map(|m| m.incarnation);
        let doomed: Vec<String> = (self.client.list(&self.bucket, &prefix)?.objects)
            .into_iter()
            .map(|o| o.key)
            .filter(|k| {
                let rest = &k[prefix.len()..];
                let theirs = now.as_ref().is_some_and(|i| rest.starts_with(i.as_str()))
                    || rest == "meta"
                    || rest.starts_with("data/")
                    || rest.starts_with("lease/");
                !theirs && (unsafe_wipe_all || rest.starts_with('i'))
            })
            .collect();
        self.client.delete_many(&self.bucket, &doomed)?;
        // 4. The registration, kept if the dataset exists anew.
        let registry = format!("{REGISTRY}{dataset}");
        let marker = format!("{LIST_LOCKED}{dataset}");
        self.client.delete(&self.bucket, &marker)?;
        if now.is_none() {
            self.client.delete(&self.bucket, &registry)?;
            if self.meta(dataset)?.is_some() {
                self.client.put(&self.bucket, &registry, b"", None)?;
            }
        }
        Ok(())
    }

    fn wipe_collocations(
        &self,
        dataset: &DatasetKey,
        collocations: &[CollocationKey],
        units: &[String],
    ) -> Result<()> {
        let payload = records::encode_wipe(collocations, units, now_ns());
        self.append(dataset, &self.current(dataset)?, kind::WIPE, &payload)
    }

    fn reclaim(
        &self,
        dataset: &DatasetKey,
        units: &[String],
        _hidden: &[CollocationKey],
        dry_run: bool,
    ) -> Result<Vec<Item>> {
        // Log objects are never deleted (readers rely on the log having no
        // gaps): only the data objects are reclaimed, by the store.
        if !dry_run && !units.is_empty() {
            let payload = records::encode_reclaim(units, None, now_ns());
            self.append(dataset, &self.current(dataset)?, kind::RECLAIM, &payload)?;
        }
        Ok(Vec::new())
    }
}

/// One writer's session with one dataset.
struct S3CatalogueWriter {
    /// Whether this writer put the dataset in the registry.
    registered: bool,
    cat: S3Catalogue,
    key: DatasetKey,
    meta: Meta,
    /// The first slot not known to be taken.
    next: u64,
    id: String,
    pending: PendingEntries,
}

impl CatalogueWriter for S3CatalogueWriter {
    fn schema_text(&self) -> Option<Arc<str>> {
        Some(self.meta.schema.clone())
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
        let flush = Flush {
            timestamp_ns: now_ns(),
            writer: self.id.clone(),
            blocks: inline::blocks(std::mem::take(&mut self.pending)),
        };
        let value = FRAMING.framed(kind::FLUSH, &inline::encode_flush(&flush));
        let (cat, key, inc) = (&self.cat, &self.key, &self.meta.incarnation);
        if !self.registered {
            let registry = format!("{REGISTRY}{key}");
            cat.client.put(&cat.bucket, &registry, b"", None)?;
            self.registered = true;
        }
        let slot = slots::publish(&cat.slots(key, inc), self.next, &value, &mut || {
            if cat.control_of(key, inc)?.contains(Operation::Archive) {
                return Err(locked(key, Operation::Archive));
            }
            Ok(())
        })?;
        self.next = slot + 1;
        // The fence against a wipe (see the module's doc).
        if cat.meta(key)?.is_none_or(|m| m.incarnation != *inc) {
            return Err(wiped_while_writing(key));
        }
        Ok(())
    }

    /// Unknown: the conditional PUT that publishes a flush may have taken
    /// effect when it reports an error.
    fn last_flush_invisible(&self) -> bool {
        false
    }
}

/// What a reader knows of its dataset. Blocks come with their entries
/// (inline in FLUSH records), so they have no place.
type ReaderLog = Log<(), S3Cursor>;

/// Where a reader stopped: the incarnation it follows (`None`: the
/// dataset is gone), and where in its log.
#[derive(Debug)]
struct S3Cursor {
    incarnation: Option<String>,
    slots: SlotCursor,
}

/// A log at its start in `meta`'s incarnation.
fn log_of(meta: Option<Meta>) -> ReaderLog {
    let schema = meta
        .as_ref()
        .map_or_else(|| Arc::from(""), |m| m.schema.clone());
    let cursor = S3Cursor {
        incarnation: meta.map(|m| m.incarnation),
        slots: SlotCursor::default(),
    };
    Log::new(schema, cursor)
}

/// One dataset's log on S3, as the engine's reader follows it.
#[derive(Debug)]
struct S3Log {
    cat: S3Catalogue,
    key: DatasetKey,
}

impl S3Log {
    fn decode(&self, value: &[u8], what: &dyn Fn() -> String) -> Result<SlotRecord> {
        if matches!(FRAMING.unframe(value, what)?, Framed::Incomplete) {
            return Ok(SlotRecord::Incomplete);
        }
        let (k, payload) = FRAMING.unframe_exact(value, what)?;
        Ok(match k {
            kind::FLUSH => SlotRecord::Flush(inline::decode_flush(payload, what)?),
            kind::WIPED => SlotRecord::Wiped,
            _ => match MaintenanceRecord::decode(k, payload, what)? {
                Some(r) => SlotRecord::Maintenance(r),
                None => SlotRecord::Unknown,
            },
        })
    }
}

impl LogMedium for S3Log {
    type Place = ();
    type Cursor = S3Cursor;

    /// A WIPED record ends an incarnation: the reader then follows the one
    /// `meta` names now, from its start. A reader that looked at nothing
    /// between the WIPED record and the deletion of the old log finds the
    /// last slot it read gone. An idle reader asks both questions (is its
    /// last slot still there, is there a slot after it) in one listing of
    /// two keys: an idle refresh costs one request.
    fn follow(&self, log: &mut ReaderLog) -> Result<()> {
        for _ in 0..2 {
            if log.cursor.incarnation.is_none() {
                *log = log_of(self.cat.meta(&self.key)?);
            }
            let Some(inc) = log.cursor.incarnation.clone() else {
                return Ok(());
            };
            let slots = self.cat.slots(&self.key, &inc);
            let before = log.cursor.slots.next;
            if before > 0 && log.cursor.slots.looked_past_end {
                let seen = slots.after(before.checked_sub(2), 2)?;
                if seen.first() != Some(&(before - 1)) {
                    *log = log_of(None);
                    continue;
                }
                if seen.len() == 1 {
                    return Ok(());
                }
            }
            let end = slots::follow(
                &slots,
                &mut log.index,
                &mut log.torn,
                &mut log.cursor.slots,
                &mut |n, v| self.decode(v, &|| slots.name(n)),
            )?;
            let gone = match (end, before) {
                (FollowEnd::Wiped(_), _) => true,
                (FollowEnd::End, _) if log.cursor.slots.next != before => false,
                (FollowEnd::End, 0) => self
                    .cat
                    .meta(&self.key)?
                    .is_none_or(|m| m.incarnation != inc),
                (FollowEnd::End, n) => !slots.exists(n - 1)?,
            };
            if !gone {
                return Ok(());
            }
            *log = log_of(None);
        }
        Ok(())
    }
}
