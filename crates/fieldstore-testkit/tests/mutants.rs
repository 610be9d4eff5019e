//! The suite catches broken backends: each mutant wraps the memory backend
//! with one defect that breaks a clause of the contract, and the check for
//! that clause must fail on it. (A suite that passes everything proves
//! nothing.)

use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use fieldstore::backends::memory::MemoryBackend;
use fieldstore::{
    Catalogue, CatalogueWriter, CollocationInfo, CollocationKey, Config, DatasetKey, DatasetReader,
    DatasetReaderExt, ElementKey, Error, ErrorKind, FieldLocation, FieldStore, Result, Schema,
    Store, StoreWriter,
};
use fieldstore_testkit::{support, Check, Open};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Defect {
    /// Entries become visible at insert, not at flush.
    VisibleBeforeFlush,
    /// Lookups and scans prefer the oldest entry.
    OldestWins,
    /// Every 50th entry inserted is dropped.
    LosesEntries,
    /// A missing field is a NotFound error.
    MissingIsError,
    /// A reader never sees flushes after it was opened.
    FrozenReaders,
    /// Reads of large fields lose their last byte.
    ShortReads,
    /// Scans visit every entry twice.
    ScanTwice,
    /// Collocation axes lose their largest value.
    AxesLoseValue,
    /// Annotations are stored as plain entries (their flag dropped): a
    /// late one resurrects the field it annotated.
    AnnotationsAsEntries,
    /// Damaged fields are returned as data.
    NoChecksums,
    /// Damaged fields are reported (the positive control).
    Checksums,
}

#[derive(Debug)]
struct MutantCatalogue {
    inner: Arc<dyn Catalogue>,
    defect: Defect,
    inserted: Arc<AtomicUsize>,
}

struct MutantWriter {
    inner: Box<dyn CatalogueWriter>,
    defect: Defect,
    inserted: Arc<AtomicUsize>,
}

/// A collocation and its entries, newest first, as a frozen reader saw them.
type Frozen = (CollocationInfo, Vec<(ElementKey, FieldLocation)>);

#[derive(Debug)]
struct MutantReader {
    inner: Arc<dyn DatasetReader>,
    defect: Defect,
    frozen: Option<Vec<Frozen>>,
}

impl Catalogue for MutantCatalogue {
    fn writer(&self, dataset: &DatasetKey, schema: &Schema) -> Result<Box<dyn CatalogueWriter>> {
        Ok(Box::new(MutantWriter {
            inner: self.inner.writer(dataset, schema)?,
            defect: self.defect,
            inserted: self.inserted.clone(),
        }))
    }
    fn datasets(&self) -> Result<Vec<DatasetKey>> {
        self.inner.datasets()
    }
    fn reader(&self, dataset: &DatasetKey) -> Result<Option<Arc<dyn DatasetReader>>> {
        let Some(inner) = self.inner.reader(dataset)? else {
            return Ok(None);
        };
        let frozen = if self.defect == Defect::FrozenReaders {
            let mut snapshot = Vec::new();
            for info in inner.collocations()? {
                let mut entries = Vec::new();
                inner.scan(&info.key, &mut |e, l| {
                    entries.push((e.clone(), l.clone()));
                    true
                })?;
                snapshot.push((info, entries));
            }
            Some(snapshot)
        } else {
            None
        };
        Ok(Some(Arc::new(MutantReader {
            inner,
            defect: self.defect,
            frozen,
        })))
    }
    fn describe(&self, dataset: &DatasetKey) -> String {
        self.inner.describe(dataset)
    }
    fn waiter(&self) -> Result<Box<dyn fieldstore::ChangeWaiter>> {
        self.inner.waiter()
    }
    fn maintenance(&self) -> Option<&dyn fieldstore::CatalogueMaintenance> {
        self.inner.maintenance()
    }
    fn damaged_datasets(&self) -> Option<&dyn fieldstore::DamagedDatasets> {
        self.inner.damaged_datasets()
    }
    fn mover(&self) -> Option<&dyn fieldstore::DatasetMover> {
        self.inner.mover()
    }

    fn queries(&self) -> Option<&dyn fieldstore::CatalogueQueries> {
        self.inner.queries()
    }
}

