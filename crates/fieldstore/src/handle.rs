//! `FieldStore`: the handle users hold.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use fieldstore_core::maintenance::{locked, unsupported};
use fieldstore_core::{
    CatalogueMaintenance, CollocationKey, DatasetKey, Error, ErrorKind, FieldLocation, Item, Key,
    Level, Locks, Operation, Request, Result, Schema, SplitKey, StoreMaintenance, Values,
};

use crate::config::Config;
use crate::dataset_schema::{own_selector, resplit, DatasetSchemas};
use crate::list::{ListElement, ListOptions};
use crate::retrieve::DataReader;
use crate::sync::lock;
use fieldstore_core::catalogue::{
    Axes, Catalogue, CatalogueWriter, DatasetReader, DatasetReaderExt,
};
use fieldstore_core::store::{Store, StoreWriter};

/// A handle on a field store: archive, flush, retrieve, list, axes.
///
/// One handle may be shared between threads (`FieldStore: Send + Sync`);
/// [`FieldStore::flush`] flushes what every thread archived through it. Use
/// one handle per thread for independent flushes.
///
/// A handle belongs to the process that opened it: in a child forked from
/// that process, [`archive`](FieldStore::archive), [`flush`](FieldStore::flush)
/// and [`discard`](FieldStore::discard) fail (`InvalidInput`), and dropping
/// it there touches none of the parent's files (`process.rs` says why).
/// Open a new handle in the child.
///
/// # Example
/// ```
/// use fieldstore::{Config, FieldStore, ListOptions, Schema};
/// let schema: Schema = "[ class, expver [ type [ step, param ]]]".parse()?;
/// let fs = FieldStore::open(Config::memory(schema))?;
/// fs.archive(&"class=od,expver=0001,type=fc,step=6,param=167".parse()?, b"GRIB...7777")?;
/// fs.flush()?;
/// let bytes = fs.retrieve(&"class=od,expver=0001,type=fc,step=6,param=167".parse()?)?.read_all()?;
/// assert_eq!(bytes, b"GRIB...7777");
/// let listed = fs.list(&"class=od".parse()?, ListOptions::default())?;
/// assert_eq!(listed[0].braced(), "{class=od,expver=0001}{type=fc}{step=6,param=167}");
/// # Ok::<(), fieldstore::Error>(())
/// ```
pub struct FieldStore {
    config: Config,
    pub(crate) schema: Arc<Schema>,
    pub(crate) catalogue: Arc<dyn Catalogue>,
    pub(crate) store: Arc<dyn Store>,
    writers: Mutex<HashMap<DatasetKey, DatasetWriter>>,
    readers: Mutex<HashMap<DatasetKey, Arc<dyn DatasetReader>>>,
    /// The schemas datasets were created under, where they differ from
    /// `schema` (`dataset_schema.rs`).
    pub(crate) dataset_schemas: Arc<DatasetSchemas>,
    /// The id of the process that opened the handle: its writers are that
    /// process's ([`FieldStore::check_process`]).
    owner: u32,
}

struct DatasetWriter {
    store: Box<dyn StoreWriter>,
    catalogue: Box<dyn CatalogueWriter>,
    /// The dataset's own schema, when it is not the handle's.
    own: Option<Arc<Schema>>,
    dirty: bool,
}

impl std::fmt::Debug for FieldStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FieldStore")
            .field("source", &self.config.source)
            .field("catalogue", &self.catalogue)
            .field("store", &self.store)
            .finish()
    }
}

impl FieldStore {
    /// Open the store a configuration describes.
    ///
    /// # Errors
    /// `InvalidConfig`; I/O errors opening the roots.
    pub fn open(mut config: Config) -> Result<FieldStore> {
        let (catalogue, store) = crate::backends::open(&config)?;
        // A catalogue that answers requests itself splits keys by its own
        // schema: archive by it too.
        if let Some(q) = catalogue.queries() {
            config.schema = q.schema().clone();
        }
        Ok(FieldStore::with_backends(config, catalogue, store))
    }

