//! The whole catalogue of a medium whose log is a row of slots (DAOS's
//! dataset KV, S3's log objects): [`SlotCatalogue`] is the [`Catalogue`],
//! its writers, its readers and its lock protocol, written once; a medium
//! gives only what differs, as a [`SlotMedium`].
//!
//! **The commit** is the medium's conditional insert of a whole record
//! into the first free slot ([`SlotLog::insert`], [`slots::publish`]): of
//! racing writers exactly one gets a slot, so slots fill without gaps, in
//! the order flushes became visible, and no writer waits for another.
//!
//! **Incarnations.** A dataset exists as one incarnation at a time (S3:
//! the one its `meta` names; DAOS: its container). A wipe ends it; readers
//! then follow the next one from its start, and a writer of the old one
//! fails rather than acknowledge a flush nobody will read
//! ([`SlotMedium::fence`]).
//!
//! **Locks** ([`SlotCatalogue`]'s `control`), in one order on every
//! medium: the state writers read ([`SlotMedium::set_locks`]), then a
//! CONTROL record in the log for readers, then the mark listings of
//! datasets read ([`SlotMedium::mark_list_locked`]). A writer reads the
//! state when it starts, unless it starts at slot 0, and whenever a slot it
//! tried was taken: a lock set later appends its record at or after the
//! writer's next slot, so the writer's next insert meets it.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use super::slots::{self, SlotCursor, SlotLog, SlotRecord};
use super::{Log, LogMedium, LogReader};
use crate::catalogue::{
    Catalogue, CatalogueMaintenance, CatalogueQueries, CatalogueWriter, ChangeWaiter,
    DamagedDatasets, DatasetMover, DatasetReader, PollingWaiter,
};
use crate::error::{Error, ErrorKind, Result};
use crate::key::{CollocationKey, DatasetKey, ElementKey};
use crate::location::FieldLocation;
use crate::maintenance::{locked, Control, Item, Locks, Operation};
use crate::record::inline::{self, Flush};
use crate::record::maintenance::{self as records, now_ns};
use crate::record::pending::PendingEntries;
use crate::record::{kind, Framing};
use crate::schema::Schema;

/// What a reader knows of one dataset on a slot medium: its blocks are
/// inline in their FLUSH records, so they have no place.
pub type SlotReaderLog<D> = Log<(), Incarnation<D>>;

/// Where a reader stopped: the incarnation it follows (`None`: the
/// dataset is gone) and where in its log.
#[derive(Debug)]
pub struct Incarnation<D> {
    /// The incarnation followed.
    pub dataset: Option<D>,
    /// Where in its slots.
    pub slots: SlotCursor,
}

/// What a reader's look at an incarnation's log found.
#[derive(Debug, PartialEq, Eq)]
pub enum Looked {
    /// The incarnation is still the dataset's.
    Current,
    /// It ended (a wipe): the reader follows the dataset's next one.
    Ended,
}

