//! A request that gives every dataset keyword explicit values (a pinned
//! request) has its datasets opened directly, as `retrieve` opens one,
//! instead of the catalogue listing every dataset it holds: the same
//! answers as listing (list at every depth, axes, a walked retrieve), no
//! listing of the catalogue, and a dataset the catalogue's listing lost
//! (a RADOS root entry removed) still found. On the memory and POSIX
//! backends, through a catalogue wrapper that counts listings and can
//! leave a dataset out of them.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fieldstore::backends::memory::MemoryBackend;
use fieldstore::catalogue::{Catalogue, CatalogueWriter, DatasetReader};
use fieldstore::{
    Config, Control, DatasetKey, ErrorKind, FieldStore, Key, Level, ListElement, ListOptions,
    Locks, Operation, Request, Result, Schema, Since, WatchOptions,
};

/// A catalogue that counts its listings (`datasets()`, and asking for
/// its damaged datasets, which POSIX answers by the same scan of its
/// roots) and leaves out of them the datasets it was told to forget (their
/// logs intact), as a RADOS root that lost their entries does.
#[derive(Debug)]
struct Registry {
    inner: Arc<dyn Catalogue>,
    listings: AtomicU64,
    forgotten: Mutex<HashSet<DatasetKey>>,
}

impl Registry {
    fn listings(&self) -> u64 {
        self.listings.load(Ordering::Relaxed)
    }
}

impl Catalogue for Registry {
    fn writer(&self, dataset: &DatasetKey, schema: &Schema) -> Result<Box<dyn CatalogueWriter>> {
        self.inner.writer(dataset, schema)
    }
    fn datasets(&self) -> Result<Vec<DatasetKey>> {
        self.listings.fetch_add(1, Ordering::Relaxed);
        let forgotten = self.forgotten.lock().unwrap();
        Ok(self
            .inner
            .datasets()?
            .into_iter()
            .filter(|d| !forgotten.contains(d))
            .collect())
    }
    fn reader(&self, dataset: &DatasetKey) -> Result<Option<Arc<dyn DatasetReader>>> {
        self.inner.reader(dataset)
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
        // POSIX: the same scan of the roots as `datasets()`.
        self.listings.fetch_add(1, Ordering::Relaxed);
        self.inner.damaged_datasets()
    }
    fn mover(&self) -> Option<&dyn fieldstore::DatasetMover> {
        self.inner.mover()
    }
    fn queries(&self) -> Option<&dyn fieldstore::CatalogueQueries> {
        self.inner.queries()
    }
}

/// A factory of handles onto one store through one [`Registry`].
type Open = Box<dyn Fn() -> FieldStore>;

fn memory() -> (Open, Arc<Registry>, Option<tempfile::TempDir>) {
    let backend = MemoryBackend::new();
    let registry = Arc::new(Registry {
        inner: Arc::new(backend.catalogue()),
        listings: AtomicU64::new(0),
        forgotten: Mutex::default(),
    });
    let r = registry.clone();
    let open = Box::new(move || {
        FieldStore::with_backends(
            Config::memory(Schema::ecmwf()),
            r.clone(),
            Arc::new(backend.store()),
        )
    });
    (open, registry, None)
}

fn posix() -> (Open, Arc<Registry>, Option<tempfile::TempDir>) {
    let dir = tempfile::tempdir().unwrap();
    let config = Config::embedded(dir.path());
    let plain = FieldStore::open(config.clone()).unwrap();
    let registry = Arc::new(Registry {
        inner: plain.catalogue().clone(),
        listings: AtomicU64::new(0),
        forgotten: Mutex::default(),
    });
    let store = plain.store().clone();
    let r = registry.clone();
    let open =
        Box::new(move || FieldStore::with_backends(config.clone(), r.clone(), store.clone()));
    (open, registry, Some(dir))
}

fn req(s: &str) -> Request {
    s.parse().unwrap()
}

fn key(dataset: &str, step: u32, param: u32) -> Key {
    format!("{dataset},type=fc,levtype=sfc,step={step},param={param}")
        .parse()
        .unwrap()
}

/// Expver 0001 at two dates, time 1200 only; expver 0002 at 0000. Steps
/// 0..4 of two parameters, in two flushes, step 1 archived again in the
/// second (a masked entry for `duplicates`).
const DATASETS: [&str; 3] = [
    "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g",
    "class=od,expver=0001,stream=oper,date=20231202,time=1200,domain=g",
    "class=od,expver=0002,stream=oper,date=20231201,time=0000,domain=g",
];

