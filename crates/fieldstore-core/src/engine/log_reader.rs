//! The one [`DatasetReader`] of the log-structured catalogues: a
//! [`LogReader`] holds what a reader knows of a dataset (a [`Log`]) and
//! answers every reader call from it; the medium the log lives on (POSIX
//! files, RADOS objects, DAOS KVs) supplies only what differs, as a
//! [`LogMedium`]: how to read the records past where the reader stopped, and
//! how to read the blocks the records name (when to read them, and what a
//! block that does not read means, is the reader's).
//!
//! # Locking
//! A reader is shared between threads. Its [`Log`] sits behind one
//! read-write lock: lookups of a collocation whose blocks are all loaded
//! and merged, and scans whose blocks are all loaded, run together under
//! the shared lock; catching up ([`DatasetReader::refresh`]) and loading
//! blocks take it exclusively. The lock is let go before a scan visits
//! entries, since `visit` may call back into the reader.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::{Block, BlockSlot, DatasetIndex};
use crate::catalogue::{visit_newest_first, Axes, DamageMayName, DatasetCondition, DatasetReader};
use crate::error::{Error, ErrorKind, Result};
use crate::key::{CollocationKey, ElementKey};
use crate::location::FieldLocation;
use crate::maintenance::Locks;

/// What a reader knows of one dataset: the index its log's records built,
/// where the medium stopped reading (`cursor`), and what it stepped over.
#[derive(Debug)]
pub struct Log<P, C> {
    /// The schema the dataset was created under; empty when unknown (the
    /// dataset is gone, or the medium keeps it elsewhere).
    pub schema: Arc<str>,
    /// What the records read so far say.
    pub index: DatasetIndex<P>,
    /// The medium's own reading state: how far it read, open handles.
    pub cursor: C,
    /// Appends cut short that were stepped over ([`DatasetCondition::torn`]).
    pub torn: Vec<String>,
    /// Damaged records recovered whole ([`DatasetCondition::recovered`]).
    pub recovered: Vec<String>,
    /// Damage at the end of the log with nothing readable after it yet: it
    /// may be the newest record of anything, so every lookup it may change
    /// fails, and the medium looks at it again at the next refresh.
    pub damage_at_end: Option<String>,
    /// [`LogMedium::damage_may_name`]'s answer since the reader last
    /// followed the log, forgotten at each follow: blocks can come whose
    /// records the reader never reads (flushes appended below where it
    /// stopped, after its log was cut there), so an answer kept across
    /// follows could be too small; within one, the reader's view is as of
    /// that follow.
    pub may_name: Option<Arc<DamageMayName>>,
    /// Which log this is: every [`Log::new`] takes the next number, so a
    /// reader can tell that a follow replaced its log (the dataset moved,
    /// was wiped or created anew) from one that read on in the same log.
    generation: u64,
}

impl<P, C> Log<P, C> {
    /// A log read up to `cursor`, created under `schema`, nothing known.
    pub fn new(schema: Arc<str>, cursor: C) -> Log<P, C> {
        Log {
            schema,
            index: DatasetIndex::default(),
            cursor,
            torn: Vec::new(),
            recovered: Vec::new(),
            damage_at_end: None,
            may_name: None,
            generation: GENERATIONS.fetch_add(1, Ordering::Relaxed),
        }
    }
}

/// The next [`Log::generation`].
static GENERATIONS: AtomicU64 = AtomicU64::new(0);

/// The [`Log`] of a medium.
pub type LogOf<M> = Log<<M as LogMedium>::Place, <M as LogMedium>::Cursor>;

/// A block's entries as [`LogMedium::read_blocks`] answers them.
pub type Entries = Result<Vec<(ElementKey, FieldLocation)>>;

/// How often a reader reads blocks that are missing from a log that stayed
/// where it was before it calls them damaged, catching up in between (a
/// block's file may be gone because of a purge or wipe the reader has not
/// read yet). Reads of a log that a follow then replaced (the dataset
/// moved, or was wiped or created anew, meanwhile) do not count: a dataset
/// moved back and forth faster than a reader reads it is not damaged.
const READS_OF_MISSING: usize = 3;

/// How often a reader reads missing blocks in all, however often its log
/// was replaced in between: the bound on its wait, after which what is
/// still missing is damaged (a move takes far longer than a read).
const READS_OF_MISSING_AT_MOST: usize = 16;

