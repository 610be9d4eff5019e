//! `type: select`: a catalogue and a store over the lanes' own
//! (`routing.rs` says what is routed where).
//!
//! A dataset belongs to one lane: a new one to the first lane whose
//! selection takes its key, an existing one to the first lane, in
//! configuration order, that holds it. Dataset operations go to that lane;
//! `datasets`, `damaged`, … concatenate the lanes' answers, each dataset
//! once. Field locations carry their scheme (`file://`, `rados://`, …), and
//! a store reads any location of its own scheme, so a location is read by
//! the first lane whose store has its scheme.

use std::collections::HashSet;
use std::sync::Arc;

use fieldstore_core::maintenance::{
    unsupported, Claim, Control, DamagedDataset, Item, Locks, Removed, Unit,
};
use fieldstore_core::{
    Catalogue, CatalogueMaintenance, CatalogueWriter, ChangeWaiter, CollocationKey,
    DamagedDatasets, DatasetKey, DatasetMover, DatasetReader, Error, ErrorKind, FieldLocation,
    Result, Schema, Store, StoreMaintenance, StoreWriter,
};

use super::select_waiter::SelectWaiter;
use crate::config::Config;
use crate::routing::{lane_for, Lane};

/// A lane and its backends.
type Opened = (Lane<Config>, Arc<dyn Catalogue>, Arc<dyn Store>);

/// The lanes, opened.
#[derive(Debug)]
pub(crate) struct Lanes {
    lanes: Vec<Opened>,
}

impl Lanes {
    /// Open every lane's backends.
    ///
    /// # Errors
    /// As the lanes' backends, naming the lane.
    pub(crate) fn open(lanes: &[Lane<Config>]) -> Result<Arc<Lanes>> {
        let mut opened = Vec::new();
        for lane in lanes {
            let (c, s) = super::open(&lane.config)
                .map_err(|e| Error::new(e.kind(), format!("{}: {}", lane.at, e.message())))?;
            opened.push((lane.clone(), c, s));
        }
        Ok(Arc::new(Lanes { lanes: opened }))
    }

    /// The catalogue of the lane a new dataset `key` goes to.
    fn for_new(&self, key: &DatasetKey) -> Result<usize> {
        let lanes: Vec<Lane<Config>> = self.lanes.iter().map(|(l, _, _)| l.clone()).collect();
        lane_for(&lanes, key).map(|(i, _)| i)
    }

    /// The lane holding `dataset`: the first, in configuration order, that
    /// has a reader for it.
    fn holder(&self, dataset: &DatasetKey) -> Result<Option<usize>> {
        for (i, (_, c, _)) in self.lanes.iter().enumerate() {
            if c.reader(dataset)?.is_some() {
                return Ok(Some(i));
            }
        }
        Ok(None)
    }

    /// The holder, or the lane a new dataset would go to (for locks and
    /// descriptions of datasets not created yet).
    fn home(&self, dataset: &DatasetKey) -> Result<usize> {
        self.holder(dataset)?
            .map_or_else(|| self.for_new(dataset), Ok)
    }

    fn catalogue(&self, i: usize) -> &dyn Catalogue {
        self.lanes[i].1.as_ref()
    }

    fn store(&self, i: usize) -> &dyn Store {
        self.lanes[i].2.as_ref()
    }

    /// What `ask` says of each lane's catalogue, concatenated; a lane it
    /// gets nothing of (`None`: the lane cannot tell) adds nothing.
    fn gather<T>(&self, ask: impl Fn(&dyn Catalogue) -> Option<Result<Vec<T>>>) -> Result<Vec<T>> {
        let mut all = Vec::new();
        for (_, c, _) in &self.lanes {
            if let Some(found) = ask(c.as_ref()) {
                all.extend(found?);
            }
        }
        Ok(all)
    }

    /// The first lane whose store has the scheme of `uri`.
    fn store_for_uri(&self, uri: &str) -> Result<&dyn Store> {
        let scheme = uri.split_once("://").map_or("", |(s, _)| s);
        self.lanes
            .iter()
            .map(|(_, _, s)| s.as_ref())
            .find(|s| s.scheme() == scheme)
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidInput,
                    format!("no sub-store of the select configuration stores {scheme}:// locations ({uri})"),
                )
            })
    }
}

