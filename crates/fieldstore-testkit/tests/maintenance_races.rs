//! Maintenance racing live writers, with real processes on the POSIX
//! backend: four writer processes that each flush through a handle of its
//! own and drop it (as a loop of `fieldstore archive` calls does, so that
//! their files are no longer held the instant they flushed) while this
//! process purges, wipes other collocations or datasets, or moves the
//! dataset between two file systems, over and over, at random intervals.
//! Every field a writer reported flushed must then be readable once, with
//! its bytes; nothing may be left behind. Purge and both wipes also run
//! through `type: select` (two POSIX sub-stores), where maintenance reaches
//! the dataset through the routing.
//!
//! The deterministic worst interleavings of the same races are unit tests
//! of the `fieldstore` crate (`races.rs`, with failpoints).

use std::path::{Path, PathBuf};
use std::time::Duration;

use fieldstore::{FieldStore, Level, ListOptions, Request, WipeOptions};
use fieldstore_testkit::processes::{self, Launcher, Worker};
use fieldstore_testkit::rng::Rng;
use fieldstore_testkit::streams::Streams;
use fieldstore_testkit::support::{archive_payload, key, must, request, retrieve_one};
use fieldstore_testkit::tmpfs::Tmpfs;

const WORKER: &str = env!("CARGO_BIN_EXE_fieldstore-testkit-worker");
const WRITERS: usize = 4;

/// One test at a time: a process forked by one test's thread inherits the
/// files another's has open, with their `flock`s, until it execs (safe,
/// but it would keep units in use).
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

fn streams(expver: &str) -> Streams {
    Streams {
        expver: expver.into(),
        writers: WRITERS,
        fields: 60,
        flush_every: 2,
        min_len: 28,
        max_len: 4096,
    }
}

/// A POSIX store over `roots` (the first takes new datasets).
fn launcher(dir: &Path, roots: &[&Path]) -> Launcher {
    let mut yaml = String::from("type: local\nengine: toc\nstore: file\nspaces:\n- roots:\n");
    for r in roots {
        yaml.push_str(&format!("  - path: {}\n", r.display()));
    }
    let config = processes::write_config(dir.join("config.yaml"), &yaml);
    Launcher::new(WORKER, config)
}

/// Start the writers (held) and release them together.
fn start_writers(launcher: &Launcher, s: &Streams) -> Vec<Worker> {
    let mut writers: Vec<Worker> = (0..s.writers)
        .map(|w| {
            let mut flags = processes::streams_args(s);
            flags.push(("writer", w.to_string()));
            launcher.spawn_held(format!("writer {w}"), "write-each", &flags)
        })
        .collect();
    processes::release_together(writers.iter_mut());
    writers
}

/// Run `maintain` over and over, a random 0–4 ms apart, until every writer
/// has exited; then check they all succeeded. Returns how many times it ran.
fn while_writing(writers: Vec<Worker>, rng: &mut Rng, mut maintain: impl FnMut(usize)) -> usize {
    let mut rounds = 0;
    let mut writers = writers;
    while writers.iter_mut().any(Worker::is_running) {
        maintain(rounds);
        rounds += 1;
        std::thread::sleep(Duration::from_micros(rng.below(4000)));
    }
    for child in writers.drain(..) {
        child.finish_done();
    }
    rounds
}

/// Every field of every writer is there once, with its bytes.
fn check_everything_flushed(fs: &FieldStore, s: &Streams) {
    for w in 0..s.writers {
        for i in 0..s.fields {
            let k = s.key(w, i);
            let got = retrieve_one(fs, &k);
            assert_eq!(
                got.as_deref(),
                Some(s.payload(fs, w, i).as_slice()),
                "field {i} of writer {w} ({k}): flushed, so it must be readable with its bytes"
            );
        }
    }
    let listed = must(
        fs.list(&s.dataset_request(), ListOptions::default()),
        "list",
    );
    let pf = listed
        .iter()
        .filter(|e| e.collocation.key().get("type") == Some("pf"))
        .count();
    assert_eq!(pf, s.writers * s.fields, "each field listed once");
}

/// Names in `root` that maintenance leaves while it works.
fn leftovers(root: &Path) -> Vec<String> {
    std::fs::read_dir(root)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn purges_racing_writers_that_flush_and_exit_lose_nothing() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    purge_race(&launcher(dir.path(), &[&root]), &root, "prg1");
}

