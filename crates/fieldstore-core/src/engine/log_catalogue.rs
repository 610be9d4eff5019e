//! The catalogue of every log medium, written once: [`LogCatalogue`] is
//! the [`Catalogue`] and its [`CatalogueMaintenance`], its writers
//! ([`CatalogueWriter`]: pending entries → staged → published) and the lock
//! protocol; a medium gives only what differs, as a [`CatalogueMedium`].
//! Slot media (DAOS, S3) get theirs from [`super::slot_catalogue`]; byte
//! logs (RADOS) write theirs.
//!
//! **Locks** ([`CatalogueMaintenance::control`]), in one order on every
//! medium: the dataset's state that writers check at their commit and a
//! CONTROL record for readers ([`CatalogueMedium::set_locks`], in one
//! atomic step where the medium can), then the mark listings of datasets
//! read ([`MediumMaintenance::mark_list_locked`]).

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use crate::catalogue::{
    Catalogue, CatalogueMaintenance, CatalogueQueries, CatalogueWriter, ChangeWaiter,
    DamagedDatasets, DatasetMover, DatasetReader, PollingWaiter,
};
use crate::error::{Error, ErrorKind, Result};
use crate::key::{CollocationKey, DatasetKey, ElementKey};
use crate::location::FieldLocation;
use crate::maintenance::{Control, Item, Locks, Operation};
use crate::record::kind;
use crate::record::maintenance::{self as records, now_ns};
use crate::record::pending::PendingEntries;
use crate::schema::Schema;

/// What data management asks of a medium beyond its log: the marks
/// listings of datasets read, what a dataset is made of, and its wipe. A
/// supertrait of [`CatalogueMedium`], apart so that a medium whose log
/// the engine has (every [`super::slot_catalogue::SlotMedium`]) writes
/// only this.
pub trait MediumMaintenance {
    /// The datasets marked list-locked, if the medium keeps such marks
    /// where listings look (`None`: ask each dataset).
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn list_locked(&self) -> Result<Option<Vec<DatasetKey>>>;

    /// Mark the dataset list-locked where listings of datasets look, with
    /// `control` (the CONTROL payload that locked it), or unmark it
    /// (`None`). The default keeps no marks.
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn mark_list_locked(&self, key: &DatasetKey, control: Option<&[u8]>) -> Result<()> {
        let _ = (key, control);
        Ok(())
    }

    /// [`CatalogueMaintenance::inventory`].
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn inventory(&self, key: &DatasetKey) -> Result<Vec<Item>>;

    /// [`CatalogueMaintenance::wipe`] (see the trait's contract for the
    /// order).
    ///
    /// # Errors
    /// The medium's I/O errors; `store_step`'s.
    fn wipe(
        &self,
        key: &DatasetKey,
        unsafe_wipe_all: bool,
        store_step: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()>;

    /// [`CatalogueMaintenance::interrupted_wipes`]; the default: none (a
    /// wipe removes the registration last, so an interrupted wipe leaves
    /// its dataset listed until a wipe finishes it).
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn interrupted_wipes(&self) -> Result<Vec<DatasetKey>> {
        Ok(Vec::new())
    }
}

/// What a log medium gives the engine's catalogue.
///
/// # Contract
/// - [`CatalogueMedium::publish`] is the commit: the staged flush becomes
///   visible whole or not at all, ordered against every other writer's,
///   and refused if an archive lock was set before it
///   ([`crate::maintenance::locked`]).
/// - [`CatalogueMedium::writer`] creates the dataset if it does not
///   exist; racing creators end up with one dataset.
/// - [`MediumMaintenance::wipe`] hides the dataset before the store's step
///   (readers see the whole dataset or nothing) and removes the
///   registration last, keeping it if a writer created the dataset anew
///   meanwhile.
pub trait CatalogueMedium: MediumMaintenance + Send + Sync + Debug + 'static {
    /// One incarnation of a dataset, as opened (S3: its `meta`; DAOS: its
    /// container; RADOS: its object name).
    type Dataset: Clone + Debug + Send + Sync + 'static;
    /// A writer's own state between flushes (where it appends).
    type Writer: Send + 'static;
    /// A flush written ahead, not visible yet.
    type Staged: Send + 'static;

    /// The dataset's current incarnation, if it exists (checked to be this
    /// dataset's: names may collide).
    ///
    /// # Errors
    /// The medium's I/O errors; `InvalidInput` for a collision.
    fn open(&self, key: &DatasetKey) -> Result<Option<Self::Dataset>>;

    /// Every registered dataset.
    ///
    /// # Errors
    /// The medium's I/O errors; `Corrupt` for a registration that is not a
    /// dataset key.
    fn registered(&self) -> Result<Vec<DatasetKey>>;

    /// Where the dataset lives, for messages.
    fn describe(&self, key: &DatasetKey) -> String;

    /// A reader of `dataset` (the engine's [`super::LogReader`] on the
    /// medium's log); `None` if the dataset turns out to be gone.
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn reader(
        self: Arc<Self>,
        key: &DatasetKey,
        dataset: Self::Dataset,
    ) -> Result<Option<Arc<dyn DatasetReader>>>;