fn fill(fs: &FieldStore) {
    for flush in 0..2 {
        for d in DATASETS {
            for step in 0..4 {
                if flush == 1 && step != 1 {
                    continue;
                }
                for param in [167, 130] {
                    let k = key(d, step, param);
                    fs.archive(&k, format!("{k} v{flush}").as_bytes()).unwrap();
                }
            }
        }
        fs.flush().unwrap();
    }
}

/// Pinned requests, each with a request that is not pinned (a dataset
/// keyword left out) and names the same stored datasets. Values are
/// spelled as a request may spell them: archive's canonical forms must be
/// built from them.
const PAIRS: [(&str, &str); 3] = [
    (
        "class=od,expver=1,stream=oper,date=20231201,time=12,domain=g",
        "class=od,expver=1,stream=oper,date=20231201,domain=g",
    ),
    // A date the store does not hold among them.
    (
        "class=od,expver=0001,stream=oper,date=2023-12-01/20231202/20231203,time=1200,domain=g",
        "class=od,expver=0001,stream=oper,domain=g",
    ),
    // Both expvers, each time: four keys, two of them stored.
    (
        "class=od,expver=1/2,stream=oper,date=20231201,time=0/1200,domain=g",
        "class=od,expver=1/2,stream=oper,date=20231201,domain=g",
    ),
];

fn list(fs: &FieldStore, r: &str, depth: Level, duplicates: bool) -> Vec<ListElement> {
    fs.list(&req(r), ListOptions { depth, duplicates })
        .unwrap_or_else(|e| panic!("list {r}: {e}"))
}

/// What a request answers, whatever it costs: listings at each depth
/// (with and without masked entries) and axes at each depth.
fn answers(fs: &FieldStore, r: &str) -> String {
    let mut out = String::new();
    for depth in [Level::Dataset, Level::Collocation, Level::Element] {
        for duplicates in [false, true] {
            for e in list(fs, r, depth, duplicates) {
                out.push_str(&format!(
                    "{depth:?} {duplicates} {} {:?}\n",
                    e.braced(),
                    e.location
                ));
            }
        }
        out.push_str(&format!(
            "axes {depth:?} {:?}\n",
            fs.axes(&req(r), depth).unwrap()
        ));
    }
    out
}

/// The bytes of the fields under pinned request `r`: `walked`, by a
/// request naming too many steps for point lookups (resolved by walking
/// the datasets), else by one naming the four stored steps (point
/// lookups, each dataset opened directly).
fn retrieve(fs: &FieldStore, r: &str, walked: bool) -> Vec<u8> {
    let steps = if walked {
        "0/to/100000000/by/1"
    } else {
        "0/1/2/3"
    };
    let full = format!("{r},type=fc,levtype=sfc,step={steps},param=130/167");
    fs.retrieve(&req(&full))
        .and_then(|d| d.read_all())
        .unwrap_or_else(|e| panic!("retrieve {full}: {e}"))
}

fn same_answers_without_listing(make: fn() -> (Open, Arc<Registry>, Option<tempfile::TempDir>)) {
    let (open, registry, _dir) = make();
    fill(&open());
    let fs = open();
    for (pinned, listed) in PAIRS {
        let before = registry.listings();
        let want = answers(&fs, listed);
        assert!(registry.listings() > before, "{listed} is listed");
        assert!(
            want.contains("Element false"),
            "{listed} names fields:\n{want}"
        );
        let before = registry.listings();
        assert_eq!(answers(&fs, pinned), want, "{pinned} against {listed}");
        let bytes = retrieve(&fs, pinned, true);
        assert!(!bytes.is_empty());
        assert_eq!(registry.listings(), before, "{pinned} listed the catalogue");
        assert_eq!(bytes, retrieve(&fs, pinned, false), "{pinned}");
    }
    // Nothing stored under a pinned request: nothing, without a listing.
    let before = registry.listings();
    let none = "class=od,expver=3,stream=oper,date=20231201,time=1200,domain=g";
    for depth in [Level::Dataset, Level::Collocation, Level::Element] {
        assert_eq!(list(&fs, none, depth, false), []);
        assert!(fs.axes(&req(none), depth).unwrap().is_empty());
    }
    assert!(retrieve(&fs, none, true).is_empty());
    assert_eq!(registry.listings(), before);
}

#[test]
fn memory_pinned_requests_answer_as_listing_without_listing() {
    same_answers_without_listing(memory);
}

