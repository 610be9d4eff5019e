//! Maintenance racing live writers, each race put in its worst
//! interleaving with the failpoints of `failpoint.rs`: a writer flushes and
//! exits at the one instant where a maintenance operation that read the
//! catalogue too early would take its files for unused. The rule that
//! makes them safe — claim, then read, then remove — is in `docs/maintenance.md`.

use std::path::Path;

use crate::config::Config;
use crate::failpoint;
use crate::handle::FieldStore;
use crate::list::ListOptions;
use crate::manage::WipeOptions;
use fieldstore_core::{Key, Request};

const SFC: &str =
    "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g,type=fc,levtype=sfc";
const DATASET: &str = "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g";
const PL: &str =
    "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g,type=fc,levtype=pl";

fn sfc(step: u32) -> Key {
    format!("{SFC},step={step},param=167").parse().unwrap()
}

fn pl(step: u32) -> Key {
    format!("{PL},step={step},levelist=500,param=130")
        .parse()
        .unwrap()
}

/// One writer process's life: open, archive, flush, exit.
fn write_and_exit(root: &Path, key: &Key, data: &[u8]) {
    let w = FieldStore::open(Config::embedded(root)).unwrap();
    w.archive(key, data).unwrap();
    w.flush().unwrap();
}

fn read(root: &Path, key: &Key) -> Option<Vec<u8>> {
    let fs = FieldStore::open(Config::embedded(root)).unwrap();
    let r = fs.retrieve(&Request::from_key(key)).unwrap();
    (!r.is_empty()).then(|| r.read_all().unwrap())
}

fn doit() -> WipeOptions {
    WipeOptions {
        doit: true,
        ..Default::default()
    }
}

/// The race of the issue: purge read the table of contents, then a new
/// writer wrote, flushed and exited, then purge listed the directory and
/// found the writer's data file unreferenced and unlocked.
#[test]
fn purge_keeps_a_data_file_flushed_after_it_read_the_catalogue() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    write_and_exit(&root, &sfc(0), b"first");
    // A replaced field, so purge has something of its own to do too.
    write_and_exit(&root, &sfc(0), b"second");
    let purger = FieldStore::open(Config::embedded(&root)).unwrap();
    let r = root.clone();
    failpoint::set("purge.after_census", move || {
        write_and_exit(&r, &sfc(1), b"flushed during the purge")
    });
    let report = purger.purge(&Request::default(), true).unwrap();
    failpoint::clear();
    assert_eq!(
        read(&root, &sfc(1)).as_deref(),
        Some(&b"flushed during the purge"[..])
    );
    assert_eq!(read(&root, &sfc(0)).as_deref(), Some(&b"second"[..]));
    // The replaced field's file went; the new writer's file stayed, and
    // the report says why.
    let data: Vec<_> = report.datasets[0]
        .items
        .iter()
        .filter(|i| i.kind == fieldstore_core::maintenance::ItemKind::Data)
        .collect();
    assert_eq!(data.len(), 1, "{report:?}");
    assert!(
        report.datasets[0]
            .kept
            .iter()
            .any(|k| k.reason.contains("flushed while this ran")),
        "{report:?}"
    );
}

/// A writer that flushes and exits between a purge's plan and its claims:
/// its data file was planned as an orphan; the reading after the claim
/// finds it referenced.
#[test]
fn purge_keeps_a_data_file_flushed_between_its_plan_and_its_claim() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    write_and_exit(&root, &sfc(0), b"zero");
    // A killed writer's data file (no entry points into it): the planned
    // orphan; and a writer that flushes into a file of its own meanwhile.
    let killed = root.join("od:0001:oper:20231201:1200:g/host.9.9.9.data");
    std::fs::write(&killed, b"never indexed").unwrap();
    let purger = FieldStore::open(Config::embedded(&root)).unwrap();
    let r = root.clone();
    failpoint::set("maintenance.before_claim", move || {
        write_and_exit(&r, &sfc(2), b"two")
    });
    purger.purge(&Request::default(), true).unwrap();
    failpoint::clear();
    assert!(!killed.exists(), "the orphan went");
    assert_eq!(read(&root, &sfc(0)).as_deref(), Some(&b"zero"[..]));
    assert_eq!(read(&root, &sfc(2)).as_deref(), Some(&b"two"[..]));
}

