//! The S3 catalogue (`engine: s3`): a dataset's log is a row of S3
//! objects, one whole record each. [`S3Medium`] is what S3 gives the
//! engine (a `SlotMedium`); the engine's [`LogCatalogue`] does the rest.
//! Layout and costs in `docs/format/s3.md`.
//!
//! **The commit.** A writer publishes a flush with one conditional PUT
//! (`If-None-Match: *`) of the first free log object,
//! `<dataset>/<inc>/log/<slot>`: the server creates it only if it does not
//! exist, so of racing writers exactly one gets a slot.
//!
//! **Incarnations.** `<dataset>/meta` names the dataset's key, schema and
//! incarnation `<inc>` (created with a conditional PUT, so racing creators
//! agree). A wipe deletes `meta` first, then appends a WIPED record to the
//! old log (readers following it stop there and open the dataset anew),
//! then deletes the store's part and the old incarnation's objects. A
//! writer checks after each publish that `meta` still names its
//! incarnation ([`SlotMedium::fence`]): if not, its flush may have landed
//! after the WIPED record, and it fails instead of acknowledging what
//! nobody will read.
//!
//! **Locks** are `<dataset>/<inc>/control` (for writers) and a CONTROL
//! record in the log (for readers); list locks also put a marker under
//! `%list-locked/`, which listings of datasets read.

use std::sync::Arc;

use fieldstore_core::engine::log_catalogue::{self, LogCatalogue, MediumMaintenance};
use fieldstore_core::engine::slot_catalogue::{
    follow_slots, locks_in, Looked, SlotMedium, SlotReaderLog,
};
use fieldstore_core::engine::slots::{FollowEnd, SlotLog, SlotRecord};
use fieldstore_core::engine::{check_held, stored_key, NotDatasets};
use fieldstore_core::maintenance::{wiped_while_writing, Item, ItemKind};
use fieldstore_core::record::maintenance::now_ns;
use fieldstore_core::record::{kind, Dec, Enc, Framed, Framing};
use fieldstore_core::{DatasetKey, Error, ErrorKind, Locks, Result, Schema};

use crate::client::Client;
use crate::config::S3Config;
use crate::naming::{self, dataset_prefix, Part, LIST_LOCKED, REGISTRY};

/// The S3 catalogue.
pub type S3Catalogue = LogCatalogue<S3Medium>;

/// What S3 gives the engine's slot catalogue: a bucket on an endpoint.
#[derive(Debug)]
pub struct S3Medium {
    client: Arc<Client>,
    bucket: String,
    /// Top-level prefixes found without a dataset's `meta`.
    not_datasets: NotDatasets,
}

/// A dataset's `meta`: what it is, and which incarnation is current.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    key: DatasetKey,
    schema: Arc<str>,
    incarnation: String,
}

/// How often a writer removes the tail hints of smaller slots: at every
/// slot this divides ([`SlotLog::set_hint`]).
const PRUNE_HINTS: u64 = 16;

/// One incarnation's log slots.
struct Slots<'a> {
    s3: &'a S3Medium,
    /// `<dataset>/<inc>/`.
    prefix: String,
}

impl Slots<'_> {
    /// The first `max` slots after slot `n` (`None`: from the start) that
    /// hold a value, in order: one listing.
    fn after(&self, n: Option<u64>, max: usize) -> Result<Vec<u64>> {
        let log = naming::log_prefix(&self.prefix);
        let after = n.map_or_else(|| log.clone(), |n| naming::slot_key(&self.prefix, n));
        let s3 = self.s3;
        let keys = s3.client.keys_after(&s3.bucket, &log, &after, max)?;
        Ok(keys
            .iter()
            .filter_map(|k| k[log.len()..].parse().ok())
            .collect())
    }
}