#[test]
fn posix_pinned_requests_answer_as_listing_without_listing() {
    same_answers_without_listing(posix);
}

/// A dataset the catalogue's listing lost is listed, its axes given and
/// its fields walked by a pinned request, as `retrieve` of one field finds
/// it.
fn lost_registration_is_found(make: fn() -> (Open, Arc<Registry>, Option<tempfile::TempDir>)) {
    let (open, registry, _dir) = make();
    fill(&open());
    let (pinned, _) = PAIRS[0];
    let want = answers(&open(), pinned);
    let bytes = retrieve(&open(), pinned, true);
    let dataset = list(&open(), pinned, Level::Dataset, false)[0]
        .dataset
        .clone();
    registry.forgotten.lock().unwrap().insert(dataset.clone());
    let fs = open();
    assert!(
        !fs.catalogue().datasets().unwrap().contains(&dataset),
        "the wrapper forgets {dataset}"
    );
    assert_eq!(answers(&fs, pinned), want);
    assert_eq!(retrieve(&fs, pinned, true), bytes);
}

#[test]
fn memory_lost_registration_is_found() {
    lost_registration_is_found(memory);
}

#[test]
fn posix_lost_registration_is_found() {
    lost_registration_is_found(posix);
}

/// List locks hold for a pinned request as for a listing: a request
/// naming exactly the locked dataset fails `Locked`, one naming others
/// too leaves it out.
fn list_locks_hold(make: fn() -> (Open, Arc<Registry>, Option<tempfile::TempDir>)) {
    let (open, _registry, _dir) = make();
    let fs = open();
    fill(&fs);
    let one = "class=od,expver=1,stream=oper,date=20231201,time=1200,domain=g";
    fs.control(&req(one), Control::Lock, Locks::NONE.with(Operation::List))
        .unwrap();
    let fs = open();
    for depth in [Level::Dataset, Level::Collocation, Level::Element] {
        let e = fs
            .list(
                &req(one),
                ListOptions {
                    depth,
                    duplicates: false,
                },
            )
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Locked, "{depth:?}: {e}");
        assert_eq!(
            fs.axes(&req(one), depth).unwrap_err().kind(),
            ErrorKind::Locked
        );
        let (pinned, listed) = PAIRS[1];
        let shown = |r: &str| -> Vec<String> {
            list(&fs, r, depth, false)
                .iter()
                .map(|e| e.dataset.to_string())
                .collect()
        };
        let got = shown(pinned);
        assert_eq!(got, shown(listed), "{depth:?}");
        assert!(
            got.iter().all(|d| d.contains("20231202")),
            "{depth:?}: {got:?}"
        );
        assert!(!got.is_empty());
    }
}

#[test]
fn memory_list_locks_hold_for_pinned_requests() {
    list_locks_hold(memory);
}

#[test]
fn posix_list_locks_hold_for_pinned_requests() {
    list_locks_hold(posix);
}

/// A watch of a pinned request whose dataset does not exist yet reports
/// its fields once it is created.
fn watch_finds_a_dataset_created_later(
    make: fn() -> (Open, Arc<Registry>, Option<tempfile::TempDir>),
) {
    let (open, _registry, _dir) = make();
    let watcher = open();
    let writer = open();
    let pinned = "class=od,expver=1,stream=oper,date=20231201,time=1200,domain=g";
    let mut watch = watcher
        .watch(
            &req(pinned),
            WatchOptions {
                since: Since::Start,
                count: Some(2),
                timeout: Some(Duration::from_secs(30)),
                ..WatchOptions::default()
            },
        )
        .unwrap();
    assert_eq!(watch.queued(), 0);
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(300));
            for param in [167, 130] {
                writer.archive(&key(DATASETS[0], 0, param), b"new").unwrap();
            }
            writer.flush().unwrap();
        });
        let mut got: Vec<String> = watch
            .by_ref()
            .map(|e| e.unwrap().element.braced())
            .collect();
        got.sort();
        assert_eq!(
            got,
            [
                format!(
                    "{{{}}}{{type=fc,levtype=sfc}}{{step=0,param=130}}",
                    DATASETS[0]
                ),
                format!(
                    "{{{}}}{{type=fc,levtype=sfc}}{{step=0,param=167}}",
                    DATASETS[0]
                ),
            ]
        );
    });
}

#[test]
fn memory_watch_finds_a_pinned_dataset_created_later() {
    watch_finds_a_dataset_created_later(memory);
}

