//! The `Catalogue` traits: the index of fields by key.
//!
//! The backend traits live in the core crate, which does no I/O itself, so
//! that backend crates (DAOS, RADOS) implement them without depending on
//! the `fieldstore` crate that dispatches to them.

use std::collections::{BTreeSet, HashSet};
use std::fmt::Debug;
use std::sync::Arc;

use crate::error::Result;
use crate::key::{CollocationKey, DatasetKey, ElementKey};
use crate::list_element::ListElement;
use crate::location::FieldLocation;
use crate::maintenance::{Control, Item, Locks};
use crate::request::Request;
use crate::schema::{Level, Schema};

pub use crate::axes::{Axes, AxesExt};

/// The metadata side of a backend: which fields exist, and where.
///
/// # Contract
/// - Entries inserted through a [`CatalogueWriter`] are invisible to every
///   reader until that writer's [`CatalogueWriter::flush`] returns; then
///   they are durable and visible to every reader in every process after its
///   next [`DatasetReader::refresh`].
/// - Visibility is atomic per flush: a reader sees all of a flush's entries
///   or none.
/// - Entries are never modified. Inserting a key again masks the older
///   entry: lookups and deduplicated scans resolve newest first, where
///   "newer" is the order in which flushes became visible.
/// - Writers never take a lock shared with other writers.
/// - A writer killed at any instant leaves nothing partial visible; what it
///   flushed stays readable.
///
/// The data-management operations live in their own traits, reached
/// through accessors that answer `None` when the backend lacks them:
/// [`Catalogue::maintenance`] (wipe, purge's reclaim, locks, inventory),
/// [`Catalogue::damaged_datasets`] (datasets whose naming record is
/// damaged) and [`Catalogue::mover`] (moving datasets between roots). So
/// "not supported" is a fact of the type, not a default that answers
/// `Unsupported` or "nothing" at run time; and a wrapper forwards every
/// method, which the compiler checks (`clippy::missing_trait_methods`).
pub trait Catalogue: Send + Sync + Debug + 'static {
    /// A writer for one dataset, creating the dataset if needed. `schema` is
    /// recorded with a new dataset.
    fn writer(&self, dataset: &DatasetKey, schema: &Schema) -> Result<Box<dyn CatalogueWriter>>;

    /// Every dataset in the catalogue.
    fn datasets(&self) -> Result<Vec<DatasetKey>>;

    /// Open a dataset for reading, or `None` if it does not exist.
    fn reader(&self, dataset: &DatasetKey) -> Result<Option<Arc<dyn DatasetReader>>>;

    /// Where a dataset lives, for people (a directory, a container).
    fn describe(&self, dataset: &DatasetKey) -> String;

    /// A waiter for changes of this catalogue (see [`ChangeWaiter`]),
    /// created before the caller's first look so that nothing after it is
    /// missed. A backend without notifications returns a
    /// [`PollingWaiter`].
    ///
    /// # Errors
    /// I/O errors setting up notifications.
    fn waiter(&self) -> Result<Box<dyn ChangeWaiter>>;

    /// A waiter for the changes that may concern `request` (a listing's
    /// request): it may also wake for others, never miss one of these. A
    /// backend that can tell which changes concern a request (a server
    /// that filters its notifications) says so here; by default, every
    /// change ([`Catalogue::waiter`]).
    ///
    /// # Errors
    /// As [`Catalogue::waiter`].
    fn waiter_for(&self, request: &Request) -> Result<Box<dyn ChangeWaiter>> {
        let _ = request;
        self.waiter()
    }

    /// Wipe, purge's reclaim, locks and inventory, if this backend has
    /// them (see [`CatalogueMaintenance`]).
    fn maintenance(&self) -> Option<&dyn CatalogueMaintenance>;

    /// The datasets this backend can tell are damaged beyond opening, if
    /// it can tell (see [`DamagedDatasets`]).
    fn damaged_datasets(&self) -> Option<&dyn DamagedDatasets>;

    /// Moving datasets between the backend's roots, if it has several
    /// (see [`DatasetMover`]).
    fn mover(&self) -> Option<&dyn DatasetMover>;

    /// Whole requests answered by the catalogue itself, if it answers
    /// them (see [`CatalogueQueries`]): then the handle forwards list, axes
    /// and retrieve's lookups to it instead of walking its datasets.
    fn queries(&self) -> Option<&dyn CatalogueQueries>;
}