impl CatalogueWriter for MutantWriter {
    fn insert(&mut self, c: &CollocationKey, e: &ElementKey, l: &FieldLocation) -> Result<()> {
        let n = self.inserted.fetch_add(1, Ordering::Relaxed);
        if self.defect == Defect::LosesEntries && n % 50 == 49 {
            return Ok(());
        }
        if self.defect == Defect::AnnotationsAsEntries && l.annotates {
            let mut plain = l.clone();
            plain.annotates = false;
            self.inner.insert(c, e, &plain)?;
        } else {
            self.inner.insert(c, e, l)?;
        }
        if self.defect == Defect::VisibleBeforeFlush {
            self.inner.flush()?;
        }
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }
    fn last_flush_invisible(&self) -> bool {
        self.inner.last_flush_invisible()
    }
    fn schema_text(&self) -> Option<Arc<str>> {
        self.inner.schema_text()
    }
}

impl MutantReader {
    fn entries(&self, c: &CollocationKey) -> Result<Vec<(ElementKey, FieldLocation)>> {
        if let Some(frozen) = &self.frozen {
            return Ok(frozen
                .iter()
                .find(|(i, _)| i.key == *c)
                .map(|(_, e)| e.clone())
                .unwrap_or_default());
        }
        let mut out = Vec::new();
        self.inner.scan(c, &mut |e, l| {
            out.push((e.clone(), l.clone()));
            true
        })?;
        Ok(out)
    }
}

impl DatasetReader for MutantReader {
    fn refresh(&self) -> Result<()> {
        self.inner.refresh()
    }
    fn visit_collocations(
        &self,
        visit: &mut dyn FnMut(&CollocationKey, &fieldstore::Axes),
    ) -> Result<()> {
        let mut infos = match &self.frozen {
            Some(f) => f.iter().map(|(i, _)| i.clone()).collect(),
            None => self.inner.collocations()?,
        };
        if self.defect == Defect::AxesLoseValue {
            for info in &mut infos {
                for values in info.axes.values_mut() {
                    if values.len() > 1 {
                        values.pop_last();
                    }
                }
            }
        }
        for info in &infos {
            visit(&info.key, &info.axes);
        }
        Ok(())
    }
    fn lookup(&self, c: &CollocationKey, e: &ElementKey) -> Result<Option<FieldLocation>> {
        let mut found = self.entries(c)?.into_iter().filter(|(k, _)| k == e);
        let hit = if self.defect == Defect::OldestWins {
            found.last()
        } else {
            found.next()
        };
        match hit {
            None if self.defect == Defect::MissingIsError => {
                Err(Error::new(ErrorKind::NotFound, format!("no field {e}")))
            }
            h => Ok(h.map(|(_, l)| l)),
        }
    }
    /// Everything is scanned (admits and positions ignored), so that the
    /// defects show.
    fn scan_since(
        &self,
        c: &CollocationKey,
        _position: u64,
        _admits: &dyn Fn(&fieldstore::Axes) -> bool,
        visit: &mut dyn FnMut(&ElementKey, &FieldLocation) -> bool,
    ) -> Result<()> {
        let mut entries = self.entries(c)?;
        if self.defect == Defect::OldestWins {
            entries.reverse();
        }
        let times = if self.defect == Defect::ScanTwice {
            2
        } else {
            1
        };
        for _ in 0..times {
            for (e, l) in &entries {
                if !visit(e, l) {
                    return Ok(());
                }
            }
        }
        Ok(())
    }
    fn log_position(&self) -> u64 {
        0
    }
    fn schema_text(&self) -> Option<Arc<str>> {
        self.inner.schema_text()
    }
    fn locks(&self) -> fieldstore::Locks {
        self.inner.locks()
    }
    fn condition(&self, c: Option<&CollocationKey>) -> fieldstore::DatasetCondition {
        self.inner.condition(c)
    }
}

#[derive(Debug)]
struct MutantStore {
    inner: Arc<dyn Store>,
    defect: Defect,
    damaged: Arc<Mutex<HashSet<String>>>,
}

