//! The in-memory reference backend: the simplest implementation of the
//! contracts, used as the model the other backends are checked against.
//!
//! Handles that share one [`MemoryBackend`] see each other's flushed data,
//! like processes sharing a POSIX root.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use fieldstore_core::maintenance::{
    locked, wiped_while_writing, Claim, Item, ItemKind, Removed, Unit, UnitState,
};
use fieldstore_core::store::{read_into_by_copy, remove_claimed};
use fieldstore_core::{
    CatalogueMaintenance, ChangeWaiter, CollocationKey, Control, DamagedDatasets, DatasetKey,
    DatasetMover, ElementKey, Error, ErrorKind, FieldLocation, Locks, Operation, PollingWaiter,
    Result, Schema, StoreMaintenance,
};

use fieldstore_core::catalogue::{
    Axes, AxesExt, Catalogue, CatalogueWriter, DatasetCondition, DatasetReader,
};
use fieldstore_core::store::{Store, StoreWriter};

use crate::sync::{read, write};

/// A catalogue and a store in memory, shared by every handle made from it.
#[derive(Debug, Clone, Default)]
pub struct MemoryBackend {
    catalogue: MemoryCatalogue,
    store: MemoryStore,
}

impl MemoryBackend {
    /// An empty backend.
    pub fn new() -> Self {
        MemoryBackend::default()
    }

    /// The catalogue half.
    pub fn catalogue(&self) -> MemoryCatalogue {
        self.catalogue.clone()
    }

    /// The store half.
    pub fn store(&self) -> MemoryStore {
        self.store.clone()
    }
}

/// Field bytes in memory: one blob (a unit) per field.
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    blobs: Arc<RwLock<HashMap<u64, Arc<[u8]>>>>,
    /// The blobs of each dataset.
    owners: Arc<RwLock<HashMap<DatasetKey, BTreeSet<u64>>>>,
    /// Blobs archived but not yet indexed (`StoreWriter::indexed`), or of a
    /// writer dropped before that: in use, as a POSIX writer's open data
    /// file is, so that a purge in between cannot take a blob the
    /// catalogue is about to point at for an orphan.
    in_use: Arc<RwLock<HashSet<u64>>>,
    next_id: Arc<AtomicU64>,
}

struct MemoryStoreWriter {
    store: MemoryStore,
    dataset: DatasetKey,
    pending: Vec<(u64, Arc<[u8]>)>,
    /// Blobs flushed to the store, not yet indexed.
    flushed: Vec<u64>,
}

fn blob_id(uri: &str) -> Result<u64> {
    uri.strip_prefix("memory://")
        .and_then(|id| id.parse().ok())
        .ok_or_else(|| Error::invalid_input(format!("not a memory location: {uri}")))
}

impl Store for MemoryStore {
    fn writer(&self, dataset: &DatasetKey) -> Result<Box<dyn StoreWriter>> {
        Ok(Box::new(MemoryStoreWriter {
            store: self.clone(),
            dataset: dataset.clone(),
            pending: Vec::new(),
            flushed: Vec::new(),
        }))
    }

    fn read(&self, location: &FieldLocation, buf: &mut Vec<u8>) -> Result<()> {
        let id = blob_id(&location.uri)?;
        let blobs = read(&self.blobs);
        let blob = blobs.get(&id).ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!("no such field: {}", location.uri),
            )
        })?;
        let range = location.offset as usize..(location.offset + location.length) as usize;
        let bytes = blob
            .get(range)
            .ok_or_else(|| Error::corrupt(format!("{location}: outside the stored field")))?;
        buf.clear();
        buf.extend_from_slice(bytes);
        Ok(())
    }

    fn scheme(&self) -> &'static str {
        "memory"
    }

    fn read_into(&self, location: &FieldLocation, out: &mut [u8]) -> Result<()> {
        read_into_by_copy(self, location, out)
    }

    fn read_range(&self, location: &FieldLocation, offset: u64, out: &mut [u8]) -> Result<()> {
        read_into_by_copy(self, &location.range(offset, out.len() as u64)?, out)
    }

    /// Memory is read at once.
    fn prefetch(&self, _locations: &[FieldLocation]) {}

    fn maintenance(&self) -> Option<&dyn StoreMaintenance> {
        Some(self)
    }
}

