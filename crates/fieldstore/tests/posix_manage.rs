//! POSIX-specific data management: move between roots with a reader and a
//! writer holding the dataset, interrupted wipes reported by status, a
//! dataset re-created after a wipe at the same path, files fieldstore did
//! not create.

use std::path::Path;

use fieldstore::{Config, ErrorKind, FieldStore, Key, Request, Root, WipeOptions};

fn key(step: u32) -> Key {
    format!(
        "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g,type=fc,levtype=sfc,step={step},param=167"
    )
    .parse()
    .unwrap()
}

const REQ: &str = "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g";
const DIR: &str = "od:0001:oper:20231201:1200:g";

fn req(s: &str) -> Request {
    s.parse().unwrap()
}

fn two_roots(a: &Path, b: &Path) -> Config {
    let mut c = Config::embedded(a);
    c.roots = vec![Root::new(a), Root::new(b)];
    c
}

fn get(fs: &FieldStore, step: u32) -> Option<Vec<u8>> {
    let r = fs.retrieve(&Request::from_key(&key(step))).unwrap();
    if r.is_empty() {
        return None;
    }
    Some(r.read_all().unwrap())
}

#[test]
fn move_keeps_readers_and_writers_going() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let w = FieldStore::open(two_roots(&a, &b)).unwrap();
    let r = FieldStore::open(two_roots(&a, &b)).unwrap();
    w.archive(&key(0), b"before the move").unwrap();
    w.flush().unwrap();
    assert_eq!(get(&r, 0).as_deref(), Some(&b"before the move"[..]));
    let moved = w.move_datasets(&req(REQ), &b).unwrap();
    assert_eq!(moved.len(), 1);
    assert_eq!(moved[0].to, b.join(DIR).display().to_string());
    assert!(!a.join(DIR).exists());
    // The reader that had it open finds it in its new root; the writer
    // that had it open goes on writing, and its flush stands.
    assert_eq!(get(&r, 0).as_deref(), Some(&b"before the move"[..]));
    w.archive(&key(6), b"after the move").unwrap();
    w.flush().unwrap();
    assert_eq!(get(&r, 6).as_deref(), Some(&b"after the move"[..]));
    let fresh = FieldStore::open(two_roots(&a, &b)).unwrap();
    assert_eq!(get(&fresh, 0).as_deref(), Some(&b"before the move"[..]));
    assert_eq!(get(&fresh, 6).as_deref(), Some(&b"after the move"[..]));
    assert_eq!(
        fresh.status(&req(REQ)).unwrap()[0].place,
        b.join(DIR).display().to_string()
    );
    // Moving it back: the data files named relative to the dataset
    // directory follow it.
    fresh.move_datasets(&req(REQ), &a).unwrap();
    assert_eq!(get(&r, 6).as_deref(), Some(&b"after the move"[..]));
    let e = fresh.move_datasets(&req(REQ), &a).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
}

#[test]
fn an_interrupted_wipe_is_reported_and_finished() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FieldStore::open(Config::embedded(dir.path())).unwrap();
    fs.archive(&key(0), b"x").unwrap();
    fs.flush().unwrap();
    // What a wipe killed right after hiding the dataset leaves.
    std::fs::rename(dir.path().join(DIR), dir.path().join(".wiped.host.1.2.3")).unwrap();
    let status = fs.status(&req("class=od")).unwrap();
    assert_eq!(status.len(), 1);
    assert!(status[0].interrupted, "{status:?}");
    assert!(fs
        .list(&req("class=od"), Default::default())
        .unwrap()
        .is_empty());
    let dry = fs.wipe(&req(REQ), WipeOptions::default()).unwrap();
    assert!(dry.datasets[0].interrupted, "{dry:?}");
    assert!(
        dry.datasets[0]
            .items
            .iter()
            .all(|i| i.kind == fieldstore::maintenance::ItemKind::Leftover),
        "{dry:?}"
    );
    fs.wipe(
        &req(REQ),
        WipeOptions {
            doit: true,
            unsafe_wipe_all: false,
        },
    )
    .unwrap();
    assert!(fs.status(&req("class=od")).unwrap().is_empty());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_dataset_created_anew_after_a_wipe_is_followed() {
    let dir = tempfile::tempdir().unwrap();
    let r = FieldStore::open(Config::embedded(dir.path())).unwrap();
    let w = FieldStore::open(Config::embedded(dir.path())).unwrap();
    w.archive(&key(0), b"old").unwrap();
    w.flush().unwrap();
    assert_eq!(get(&r, 0).as_deref(), Some(&b"old"[..]));
    let doit = WipeOptions {
        doit: true,
        unsafe_wipe_all: false,
    };
    FieldStore::open(Config::embedded(dir.path()))
        .unwrap()
        .wipe(&req(REQ), doit)
        .unwrap();
    let w2 = FieldStore::open(Config::embedded(dir.path())).unwrap();
    w2.archive(&key(6), b"new").unwrap();
    w2.flush().unwrap();
    // The reader that had the old one open sees the new one, whole.
    assert_eq!(get(&r, 0), None);
    assert_eq!(get(&r, 6).as_deref(), Some(&b"new"[..]));
    // A writer of the old one is told, and its next flush creates nothing
    // twice: it joins the new dataset.
    w.archive(&key(12), b"lost").unwrap();
    assert_eq!(w.flush().unwrap_err().kind(), ErrorKind::NotFound);
    w.archive(&key(12), b"kept").unwrap();
    w.flush().unwrap();
    assert_eq!(get(&r, 12).as_deref(), Some(&b"kept"[..]));
    assert_eq!(get(&r, 6).as_deref(), Some(&b"new"[..]));
}