/// The second race of the issue: a wipe of one collocation while writers of
/// another flush into new index files and exit; the index files named by
/// FLUSH records after the WIPE record must stay.
#[test]
fn a_collocation_wipe_keeps_other_collocations_index_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    write_and_exit(&root, &pl(0), b"pl");
    write_and_exit(&root, &sfc(0), b"sfc 0");
    let wiper = FieldStore::open(Config::embedded(&root)).unwrap();
    let r = root.clone();
    let mut step = 1;
    for point in ["maintenance.before_claim", "reclaim.before_claim"] {
        let r = r.clone();
        let first = step;
        failpoint::set(point, move || write_and_exit(&r, &sfc(first), b"sfc later"));
        step += 1;
    }
    wiper.wipe(&PL.parse().unwrap(), doit()).unwrap();
    failpoint::clear();
    assert_eq!(read(&root, &pl(0)), None);
    assert_eq!(read(&root, &sfc(0)).as_deref(), Some(&b"sfc 0"[..]));
    for s in 1..step {
        assert_eq!(read(&root, &sfc(s)).as_deref(), Some(&b"sfc later"[..]));
    }
    let fs = FieldStore::open(Config::embedded(&root)).unwrap();
    assert_eq!(
        fs.list(&Request::default(), ListOptions::default())
            .unwrap()
            .len(),
        step as usize
    );
}

/// A writer killed between creating its private `.new` file and renaming
/// it into place leaves it unlocked and unreferenced: purge removes it.
#[test]
fn purge_removes_a_killed_writers_private_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    write_and_exit(&root, &sfc(0), b"zero");
    let ds = root.join("od:0001:oper:20231201:1200:g");
    let data = ds.join(".host.1.2.3.data.new");
    let index = ds.join(".host.1.2.3.index.new");
    std::fs::write(&data, b"").unwrap();
    std::fs::write(&index, b"").unwrap();
    let fs = FieldStore::open(Config::embedded(&root)).unwrap();
    fs.purge(&Request::default(), true).unwrap();
    assert!(!data.exists() && !index.exists());
    assert_eq!(read(&root, &sfc(0)).as_deref(), Some(&b"zero"[..]));
}

