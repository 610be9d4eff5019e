//! The catalogue engine's reader side, shared by the log-structured
//! catalogues: what a reader knows of one dataset after replaying its log
//! (FLUSH, WIPE, RECLAIM, CONTROL records and damage), whatever the medium
//! the records and blocks live on (POSIX files, RADOS objects, DAOS KVs).
//!
//! Every such catalogue's reader is one [`LogReader`], the one
//! `DatasetReader` implementation of the log-structured catalogues; a
//! medium gives it only what differs ([`LogMedium`]): it reads its records,
//! decodes them, and tells a [`DatasetIndex`] what they say
//! ([`DatasetIndex::add_block`], [`DatasetIndex::wipe`],
//! [`DatasetIndex::reclaim`], [`DatasetIndex::damaged_region`], …); it loads
//! the blocks the index asks for ([`DatasetIndex::to_load`],
//! [`DatasetIndex::set_loaded`]). The index answers lookups and scans with
//! the same guarantees on every backend:
//!
//! - **Damage costs only what it damaged.** A block that cannot be read is
//!   kept as damaged; the others stay readable. A region of the log that
//!   could not be read may have been any record, so a lookup whose answer
//!   it may change (an entry found older than the region, or none) fails
//!   with `Corrupt` naming the damage, never an older answer in silence.
//! - **Blocks are pruned by their axes**: scans skip blocks that cannot
//!   hold what the caller wants, without loading them.
//! - **Positions**: each block gets a position from one process-wide
//!   counter when the reader learns of it, so `watch` looks only at what is
//!   new ([`DatasetIndex::log_position`], [`DatasetIndex::blocks_where`]).
//!
//! `P` is the medium's name for where a block lives (a file and offset, a
//! segment and omap key); blocks that arrive with their entries (DAOS
//! inline blocks) are added loaded.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::catalogue::Axes;
use crate::error::{Error, Result};
use crate::key::{CollocationKey, ElementKey};
use crate::location::FieldLocation;
use crate::maintenance::Locks;
use crate::record::maintenance::MaintenanceRecord;

mod dataset_names;
pub mod framed;
pub mod log_catalogue;
pub use dataset_names::{check_held, cut_long_name, stored_key, NotDatasets};
mod log_reader;
pub use log_reader::{Entries, Log, LogMedium, LogOf, LogReader};
pub mod slot_catalogue;
pub mod slots;

/// How long a reader that reads nothing new trusts the end of its log:
/// its next refresh after that looks past the end as its first did (a
/// slot log's next slots and tail hint, a byte log's end mark or record
/// count). The log's end changes behind fieldstore's back only by damage,
/// but damage right where an idle reader stopped (a slot removed there, a
/// log cut back to it or below) would otherwise leave that reader
/// answering older versions with success for good. Looking costs a request
/// or two, or a system call, at most once a second per reader.
pub const LOOK_AGAIN: std::time::Duration = std::time::Duration::from_secs(1);

/// When a reader last looked past the end of its log (never, by default).
#[derive(Debug, Default, Clone, Copy)]
pub struct EndLook(Option<std::time::Instant>);

impl EndLook {
    /// Whether a refresh that reads nothing new looks past the end again:
    /// never looked, or [`LOOK_AGAIN`] ago.
    pub fn due(&self) -> bool {
        self.0.is_none_or(|t| t.elapsed() >= LOOK_AGAIN)
    }

    /// The reader looks now.
    pub fn now(&mut self) {
        self.0 = Some(std::time::Instant::now());
    }
}

/// Units (store URIs) a RECLAIM record removed: their entries are skipped.
pub type RemovedUnits = Arc<HashSet<Arc<str>>>;

/// The positions of blocks in readers' logs: one counter for the process,
/// so that positions only grow across readers and across incarnations of a
/// dataset (a reader that reopens a dataset created anew goes on counting).
static POSITIONS: AtomicU64 = AtomicU64::new(0);

/// The next position (never 0: 0 means "before everything").
pub fn next_position() -> u64 {
    POSITIONS.fetch_add(1, Ordering::Relaxed) + 1
}

/// A loaded index block: its entries, oldest first; or, when it could not
/// be read, no entries and what is wrong.
#[derive(Debug, Default)]
pub struct Block {
    /// The entries, in the order they were written.
    pub entries: Vec<(ElementKey, FieldLocation)>,
    /// What is wrong, for a block that could not be read.
    pub damage: Option<String>,
}