#[test]
fn unknown_files_stop_a_wipe_and_unsafe_wipe_all_deletes_them() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FieldStore::open(Config::embedded(dir.path())).unwrap();
    fs.archive(&key(0), b"x").unwrap();
    fs.flush().unwrap();
    let stray = dir.path().join(DIR).join("x.data.gribjump");
    std::fs::write(&stray, b"aux").unwrap();
    let dry = fs.wipe(&req(REQ), WipeOptions::default()).unwrap();
    assert_eq!(dry.datasets[0].unknown.len(), 1, "{dry:?}");
    assert_eq!(dry.datasets[0].unknown[0].name, stray.display().to_string());
    let e = fs
        .wipe(
            &req(REQ),
            WipeOptions {
                doit: true,
                unsafe_wipe_all: false,
            },
        )
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert_eq!(get(&fs, 0).as_deref(), Some(&b"x"[..]), "nothing deleted");
    fs.wipe(
        &req(REQ),
        WipeOptions {
            doit: true,
            unsafe_wipe_all: true,
        },
    )
    .unwrap();
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_collocation_wipe_says_which_files_go_and_removes_them() {
    let dir = tempfile::tempdir().unwrap();
    let open = || FieldStore::open(Config::embedded(dir.path())).unwrap();
    {
        let a = open();
        a.archive(&key(0), b"fc").unwrap();
        a.flush().unwrap();
    }
    {
        let b = open();
        let an: Key = key(0)
            .to_string()
            .replace("type=fc", "type=an")
            .parse()
            .unwrap();
        b.archive(&an, b"an").unwrap();
        b.flush().unwrap();
    }
    let fs = open();
    let files = || {
        let mut v: Vec<String> = std::fs::read_dir(dir.path().join(DIR))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".data") || n.ends_with(".index"))
            .collect();
        v.sort();
        v
    };
    assert_eq!(files().len(), 4);
    let names = |r: &fieldstore::WipeReport| {
        let mut v: Vec<String> = r.datasets[0]
            .items
            .iter()
            .map(|i| i.name.rsplit('/').next().unwrap().to_string())
            .collect();
        v.sort();
        v
    };
    let wipe_fc = req(&format!("{REQ},type=fc"));
    let dry = fs.wipe(&wipe_fc, WipeOptions::default()).unwrap();
    let planned = names(&dry);
    assert_eq!(
        planned.len(),
        2,
        "the first writer's data and index files: {dry:?}"
    );
    assert_eq!(files().len(), 4, "a dry run deletes nothing");
    let done = fs
        .wipe(
            &wipe_fc,
            WipeOptions {
                doit: true,
                unsafe_wipe_all: false,
            },
        )
        .unwrap();
    assert_eq!(
        names(&done),
        planned,
        "the real run deletes what the dry run said"
    );
    let left = files();
    assert_eq!(left.len(), 2);
    assert!(left.iter().all(|f| !planned.contains(f)), "{left:?}");
    assert_eq!(get(&fs, 0), None);
}