/// A catalogue that answers whole requests itself: a catalogue server
/// across the network, which FDB5's remote protocol asks for a listing,
/// axes or the fields of a request, never for a dataset's index. Walking
/// such a catalogue dataset by dataset would cost a round trip per
/// dataset and per collocation; forwarding costs one per request.
///
/// # Contract
/// - Answers show every flush acknowledged before the call began, as a
///   refreshed [`DatasetReader`] would.
/// - Keys are split by [`CatalogueQueries::schema`], the catalogue's own
///   schema: the handle archives by it too, so that what it writes is
///   found where the catalogue looks.
/// - [`CatalogueQueries::list`] visits down to `depth`, each entry once
///   (masked entries only when asked for `duplicates`, each after its
///   key's newer ones), and stops when `visit` returns `false`.
/// - [`CatalogueQueries::inspect`] yields the newest location of each
///   field the request names; fields that do not exist are left out.
pub trait CatalogueQueries: Send + Sync {
    /// The schema the catalogue splits keys by.
    fn schema(&self) -> &Schema;

    /// Visit what `request` names, down to `depth`; with `duplicates`,
    /// masked (older) entries too.
    ///
    /// # Errors
    /// `InvalidInput` for a request the catalogue refuses; `Unavailable`
    /// or `TimedOut` when it cannot be reached.
    fn list(
        &self,
        request: &Request,
        depth: Level,
        duplicates: bool,
        visit: &mut dyn FnMut(ListElement) -> bool,
    ) -> Result<()>;

    /// The values present per keyword among what `request` names, down to
    /// `depth`.
    ///
    /// # Errors
    /// As [`CatalogueQueries::list`].
    fn axes(&self, request: &Request, depth: Level) -> Result<Axes>;

    /// The fields `request` names, each with its newest location.
    ///
    /// # Errors
    /// As [`CatalogueQueries::list`].
    fn inspect(&self, request: &Request) -> Result<Vec<ListElement>>;
}

/// The data-management side of a catalogue ([`crate::maintenance`]).
///
/// # Contract
/// - Locks set by [`CatalogueMaintenance::control`] are seen by every
///   process: by [`CatalogueMaintenance::locks`] at once, by readers at
///   their next refresh ([`DatasetReader::locks`]), by writers at their
///   creation and at their next flush, which fails with
///   [`ErrorKind::Locked`](crate::error::ErrorKind::Locked). A catalogue without
///   maintenance has no locks: nothing can set them.
/// - [`CatalogueMaintenance::wipe`] makes the dataset invisible to every
///   reader in one atomic step before anything is deleted; a reader sees
///   the dataset whole or not at all. A crash at any instant leaves either
///   the dataset as it was or a state that the next `wipe` of the dataset
///   finishes (listed by [`CatalogueMaintenance::interrupted_wipes`] if the
///   dataset is no longer listed). A writer whose dataset is wiped under it
///   gets an error from its next flush and stores nothing; a new writer
///   creates the dataset anew.
/// - [`CatalogueMaintenance::wipe_collocations`] hides collocations
///   atomically, in the same sense.
/// - [`CatalogueMaintenance::reclaim`] is called only with units that the
///   store has removed and that no newest entry points into; afterwards
///   scans no longer show entries in them.
pub trait CatalogueMaintenance: Send + Sync {
    /// The operations `dataset` is locked against, as of now.
    ///
    /// # Errors
    /// I/O errors.
    fn locks(&self, dataset: &DatasetKey) -> Result<Locks>;