/// Two roots `a` and `b` in one store, created in `dir`.
fn two_roots(
    dir: &Path,
) -> (
    std::path::PathBuf,
    std::path::PathBuf,
    impl Fn() -> FieldStore,
) {
    use crate::root::Root;
    let (a, b) = (dir.join("a"), dir.join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let (a2, b2) = (a.clone(), b.clone());
    let open = move || {
        let mut c = Config::embedded(&a2);
        c.roots = vec![Root::new(&a2), Root::new(&b2)];
        FieldStore::open(c).unwrap()
    };
    (a, b, open)
}

const DATASET_DIR: &str = "od:0001:oper:20231201:1200:g";

/// [`two_roots`] in a new temporary directory, with the dataset in `a`
/// holding one field, `sfc(0)` = `before`.
fn one_field_in_a() -> (
    tempfile::TempDir,
    std::path::PathBuf,
    std::path::PathBuf,
    impl Fn() -> FieldStore,
) {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, open) = two_roots(dir.path());
    let w = open();
    w.archive(&sfc(0), b"before").unwrap();
    w.flush().unwrap();
    (dir, a, b, open)
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = dir
        .read_dir()
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn get(fs: &FieldStore, key: &Key) -> Option<Vec<u8>> {
    let r = fs.retrieve(&Request::from_key(key)).unwrap();
    (!r.is_empty()).then(|| r.read_all().unwrap())
}

/// A move across file systems (its copy protocol, run within one) killed at
/// each step, with a flush between the bulk copy and the seal: every field
/// is listed once, status says a move was interrupted, a new archive goes
/// to the one copy readers use, purge deletes nothing visible, and moving
/// again finishes the move. The flush before the seal is never lost: the
/// copy is made whole under the seal before it is published.
#[test]
fn an_interrupted_move_leaves_one_dataset_and_moving_again_finishes_it() {
    use crate::backends::posix::manage::copy_move;
    for point in [
        "move.before_seal",
        "move.before_publish",
        "move.before_retire",
        "move.before_cleanup",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, open) = two_roots(dir.path());
        let count = || {
            open()
                .list(&Request::default(), ListOptions::default())
                .unwrap()
                .len()
        };
        for step in 0..3 {
            let w = open();
            w.archive(&sfc(step), format!("field {step}").as_bytes())
                .unwrap();
            w.flush().unwrap();
        }
        // A flush between the bulk copy and the seal (the tail), then the
        // crash (a panic drops the mover's locks, as its death would).
        let tail_writer = open();
        failpoint::set("move.before_seal", move || {
            tail_writer.archive(&sfc(3), b"tail").unwrap();
            tail_writer.flush().unwrap();
        });
        let hook = point;
        if point == "move.before_seal" {
            // The flush first, then the crash.
            let tail_writer = open();
            failpoint::set(hook, move || {
                tail_writer.archive(&sfc(3), b"tail").unwrap();
                tail_writer.flush().unwrap();
                panic!("killed");
            });
        } else {
            failpoint::set(point, || panic!("killed"));
        }
        let crashed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            copy_move(&a.join(DATASET_DIR), &b.join(DATASET_DIR))
        }));
        failpoint::clear();
        assert!(crashed.is_err(), "{point}");
        let fs = open();
        let status = fs.status(&Request::default()).unwrap();
        assert_eq!(status.len(), 1, "{point}: one dataset");
        assert!(
            status[0].damage.iter().any(|d| d.contains("interrupted")),
            "{point}: {status:?}"
        );
        assert_eq!(count(), 4, "{point}: each field once");
        // Purge deletes nothing anyone can see.
        fs.purge(&Request::default(), true).unwrap();
        assert_eq!(count(), 4, "{point}: purge kept everything");
        // A writer opening the dataset finishes a move past its retirement
        // (so its flushes come after the copy), else the copy is ignored.
        let w = open();
        w.archive(&sfc(4), b"after").unwrap();
        w.flush().unwrap();
        drop(w);
        assert_eq!(count(), 5, "{point}");
        // Moving again finishes (or redoes) it; nothing flushed is lost.
        if point != "move.before_cleanup" {
            let moved = fs.move_datasets(&Request::default(), &b).unwrap();
            assert_eq!(moved.len(), 1, "{point}");
        }
        assert!(names_in(&a).is_empty(), "{point}: a is empty");
        assert_eq!(names_in(&b), [DATASET_DIR], "{point}");
        assert_eq!(count(), 5, "{point}");
        for (step, want) in [(0, &b"field 0"[..]), (3, b"tail"), (4, b"after")] {
            assert_eq!(
                get(&open(), &sfc(step)).as_deref(),
                Some(want),
                "{point} step {step}"
            );
        }
        assert!(open().status(&Request::default()).unwrap()[0]
            .damage
            .is_empty());
    }
}

/// A writer whose dataset is renamed into another root (a move within one
/// file system) as its flush starts (before its catalogue writes its index
/// blocks ahead: the index file is created after the move) or between its
/// data's flush and its catalogue's publish (the blocks were written
/// before the move): its index file goes into the moved dataset, not into
/// a new directory where the dataset was, and its flush stands. Its next
/// flush goes there too.
#[test]
fn a_writer_follows_its_dataset_renamed_into_another_root() {
    for point in ["flush.start", "flush.store_done"] {
        follows_a_rename_at(point);
    }
}

fn follows_a_rename_at(point: &'static str) {
    let (_dir, a, b, open) = one_field_in_a();
    let writer = open();
    writer.archive(&sfc(1), b"during").unwrap();
    let mover = open();
    let to = b.clone();
    failpoint::set(point, move || {
        mover.move_datasets(&Request::default(), &to).unwrap();
    });
    writer.flush().unwrap();
    failpoint::clear();
    writer.archive(&sfc(2), b"after").unwrap();
    writer.flush().unwrap();
    assert!(names_in(&a).is_empty(), "nothing made again where it was");
    assert_eq!(names_in(&b), [DATASET_DIR]);
    let fs = open();
    for (step, want) in [(0, &b"before"[..]), (1, b"during"), (2, b"after")] {
        assert_eq!(get(&fs, &sfc(step)).as_deref(), Some(want), "step {step}");
    }
    assert!(fs.status(&Request::default()).unwrap()[0].damage.is_empty());
    // And back: the data file a writer opened before the move is named
    // relative to the dataset, wherever it is.
    fs.move_datasets(&Request::default(), &a).unwrap();
    for step in 0..3 {
        assert!(
            get(&fs, &sfc(step)).is_some(),
            "step {step} after moving back ({point})"
        );
    }
}