    /// Open with the configuration of the environment ([`Config::from_env`]).
    ///
    /// # Errors
    /// As [`FieldStore::open`].
    pub fn open_default() -> Result<FieldStore> {
        FieldStore::open(Config::from_env()?)
    }

    /// A handle over given backends (tests; sharing one memory backend
    /// between handles).
    pub fn with_backends(
        config: Config,
        catalogue: Arc<dyn Catalogue>,
        store: Arc<dyn Store>,
    ) -> FieldStore {
        FieldStore {
            schema: Arc::new(config.schema.clone()),
            config,
            catalogue,
            store,
            writers: Mutex::new(HashMap::new()),
            readers: Mutex::new(HashMap::new()),
            dataset_schemas: Arc::default(),
            owner: crate::process::current(),
        }
    }

    /// Refuse to write through this handle in a process other than the one
    /// that opened it (a child forked from it): the writers it holds are
    /// the parent's, which still appends to the same files, so writing,
    /// flushing or discarding them here would lose or corrupt fields of
    /// both processes. One atomic load (`process.rs`).
    ///
    /// # Errors
    /// `InvalidInput` naming both processes.
    pub fn check_process(&self) -> Result<()> {
        if self.in_owner() {
            return Ok(());
        }
        let here = crate::process::current();
        Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "this handle was opened by process {} and is used in process {here} (a child \
                 forked from it): its writers belong to process {}; open a new handle in the child",
                self.owner, self.owner
            ),
        ))
    }

    /// Whether this is the process that opened the handle.
    fn in_owner(&self) -> bool {
        crate::process::current() == self.owner
    }

    /// This handle with `names` resolving parameter names (`2t` → `167`)
    /// in every request and key it is given (see
    /// [`fieldstore_core::params`]). Without it, a name is kept lower-cased
    /// as written and matches only a key archived under the same name;
    /// fieldstore's CLI, Python package and C API install ecCodes' table
    /// (`fieldstore_grib::param_names`).
    #[must_use]
    pub fn with_param_names(mut self, names: Arc<dyn fieldstore_core::ParamNames>) -> FieldStore {
        self.schema = Arc::new((*self.schema).clone().with_param_names(names));
        // Datasets' own schemas take the table too: parse them afresh.
        self.dataset_schemas = Arc::default();
        self
    }

    /// The schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The catalogue backend.
    pub fn catalogue(&self) -> &Arc<dyn Catalogue> {
        &self.catalogue
    }

    /// The store backend.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Archive one field. Returns once the store holds its own copy; the
    /// field is visible after [`FieldStore::flush`].
    ///
    /// # Errors
    /// `InvalidInput` if the key does not fit the schema, or holds a value
    /// no request could name (`/`, or the words `all`, `to`, `by`), naming
    /// the keyword and the value (nothing is stored); I/O errors
    /// (`StorageFull`, `PermissionDenied`, …).
    pub fn archive(&self, key: &Key, data: &[u8]) -> Result<()> {
        let split = self.schema.split(key)?;
        self.archive_split(&split, data)
    }

    /// Archive a field whose key is already split by this store's schema.
    ///
    /// # Errors
    /// As [`FieldStore::archive`].
    pub fn archive_split(&self, split: &SplitKey, data: &[u8]) -> Result<()> {
        self.archive_extended(split, data, None)
    }

    /// [`FieldStore::archive_split`], with an extension the catalogue keeps
    /// with the field's entry and hands back in its location
    /// ([`FieldLocation::extension`]): GRIB jump info (`docs/extract.md`).
    /// Its first byte says what it is; the store does not interpret it.
    ///
    /// # Errors
    /// As [`FieldStore::archive`].
    pub fn archive_extended(
        &self,
        split: &SplitKey,
        data: &[u8],
        extension: Option<Arc<[u8]>>,
    ) -> Result<()> {
        self.check_process()?;
        // Nothing is stored that a request could not name again.
        for level in [
            split.dataset.key(),
            split.collocation.key(),
            split.element.key(),
        ] {
            for (keyword, value) in level.iter() {
                fieldstore_core::key::check_requestable(keyword, value)?;
            }
        }
        let mut writers = lock(&self.writers);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let w = match writers.get_mut(&split.dataset) {
                Some(w) => w,
                None => {
                    // The catalogue first: it creates a new dataset where its
                    // space places it, and a POSIX store writer then finds it
                    // there (a random placement asked twice could differ).
                    let catalogue = self.catalogue.writer(&split.dataset, &self.schema)?;
                    crate::failpoint::hit("archive.catalogue_writer_made");
                    let own = self.dataset_schemas.own(
                        &self.schema,
                        catalogue.schema_text(),
                        &split.dataset,
                    )?;
                    let w = DatasetWriter {
                        store: self.store.writer(&split.dataset)?,
                        catalogue,
                        own,
                        dirty: false,
                    };
                    writers.entry(split.dataset.clone()).or_insert(w)
                }
            };
            // Below level 1, a dataset keeps the layout of its own schema.
            let again;
            let split = match &w.own {
                Some(own) => {
                    again = resplit(own, split)?;
                    &again
                }
                None => split,
            };
            let archived = w
                .store
                .archive(&split.collocation, data)
                .and_then(|mut location| {
                    location.extension.clone_from(&extension);
                    w.catalogue
                        .insert(&split.collocation, &split.element, &location)
                });
            match archived {
                Ok(()) => {
                    w.dirty = true;
                    return Ok(());
                }
                // The dataset was wiped or moved away before this writer
                // held anything: nothing is lost by starting again with a
                // writer of the dataset where it is now. (A writer holding
                // fields keeps the error: its flush reports them lost.)
                Err(e) if e.kind() == ErrorKind::NotFound && !w.dirty && attempt < 3 => {
                    writers.remove(&split.dataset);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Make everything archived through this handle durable and visible to
    /// every reader, atomically per dataset. Data is on stable storage
    /// before the catalogue makes it visible.
    ///
    /// # Errors
    /// I/O errors. A dataset whose flush failed keeps nothing pending: what
    /// it had not made visible must be archived again. `InvalidInput` in a
    /// process other than the one that opened the handle
    /// ([`FieldStore::check_process`]).
    pub fn flush(&self) -> Result<()> {
        self.check_process()?;
        let mut writers = lock(&self.writers);
        let mut first_error = None;
        let mut failed = Vec::new();
        for (dataset, w) in writers.iter_mut().filter(|(_, w)| w.dirty) {
            crate::failpoint::hit("flush.start");
            // The catalogue writes ahead what it will publish, so that the
            // store's sync carries it to the disk too
            // (`CatalogueWriter::prepare_flush`); nothing is visible yet.
            let r = w
                .catalogue
                .prepare_flush()
                .map_err(|e| (e, true))
                .and_then(|()| w.store.flush().map_err(|e| (e, true)))
                .and_then(|()| {
                    crate::failpoint::hit("flush.store_done");
                    w.catalogue
                        .flush()
                        .map_err(|e| (e, w.catalogue.last_flush_invisible()))?;
                    // Visible now; acknowledged only if the store's units
                    // cannot have been reclaimed across the publish.
                    w.store.confirm_published().map_err(|e| (e, false))
                });
            match r {
                Ok(()) => {
                    w.store.indexed();
                    w.dirty = false;
                }
                Err((e, invisible)) => {
                    // Nothing of it became visible: its bytes go now (a
                    // full disk must not stay full for a failed flush).
                    if invisible {
                        w.store.abandon();
                    }
                    failed.push(dataset.clone());
                    first_error
                        .get_or_insert(e.context(format!("flushing dataset {}", dataset.braced())));
                }
            }
        }
        for d in failed {
            writers.remove(&d);
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Drop everything archived but not flushed: none of it becomes
    /// visible. (Dropping the handle flushes instead, as FDB5's does.)
    ///
    /// # Errors
    /// `InvalidInput` in a process other than the one that opened the
    /// handle ([`FieldStore::check_process`]); nothing is dropped then.
    pub fn discard(&self) -> Result<()> {
        self.check_process()?;
        lock(&self.writers).clear();
        Ok(())
    }

    /// Whether something archived is not yet flushed.
    pub fn dirty(&self) -> bool {
        lock(&self.writers).values().any(|w| w.dirty)
    }

    /// A reader for `dataset`, refreshed once per call of a public operation
    /// (`fresh` records which readers were refreshed).
    pub(crate) fn reader(
        &self,
        dataset: &DatasetKey,
        fresh: &mut HashSet<DatasetKey>,
    ) -> Result<Option<Arc<dyn DatasetReader>>> {
        let cached = lock(&self.readers).get(dataset).cloned();
        if let Some(reader) = cached {
            if fresh.insert(dataset.clone()) {
                reader.refresh()?;
            }
            return Ok(Some(reader));
        }
        let Some(r) = self.catalogue.reader(dataset)? else {
            return Ok(None);
        };
        lock(&self.readers).insert(dataset.clone(), r.clone());
        fresh.insert(dataset.clone());
        Ok(Some(r))
    }

    /// The schema splitting `dataset`'s keys below level 1, when it is
    /// not the handle's (`dataset_schema.rs`).
    ///
    /// # Errors
    /// `Corrupt` if the schema stored with it does not parse.
    pub(crate) fn own_schema(
        &self,
        dataset: &DatasetKey,
        reader: &dyn DatasetReader,
    ) -> Result<Option<Arc<Schema>>> {
        self.dataset_schemas
            .own(&self.schema, reader.schema_text(), dataset)
    }

    /// `split` (by the handle's schema) as the schema of its dataset,
    /// read by `reader`, splits it.
    ///
    /// # Errors
    /// As [`FieldStore::own_schema`]; `InvalidInput` if that schema does
    /// not take the key in the same dataset.
    pub(crate) fn in_own_schema(
        &self,
        split: SplitKey,
        reader: &dyn DatasetReader,
    ) -> Result<SplitKey> {
        match self.own_schema(&split.dataset, reader)? {
            Some(own) => resplit(&own, &split),
            None => Ok(split),
        }
    }

    /// Drop the cached reader of `dataset` (after a wipe, purge or move).
    pub(crate) fn forget_reader(&self, dataset: &DatasetKey) {
        lock(&self.readers).remove(dataset);
    }

    /// The fields `request` names, in request order. Missing fields are not
    /// an error: they are absent from the result. A request of explicit
    /// values is resolved by [`FieldStore::locate`], so it costs what the
    /// store holds when it names more keys than point lookups are worth
    /// (`step=0/to/100000000`); one with `all` is listed.
    ///
    /// A field whose bytes vanish between the lookup and the read (its
    /// dataset wiped, or its version replaced and purged) is looked up
    /// again when it is read: the newer version is read, or, if the field
    /// no longer exists, it is absent.
    ///
    /// # Errors
    /// `InvalidInput` for a malformed request; `Locked` if a dataset it
    /// names is locked against retrieve; I/O errors.
    pub fn retrieve(&self, request: &Request) -> Result<DataReader> {
        // A catalogue that answers requests itself answers `all` too:
        // `locate` forwards the whole request.
        let queries = self.catalogue.queries().is_some();
        let entries = if request.has_all() && !queries {
            let entries = self.list(request, ListOptions::default())?;
            let mut checked = HashSet::new();
            let mut fresh = HashSet::new();
            for e in &entries {
                if checked.insert(e.dataset.clone()) {
                    if let Some(r) = self.reader(&e.dataset, &mut fresh)? {
                        if r.locks().contains(Operation::Retrieve) {
                            return Err(locked(&e.dataset, Operation::Retrieve));
                        }
                    }
                }
            }
            entries
        } else {
            self.locate(request)?
        };
        let fields: Vec<_> = entries
            .into_iter()
            .filter_map(|e| Some((e.full_key(), e.location?)))
            .collect();
        if queries {
            return Ok(DataReader::new(self.store.clone(), fields));
        }
        let schema = self.schema.clone();
        let catalogue = self.catalogue.clone();
        let schemas = self.dataset_schemas.clone();
        let resolve = move |key: &Key| -> Result<Option<FieldLocation>> {
            let split = schema.split(key)?;
            let Some(r) = catalogue.reader(&split.dataset)? else {
                return Ok(None);
            };
            let split = match schemas.own(&schema, r.schema_text(), &split.dataset)? {
                Some(own) => resplit(&own, &split)?,
                None => split,
            };
            r.lookup(&split.collocation, &split.element)
        };
        Ok(DataReader::new(self.store.clone(), fields).with_resolver(Arc::new(resolve)))
    }

    /// A dataset's locks for a dataset-level listing: from the backend's
    /// list of list-locked datasets when it has one, else asked.
    fn dataset_locks(
        &self,
        dataset: &DatasetKey,
        hidden: &Option<Vec<DatasetKey>>,
    ) -> Result<Locks> {
        match hidden {
            Some(h) if h.contains(dataset) => Ok(Locks::NONE.with(Operation::List)),
            Some(_) => Ok(Locks::NONE),
            None => self.catalogue_locks(dataset),
        }
    }

    /// The catalogue's maintenance, or `Unsupported` naming `operation`
    /// and the backend.
    pub(crate) fn catalogue_maintenance(
        &self,
        operation: &str,
    ) -> Result<&dyn CatalogueMaintenance> {
        self.catalogue
            .maintenance()
            .ok_or_else(|| unsupported(operation, &self.backend_name()))
    }

    /// The store's maintenance, or `Unsupported` naming `operation` and
    /// the store.
    pub(crate) fn store_maintenance(&self, operation: &str) -> Result<&dyn StoreMaintenance> {
        self.store
            .maintenance()
            .ok_or_else(|| unsupported(operation, self.store.scheme()))
    }

    /// The catalogue's name for messages (`toc`, `rados`, `select`).
    fn backend_name(&self) -> String {
        format!("{:?}", self.config.engine).to_lowercase()
    }

    /// A dataset's locks as of now. A catalogue without maintenance has
    /// none: nothing can set them.
    pub(crate) fn catalogue_locks(&self, dataset: &DatasetKey) -> Result<Locks> {
        self.catalogue
            .maintenance()
            .map_or(Ok(Locks::NONE), |m| m.locks(dataset))
    }

    /// Every list-locked dataset, when the catalogue knows them cheaply
    /// (none without maintenance: nothing can lock them).
    fn list_locked(&self) -> Result<Option<Vec<DatasetKey>>> {
        self.catalogue
            .maintenance()
            .map_or(Ok(Some(Vec::new())), |m| m.list_locked())
    }

    /// Whether a listing over `request` may show `dataset`, given its
    /// locks: a list-locked dataset is left out, unless the request names
    /// exactly that dataset, which is an error.
    pub(crate) fn listable(
        &self,
        request: &Request,
        dataset: &DatasetKey,
        locks: Locks,
    ) -> Result<bool> {
        if !locks.contains(Operation::List) {
            return Ok(true);
        }
        let pinned = dataset.keywords().all(|kw| {
            matches!(request.get(kw), Some(Values::Items(items))
                if items.len() == 1 && matches!(items[0], Item::Value(_)))
        });
        if pinned {
            return Err(locked(dataset, Operation::List));
        }
        Ok(false)
    }

    /// Where one field is, if it exists (`fieldstore where`).
    ///
    /// # Errors
    /// `InvalidInput` if the key does not fit the schema; I/O errors.
    pub fn location(&self, key: &Key) -> Result<Option<FieldLocation>> {
        let split = self.schema.split(key)?;
        if self.catalogue.queries().is_some() {
            let request = Request::from_pairs(key.iter().map(|(k, v)| (k, [v])))?;
            return Ok(self.locate(&request)?.into_iter().find_map(|e| e.location));
        }
        let mut fresh = HashSet::new();
        match self.reader(&split.dataset, &mut fresh)? {
            Some(r) if r.locks().contains(Operation::Retrieve) => {
                Err(locked(&split.dataset, Operation::Retrieve))
            }
            Some(r) => {
                let split = self.in_own_schema(split, r.as_ref())?;
                r.lookup(&split.collocation, &split.element)
            }
            None => Ok(None),
        }
    }

    /// Visit what a partial request names, down to `options.depth`:
    /// datasets, collocations, or fields (in FDB5's order for the same
    /// history, `walk.rs`; masked entries only with `options.duplicates`).
    /// `visit` returns `false` to stop.
    ///
    /// Damage costs only what it damaged: a damaged dataset, log record or
    /// index block is stepped over, everything else is visited, and then
    /// the call fails with `Corrupt` naming every damaged place it met.
    ///
    /// # Errors
    /// `InvalidInput` for a malformed request; I/O errors; `Corrupt` (after
    /// visiting everything readable).
    pub fn visit(
        &self,
        request: &Request,
        options: ListOptions,
        visit: &mut dyn FnMut(ListElement) -> bool,
    ) -> Result<()> {
        let mut damage = std::collections::BTreeSet::new();
        self.visit_inner(request, options, visit, &mut damage)?;
        if damage.is_empty() {
            return Ok(());
        }
        let n = damage.len();
        Err(Error::corrupt(format!(
            "{n} damaged place{} stepped over (everything else was listed): {}",
            if n == 1 { "" } else { "s" },
            Vec::from_iter(damage).join("; ")
        )))
    }

    fn visit_inner(
        &self,
        request: &Request,
        options: ListOptions,
        visit: &mut dyn FnMut(ListElement) -> bool,
        damage: &mut std::collections::BTreeSet<String>,
    ) -> Result<()> {
        if let Some(q) = self.catalogue.queries() {
            return q.list(request, options.depth, options.duplicates, visit);
        }
        let selector = self.schema.selector(request)?;
        let (datasets, pinned) = self.candidate_datasets(&selector)?;
        // A pinned request's datasets are opened, each damaged one noted
        // as it is met (`named_reader`, in the same words): no scan of the
        // catalogue for them.
        if !pinned {
            for d in self.damaged_datasets(&selector)? {
                damage.insert(format!("dataset {}: {}", d.1.place, d.1.problem));
            }
        }
        if options.depth != Level::Dataset {
            let mut listable = |dataset: &DatasetKey, reader: &dyn DatasetReader| -> Result<bool> {
                self.listable(request, dataset, reader.locks())
            };
            self.walk(
                datasets,
                pinned,
                &selector,
                options,
                &mut HashSet::new(),
                damage,
                &mut listable,
                None,
                visit,
            )?;
            return Ok(());
        }
        // FDB5's order (walk.rs).
        let hidden = self.list_locked()?;
        let mut fresh = HashSet::new();
        for dataset in datasets {
            if selector.match_dataset(&dataset).is_none() {
                continue;
            }
            // Named, not listed: shown if it exists, as the walk would.
            if pinned && self.named_reader(&dataset, &mut fresh, damage)?.is_none() {
                continue;
            }
            if !self.listable(request, &dataset, self.dataset_locks(&dataset, &hidden)?)? {
                continue;
            }
            let e = ListElement {
                dataset,
                collocation: CollocationKey::default(),
                element: Default::default(),
                location: None,
            };
            if !visit(e) {
                return Ok(());
            }
        }
        Ok(())
    }

    /// What a partial request names, down to `options.depth` (see
    /// [`FieldStore::visit`]).
    ///
    /// # Errors
    /// As [`FieldStore::visit`].
    pub fn list(&self, request: &Request, options: ListOptions) -> Result<Vec<ListElement>> {
        let mut out = Vec::new();
        self.visit(request, options, &mut |e| {
            out.push(e);
            true
        })?;
        Ok(out)
    }

    /// The values present per keyword among what `request` names, down to
    /// `depth`. Element-level values come from the axes kept with each
    /// collocation: no index is read.
    ///
    /// # Errors
    /// As [`FieldStore::visit`].
    pub fn axes(&self, request: &Request, depth: Level) -> Result<Axes> {
        if let Some(q) = self.catalogue.queries() {
            return q.axes(request, depth);
        }
        let selector = self.schema.selector(request)?;
        let mut axes = Axes::new();
        let add = |k: &Key, axes: &mut Axes| {
            for (kw, v) in k.iter() {
                axes.entry(kw.to_string())
                    .or_default()
                    .insert(v.to_string());
            }
        };
        let mut fresh = HashSet::new();
        let hidden = if depth == Level::Dataset {
            self.list_locked()?
        } else {
            None
        };
        let (datasets, pinned) = self.candidate_datasets(&selector)?;
        for dataset in datasets {
            let Some(dm) = selector.match_dataset(&dataset) else {
                continue;
            };
            if depth == Level::Dataset {
                // Named, not listed: counted if it exists (a damaged one
                // left out, as listing leaves it out).
                if pinned
                    && self
                        .named_reader(&dataset, &mut fresh, &mut Default::default())?
                        .is_none()
                {
                    continue;
                }
                if self.listable(request, &dataset, self.dataset_locks(&dataset, &hidden)?)? {
                    add(&dataset, &mut axes);
                }
                continue;
            }
            let Some(reader) =
                self.candidate_reader(&dataset, pinned, &mut fresh, &mut Default::default())?
            else {
                continue;
            };
            if !self.listable(request, &dataset, reader.locks())? {
                continue;
            }
            // Below level 1, the dataset's own schema matches.
            let own = self.own_schema(&dataset, reader.as_ref())?;
            let Some((selector, dm)) = own_selector(&own, request, &selector, &dataset, dm)? else {
                continue;
            };
            let mut any = false;
            for info in reader.collocations()? {
                let Some(cm) = selector.match_collocation(&dm, &info.key) else {
                    continue;
                };
                let filter = selector.element_filter(&cm);
                if filter.is_impossible() || !filter.admits_axes(&info.axes) {
                    continue;
                }
                any = true;
                add(&info.key, &mut axes);
                if depth == Level::Element {
                    for (kw, values) in &info.axes {
                        let set = filter
                            .constraints()
                            .find(|(k, _)| *k == kw.as_str())
                            .map(|(_, s)| s);
                        let target = axes.entry(kw.clone()).or_default();
                        target.extend(
                            values
                                .iter()
                                .filter(|v| set.is_none_or(|s| s.contains(v)))
                                .cloned(),
                        );
                    }
                }
            }
            if any {
                add(&dataset, &mut axes);
            }
        }
        Ok(axes)
    }
}

impl Drop for FieldStore {
    /// Flushes what is pending, as FDB5's handle does; errors can only be
    /// reported by calling [`FieldStore::flush`] first.
    ///
    /// In a process other than the one that opened the handle (a forked
    /// child), nothing is flushed and the writers are forgotten, not
    /// dropped: their drops would give back the data files' preallocated
    /// blocks (`ftruncate`) under the parent, which still writes them, and
    /// wait for writer threads that do not exist in the child. Their memory
    /// is the child's copy, reclaimed when it exits.
    fn drop(&mut self) {
        if !self.in_owner() {
            let writers = std::mem::take(self.writers.get_mut().unwrap_or_else(|p| p.into_inner()));
            std::mem::forget(writers);
            return;
        }
        if self.dirty() {
            let _ = self.flush();
        }
    }
}