/// A `type: select` store of two POSIX sub-stores in `dir` (`first` and
/// `second`, created): the first takes datasets whose expver matches
/// `first_expver` (a regex), the second every other.
fn select_launcher(dir: &Path, first_expver: &str) -> (Launcher, PathBuf, PathBuf) {
    let (first, second) = (dir.join("first"), dir.join("second"));
    std::fs::create_dir(&first).unwrap();
    std::fs::create_dir(&second).unwrap();
    let yaml = format!(
        "type: select\nfdbs:\n\
         - select: expver={first_expver}\n  spaces: [{{roots: [{{path: {}}}]}}]\n\
         - select: ''\n  spaces: [{{roots: [{{path: {}}}]}}]\n",
        first.display(),
        second.display()
    );
    let config = processes::write_config(dir.join("config.yaml"), &yaml);
    (Launcher::new(WORKER, config), first, second)
}

/// The names in `root`.
fn names(root: &Path) -> Vec<String> {
    std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// The same race through `type: select`: the writers' dataset is routed to
/// the second of two POSIX sub-stores, and purge goes through the routing.
#[test]
fn purges_through_select_racing_writers_lose_nothing() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let (launcher, first, second) = select_launcher(dir.path(), "^none$");
    purge_race(&launcher, &second, "prg2");
    assert!(
        names(&first).is_empty(),
        "the first sub-store selects no dataset of the writers"
    );
}

/// Writers of `expver` replace fields and exit while purge runs over and
/// over; every flushed field stays readable, the replaced versions go, and
/// `root` (where the dataset lives) keeps no leftovers.
fn purge_race(launcher: &Launcher, root: &Path, expver: &str) {
    let s = streams(expver);
    let fs = must(launcher.open(), "open");
    // Something for purge to reclaim too: an older version of some fields
    // (replaced by the writers).
    for i in 0..10 {
        must(fs.archive(&s.key(0, i), b"an older version"), "archive");
    }
    must(fs.flush(), "flush");
    drop(fs);
    let fs = must(launcher.open(), "open");
    let mut rng = Rng::new(17);
    let writers = start_writers(launcher, &s);
    let purges = while_writing(writers, &mut rng, |_| {
        must(fs.purge(&Request::default(), true), "purge");
    });
    assert!(purges > 5, "purge ran {purges} times");
    let fs = must(launcher.open(), "open");
    check_everything_flushed(&fs, &s);
    // The older versions went once nothing held them.
    let report = must(fs.purge(&Request::default(), true), "purge");
    assert_eq!(
        must(fs.stats(&Request::default()), "stats")[0].duplicates,
        0,
        "{report:?}"
    );
    check_everything_flushed(&fs, &s);
    assert!(leftovers(root).is_empty(), "{:?}", leftovers(root));
}

#[test]
fn collocation_wipes_racing_writers_of_other_collocations_lose_nothing() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    collocation_wipe_race(&launcher(dir.path(), &[&root]), &root, "cwp1");
}

/// The same race through `type: select` (the dataset in the second of two
/// POSIX sub-stores).
#[test]
fn collocation_wipes_through_select_racing_writers_lose_nothing() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let (launcher, first, second) = select_launcher(dir.path(), "^none$");
    collocation_wipe_race(&launcher, &second, "cwp2");
    assert!(names(&first).is_empty(), "{:?}", names(&first));
}

/// Writers of `expver` fill the `pf` collocation while this process adds a
/// field to the `cf` collocation of the same dataset and wipes that
/// collocation, over and over: every flushed `pf` field stays, `cf` ends
/// empty, and `root` (where the dataset lives) keeps no leftovers.
fn collocation_wipe_race(launcher: &Launcher, root: &Path, expver: &str) {
    let s = streams(expver);
    let fs = must(launcher.open(), "open");
    let cf = |round: usize| {
        key(&format!(
            "class=od,expver={},stream=enfo,date=20231201,time=1200,type=cf,levtype=pl,step={round},number=0,levelist=500,param=130",
            s.expver
        ))
    };
    let wipe_cf = request(&format!(
        "class=od,expver={},stream=enfo,date=20231201,time=1200,type=cf",
        s.expver
    ));
    must(fs.archive(&cf(0), b"control"), "archive");
    must(fs.flush(), "flush");
    let mut rng = Rng::new(23);
    let writers = start_writers(launcher, &s);
    let doit = WipeOptions {
        doit: true,
        unsafe_wipe_all: false,
    };
    let wipes = while_writing(writers, &mut rng, |round| {
        // A fresh handle per round, so that its writer's files are free.
        let w = must(launcher.open(), "open");
        archive_payload(&w, &cf(round), 1, 28, 256);
        must(w.flush(), "flush");
        drop(w);
        must(fs.wipe(&wipe_cf, doit), "wipe of the cf collocation");
    });
    assert!(wipes > 5, "wipe ran {wipes} times");
    let fs = must(launcher.open(), "open");
    check_everything_flushed(&fs, &s);
    let listed = must(fs.list(&wipe_cf, ListOptions::default()), "list");
    assert!(listed.is_empty(), "cf wiped: {listed:?}");
    assert!(leftovers(root).is_empty(), "{:?}", leftovers(root));
}