    /// A writer of the dataset, created under `schema` if it does not
    /// exist; `Locked` if it is locked against archive.
    ///
    /// # Errors
    /// The medium's I/O errors; `Locked`.
    fn writer(&self, key: &DatasetKey, schema: &Schema) -> Result<(Self::Dataset, Self::Writer)>;

    /// The text of the schema `dataset` was created under.
    fn schema(&self, dataset: &Self::Dataset) -> Arc<str>;

    /// Write a flush of `pending` (not empty) ahead, invisible until
    /// [`CatalogueMedium::publish`].
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn stage(
        &self,
        key: &DatasetKey,
        dataset: &Self::Dataset,
        writer: &mut Self::Writer,
        pending: PendingEntries,
    ) -> Result<Self::Staged>;

    /// Make a staged flush visible: the commit.
    ///
    /// # Errors
    /// `Locked` for an archive lock; `NotFound` if the dataset was wiped
    /// under the writer; the medium's I/O errors (the flush may then be
    /// visible all the same, unless [`CatalogueMedium::invisible`] says).
    fn publish(
        &self,
        key: &DatasetKey,
        dataset: &Self::Dataset,
        writer: &mut Self::Writer,
        staged: Self::Staged,
    ) -> Result<()>;

    /// A staged flush never published (the store's flush failed, and the
    /// writer is dropped): give back what it wrote. The default drops it.
    fn abandon(&self, writer: &mut Self::Writer, staged: Self::Staged) {
        let _ = (writer, staged);
    }

    /// Whether the last failed flush is known to be invisible
    /// ([`CatalogueWriter::last_flush_invisible`]); the default: unknown.
    fn invisible(&self, writer: &Self::Writer) -> bool {
        let _ = writer;
        false
    }

    /// The dataset's own locks, as [`CatalogueMedium::set_locks`] last set
    /// them (`NONE` when never set).
    ///
    /// # Errors
    /// The medium's I/O errors; `Corrupt` for a state that does not decode.
    fn locks(&self, dataset: &Self::Dataset) -> Result<Locks>;

    /// Locks the dataset has from elsewhere (POSIX: its root's settings);
    /// the default: none.
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn inherited_locks(&self, dataset: &Self::Dataset) -> Result<Locks> {
        let _ = dataset;
        Ok(Locks::NONE)
    }

    /// Make `locks` the dataset's: the state writers check at their commit
    /// and the CONTROL record `control` (its payload) in the log for
    /// readers, in one atomic step where the medium can.
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn set_locks(&self, dataset: &Self::Dataset, locks: Locks, control: &[u8]) -> Result<()>;

    /// Append a WIPE or RECLAIM record (`kind`, its payload) to the log.
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn append(&self, dataset: &Self::Dataset, kind: u16, payload: &[u8]) -> Result<()>;

    /// [`CatalogueMaintenance::wipe_collocations`]; the default appends a
    /// WIPE record.
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn wipe_collocations(
        &self,
        dataset: &Self::Dataset,
        collocations: &[CollocationKey],
        units: &[String],
    ) -> Result<()> {
        let payload = records::encode_wipe(collocations, units, now_ns());
        self.append(dataset, kind::WIPE, &payload)
    }

    /// [`CatalogueMaintenance::reclaim`] of a dataset that exists; the
    /// default: the log is never rewritten, only the store's units are
    /// reclaimed, and a RECLAIM record makes readers stop listing their
    /// entries.
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn reclaim(
        &self,
        dataset: &Self::Dataset,
        units: &[String],
        hidden: &[CollocationKey],
        dry_run: bool,
    ) -> Result<Vec<Item>> {
        let _ = hidden;
        if !dry_run && !units.is_empty() {
            let payload = records::encode_reclaim(units, None, now_ns());
            self.append(dataset, kind::RECLAIM, &payload)?;
        }
        Ok(Vec::new())
    }

    /// How a watcher learns of changes; the default polls, backing off to
    /// 50 ms (a medium without notifications).
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn waiter(&self) -> Result<Box<dyn ChangeWaiter>> {
        Ok(Box::new(PollingWaiter::new(Duration::from_millis(50))))
    }

    /// [`Catalogue::damaged_datasets`]; the default: none.
    fn damaged_datasets(&self) -> Option<&dyn DamagedDatasets> {
        None
    }

    /// [`Catalogue::mover`]; the default: none.
    fn mover(&self) -> Option<&dyn DatasetMover> {
        None
    }
}

/// The catalogue of a log medium.
#[derive(Debug)]
pub struct LogCatalogue<M: CatalogueMedium> {
    medium: Arc<M>,
}

impl<M: CatalogueMedium> LogCatalogue<M> {
    /// The catalogue on `medium`.
    pub fn new(medium: M) -> LogCatalogue<M> {
        LogCatalogue {
            medium: Arc::new(medium),
        }
    }