/// The lengths of the index files in `dir`, by name.
fn index_lengths(dir: &Path) -> std::collections::BTreeMap<String, u64> {
    names_in(dir)
        .into_iter()
        .filter(|n| n.ends_with(".index"))
        .map(|n| {
            let len = std::fs::metadata(dir.join(&n)).unwrap().len();
            (n, len)
        })
        .collect()
}

/// A flush whose catalogue wrote its index blocks ahead and whose writer
/// was then dropped (the store's flush failed, and the handle drops a
/// failed dataset's writers) publishes nothing, and its blocks are cut
/// off the index file; written ahead and flushed, it is visible.
#[test]
fn a_flush_written_ahead_and_never_published_leaves_nothing() {
    let (_dir, a, _b, open) = one_field_in_a();
    let dataset = a.join(DATASET_DIR);
    let before = index_lengths(&dataset);
    let fs = open();
    let split = fs.schema().split(&sfc(1)).unwrap();
    let mut store = fs.store().writer(&split.dataset).unwrap();
    let mut catalogue = fs.catalogue().writer(&split.dataset, fs.schema()).unwrap();
    let at = store.archive(&split.collocation, b"never").unwrap();
    catalogue
        .insert(&split.collocation, &split.element, &at)
        .unwrap();
    catalogue.prepare_flush().unwrap();
    let ahead = index_lengths(&dataset);
    let new: Vec<_> = ahead
        .iter()
        .filter(|(n, _)| !before.contains_key(*n))
        .collect();
    assert!(
        matches!(new.as_slice(), [(_, len)] if **len > 0),
        "blocks written ahead to a new index file: {ahead:?}"
    );
    drop(catalogue);
    store.abandon();
    let after = index_lengths(&dataset);
    assert!(
        after
            .iter()
            .all(|(n, len)| before.get(n) == Some(len) || *len == 0),
        "the blocks written ahead are cut off: {after:?}"
    );
    assert_eq!(get(&open(), &sfc(1)), None, "nothing published");
    // Written ahead, then flushed (the handle's order): visible.
    let mut catalogue = fs.catalogue().writer(&split.dataset, fs.schema()).unwrap();
    let at = store.archive(&split.collocation, b"now").unwrap();
    catalogue
        .insert(&split.collocation, &split.element, &at)
        .unwrap();
    catalogue.prepare_flush().unwrap();
    store.flush().unwrap();
    catalogue.flush().unwrap();
    assert_eq!(get(&open(), &sfc(1)).as_deref(), Some(&b"now"[..]));
    assert_eq!(get(&open(), &sfc(0)).as_deref(), Some(&b"before"[..]));
    assert!(open().status(&Request::default()).unwrap()[0]
        .damage
        .is_empty());
}

/// A writer whose catalogue and store opened the dataset under two paths
/// (a move came between them), and whose dataset moved again before its
/// flush: its blocks name the data file relative to the dataset, so the
/// field reads back wherever the dataset goes.
#[test]
fn a_data_file_opened_under_another_path_of_the_dataset_is_named_relative_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, open) = two_roots(dir.path());
    let w = open();
    w.archive(&sfc(0), b"first").unwrap();
    w.flush().unwrap();
    let writer = open();
    let mover = open();
    let (to_a, to_b) = (a.clone(), b.clone());
    failpoint::set("archive.catalogue_writer_made", move || {
        mover.move_datasets(&Request::default(), &to_b).unwrap();
    });
    writer.archive(&sfc(1), b"second").unwrap();
    failpoint::clear();
    open().move_datasets(&Request::default(), &to_a).unwrap();
    writer.flush().unwrap();
    for root in [&a, &b, &a] {
        let fs = open();
        if fs.move_datasets(&Request::default(), root).is_err() {
            // Already there.
            assert!(root.join(DATASET_DIR).exists());
        }
        assert_eq!(
            get(&fs, &sfc(1)).as_deref(),
            Some(&b"second"[..]),
            "in {}",
            root.display()
        );
    }
}