/// What a slot medium supplies.
///
/// # Contract
/// - [`SlotMedium::slots`]' [`SlotLog::insert`] is the commit: conditional,
///   atomic, and a slot's value never changes.
/// - [`SlotMedium::create`] is safe to race: racing creators of a dataset
///   end up with one incarnation.
/// - [`SlotMedium::wipe`] ends the incarnation before the store's step (so
///   readers see the whole dataset or nothing) and removes the
///   registration last, keeping it if a writer created the dataset anew
///   meanwhile.
pub trait SlotMedium: Send + Sync + Debug + 'static {
    /// One incarnation of a dataset, as opened (S3: its `meta`; DAOS: its
    /// container).
    type Dataset: Clone + Debug + Send + Sync + 'static;

    /// The framing of log records.
    const FRAMING: Framing;

    /// The size of a reader's buffer for slot values: a medium that reads
    /// a value into a buffer too small for it in two requests (DAOS) gives
    /// its largest inline value.
    const SLOT_BUFFER: usize = 0;

    /// The dataset's current incarnation, if it exists (checked to be this
    /// dataset's: names may collide).
    ///
    /// # Errors
    /// The medium's I/O errors; `InvalidInput` for a collision.
    fn open(&self, key: &DatasetKey) -> Result<Option<Self::Dataset>>;

    /// The dataset's current incarnation, created under `schema` if there
    /// is none.
    ///
    /// # Errors
    /// As [`SlotMedium::open`].
    fn create(&self, key: &DatasetKey, schema: &Schema) -> Result<Self::Dataset>;

    /// The text of the schema `dataset` was created under.
    fn schema(&self, dataset: &Self::Dataset) -> Arc<str>;

    /// List the dataset where listings of datasets look (done before its
    /// first flush is published, so that no acknowledged field is
    /// unlisted).
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn register(&self, key: &DatasetKey, dataset: &Self::Dataset) -> Result<()>;

    /// Every registered dataset.
    ///
    /// # Errors
    /// The medium's I/O errors; `Corrupt` for a registration that is not a
    /// dataset key.
    fn registered(&self) -> Result<Vec<DatasetKey>>;

    /// Where the dataset lives, for messages.
    fn describe(&self, key: &DatasetKey) -> String;

    /// `dataset`'s log.
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn slots<'a>(&'a self, dataset: &'a Self::Dataset) -> Result<Box<dyn SlotLog + 'a>>;

    /// Decode the value of slot `slot`.
    ///
    /// # Errors
    /// `Corrupt` for a value that does not decode (it costs only its
    /// slot); the medium's I/O errors for what it had to read.
    fn decode(&self, dataset: &Self::Dataset, slot: u64, value: &[u8]) -> Result<SlotRecord>;

    /// Read `dataset`'s records past `log.cursor`, with [`slots::follow`]
    /// (see [`follow_slots`]), and tell whether the incarnation is still
    /// the dataset's.
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn follow(
        &self,
        dataset: &Self::Dataset,
        log: &mut SlotReaderLog<Self::Dataset>,
    ) -> Result<Looked>;

    /// The value a framed FLUSH record is published as (DAOS puts one too
    /// large for a slot elsewhere and publishes a pointer to it).
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn flush_value(&self, dataset: &Self::Dataset, framed: Vec<u8>) -> Result<Vec<u8>> {
        let _ = dataset;
        Ok(framed)
    }

    /// A slot every slot before which this process knows to be taken (it
    /// published or read them), without asking the medium; the default
    /// knows nothing (0). A process's writers of one dataset start their
    /// publish there, so they do not race each other for slots.
    fn known_end(&self, dataset: &Self::Dataset) -> u64 {
        let _ = dataset;
        0
    }

    /// A slot every slot before which is taken: where a writer or an
    /// append starts. The default looks from [`SlotMedium::known_end`]
    /// ([`slots::first_free`]).
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn start(&self, dataset: &Self::Dataset, log: &dyn SlotLog) -> Result<u64> {
        slots::first_free(log, self.known_end(dataset))
    }

    /// This process published slot `slot` of `dataset`'s log (a medium may
    /// remember it for [`SlotMedium::known_end`]).
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn published(&self, dataset: &Self::Dataset, log: &dyn SlotLog, slot: u64) -> Result<()> {
        let _ = (dataset, log, slot);
        Ok(())
    }

    /// Checked after each publish: fail if `dataset` is no longer the
    /// dataset's incarnation (a wipe ended it, and the flush may have
    /// landed after its end). The default: a medium whose wipe makes
    /// inserts fail needs no check.
    ///
    /// # Errors
    /// `NotFound` ([`crate::maintenance::wiped_while_writing`]) then; the
    /// medium's I/O errors.
    fn fence(&self, key: &DatasetKey, dataset: &Self::Dataset) -> Result<()> {
        let _ = (key, dataset);
        Ok(())
    }

    /// What a writer's failed flush reports: the medium names a wipe it
    /// recognises, adds where. The default reports `error` as it is.
    fn flush_failed(&self, key: &DatasetKey, dataset: &Self::Dataset, error: Error) -> Error {
        let _ = (key, dataset);
        error
    }

    /// The locks writers read (`NONE` when never set).
    ///
    /// # Errors
    /// The medium's I/O errors; `Corrupt` for a state that does not decode.
    fn locks(&self, dataset: &Self::Dataset) -> Result<Locks>;

    /// Set the state writers read to `control`, a framed CONTROL record.
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn set_locks(&self, dataset: &Self::Dataset, control: &[u8]) -> Result<()>;

    /// The datasets marked list-locked.
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn list_locked(&self) -> Result<Vec<DatasetKey>>;

    /// Mark the dataset list-locked where listings of datasets look, with
    /// `control` (the framed CONTROL record that locked it), or unmark it
    /// (`None`).
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn mark_list_locked(&self, key: &DatasetKey, control: Option<&[u8]>) -> Result<()>;

    /// What the dataset's catalogue part is made of
    /// ([`CatalogueMaintenance::inventory`]).
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn inventory(&self, key: &DatasetKey) -> Result<Vec<Item>>;

    /// Wipe the dataset ([`CatalogueMaintenance::wipe`]; see the trait's
    /// contract for the order).
    ///
    /// # Errors
    /// The medium's I/O errors; `store_step`'s.
    fn wipe(
        &self,
        key: &DatasetKey,
        unsafe_wipe_all: bool,
        store_step: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()>;
}