/// What a medium gives the engine's reader.
///
/// # Contract
/// - [`LogMedium::follow`] reads the records past `log.cursor` and tells
///   `log.index` what they say, each once, in log order. A dataset wiped or
///   created anew replaces the whole `log` (`*log = Log::new(..)`). A region
///   that cannot be read is damage ([`DatasetIndex::damaged_region`]), never
///   skipped in silence; reading goes on after it where the medium can
///   tell where the next record starts.
/// - [`LogMedium::read_blocks`] reads the blocks at the places it is given,
///   one answer a place, in order. Media whose blocks arrive with their
///   records are never asked.
/// - Every method is called with the reader's lock held exclusively.
pub trait LogMedium: Send + Sync + std::fmt::Debug + 'static {
    /// The medium's name for where a block lives.
    type Place: Clone + std::fmt::Debug + Send + Sync + 'static;
    /// The medium's reading state.
    type Cursor: std::fmt::Debug + Send + Sync + 'static;

    /// Catch up with the records appended since `log.cursor`.
    ///
    /// # Errors
    /// The medium's I/O errors; `Corrupt` only for what makes the whole
    /// log unreadable.
    fn follow(&self, log: &mut LogOf<Self>) -> Result<()>;

    /// The entries of the blocks at `places`, one answer a place, in
    /// order: `Corrupt` for a block that does not read whole (the others
    /// stay readable), `NotFound` for one whose file or object is missing
    /// (the reader catches up and asks again: a wipe or purge it has not
    /// read yet, or a move; still missing then, the block is damaged).
    ///
    /// # Errors
    /// The medium's other I/O errors, which fail the lookup.
    fn read_blocks(&self, log: &mut LogOf<Self>, places: &[Self::Place]) -> Result<Vec<Entries>> {
        let _ = (log, places);
        Err(Error::internal(
            "this medium's blocks arrive with their records",
        ))
    }

    /// What the damage met so far (a damaged region, or damage at the end)
    /// may have named: a medium whose blocks outlive a damaged record (a
    /// FLUSH record names blocks written before it) answers with the
    /// collocations and units of the blocks no record read names; the
    /// default, [`DamageMayName::Anything`], fails every lookup of a
    /// collocation the reader does not know, and every wipe of
    /// collocations, while damage is known. Asked only while there is
    /// damage, and once after each follow ([`Log::may_name`]).
    ///
    /// # Errors
    /// The medium's I/O errors.
    fn damage_may_name(&self, log: &mut LogOf<Self>) -> Result<DamageMayName> {
        let _ = log;
        Ok(DamageMayName::Anything)
    }

    /// The operations the dataset is locked against: its CONTROL records',
    /// and what else the medium locks (a POSIX root's own settings).
    fn locks(&self, log: &LogOf<Self>) -> Locks {
        log.index.locks()
    }

    /// The schema the dataset was created under, if known.
    fn schema_text(&self, log: &LogOf<Self>) -> Option<Arc<str>> {
        Some(log.schema.clone()).filter(|s| !s.is_empty())
    }
}

/// A read view of one dataset of a log-structured catalogue, shared between
/// threads: the [`DatasetReader`] of every such catalogue.
#[derive(Debug)]
pub struct LogReader<M: LogMedium> {
    medium: M,
    log: RwLock<LogOf<M>>,
}

impl<M: LogMedium> LogReader<M> {
    /// A reader of `medium` that starts at `log` and has caught up once.
    ///
    /// # Errors
    /// As [`LogMedium::follow`].
    pub fn open(medium: M, log: LogOf<M>) -> Result<LogReader<M>> {
        let reader = LogReader {
            medium,
            log: RwLock::new(log),
        };
        reader.refresh()?;
        Ok(reader)
    }

    /// The medium.
    pub fn medium(&self) -> &M {
        &self.medium
    }

    /// The log, shared.
    pub fn read(&self) -> RwLockReadGuard<'_, LogOf<M>> {
        self.log.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The log, exclusively: for maintenance that reads it as a whole.
    pub fn write(&self) -> RwLockWriteGuard<'_, LogOf<M>> {
        self.log.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The log with every block of every collocation loaded (for reclaim,
    /// which must see every entry).
    ///
    /// # Errors
    /// As [`LogMedium::read_blocks`].
    pub fn load_all(&self) -> Result<RwLockWriteGuard<'_, LogOf<M>>> {
        let mut log = self.write();
        let collocations = log.index.order().to_vec();
        for c in &collocations {
            self.load(&mut log, c, &|_| true)?;
        }
        Ok(log)
    }

    /// What the damage met so far may have named
    /// ([`LogMedium::damage_may_name`]), asked once after each follow
    /// ([`Log::may_name`]).
    ///
    /// # Errors
    /// As [`LogMedium::damage_may_name`].
    fn may_name(&self, log: &mut LogOf<M>) -> Result<Arc<DamageMayName>> {
        if !log.index.has_damaged_regions() && log.damage_at_end.is_none() {
            return Ok(Arc::default());
        }
        if let Some(names) = &log.may_name {
            return Ok(names.clone());
        }
        let names = Arc::new(self.medium.damage_may_name(log)?);
        Ok(log.may_name.insert(names).clone())
    }