/// A writer whose dataset is copied to another file system and retired
/// between its data's flush and its catalogue's: its flush fails, saying
/// so, and nothing of it is visible; archived again through the same
/// handle, it goes to the moved dataset.
#[test]
fn a_flush_after_a_copy_move_fails_cleanly_and_the_next_goes_to_the_copy() {
    use crate::backends::posix::manage::copy_move;
    let (_dir, a, b, open) = one_field_in_a();
    let writer = open();
    writer.archive(&sfc(1), b"during").unwrap();
    let (from, to) = (a.join(DATASET_DIR), b.join(DATASET_DIR));
    failpoint::set("flush.store_done", move || {
        copy_move(&from, &to).unwrap();
    });
    let e = writer.flush().unwrap_err();
    failpoint::clear();
    assert_eq!(e.kind(), fieldstore_core::ErrorKind::NotFound, "{e}");
    assert!(
        e.to_string().contains("moved to another file system"),
        "{e}"
    );
    let fs = open();
    assert_eq!(get(&fs, &sfc(1)), None, "a failed flush is not visible");
    writer.archive(&sfc(1), b"again").unwrap();
    writer.flush().unwrap();
    assert_eq!(get(&fs, &sfc(0)).as_deref(), Some(&b"before"[..]));
    assert_eq!(get(&fs, &sfc(1)).as_deref(), Some(&b"again"[..]));
    assert!(names_in(&a).is_empty());
    assert_eq!(names_in(&b), [DATASET_DIR]);
}

/// A move that starts while a writer is between finding its dataset and
/// appending to it waits for the append (the seal), and copies it: the
/// writer's flush stands and is in the moved dataset.
#[test]
fn a_copy_move_waits_for_an_append_in_progress_and_keeps_it() {
    use crate::backends::posix::manage::copy_move;
    let (_dir, a, b, open) = one_field_in_a();
    let writer = open();
    writer.archive(&sfc(1), b"during").unwrap();
    let (from, to) = (a.join(DATASET_DIR), b.join(DATASET_DIR));
    let mover = std::sync::Arc::new(std::sync::Mutex::new(None));
    let m = mover.clone();
    failpoint::set("flush.before_append", move || {
        let (from, to) = (from.clone(), to.clone());
        *m.lock().unwrap() = Some(std::thread::spawn(move || copy_move(&from, &to)));
        // Long enough for the mover to copy and reach the seal.
        std::thread::sleep(std::time::Duration::from_millis(300));
    });
    writer.flush().unwrap();
    failpoint::clear();
    let handle = mover.lock().unwrap().take().unwrap();
    handle.join().unwrap().unwrap();
    assert!(names_in(&a).is_empty());
    assert_eq!(names_in(&b), [DATASET_DIR]);
    let fs = open();
    assert_eq!(get(&fs, &sfc(1)).as_deref(), Some(&b"during"[..]));
    // The handle's next flush goes to the copy.
    writer.archive(&sfc(2), b"after").unwrap();
    match writer.flush() {
        Ok(()) => assert_eq!(get(&fs, &sfc(2)).as_deref(), Some(&b"after"[..])),
        Err(e) => {
            assert!(
                e.to_string().contains("moved to another file system"),
                "{e}"
            );
            assert_eq!(get(&fs, &sfc(2)), None);
        }
    }
}

/// A reader that read a dataset before it moved keeps what it knew of its
/// log: `watch` reports nothing again after a move (within one file system
/// or across), and then what is flushed after it.
#[test]
fn a_watch_reports_nothing_again_across_moves() {
    use crate::backends::posix::manage::copy_move;
    let dir = tempfile::tempdir().unwrap();
    let (a, b, open) = two_roots(dir.path());
    let w = open();
    for step in 0..3 {
        w.archive(&sfc(step), b"x").unwrap();
    }
    w.flush().unwrap();
    let watcher = open();
    let options = crate::watch::WatchOptions {
        timeout: Some(std::time::Duration::from_secs(4)),
        ..Default::default()
    };
    let mut watch = watcher.watch(&Request::default(), options).unwrap();
    for _ in 0..3 {
        let e = watch.next().unwrap().unwrap();
        assert!(!e.replaced);
    }
    let fs = open();
    fs.move_datasets(&Request::default(), &b).unwrap();
    w.archive(&sfc(3), b"y").unwrap();
    w.flush().unwrap();
    copy_move(&b.join(DATASET_DIR), &a.join(DATASET_DIR)).unwrap();
    let w = open();
    w.archive(&sfc(4), b"z").unwrap();
    w.flush().unwrap();
    // Everything it reports until its time-out: the two new fields, once.
    let rest: Vec<(String, bool)> = watch
        .map(|e| e.unwrap())
        .map(|e| {
            let step = e.element.full_key().get("step").unwrap_or("").to_string();
            (step, e.replaced)
        })
        .collect();
    assert_eq!(rest, [("3".to_string(), false), ("4".to_string(), false)]);
}