/// [`slots::follow`] over `dataset`'s log into `log`, decoding with the
/// medium: what most [`SlotMedium::follow`]s do.
///
/// # Errors
/// As [`slots::follow`].
pub fn follow_slots<M: SlotMedium + ?Sized>(
    medium: &M,
    dataset: &M::Dataset,
    log: &mut SlotReaderLog<M::Dataset>,
    slots: &dyn SlotLog,
) -> Result<slots::FollowEnd> {
    slots::follow(
        slots,
        &mut log.index,
        &mut log.torn,
        &mut log.cursor.slots,
        &mut |n, v| medium.decode(dataset, n, v),
    )
}

/// The catalogue of a slot medium.
#[derive(Debug)]
pub struct SlotCatalogue<M: SlotMedium> {
    medium: Arc<M>,
}

impl<M: SlotMedium> SlotCatalogue<M> {
    /// The catalogue on `medium`.
    pub fn new(medium: M) -> SlotCatalogue<M> {
        SlotCatalogue {
            medium: Arc::new(medium),
        }
    }

    /// The medium.
    pub fn medium(&self) -> &M {
        &self.medium
    }

    fn current(&self, key: &DatasetKey) -> Result<M::Dataset> {
        self.medium.open(key)?.ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!(
                    "no dataset {} in {}",
                    key.braced(),
                    self.medium.describe(key)
                ),
            )
        })
    }

    /// Append a maintenance record to `dataset`'s log.
    fn append(&self, dataset: &M::Dataset, kind: u16, payload: &[u8]) -> Result<()> {
        let log = self.medium.slots(dataset)?;
        let from = self.medium.start(dataset, &*log)?;
        let value = M::FRAMING.framed(kind, payload);
        let slot = slots::publish(&*log, from, &value, &mut || Ok(()))?;
        self.medium.published(dataset, &*log, slot)
    }
}

impl<M: SlotMedium> Catalogue for SlotCatalogue<M> {
    fn writer(&self, dataset: &DatasetKey, schema: &Schema) -> Result<Box<dyn CatalogueWriter>> {
        let incarnation = self.medium.create(dataset, schema)?;
        // The end of the log first, then the locks: a lock set after this
        // look appends its CONTROL record at `next` or later, which the
        // writer's first publish meets. At slot 0 there is nothing before.
        let next = self
            .medium
            .start(&incarnation, &*self.medium.slots(&incarnation)?)?;
        if next > 0
            && self
                .medium
                .locks(&incarnation)?
                .contains(Operation::Archive)
        {
            return Err(locked(dataset, Operation::Archive));
        }
        Ok(Box::new(SlotWriter {
            medium: self.medium.clone(),
            key: dataset.clone(),
            incarnation,
            next,
            registered: false,
            id: crate::writer_id::next(),
            pending: PendingEntries::new(),
        }))
    }