impl StoreMaintenance for MemoryStore {
    fn remove(&self, uri: &str) -> Result<Removed> {
        remove_claimed(self.claim(uri)?)
    }

    fn inspect(&self, uri: &str) -> Result<Unit> {
        let id = blob_id(uri)?;
        let (bytes, state) = match read(&self.blobs).get(&id) {
            Some(b) if self.is_in_use(id) => (Some(b.len() as u64), UnitState::InUse),
            Some(b) => (Some(b.len() as u64), UnitState::Idle),
            None => (None, UnitState::Missing),
        };
        let uri = uri.to_string();
        Ok(Unit { uri, bytes, state })
    }

    fn claim(&self, uri: &str) -> Result<Claim<'_>> {
        let id = blob_id(uri)?;
        if !read(&self.blobs).contains_key(&id) {
            return Ok(Claim::Missing);
        }
        // Blobs are written whole at the writer's flush and never appended
        // to; one indexed (not in use) gets no new reference.
        if self.is_in_use(id) {
            return Ok(Claim::InUse);
        }
        Ok(Claim::Held(Box::new(move || {
            write(&self.blobs).remove(&id);
            Ok(())
        })))
    }

    fn orphans(&self, dataset: &DatasetKey, referenced: &HashSet<String>) -> Result<Vec<Unit>> {
        let owners = read(&self.owners);
        let blobs = read(&self.blobs);
        Ok(owners
            .get(dataset)
            .into_iter()
            .flatten()
            .filter_map(|id| {
                let uri = format!("memory://{id}");
                let b = blobs.get(id)?;
                (!self.is_in_use(*id) && !referenced.contains(&uri)).then(|| Unit {
                    uri,
                    bytes: Some(b.len() as u64),
                    state: UnitState::Idle,
                })
            })
            .collect())
    }

    fn inventory(&self, dataset: &DatasetKey, _units: &[String]) -> Result<Vec<Item>> {
        let owners = read(&self.owners);
        let blobs = read(&self.blobs);
        Ok(owners
            .get(dataset)
            .into_iter()
            .flatten()
            .filter_map(|id| {
                let b = blobs.get(id)?;
                Some(Item::new(
                    ItemKind::Data,
                    format!("memory://{id}"),
                    Some(b.len() as u64),
                ))
            })
            .collect())
    }

    fn wipe(&self, dataset: &DatasetKey, units: &[String]) -> Result<()> {
        let ids = write(&self.owners).remove(dataset).unwrap_or_default();
        let named = units.iter().filter_map(|u| blob_id(u).ok());
        let mut blobs = write(&self.blobs);
        for id in ids.into_iter().chain(named) {
            blobs.remove(&id);
        }
        Ok(())
    }
}

impl MemoryStore {
    fn is_in_use(&self, id: u64) -> bool {
        read(&self.in_use).contains(&id)
    }
}

impl Drop for MemoryStoreWriter {
    /// Blobs flushed but never indexed (the catalogue's flush failed) are
    /// orphans once their writer is gone: no longer in use.
    fn drop(&mut self) {
        self.indexed();
    }
}

impl StoreWriter for MemoryStoreWriter {
    fn archive(&mut self, _collocation: &CollocationKey, data: &[u8]) -> Result<FieldLocation> {
        let id = self.store.next_id.fetch_add(1, Ordering::Relaxed);
        self.pending.push((id, Arc::from(data)));
        Ok(FieldLocation::new(
            format!("memory://{id}"),
            0,
            data.len() as u64,
        ))
    }