    /// Every list-locked dataset, when the backend knows them all cheaply
    /// (for listings at the dataset level, which do not open datasets);
    /// `None`: ask [`CatalogueMaintenance::locks`] per dataset.
    ///
    /// # Errors
    /// I/O errors.
    fn list_locked(&self) -> Result<Option<Vec<DatasetKey>>>;

    /// Lock or unlock `operations` on `dataset` for every process; returns
    /// the dataset's locks afterwards.
    ///
    /// # Errors
    /// `NotFound` if the dataset does not exist; I/O errors.
    fn control(&self, dataset: &DatasetKey, action: Control, operations: Locks) -> Result<Locks>;

    /// The catalogue's own files or objects of `dataset`, with sizes, for
    /// status and wipe plans: what a wipe of the whole dataset deletes.
    /// Things the backend did not create are
    /// [`ItemKind::Unknown`](crate::maintenance::ItemKind::Unknown); what an
    /// interrupted wipe left, [`ItemKind::Leftover`](crate::maintenance::ItemKind::Leftover).
    ///
    /// # Errors
    /// I/O errors.
    fn inventory(&self, dataset: &DatasetKey) -> Result<Vec<Item>>;

    /// Datasets whose wipe was interrupted after they were hidden (so that
    /// [`Catalogue::datasets`] no longer lists them). A catalogue that
    /// finds here a dataset it does not list though it was not wiped
    /// (RADOS: its root entry removed) registers it again, so that
    /// [`Catalogue::datasets`] called after lists it.
    ///
    /// # Errors
    /// I/O errors.
    fn interrupted_wipes(&self) -> Result<Vec<DatasetKey>>;

    /// Delete the whole dataset: hide it from every reader atomically, call
    /// `store_step` (which deletes the store's part), then delete the
    /// catalogue's part. Things the backend did not create are deleted only
    /// with `unsafe_wipe_all` (the caller checks
    /// [`CatalogueMaintenance::inventory`] first); without it they are left
    /// in place. Wiping a dataset that does not exist, or finishing an
    /// interrupted wipe, is not an error.
    ///
    /// # Errors
    /// I/O errors.
    fn wipe(
        &self,
        dataset: &DatasetKey,
        unsafe_wipe_all: bool,
        store_step: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()>;

    /// Hide `collocations` of `dataset` (all their entries, replaced ones
    /// included) from every reader, atomically, and record `units` — store
    /// units only they point into — as to be removed (see
    /// [`DatasetCondition::pending_units`]). Entries flushed afterwards
    /// under the same collocation keys are visible as usual.
    ///
    /// # Errors
    /// I/O errors.
    fn wipe_collocations(
        &self,
        dataset: &DatasetKey,
        collocations: &[CollocationKey],
        units: &[String],
    ) -> Result<()>;

    /// Record that the store removed `units` (none of which a newest entry
    /// points into), so that scans stop showing entries in them, and delete
    /// the catalogue's own files or objects that only served such entries,
    /// or entries of the `hidden` collocations (wiped, or about to be in a
    /// dry run), and that no live writer uses. Returns what was (with
    /// `dry_run`: would be) deleted; a dry run records nothing.
    ///
    /// # Errors
    /// I/O errors.
    fn reclaim(
        &self,
        dataset: &DatasetKey,
        units: &[String],
        hidden: &[CollocationKey],
        dry_run: bool,
    ) -> Result<Vec<Item>>;
}

/// Datasets that cannot be opened because the record naming them is
/// damaged: [`Catalogue::datasets`] leaves them out, so that one damaged
/// dataset costs nothing but itself, and these methods find and delete
/// them.
pub trait DamagedDatasets: Send + Sync {
    /// The damaged datasets, each with its place and what is wrong.
    ///
    /// # Errors
    /// I/O errors.
    fn damaged(&self) -> Result<Vec<crate::maintenance::DamagedDataset>>;