    fn datasets(&self) -> Result<Vec<DatasetKey>> {
        let mut out = self.medium.registered()?;
        out.sort();
        Ok(out)
    }

    fn reader(&self, dataset: &DatasetKey) -> Result<Option<Arc<dyn DatasetReader>>> {
        let Some(incarnation) = self.medium.open(dataset)? else {
            return Ok(None);
        };
        let reader = SlotReader {
            medium: self.medium.clone(),
            key: dataset.clone(),
        };
        let log = reader.start_of(Some(incarnation));
        Ok(Some(Arc::new(LogReader::open(reader, log)?)))
    }

    fn describe(&self, dataset: &DatasetKey) -> String {
        self.medium.describe(dataset)
    }

    fn waiter(&self) -> Result<Box<dyn ChangeWaiter>> {
        // Slot media have no notifications: poll, backing off to 50 ms.
        Ok(Box::new(PollingWaiter::new(Duration::from_millis(50))))
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

    fn queries(&self) -> Option<&dyn CatalogueQueries> {
        None
    }
}

impl<M: SlotMedium> CatalogueMaintenance for SlotCatalogue<M> {
    /// None: a wipe removes the registration last, so an interrupted wipe
    /// leaves its dataset listed (and empty) until a wipe finishes it.
    fn interrupted_wipes(&self) -> Result<Vec<DatasetKey>> {
        Ok(Vec::new())
    }

    fn list_locked(&self) -> Result<Option<Vec<DatasetKey>>> {
        self.medium.list_locked().map(Some)
    }

    fn locks(&self, dataset: &DatasetKey) -> Result<Locks> {
        match self.medium.open(dataset)? {
            Some(d) => self.medium.locks(&d),
            None => Ok(Locks::NONE),
        }
    }

    fn control(&self, dataset: &DatasetKey, action: Control, operations: Locks) -> Result<Locks> {
        let d = self.current(dataset)?;
        let locks = self.medium.locks(&d)?.apply(action, operations);
        let payload = records::encode_control(locks.bits(), now_ns());
        // Writers read the state; readers follow the log; listings of
        // datasets read the mark (the module's doc: the order matters).
        let control = M::FRAMING.framed(kind::CONTROL, &payload);
        self.medium.set_locks(&d, &control)?;
        self.append(&d, kind::CONTROL, &payload)?;
        let list_locked = locks.contains(Operation::List);
        self.medium
            .mark_list_locked(dataset, list_locked.then_some(&control[..]))?;
        Ok(locks)
    }

    fn inventory(&self, dataset: &DatasetKey) -> Result<Vec<Item>> {
        self.medium.inventory(dataset)
    }

    fn wipe(
        &self,
        dataset: &DatasetKey,
        unsafe_wipe_all: bool,
        store_step: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        self.medium.wipe(dataset, unsafe_wipe_all, store_step)
    }

    fn wipe_collocations(
        &self,
        dataset: &DatasetKey,
        collocations: &[CollocationKey],
        units: &[String],
    ) -> Result<()> {
        let payload = records::encode_wipe(collocations, units, now_ns());
        self.append(&self.current(dataset)?, kind::WIPE, &payload)
    }