#[test]
fn dataset_wipes_racing_writers_leave_no_tombstones_and_other_datasets_whole() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    dataset_wipe_race(&launcher(dir.path(), &[&root]), "dwk1", "dwc1");
    assert_eq!(
        names(&root).len(),
        1,
        "only the kept dataset: {:?}",
        names(&root)
    );
}

/// The same race through `type: select`, the kept dataset in the first
/// sub-store and the wiped one in the second: the wipes reach the second
/// through the routing and touch nothing of the first.
#[test]
fn dataset_wipes_through_select_racing_writers_leave_the_other_sub_store_whole() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let (launcher, first, second) = select_launcher(dir.path(), "^dwk2$");
    dataset_wipe_race(&launcher, "dwk2", "dwc2");
    assert_eq!(
        names(&first).len(),
        1,
        "the kept dataset: {:?}",
        names(&first)
    );
    assert!(
        names(&second).is_empty(),
        "wiped whole: {:?}",
        names(&second)
    );
}

/// Writers of `keep` must lose nothing while the dataset of `churn`'s
/// writers is wiped over and over under them (their flushes are retried);
/// after a last wipe, the store holds `keep`'s dataset whole.
fn dataset_wipe_race(launcher: &Launcher, keep: &str, churn: &str) {
    let keep = streams(keep);
    let churn = Streams {
        fields: 40,
        ..streams(churn)
    };
    let fs = must(launcher.open(), "open");
    let mut rng = Rng::new(29);
    let mut writers = start_writers(launcher, &keep);
    writers.extend(start_writers(launcher, &churn));
    let doit = WipeOptions {
        doit: true,
        unsafe_wipe_all: false,
    };
    let wipes = while_writing(writers, &mut rng, |_| {
        must(fs.wipe(&churn.dataset_request(), doit), "wipe");
    });
    assert!(wipes > 5, "wipe ran {wipes} times");
    let fs = must(launcher.open(), "open");
    check_everything_flushed(&fs, &keep);
    must(fs.wipe(&churn.dataset_request(), doit), "the last wipe");
    check_everything_flushed(&fs, &keep);
}

#[test]
fn moves_across_file_systems_racing_writers_lose_nothing() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    std::fs::create_dir(&a).unwrap();
    let Some(b) = Tmpfs::mount(&dir.path().join("b"), "256m") else {
        return;
    };
    let launcher = launcher(dir.path(), &[&a, b.path()]);
    let s = Streams {
        fields: 40,
        ..streams("mov1")
    };
    let fs = must(launcher.open(), "open");
    let mut rng = Rng::new(31);
    let writers = start_writers(&launcher, &s);
    // Wait for the dataset to exist, then move it back and forth.
    let ds = s.dataset_request();
    let moves = while_writing(writers, &mut rng, |round| {
        let to = if round % 2 == 0 { b.path() } else { &a };
        match fs.move_datasets(&ds, to) {
            Ok(_) => {}
            // Already there (a move of this round found it moved), or not
            // created yet.
            Err(e) if e.kind() == fieldstore::ErrorKind::InvalidInput => {}
            Err(e) => panic!("move to {}: {e}", to.display()),
        }
    });
    assert!(moves > 3, "move ran {moves} times");
    let fs = must(launcher.open(), "open");
    check_everything_flushed(&fs, &s);
    let status = must(fs.status(&ds), "status");
    assert_eq!(status.len(), 1, "{status:?}");
    assert!(status[0].damage.is_empty(), "{status:?}");
    assert!(leftovers(&a).is_empty() && leftovers(b.path()).is_empty());
    assert_eq!(
        must(
            fs.list(
                &ds,
                ListOptions {
                    depth: Level::Dataset,
                    duplicates: false
                }
            ),
            "list"
        )
        .len(),
        1
    );
}