/// The catalogue of a `select` configuration.
#[derive(Debug)]
pub(crate) struct SelectCatalogue(pub(crate) Arc<Lanes>);

/// The store of a `select` configuration.
#[derive(Debug)]
pub(crate) struct SelectStore(pub(crate) Arc<Lanes>);

fn missing(dataset: &DatasetKey) -> Error {
    Error::new(
        ErrorKind::NotFound,
        format!("no sub-store holds dataset {}", dataset.braced()),
    )
}

/// The maintenance of lane `i`'s catalogue, or `Unsupported` naming the
/// operation and the lane.
fn lane_maintenance<'a>(
    lanes: &'a Lanes,
    i: usize,
    operation: &str,
) -> Result<&'a dyn CatalogueMaintenance> {
    lanes
        .catalogue(i)
        .maintenance()
        .ok_or_else(|| unsupported(operation, &lanes.lanes[i].0.at))
}

/// The maintenance of the store of `dataset`'s home lane
/// ([`Lanes::home`]), or `Unsupported`.
fn home_store_maintenance<'a>(
    lanes: &'a Lanes,
    dataset: &DatasetKey,
    operation: &str,
) -> Result<&'a dyn StoreMaintenance> {
    let store = lanes.store(lanes.home(dataset)?);
    store
        .maintenance()
        .ok_or_else(|| unsupported(operation, store.scheme()))
}

/// The maintenance of the store of `uri`'s lane, or `Unsupported`.
fn store_maintenance<'a>(
    lanes: &'a Lanes,
    uri: &str,
    operation: &str,
) -> Result<&'a dyn StoreMaintenance> {
    let store = lanes.store_for_uri(uri)?;
    store
        .maintenance()
        .ok_or_else(|| unsupported(operation, store.scheme()))
}

// Every method is forwarded: a default left in place would hide what a
// lane can do (as `waiter` and `read_into` once did).
#[deny(clippy::missing_trait_methods)]
impl Catalogue for SelectCatalogue {
    /// The lane of the selection, as FDB5 archives (even if an earlier
    /// lane holds the dataset already).
    /// A new dataset is created with its sub-store's schema, which then
    /// splits its keys below level 1 (`dataset_schema.rs`); `schema` is the
    /// handle's, the sub-store's unless it names its own.
    fn writer(&self, dataset: &DatasetKey, schema: &Schema) -> Result<Box<dyn CatalogueWriter>> {
        let i = self.0.for_new(dataset)?;
        let lane = &self.0.lanes[i].0;
        let schema = if lane.own_schema {
            &lane.config.schema
        } else {
            schema
        };
        self.0.catalogue(i).writer(dataset, schema)
    }

    fn datasets(&self) -> Result<Vec<DatasetKey>> {
        let mut seen = HashSet::new();
        let all = self.0.gather(|c| Some(c.datasets()))?;
        Ok(all.into_iter().filter(|d| seen.insert(d.clone())).collect())
    }

    fn reader(&self, dataset: &DatasetKey) -> Result<Option<Arc<dyn DatasetReader>>> {
        self.0
            .lanes
            .iter()
            .find_map(|(_, c, _)| c.reader(dataset).transpose())
            .transpose()
    }

    fn describe(&self, dataset: &DatasetKey) -> String {
        match self.0.home(dataset) {
            Ok(i) => self.0.catalogue(i).describe(dataset),
            Err(e) => format!("{} ({e})", dataset.braced()),
        }
    }

    /// The lanes' own waiters (inotify, RADOS watch/notify, polling), all
    /// at once.
    fn waiter(&self) -> Result<Box<dyn ChangeWaiter>> {
        let waiters = self.0.lanes.iter().map(|(_, c, _)| c.waiter());
        Ok(SelectWaiter::over(waiters.collect::<Result<_>>()?))
    }

    /// The lanes' own waiters for `request`, all at once.
    fn waiter_for(&self, request: &fieldstore_core::Request) -> Result<Box<dyn ChangeWaiter>> {
        let waiters = self.0.lanes.iter().map(|(_, c, _)| c.waiter_for(request));
        Ok(SelectWaiter::over(waiters.collect::<Result<_>>()?))
    }

    fn maintenance(&self) -> Option<&dyn CatalogueMaintenance> {
        Some(self)
    }