#[test]
fn posix_watch_finds_a_pinned_dataset_created_later() {
    watch_finds_a_dataset_created_later(posix);
}

/// A watch of a pinned request whose dataset is wiped ends with
/// `NotFound` naming the wipe, as a watch of a listed one does.
fn watch_of_a_wiped_dataset_ends(make: fn() -> (Open, Arc<Registry>, Option<tempfile::TempDir>)) {
    let (open, _registry, _dir) = make();
    let watcher = open();
    let wiper = open();
    fill(&wiper);
    let pinned = "class=od,expver=1,stream=oper,date=20231201,time=1200,domain=g";
    let watch = watcher
        .watch(
            &req(pinned),
            WatchOptions {
                timeout: Some(Duration::from_secs(30)),
                ..WatchOptions::default()
            },
        )
        .unwrap();
    let err = std::thread::scope(|s| {
        let t = s.spawn(move || watch.filter_map(|e| e.err()).next());
        std::thread::sleep(Duration::from_millis(100));
        wiper
            .wipe(
                &req(pinned),
                fieldstore::WipeOptions {
                    doit: true,
                    unsafe_wipe_all: false,
                },
            )
            .unwrap();
        t.join().unwrap()
    })
    .expect("the watch ends with an error");
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    assert!(err.to_string().contains("wiped"), "{err}");
}

#[test]
fn memory_watch_of_a_wiped_pinned_dataset_ends() {
    watch_of_a_wiped_dataset_ends(memory);
}

#[test]
fn posix_watch_of_a_wiped_pinned_dataset_ends() {
    watch_of_a_wiped_dataset_ends(posix);
}

/// A handle that read a dataset before another wiped it answers a pinned
/// request as a listing does: the dataset is gone at every depth, though
/// the handle keeps a reader of it.
fn wiped_dataset_is_gone(make: fn() -> (Open, Arc<Registry>, Option<tempfile::TempDir>)) {
    let (open, _registry, _dir) = make();
    fill(&open());
    let (pinned, listed) = PAIRS[0];
    let fs = open();
    assert!(answers(&fs, pinned).contains("Dataset false"));
    open()
        .wipe(
            &req(pinned),
            fieldstore::WipeOptions {
                doit: true,
                unsafe_wipe_all: false,
            },
        )
        .unwrap();
    let gone = answers(&fs, pinned);
    assert_eq!(gone, answers(&fs, listed));
    assert!(!gone.contains("Dataset false"), "{gone}");
    assert!(!gone.contains("expver"), "{gone}");
}

#[test]
fn memory_wiped_pinned_dataset_is_gone() {
    wiped_dataset_is_gone(memory);
}

#[test]
fn posix_wiped_pinned_dataset_is_gone() {
    wiped_dataset_is_gone(posix);
}

/// A dataset whose INIT record is damaged costs only itself under a
/// pinned request too: the other datasets it names are listed, then the
/// listing fails `Corrupt` naming the damaged file; axes leave it out;
/// as a listing does (`tests/damage.rs`).
#[test]
fn posix_damaged_init_costs_only_its_dataset_under_a_pinned_request() {
    let (open, registry, dir) = posix();
    fill(&open());
    let dir = dir.unwrap();
    let toc = dir.path().join("od:0001:oper:20231201:1200:g").join("toc");
    let mut bytes = std::fs::read(&toc).unwrap();
    bytes[30] ^= 0x01;
    std::fs::write(&toc, &bytes).unwrap();
    let (pinned, listed) = PAIRS[1];
    let outcome = |r: &str| -> Vec<String> {
        let fs = open();
        let mut out = Vec::new();
        for depth in [Level::Dataset, Level::Collocation, Level::Element] {
            let mut n = 0;
            let end = fs.visit(
                &req(r),
                ListOptions {
                    depth,
                    duplicates: false,
                },
                &mut |_| {
                    n += 1;
                    true
                },
            );
            out.push(format!(
                "{depth:?}: {n} {:?}",
                end.map_err(|e| (e.kind(), e.to_string()))
            ));
            out.push(format!(
                "{:?}",
                fs.axes(&req(r), depth).map_err(|e| e.to_string())
            ));
        }
        out
    };
    let want = outcome(listed);
    assert!(want[4].contains(&toc.display().to_string()), "{want:?}");
    let before = registry.listings();
    assert_eq!(outcome(pinned), want);
    assert_eq!(registry.listings(), before);
}