    /// Read the log past where the reader stopped
    /// ([`LogMedium::follow`]), forgetting what damage may name.
    ///
    /// # Errors
    /// As [`LogMedium::follow`].
    fn follow(&self, log: &mut LogOf<M>) -> Result<()> {
        log.may_name = None;
        self.medium.follow(log)
    }

    /// Load the blocks of `collocation` that `want` selects and are not
    /// loaded yet ([`DatasetIndex::to_load`]). A block that does not read
    /// whole is loaded as damaged, so that the others stay readable; one
    /// that is missing makes the reader catch up and read again, and is
    /// damaged only if it is still missing after [`READS_OF_MISSING`]
    /// reads of a log that stayed where it was, or
    /// [`READS_OF_MISSING_AT_MOST`] in all (its file or object removed
    /// behind fieldstore's back).
    ///
    /// # Errors
    /// As [`LogMedium::read_blocks`] and [`LogMedium::follow`].
    fn load(
        &self,
        log: &mut LogOf<M>,
        collocation: &CollocationKey,
        want: &dyn Fn(&BlockSlot<M::Place>) -> bool,
    ) -> Result<()> {
        let mut unreplaced = 0;
        for read in 1..=READS_OF_MISSING_AT_MOST {
            let todo = log.index.to_load(collocation, want);
            if todo.is_empty() {
                return Ok(());
            }
            let places: Vec<M::Place> = todo.iter().map(|(_, p)| p.clone()).collect();
            let answers = self.medium.read_blocks(log, &places)?;
            let (asked, answered) = (places.len(), answers.len());
            if asked != answered {
                return Err(Error::internal(format!(
                    "asked for {asked} blocks, the medium answered {answered}"
                )));
            }
            let last = unreplaced + 1 == READS_OF_MISSING || read == READS_OF_MISSING_AT_MOST;
            let missing = |a: &Entries| matches!(a, Err(e) if e.kind() == ErrorKind::NotFound);
            if !last && answers.iter().any(missing) {
                let generation = log.generation;
                self.follow(log)?;
                if log.generation == generation {
                    unreplaced += 1;
                }
                continue;
            }
            for ((i, _), answer) in todo.into_iter().zip(answers) {
                let block = match answer {
                    Ok(entries) => Block::new(entries),
                    Err(e) if e.kind() == ErrorKind::Corrupt => Block::damaged(e.to_string()),
                    Err(e) if e.kind() == ErrorKind::NotFound => Block::damaged(format!(
                        "{e}: a block the log names is missing, though the reader caught up"
                    )),
                    Err(e) => return Err(e),
                };
                log.index.set_loaded(collocation, i, block);
            }
            return Ok(());
        }
        Ok(())
    }
}

impl<M: LogMedium> DatasetReader for LogReader<M> {
    fn refresh(&self) -> Result<()> {
        self.follow(&mut self.write())
    }

    fn visit_collocations(&self, visit: &mut dyn FnMut(&CollocationKey, &Axes)) -> Result<()> {
        self.read().index.visit_collocations(visit);
        Ok(())
    }

    fn schema_text(&self) -> Option<Arc<str>> {
        self.medium.schema_text(&self.read())
    }

    fn lookup(
        &self,
        collocation: &CollocationKey,
        element: &ElementKey,
    ) -> Result<Option<FieldLocation>> {
        {
            // Blocks loaded and merged, and nothing for the medium to say:
            // answer under the shared lock.
            let log = self.read();
            let known = log.index.collocation(collocation).is_some();
            if log.damage_at_end.is_none()
                && log.index.is_merged(collocation)
                && (known || !log.index.has_damaged_regions())
            {
                return log.index.lookup_merged(collocation, element, None);
            }
        }
        let mut log = self.write();
        self.load(&mut log, collocation, &|_| true)?;
        let known = log.index.collocation(collocation).is_some();
        let may_hold = known || self.may_name(&mut log)?.may_hold(collocation);
        let found = log
            .index
            .lookup(collocation, element, Some(&mut || may_hold))?;
        if let Some(problem) = &log.damage_at_end {
            if found.is_some() || known || may_hold {
                return Err(super::may_hold_newest(
                    problem,
                    super::DAMAGED_LOG,
                    collocation,
                    element,
                ));
            }
        }
        Ok(found)
    }

    fn log_position(&self) -> u64 {
        self.read().index.log_position()
    }