    fn damaged_datasets(&self) -> Option<&dyn DamagedDatasets> {
        Some(self)
    }

    fn mover(&self) -> Option<&dyn DatasetMover> {
        let any = self.0.lanes.iter().any(|(_, c, _)| c.mover().is_some());
        any.then_some(self as &dyn DatasetMover)
    }

    /// None: the lanes are walked one by one (a remote lane is not
    /// supported in a select configuration).
    fn queries(&self) -> Option<&dyn fieldstore_core::CatalogueQueries> {
        None
    }
}

#[deny(clippy::missing_trait_methods)]
impl CatalogueMaintenance for SelectCatalogue {
    fn locks(&self, dataset: &DatasetKey) -> Result<Locks> {
        // Nothing can lock a dataset of a lane without control.
        let m = (self.0.holder(dataset)?).and_then(|i| self.0.catalogue(i).maintenance());
        m.map_or(Ok(Locks::NONE), |m| m.locks(dataset))
    }

    fn list_locked(&self) -> Result<Option<Vec<DatasetKey>>> {
        let mut all = Vec::new();
        for (_, c, _) in &self.0.lanes {
            let Some(m) = c.maintenance() else {
                // No control: nothing locked in this lane.
                continue;
            };
            match m.list_locked()? {
                Some(l) => all.extend(l),
                // One lane cannot say: ask per dataset.
                None => return Ok(None),
            }
        }
        Ok(Some(all))
    }

    fn control(&self, dataset: &DatasetKey, action: Control, operations: Locks) -> Result<Locks> {
        let i = self.0.holder(dataset)?.ok_or_else(|| missing(dataset))?;
        lane_maintenance(&self.0, i, "control")?.control(dataset, action, operations)
    }

    fn inventory(&self, dataset: &DatasetKey) -> Result<Vec<Item>> {
        let i = self.0.holder(dataset)?.ok_or_else(|| missing(dataset))?;
        lane_maintenance(&self.0, i, "wipe")?.inventory(dataset)
    }

    fn interrupted_wipes(&self) -> Result<Vec<DatasetKey>> {
        self.0
            .gather(|c| c.maintenance().map(|m| m.interrupted_wipes()))
    }

    fn wipe(
        &self,
        dataset: &DatasetKey,
        unsafe_wipe_all: bool,
        store_step: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        let i = self.0.home(dataset)?;
        lane_maintenance(&self.0, i, "wipe")?.wipe(dataset, unsafe_wipe_all, store_step)
    }

    fn wipe_collocations(
        &self,
        dataset: &DatasetKey,
        collocations: &[CollocationKey],
        units: &[String],
    ) -> Result<()> {
        let i = self.0.holder(dataset)?.ok_or_else(|| missing(dataset))?;
        lane_maintenance(&self.0, i, "wipe")?.wipe_collocations(dataset, collocations, units)
    }

    fn reclaim(
        &self,
        dataset: &DatasetKey,
        units: &[String],
        hidden: &[CollocationKey],
        dry_run: bool,
    ) -> Result<Vec<Item>> {
        let i = self.0.holder(dataset)?.ok_or_else(|| missing(dataset))?;
        lane_maintenance(&self.0, i, "purge")?.reclaim(dataset, units, hidden, dry_run)
    }
}

#[deny(clippy::missing_trait_methods)]
impl DamagedDatasets for SelectCatalogue {
    /// The lanes that can tell, concatenated.
    fn damaged(&self) -> Result<Vec<DamagedDataset>> {
        self.0.gather(|c| c.damaged_datasets().map(|d| d.damaged()))
    }

    fn wipe_damaged(&self, place: &str) -> Result<()> {
        for (_, c, _) in &self.0.lanes {
            if let Some(d) = c.damaged_datasets() {
                if d.damaged()?.iter().any(|d| d.place == place) {
                    return d.wipe_damaged(place);
                }
            }
        }
        Err(Error::new(
            ErrorKind::NotFound,
            format!("no sub-store has a damaged dataset at {place}"),
        ))
    }
}

#[deny(clippy::missing_trait_methods)]
impl DatasetMover for SelectCatalogue {
    fn move_dataset(&self, dataset: &DatasetKey, root: &std::path::Path) -> Result<String> {
        let i = self.0.holder(dataset)?.ok_or_else(|| missing(dataset))?;
        let lane = &self.0.lanes[i];
        lane.1
            .mover()
            .ok_or_else(|| unsupported("move", &lane.0.at))?
            .move_dataset(dataset, root)
    }