impl Block {
    /// A block read whole.
    pub fn new(entries: Vec<(ElementKey, FieldLocation)>) -> Block {
        Block {
            entries,
            damage: None,
        }
    }

    /// A block that could not be read: no entries, and the problem.
    pub fn damaged(problem: String) -> Block {
        Block {
            entries: Vec::new(),
            damage: Some(problem),
        }
    }
}

/// A block a record named: where it lives, when the reader learnt of it,
/// and the values each element keyword takes in it.
#[derive(Debug, Clone)]
pub struct BlockSlot<P> {
    /// The medium's name for its place.
    pub place: P,
    /// When this reader learnt of it ([`next_position`]).
    pub position: u64,
    /// The values each element keyword takes in the block.
    pub axes: Axes,
}

/// One collocation as a reader knows it.
#[derive(Debug)]
pub struct Collocation<P> {
    axes: Axes,
    blocks: Vec<BlockSlot<P>>,
    /// `loaded[i]` holds the entries of `blocks[i]` once read.
    loaded: Vec<Option<Arc<Block>>>,
    /// Newest location per element over `blocks[..merged]` (all loaded),
    /// with the index of its block: a lookup costs one hash probe however
    /// many flushes there were.
    newest: HashMap<ElementKey, (usize, FieldLocation)>,
    /// Indices of damaged blocks among `blocks[..merged]`.
    damaged: Vec<usize>,
    merged: usize,
}

impl<P> Default for Collocation<P> {
    fn default() -> Self {
        Collocation {
            axes: Axes::new(),
            blocks: Vec::new(),
            loaded: Vec::new(),
            newest: HashMap::new(),
            damaged: Vec::new(),
            merged: 0,
        }
    }
}

impl<P> Collocation<P> {
    /// The blocks, oldest first.
    pub fn blocks(&self) -> &[BlockSlot<P>] {
        &self.blocks
    }
}

/// A collocation's key, its blocks, and what is loaded of them
/// ([`DatasetIndex::all_blocks`]).
pub type CollocationBlocks<'a, P> = (
    &'a CollocationKey,
    &'a [BlockSlot<P>],
    &'a [Option<Arc<Block>>],
);

/// What a reader knows of one dataset: everything its log said so far.
#[derive(Debug)]
pub struct DatasetIndex<P> {
    order: Vec<CollocationKey>,
    collocations: HashMap<CollocationKey, Collocation<P>>,
    locks: Locks,
    removed: RemovedUnits,
    /// Units WIPE records left to remove, not yet reclaimed.
    pending: BTreeSet<String>,
    /// Damage of the log stepped over, for reports.
    damage: Vec<String>,
    /// Damaged regions of the log: their position among the blocks, their
    /// place in the medium's log, and what is wrong.
    regions: Vec<(u64, u64, String)>,
    /// The position and place in the log of the last WIPE of each
    /// collocation.
    wiped_at: HashMap<CollocationKey, (u64, u64)>,
}

impl<P> Default for DatasetIndex<P> {
    fn default() -> Self {
        DatasetIndex {
            order: Vec::new(),
            collocations: HashMap::new(),
            locks: Locks::NONE,
            removed: Arc::default(),
            pending: BTreeSet::new(),
            damage: Vec::new(),
            regions: Vec::new(),
            wiped_at: HashMap::new(),
        }
    }
}

impl<P: Clone> DatasetIndex<P> {
    /// A FLUSH record named a block of `collocation` at `place` whose
    /// elements take the values `axes`. Returns its position.
    pub fn add_block(&mut self, collocation: CollocationKey, place: P, axes: Axes) -> u64 {
        let position = next_position();
        let c = match self.collocations.get_mut(&collocation) {
            Some(c) => c,
            None => {
                self.order.push(collocation.clone());
                self.collocations.entry(collocation).or_default()
            }
        };
        for (kw, values) in &axes {
            let set = c.axes.entry(kw.clone()).or_default();
            set.extend(values.iter().cloned());
        }
        c.blocks.push(BlockSlot {
            place,
            position,
            axes,
        });
        c.loaded.push(None);
        position
    }