    fn scan_since(
        &self,
        collocation: &CollocationKey,
        position: u64,
        admits: &dyn Fn(&Axes) -> bool,
        visit: &mut dyn FnMut(&ElementKey, &FieldLocation) -> bool,
    ) -> Result<()> {
        let want = |b: &BlockSlot<M::Place>| b.position > position && admits(&b.axes);
        let shared = {
            let log = self.read();
            log.index
                .to_load(collocation, &want)
                .is_empty()
                .then(|| log.index.blocks_where(collocation, &want))
        };
        let (blocks, removed) = match shared {
            Some(found) => found,
            None => {
                let mut log = self.write();
                self.load(&mut log, collocation, &want)?;
                log.index.blocks_where(collocation, &want)
            }
        };
        // The lock is let go: `visit` may call back into this reader.
        visit_newest_first(blocks.iter().map(|b| b.entries.as_slice()), &removed, visit);
        Ok(())
    }

    fn locks(&self) -> Locks {
        self.medium.locks(&self.read())
    }

    /// `may_name` is [`DamageMayName::Anything`] when what the damage may
    /// name could not be read (an I/O error).
    fn condition(&self, collocation: Option<&CollocationKey>) -> DatasetCondition {
        let mut log = self.write();
        let may_name = self
            .may_name(&mut log)
            .unwrap_or_else(|_| Arc::new(DamageMayName::Anything));
        let mut damage = log.index.damage(collocation);
        damage.extend(log.damage_at_end.iter().cloned());
        DatasetCondition {
            damage,
            torn: log.torn.clone(),
            recovered: log.recovered.clone(),
            pending_units: log.index.pending_units(),
            may_name,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// A dataset of one block whose reads miss `misses` times; each follow
    /// after a miss moves it (replaces the reader's log) while `moves`
    /// lasts, and leaves it where it was after.
    #[derive(Debug)]
    struct Moving {
        misses: Mutex<usize>,
        moves: Mutex<usize>,
        reads: Mutex<usize>,
    }

    impl Moving {
        fn new(misses: usize, moves: usize) -> LogReader<Moving> {
            let medium = Moving {
                misses: Mutex::new(misses),
                moves: Mutex::new(moves),
                reads: Mutex::new(0),
            };
            LogReader::open(medium, Log::new(Arc::from(""), ())).unwrap()
        }
    }

    fn collocation() -> CollocationKey {
        CollocationKey("type=fc".parse().unwrap())
    }

    impl LogMedium for Moving {
        type Place = u32;
        type Cursor = ();

        fn follow(&self, log: &mut LogOf<Self>) -> Result<()> {
            let known = log.index.collocation(&collocation()).is_some();
            let mut moves = self.moves.lock().unwrap();
            if known && *moves > 0 {
                *moves -= 1;
                *log = Log::new(Arc::from(""), ());
            }
            if log.index.collocation(&collocation()).is_none() {
                log.index.add_block(collocation(), 0, Axes::new());
            }
            Ok(())
        }

        fn read_blocks(&self, _: &mut LogOf<Self>, places: &[u32]) -> Result<Vec<Entries>> {
            *self.reads.lock().unwrap() += 1;
            let mut misses = self.misses.lock().unwrap();
            Ok(places
                .iter()
                .map(|_| {
                    if *misses > 0 {
                        *misses -= 1;
                        return Err(Error::new(ErrorKind::NotFound, "index file gone"));
                    }
                    let key = ElementKey("step=0".parse().unwrap());
                    Ok(vec![(key, FieldLocation::new("file:///d", 0, 1))])
                })
                .collect())
        }
    }

    fn lookup(reader: &LogReader<Moving>) -> Result<Option<FieldLocation>> {
        reader.lookup(&collocation(), &ElementKey("step=0".parse().unwrap()))
    }

    fn reads(reader: &LogReader<Moving>) -> usize {
        *reader.medium().reads.lock().unwrap()
    }

    /// A block missing because its dataset moved between each read and
    /// the next (a storm of moves: a `move_races` test once saw three in
    /// a row) is read again where the dataset is now, not called damaged.
    #[test]
    fn a_dataset_moved_while_its_blocks_are_read_is_not_damaged() {
        let reader = Moving::new(5, 5);
        assert_eq!(lookup(&reader).unwrap().unwrap().offset, 0);
        assert_eq!(reads(&reader), 6);
    }

    /// Missing from a log that stayed where it was: damaged after
    /// [`READS_OF_MISSING`] reads; from one that never stops moving: after
    /// [`READS_OF_MISSING_AT_MOST`], so the wait is bounded.
    #[test]
    fn a_block_still_missing_is_damaged_after_a_bounded_number_of_reads() {
        let reader = Moving::new(usize::MAX, 0);
        let e = lookup(&reader).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
        assert!(e.to_string().contains("though the reader caught up"), "{e}");
        assert_eq!(reads(&reader), READS_OF_MISSING);

        let reader = Moving::new(usize::MAX, usize::MAX);
        let e = lookup(&reader).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
        assert_eq!(reads(&reader), READS_OF_MISSING_AT_MOST);
    }
}