    /// Log slots are never deleted (readers tell a gap from the end): only
    /// the store's units are reclaimed, and the record makes readers stop
    /// listing their entries.
    fn reclaim(
        &self,
        dataset: &DatasetKey,
        units: &[String],
        _hidden: &[CollocationKey],
        dry_run: bool,
    ) -> Result<Vec<Item>> {
        if !dry_run && !units.is_empty() {
            let payload = records::encode_reclaim(units, None, now_ns());
            self.append(&self.current(dataset)?, kind::RECLAIM, &payload)?;
        }
        Ok(Vec::new())
    }
}

/// One writer's session with one incarnation of a dataset.
struct SlotWriter<M: SlotMedium> {
    medium: Arc<M>,
    key: DatasetKey,
    incarnation: M::Dataset,
    /// Where the next publish starts: every slot before it was taken when
    /// this writer last read the locks (or was the writer's own).
    next: u64,
    /// Whether this writer registered the dataset.
    registered: bool,
    id: String,
    pending: PendingEntries,
}

impl<M: SlotMedium> SlotWriter<M> {
    fn publish(&mut self, value: &[u8]) -> Result<()> {
        let (m, key, d) = (&*self.medium, &self.key, &self.incarnation);
        if !self.registered {
            m.register(key, d)?;
            self.registered = true;
        }
        let check = || {
            if m.locks(d)?.contains(Operation::Archive) {
                return Err(locked(key, Operation::Archive));
            }
            Ok(())
        };
        // Slots another writer of this process saw taken: skipping them
        // skips any CONTROL record among them, so the locks are read.
        let known = m.known_end(d);
        if known > self.next {
            check()?;
            self.next = known;
        }
        let log = m.slots(d)?;
        let slot = slots::publish(&*log, self.next, value, &mut || check())?;
        self.next = slot + 1;
        m.published(d, &*log, slot)?;
        m.fence(key, d)
    }
}

impl<M: SlotMedium> CatalogueWriter for SlotWriter<M> {
    fn schema_text(&self) -> Option<Arc<str>> {
        Some(self.medium.schema(&self.incarnation))
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
        let framed = M::FRAMING.framed(kind::FLUSH, &inline::encode_flush(&flush));
        let result = self
            .medium
            .flush_value(&self.incarnation, framed)
            .and_then(|value| self.publish(&value));
        result.map_err(|e| {
            if e.kind() == ErrorKind::Locked {
                e
            } else {
                self.medium.flush_failed(&self.key, &self.incarnation, e)
            }
        })
    }

    /// Unknown: the insert that publishes a flush may have taken effect
    /// when it reports an error.
    fn last_flush_invisible(&self) -> bool {
        false
    }
}

/// One dataset's log, as the engine's reader follows it: the incarnation
/// the medium opens, then the next one after a wipe.
#[derive(Debug)]
struct SlotReader<M: SlotMedium> {
    medium: Arc<M>,
    key: DatasetKey,
}

impl<M: SlotMedium> SlotReader<M> {
    /// A log at the start of `incarnation` (`None`: the dataset is gone).
    fn start_of(&self, incarnation: Option<M::Dataset>) -> SlotReaderLog<M::Dataset> {
        let schema = incarnation
            .as_ref()
            .map_or_else(|| Arc::from(""), |d| self.medium.schema(d));
        Log::new(
            schema,
            Incarnation {
                dataset: incarnation,
                slots: SlotCursor {
                    buf: Vec::with_capacity(M::SLOT_BUFFER),
                    ..SlotCursor::default()
                },
            },
        )
    }
}

impl<M: SlotMedium> LogMedium for SlotReader<M> {
    type Place = ();
    type Cursor = Incarnation<M::Dataset>;

    /// An incarnation that ended is followed by the one the medium opens
    /// now, from its start (at most once per call: a dataset wiped again
    /// meanwhile is read at the next).
    fn follow(&self, log: &mut SlotReaderLog<M::Dataset>) -> Result<()> {
        for _ in 0..2 {
            if log.cursor.dataset.is_none() {
                *log = self.start_of(self.medium.open(&self.key)?);
            }
            let Some(d) = log.cursor.dataset.clone() else {
                return Ok(());
            };
            if self.medium.follow(&d, log)? == Looked::Current {
                return Ok(());
            }
            *log = self.start_of(None);
        }
        Ok(())
    }
}