    /// As [`DatasetIndex::add_block`], for a block that came with its
    /// entries (nothing to load).
    pub fn add_loaded_block(
        &mut self,
        collocation: CollocationKey,
        place: P,
        axes: Axes,
        entries: Vec<(ElementKey, FieldLocation)>,
    ) -> u64 {
        let position = self.add_block(collocation.clone(), place, axes);
        if let Some(slot) = self
            .collocations
            .get_mut(&collocation)
            .and_then(|c| c.loaded.last_mut())
        {
            *slot = Some(Arc::new(Block::new(entries)));
        }
        position
    }

    /// A WIPE record at `at` in the log: `collocations` are hidden,
    /// `units` left to remove.
    pub fn wipe(&mut self, at: u64, collocations: &[CollocationKey], units: Vec<String>) {
        let gone: HashSet<&CollocationKey> = collocations.iter().collect();
        let position = next_position();
        let wiped = collocations.iter().map(|c| (c.clone(), (position, at)));
        self.wiped_at.extend(wiped);
        self.order.retain(|c| !gone.contains(c));
        self.collocations.retain(|c, _| !gone.contains(c));
        let left = units
            .into_iter()
            .filter(|u| !self.removed.contains(u.as_str()));
        self.pending.extend(left);
    }

    /// A RECLAIM record: the store removed `units`. Blocks that `dropped`
    /// says lived only in removed places (POSIX: index files reclaimed) and
    /// are not loaded are forgotten (loaded ones stay; scans filter their
    /// entries).
    pub fn reclaim(&mut self, units: Vec<String>, dropped: &dyn Fn(&P) -> bool) {
        let removed = Arc::make_mut(&mut self.removed);
        for u in units {
            self.pending.remove(&u);
            removed.insert(Arc::from(u));
        }
        for c in self.collocations.values_mut() {
            if c.merged > 0 {
                // Merged blocks keep their indices for `newest`.
                continue;
            }
            let blocks = std::mem::take(&mut c.blocks);
            let loaded = std::mem::take(&mut c.loaded);
            for (b, l) in blocks.into_iter().zip(loaded) {
                if l.is_some() || !dropped(&b.place) {
                    c.blocks.push(b);
                    c.loaded.push(l);
                }
            }
        }
    }

    /// A maintenance record at `at` in the log: [`DatasetIndex::wipe`],
    /// [`DatasetIndex::reclaim`], or a CONTROL's locks. `unit_uri`
    /// turns the units it names, as the medium names them, into the URIs
    /// locations carry (the identity where they are URIs); `dropped` is as
    /// for [`DatasetIndex::reclaim`].
    pub fn apply_maintenance(
        &mut self,
        at: u64,
        record: MaintenanceRecord,
        unit_uri: &dyn Fn(&str) -> String,
        dropped: &dyn Fn(&P) -> bool,
    ) {
        let uris = |units: Vec<String>| units.iter().map(|u| unit_uri(u)).collect();
        match record {
            MaintenanceRecord::Wipe(w) => self.wipe(at, &w.collocations, uris(w.units)),
            MaintenanceRecord::Reclaim(r) => self.reclaim(uris(r.units), dropped),
            MaintenanceRecord::Control(bits) => self.locks = Locks::from_bits(bits),
        }
    }

    /// A region of the log at `at` that could not be read (and was not
    /// recovered): it may have held any record, so lookups it may change
    /// fail.
    pub fn damaged_region(&mut self, at: u64, problem: String) {
        self.regions.push((next_position(), at, problem.clone()));
        self.damage.push(problem);
    }

    /// Whether a damaged region was met.
    pub fn has_damaged_regions(&self) -> bool {
        !self.regions.is_empty()
    }

    /// The dataset's locks, as of the records read.
    pub fn locks(&self) -> Locks {
        self.locks
    }

    /// Units WIPE records left to remove, not yet reclaimed.
    pub fn pending_units(&self) -> Vec<String> {
        self.pending.iter().cloned().collect()
    }

    /// Units RECLAIM records removed.
    pub fn removed(&self) -> &RemovedUnits {
        &self.removed
    }

    /// Each collocation's key and axes, by reference, in the order they
    /// were first named.
    pub fn visit_collocations(&self, visit: &mut dyn FnMut(&CollocationKey, &Axes)) {
        for k in &self.order {
            if let Some(c) = self.collocations.get(k) {
                visit(k, &c.axes);
            }
        }
    }

    /// One collocation, if named and not wiped.
    pub fn collocation(&self, key: &CollocationKey) -> Option<&Collocation<P>> {
        self.collocations.get(key)
    }

    /// Every collocation key, in order.
    pub fn order(&self) -> &[CollocationKey] {
        &self.order
    }