    /// Delete a damaged dataset, named by its place as
    /// [`DamagedDatasets::damaged`] reports it (checked to be one: a
    /// readable dataset is refused). Hidden atomically first, like a wipe.
    ///
    /// # Errors
    /// `InvalidInput` for a place that is not a damaged dataset; I/O errors.
    fn wipe_damaged(&self, place: &str) -> Result<()>;
}

/// Moving datasets between a backend's roots (POSIX: directories, possibly
/// on other file systems).
pub trait DatasetMover: Send + Sync {
    /// Move `dataset` to another root of this backend, atomically for
    /// readers; returns its new place.
    ///
    /// # Errors
    /// `NotFound`, `InvalidInput` (not a root, the dataset is there
    /// already); I/O errors.
    fn move_dataset(&self, dataset: &DatasetKey, root: &std::path::Path) -> Result<String>;

    /// Moves left unfinished by a crash, per dataset, saying what finishes
    /// them (POSIX: a move across file systems, which the next move of the
    /// dataset finishes).
    ///
    /// # Errors
    /// I/O errors.
    fn unfinished(&self) -> Result<Vec<(DatasetKey, String)>>;
}

/// What a [`ChangeWaiter`] can tell of the changes it returned for: which
/// datasets to look at again.
///
/// # Contract
/// `Datasets(set)` says: since the previous wait returned (or the waiter
/// was created), the catalogue changed by appends to the logs of the
/// datasets in `set` only — flushes, wipes of collocations, purges'
/// records; a dataset that came into being may be named too. No other
/// dataset changed, none was wiped, moved in or out, or locked; a waiter
/// that cannot rule that out answers `Unknown`. An empty set: nothing
/// changed (the wait timed out, and the waiter knows that nothing it
/// could have missed happened meanwhile). `Unknown` is always a correct
/// answer: a caller then looks at everything, as if every dataset had
/// changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Changes {
    /// Anything may have changed.
    Unknown,
    /// Only these datasets changed (see the type's contract).
    Datasets(BTreeSet<DatasetKey>),
}

impl Changes {
    /// Nothing changed: `Datasets` of none.
    pub fn none() -> Changes {
        Changes::Datasets(BTreeSet::new())
    }

    /// Whether this says that nothing changed.
    pub fn is_none(&self) -> bool {
        matches!(self, Changes::Datasets(d) if d.is_empty())
    }

    /// The changes of `self` and `other` together (two waits, or two
    /// lanes): `Unknown` if either is.
    pub fn merge(&mut self, other: Changes) {
        match (&mut *self, other) {
            (Changes::Unknown, _) => {}
            (_, Changes::Unknown) => *self = Changes::Unknown,
            (Changes::Datasets(a), Changes::Datasets(b)) => a.extend(b),
        }
    }
}

/// Waits for a catalogue to change: what `watch` blocks on between looks
/// at the catalogue.
///
/// # Contract
/// [`ChangeWaiter::wait`] returns when the catalogue may have changed since
/// the waiter was created or since the previous `wait` returned (a flush
/// made something visible, a dataset was created, wiped or moved), or when
/// `timeout` has passed. Returning without a change is allowed (the caller
/// looks and waits again); sleeping through a change that happened after
/// the waiter was created is not — a backend without notifications polls.
/// What it returns says which datasets may have changed, as
/// [`Changes`]'s contract says: a caller may then look at those datasets
/// only, so a waiter that names datasets must name every one that changed;
/// one that cannot tell answers [`Changes::Unknown`].
pub trait ChangeWaiter: Send {
    /// Block until the catalogue may have changed, or `timeout` passes;
    /// which datasets may have changed since the previous return.
    ///
    /// # Errors
    /// I/O errors of the notification mechanism.
    fn wait(&mut self, timeout: std::time::Duration) -> Result<Changes>;

    /// How the waiter learns of changes, for reports: `inotify`, `polling
    /// every 1–50 ms`.
    fn mechanism(&self) -> String;

    /// The caller's last look found something new: a polling waiter looks
    /// again soon; a notified one has nothing to do.
    fn found(&mut self);
}

