//! Each dataset is read with the schema it was created under (stored with
//! it), as FDB5 does: after the schema file changes, a dataset written
//! under the old one stays listable and retrievable, and takes new fields
//! in its old layout; new datasets take the new one.

use std::path::Path;

use fieldstore::{Config, FieldStore, Key, Level, ListOptions, Request, WipeOptions};

/// `step` in the element key.
const OLD: &str = "[ class, expver, stream, date, time, domain?\n  [ type, levtype\n    [ step, levelist?, param ]]]\n";
/// `step` moved up to the collocation key.
const NEW: &str = "[ class, expver, stream, date, time, domain?\n  [ type, levtype, step\n    [ levelist?, param ]]]\n";

fn key(date: u32, step: u32) -> Key {
    format!("class=od,expver=0001,stream=oper,date={date},time=1200,domain=g,type=fc,levtype=sfc,step={step},param=167")
        .parse()
        .unwrap()
}

fn open(base: &Path) -> FieldStore {
    let yaml = "schema: schema.txt\nspaces: [{roots: [{path: root}]}]\n";
    FieldStore::open(Config::from_yaml(yaml, base, "test.yaml").unwrap()).unwrap()
}

fn listing(fs: &FieldStore, request: &str) -> Vec<String> {
    fs.list(&request.parse().unwrap(), ListOptions::default())
        .unwrap()
        .iter()
        .map(|e| format!("{}{}", e.collocation.braced(), e.element.braced()))
        .collect()
}

fn get(fs: &FieldStore, request: &str) -> Vec<u8> {
    let request: Request = request.parse().unwrap();
    fs.retrieve(&request).unwrap().read_all().unwrap()
}

const D1: &str = "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g,type=fc,levtype=sfc,param=167";
const D2: &str = "class=od,expver=0001,stream=oper,date=20231202,time=1200,domain=g,type=fc,levtype=sfc,param=167";

#[test]
fn a_dataset_keeps_its_schema_when_the_schema_file_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path();
    std::fs::create_dir_all(base.join("root")).unwrap();
    std::fs::write(base.join("schema.txt"), OLD).unwrap();
    let old = open(base);
    for step in [0, 6] {
        old.archive(&key(20231201, step), format!("d1 step {step}").as_bytes())
            .unwrap();
    }
    old.flush().unwrap();

    // The schema file changes; a new handle reads it.
    std::fs::write(base.join("schema.txt"), NEW).unwrap();
    let new = open(base);
    // The old dataset takes a new field in its own layout; a new dataset
    // gets the new one.
    new.archive(&key(20231201, 12), b"d1 step 12").unwrap();
    new.archive(&key(20231202, 0), b"d2 step 0").unwrap();
    new.flush().unwrap();

    for fs in [&new, &old] {
        assert_eq!(
            listing(fs, "class=od,date=20231201"),
            // FDB5's order: the newest flush first, each in key order.
            [
                "{type=fc,levtype=sfc}{step=12,param=167}",
                "{type=fc,levtype=sfc}{step=0,param=167}",
                "{type=fc,levtype=sfc}{step=6,param=167}",
            ]
        );
        assert_eq!(
            listing(fs, "class=od,date=20231202"),
            ["{type=fc,levtype=sfc,step=0}{param=167}"]
        );
        // A partial request below level 1, in both layouts.
        assert_eq!(listing(fs, "class=od,step=0").len(), 2);
        // Point lookups, in request order.
        assert_eq!(
            get(fs, &format!("{D1},step=12/0/6")),
            b"d1 step 12d1 step 0d1 step 6"
        );
        assert_eq!(get(fs, &format!("{D2},step=0")), b"d2 step 0");
        // A request too large for point lookups is walked.
        assert_eq!(
            get(fs, &format!("{D1},step=0/to/6000000/by/6")),
            b"d1 step 0d1 step 6d1 step 12"
        );
        let axes = fs
            .axes(&"class=od,date=20231201".parse().unwrap(), Level::Element)
            .unwrap();
        let steps: Vec<&str> = axes["step"].iter().map(String::as_str).collect();
        assert_eq!(steps, ["0", "12", "6"]);
        // `where` of one field.
        assert!(fs.location(&key(20231201, 6)).unwrap().is_some());
        assert!(fs.location(&key(20231202, 0)).unwrap().is_some());
    }

    // A collocation of the old layout, wiped through the new handle.
    let report = new
        .wipe(
            &"class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g,type=fc,levtype=sfc"
                .parse()
                .unwrap(),
            WipeOptions {
                doit: true,
                unsafe_wipe_all: false,
            },
        )
        .unwrap();
    assert_eq!(report.datasets.len(), 1, "{report:?}");
    assert!(listing(&new, "class=od,date=20231201").is_empty());
    assert_eq!(listing(&new, "class=od,date=20231202").len(), 1);
}

/// A parameter table that knows one name, as ecCodes' would.
#[derive(Debug)]
struct TwoT;

impl fieldstore_core::ParamNames for TwoT {
    fn param_id(&self, name: &str) -> Option<u64> {
        (name == "2t").then_some(167)
    }
}

#[test]
fn names_resolve_in_a_dataset_read_with_its_own_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path();
    std::fs::create_dir_all(base.join("root")).unwrap();
    // `param` typed as parameters: names are resolved only for such keywords.
    std::fs::write(base.join("schema.txt"), format!("param: Param;\n{OLD}")).unwrap();
    let old = open(base);
    old.archive(&key(20231201, 0), b"d1 step 0").unwrap();
    old.flush().unwrap();
    std::fs::write(base.join("schema.txt"), format!("param: Param;\n{NEW}")).unwrap();
    let new = open(base).with_param_names(std::sync::Arc::new(TwoT));
    let by_name = D1.replace("param=167", "param=2t");
    // Point lookup, list and the walking retrieve, all through the old
    // dataset's own schema, with the name resolved as the handle resolves it.
    assert_eq!(get(&new, &format!("{by_name},step=0")), b"d1 step 0");
    assert_eq!(listing(&new, "class=od,param=2t").len(), 1);
    assert_eq!(
        get(&new, &format!("{by_name},step=0/to/6000000/by/6")),
        b"d1 step 0"
    );
    // An unknown name is refused, naming it.
    let e = new
        .list(
            &"class=od,param=nosuch".parse().unwrap(),
            ListOptions::default(),
        )
        .unwrap_err();
    assert!(e.to_string().contains("nosuch"), "{e}");
}