    /// The blocks of `collocation` that `want` selects and are not loaded
    /// yet: their index among the collocation's blocks, and their place.
    pub fn to_load(
        &self,
        collocation: &CollocationKey,
        want: &dyn Fn(&BlockSlot<P>) -> bool,
    ) -> Vec<(usize, P)> {
        let Some(c) = self.collocations.get(collocation) else {
            return Vec::new();
        };
        c.blocks
            .iter()
            .enumerate()
            .filter(|(i, b)| c.loaded[*i].is_none() && want(b))
            .map(|(i, b)| (i, b.place.clone()))
            .collect()
    }

    /// Block `i` of `collocation` (an index [`DatasetIndex::to_load`]
    /// gave) is loaded (or found damaged).
    pub fn set_loaded(&mut self, collocation: &CollocationKey, i: usize, block: Block) {
        if let Some(slot) = self
            .collocations
            .get_mut(collocation)
            .and_then(|c| c.loaded.get_mut(i))
        {
            *slot = Some(Arc::new(block));
        }
    }

    /// The loaded blocks of `collocation` that `want` selects, oldest
    /// first, with the removed units (for [`crate::catalogue::visit_newest_first`]).
    pub fn blocks_where(
        &self,
        collocation: &CollocationKey,
        want: &dyn Fn(&BlockSlot<P>) -> bool,
    ) -> (Vec<Arc<Block>>, RemovedUnits) {
        let blocks = match self.collocations.get(collocation) {
            Some(c) => c
                .blocks
                .iter()
                .zip(&c.loaded)
                .filter(|(b, _)| want(b))
                .filter_map(|(_, l)| l.clone())
                .collect(),
            None => Vec::new(),
        };
        (blocks, self.removed.clone())
    }

    /// The newest location of `element` in `collocation`, all of whose
    /// blocks must be loaded. `Corrupt` when damage may hold a newer
    /// version: a damaged block whose axes admit the element, newer than
    /// what was found; or a damaged region of the log newer than both what
    /// was found and the collocation's last WIPE. For a collocation the
    /// reader does not know, `unknown_may_hold` says whether the damaged
    /// region may have named it (a medium that can tell from its blocks);
    /// without it, any damaged region fails the lookup.
    ///
    /// # Errors
    /// `Corrupt`, naming the damage.
    pub fn lookup(
        &mut self,
        collocation: &CollocationKey,
        element: &ElementKey,
        unknown_may_hold: Option<&mut dyn FnMut() -> bool>,
    ) -> Result<Option<FieldLocation>> {
        self.merge(collocation);
        self.lookup_merged(collocation, element, unknown_may_hold)
    }

    /// Whether [`DatasetIndex::lookup_merged`] may answer for
    /// `collocation` (its loaded blocks are merged), so that readers
    /// shared between threads can look up under a shared lock.
    pub fn is_merged(&self, collocation: &CollocationKey) -> bool {
        self.collocations
            .get(collocation)
            .is_none_or(|c| c.merged == c.blocks.len())
    }

    /// Merge the loaded blocks of `collocation` into its newest-entry map.
    pub fn merge(&mut self, collocation: &CollocationKey) {
        if let Some(c) = self.collocations.get_mut(collocation) {
            merge(c);
        }
    }

    /// [`DatasetIndex::lookup`] of a collocation already merged
    /// ([`DatasetIndex::merge`]).
    ///
    /// # Errors
    /// As [`DatasetIndex::lookup`].
    pub fn lookup_merged(
        &self,
        collocation: &CollocationKey,
        element: &ElementKey,
        unknown_may_hold: Option<&mut dyn FnMut() -> bool>,
    ) -> Result<Option<FieldLocation>> {
        let found = match self.collocations.get(collocation) {
            Some(c) => newest_in(c, collocation, element)?,
            None => None,
        };
        let since = found
            .as_ref()
            .map_or(0, |f| f.0)
            .max(self.wiped_at.get(collocation).map_or(0, |w| w.0));
        let region = self.regions.iter().find(|(p, _, _)| *p > since);
        if let Some((_, _, problem)) = region {
            let known = self.collocations.contains_key(collocation);
            let may_hold = known || found.is_some() || unknown_may_hold.is_none_or(|f| f());
            if may_hold {
                return Err(may_hold_newest(problem, DAMAGED_LOG, collocation, element));
            }
        }
        Ok(found.map(|(_, l)| l))
    }