/// A field of the wiped collocation itself, flushed after the WIPE record
/// and before the wipe removes index files: it is visible (it came after
/// the wipe) and its index file must stay.
#[test]
fn a_collocation_wipe_keeps_the_same_collocation_flushed_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    write_and_exit(&root, &pl(0), b"before the wipe");
    write_and_exit(&root, &sfc(0), b"sfc");
    let wiper = FieldStore::open(Config::embedded(&root)).unwrap();
    let r = root.clone();
    failpoint::set("maintenance.before_claim", move || {
        write_and_exit(&r, &pl(1), b"after the wipe")
    });
    wiper.wipe(&PL.parse().unwrap(), doit()).unwrap();
    failpoint::clear();
    assert_eq!(read(&root, &pl(0)), None);
    assert_eq!(read(&root, &pl(1)).as_deref(), Some(&b"after the wipe"[..]));
    assert_eq!(read(&root, &sfc(0)).as_deref(), Some(&b"sfc"[..]));
}

/// A writer that looked the dataset's path up just before a wipe renamed
/// it creates its file in the tombstone after the wipe listed it: the wipe
/// still succeeds and leaves no tombstone (it failed with `Directory not
/// empty` and left an untracked `.wiped.*` before).
#[test]
fn a_file_created_in_a_tombstone_during_a_wipe_is_removed_too() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    write_and_exit(&root, &sfc(0), b"zero");
    let r = root.clone();
    failpoint::set("wipe.tombstone_emptied", move || {
        for e in std::fs::read_dir(&r).unwrap() {
            let p = e.unwrap().path();
            if p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".wiped.")
            {
                std::fs::write(p.join(".host.5.6.7.index.new"), b"").unwrap();
            }
        }
    });
    let fs = FieldStore::open(Config::embedded(&root)).unwrap();
    fs.wipe(&DATASET.parse().unwrap(), doit()).unwrap();
    failpoint::clear();
    let left: Vec<_> = std::fs::read_dir(&root).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A tombstone whose `toc` is gone but which still holds files (a wipe
/// killed at that instant) names no dataset: the next wipe removes it.
#[test]
fn a_nameless_tombstone_is_removed_by_the_next_wipe() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    write_and_exit(&root, &sfc(0), b"zero");
    let t = root.join(".wiped.host.1.2.3");
    std::fs::create_dir(&t).unwrap();
    std::fs::write(t.join("host.1.2.3.data"), b"x").unwrap();
    let fs = FieldStore::open(Config::embedded(&root)).unwrap();
    fs.wipe(&DATASET.parse().unwrap(), doit()).unwrap();
    let left: Vec<_> = std::fs::read_dir(&root).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

/// The memory backend's store makes a flush's blobs readable before the
/// catalogue indexes them: a purge in between must not take them for
/// orphans (they are in use until `StoreWriter::indexed`).
#[test]
fn memory_purge_between_the_store_and_catalogue_flush_keeps_the_blobs() {
    use crate::backends::memory::MemoryBackend;
    let schema: fieldstore_core::Schema =
        "[ class, expver [ type [ step, param ]]]".parse().unwrap();
    let backend = MemoryBackend::new();
    let open = {
        let backend = backend.clone();
        move || {
            FieldStore::with_backends(
                Config::memory(schema.clone()),
                std::sync::Arc::new(backend.catalogue()),
                std::sync::Arc::new(backend.store()),
            )
        }
    };
    let k: Key = "class=od,expver=1,type=fc,step=0,param=167"
        .parse()
        .unwrap();
    // Something in the dataset already, so that purge looks at it.
    let first: Key = "class=od,expver=1,type=fc,step=1,param=167"
        .parse()
        .unwrap();
    let w = open();
    w.archive(&first, b"first").unwrap();
    w.flush().unwrap();
    drop(w);
    let writer = open();
    writer.archive(&k, b"flushed").unwrap();
    let purger = open();
    failpoint::set("flush.store_done", move || {
        purger.purge(&Request::default(), true).unwrap();
    });
    writer.flush().unwrap();
    failpoint::clear();
    let r = open().retrieve(&Request::from_key(&k)).unwrap();
    assert_eq!(r.read_all().unwrap(), b"flushed");
}

/// A move into a root where a writer killed while creating the dataset
/// left an empty directory of its name (made, `toc` not linked yet) goes
/// ahead; one holding anything else is refused, naming it.
#[test]
fn a_move_over_an_empty_directory_of_the_dataset_name_goes_ahead() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, open) = two_roots(dir.path());
    let w = open();
    w.archive(&sfc(0), b"x").unwrap();
    w.flush().unwrap();
    std::fs::create_dir(b.join(DATASET_DIR)).unwrap();
    open().move_datasets(&Request::default(), &b).unwrap();
    assert_eq!(get(&open(), &sfc(0)).as_deref(), Some(&b"x"[..]));
    std::fs::create_dir(a.join(DATASET_DIR)).unwrap();
    std::fs::write(a.join(DATASET_DIR).join("notes"), b"mine").unwrap();
    let e = open().move_datasets(&Request::default(), &a).unwrap_err();
    assert!(e.to_string().contains("exists already"), "{e}");
    assert_eq!(get(&open(), &sfc(0)).as_deref(), Some(&b"x"[..]));
}