impl Store for MutantStore {
    fn writer(&self, dataset: &DatasetKey) -> Result<Box<dyn StoreWriter>> {
        self.inner.writer(dataset)
    }
    fn read(&self, location: &FieldLocation, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.read(location, buf)?;
        if self.defect == Defect::ShortReads && buf.len() > 60_000 {
            buf.pop();
        }
        let damaged = self.damaged.lock().expect("lock").contains(&*location.uri);
        if damaged {
            if self.defect == Defect::Checksums {
                buf.clear();
                return Err(Error::corrupt(format!(
                    "{location}: checksum mismatch in {}",
                    location.uri
                )));
            }
            let mid = buf.len() / 2;
            buf[mid] ^= 1;
        }
        Ok(())
    }
    fn read_into(&self, location: &FieldLocation, out: &mut [u8]) -> Result<()> {
        // Through `read`, so that its defects show.
        fieldstore::store::read_into_by_copy(self, location, out)
    }
    fn read_range(&self, location: &FieldLocation, offset: u64, out: &mut [u8]) -> Result<()> {
        self.inner.read_range(location, offset, out)
    }
    fn prefetch(&self, locations: &[FieldLocation]) {
        self.inner.prefetch(locations)
    }
    fn scheme(&self) -> &'static str {
        self.inner.scheme()
    }
    fn maintenance(&self) -> Option<&dyn fieldstore::StoreMaintenance> {
        self.inner.maintenance()
    }
}

/// A factory onto one memory backend with `defect`, and the damage hook.
fn mutant(
    defect: Defect,
) -> (
    impl Fn() -> Result<FieldStore> + Sync,
    impl Fn(&FieldLocation) + Sync,
) {
    let backend = MemoryBackend::new();
    let catalogue: Arc<dyn Catalogue> = Arc::new(MutantCatalogue {
        inner: Arc::new(backend.catalogue()),
        defect,
        inserted: Arc::new(AtomicUsize::new(0)),
    });
    let damaged = Arc::new(Mutex::new(HashSet::new()));
    let store: Arc<dyn Store> = Arc::new(MutantStore {
        inner: Arc::new(backend.store()),
        defect,
        damaged: damaged.clone(),
    });
    let open = move || {
        Ok(FieldStore::with_backends(
            Config::memory(support::schema()),
            catalogue.clone(),
            store.clone(),
        ))
    };
    let corrupt = move |l: &FieldLocation| {
        damaged.lock().expect("lock").insert(l.uri.to_string());
    };
    (open, corrupt)
}

fn fails(check: &dyn Fn(Open<'_>), defect: Defect) -> bool {
    let (open, _) = mutant(defect);
    catch_unwind(AssertUnwindSafe(|| check(&open))).is_err()
}

fn check(name: &str) -> Check {
    fieldstore_testkit::CHECKS
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no check {name}"))
        .1
}

#[test]
fn each_defect_is_caught_by_its_check() {
    let cases = [
        (Defect::VisibleBeforeFlush, "flush_makes_visible"),
        (
            Defect::VisibleBeforeFlush,
            "flush_publishes_only_own_writes",
        ),
        (Defect::VisibleBeforeFlush, "abandoned_writer_keeps_flushed"),
        (Defect::OldestWins, "replace_is_atomic"),
        (Defect::OldestWins, "replace_under_concurrent_reads"),
        (Defect::OldestWins, "location_lookup"),
        (Defect::LosesEntries, "concurrent_writers"),
        (Defect::LosesEntries, "list_partial_requests"),
        (Defect::MissingIsError, "retrieve_missing_is_empty"),
        (Defect::FrozenReaders, "flush_makes_visible"),
        (Defect::FrozenReaders, "readers_during_writes"),
        (Defect::ShortReads, "retrieve_in_request_order"),
        (Defect::ScanTwice, "replace_is_atomic"),
        (Defect::AxesLoseValue, "axes_partial_requests"),
        (Defect::AxesLoseValue, "list_partial_requests"),
        (
            Defect::AnnotationsAsEntries,
            "annotation_applies_to_its_field_only",
        ),
    ];
    let mut missed = Vec::new();
    for (defect, name) in cases {
        if !fails(&check(name), defect) {
            missed.push(format!("{name} passes on a backend with defect {defect:?}"));
        }
    }
    assert!(
        missed.is_empty(),
        "defects not caught:\n{}",
        missed.join("\n")
    );
}

#[test]
fn damage_check_fails_without_checksums_and_passes_with_them() {
    let (open, corrupt) = mutant(Defect::NoChecksums);
    let caught = catch_unwind(AssertUnwindSafe(|| {
        fieldstore_testkit::damaged_field_detected(&open, &corrupt)
    }))
    .is_err();
    assert!(
        caught,
        "damaged_field_detected passes on a store that returns damaged bytes"
    );
    let (open, corrupt) = mutant(Defect::Checksums);
    fieldstore_testkit::damaged_field_detected(&open, &corrupt);
}
