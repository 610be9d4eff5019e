//! The in-memory reference backend: the simplest implementation of the
//! contracts, used as the model the other backends are checked against.
//!
//! Handles that share one [`MemoryBackend`] see each other's flushed data,
//! like processes sharing a POSIX root.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use fieldstore_core::{
    CollocationKey, DatasetKey, ElementKey, Error, ErrorKind, FieldLocation, Result, Schema,
};

use crate::catalogue::{Axes, AxesExt, Catalogue, CatalogueWriter, CollocationInfo, DatasetReader};
use crate::store::{Store, StoreWriter};

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

/// Field bytes in memory.
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    blobs: Arc<RwLock<HashMap<u64, Arc<[u8]>>>>,
    next_id: Arc<AtomicU64>,
}

struct MemoryStoreWriter {
    store: MemoryStore,
    pending: Vec<(u64, Arc<[u8]>)>,
}

impl Store for MemoryStore {
    fn writer(&self, _dataset: &DatasetKey) -> Result<Box<dyn StoreWriter>> {
        Ok(Box::new(MemoryStoreWriter {
            store: self.clone(),
            pending: Vec::new(),
        }))
    }

    fn read(&self, location: &FieldLocation, buf: &mut Vec<u8>) -> Result<()> {
        let id: u64 = location.path().parse().map_err(|_| {
            Error::invalid_input(format!("not a memory location: {}", location.uri))
        })?;
        let blobs = self.blobs.read().unwrap_or_else(|p| p.into_inner());
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

    fn flush(&mut self) -> Result<()> {
        let mut blobs = self.store.blobs.write().unwrap_or_else(|p| p.into_inner());
        blobs.extend(self.pending.drain(..));
        Ok(())
    }
}

/// An index in memory.
#[derive(Debug, Clone, Default)]
pub struct MemoryCatalogue {
    datasets: Arc<RwLock<BTreeMap<DatasetKey, Arc<MemoryDataset>>>>,
}

/// A collocation: its key, its axes, its entries oldest first.
type MemoryCollocation = (CollocationKey, Axes, Vec<(ElementKey, FieldLocation)>);

#[derive(Debug, Default)]
struct MemoryDataset {
    /// Collocations in creation order.
    collocations: RwLock<Vec<MemoryCollocation>>,
}

struct MemoryCatalogueWriter {
    dataset: Arc<MemoryDataset>,
    pending: Vec<(CollocationKey, ElementKey, FieldLocation)>,
}

impl Catalogue for MemoryCatalogue {
    fn writer(&self, dataset: &DatasetKey, _schema: &Schema) -> Result<Box<dyn CatalogueWriter>> {
        let mut map = self.datasets.write().unwrap_or_else(|p| p.into_inner());
        let ds = map.entry(dataset.clone()).or_default().clone();
        Ok(Box::new(MemoryCatalogueWriter {
            dataset: ds,
            pending: Vec::new(),
        }))
    }

    fn datasets(&self) -> Result<Vec<DatasetKey>> {
        let map = self.datasets.read().unwrap_or_else(|p| p.into_inner());
        // A dataset exists once something was flushed into it.
        Ok(map
            .iter()
            .filter(|(_, d)| !d.is_empty())
            .map(|(k, _)| k.clone())
            .collect())
    }

    fn reader(&self, dataset: &DatasetKey) -> Result<Option<Arc<dyn DatasetReader>>> {
        let map = self.datasets.read().unwrap_or_else(|p| p.into_inner());
        Ok(map
            .get(dataset)
            .filter(|d| !d.is_empty())
            .map(|d| d.clone() as Arc<dyn DatasetReader>))
    }

    fn describe(&self, dataset: &DatasetKey) -> String {
        format!("memory:{}", dataset.braced())
    }
}

impl MemoryDataset {
    fn is_empty(&self) -> bool {
        self.collocations
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
    }
}

impl CatalogueWriter for MemoryCatalogueWriter {
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
        let mut cols = self
            .dataset
            .collocations
            .write()
            .unwrap_or_else(|p| p.into_inner());
        for (c, e, l) in self.pending.drain(..) {
            let i = match cols.iter().position(|(k, _, _)| *k == c) {
                Some(i) => i,
                None => {
                    cols.push((c, Axes::new(), Vec::new()));
                    cols.len() - 1
                }
            };
            let (_, axes, entries) = &mut cols[i];
            axes.add_key(&e);
            entries.push((e, l));
        }
        Ok(())
    }
}

impl DatasetReader for MemoryDataset {
    fn refresh(&self) -> Result<()> {
        Ok(())
    }

    fn collocations(&self) -> Result<Vec<CollocationInfo>> {
        let cols = self.collocations.read().unwrap_or_else(|p| p.into_inner());
        Ok(cols
            .iter()
            .map(|(k, a, _)| CollocationInfo {
                key: k.clone(),
                axes: a.clone(),
            })
            .collect())
    }

    fn lookup(
        &self,
        collocation: &CollocationKey,
        element: &ElementKey,
    ) -> Result<Option<FieldLocation>> {
        let cols = self.collocations.read().unwrap_or_else(|p| p.into_inner());
        Ok(cols
            .iter()
            .find(|(k, _, _)| k == collocation)
            .and_then(|(_, _, entries)| {
                entries
                    .iter()
                    .rev()
                    .find(|(e, _)| e == element)
                    .map(|(_, l)| l.clone())
            }))
    }

    fn scan(
        &self,
        collocation: &CollocationKey,
        visit: &mut dyn FnMut(&ElementKey, &FieldLocation) -> bool,
    ) -> Result<()> {
        let cols = self.collocations.read().unwrap_or_else(|p| p.into_inner());
        if let Some((_, _, entries)) = cols.iter().find(|(k, _, _)| k == collocation) {
            for (e, l) in entries.iter().rev() {
                if !visit(e, l) {
                    break;
                }
            }
        }
        Ok(())
    }
}
