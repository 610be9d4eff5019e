//! FDB5's spaces: each new dataset goes to the root its space's handler
//! chooses, readers visit every visited root, and the roots' flags lock
//! their datasets. (Agreement with the real FDB5 on the same config:
//! `crates/fieldstore-cli/tests/fdb5_spaces.rs`.)

use std::path::{Path, PathBuf};

use fieldstore::{Config, ErrorKind, FieldStore, Key, Level, ListOptions, Request, WipeOptions};

fn key(class: &str, expver: &str, step: u32) -> Key {
    format!(
        "class={class},expver={expver},stream=oper,date=20231201,time=1200,domain=g,type=fc,levtype=sfc,step={step},param=167"
    )
    .parse()
    .unwrap()
}

fn dir(class: &str, expver: &str) -> String {
    format!("{class}:{expver}:oper:20231201:1200:g")
}

fn roots(base: &Path, names: &[&str]) -> Vec<PathBuf> {
    names
        .iter()
        .map(|n| {
            let p = base.join(n);
            std::fs::create_dir_all(&p).unwrap();
            p
        })
        .collect()
}

fn open(base: &Path, yaml: &str) -> FieldStore {
    let config = Config::from_yaml(yaml, base, "test.yaml").unwrap();
    FieldStore::open(config).unwrap()
}

fn datasets(fs: &FieldStore, request: &str) -> Vec<String> {
    let options = ListOptions {
        depth: Level::Dataset,
        duplicates: false,
    };
    let mut out: Vec<String> = fs
        .list(&request.parse().unwrap(), options)
        .unwrap()
        .iter()
        .map(|e| e.dataset.fingerprint())
        .collect();
    out.sort();
    out
}

