//! A RADOS dataset is read with the schema it was created under (stored in
//! its INIT record), as a POSIX one (`crates/fieldstore/tests/own_schema.rs`):
//! after the schema file changes, the old dataset stays listable and
//! retrievable and takes new fields in its old layout. Skips without Ceph,
//! except under `CI=true`.

mod common;

use std::path::Path;

use fieldstore::{Config, FieldStore, Key, ListOptions, Request};

/// `step` in the element key.
const OLD: &str = "[ class, expver, stream, date, time, domain?\n  [ type, levtype\n    [ step, levelist?, param ]]]\n";
/// `step` moved up to the collocation key.
const NEW: &str = "[ class, expver, stream, date, time, domain?\n  [ type, levtype, step\n    [ levelist?, param ]]]\n";

fn key(date: u32, step: u32) -> Key {
    format!("class=od,expver=0001,stream=oper,date={date},time=1200,domain=g,type=fc,levtype=sfc,step={step},param=167")
        .parse()
        .unwrap()
}

fn listing(fs: &FieldStore, request: &str) -> Vec<String> {
    fs.list(&request.parse().unwrap(), ListOptions::default())
        .unwrap()
        .iter()
        .map(|e| format!("{}{}", e.collocation.braced(), e.element.braced()))
        .collect()
}

#[test]
fn a_rados_dataset_keeps_its_schema_when_the_schema_file_changes() {
    let Some(cluster) = common::cluster() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let yaml = format!(
        "engine: rados\nstore: rados\nschema: schema.txt\n{}",
        cluster.section(&common::namespace("own_schema"))
    );
    let open = |base: &Path| {
        FieldStore::open(Config::from_yaml(&yaml, base, "test config").unwrap()).unwrap()
    };
    std::fs::write(tmp.path().join("schema.txt"), OLD).unwrap();
    let old = open(tmp.path());
    old.archive(&key(20231201, 0), b"d1 step 0").unwrap();
    old.flush().unwrap();
    std::fs::write(tmp.path().join("schema.txt"), NEW).unwrap();
    let new = open(tmp.path());
    new.archive(&key(20231201, 6), b"d1 step 6").unwrap();
    new.archive(&key(20231202, 0), b"d2 step 0").unwrap();
    new.flush().unwrap();
    for fs in [&new, &old] {
        assert_eq!(
            listing(fs, "class=od,date=20231201"),
            [
                "{type=fc,levtype=sfc}{step=6,param=167}",
                "{type=fc,levtype=sfc}{step=0,param=167}",
            ]
        );
        assert_eq!(
            listing(fs, "class=od,date=20231202"),
            ["{type=fc,levtype=sfc,step=0}{param=167}"]
        );
        let request: Request = "class=od,expver=0001,stream=oper,date=20231201/20231202,time=1200,domain=g,type=fc,levtype=sfc,step=6/0,param=167"
            .parse()
            .unwrap();
        assert_eq!(
            fs.retrieve(&request).unwrap().read_all().unwrap(),
            b"d1 step 6d1 step 0d2 step 0"
        );
    }
}