impl SlotLog for Slots<'_> {
    fn get(&self, n: u64, buf: &mut Vec<u8>) -> Result<bool> {
        let key = naming::slot_key(&self.prefix, n);
        self.s3.client.get(&self.s3.bucket, &key, buf)
    }

    fn exists(&self, n: u64) -> Result<bool> {
        let key = naming::slot_key(&self.prefix, n);
        Ok(self.s3.client.head(&self.s3.bucket, &key)?.is_some())
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
            end = page.last().map_or(end, |&last| last + 1);
            if page.len() < 1000 {
                return Ok(Some(end));
            }
        }
    }

    /// One listing per 1,000 slots: a cold reader fetches them in parallel.
    fn listed(&self) -> Result<Option<Vec<u64>>> {
        let log = naming::log_prefix(&self.prefix);
        let listing = self.s3.client.list(&self.s3.bucket, &log)?;
        let slots = listing
            .objects
            .iter()
            .filter_map(|o| o.key[log.len()..].parse().ok());
        Ok(Some(slots.collect()))
    }

    fn insert(&self, n: u64, value: &[u8]) -> Result<bool> {
        let key = naming::slot_key(&self.prefix, n);
        self.s3.client.put_new(&self.s3.bucket, &key, value)
    }

    /// Cold: the greatest slot a tail hint names (a listing of one key),
    /// which tells a lost tail reaching it; for a log written before the
    /// hints were objects of their own, its single `tail` (one GET more).
    fn hint_past(&self, n: u64, cold: bool) -> Result<Option<u64>> {
        if !cold {
            return Ok(None);
        }
        let (s3, prefix) = (self.s3, naming::hint_prefix(&self.prefix));
        let first = s3.client.keys_after(&s3.bucket, &prefix, &prefix, 1)?;
        let hint = match first.first() {
            Some(key) => naming::hint_slot(&self.prefix, key),
            None => {
                let mut buf = Vec::new();
                let old = naming::old_tail_key(&self.prefix);
                s3.client.get(&s3.bucket, &old, &mut buf)?;
                std::str::from_utf8(&buf).ok().and_then(|t| t.parse().ok())
            }
        };
        Ok(hint.filter(|&h| h >= n))
    }

    /// One PUT of an empty object named by the slot: hints only add, so
    /// racing writers storing theirs out of order cannot lower the
    /// greatest. Every [`PRUNE_HINTS`]th slot its writer removes the hints
    /// of smaller slots (a listing and a DeleteObjects), so an incarnation
    /// keeps some [`PRUNE_HINTS`] hint objects, not one per flush. Only
    /// the greatest is read; the smaller ones would matter only if the
    /// greatest were removed together with the tail it names, and such a
    /// removal of every hint past the tail is not seen either way.
    fn set_hint(&self, n: u64) -> Result<()> {
        let (client, bucket) = (&self.s3.client, &self.s3.bucket);
        let key = naming::hint_key(&self.prefix, n);
        client.put(bucket, &key, b"", None)?;
        if n % PRUNE_HINTS == 0 && n > 0 {
            // Housekeeping after the flush is published: a failure leaves
            // hints to the next pruning (or the wipe), and fails nothing.
            let prefix = naming::hint_prefix(&self.prefix);
            if let Ok(smaller) = client.keys_after(bucket, &prefix, &key, 1000) {
                let _ = client.delete_many(bucket, &smaller);
            }
        }
        Ok(())
    }

    fn name(&self, n: u64) -> String {
        naming::uri(&self.s3.bucket, &naming::slot_key(&self.prefix, n))
    }
}

impl S3Medium {
    /// Connect to the configured endpoint and check the bucket (creating
    /// it when missing and `create_bucket` allows).
    ///
    /// # Errors
    /// As [`crate::S3Store::open`].
    pub fn open(cfg: &S3Config) -> Result<S3Medium> {
        let s3 = S3Medium {
            client: Client::connect(cfg)?,
            bucket: cfg.bucket.clone(),
            not_datasets: NotDatasets::new(),
        };
        s3.check_conditional_put()?;
        Ok(s3)
    }

    /// Open the medium an `s3:` configuration section describes.
    ///
    /// # Errors
    /// As [`S3Config::from_value`] and [`S3Medium::open`].
    pub fn from_config(section: &serde_json::Value) -> Result<S3Medium> {
        S3Medium::open(&S3Config::from_value(section)?)
    }

    /// Refuse a server that ignores `If-None-Match: *`: there two writers
    /// would replace each other's flushes in one slot, losing one in
    /// silence.
    fn check_conditional_put(&self) -> Result<()> {
        if self.client.honours_put_new(&self.bucket)? {
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

    fn slots_of(&self, meta: &Meta) -> Slots<'_> {
        let prefix = naming::incarnation_prefix(&dataset_prefix(&meta.key), &meta.incarnation);
        Slots { s3: self, prefix }
    }

    fn control_key(&self, meta: &Meta) -> String {
        naming::control_key(&self.slots_of(meta).prefix)
    }

    /// The `meta` object `key`, if it exists: one GET.
    fn read_meta(&self, key: &str) -> Result<Option<Meta>> {
        let mut buf = Vec::new();
        if !self.client.get(&self.bucket, key, &mut buf)? {
            return Ok(None);
        }
        let what = || naming::uri(&self.bucket, key);
        let mut d = Dec::new(
            Self::FRAMING.unframe_kind(&buf, kind::INIT, "a META", &what)?,
            &what,
        );
        let meta = Meta {
            key: DatasetKey(d.key()?),
            schema: Arc::from(d.str()?),
            incarnation: d.str()?.to_string(),
        };
        d.u64()?;
        d.end()?;
        Ok(Some(meta))
    }
}

impl SlotMedium for S3Medium {
    type Dataset = Meta;