    fn indexed(&mut self) {
        let mut in_use = write(&self.store.in_use);
        for id in self.flushed.drain(..) {
            in_use.remove(&id);
        }
    }

    fn flush(&mut self) -> Result<()> {
        write(&self.store.in_use).extend(self.pending.iter().map(|(id, _)| *id));
        self.flushed.extend(self.pending.iter().map(|(id, _)| *id));
        let mut owners = write(&self.store.owners);
        let mut blobs = write(&self.store.blobs);
        let ids = owners.entry(self.dataset.clone()).or_default();
        ids.extend(self.pending.iter().map(|(id, _)| *id));
        blobs.extend(self.pending.drain(..));
        Ok(())
    }

    /// One blob per field: a failed flush's blobs become orphans when the
    /// writer is dropped (see `Drop`), which purge removes.
    fn abandon(&mut self) {}
}

/// An index in memory.
#[derive(Debug, Clone, Default)]
pub struct MemoryCatalogue {
    datasets: Arc<RwLock<BTreeMap<DatasetKey, Arc<MemoryDataset>>>>,
}

/// A collocation: its key, its axes, its entries oldest first.
type MemoryCollocation = (CollocationKey, Axes, Vec<(ElementKey, FieldLocation)>);

#[derive(Debug, Default)]
struct Content {
    /// Collocations in creation order.
    collocations: Vec<MemoryCollocation>,
    locks: Locks,
    /// Units a collocation wipe left to remove.
    pending: BTreeSet<String>,
}

#[derive(Debug)]
struct MemoryDataset {
    /// The text of the schema the dataset was created under (by the first
    /// writer opened on it): it splits and matches the dataset's keys below
    /// level 1, whatever later handles are configured with.
    schema: Arc<str>,
    content: RwLock<Content>,
    /// Set (under the content's write lock) when the dataset is wiped:
    /// readers and writers holding it then see it gone.
    wiped: AtomicBool,
}