    fn current(&self, key: &DatasetKey) -> Result<M::Dataset> {
        self.medium.open(key)?.ok_or_else(|| {
            let (dataset, place) = (key.braced(), self.medium.describe(key));
            Error::new(
                ErrorKind::NotFound,
                format!("no dataset {dataset} in {place}"),
            )
        })
    }
}

impl<M: CatalogueMedium> Catalogue for LogCatalogue<M> {
    fn writer(&self, dataset: &DatasetKey, schema: &Schema) -> Result<Box<dyn CatalogueWriter>> {
        let (incarnation, state) = self.medium.writer(dataset, schema)?;
        Ok(Box::new(LogWriter {
            medium: self.medium.clone(),
            key: dataset.clone(),
            incarnation,
            state,
            pending: PendingEntries::new(),
            staged: None,
        }))
    }

    fn datasets(&self) -> Result<Vec<DatasetKey>> {
        let mut out = self.medium.registered()?;
        out.sort();
        Ok(out)
    }

    fn reader(&self, dataset: &DatasetKey) -> Result<Option<Arc<dyn DatasetReader>>> {
        match self.medium.open(dataset)? {
            Some(d) => self.medium.clone().reader(dataset, d),
            None => Ok(None),
        }
    }

    fn describe(&self, dataset: &DatasetKey) -> String {
        self.medium.describe(dataset)
    }

    fn waiter(&self) -> Result<Box<dyn ChangeWaiter>> {
        self.medium.waiter()
    }

    fn maintenance(&self) -> Option<&dyn CatalogueMaintenance> {
        Some(self)
    }

    fn damaged_datasets(&self) -> Option<&dyn DamagedDatasets> {
        self.medium.damaged_datasets()
    }

    fn mover(&self) -> Option<&dyn DatasetMover> {
        self.medium.mover()
    }

    fn queries(&self) -> Option<&dyn CatalogueQueries> {
        None
    }
}

impl<M: CatalogueMedium> CatalogueMaintenance for LogCatalogue<M> {
    fn interrupted_wipes(&self) -> Result<Vec<DatasetKey>> {
        self.medium.interrupted_wipes()
    }

    fn list_locked(&self) -> Result<Option<Vec<DatasetKey>>> {
        self.medium.list_locked()
    }

    fn locks(&self, dataset: &DatasetKey) -> Result<Locks> {
        match self.medium.open(dataset)? {
            Some(d) => Ok(self
                .medium
                .locks(&d)?
                .union(self.medium.inherited_locks(&d)?)),
            None => Ok(Locks::NONE),
        }
    }

    fn control(&self, dataset: &DatasetKey, action: Control, operations: Locks) -> Result<Locks> {
        let d = self.current(dataset)?;
        let locks = self.medium.locks(&d)?.apply(action, operations);
        let control = records::encode_control(locks.bits(), now_ns());
        // The state and the record first: a list mark without them would
        // hide a dataset whose readers still list it.
        self.medium.set_locks(&d, locks, &control)?;
        let mark = locks.contains(Operation::List).then_some(&control[..]);
        self.medium.mark_list_locked(dataset, mark)?;
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
        self.medium
            .wipe_collocations(&self.current(dataset)?, collocations, units)
    }

    /// Nothing to reclaim in a dataset that does not exist.
    fn reclaim(
        &self,
        dataset: &DatasetKey,
        units: &[String],
        hidden: &[CollocationKey],
        dry_run: bool,
    ) -> Result<Vec<Item>> {
        match self.medium.open(dataset)? {
            Some(d) => self.medium.reclaim(&d, units, hidden, dry_run),
            None => Ok(Vec::new()),
        }
    }
}

/// One writer's session with one incarnation of a dataset.
struct LogWriter<M: CatalogueMedium> {
    medium: Arc<M>,
    key: DatasetKey,
    incarnation: M::Dataset,
    state: M::Writer,
    /// Entries since the last flush was staged.
    pending: PendingEntries,
    /// A flush written ahead ([`CatalogueWriter::prepare_flush`]).
    staged: Option<M::Staged>,
}

impl<M: CatalogueMedium> CatalogueWriter for LogWriter<M> {
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

    fn prepare_flush(&mut self) -> Result<()> {
        if self.staged.is_some() || self.pending.is_empty() {
            return Ok(());
        }
        let pending = self.pending.take();
        let staged = self
            .medium
            .stage(&self.key, &self.incarnation, &mut self.state, pending)?;
        self.staged = Some(staged);
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.prepare_flush()?;
        let Some(staged) = self.staged.take() else {
            return Ok(());
        };
        self.medium
            .publish(&self.key, &self.incarnation, &mut self.state, staged)
    }

    fn last_flush_invisible(&self) -> bool {
        self.medium.invisible(&self.state)
    }
}

impl<M: CatalogueMedium> Drop for LogWriter<M> {
    /// A flush staged and never published (the store's flush failed after
    /// [`CatalogueWriter::prepare_flush`], and the writer is dropped).
    fn drop(&mut self) {
        if let Some(staged) = self.staged.take() {
            self.medium.abandon(&mut self.state, staged);
        }
    }
}