    /// Magic `FSS3`, format version 1.
    const FRAMING: Framing = Framing::new(*b"FSS3");

    /// One GET of `meta`.
    fn open(&self, dataset: &DatasetKey) -> Result<Option<Meta>> {
        let key = naming::meta_key(&dataset_prefix(dataset));
        let meta = self.read_meta(&key)?;
        if let Some(m) = &meta {
            check_held(&|| naming::uri(&self.bucket, &key), &m.key, dataset)?;
        }
        Ok(meta)
    }

    /// Racing creators agree: the first conditional PUT of `meta` wins,
    /// the others read it.
    fn create(&self, dataset: &DatasetKey, schema: &Schema) -> Result<Meta> {
        if let Some(m) = self.open(dataset)? {
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
        let value = Self::FRAMING.framed(kind::INIT, &e.0);
        if self.client.put_new(&self.bucket, &key, &value)? {
            return Ok(meta);
        }
        self.open(dataset)?.ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!(
                    "{}: created by another writer, then gone (a wipe?)",
                    naming::uri(&self.bucket, &key)
                ),
            )
        })
    }

    fn schema(&self, meta: &Meta) -> Arc<str> {
        meta.schema.clone()
    }

    fn register(&self, dataset: &DatasetKey, _: &Meta) -> Result<()> {
        let registry = format!("{REGISTRY}{dataset}");
        self.client.put(&self.bucket, &registry, b"", None)
    }

    fn registered(&self) -> Result<Vec<DatasetKey>> {
        let listing = self.client.list(&self.bucket, REGISTRY)?;
        let keys = listing.objects.iter().map(|o| {
            stored_key(&o.key[REGISTRY.len()..], &|| {
                naming::uri(&self.bucket, &o.key)
            })
        });
        keys.collect()
    }

    fn describe(&self, dataset: &DatasetKey) -> String {
        naming::uri(&self.bucket, &dataset_prefix(dataset))
    }

    /// One delimited listing of the bucket's top-level prefixes (per 1,000
    /// datasets), and one GET of `meta` for each prefix no registration
    /// names: a dataset being created before its first flush, one being
    /// wiped, one whose registry object was lost, or what is not
    /// fieldstore's (not looked at again for a minute).
    fn unregistered(&self, registered: &[DatasetKey]) -> Result<Vec<(DatasetKey, Meta)>> {
        let prefixes = self.client.prefixes(&self.bucket, "/")?;
        let ours = prefixes.into_iter().filter(|p| !p.starts_with('%'));
        self.not_datasets
            .sift(ours, registered, dataset_prefix, |prefix| {
                let meta = self.read_meta(&naming::meta_key(prefix))?;
                Ok(meta.map(|m| (m.key.clone(), m)))
            })
    }

    fn slots<'a>(&'a self, meta: &'a Meta) -> Result<Box<dyn SlotLog + 'a>> {
        Ok(Box::new(self.slots_of(meta)))
    }

    /// A GET may show an object whose body is still arriving: the start
    /// of a record is [`SlotRecord::Incomplete`].
    fn decode(&self, meta: &Meta, slot: u64, value: &[u8]) -> Result<SlotRecord> {
        let what = || self.slots_of(meta).name(slot);
        if matches!(Self::FRAMING.unframe(value, &what)?, Framed::Incomplete) {
            return Ok(SlotRecord::Incomplete);
        }
        let (k, payload) = Self::FRAMING.unframe_exact(value, &what)?;
        SlotRecord::decode(k, payload, &what)
    }

    /// A WIPED record ends an incarnation. A reader that looked at nothing
    /// between the WIPED record and the deletion of the old log finds the
    /// last slot it read gone. An idle reader asks both questions (is its
    /// last slot still there, is there a slot after it) in one listing of
    /// two keys: an idle refresh costs one request (and once a second the
    /// looks of a first refresh: the next slot, two one-key listings).
    fn follow(&self, meta: &Meta, log: &mut SlotReaderLog<Meta>) -> Result<Looked> {
        let slots = self.slots_of(meta);
        let before = log.cursor.slots.next;
        if before > 0 && log.cursor.slots.looked_past_end {
            let seen = slots.after(before.checked_sub(2), 2)?;
            if seen.first() != Some(&(before - 1)) {
                return Ok(Looked::Ended);
            }
            // Nothing past its last slot: the end, unless a look past it
            // is due (a lost tail past it is damage).
            if seen.len() == 1 && !log.cursor.slots.looked_at.due() {
                return Ok(Looked::Current);
            }
        }
        let ended = match (follow_slots(self, meta, log, &slots)?, before) {
            (FollowEnd::Wiped(_), _) => true,
            (FollowEnd::End, _) if log.cursor.slots.next != before => false,
            (FollowEnd::End, 0) => self.open(&meta.key)?.as_ref() != Some(meta),
            (FollowEnd::End, n) => !slots.exists(n - 1)?,
        };
        Ok(if ended {
            Looked::Ended
        } else {
            Looked::Current
        })
    }

    /// `meta` must still name this incarnation.
    fn fence(&self, dataset: &DatasetKey, meta: &Meta) -> Result<()> {
        if self.open(dataset)?.as_ref() != Some(meta) {
            return Err(wiped_while_writing(dataset));
        }
        Ok(())
    }

    fn locks(&self, meta: &Meta) -> Result<Locks> {
        let (key, mut buf) = (self.control_key(meta), Vec::new());
        let found = self.client.get(&self.bucket, &key, &mut buf)?;
        let what = || naming::uri(&self.bucket, &key);
        locks_in(&Self::FRAMING, found.then_some(&buf[..]), &what)
    }

    fn set_locks(&self, meta: &Meta, control: &[u8]) -> Result<()> {
        self.client
            .put(&self.bucket, &self.control_key(meta), control, None)
    }
}