/// A flush refused at its append (its dataset locked against archive
/// between the index write and the `toc` append) made nothing visible: the
/// writer gives back what it wrote for it, its index and data files cut
/// back to where its last visible flush left them (a full disk must not
/// stay full for a failed flush; `docs/maintenance.md`, "Damage costs only
/// what it damaged").
#[test]
fn a_flush_refused_at_its_append_gives_its_bytes_back() {
    use fieldstore_core::{Control, Locks, Operation};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let w = FieldStore::open(Config::embedded(&root)).unwrap();
    w.archive(&sfc(0), &[1u8; 1000]).unwrap();
    w.flush().unwrap();
    let ds = root.join(DATASET_DIR);
    let sizes = || {
        let mut v: Vec<(String, u64)> = std::fs::read_dir(&ds)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.ends_with(".index") || n.ends_with(".data")
            })
            .map(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                (n, e.metadata().unwrap().len())
            })
            .collect();
        v.sort();
        v
    };
    let before = sizes();
    w.archive(&sfc(1), &[2u8; 100_000]).unwrap();
    let locker = root.clone();
    let dataset: Request = DATASET.parse().unwrap();
    failpoint::set("flush.before_append", move || {
        FieldStore::open(Config::embedded(&locker))
            .unwrap()
            .control(
                &dataset,
                Control::Lock,
                Locks::NONE.with(Operation::Archive),
            )
            .unwrap();
    });
    let e = w.flush().unwrap_err();
    failpoint::clear();
    assert_eq!(e.kind(), fieldstore_core::ErrorKind::Locked, "{e}");
    assert_eq!(sizes(), before, "the failed flush's bytes are given back");
    assert_eq!(read(&root, &sfc(0)).as_deref(), Some(&[1u8; 1000][..]));
    assert_eq!(read(&root, &sfc(1)), None);
}

/// A writer that found its dataset, which a move then takes to another
/// file system before the writer opens it: the writer looks for it again
/// and writes to the copy; it never creates the dataset anew where it found
/// it (a second dataset of that key would hide the moved one).
#[test]
fn a_writer_never_creates_anew_a_dataset_moved_away_while_it_opened_it() {
    use crate::backends::posix::manage::copy_move;
    let (_dir, a, b, open) = one_field_in_a();
    let (from, to) = (a.join(DATASET_DIR), b.join(DATASET_DIR));
    let mut once = Some(());
    failpoint::set("catalogue_writer.found", move || {
        if once.take().is_some() {
            copy_move(&from, &to).unwrap();
        }
    });
    let writer = open();
    writer.archive(&sfc(1), b"after").unwrap();
    writer.flush().unwrap();
    failpoint::clear();
    assert!(names_in(&a).is_empty(), "{:?}", names_in(&a));
    assert_eq!(names_in(&b), [DATASET_DIR]);
    let fs = open();
    assert_eq!(get(&fs, &sfc(0)).as_deref(), Some(&b"before"[..]));
    assert_eq!(get(&fs, &sfc(1)).as_deref(), Some(&b"after"[..]));
}

/// Another process finishing interrupted moves (a writer, or a move) while
/// a live move has made its copy's directory but not its mark yet leaves
/// it alone: only an empty copy directory whose mover is gone is removed.
#[test]
fn a_live_moves_new_directory_is_not_taken_for_an_interrupted_one() {
    use crate::backends::posix::manage::copy_move;
    let (_dir, a, b, open) = one_field_in_a();
    let other = open();
    let here = a.clone();
    failpoint::set("move.dir_made", move || {
        // Finishes interrupted moves first, then finds nothing to move.
        let e = other.move_datasets(&Request::default(), &here).unwrap_err();
        assert_eq!(e.kind(), fieldstore_core::ErrorKind::InvalidInput, "{e}");
    });
    copy_move(&a.join(DATASET_DIR), &b.join(DATASET_DIR)).unwrap();
    failpoint::clear();
    assert_eq!(names_in(&b), [DATASET_DIR]);
    assert_eq!(get(&open(), &sfc(0)).as_deref(), Some(&b"before"[..]));
}