    /// Damage stepped over: of the log, and with `collocation`, of its
    /// loaded blocks.
    pub fn damage(&self, collocation: Option<&CollocationKey>) -> Vec<String> {
        let mut out = self.damage.clone();
        if let Some(c) = collocation.and_then(|k| self.collocations.get(k)) {
            out.extend(c.loaded.iter().flatten().filter_map(|b| b.damage.clone()));
        }
        out
    }

    /// Every collocation's blocks and what is loaded of them, for
    /// maintenance that must see every block (POSIX reclaim).
    pub fn all_blocks(&self) -> impl Iterator<Item = CollocationBlocks<'_, P>> {
        self.collocations
            .iter()
            .map(|(k, c)| (k, c.blocks.as_slice(), c.loaded.as_slice()))
    }

    /// The position of the newest block known.
    pub fn log_position(&self) -> u64 {
        self.collocations
            .values()
            .filter_map(|c| c.blocks.last().map(|b| b.position))
            .max()
            .unwrap_or(0)
    }
}

impl<P: Clone + Eq + std::hash::Hash> DatasetIndex<P> {
    /// The positions this reader gave its blocks (by place) and its
    /// damaged regions and wipes (by their place in the log): what a
    /// reader that finds the same log elsewhere (a dataset moved) keeps,
    /// with [`DatasetIndex::carry`], so that `watch` does not report its
    /// blocks again.
    pub fn positions(&self) -> (HashMap<P, u64>, HashMap<u64, u64>) {
        let blocks = self
            .collocations
            .values()
            .flat_map(|c| &c.blocks)
            .map(|b| (b.place.clone(), b.position))
            .collect();
        // By place in the log: position.
        let regions = self.regions.iter().map(|(p, at, _)| (*at, *p));
        let wipes = self.wiped_at.values().map(|(p, at)| (*at, *p));
        (blocks, regions.chain(wipes).collect())
    }

    /// Give blocks, damaged regions and wipes the positions a reader of the
    /// same log gave them ([`DatasetIndex::positions`]).
    pub fn carry(&mut self, blocks: &HashMap<P, u64>, log: &HashMap<u64, u64>) {
        for b in self.collocations.values_mut().flat_map(|c| &mut c.blocks) {
            if let Some(&p) = blocks.get(&b.place) {
                b.position = p;
            }
        }
        for (position, at, _) in &mut self.regions {
            if let Some(&p) = log.get(at) {
                *position = p;
            }
        }
        for (position, at) in self.wiped_at.values_mut() {
            if let Some(&p) = log.get(at) {
                *position = p;
            }
        }
    }
}

/// Whether a block with these axes may hold `element`: every keyword the
/// block's axes name has the element's value among its values.
pub fn may_hold(axes: &Axes, element: &ElementKey) -> bool {
    element
        .iter()
        .all(|(kw, v)| axes.get(kw).is_none_or(|values| values.contains(v)))
}

/// The part [`may_hold_newest`] names for a damaged region of the log (a
/// record that could not be read, or a gap), as opposed to a damaged block.
pub(crate) const DAMAGED_LOG: &str = "that damaged part of the log";

/// `Corrupt`: `problem`, and that `part` (damaged) may hold the newest
/// version of the field `collocation` `element` names: the answer a
/// lookup gives instead of an older version or none.
pub(crate) fn may_hold_newest(
    problem: &str,
    part: &str,
    collocation: &CollocationKey,
    element: &ElementKey,
) -> Error {
    Error::corrupt(format!(
        "{problem}; {part} may hold the newest version of {}{}",
        collocation.braced(),
        element.braced()
    ))
}

/// Merge the loaded blocks of `c` not merged yet into its newest-entry
/// map, oldest first, up to the first one not loaded.
fn merge<P>(c: &mut Collocation<P>) {
    let new_entries: usize = c.loaded[c.merged..]
        .iter()
        .flatten()
        .map(|b| b.entries.len())
        .sum();
    c.newest.reserve(new_entries);
    // Up to the first block not loaded (`loaded` runs along `blocks`): the
    // caller loads every block before a lookup.
    while let Some(Some(block)) = c.loaded.get(c.merged) {
        if block.damage.is_some() {
            c.damaged.push(c.merged);
        }
        for (k, l) in &block.entries {
            if l.annotates {
                // Applies to the newest entry so far, or nothing.
                crate::annotation::annotate_newest(c.newest.get_mut(k).map(|(_, n)| n), l);
                continue;
            }
            c.newest.insert(k.clone(), (c.merged, l.clone()));
        }
        c.merged += 1;
    }
}