impl MediumMaintenance for S3Medium {
    fn list_locked(&self) -> Result<Option<Vec<DatasetKey>>> {
        let listing = self.client.list(&self.bucket, LIST_LOCKED)?;
        let names = listing.objects.iter().map(|o| &o.key[LIST_LOCKED.len()..]);
        Ok(Some(
            names
                .filter_map(|n| n.parse().ok().map(DatasetKey))
                .collect(),
        ))
    }

    /// An empty object: listings read its name only.
    fn mark_list_locked(&self, dataset: &DatasetKey, control: Option<&[u8]>) -> Result<()> {
        let marker = format!("{LIST_LOCKED}{dataset}");
        if control.is_some() {
            self.client.put(&self.bucket, &marker, b"", None)
        } else {
            self.client.delete(&self.bucket, &marker)
        }
    }

    fn inventory(&self, dataset: &DatasetKey) -> Result<Vec<Item>> {
        let prefix = dataset_prefix(dataset);
        let inc = self.open(dataset)?.map(|m| m.incarnation);
        let mut items = Vec::new();
        for o in self.client.list(&self.bucket, &prefix)?.objects {
            let kind = match Part::of(&o.key[prefix.len()..], inc.as_deref()) {
                Part::Store => continue,
                Part::Catalogue => ItemKind::Catalogue,
                Part::Stray | Part::Old => ItemKind::Leftover,
                Part::Foreign => ItemKind::Unknown,
            };
            let uri = naming::uri(&self.bucket, &o.key);
            items.push(Item::new(kind, uri, Some(o.size)));
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
        let old = self.open(dataset)?;
        self.client
            .delete(&self.bucket, &naming::meta_key(&prefix))?;
        // 2. Readers following the log stop at WIPED, and see nothing.
        if let Some(m) = &old {
            log_catalogue::CatalogueMedium::append(self, m, kind::WIPED, &[])?;
        }
        // 3. The store's part, then the catalogue's: the old incarnation's
        //    objects (with `unsafe_wipe_all`, also what fieldstore did not
        //    write), unless a writer made a new one meanwhile.
        store_step()?;
        let now = self.open(dataset)?.map(|m| m.incarnation);
        let doomed: Vec<String> = (self.client.list(&self.bucket, &prefix)?.objects)
            .into_iter()
            .map(|o| o.key)
            .filter(|k| match Part::of(&k[prefix.len()..], now.as_deref()) {
                Part::Old => true,
                Part::Foreign => unsafe_wipe_all,
                Part::Store | Part::Catalogue | Part::Stray => false,
            })
            .collect();
        self.client.delete_many(&self.bucket, &doomed)?;
        // 4. The registration, kept if the dataset exists anew.
        let registry = format!("{REGISTRY}{dataset}");
        self.mark_list_locked(dataset, None)?;
        if now.is_none() {
            self.client.delete(&self.bucket, &registry)?;
            if self.open(dataset)?.is_some() {
                self.client.put(&self.bucket, &registry, b"", None)?;
            }
        }
        Ok(())
    }
}