/// A waiter that looks again after a delay growing from 1 ms to `max`
/// while nothing changes: for backends without notifications (DAOS has
/// none), and where notifications cannot see other clients' writes
/// (inotify on NFS or Lustre). The caller's look costs one small read per
/// dataset when nothing is new; the backoff keeps an idle watcher's CPU
/// far below 1 % of a core.
#[derive(Debug)]
pub struct PollingWaiter {
    delay: std::time::Duration,
    max: std::time::Duration,
}

impl PollingWaiter {
    /// A waiter whose delay grows up to `max`.
    pub fn new(max: std::time::Duration) -> PollingWaiter {
        PollingWaiter {
            delay: std::time::Duration::from_millis(1).min(max),
            max,
        }
    }
}

impl ChangeWaiter for PollingWaiter {
    fn found(&mut self) {
        self.delay = std::time::Duration::from_millis(1).min(self.max);
    }

    /// Polling cannot tell what changed: always `Unknown`.
    fn wait(&mut self, timeout: std::time::Duration) -> Result<Changes> {
        std::thread::sleep(self.delay.min(timeout));
        self.delay = (self.delay * 2).min(self.max);
        Ok(Changes::Unknown)
    }

    fn mechanism(&self) -> String {
        format!("polling every 1–{} ms", self.max.as_millis())
    }
}

/// One writer's session with a [`Catalogue`] for one dataset.
pub trait CatalogueWriter: Send {
    /// Record a field. Invisible until [`CatalogueWriter::flush`]. A
    /// location that [`FieldLocation::annotates`] is an annotation: stored
    /// with its flag and extension like any entry, and resolved by readers
    /// as [`crate::annotation`] says (never a field of its own).
    fn insert(
        &mut self,
        collocation: &CollocationKey,
        element: &ElementKey,
        location: &FieldLocation,
    ) -> Result<()>;

    /// Make every inserted entry durable and visible, atomically.
    fn flush(&mut self) -> Result<()>;

    /// Optional, before the store's flush: write ahead what the next
    /// [`CatalogueWriter::flush`] will publish, where it stays invisible
    /// until then, so that the store's sync may carry it to the disk along
    /// with the fields. POSIX writes its index blocks here and starts their
    /// write-back: the data file's `fdatasync` then commits them in the same
    /// journal commit, and the index's own sync finds nothing left to do
    /// (one commit per flush fewer, `docs/benchmarks.md`). `flush` must
    /// work without it (it writes ahead itself then). A failure leaves
    /// nothing visible, as a failed `flush` whose
    /// [`CatalogueWriter::last_flush_invisible`] is `true`; a writer
    /// dropped after it and before `flush` publishes nothing of it. The
    /// default does nothing.
    ///
    /// # Errors
    /// The backend's write errors; the dataset locked against archive.
    fn prepare_flush(&mut self) -> Result<()> {
        Ok(())
    }

    /// After a [`CatalogueWriter::flush`] that failed: whether it made
    /// nothing visible, for certain — it failed before the step that makes
    /// entries visible, or that step failed whole (POSIX: the `toc` append
    /// failed or came back short). `false` when unknown (the step may have
    /// succeeded, e.g. its sync failed): the handle then keeps the store's
    /// bytes, which entries may point at. When `true` the handle lets the
    /// store give back the failed fields' space ([`StoreWriter::abandon`](crate::store::StoreWriter::abandon)).
    fn last_flush_invisible(&self) -> bool;

    /// The text of the schema in force when the dataset was created, as
    /// stored with it, if the backend keeps it and reads it back. Callers
    /// split keys below level 1 with it, as FDB5 does, so that a dataset
    /// keeps its layout when the configured schema changes. `None`: the
    /// backend keeps none (the caller's schema applies).
    fn schema_text(&self) -> Option<Arc<str>>;
}

/// A collocation of a dataset and the values its elements have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollocationInfo {
    /// The collocation key.
    pub key: CollocationKey,
    /// Values per element keyword, over all its entries.
    pub axes: Axes,
}

/// A read view of one dataset; shared between threads.
pub trait DatasetReader: Send + Sync + Debug {
    /// Catch up with what writers flushed since the last refresh. Readers
    /// follow the catalogue incrementally: nothing already seen is re-read.
    fn refresh(&self) -> Result<()>;

