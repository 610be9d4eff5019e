//! The catalogue of a medium whose log is a row of slots (DAOS's dataset
//! KV, S3's log objects): every [`SlotMedium`] is a [`CatalogueMedium`],
//! so `LogCatalogue<M>` ([`super::log_catalogue`]) is its catalogue, and
//! this module its writers' commit and its readers; the medium gives only
//! what differs.
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
//! **Locks**: the state writers read ([`SlotMedium::set_locks`]), then a
//! CONTROL record in the log for readers. A writer reads the state when it
//! starts, unless it starts at slot 0, whenever a slot it tried was taken,
//! and before it skips slots other writers of its process saw: a lock set
//! later appends its record at or after the writer's next slot, so the
//! writer's next insert meets it.

use std::fmt::Debug;
use std::sync::Arc;

use super::log_catalogue::{CatalogueMedium, MediumMaintenance};
use super::slots::{self, SlotCursor, SlotLog, SlotRecord};
use super::{Log, LogMedium, LogReader};
use crate::catalogue::DatasetReader;
use crate::error::{Error, ErrorKind, Result};
use crate::key::DatasetKey;
use crate::maintenance::{locked, Locks, Operation};
use crate::record::inline::{self, Flush};
use crate::record::kind;
use crate::record::maintenance::{decode_control, now_ns};
use crate::record::pending::PendingEntries;
use crate::record::Framing;
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
/// - [`MediumMaintenance::wipe`] ends the incarnation before the store's step (so
///   readers see the whole dataset or nothing) and removes the
///   registration last, keeping it if a writer created the dataset anew
///   meanwhile.
pub trait SlotMedium: MediumMaintenance + Send + Sync + Debug + 'static {
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

    /// The datasets [`SlotMedium::registered`] left out (`registered` is
    /// its answer) that the medium's namespace still holds, each with its
    /// current incarnation (as [`SlotMedium::open`] gives it): one being
    /// created before its first flush, or one whose registration was lost
    /// behind the store's back. Found by a search that costs about what
    /// reading the registry does, so that every listing of datasets can
    /// afford it; the engine registers each again. The default finds
    /// none: a medium whose registry is its namespace.
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn unregistered(&self, registered: &[DatasetKey]) -> Result<Vec<(DatasetKey, Self::Dataset)>> {
        let _ = registered;
        Ok(Vec::new())
    }

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
    /// append starts. The default looks ([`slots::first_free`]) from
    /// [`SlotMedium::known_end`] or from past the log's stored hint
    /// ([`SlotLog::hint_past`], cold), whichever is further: the hinted slot
    /// was seen to exist and fieldstore never removes one, so a free slot
    /// below it was removed behind fieldstore's back, and a writer filling
    /// it would hide that loss from readers (a gap stays one).
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn start(&self, dataset: &Self::Dataset, log: &dyn SlotLog) -> Result<u64> {
        let hinted = log.hint_past(0, true)?.map_or(0, |h| h + 1);
        slots::first_free(log, self.known_end(dataset).max(hinted))
    }

    /// This process published slot `slot` of `dataset`'s log (a medium may
    /// remember it for [`SlotMedium::known_end`]).
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn published(&self, dataset: &Self::Dataset, slot: u64) -> Result<()> {
        let _ = (dataset, slot);
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

    /// The locks writers read (`NONE` when never set); [`locks_in`] reads
    /// them out of what [`SlotMedium::set_locks`] stored.
    ///
    /// # Errors
    /// The medium's I/O errors; `Corrupt` for a state that does not decode.
    fn locks(&self, dataset: &Self::Dataset) -> Result<Locks>;

    /// Set the state writers read to `control`, a framed CONTROL record.
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn set_locks(&self, dataset: &Self::Dataset, control: &[u8]) -> Result<()>;
}