/// A mover racing every look for the dataset: armed, it renames the
/// dataset into the root just looked at, after each root looked at, so
/// that a look without the namespace lock finds it nowhere. It takes the
/// roots' namespace lock as moves do, and while someone else holds it
/// (a look under the lock) it does nothing. At most `max` renames, an even
/// number: the dataset ends where it started, in `b`. Returns the arming
/// switch and the count of renames.
fn mover_racing_looks(
    a: &Path,
    b: &Path,
    max: u32,
) -> (
    std::rc::Rc<std::cell::Cell<bool>>,
    std::rc::Rc<std::cell::Cell<u32>>,
) {
    use std::cell::Cell;
    use std::rc::Rc;
    let armed = Rc::new(Cell::new(false));
    let moves = Rc::new(Cell::new(0u32));
    let (on, count) = (armed.clone(), moves.clone());
    let (a, b) = (a.to_path_buf(), b.to_path_buf());
    failpoint::set("find_dataset.missed_in_a_root", move || {
        if !on.get() || count.get() >= max {
            return;
        }
        let lock = |d: &Path| {
            let f = std::fs::File::open(d).unwrap();
            crate::backends::posix::layout::flock(&f, libc::LOCK_EX | libc::LOCK_NB)
                .ok()
                .map(|()| f)
        };
        let (Some(_la), Some(_lb)) = (lock(&a), lock(&b)) else {
            return;
        };
        let (from, to) = if count.get() % 2 == 0 {
            (&b, &a)
        } else {
            (&a, &b)
        };
        std::fs::rename(from.join(DATASET_DIR), to.join(DATASET_DIR)).unwrap();
        count.set(count.get() + 1);
    });
    (armed, moves)
}

/// A move renaming the dataset between two roots while a new writer looks
/// for it, each time after the writer looked in one root and before it
/// looks in the other, hides it from the writer's first look; the writer
/// then looks again under the roots' namespace lock, which moves take too,
/// and opens the dataset instead of creating a second one that would hide
/// it and its flushes. Its store, looking for the directory its data files
/// go in, is raced the same way and must not make a directory of its own.
#[test]
fn a_writer_that_misses_its_dataset_in_every_root_looks_again_before_creating_one() {
    let (_dir, a, b, open) = one_field_in_a();
    std::fs::rename(a.join(DATASET_DIR), b.join(DATASET_DIR)).unwrap();
    let (armed, moves) = mover_racing_looks(&a, &b, 8);
    {
        let armed = armed.clone();
        failpoint::set("catalogue_writer.find", move || armed.set(true));
    }
    let writer = open();
    writer.archive(&sfc(1), b"after").unwrap();
    writer.flush().unwrap();
    failpoint::clear();
    assert!(
        moves.get() >= 4,
        "the looks were not missed: {}",
        moves.get()
    );
    assert!(
        names_in(&a).is_empty(),
        "a second dataset, or a store's directory: {:?}",
        names_in(&a)
    );
    assert_eq!(names_in(&b), [DATASET_DIR]);
    let fs = open();
    assert_eq!(get(&fs, &sfc(0)).as_deref(), Some(&b"before"[..]));
    assert_eq!(get(&fs, &sfc(1)).as_deref(), Some(&b"after"[..]));
}

/// A reader looking for a dataset that a move renames between the roots
/// while it looks (hidden from its first look) looks again under the
/// namespace lock and finds it: a field once read does not vanish.
#[test]
fn a_reader_that_misses_a_dataset_being_moved_looks_again_under_the_lock() {
    let (_dir, a, b, open) = one_field_in_a();
    std::fs::rename(a.join(DATASET_DIR), b.join(DATASET_DIR)).unwrap();
    let reader = open();
    let (armed, moves) = mover_racing_looks(&a, &b, 2);
    armed.set(true);
    let got = get(&reader, &sfc(0));
    failpoint::clear();
    assert_eq!(moves.get(), 2, "the first look was not missed");
    assert_eq!(got.as_deref(), Some(&b"before"[..]));
}