/// The newest entry of `element` in `c` (merged), with the position of its
/// block; `Corrupt` when a damaged block newer than it may hold the key.
fn newest_in<P>(
    c: &Collocation<P>,
    collocation: &CollocationKey,
    element: &ElementKey,
) -> Result<Option<(u64, FieldLocation)>> {
    let found = c.newest.get(element);
    let newer_than = found.map_or(0, |(i, _)| i + 1);
    for &d in &c.damaged {
        if d >= newer_than && may_hold(&c.blocks[d].axes, element) {
            let problem = c.loaded[d]
                .as_ref()
                .and_then(|b| b.damage.clone())
                .unwrap_or_default();
            return Err(may_hold_newest(
                &problem,
                "that block",
                collocation,
                element,
            ));
        }
    }
    Ok(found.map(|(i, l)| (c.blocks[*i].position, l.clone())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::axes::AxesExt;

    fn col(s: &str) -> CollocationKey {
        CollocationKey(s.parse().unwrap())
    }

    fn el(s: &str) -> ElementKey {
        ElementKey(s.parse().unwrap())
    }

    fn loc(n: u64) -> FieldLocation {
        FieldLocation::new("file:///d", n, 1)
    }

    fn axes_of(entries: &[(ElementKey, FieldLocation)]) -> Axes {
        let mut a = Axes::new();
        for (k, _) in entries {
            a.add_key(k);
        }
        a
    }

    /// Add a loaded block of `(step, offset)` entries.
    fn add(ix: &mut DatasetIndex<u32>, c: &str, place: u32, steps: &[(u32, u64)]) {
        let entries: Vec<_> = steps
            .iter()
            .map(|(s, o)| (el(&format!("step={s}")), loc(*o)))
            .collect();
        ix.add_loaded_block(col(c), place, axes_of(&entries), entries);
    }

    /// An annotation of a field applies to it while it is the newest
    /// entry of its key, and never after it was replaced: by lookup and by
    /// a scan alike.
    #[test]
    fn annotations_apply_only_to_the_field_at_their_location() {
        let mut ix = DatasetIndex::default();
        add(&mut ix, "type=fc", 1, &[(0, 1), (6, 2)]);
        let annotate = |ix: &mut DatasetIndex<u32>, place, step: u32, at, x: &[u8]| {
            let entries = vec![(el(&format!("step={step}")), loc(at).annotation(x))];
            ix.add_loaded_block(col("type=fc"), place, axes_of(&entries), entries);
        };
        annotate(&mut ix, 2, 6, 2, b"j1");
        let ext = |ix: &mut DatasetIndex<u32>, step: u32| {
            let l = ix
                .lookup(&col("type=fc"), &el(&format!("step={step}")), None)
                .unwrap()
                .unwrap();
            assert!(!l.annotates);
            (l.offset, l.extension.map(|e| e.to_vec()))
        };
        assert_eq!(ext(&mut ix, 6), (2, Some(b"j1".to_vec())));
        assert_eq!(ext(&mut ix, 0), (1, None), "another key: untouched");
        // Replaced (offset 3), then annotated late for the old location
        // (a reader that read it before the replacement): no resurrection.
        add(&mut ix, "type=fc", 3, &[(6, 3)]);
        annotate(&mut ix, 4, 6, 2, b"stale");
        assert_eq!(ext(&mut ix, 6), (3, None));
        // An annotation of a key with no entry makes nothing visible.
        annotate(&mut ix, 5, 12, 9, b"orphan");
        assert_eq!(
            ix.lookup(&col("type=fc"), &el("step=12"), None).unwrap(),
            None
        );
        // A scan sees the same: entries with the extensions that apply.
        let (blocks, removed) = ix.blocks_where(&col("type=fc"), &|_| true);
        let mut seen = Vec::new();
        crate::catalogue::visit_newest_first(
            blocks.iter().map(|b| b.entries.as_slice()),
            &removed,
            &mut |k, l| {
                assert!(!l.annotates);
                seen.push((k.to_string(), l.offset, l.extension.clone()));
                true
            },
        );
        // The replaced entry (masked) gets the newest annotation of its
        // location: jump info of those bytes, whoever wrote it.
        let stale: Option<Arc<[u8]>> = Some(Arc::from(&b"stale"[..]));
        assert_eq!(
            seen,
            vec![
                ("step=6".to_string(), 3, None),
                ("step=6".to_string(), 2, stale),
                ("step=0".to_string(), 1, None),
            ]
        );
    }

    #[test]
    fn newest_wins_and_wipes_hide() {
        let mut ix = DatasetIndex::default();
        add(&mut ix, "type=fc", 1, &[(0, 1), (6, 2)]);
        add(&mut ix, "type=fc", 2, &[(6, 3)]);
        add(&mut ix, "type=an", 3, &[(0, 4)]);
        assert_eq!(
            ix.lookup(&col("type=fc"), &el("step=6"), None).unwrap(),
            Some(loc(3))
        );
        ix.wipe(0, &[col("type=fc")], vec!["file:///d".into()]);
        assert_eq!(
            ix.lookup(&col("type=fc"), &el("step=6"), None).unwrap(),
            None
        );
        let mut collocations = 0;
        ix.visit_collocations(&mut |_, _| collocations += 1);
        assert_eq!(collocations, 1);
        assert_eq!(ix.pending_units(), vec!["file:///d".to_string()]);
        ix.reclaim(vec!["file:///d".into()], &|_| false);
        assert!(ix.pending_units().is_empty());
    }

    #[test]
    fn a_damaged_block_fails_only_the_keys_it_may_hold_newer() {
        let mut ix: DatasetIndex<u32> = DatasetIndex::default();
        add(&mut ix, "type=fc", 1, &[(0, 1), (6, 2)]);
        let mut a = Axes::new();
        a.add_key(&"step=6".parse().unwrap());
        ix.add_block(col("type=fc"), 2, a);
        ix.set_loaded(&col("type=fc"), 1, Block::damaged("bad block 2".into()));
        let e = ix.lookup(&col("type=fc"), &el("step=6"), None).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Corrupt);
        assert!(e.to_string().contains("bad block 2"), "{e}");
        // step=0 is not in the damaged block's axes: its answer stands.
        assert_eq!(
            ix.lookup(&col("type=fc"), &el("step=0"), None).unwrap(),
            Some(loc(1))
        );
        assert_eq!(
            ix.damage(Some(&col("type=fc"))),
            vec!["bad block 2".to_string()]
        );
    }

    #[test]
    fn a_damaged_region_fails_older_answers_not_newer_ones() {
        let mut ix: DatasetIndex<u32> = DatasetIndex::default();
        add(&mut ix, "type=fc", 1, &[(0, 1)]);
        ix.damaged_region(100, "record at 100 damaged".into());
        add(&mut ix, "type=fc", 2, &[(6, 2)]);
        // Found before the damage: it may have replaced it.
        let e = ix.lookup(&col("type=fc"), &el("step=0"), None).unwrap_err();
        assert!(e.to_string().contains("record at 100"), "{e}");
        // Found after the damage: it stands.
        assert_eq!(
            ix.lookup(&col("type=fc"), &el("step=6"), None).unwrap(),
            Some(loc(2))
        );
        // An unknown collocation: it depends on what the medium can tell.
        assert!(ix.lookup(&col("type=xx"), &el("step=0"), None).is_err());
        let mut never = || false;
        assert_eq!(
            ix.lookup(&col("type=xx"), &el("step=0"), Some(&mut never))
                .unwrap(),
            None
        );
        // A wipe after the damage settles the collocation.
        ix.wipe(200, &[col("type=fc")], Vec::new());
        assert_eq!(
            ix.lookup(&col("type=fc"), &el("step=0"), None).unwrap(),
            None
        );
    }

    #[test]
    fn positions_grow_and_select_new_blocks() {
        let mut ix: DatasetIndex<u32> = DatasetIndex::default();
        add(&mut ix, "type=fc", 1, &[(0, 1)]);
        let at = ix.log_position();
        add(&mut ix, "type=fc", 2, &[(6, 2)]);
        assert!(ix.log_position() > at);
        let (new, _) = ix.blocks_where(&col("type=fc"), &|b| b.position > at);
        assert_eq!(new.len(), 1);
        assert_eq!(new[0].entries[0].1, loc(2));
        // Axis pruning: only blocks that may hold step=0.
        let (some, _) = ix.blocks_where(&col("type=fc"), &|b| may_hold(&b.axes, &el("step=0")));
        assert_eq!(some.len(), 1);
    }
}
