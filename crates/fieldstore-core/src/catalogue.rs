//! The `Catalogue` traits: the index of fields by key.
//!
//! The backend traits live in the core crate, which does no I/O itself, so
//! that backend crates (DAOS, RADOS) implement them without depending on
//! the `fieldstore` crate that dispatches to them.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::sync::Arc;

use crate::{CollocationKey, DatasetKey, ElementKey, FieldLocation, Result, Schema};

/// Values present per keyword, sorted.
pub type Axes = BTreeMap<String, BTreeSet<String>>;

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
}

/// One writer's session with a [`Catalogue`] for one dataset.
pub trait CatalogueWriter: Send {
    /// Record a field. Invisible until [`CatalogueWriter::flush`].
    fn insert(
        &mut self,
        collocation: &CollocationKey,
        element: &ElementKey,
        location: &FieldLocation,
    ) -> Result<()>;

    /// Make every inserted entry durable and visible, atomically.
    fn flush(&mut self) -> Result<()>;
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

    /// The collocations seen so far, with their axes (no index is opened).
    fn collocations(&self) -> Result<Vec<CollocationInfo>>;

    /// The newest location of one element.
    fn lookup(
        &self,
        collocation: &CollocationKey,
        element: &ElementKey,
    ) -> Result<Option<FieldLocation>>;

    /// Visit the entries of a collocation, newest first, masked (older)
    /// entries included; `visit` returns `false` to stop.
    fn scan(
        &self,
        collocation: &CollocationKey,
        visit: &mut dyn FnMut(&ElementKey, &FieldLocation) -> bool,
    ) -> Result<()>;
}

/// Helpers on [`Axes`].
pub trait AxesExt {
    /// Add every `keyword=value` of `key`.
    fn add_key(&mut self, key: &crate::Key);
}

impl AxesExt for Axes {
    fn add_key(&mut self, key: &crate::Key) {
        for (k, v) in key.iter() {
            match self.get_mut(k) {
                Some(set) => {
                    if !set.contains(v) {
                        set.insert(v.to_string());
                    }
                }
                None => {
                    self.insert(k.to_string(), BTreeSet::from([v.to_string()]));
                }
            }
        }
    }
}