/// The locks a medium's state for writers holds: `value` is the framed
/// CONTROL record [`SlotMedium::set_locks`] stored (`None`: never set).
///
/// # Errors
/// `Corrupt`, naming `what`, if it is not a whole CONTROL record.
pub fn locks_in(
    framing: &Framing,
    value: Option<&[u8]>,
    what: &dyn Fn() -> String,
) -> Result<Locks> {
    let Some(value) = value else {
        return Ok(Locks::NONE);
    };
    let payload = framing.unframe_kind(value, kind::CONTROL, "a CONTROL", what)?;
    Ok(Locks::from_bits(decode_control(payload, what)?))
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

/// Where a slot writer stands between flushes.
#[derive(Debug)]
pub struct SlotWriter {
    /// Where the next publish starts: every slot before it was taken when
    /// this writer last read the locks (or was the writer's own).
    next: u64,
    /// Whether this writer registered the dataset.
    registered: bool,
    id: String,
}

/// Append a record to `dataset`'s log: its first free slot.
fn append<M: SlotMedium>(
    medium: &M,
    dataset: &M::Dataset,
    kind: u16,
    payload: &[u8],
) -> Result<()> {
    let log = medium.slots(dataset)?;
    let from = medium.start(dataset, &*log)?;
    let value = M::FRAMING.framed(kind, payload);
    let slot = slots::publish(&*log, from, &value, &mut || Ok(()))?;
    medium.published(dataset, slot)
}

impl<M: SlotMedium> CatalogueMedium for M {
    type Dataset = M::Dataset;
    type Writer = SlotWriter;
    /// The value the flush is published as.
    type Staged = Vec<u8>;

    fn open(&self, key: &DatasetKey) -> Result<Option<M::Dataset>> {
        SlotMedium::open(self, key)
    }

    /// The registry, and what [`SlotMedium::unregistered`] finds beside
    /// it with a published slot, registered again (a lost registration
    /// hides a dataset from listings while lookups still find it). A
    /// dataset with an empty log is being created: its first writer
    /// registers it before its first flush is published. A client the
    /// medium does not let write still lists what it found.
    fn registered(&self) -> Result<Vec<DatasetKey>> {
        let mut keys = SlotMedium::registered(self)?;
        for (key, dataset) in self.unregistered(&keys)? {
            let log = self.slots(&dataset)?;
            if !log.exists(0)? && log.next_after(0)?.is_none() {
                continue;
            }
            match self.register(&key, &dataset) {
                Err(e) if e.kind() != ErrorKind::PermissionDenied => return Err(e),
                _ => keys.push(key),
            }
        }
        Ok(keys)
    }

    fn describe(&self, key: &DatasetKey) -> String {
        SlotMedium::describe(self, key)
    }

    fn reader(
        self: Arc<Self>,
        key: &DatasetKey,
        dataset: M::Dataset,
    ) -> Result<Option<Arc<dyn DatasetReader>>> {
        let reader = SlotReader {
            medium: self,
            key: key.clone(),
        };
        let log = reader.start_of(Some(dataset));
        Ok(Some(Arc::new(LogReader::open(reader, log)?)))
    }

    /// The end of the log first, then the locks: a lock set after this
    /// look appends its CONTROL record at `next` or later, which the
    /// writer's first publish meets. At slot 0 there is nothing before.
    fn writer(&self, key: &DatasetKey, schema: &Schema) -> Result<(M::Dataset, SlotWriter)> {
        let incarnation = self.create(key, schema)?;
        let next = self.start(&incarnation, &*self.slots(&incarnation)?)?;
        if next > 0 && SlotMedium::locks(self, &incarnation)?.contains(Operation::Archive) {
            return Err(locked(key, Operation::Archive));
        }
        let writer = SlotWriter {
            next,
            registered: false,
            id: crate::writer_id::next(),
        };
        Ok((incarnation, writer))
    }

    fn schema(&self, dataset: &M::Dataset) -> Arc<str> {
        SlotMedium::schema(self, dataset)
    }

    /// The flush's value: its blocks inline ([`inline`]), framed, as the
    /// medium publishes it ([`SlotMedium::flush_value`]).
    fn stage(
        &self,
        key: &DatasetKey,
        dataset: &M::Dataset,
        writer: &mut SlotWriter,
        pending: PendingEntries,
    ) -> Result<Vec<u8>> {
        let flush = Flush {
            timestamp_ns: now_ns(),
            writer: writer.id.clone(),
            blocks: inline::blocks(pending),
        };
        let framed = M::FRAMING.framed(kind::FLUSH, &inline::encode_flush(&flush));
        self.flush_value(dataset, framed)
            .map_err(|e| self.flush_failed(key, dataset, e))
    }

    /// Register the dataset (a writer's first flush), insert the value at
    /// the writer's next slot or the first free one after it, then fence.
    fn publish(
        &self,
        key: &DatasetKey,
        dataset: &M::Dataset,
        writer: &mut SlotWriter,
        value: Vec<u8>,
    ) -> Result<()> {
        let check = || {
            if SlotMedium::locks(self, dataset)?.contains(Operation::Archive) {
                return Err(locked(key, Operation::Archive));
            }
            Ok(())
        };
        let result = (|| {
            if !writer.registered {
                self.register(key, dataset)?;
                writer.registered = true;
            }
            let log = self.slots(dataset)?;
            // Past the slots another writer of this process saw taken, and
            // past the tail hint, read before every flush: a slot at or
            // below it was published, so a free one there was removed
            // behind fieldstore's back, and a writer that took it would
            // hide the loss and put its flush before newer ones (readers
            // would answer the older versions with success). Writers of
            // other processes that appended since this one's last flush
            // are passed over in the same look, rather than by a race
            // lost and a search. Skipping slots skips any CONTROL record
            // among them, so the locks are read.
            let mut from = self.known_end(dataset).max(writer.next);
            if let Some(hinted) = log.hint_past(from, true)? {
                from = hinted + 1;
            }
            if from > writer.next {
                check()?;
            }
            let slot = slots::publish(&*log, from, &value, &mut || check())?;
            writer.next = slot + 1;
            self.published(dataset, slot)?;
            self.fence(key, dataset)
        })();
        result.map_err(|e| match e.kind() {
            ErrorKind::Locked => e,
            _ => self.flush_failed(key, dataset, e),
        })
    }

    fn locks(&self, dataset: &M::Dataset) -> Result<Locks> {
        SlotMedium::locks(self, dataset)
    }

    /// The state, then the CONTROL record in a slot of its own.
    fn set_locks(&self, dataset: &M::Dataset, _: Locks, control: &[u8]) -> Result<()> {
        SlotMedium::set_locks(self, dataset, &M::FRAMING.framed(kind::CONTROL, control))?;
        append(self, dataset, kind::CONTROL, control)
    }

    /// Log slots are never deleted (readers tell a gap from the end).
    fn append(&self, dataset: &M::Dataset, kind: u16, payload: &[u8]) -> Result<()> {
        append(self, dataset, kind, payload)
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