    /// Visit the collocations seen so far, in the order they were first
    /// named, each with its axes, by reference (no index is opened):
    /// [`DatasetReaderExt::collocations`] copies them; a walk that looks
    /// again (`watch`'s looks) does not (copying every axis of a dataset
    /// with thousands of steps per look cost a third of a publisher's CPU,
    /// bench/aviso). `visit` must not call back into this reader (an
    /// implementation may hold its lock meanwhile).
    ///
    /// # Errors
    /// The backend's errors reading what it knows.
    fn visit_collocations(&self, visit: &mut dyn FnMut(&CollocationKey, &Axes)) -> Result<()>;

    /// As [`CatalogueWriter::schema_text`]: the schema the dataset was
    /// created under, which splits and matches its keys below level 1.
    /// `None`: the backend keeps none (the caller's schema applies).
    fn schema_text(&self) -> Option<Arc<str>>;

    /// The newest location of one element.
    ///
    /// # Errors
    /// `Corrupt`, naming the damaged place, when damage this reader met
    /// (a log record it could not read, an index block) may hold a newer
    /// version of the element than the one found, or the element when
    /// nothing was found: never an older answer, or none, in silence.
    fn lookup(
        &self,
        collocation: &CollocationKey,
        element: &ElementKey,
    ) -> Result<Option<FieldLocation>>;

    /// How far this reader has followed the dataset's log: a number that
    /// only grows, in one process, across every reader and every
    /// incarnation of the dataset (wiped and created anew). `0` means the
    /// backend keeps no positions, and [`DatasetReader::scan_since`] scans
    /// everything.
    fn log_position(&self) -> u64;

    /// Visit the entries of a collocation, newest first, masked (older)
    /// entries included, until `visit` returns `false`. A backend may skip
    /// groups of entries (index blocks) whose axes `admits` refuses:
    /// `admits` is given the values each element keyword takes in the
    /// group, and refuses only groups that cannot hold an entry the caller
    /// wants (a backend without such groups scans everything). It may skip
    /// what it had applied by `position` (a
    /// [`DatasetReader::log_position`] of this reader; `0` for everything):
    /// what `watch` looks at when it looks again. It may visit more (a
    /// backend without positions visits everything); never less.
    /// [`DatasetReaderExt`] scans everything.
    fn scan_since(
        &self,
        collocation: &CollocationKey,
        position: u64,
        admits: &dyn Fn(&Axes) -> bool,
        visit: &mut dyn FnMut(&ElementKey, &FieldLocation) -> bool,
    ) -> Result<()>;

    /// The operations the dataset is locked against, as of the last
    /// refresh (none for a backend without
    /// [`Catalogue::maintenance`]).
    fn locks(&self) -> Locks;

    /// What this reader met in its dataset that status and maintenance
    /// report ([`DatasetCondition`]), with, given `collocation`, the damage
    /// of that collocation's index blocks it has read.
    fn condition(&self, collocation: Option<&CollocationKey>) -> DatasetCondition;
}

/// What a reader met in its dataset that status and maintenance report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DatasetCondition {
    /// Damage met and stepped over, each naming the file or object and the
    /// offset: of the dataset's log (records that could not be read), and
    /// of the asked collocation's index blocks read so far. Damage costs
    /// only what it damaged: the rest of the dataset stays readable, and a
    /// lookup of a key that a damaged block may hold in a newer version
    /// than the one found is an error rather than an older answer.
    pub damage: Vec<String>,
    /// Appends cut short that were stepped over (a full disk): the flushes
    /// they belonged to failed and were never visible, so readers lose
    /// nothing and maintenance goes on (status reports them). Only a record
    /// cut short by truncating the log, which nothing in fieldstore does,
    /// would look the same.
    pub torn: Vec<String>,
    /// Damaged records of the log recovered whole (what they said is
    /// proven by what they name, e.g. index blocks that check and match
    /// them): nothing is lost, but the damage is there, so status reports it
    /// and purge leaves the dataset alone.
    pub recovered: Vec<String>,
    /// Store units that a collocation wipe recorded as to be removed and
    /// that no reclaim has recorded as removed yet (a wipe interrupted, or a
    /// unit a live writer still used).
    pub pending_units: Vec<String>,
    /// What the damaged regions of the log may have named: a wipe of
    /// collocations must not miss what they hold, nor remove a unit they
    /// point into. Shared: a reader answers it once per follow of its log,
    /// and a caller may ask the condition of every collocation in turn.
    pub may_name: std::sync::Arc<DamageMayName>,
}