impl MemoryDataset {
    fn new(schema: &Schema) -> Self {
        MemoryDataset {
            schema: schema.text().into(),
            content: RwLock::default(),
            wiped: AtomicBool::new(false),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Content> {
        read(&self.content)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Content> {
        write(&self.content)
    }

    fn is_empty(&self) -> bool {
        self.read().collocations.is_empty()
    }
}

struct MemoryCatalogueWriter {
    key: DatasetKey,
    dataset: Arc<MemoryDataset>,
    pending: Vec<(CollocationKey, ElementKey, FieldLocation)>,
}

impl MemoryCatalogue {
    fn get(&self, dataset: &DatasetKey) -> Option<Arc<MemoryDataset>> {
        read(&self.datasets).get(dataset).cloned()
    }
}

impl Catalogue for MemoryCatalogue {
    fn writer(&self, dataset: &DatasetKey, schema: &Schema) -> Result<Box<dyn CatalogueWriter>> {
        let mut map = write(&self.datasets);
        let ds = map
            .entry(dataset.clone())
            .or_insert_with(|| Arc::new(MemoryDataset::new(schema)))
            .clone();
        if ds.read().locks.contains(Operation::Archive) {
            return Err(locked(dataset, Operation::Archive));
        }
        Ok(Box::new(MemoryCatalogueWriter {
            key: dataset.clone(),
            dataset: ds,
            pending: Vec::new(),
        }))
    }

    fn datasets(&self) -> Result<Vec<DatasetKey>> {
        let map = read(&self.datasets);
        // A dataset exists once something was flushed into it.
        Ok(map
            .iter()
            .filter(|(_, d)| !d.is_empty())
            .map(|(k, _)| k.clone())
            .collect())
    }

    fn reader(&self, dataset: &DatasetKey) -> Result<Option<Arc<dyn DatasetReader>>> {
        Ok(self.get(dataset).filter(|d| !d.is_empty()).map(|d| {
            Arc::new(MemoryReader {
                catalogue: self.clone(),
                key: dataset.clone(),
                current: RwLock::new(d),
            }) as Arc<dyn DatasetReader>
        }))
    }

    fn describe(&self, dataset: &DatasetKey) -> String {
        format!("memory:{}", dataset.braced())
    }

    /// One process: nothing to be notified of across processes.
    fn waiter(&self) -> Result<Box<dyn ChangeWaiter>> {
        Ok(Box::new(PollingWaiter::new(
            std::time::Duration::from_millis(50),
        )))
    }

    fn maintenance(&self) -> Option<&dyn CatalogueMaintenance> {
        Some(self)
    }

    /// Memory is never damaged.
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

impl CatalogueMaintenance for MemoryCatalogue {
    /// Per dataset is cheap here.
    fn list_locked(&self) -> Result<Option<Vec<DatasetKey>>> {
        Ok(None)
    }

    /// A wipe is one step under the catalogue's lock: never interrupted.
    fn interrupted_wipes(&self) -> Result<Vec<DatasetKey>> {
        Ok(Vec::new())
    }

    fn locks(&self, dataset: &DatasetKey) -> Result<Locks> {
        Ok(self.get(dataset).map_or(Locks::NONE, |d| d.read().locks))
    }

    fn control(&self, dataset: &DatasetKey, action: Control, operations: Locks) -> Result<Locks> {
        let d = self.get(dataset).ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!("no dataset {}", dataset.braced()),
            )
        })?;
        let mut c = d.write();
        c.locks = c.locks.apply(action, operations);
        Ok(c.locks)
    }

    fn inventory(&self, dataset: &DatasetKey) -> Result<Vec<Item>> {
        Ok(self
            .get(dataset)
            .map(|_| Item::new(ItemKind::Catalogue, self.describe(dataset), None))
            .into_iter()
            .collect())
    }

    fn wipe(
        &self,
        dataset: &DatasetKey,
        _unsafe_wipe_all: bool,
        store_step: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        let removed = write(&self.datasets).remove(dataset);
        if let Some(d) = removed {
            let mut c = d.write();
            d.wiped.store(true, Ordering::SeqCst);
            c.collocations.clear();
        }
        store_step()
    }

    fn wipe_collocations(
        &self,
        dataset: &DatasetKey,
        collocations: &[CollocationKey],
        units: &[String],
    ) -> Result<()> {
        if let Some(d) = self.get(dataset) {
            let mut c = d.write();
            c.collocations.retain(|(k, _, _)| !collocations.contains(k));
            c.pending.extend(units.iter().cloned());
        }
        Ok(())
    }

    fn reclaim(
        &self,
        dataset: &DatasetKey,
        units: &[String],
        _hidden: &[CollocationKey],
        dry_run: bool,
    ) -> Result<Vec<Item>> {
        if dry_run {
            return Ok(Vec::new());
        }
        if let Some(d) = self.get(dataset) {
            let gone: HashSet<&str> = units.iter().map(String::as_str).collect();
            let mut c = d.write();
            for (_, _, entries) in c.collocations.iter_mut() {
                entries.retain(|(_, l)| !gone.contains(&*l.uri));
            }
            c.pending.retain(|u| !gone.contains(u.as_str()));
        }
        Ok(Vec::new())
    }
}

impl CatalogueWriter for MemoryCatalogueWriter {
    fn schema_text(&self) -> Option<Arc<str>> {
        Some(self.dataset.schema.clone())
    }

