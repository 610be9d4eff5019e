//! A DAOS dataset is read with the schema it was created under (stored in
//! its dataset KV's `meta`), as a POSIX one
//! (`crates/fieldstore/tests/own_schema.rs`): after the configured schema
//! changes, the old dataset stays listable and retrievable and takes new
//! fields in its old layout. Runs over the libdaos stand-in.

mod common;

use fieldstore::{FieldStore, Key, ListOptions, Request, Schema};

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
fn a_daos_dataset_keeps_its_schema_when_the_schema_changes() {
    let pool = common::standin().fresh_pool("own_schema");
    let open = |text: &str| {
        let schema = Schema::parse("schema", text).unwrap();
        FieldStore::open(common::config(&pool, schema)).unwrap()
    };
    let old = open(OLD);
    old.archive(&key(20231201, 0), b"d1 step 0").unwrap();
    old.flush().unwrap();
    let new = open(NEW);
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
