//! Retrieve and `locate` (behind `where`) cost what the store holds, not
//! what a request could name: a range of a hundred million steps against a
//! small store is answered by walking what is stored, in request order.
//!
//! Cost is asserted structurally, not timed: a catalogue wrapper counts the
//! point lookups and dataset opens each request makes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use fieldstore::backends::memory::MemoryBackend;
use fieldstore::catalogue::{Axes, Catalogue, CatalogueWriter, DatasetCondition, DatasetReader};
use fieldstore::resolve::POINT_LOOKUP_LIMIT;
use fieldstore::{
    CollocationKey, Config, DatasetKey, ElementKey, FieldLocation, FieldStore, Key, Locks, Request,
    Result, Schema,
};

/// Counts what resolving a request costs the catalogue.
#[derive(Debug, Default)]
struct Counts {
    lookups: AtomicU64,
    readers: AtomicU64,
}

#[derive(Debug)]
struct Counting {
    inner: Arc<dyn Catalogue>,
    counts: Arc<Counts>,
}

#[derive(Debug)]
struct CountingReader {
    inner: Arc<dyn DatasetReader>,
    counts: Arc<Counts>,
}

impl Catalogue for Counting {
    fn writer(&self, dataset: &DatasetKey, schema: &Schema) -> Result<Box<dyn CatalogueWriter>> {
        self.inner.writer(dataset, schema)
    }
    fn datasets(&self) -> Result<Vec<DatasetKey>> {
        self.inner.datasets()
    }
    fn reader(&self, dataset: &DatasetKey) -> Result<Option<Arc<dyn DatasetReader>>> {
        self.counts.readers.fetch_add(1, Ordering::Relaxed);
        Ok(self.inner.reader(dataset)?.map(|inner| {
            Arc::new(CountingReader {
                inner,
                counts: self.counts.clone(),
            }) as Arc<dyn DatasetReader>
        }))
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

impl DatasetReader for CountingReader {
    fn refresh(&self) -> Result<()> {
        self.inner.refresh()
    }
    fn visit_collocations(&self, visit: &mut dyn FnMut(&CollocationKey, &Axes)) -> Result<()> {
        self.inner.visit_collocations(visit)
    }
    fn lookup(
        &self,
        collocation: &CollocationKey,
        element: &ElementKey,
    ) -> Result<Option<FieldLocation>> {
        self.counts.lookups.fetch_add(1, Ordering::Relaxed);
        self.inner.lookup(collocation, element)
    }
    fn locks(&self) -> Locks {
        self.inner.locks()
    }
    fn schema_text(&self) -> Option<Arc<str>> {
        self.inner.schema_text()
    }
    fn log_position(&self) -> u64 {
        self.inner.log_position()
    }
    fn scan_since(
        &self,
        collocation: &CollocationKey,
        position: u64,
        admits: &dyn Fn(&Axes) -> bool,
        visit: &mut dyn FnMut(&ElementKey, &FieldLocation) -> bool,
    ) -> Result<()> {
        self.inner.scan_since(collocation, position, admits, visit)
    }
    fn condition(&self, collocation: Option<&CollocationKey>) -> DatasetCondition {
        self.inner.condition(collocation)
    }
}

const SCHEMA: &str = "step: Step; param: Param; date: Date;
[ class, date [ type [ step, levelist?, param ]]]";

const BASE: &str = "class=od,date=20231201,type=fc";

fn key(rest: &str) -> Key {
    format!("{BASE},{rest}").parse().unwrap()
}

/// A small store: steps 0..=48 by 3, params 167 and 130, plus fields the
/// requests below must not return (another date, a level). Each field's
/// bytes are its key.
fn store() -> (FieldStore, Arc<Counts>) {
    let schema: Schema = SCHEMA.parse().unwrap();
    let backend = MemoryBackend::new();
    let counts = Arc::new(Counts::default());
    let catalogue = Arc::new(Counting {
        inner: Arc::new(backend.catalogue()),
        counts: counts.clone(),
    });
    let fs =
        FieldStore::with_backends(Config::memory(schema), catalogue, Arc::new(backend.store()));
    let mut keys = Vec::new();
    for step in (0..=48).step_by(3) {
        for param in [167, 130] {
            keys.push(key(&format!("step={step},param={param}")));
        }
    }
    keys.push(key("step=6,levelist=500,param=167"));
    keys.push(
        "class=od,date=20231202,type=fc,step=6,param=167"
            .parse()
            .unwrap(),
    );
    for k in &keys {
        fs.archive(k, k.to_string().as_bytes()).unwrap();
    }
    // Replace one field: the newest version is the one returned.
    fs.archive(&key("step=12,param=167"), b"step 12, second version")
        .unwrap();
    fs.flush().unwrap();
    (fs, counts)
}

fn request(s: &str) -> Request {
    format!("{BASE},{s}").parse().unwrap()
}

/// The keys `retrieve` returns, as strings, and the bytes of each.
fn retrieved(fs: &FieldStore, req: &Request) -> Vec<(String, Vec<u8>)> {
    let mut r = fs.retrieve(req).unwrap();
    let mut out = Vec::new();
    let mut buf = Vec::new();
    while let Some(k) = r.next_field(&mut buf).unwrap() {
        out.push((k.to_string(), buf.clone()));
    }
    out
}

fn keys(fields: &[(String, Vec<u8>)]) -> Vec<&str> {
    fields.iter().map(|(k, _)| k.as_str()).collect()
}

#[test]
fn a_huge_range_is_resolved_from_what_is_stored_in_request_order() {
    let (fs, counts) = store();
    let huge = request("step=0/to/100000000/by/6,param=130/167");
    assert!(
        fs.schema().expand(&huge).unwrap().size_hint_upper() > POINT_LOOKUP_LIMIT,
        "the request must be one that point lookups would not answer"
    );
    let got = retrieved(&fs, &huge);
    // No point lookup, one reader per stored dataset at most.
    assert_eq!(counts.lookups.load(Ordering::Relaxed), 0, "point lookups");
    assert!(counts.readers.load(Ordering::Relaxed) <= 2, "dataset opens");
    // Request order: step ascending (the range's order), then param in the
    // order given; steps off the range's increment (3, 9, …) are not named.
    let mut want = Vec::new();
    for step in (0..=48).step_by(6) {
        for param in [130, 167] {
            want.push(format!("{BASE},step={step},param={param}"));
        }
    }
    assert_eq!(keys(&got), want);
    for (k, bytes) in &got {
        if k == &format!("{BASE},step=12,param=167") {
            assert_eq!(bytes, b"step 12, second version");
        } else {
            assert_eq!(bytes, k.as_bytes());
        }
    }
    // The same fields, in the same order, as point lookups give for the
    // part of the range that holds anything.
    let small = request("step=0/to/48/by/6,param=130/167");
    let before = counts.lookups.load(Ordering::Relaxed);
    assert_eq!(retrieved(&fs, &small), got);
    assert!(
        counts.lookups.load(Ordering::Relaxed) > before,
        "small requests look up"
    );
}

#[test]
fn a_huge_descending_range_comes_back_descending() {
    let (fs, counts) = store();
    let got = retrieved(
        &fs,
        &request("step=99999999/to/0/by/3,param=167,levelist=500"),
    );
    assert_eq!(counts.lookups.load(Ordering::Relaxed), 0, "point lookups");
    // `levelist=500` names the one field with a level.
    assert_eq!(
        keys(&got),
        [format!("{BASE},step=6,levelist=500,param=167")]
    );
    let got = retrieved(&fs, &request("step=99999999/to/0/by/3,param=167"));
    let want: Vec<String> = (0..=48)
        .rev()
        .step_by(3)
        .map(|step| format!("{BASE},step={step},param=167"))
        .collect();
    assert_eq!(keys(&got), want);
}

#[test]
fn locate_answers_huge_ranges_with_locations_in_request_order() {
    let (fs, counts) = store();
    let req: Request = "class=od,date=20231202/20231201,type=fc,step=0/to/100000000/by/6,param=167"
        .parse()
        .unwrap();
    let found = fs.locate(&req).unwrap();
    assert_eq!(counts.lookups.load(Ordering::Relaxed), 0, "point lookups");
    // Dates in the order given, then steps ascending.
    let got: Vec<String> = found.iter().map(|e| e.full_key().to_string()).collect();
    let mut want = vec!["class=od,date=20231202,type=fc,step=6,param=167".to_string()];
    want.extend(
        (0..=48)
            .step_by(6)
            .map(|step| format!("{BASE},step={step},param=167")),
    );
    assert_eq!(got, want);
    assert!(found.iter().all(|e| e.location.is_some()));
    // A huge range that the store holds nothing of.
    assert!(fs
        .locate(&request("step=1000/to/100000000,param=167"))
        .unwrap()
        .is_empty());
}