    fn insert(
        &mut self,
        collocation: &CollocationKey,
        element: &ElementKey,
        location: &FieldLocation,
    ) -> Result<()> {
        self.pending
            .push((collocation.clone(), element.clone(), location.clone()));
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        // One write lock: readers see the whole flush or none of it.
        let mut c = self.dataset.write();
        if self.dataset.wiped.load(Ordering::SeqCst) {
            self.pending.clear();
            return Err(wiped_while_writing(&self.key));
        }
        if c.locks.contains(Operation::Archive) {
            return Err(locked(&self.key, Operation::Archive));
        }
        let cols = &mut c.collocations;
        for (col, e, l) in self.pending.drain(..) {
            if l.annotates {
                // Applied now, under the lock (`annotation.rs`): to the
                // key's newest entry if it is at the annotation's location;
                // nothing is added.
                let newest = cols
                    .iter_mut()
                    .find(|(k, _, _)| *k == col)
                    .and_then(|(_, _, entries)| entries.iter_mut().rev().find(|(k, _)| *k == e));
                fieldstore_core::annotation::annotate_newest(newest.map(|(_, n)| n), &l);
                continue;
            }
            let i = match cols.iter().position(|(k, _, _)| *k == col) {
                Some(i) => i,
                None => {
                    cols.push((col, Axes::new(), Vec::new()));
                    cols.len() - 1
                }
            };
            let (_, axes, entries) = &mut cols[i];
            axes.add_key(&e);
            entries.push((e, l));
        }
        Ok(())
    }

    /// A flush fails only before it changes anything.
    fn last_flush_invisible(&self) -> bool {
        true
    }
}

/// A reader of one dataset: follows it to a new incarnation once it is
/// wiped and created again.
#[derive(Debug)]
struct MemoryReader {
    catalogue: MemoryCatalogue,
    key: DatasetKey,
    current: RwLock<Arc<MemoryDataset>>,
}

impl MemoryReader {
    fn dataset(&self) -> Arc<MemoryDataset> {
        read(&self.current).clone()
    }
}

impl DatasetReader for MemoryReader {
    fn schema_text(&self) -> Option<Arc<str>> {
        Some(self.dataset().schema.clone())
    }

    fn refresh(&self) -> Result<()> {
        if self.dataset().wiped.load(Ordering::SeqCst) {
            if let Some(d) = self.catalogue.get(&self.key) {
                *write(&self.current) = d;
            }
        }
        Ok(())
    }

    fn visit_collocations(&self, visit: &mut dyn FnMut(&CollocationKey, &Axes)) -> Result<()> {
        let d = self.dataset();
        for (k, a, _) in &d.read().collocations {
            visit(k, a);
        }
        Ok(())
    }

    fn lookup(
        &self,
        collocation: &CollocationKey,
        element: &ElementKey,
    ) -> Result<Option<FieldLocation>> {
        let d = self.dataset();
        let c = d.read();
        Ok(c.collocations
            .iter()
            .find(|(k, _, _)| k == collocation)
            .and_then(|(_, _, entries)| entries.iter().rev().find(|(e, _)| e == element))
            .map(|(_, l)| l.clone()))
    }

    fn locks(&self) -> Locks {
        self.dataset().read().locks
    }

    /// No positions are kept: `scan_since` scans everything.
    fn log_position(&self) -> u64 {
        0
    }

    /// Entries are not grouped and no positions are kept: everything is
    /// scanned.
    fn scan_since(
        &self,
        collocation: &CollocationKey,
        _position: u64,
        _admits: &dyn Fn(&Axes) -> bool,
        visit: &mut dyn FnMut(&ElementKey, &FieldLocation) -> bool,
    ) -> Result<()> {
        let entries = {
            let d = self.dataset();
            let c = d.read();
            match c.collocations.iter().find(|(k, _, _)| k == collocation) {
                Some((_, _, entries)) => entries.clone(),
                None => return Ok(()),
            }
        };
        for (e, l) in entries.iter().rev() {
            if !visit(e, l) {
                break;
            }
        }
        Ok(())
    }

    /// Memory is never damaged, and nothing is appended that could be torn.
    fn condition(&self, _collocation: Option<&CollocationKey>) -> DatasetCondition {
        DatasetCondition {
            pending_units: self.dataset().read().pending.iter().cloned().collect(),
            ..DatasetCondition::default()
        }
    }
}