    fn unfinished(&self) -> Result<Vec<(DatasetKey, String)>> {
        self.0.gather(|c| c.mover().map(|m| m.unfinished()))
    }
}

#[deny(clippy::missing_trait_methods)]
impl Store for SelectStore {
    /// The lane of the selection, as the catalogue's writer.
    fn writer(&self, dataset: &DatasetKey) -> Result<Box<dyn StoreWriter>> {
        let i = self.0.for_new(dataset)?;
        self.0.store(i).writer(dataset)
    }

    fn read(&self, location: &FieldLocation, buf: &mut Vec<u8>) -> Result<()> {
        self.0.store_for_uri(&location.uri)?.read(location, buf)
    }

    fn read_into(&self, location: &FieldLocation, out: &mut [u8]) -> Result<()> {
        self.0
            .store_for_uri(&location.uri)?
            .read_into(location, out)
    }

    fn read_range(&self, location: &FieldLocation, offset: u64, out: &mut [u8]) -> Result<()> {
        self.0
            .store_for_uri(&location.uri)?
            .read_range(location, offset, out)
    }

    fn prefetch(&self, locations: &[FieldLocation]) {
        for (_, _, s) in &self.0.lanes {
            let mine: Vec<FieldLocation> = locations
                .iter()
                .filter(|l| l.scheme() == s.scheme())
                .cloned()
                .collect();
            if !mine.is_empty() {
                s.prefetch(&mine);
            }
        }
    }

    fn scheme(&self) -> &'static str {
        "select"
    }

    fn maintenance(&self) -> Option<&dyn StoreMaintenance> {
        Some(self)
    }
}

#[deny(clippy::missing_trait_methods)]
impl StoreMaintenance for SelectStore {
    fn inspect(&self, uri: &str) -> Result<Unit> {
        store_maintenance(&self.0, uri, "purge")?.inspect(uri)
    }

    /// Each lane's units asked together, by that lane's store.
    fn inspect_all(&self, uris: &[String]) -> Vec<Result<Unit>> {
        let mut out: Vec<Option<Result<Unit>>> = uris.iter().map(|_| None).collect();
        let mut lanes: Vec<(&dyn StoreMaintenance, Vec<usize>)> = Vec::new();
        for (i, uri) in uris.iter().enumerate() {
            match store_maintenance(&self.0, uri, "purge") {
                Ok(m) => match lanes
                    .iter_mut()
                    .find(|(l, _)| std::ptr::addr_eq(*l as *const _, m as *const _))
                {
                    Some((_, ix)) => ix.push(i),
                    None => lanes.push((m, vec![i])),
                },
                Err(e) => out[i] = Some(Err(e)),
            }
        }
        for (m, ix) in lanes {
            let asked: Vec<String> = ix.iter().map(|&i| uris[i].clone()).collect();
            for (i, r) in ix.into_iter().zip(m.inspect_all(&asked)) {
                out[i] = Some(r);
            }
        }
        out.into_iter()
            .map(|r| {
                r.unwrap_or_else(|| Err(fieldstore_core::Error::internal("a unit not inspected")))
            })
            .collect()
    }

    fn claim(&self, uri: &str) -> Result<Claim<'_>> {
        store_maintenance(&self.0, uri, "purge")?.claim(uri)
    }

    fn remove(&self, uri: &str) -> Result<Removed> {
        store_maintenance(&self.0, uri, "purge")?.remove(uri)
    }

    fn orphans(&self, dataset: &DatasetKey, referenced: &HashSet<String>) -> Result<Vec<Unit>> {
        home_store_maintenance(&self.0, dataset, "purge")?.orphans(dataset, referenced)
    }

    fn inventory(&self, dataset: &DatasetKey, units: &[String]) -> Result<Vec<Item>> {
        home_store_maintenance(&self.0, dataset, "wipe")?.inventory(dataset, units)
    }

    fn wipe(&self, dataset: &DatasetKey, units: &[String]) -> Result<()> {
        home_store_maintenance(&self.0, dataset, "wipe")?.wipe(dataset, units)
    }
}