/// The roots whose directory holds the dataset `name`.
fn holders(all: &[PathBuf], name: &str) -> Vec<String> {
    all.iter()
        .filter(|r| r.join(name).join("toc").exists())
        .map(|r| r.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn each_space_places_its_datasets_with_its_handler() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path();
    let all = roots(base, &["ro", "a", "b", "x", "y", "e", "f", "g"]);
    std::fs::create_dir_all(base.join("home/etc/fdb")).unwrap();
    let map = base.join("home/etc/fdb/expver_to_fdb_root.map");
    std::fs::write(&map, format!("0002 {}\n", base.join("y").display())).unwrap();
    // The only test of this binary that sets variables.
    std::env::set_var("FDB_FILESPACEHANDLER_ENVVARNAME", "FIELDSTORE_TEST_STHOST");
    std::env::set_var("FIELDSTORE_TEST_STHOST", base.join("f"));
    let yaml = "fdb_home: home\n\
        spaces:\n\
        - {regex: '^od:0001:', handler: Default, roots: [{path: ro, writable: false}, {path: a}, {path: b}]}\n\
        - {regex: '^od:', handler: expver, roots: [{path: x}, {path: y}]}\n\
        - {regex: '^rd:', handler: envvar, roots: [{path: e}, {path: f}]}\n\
        - {regex: '.*', roots: [{path: g}]}\n";
    let fs = open(base, yaml);
    for (class, expver) in [
        ("od", "0001"),
        ("od", "0002"),
        ("od", "0003"),
        ("rd", "0001"),
        ("ea", "0001"),
    ] {
        fs.archive(
            &key(class, expver, 0),
            format!("{class} {expver}").as_bytes(),
        )
        .unwrap();
    }
    fs.flush().unwrap();
    assert_eq!(holders(&all, &dir("od", "0001")), ["a"]);
    assert_eq!(holders(&all, &dir("od", "0002")), ["y"]);
    let third = holders(&all, &dir("od", "0003"));
    assert!(third == ["x"] || third == ["y"], "{third:?}");
    // The expver handler recorded its choice for the next process.
    let text = std::fs::read_to_string(&map).unwrap();
    assert!(
        text.ends_with(&format!("0003 {}\n", base.join(&third[0]).display())),
        "{text}"
    );
    assert_eq!(holders(&all, &dir("rd", "0001")), ["f"]);
    assert_eq!(holders(&all, &dir("ea", "0001")), ["g"]);

    // Another process sees every dataset, whatever root holds it, and an
    // existing dataset stays where it is even if its space would now
    // choose elsewhere.
    std::env::set_var("FIELDSTORE_TEST_STHOST", base.join("e"));
    let other = open(base, yaml);
    assert_eq!(
        datasets(&other, ""),
        [
            dir("ea", "0001"),
            dir("od", "0001"),
            dir("od", "0002"),
            dir("od", "0003"),
            dir("rd", "0001")
        ]
    );
    other.archive(&key("rd", "0001", 6), b"rd again").unwrap();
    other.flush().unwrap();
    assert_eq!(holders(&all, &dir("rd", "0001")), ["f"]);
    let r = other
        .retrieve(&Request::from_key(&key("od", "0002", 0)))
        .unwrap();
    assert_eq!(r.read_all().unwrap(), b"od 0002");
}

#[test]
fn root_flags_lock_the_datasets_in_them() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path();
    roots(base, &["old", "new"]);
    let writable = "spaces: [{roots: [{path: old}, {path: new}]}]\n";
    let fs = open(base, writable);
    fs.archive(&key("od", "0001", 0), b"kept").unwrap();
    fs.flush().unwrap();
    assert!(base.join("old").join(dir("od", "0001")).exists());

    // `old` is now read-only and not wipeable: its dataset is kept from
    // archives and wipes; new datasets go to `new`.
    let frozen = "spaces: [{roots: [{path: old, writable: false}, {path: new}]}]\n";
    let fs = open(base, frozen);
    let e = fs.archive(&key("od", "0001", 6), b"refused").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Locked, "{e}");
    fs.archive(&key("od", "0002", 0), b"new").unwrap();
    fs.flush().unwrap();
    assert!(base.join("new").join(dir("od", "0002")).exists());
    let e = fs
        .wipe(
            &"class=od,expver=0001".parse().unwrap(),
            WipeOptions {
                doit: true,
                unsafe_wipe_all: false,
            },
        )
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Locked, "{e}");
    assert!(base
        .join("old")
        .join(dir("od", "0001"))
        .join("toc")
        .exists());

    // `wipe: true` on a read-only root allows the wipe.
    let wipeable = "spaces: [{roots: [{path: old, writable: false, wipe: true}, {path: new}]}]\n";
    let fs = open(base, wipeable);
    fs.wipe(
        &"class=od,expver=0001".parse().unwrap(),
        WipeOptions {
            doit: true,
            unsafe_wipe_all: false,
        },
    )
    .unwrap();
    assert!(!base.join("old").join(dir("od", "0001")).exists());

    // `retrieve: false`: listed, not retrieved; `visit: false`: not seen.
    let hidden = "spaces: [{roots: [{path: old}, {path: new, retrieve: false}]}]\n";
    let fs = open(base, hidden);
    assert_eq!(datasets(&fs, ""), [dir("od", "0002")]);
    let e = fs
        .retrieve(&Request::from_key(&key("od", "0002", 0)))
        .and_then(|r| r.read_all())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Locked, "{e}");
    let unseen = "spaces: [{roots: [{path: old}, {path: new, visit: false}]}]\n";
    assert!(datasets(&open(base, unseen), "").is_empty());
}

#[test]
fn a_dataset_with_nowhere_to_go_is_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path();
    roots(base, &["ro", "od"]);
    let yaml = "spaces:\n\
        - {regex: '^od:', roots: [{path: od}]}\n\
        - {name: archive, regex: '^rd:', roots: [{path: ro, writable: false}]}\n";
    let fs = open(base, yaml);
    let e = fs.archive(&key("rd", "0001", 0), b"x").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
    assert!(
        e.message().starts_with(&format!(
            "spaces[1] (handler Default, regex '^rd:'), new dataset {{class=rd,expver=0001,stream=oper,date=20231201,time=1200,domain=g}}: no writable root (writable/archive) exists among its roots: {}",
            base.join("ro").display()
        )),
        "{e}"
    );
    let e = fs.archive(&key("ea", "0001", 0), b"x").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidConfig, "{e}");
    assert_eq!(
        e.message(),
        "no space holds dataset {class=ea,expver=0001,stream=oper,date=20231201,time=1200,domain=g} \
         (matched as 'ea:0001:oper:20231201:1200:g'): spaces[0].regex '^od:', spaces[1].regex '^rd:'"
    );
    fs.flush().unwrap();
    for r in ["ro", "od"] {
        assert_eq!(std::fs::read_dir(base.join(r)).unwrap().count(), 0, "{r}");
    }
}