/// What the damaged regions of a dataset's log may have named, as far as
/// the backend can tell from what outlives a damaged record (the index
/// blocks a FLUSH record names are written before it, and stay).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum DamageMayName {
    /// The log has no damaged region.
    #[default]
    Nothing,
    /// At most these collocations, with entries in at most these store
    /// units (their URIs): those of the index blocks no record read names.
    Only {
        /// Collocations the damaged regions may have named.
        collocations: BTreeSet<CollocationKey>,
        /// Units the entries of their blocks point into.
        units: BTreeSet<String>,
    },
    /// Anything: the damaged records took their blocks with them (blocks
    /// inline in the record), or what may be theirs could not be read.
    Anything,
}

impl DamageMayName {
    /// Whether the damage may have named `collocation`.
    pub fn may_hold(&self, collocation: &CollocationKey) -> bool {
        match self {
            DamageMayName::Nothing => false,
            DamageMayName::Only { collocations, .. } => collocations.contains(collocation),
            DamageMayName::Anything => true,
        }
    }
}

/// Copies and scans of everything, for any [`DatasetReader`].
pub trait DatasetReaderExt: DatasetReader {
    /// The collocations seen so far, with their axes, in the order they
    /// were first named.
    ///
    /// # Errors
    /// As [`DatasetReader::visit_collocations`].
    fn collocations(&self) -> Result<Vec<CollocationInfo>> {
        let mut out = Vec::new();
        self.visit_collocations(&mut |key, axes| {
            out.push(CollocationInfo {
                key: key.clone(),
                axes: axes.clone(),
            })
        })?;
        Ok(out)
    }

    /// Visit the entries of a collocation, newest first, masked (older)
    /// entries included; `visit` returns `false` to stop.
    ///
    /// # Errors
    /// As [`DatasetReader::scan_since`].
    fn scan(
        &self,
        collocation: &CollocationKey,
        visit: &mut dyn FnMut(&ElementKey, &FieldLocation) -> bool,
    ) -> Result<()> {
        self.scan_since(collocation, 0, &|_| true, visit)
    }
}

impl<R: DatasetReader + ?Sized> DatasetReaderExt for R {}

/// [`DatasetReaderExt::scan`] over a collocation's index blocks as a backend
/// holds them: `blocks` oldest first, each block's entries in the order
/// they were written (by `record::block::order_block`, since blocks are written for FDB5's
/// list order). Visits the newest entry first (the last block's last) and
/// skips entries whose unit (`FieldLocation::uri`) is in `removed` (units a
/// reclaim removed, left out until the index forgets them), until `visit`
/// returns `false`. Annotations ([`FieldLocation::annotates`]) are not
/// visited: each gives its extension to the older entry it annotates
/// ([`crate::annotation`]), and one that annotates nothing is dropped.
pub fn visit_newest_first<'a>(
    blocks: impl DoubleEndedIterator<Item = &'a [(ElementKey, FieldLocation)]>,
    removed: &HashSet<Arc<str>>,
    visit: &mut dyn FnMut(&ElementKey, &FieldLocation) -> bool,
) {
    let mut pending = crate::annotation::Pending::default();
    for block in blocks.rev() {
        for (k, l) in block.iter().rev() {
            if !removed.is_empty() && removed.contains(&l.uri) {
                continue;
            }
            if l.annotates {
                pending.hold(k, l);
                continue;
            }
            if !visit(k, &pending.apply(k, l)) {
                return;
            }
        }
    }
}
